"""The nested containers the transforms of ``cygrad.func`` walk: tuples
(namedtuples too), lists and dicts are nodes, anything else is a leaf.

``flatten(tree)`` gives the leaves in order and a spec that ``unflatten``
turns back into the same structure; ``broadcast_prefix`` spreads a prefix
tree (such as vmap's ``in_dims``, where one int stands for a whole subtree)
over a full tree.  ``None`` is a leaf here, as in_dims' "not batched".
"""

from __future__ import annotations

from typing import Any

__all__ = ["LEAF", "broadcast_prefix", "flatten", "spec_pprint", "spec_repr",
           "unflatten"]

LEAF = None     # the spec of a leaf


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _children(node):
    """(node kind, context, children) or None for a leaf."""
    if isinstance(node, dict):
        keys = list(node)
        return dict, keys, [node[k] for k in keys]
    if _is_namedtuple(node):
        return type(node), None, list(node)
    if isinstance(node, (tuple, list)):
        return type(node), None, list(node)
    return None


# The walkers below are module functions that take their accumulator as an
# argument: a nested function that calls itself closes over its own cell,
# a reference cycle that would keep every flattened tensor alive until the
# cycle collector runs (never, inside ``timeit``, which turns it off).

def _flatten_into(node: Any, leaves: list[Any]) -> Any:
    parts = _children(node)
    if parts is None:
        leaves.append(node)
        return LEAF
    kind, context, kids = parts
    return (kind, context, [_flatten_into(k, leaves) for k in kids])


def flatten(tree: Any) -> tuple[list[Any], Any]:
    """(leaves, spec) of ``tree``."""
    leaves: list[Any] = []
    spec = _flatten_into(tree, leaves)
    return leaves, spec


def _build(spec: Any, it: Any) -> Any:
    if spec is LEAF:
        return next(it)
    kind, context, kids = spec
    values = [_build(k, it) for k in kids]
    if kind is dict:
        return dict(zip(context, values))
    if issubclass(kind, tuple) and kind is not tuple:
        return kind(*values)              # a namedtuple
    return kind(values)


def unflatten(leaves: Any, spec: Any) -> Any:
    """The tree of ``spec`` with ``leaves`` (in order) at its leaves."""
    return _build(spec, iter(leaves))


def spec_repr(spec: Any, depth: int = 0) -> str:
    """torch's way of printing a structure:
    ``TreeSpec(tuple, None, [*,\n  *])``, one child a line after the first."""
    if spec is LEAF:
        return "*"
    kind, context, kids = spec
    sep = ",\n" + "  " * (depth + 1)
    return (f"TreeSpec({kind.__name__}, {context!r}, ["
            + sep.join(spec_repr(k, depth + 1) for k in kids) + "])")


def spec_pprint(spec: Any) -> str:
    """The structure with ``*`` at the leaves: ``(*, [*, *])``."""
    if spec is LEAF:
        return "*"
    kind, context, kids = spec
    parts = [spec_pprint(k) for k in kids]
    if kind is dict:
        return "{" + ", ".join(f"{c!r}: {p}" for c, p in zip(context, parts)) + "}"
    if issubclass(kind, list):
        return "[" + ", ".join(parts) + "]"
    if len(parts) == 1:
        return "(" + parts[0] + ",)"
    return "(" + ", ".join(parts) + ")"


def _match_prefix(p: Any, t: Any, out: list[Any]) -> bool:
    pk = _children(p)
    if pk is None:
        out.extend([p] * len(flatten(t)[0]))
        return True
    tk = _children(t)
    if tk is None:
        return False
    (pkind, pctx, pkids), (tkind, tctx, tkids) = pk, tk
    if (pkind is dict) != (tkind is dict) or len(pkids) != len(tkids):
        return False
    if pkind is dict:
        if set(pctx) != set(tctx):
            return False
        pmap = dict(zip(pctx, pkids))
        return all(_match_prefix(pmap[k], v, out) for k, v in zip(tctx, tkids))
    if isinstance(p, list) != isinstance(t, list):
        return False
    return all(_match_prefix(a, b, out) for a, b in zip(pkids, tkids))


def broadcast_prefix(prefix: Any, tree: Any, is_leaf_prefix=None) -> list[Any] | None:
    """The prefix's value for each leaf of ``tree`` (a leaf of the prefix
    covers its whole subtree), or None when the structures do not match."""
    out: list[Any] = []
    return out if _match_prefix(prefix, tree, out) else None
