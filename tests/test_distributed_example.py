"""examples/ddp_digits.py on 1, 2 and 4 processes: one line per epoch, the
same losses and the same test accuracy as one process."""

import os
import re
import sys

import pytest
from dist_scripts import harness

EXAMPLE = os.path.join(harness.ROOT, "examples", "ddp_digits.py")


def _summary(stdout):
    epochs = re.findall(r"epoch +(\d+): loss = ([0-9.]+)", stdout)
    acc = re.findall(r"test accuracy: ([0-9.]+) on 397 held-out digits, (\d) proc",
                     stdout)
    return epochs, acc


def test_ddp_digits_same_accuracy_on_1_2_and_4_processes(tmp_path):
    pytest.importorskip("sklearn")
    harness.require_mpi()
    runs = {
        1: harness.run([sys.executable, EXAMPLE, "--epochs", "5"]),
        2: harness.run([sys.executable, "-m", "cygrad.distributed.run", "-n", "2",
                        EXAMPLE, "--epochs", "5", "--checkpoint",
                        str(tmp_path / "ck.pt")], timeout=120),
        4: harness.run([harness.mpiexec(), "-n", "4", sys.executable, EXAMPLE,
                        "--epochs", "5"], timeout=120),
    }
    results = {}
    for n, res in runs.items():
        assert res.returncode == 0, res.stdout + res.stderr
        epochs, acc = _summary(res.stdout)
        assert [e for e, _ in epochs] == ["1", "2", "3", "4", "5"], res.stdout
        assert len(acc) == 1 and acc[0][1] == str(n), res.stdout
        results[n] = ([float(v) for _, v in epochs], float(acc[0][0]))
    assert (tmp_path / "ck.pt").exists()
    for n in (2, 4):
        assert results[n][0] == pytest.approx(results[1][0], abs=2e-4)
        assert results[n][1] == results[1][1]
    assert results[1][1] > 0.85
