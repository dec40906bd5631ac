"""cygrad's types, as mypy sees them.

``mypy --strict`` over ``examples/`` (the configuration of pyproject.toml)
finds no error; a snippet of wrong calls is refused at the lines that are
wrong (the signatures are real, not ``Any``); and the typed overlay of the
names attached at import (``cygrad/_typed_ops.pyi``) lists exactly those
names and is what ``tools/gen_stubs.py`` writes now.
"""

import ast
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest
from tool_loader import load_tool

ROOT = pathlib.Path(__file__).resolve().parent.parent


GEN = load_tool("gen_stubs")


@pytest.fixture(scope="module")
def mypy(tmp_path_factory):
    """Run mypy from the tree's root with pyproject.toml's configuration (and
    a cache of this test run only); returns (exit code, output lines)."""
    pytest.importorskip("mypy")
    cache = tmp_path_factory.mktemp("mypy_cache")

    def run(*args):
        proc = subprocess.run(
            [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(cache),
             "--no-color-output", "--no-error-summary", *args],
            cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert "error: " not in proc.stderr, proc.stderr
        return proc.returncode, proc.stdout.splitlines()
    return run


def test_mypy_strict_passes_on_the_examples(mypy):
    code, lines = mypy()
    errors = [ln for ln in lines if ": error:" in ln]
    assert not errors and code == 0, "\n".join(lines)


# Each line marked "# E: <code>" must give that error, and no other line any.
_WRONG = '''
    import cygrad as torch
    from cygrad import nn, optim
    from cygrad.utils.data import DataLoader, TensorDataset

    x = torch.randn(4, 3)
    layer = nn.Linear(3, "2")  # E: arg-type
    y = layer(x)
    n: int = x.sum()  # E: assignment
    x.no_such_method()  # E: attr-defined
    torch.no_such_function(x)  # E: attr-defined
    torch.zeros(2, dtyp=torch.float32)  # E: call-arg
    torch.cat([x, x], dim=0).softmax(dim=1).backward()
    p = nn.Parameter(torch.zeros(3))
    q: nn.Parameter = p.add_(1)
    r: nn.Parameter = p + 1  # E: assignment
    opt = optim.SGD(nn.Linear(3, 1).parameters(), lr="fast")  # E: arg-type
    opt.step()
    opt.zero_grad(set_to_none=True)
    loader = DataLoader(TensorDataset(x, x), batch_size=2, shuffle=True)
    for xb, yb in loader:
        pass
    with torch.no_grad():
        torch.manual_seed("seed")  # E: arg-type
    s: str = nn.Module().state_dict()  # E: assignment
    nn.init.kaiming_uniform_(x, mode=3)  # E: arg-type
    nn.Conv2d(1, 8, kernel_size=3, padding="same").eval().train(False)
'''


def test_mypy_refuses_wrong_calls_at_their_lines(mypy, tmp_path):
    source = textwrap.dedent(_WRONG)
    path = tmp_path / "wrong_calls.py"
    path.write_text(source)
    want = {}
    for i, line in enumerate(source.splitlines(), 1):
        m = re.search(r"# E: ([a-z-]+)$", line)
        if m:
            want[i] = m.group(1)
    code, lines = mypy(str(path))
    got = {}
    for ln in lines:
        m = re.match(r".*wrong_calls\.py:(\d+): error: .*\[([a-z-]+)\]$", ln)
        if m:
            got.setdefault(int(m.group(1)), set()).add(m.group(2))
    assert code == 1
    missing = {i: c for i, c in want.items() if c not in got.get(i, set())}
    extra = {i: c for i, c in got.items() if i not in want}
    assert not missing and not extra, (
        f"expected but not reported: {missing}; reported but not expected: "
        f"{extra}\n" + "\n".join(lines))


def test_typed_overlay_is_up_to_date():
    path = GEN.OPS_STUB
    assert path.exists(), "run python tools/gen_stubs.py"
    assert path.read_text() == GEN.render_ops(), (
        f"{path.name} is stale: run python tools/gen_stubs.py")


def _overlay():
    tree = ast.parse(GEN.OPS_STUB.read_text())
    methods = set()
    functions = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "_TensorMethods":
            methods = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
        elif isinstance(node, ast.FunctionDef):
            functions.add(node.name)
    return methods, functions


def test_overlay_lists_exactly_the_attached_names():
    import cygrad
    from cygrad.ops import OPS

    methods, functions = _overlay()
    attached = set(GEN.attached_methods())
    assert attached <= methods, f"not in the overlay: {sorted(attached - methods)}"
    assert "sum" in methods and "add_" in methods and "__matmul__" in methods
    # every op name of cygrad is either imported by cygrad/__init__.py (and
    # typed in its module) or in the overlay, and nothing else is there
    names = {n for spec in OPS.values() for n in (spec.name,) + spec.aliases}
    assert functions == set(GEN.attached_functions())
    assert {"cat", "matmul", "softmax", "stack"} <= functions
    static = GEN._defined_in_source(ROOT / "cygrad" / "__init__.py")
    assert names - static <= functions, sorted(names - static - functions)
    assert all(callable(getattr(cygrad, n)) for n in functions)


def test_overlay_return_types_match_what_the_ops_return():
    """An op that the overlay says returns a Tensor returns one, and the
    listed exceptions return what _NOT_TENSOR says, on small inputs."""
    import cygrad

    x = cygrad.arange(6.0).reshape(2, 3)
    tensor_ops = {"cat": ([x, x],), "exp": (x,), "matmul": (x, x.t()),
                  "sum": (x,), "softmax": (x, 1), "where": (x > 2, x, x)}
    for name, args in tensor_ops.items():
        assert isinstance(getattr(cygrad, name)(*args), cygrad.Tensor), name
        assert GEN._NOT_TENSOR.get(name, "Tensor") == "Tensor", name
    assert isinstance(cygrad.equal(x, x), bool) and GEN._NOT_TENSOR["equal"] == "bool"
    assert isinstance(cygrad.split(x, 1), tuple)
    assert GEN._NOT_TENSOR["split"].startswith("tuple")
    assert isinstance(x.add_(0), cygrad.Tensor)
