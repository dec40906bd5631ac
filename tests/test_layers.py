"""cygrad's modules import one way: each imports only its own layer and the
layers below, at module level and inside functions alike, and no set of
modules imports itself around a circle.

    _kernels  <-  autograd core  <-  tensor and ops  <-  above the ops
    <-  nn, optim, utils, distributed  <-  the package faces

The test reads the source (ast); it runs nothing of it.  Imports under
``if TYPE_CHECKING:`` are not edges: they never run (they give mypy the
types of higher layers for annotations, which are strings at run time).
"""

import ast
import pathlib

import pytest

PKG = pathlib.Path(__file__).resolve().parent.parent / "cygrad"

# (layer, module-name prefixes), lowest first; the longest prefix decides.
LAYERS = [
    (0, ["cygrad._kernels"]),
    (1, ["cygrad.dtypes", "cygrad.autograd.function", "cygrad.autograd.grad_mode",
         "cygrad.autograd.anomaly"]),
    (2, ["cygrad._tensor", "cygrad._copying", "cygrad._device", "cygrad._legacy",
         "cygrad.creation", "cygrad.ops", "cygrad._memory_format",
         "cygrad._printing", "cygrad._typeinfo", "cygrad._config", "cygrad.random",
         "cygrad.linalg", "cygrad.storage", "cygrad.functional", "cygrad._threads"]),
    (3, ["cygrad.autograd", "cygrad.viz"]),
    (4, ["cygrad.nn", "cygrad.optim", "cygrad.utils", "cygrad.distributed",
         "cygrad.multiprocessing", "cygrad.serialization", "cygrad.cuda",
         "cygrad.backends", "cygrad.distributions", "cygrad.accelerator",
         "cygrad.onnx", "cygrad.amp", "cygrad.compiler", "cygrad.version",
         "cygrad.func", "cygrad.cpu"]),
    # The faces: the package, and cygrad.autograd's, whose core names load
    # eagerly and the others on first use.  The demo is a program.
    (5, ["cygrad", "cygrad.__init__", "cygrad.autograd.__init__", "cygrad.demo",
         "cygrad.testing"]),
]


def layer_of(module):
    best, depth = None, -1
    for level, prefixes in LAYERS:
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > depth:
                best, depth = level, len(p)
    return best


def modules():
    """{module name: path} of every Python module of the package."""
    out = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
            name = ".".join(parts) + ".__init__"
        else:
            name = ".".join(parts)
        out[name] = path
    # The compiled modules: known (layer 0) but not parsed (Cython).
    for path in sorted(PKG.rglob("*.pyx")) + sorted(PKG.rglob("*.pyx.tp")):
        rel = path.relative_to(PKG.parent)
        out.setdefault(".".join(rel.parts)[:-len("".join(path.suffixes))], None)
    return out


def _package_of(name):
    return name[:-len(".__init__")] if name.endswith(".__init__") else \
        name.rsplit(".", 1)[0]


def imports(name, path):
    """(imported module, line, is inside a function) of every cygrad import."""
    tree = ast.parse(path.read_text(), str(path))
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            if _is_type_checking_block(child):
                # only its else branch runs
                visit(ast.Module(body=child.orelse, type_ignores=[]), in_function)
                continue
            inner = in_function or isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                for a in child.names:
                    found.append((a.name, child.lineno, in_function))
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    pkg = _package_of(name).split(".")
                    pkg = pkg[:len(pkg) - (child.level - 1)]
                    base = ".".join(pkg + ([base] if base else []))
                for a in child.names:
                    # ``from pkg import sub`` imports pkg.sub when it is a module
                    found.append((f"{base}.{a.name}", child.lineno, in_function))
            elif isinstance(child, ast.Call) and _is_import_module(child):
                found.append((_import_module_target(child, name), child.lineno,
                              in_function))
            visit(child, inner)

    visit(tree, False)
    return [(m, line, fn) for m, line, fn in found if m.split(".")[0] == "cygrad"]


def _is_type_checking_block(node):
    """``if TYPE_CHECKING:`` or ``if typing.TYPE_CHECKING:`` (any alias)."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _is_import_module(call):
    f = call.func
    return (isinstance(f, ast.Attribute) and f.attr == "import_module"
            and isinstance(f.value, ast.Name) and f.value.id == "importlib")


def _import_module_target(call, name):
    arg = call.args[0] if call.args else None
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    # f"{__name__}.{...}": a submodule of the module's own package
    return _package_of(name) + ".*"


def _resolve(target, known):
    """The module an import names: itself, or the module holding the name."""
    while target and target not in known and target + ".__init__" not in known:
        target = target.rsplit(".", 1)[0] if "." in target else ""
    if target in known:
        return target
    return target + ".__init__" if target else None


def _defines(module, known, attr):
    """Whether ``module``'s source binds the name ``attr`` (an import of a
    cygrad module that is not in the tree binds nothing of the project)."""
    if known[module] is None:
        return True
    tree = ast.parse(known[module].read_text())
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == attr:
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if any((a.asname or a.name.split(".")[0]) == attr for a in node.names):
                return True
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) \
                and node.id == attr:
            return True
    return False


def edges():
    known = modules()
    out = []
    for name, path in known.items():
        if path is None:
            continue
        for target, line, in_fn in imports(name, path):
            target = target.rstrip(".*")
            mod = _resolve(target, known)
            if mod is None or mod == name:
                continue
            base = mod.removesuffix(".__init__")
            attr = target[len(base) + 1:].split(".")[0]
            if attr and not _defines(mod, known, attr):
                continue     # a module not in this tree (an optional part)
            out.append((name, mod, line, in_fn))
    return out


def test_every_module_has_a_layer():
    missing = [m for m in modules() if layer_of(m) is None]
    assert not missing, f"modules of no layer (add them to LAYERS): {missing}"


def test_no_import_points_up_a_layer():
    bad = []
    for src, dst, line, in_fn in edges():
        if layer_of(dst) > layer_of(src):
            where = "inside a function" if in_fn else "at module level"
            bad.append(f"{src}:{line} imports {dst} {where} "
                       f"(layer {layer_of(src)} -> {layer_of(dst)})")
    assert not bad, "imports pointing up a layer:\n" + "\n".join(bad)


def test_no_import_circle():
    graph = {}
    for src, dst, _, _ in edges():
        graph.setdefault(src, set()).add(dst)
    seen, stack, cycles = {}, [], []

    def dfs(node):
        seen[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if seen.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in seen:
                dfs(nxt)
        stack.pop()
        seen[node] = 2

    for node in sorted(graph):
        if node not in seen:
            dfs(node)
    assert not cycles, "import circles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_parser_sees_the_imports():
    found = {(src, dst, in_fn) for src, dst, _, in_fn in edges()}
    assert ("cygrad.ops.shape", "cygrad.ops.registry", False) in found
    assert ("cygrad.__init__", "cygrad._kernels.engine", False) in found
    assert ("cygrad.nn.modules.linear", "cygrad.nn.functional", False) in found


@pytest.mark.parametrize("src,dst,bad", [
    ("cygrad._kernels.engine", "cygrad._tensor", True),
    ("cygrad.ops.shape", "cygrad.nn.module", True),
    ("cygrad.nn.modules.linear", "cygrad.ops.shape", False),
    ("cygrad.autograd.function", "cygrad.autograd.backprop", True),
])
def test_the_layers_are_what_the_test_checks(src, dst, bad):
    assert (layer_of(dst) > layer_of(src)) is bad
