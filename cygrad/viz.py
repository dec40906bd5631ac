"""Pictures of the autograd graph: a text tree, Graphviz DOT text, a drawing.

``tree(t)`` and ``to_dot(t)`` need nothing beyond cygrad; ``draw(t, path)``
renders the DOT text with the ``graphviz`` Python package and the Graphviz
``dot`` program when they are installed.  All three read only the graph's
structure (``next_functions``, creation sites, leaf shapes), so they still
work after ``backward()`` freed the saved tensors; saved tensors are shown
with their shapes and bytes while they exist, and as "freed" after.

Nodes are named like ``grad_fn`` (``MulBackward0``); a leaf that requires
grad appears as the tensor itself (its name, shape and dtype) rather than
its ``AccumulateGrad`` sink.  Names come from ``names=`` (a dict of name ->
tensor, or a module with ``named_parameters()``), else from the caller's
variables.  Edges point the way data flows in the forward pass, input to
consumer, as in torchviz.  The walk is iterative: deep graphs do not recurse.
"""

import os

from cygrad._kernels import engine as _engine
from cygrad._kernels.engine import TensorBase
from cygrad.autograd import diagnostics as _diag

__all__ = ["draw", "to_dot", "tree"]


def _names(names, frame):
    if names is None:
        return _diag._names_in(frame)
    if hasattr(names, "named_parameters"):
        names = dict(names.named_parameters())
    return {id(t): n for n, t in dict(names).items()}


def _check_tensor(t, fn):
    if not isinstance(t, TensorBase):
        raise TypeError(f"cygrad.viz.{fn}() expects a Tensor, got {type(t).__name__}")


def _is_leaf_sink(node):
    return node.name() == "AccumulateGrad"


def _leaf_label(node, names):
    v = node.variable
    if v is None:
        return "(freed leaf)", None
    nm = names.get(id(v))
    shape = tuple(v._arr.shape)
    return nm, f"{shape} {v._arr.dtype}"


def _saved_text(node):
    if _engine.node_is_freed(node):
        return "saved: freed by backward"
    shapes = node._saved_shapes()
    if not shapes:
        return None
    parts = [f"{key} {tuple(shape)} {nbytes} B" for key, shape, nbytes in shapes]
    return "saved: " + ", ".join(parts)


def _site_text(node):
    s = node._site
    if s is None:
        return None
    return f"{os.path.basename(s[0])}:{s[1]}"


def _graph(t):
    """(nodes in walk order from the root, edges as (child, parent) pairs)."""
    root = t._grad_fn if t._grad_fn is not None else _engine._grad_edge(t)
    if root is None:
        return [], []
    order, seen, edges, stack = [], set(), [], [root]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        order.append(n)
        nxt, _ = _engine.node_inputs(n)
        for child in nxt:
            if child is not None:
                edges.append((child, n))
        stack.extend(c for c in reversed(nxt) if c is not None)
    return order, edges


# --- text tree ----------------------------------------------------------------------------


def tree(t, names=None, max_depth=64):
    """The graph behind ``t`` as an indented text tree.

    Parameters
    ----------
    t : Tensor
    names : dict or Module, optional
        name -> tensor (or a module's ``named_parameters()``) to label leaves;
        by default the caller's variable names are used.
    max_depth : int
        Deeper levels are summarized in one line.

    Returns
    -------
    str
        One line per node: the root tensor, then ``grad_fn`` nodes with their
        creation line and saved tensors, leaves with their name and shape.  A
        node reached again (a diamond) is printed once; later mentions say
        "(shown above)".
    """
    _check_tensor(t, "tree")
    names = _names(names, _diag._user_frame())
    me = names.get(id(t))
    head = f"{me + ': ' if me else ''}tensor {tuple(t._arr.shape)} {t._arr.dtype}"
    root = t._grad_fn if t._grad_fn is not None else _engine._grad_edge(t)
    if root is None:
        return head + " (no graph: does not require grad)"
    lines = [head]
    shown = set()
    # Explicit stack of (node, prefix, is_last, depth): no recursion.
    stack = [(root, "", True, 1)]
    while stack:
        node, prefix, last, depth = stack.pop()
        branch = "└── " if last else "├── "
        if _is_leaf_sink(node):
            nm, desc = _leaf_label(node, names)
            label = f"{nm}  leaf {desc}" if nm else f"leaf {desc}"
            lines.append(prefix + branch + label)
            continue
        label = node.name()
        site = _site_text(node)
        if site:
            label += f"  @ {site}"
        if id(node) in shown:
            lines.append(prefix + branch + label + "  (shown above)")
            continue
        shown.add(id(node))
        saved = _saved_text(node)
        if saved:
            label += f"  [{saved}]"
        lines.append(prefix + branch + label)
        nxt = [c for c in _engine.node_inputs(node)[0] if c is not None]
        child_prefix = prefix + ("    " if last else "│   ")
        if nxt and depth >= max_depth:
            lines.append(child_prefix + f"└── ... ({len(nxt)} inputs, deeper than "
                         f"max_depth={max_depth})")
            continue
        for i in range(len(nxt) - 1, -1, -1):
            stack.append((nxt[i], child_prefix, i == len(nxt) - 1, depth + 1))
    return "\n".join(lines)


# --- DOT ------------------------------------------------------------------------------------


def _q(text):
    text = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return '"' + text + '"'


def to_dot(t, names=None):
    """Graphviz DOT text of the graph behind ``t`` (no dependency needed).

    Parameters
    ----------
    t : Tensor
    names : dict or Module, optional
        name -> tensor to label leaves (by default the caller's variables).

    Returns
    -------
    str
        A ``digraph``: one node for the output tensor, one per ``grad_fn``
        node (label: name, creation line, saved tensors), one per leaf
        (label: name, shape, dtype); edges from each input to its consumer and
        from the root ``grad_fn`` to the output.
    """
    _check_tensor(t, "to_dot")
    return _dot(t, _names(names, _diag._user_frame()))


def _dot(t, names):
    """DOT text for ``t`` with leaves labelled from ``names`` (id -> name)."""
    order, edges = _graph(t)
    ids = {id(n): f"n{i + 1}" for i, n in enumerate(order)}
    out = ["digraph cygrad {",
           '  graph [rankdir=BT];',
           '  node [shape=box, fontname="monospace", fontsize=10];']
    me = names.get(id(t))
    out_label = (f"{me}\\n" if me else "") + f"{tuple(t._arr.shape)} {t._arr.dtype}"
    out.append(f'  n0 [label="{out_label}", style=filled, fillcolor="#c8e6c9"];')
    for n in order:
        if _is_leaf_sink(n):
            nm, desc = _leaf_label(n, names)
            label = (f"{nm}\n" if nm else "") + (desc or "")
            out.append(f"  {ids[id(n)]} [label={_q(label)}, style=filled, "
                       'fillcolor="#bbdefb"];')
            continue
        label = n.name()
        site = _site_text(n)
        if site:
            label += f"\n{site}"
        saved = _saved_text(n)
        if saved:
            label += f"\n{saved}"
        out.append(f"  {ids[id(n)]} [label={_q(label)}];")
    for child, parent in edges:
        out.append(f"  {ids[id(child)]} -> {ids[id(parent)]};")
    if order:
        out.append(f"  {ids[id(order[0])]} -> n0;")
    out.append("}")
    return "\n".join(out) + "\n"


# --- drawing --------------------------------------------------------------------------------

_NO_GRAPHVIZ = (
    "cygrad.viz.draw() needs the `graphviz` Python package (pip install graphviz) "
    "and the Graphviz `dot` program (e.g. apt install graphviz). Without them, "
    "cygrad.viz.to_dot(t) returns the DOT text and cygrad.viz.tree(t) a text tree.")


def draw(t, path, names=None, format=None):
    """Render the graph behind ``t`` to ``path`` (svg, png, pdf, ...).

    Parameters
    ----------
    t : Tensor
    path : str
        Output file; its extension gives the format unless ``format`` is set.
    names : dict or Module, optional
    format : str, optional

    Returns
    -------
    str
        ``path``.

    Raises
    ------
    ImportError
        When the ``graphviz`` package is missing (the message says what to
        install and what works without it).
    RuntimeError
        When the Graphviz ``dot`` program is missing or fails.
    """
    _check_tensor(t, "draw")
    dot = _dot(t, _names(names, _diag._user_frame()))
    try:
        import graphviz
    except ImportError:
        raise ImportError(_NO_GRAPHVIZ) from None
    fmt = format or os.path.splitext(path)[1].lstrip(".") or "svg"
    try:
        graphviz.Source(dot).render(outfile=path, format=fmt, cleanup=True)
    except graphviz.ExecutableNotFound:
        raise RuntimeError(_NO_GRAPHVIZ) from None
    return path
