"""Which PyTorch names a folder of programs uses, and which of them cygrad lacks.

    python tools/api_coverage.py PATH [PATH ...] [--markdown] [--top N]

Every ``.py`` file and every code cell of every ``.ipynb`` notebook under the
paths is parsed (never run).  The tool follows each file's imports of torch
(``import torch as T``, ``import torch.nn.functional as F``, ``from
torch.utils.data import DataLoader``, ...) and records each dotted name it
resolves: ``torch.nn.Embedding``, ``torch.nn.functional.one_hot``.  Method
calls on other objects (``x.masked_fill(...)``, ``model.register_forward_hook``)
count as ``Tensor.<name>`` or ``Module.<name>`` when torch's ``Tensor`` or
``nn.Module`` has that attribute, which needs torch installed (``pip install
-e ".[parity]"``); without torch only module-level names are counted.

A name is present when the same path exists under ``cygrad`` (attribute or
submodule).  The report gives the coverage of distinct names, the coverage
weighted by the number of files that use each name, and the missing names
ranked by how many files use them.
"""

import argparse
import ast
import importlib
import json
import os
import sys
from collections import defaultdict

# run from a checkout: import the cygrad beside this folder
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import cygrad  # noqa: E402

ROOTS = ("torch",)


def _sources(paths):
    """(path, source text) of every Python file and notebook under ``paths``."""
    for top in paths:
        if os.path.isfile(top):
            files = [top]
        else:
            files = []
            for d, _, names in os.walk(top):
                files += [os.path.join(d, n) for n in sorted(names)]
        for f in sorted(files):
            if f.endswith(".py"):
                with open(f, encoding="utf-8", errors="replace") as fh:
                    yield f, fh.read()
            elif f.endswith(".ipynb"):
                try:
                    with open(f, encoding="utf-8") as fh:
                        nb = json.load(fh)
                except (OSError, ValueError):
                    continue
                cells = []
                for c in nb.get("cells", []):
                    if c.get("cell_type") != "code":
                        continue
                    src = c.get("source", "")
                    src = "".join(src) if isinstance(src, list) else src
                    # shell escapes and magics are not Python
                    cells.append("\n".join(
                        "" if line.lstrip().startswith(("!", "%", "?")) else line
                        for line in src.split("\n")))
                yield f, "\n".join(cells)


class _Names(ast.NodeVisitor):
    """The torch names one module uses."""

    def __init__(self, tensor_attrs, module_attrs):
        self.alias = {}         # local name -> dotted torch path
        self.used = set()
        self.tensor_attrs = tensor_attrs
        self.module_attrs = module_attrs

    def visit_Import(self, node):
        for a in node.names:
            if a.name.split(".")[0] in ROOTS:
                if a.asname:
                    self.alias[a.asname] = a.name
                else:
                    self.alias[a.name.split(".")[0]] = a.name.split(".")[0]
                self.used.add(a.name)

    def visit_ImportFrom(self, node):
        mod = node.module or ""
        if node.level or mod.split(".")[0] not in ROOTS:
            return
        for a in node.names:
            if a.name == "*":
                continue
            full = f"{mod}.{a.name}"
            self.alias[a.asname or a.name] = full
            self.used.add(full)

    def _dotted(self, node):
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            parts.append(node.id)
            return parts[::-1]
        return None

    def visit_Attribute(self, node):
        parts = self._dotted(node)
        if parts and parts[0] in self.alias:
            self.used.add(".".join([self.alias[parts[0]]] + parts[1:]))
            return          # the inner chain is a prefix of this one
        if isinstance(node.ctx, ast.Load) and not node.attr.startswith("__"):
            if node.attr in self.tensor_attrs:
                self.used.add(f"Tensor.{node.attr}")
            elif node.attr in self.module_attrs:
                self.used.add(f"Module.{node.attr}")
        self.generic_visit(node)

    def visit_Name(self, node):
        if node.id in self.alias and isinstance(node.ctx, ast.Load):
            self.used.add(self.alias[node.id])


def _torch_attrs():
    try:
        import torch
    except ImportError:
        return set(), set()
    tensor = {n for n in dir(torch.Tensor) if not n.startswith("_")}
    module = {n for n in dir(torch.nn.Module) if not n.startswith("_")} - tensor
    return tensor, module


def names_of(source, tensor_attrs=frozenset(), module_attrs=frozenset()):
    """The set of torch names ``source`` uses (empty if it does not parse)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    v = _Names(tensor_attrs, module_attrs)
    # imports first, wherever they are, so that uses above them resolve too
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            v.visit_Import(node)
        elif isinstance(node, ast.ImportFrom):
            v.visit_ImportFrom(node)
    v.visit(tree)
    return v.used


def _exists_in_torch(name):
    """Whether ``name`` is a real torch path (drops ``torch.foo`` where foo is
    a local variable that shadows nothing); True when torch is absent."""
    try:
        import torch
    except ImportError:
        return True
    return _resolve(name, torch, "torch", torch.Tensor, torch.nn.Module)


def _resolve(name, pkg, pkg_name, tensor_cls, module_cls):
    parts = name.split(".")
    if parts[0] == "Tensor":
        obj, path, parts = tensor_cls, None, parts[1:]
    elif parts[0] == "Module":
        obj, path, parts = module_cls, None, parts[1:]
    else:
        obj, path, parts = pkg, pkg_name, parts[1:]
    for p in parts:
        try:
            found, obj2 = True, getattr(obj, p)
        except Exception:       # noqa: BLE001 - torch proxies raise odd errors
            found = False
        if found:
            obj = obj2
            path = f"{path}.{p}" if path else None
            continue
        if path is None:
            return False
        try:
            obj = importlib.import_module(f"{path}.{p}")
        except Exception:       # noqa: BLE001 - any import failure means absent
            return False
        path = f"{path}.{p}"
    return True


def has(name):
    """Whether cygrad provides the torch path ``name``."""
    return _resolve(name, cygrad, "cygrad", cygrad.Tensor, cygrad.nn.Module)


def coverage(paths):
    """{name: number of files using it}, number of files that import torch."""
    tensor_attrs, module_attrs = _torch_attrs()
    files = defaultdict(int)
    n_files = 0
    for _, src in _sources(paths):
        used = names_of(src, tensor_attrs, module_attrs)
        if not any(u.split(".")[0] in ROOTS for u in used):
            continue
        n_files += 1
        for u in used:
            files[u] += 1
    real = {n: c for n, c in files.items() if _exists_in_torch(n)}
    return real, n_files


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("paths", nargs="+")
    p.add_argument("--top", type=int, default=40, help="missing names to list")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    opts = p.parse_args(argv)
    used, n_files = coverage(opts.paths)
    if not used:
        print("no file imports torch")
        return 1
    missing = sorted((n for n in used if not has(n)), key=lambda n: (-used[n], n))
    present = len(used) - len(missing)
    uses = sum(used.values())
    uses_present = uses - sum(used[n] for n in missing)
    print(f"{n_files} files import torch; they use {len(used)} distinct torch names")
    print(f"cygrad has {present} of {len(used)} ({100 * present / len(used):.1f}%); "
          f"weighted by files using each name: {100 * uses_present / uses:.1f}%")
    if missing:
        print(f"\nmissing names, by number of files using them (top {opts.top}):")
        if opts.markdown:
            print("\n| name | files |\n|---|---|")
        for n in missing[:opts.top]:
            print(f"| `{n}` | {used[n]} |" if opts.markdown else f"  {used[n]:4d}  {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
