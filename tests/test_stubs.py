"""The .pyi stubs of the compiled modules list exactly what the modules
export, and are what tools/gen_stubs.py writes now."""

import ast
import importlib
import importlib.util
import pathlib

import pytest
from tool_loader import load_tool

ROOT = pathlib.Path(__file__).resolve().parent.parent


GEN = load_tool("gen_stubs")
# The stubs beside the modules that the tests import: the tree's when it is
# built in place, else the installed package's.
import cygrad._kernels  # noqa: E402

FOLDER = pathlib.Path(cygrad._kernels.__file__).parent
MODULES = GEN.module_names(FOLDER)


def _stub_names(path):
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            names.add(node.target.id)
    return names


def test_every_compiled_module_has_a_stub_and_py_typed_is_there():
    assert "engine" in MODULES and "elementwise" in MODULES
    assert (FOLDER.parent / "py.typed").exists()
    missing = [m for m in MODULES if not GEN.stub_path(m, FOLDER).exists()]
    assert not missing, f"no stub for {missing}: run python tools/gen_stubs.py"


@pytest.mark.parametrize("name", MODULES)
def test_stub_lists_exactly_the_module_exports(name):
    mod = importlib.import_module(f"cygrad._kernels.{name}")
    listed = _stub_names(GEN.stub_path(name, FOLDER))
    exported = set(GEN.exports(mod))
    assert listed == exported, (
        f"{name}.pyi lists {sorted(listed - exported)} that the module lacks and "
        f"lacks {sorted(exported - listed)}: run python tools/gen_stubs.py")


@pytest.mark.parametrize("name", MODULES)
def test_stub_is_up_to_date(name):
    mod = importlib.import_module(f"cygrad._kernels.{name}")
    assert GEN.stub_path(name, FOLDER).read_text() == GEN.render(mod), (
        f"{name}.pyi is stale: run python tools/gen_stubs.py")


def test_exports_leave_out_imported_modules_and_cython_internals():
    from cygrad._kernels import engine
    names = GEN.exports(engine)
    assert "TensorBase" in names and "install" in names
    assert "np" not in names and "__test__" not in names
    assert not [n for n in names if n.startswith("__pyx")]
