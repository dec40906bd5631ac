"""tools/api_coverage.py: the names it finds in a program and its verdicts."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import api_coverage  # noqa: E402

SOURCE = """
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader as DL, TensorDataset

def model(x):
    return F.relu(nn.Linear(2, 3)(x)).sum()

loader = DL(TensorDataset(torch.zeros(4, 2)), batch_size=2)
y = torch.optim.lr_scheduler.StepLR
"""


def test_imports_and_aliases_resolve_to_torch_paths():
    names = api_coverage.names_of(SOURCE)
    assert {"torch.nn.functional.relu", "torch.nn.Linear", "torch.zeros",
            "torch.utils.data.DataLoader", "torch.utils.data.TensorDataset",
            "torch.optim.lr_scheduler.StepLR"} <= names
    # prefixes of a longer chain are not counted as uses of their own
    assert "torch.optim" not in names and "torch.optim.lr_scheduler" not in names


def test_method_calls_count_only_when_torch_knows_the_method():
    names = api_coverage.names_of("import torch\nx = torch.ones(3)\nx.masked_fill(m, 0)\n",
                                  tensor_attrs={"masked_fill"})
    assert "Tensor.masked_fill" in names
    assert not any(n.startswith("Tensor.") for n in api_coverage.names_of(
        "import torch\nx.masked_fill(m, 0)\n"))


def test_a_file_that_does_not_parse_uses_nothing():
    assert api_coverage.names_of("def (:\n") == set()


def test_verdicts_follow_cygrad():
    assert api_coverage.has("torch.nn.Linear")
    assert api_coverage.has("torch.utils.data.DataLoader")
    assert api_coverage.has("Tensor.backward")
    assert not api_coverage.has("torch.nn.NoSuchLayer")
    assert not api_coverage.has("Tensor.no_such_method")


def test_report_over_a_folder_with_a_notebook(tmp_path):
    (tmp_path / "a.py").write_text(SOURCE)
    nb = {"cells": [{"cell_type": "code", "source": ["!pip install x\n", "import torch\n",
                                                     "torch.nn.NoSuchLayer(3)\n"]},
                    {"cell_type": "markdown", "source": "torch.not_code"}]}
    (tmp_path / "b.ipynb").write_text(json.dumps(nb))
    (tmp_path / "c.py").write_text("import numpy\n")
    res = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "api_coverage.py"),
                          str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("2 files import torch")
    try:
        import torch  # noqa: F401
    except ImportError:     # without torch every torch.* path is taken as real
        assert "torch.nn.NoSuchLayer" in res.stdout
    else:                   # with torch, names torch lacks are dropped
        assert "torch.nn.NoSuchLayer" not in res.stdout
