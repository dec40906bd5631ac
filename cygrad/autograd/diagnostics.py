"""Diagnostics: why ``.grad`` is None, which line broke the graph, what is alive.

Everything here reads what the engine records cheaply while ops run: the
user's ``file:line`` of each graph node (``Node._site``), the generation of
the training loop in which it was made (``Node._gen``, bumped by
``optimizer.step()`` and ``zero_grad()``), where a tensor lost its history
(``Tensor._origin``: made under ``no_grad`` or by ``detach()``) and which
in-place op last wrote a tensor that a node saved (``Version.last_write``).
``set_debug_level(0)`` turns all of that capture off; the messages then lose
their line numbers but keep PyTorch's wording.

Functions: ``explain(t)``, ``retain_grads()``, ``graph_stats()``,
``set_debug_level`` / ``get_debug_level``.  The optimizer calls
``optimizer_step`` / ``optimizer_zero_grad`` (generation counter and the
once-per-optimizer warning about graphs kept alive across iterations).
"""

import os
import re
import sys
import warnings
import weakref

from cygrad._kernels import engine as _engine
from cygrad._kernels.engine import TensorBase

__all__ = [
    "GraphStats",
    "explain",
    "get_debug_level",
    "graph_stats",
    "retain_grads",
    "set_debug_level",
]

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

# How many old nodes the leak check looks at, at most, per step (bounded cost
# even when a program keeps a huge old graph on purpose).
_LEAK_SCAN_LIMIT = 20000


# --- debug level ----------------------------------------------------------------


def set_debug_level(level):
    """Choose how much the engine records for diagnostics.

    Parameters
    ----------
    level : int
        0: nothing (no creation sites, generations, live-node list or
        mutation sites; messages keep PyTorch's wording without line numbers).
        1 (default): record the user's ``file:line`` of every graph node and of
        every in-place write to a tensor saved for backward.

    Returns
    -------
    int
        The previous level.
    """
    level = int(level)
    if level < 0:
        raise ValueError(f"Invalid debug level: {level}")
    return _engine._set_debug_level(level)


def get_debug_level():
    """The current diagnostics level (see :func:`set_debug_level`)."""
    return _engine._get_debug_level()


# --- small helpers ------------------------------------------------------------------


def _site_str(site):
    if site is None:
        return None
    return f"{site[0]}:{site[1]}"


def _at(site):
    s = _site_str(site)
    return f" at {s}" if s else ""


def _user_frame():
    """The innermost Python frame outside the cygrad package (or None)."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_PKG_DIR):
        f = f.f_back
    return f


def _stacklevel():
    """``warnings.warn`` stacklevel that points at the user's line."""
    f = sys._getframe(1)
    level = 1
    while f is not None and f.f_code.co_filename.startswith(_PKG_DIR):
        f = f.f_back
        level += 1
    return level


def _names_in(frame):
    """id(tensor) -> a name the user knows it by, from ``frame``'s variables.

    Locals win over globals; modules found there lend their parameter names
    (``model.fc.weight``).
    """
    names = {}
    if frame is None:
        return names
    for scope in (frame.f_globals, frame.f_locals):
        modules = []
        for key, val in list(scope.items()):
            if isinstance(val, TensorBase):
                names[id(val)] = key
            elif (not isinstance(val, type) and hasattr(val, "named_parameters")
                    and hasattr(val, "parameters")):
                modules.append((key, val))
        for key, mod in modules:
            try:
                for pname, p in mod.named_parameters():
                    names.setdefault(id(p), f"{key}.{pname}")
            except Exception:
                pass               # looks like a Module: no names from it)
    return names


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def op_name(node):
    """The forward op of a backward node: ``MulBackward0`` -> ``mul``."""
    name = node.name()
    m = re.match(r"^(.*?)Backward\d*$", name)
    base = m.group(1) if m else name
    return _CAMEL.sub("_", base).lower()


def _shape(t):
    return tuple(t._arr.shape)


def _leaves(node, limit=10000):
    """Leaf tensors (requiring grad) reached from ``node``, in walk order."""
    out, seen, stack = [], set(), [node]
    while stack and len(seen) < limit:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        if n.name() == "AccumulateGrad":
            v = n.variable
            if v is not None:
                out.append(v)
            continue
        nxt, _ = _engine.node_inputs(n)
        stack.extend(reversed(nxt))
    return out


def _describe_leaves(leaves, names):
    parts = []
    for leaf in leaves[:3]:
        nm = names.get(id(leaf))
        parts.append(f"leaf `{nm}`" if nm else f"a leaf of shape {_shape(leaf)}")
    more = len(leaves) - 3
    text = ", ".join(parts)
    if more > 0:
        text += f" and {more} more leaves"
    return text


# --- explain -------------------------------------------------------------------------


def explain(t, _frame=None):
    """Say what ``t`` is for autograd and why its ``.grad`` is (not) filled.

    Parameters
    ----------
    t : Tensor

    Returns
    -------
    str
        One paragraph: a leaf that requires grad (and the state of its
        ``.grad``); a non-leaf made by which op at which line from which
        leaves (use the leaf's ``.grad``, or ``retain_grad()``); a tensor made
        under ``no_grad`` at which line; a detached copy made at which line; or
        a tensor that never required grad.
    """
    if not isinstance(t, TensorBase):
        raise TypeError(f"explain() expects a Tensor, got {type(t).__name__}")
    frame = _frame if _frame is not None else _user_frame()
    names = _names_in(frame)
    me = names.get(id(t))
    who = f"`{me}`" if me else "This tensor"
    ref = me or "t"
    shape = _shape(t)
    node = t._grad_fn
    origin = t._origin
    if node is not None:
        leaves = _leaves(node)
        text = (f"{who} is a non-leaf tensor of shape {shape}: it was made by "
                f"`{op_name(node)}` ({node.name()}){_at(node._site)}")
        if leaves:
            text += " from " + _describe_leaves(leaves, names)
        text += "."
        if t._retains_grad:
            text += (f" It retains its gradient (retain_grad()), so backward() "
                     f"fills {ref}.grad.")
        else:
            first = names.get(id(leaves[0])) if leaves else None
            use = f"use {first}.grad" if first else "read the leaf's .grad"
            text += (f" backward() does not keep .grad for non-leaf tensors: "
                     f"{use}, or call {ref}.retain_grad() before backward() (or run "
                     "forward and backward inside `with "
                     "cygrad.autograd.retain_grads():`).")
        return text
    if t._requires_grad:
        text = (f"{who} is a leaf tensor of shape {shape} that requires grad: "
                f"backward() accumulates its gradient into {ref}.grad.")
        if origin is not None and origin[0] == "detach":
            text += (f" It began as a detached copy (.detach(){_at(origin[1])}) "
                     "made into a new leaf by requires_grad_().")
        g = t._grad
        if g is None:
            text += (f" {ref}.grad is None now: no backward() has reached it yet "
                     "(it is not used by the output you called backward() on, "
                     "backward() has not run, or zero_grad() reset it to None).")
        else:
            text += (f" {ref}.grad holds a gradient of shape {_shape(g)}; "
                     "gradients add up across backward() calls until zeroed.")
        return text
    if origin is not None and origin[0] == "no_grad":
        return (f"{who} does not require grad: it was made under no_grad"
                f"{_at(origin[1])} from tensors that require grad, so no graph was "
                "recorded and backward() cannot reach through it. Compute it "
                "outside `with cygrad.no_grad():` (or inside `cygrad.enable_grad()`) "
                "if you need its gradient.")
    if origin is not None and origin[0] == "derived":
        src_kind, src_site = origin[2]
        src = (f"a detached copy made by .detach(){_at(src_site)}"
               if src_kind == "detach" else
               f"a tensor made under no_grad{_at(src_site)}")
        return (f"{who} does not require grad: it was computed{_at(origin[1])} from "
                f"{src}, which is outside the graph, so no gradient flows back "
                "through it and backward() from it fails. Use the original tensor "
                "instead of the detached one (or compute it outside no_grad) if "
                "you need gradients.")
    if origin is not None and origin[0] == "detach":
        return (f"{who} is a detached copy made by .detach(){_at(origin[1])}: it "
                "shares storage with the original tensor but is outside the graph, "
                "so it does not require grad and no gradient flows through it. Use "
                f"the original tensor, or call {ref}.requires_grad_() to make it a "
                "new leaf.")
    if t._arr.dtype.kind not in "fc":
        return (f"{who} has dtype {t._arr.dtype} and does not require grad: only "
                "floating point tensors can require gradients.")
    return (f"{who} does not require grad: it was created with requires_grad=False "
            "(the default for tensors you create, and for results of ops whose "
            f"inputs do not require grad), so backward() never fills {ref}.grad. "
            f"Create it with requires_grad=True or call {ref}.requires_grad_().")


def grad_warning(t):
    """PyTorch's warning on reading ``.grad`` of a non-leaf, with where the
    tensor came from (the compiled ``.grad`` getter calls it)."""
    msg = (
        "The .grad attribute of a Tensor that is not a leaf Tensor is being "
        "accessed. Its .grad attribute won't be populated during "
        "autograd.backward(). If you indeed want the .grad field to be populated "
        "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you "
        "access the non-leaf Tensor by mistake, make sure you access the leaf "
        "Tensor instead."
    )
    hint = _grad_warning_hint(t)
    if hint:
        msg += " " + hint
    warnings.warn(msg, UserWarning, stacklevel=2)   # from compiled .grad


def _grad_warning_hint(t):
    """Text added to PyTorch's warning about ``.grad`` of a non-leaf."""
    node = t._grad_fn
    if node is None:
        return ""
    try:
        frame = _user_frame()
        names = _names_in(frame)
        me = names.get(id(t))
        leaves = _leaves(node, limit=2000)
    except Exception:
        return ""
    who = f"`{me}`" if me else "This tensor"
    text = f"{who} was made by `{op_name(node)}`{_at(node._site)}"
    if leaves:
        text += " from " + _describe_leaves(leaves, names)
    first = names.get(id(leaves[0])) if leaves else None
    use = f"use {first}.grad" if first else "use the leaf's .grad"
    text += f": {use}, or call {me or 't'}.retain_grad() before backward()."
    return text


# --- retain_grads ------------------------------------------------------------------


class retain_grads:
    """Keep ``.grad`` of every non-leaf made inside the scope.

    Inside ``with cygrad.autograd.retain_grads():`` each tensor produced by an
    op that records a graph behaves as if ``retain_grad()`` had been called on
    it, so the backward passes fill its ``.grad`` (also after the scope ends).
    Tensors made before the scope are unaffected.  Also usable as a
    decorator.  The switch is process-wide, not per thread.
    """

    def __enter__(self):
        self._prev = _engine._set_retain_all(True)
        return self

    def __exit__(self, *exc):
        _engine._set_retain_all(self._prev)
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with retain_grads():
                return fn(*args, **kwargs)
        return wrapper


# --- graph_stats -----------------------------------------------------------------------


class GraphStats:
    """Live graph nodes and the bytes their saved tensors hold.

    Attributes
    ----------
    nodes : int
        Live backward nodes (made while the debug level was > 0).
    saved_bytes : int
        Bytes of arrays held by those nodes for backward (shared arrays are
        counted once).
    by_op : dict
        Node name -> (count, saved bytes), largest first.
    by_site : dict
        ``"file:line"`` -> node count, largest first.
    """

    def __init__(self, nodes, saved_bytes, by_op, by_site):
        self.nodes = nodes
        self.saved_bytes = saved_bytes
        self.by_op = by_op
        self.by_site = by_site

    def __repr__(self):
        return f"GraphStats(nodes={self.nodes}, saved_bytes={self.saved_bytes})"

    def __str__(self):
        lines = [(f"{self.nodes} live graph nodes holding "
                  f"{_fmt_bytes(self.saved_bytes)} of saved tensors")]
        for name, (n, b) in list(self.by_op.items())[:10]:
            lines.append(f"  {name:24s} {n:8d} nodes  {_fmt_bytes(b):>10s}")
        if self.by_site:
            lines.append("made at:")
            for site, n in list(self.by_site.items())[:10]:
                lines.append(f"  {site}  {n} nodes")
        return "\n".join(lines)


def _fmt_bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def _stats(nodes):
    total, by_op, by_site, seen_arrays = 0, {}, {}, set()
    for node in nodes:
        nbytes = 0
        for _key, arr_id, nb in _saved_arrays(node):
            if arr_id in seen_arrays:
                continue
            seen_arrays.add(arr_id)
            nbytes += nb
        total += nbytes
        name = node.name()
        n, b = by_op.get(name, (0, 0))
        by_op[name] = (n + 1, b + nbytes)
        s = _site_str(node._site)
        if s:
            by_site[s] = by_site.get(s, 0) + 1
    by_op = dict(sorted(by_op.items(), key=lambda kv: (-kv[1][1], -kv[1][0])))
    by_site = dict(sorted(by_site.items(), key=lambda kv: -kv[1]))
    return GraphStats(len(nodes), total, by_op, by_site)


def _saved_arrays(node):
    """(key, identity, nbytes) per array the node holds for backward; arrays
    shared by several nodes (a weight saved by every step) count once."""
    return [(None, id(a), a.nbytes) for a in _engine.node_saved_arrays(node)]


def graph_stats(t=None):
    """Live autograd graph: node count and bytes held by saved tensors.

    Parameters
    ----------
    t : Tensor, optional
        Count only the graph reachable from ``t.grad_fn``.  By default, every
        live node made while the debug level was > 0.

    Returns
    -------
    GraphStats
    """
    if t is None:
        nodes = _engine.live_nodes()
    else:
        nodes = _walk(t._grad_fn) if t._grad_fn is not None else []
    return _stats(nodes)


def _walk(root, limit=None):
    """Backward nodes (not leaf sinks) reachable from ``root``, root first."""
    out, seen, stack = [], set(), [root]
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        if n.name() == "AccumulateGrad":
            continue
        out.append(n)
        if limit is not None and len(out) >= limit:
            break
        nxt, _ = _engine.node_inputs(n)
        stack.extend(reversed(nxt))
    return out


# --- backward-twice diagnosis ------------------------------------------------------------


def stale_hint(node, shape, root_gen):
    """Extra text for the backward-twice error when the graph is stale.

    ``node`` is the freed node; ``shape`` the shape of its output (from the
    incoming gradient) or None; ``root_gen`` the newest generation among the
    roots of the failing backward.
    """
    gen = node._gen
    if gen is None or root_gen is None or gen >= root_gen:
        return ""
    if shape is None:
        meta = getattr(node, "_out_meta", None)
        if meta and meta[0] is not None:
            shape = tuple(meta[0][0])
    what = f"a tensor of shape {shape}" if shape is not None else "a tensor"
    return (
        f". This part of the graph was built before the last optimizer.step() or "
        f"zero_grad() and was freed by that earlier iteration's backward(): {what} "
        f"made by `{op_name(node)}`{_at(node._site)} is carried across iterations "
        "and still links this iteration's graph to the old one. Cut the link with "
        ".detach() at the end of each iteration (e.g. `h = h.detach()`) rather "
        "than retain_graph=True, which would keep every iteration's graph alive "
        "and make each backward slower.")


# --- optimizer hooks: generations and the leak warning -------------------------------------

_opt_state = weakref.WeakKeyDictionary()   # optimizer -> _OptDiag


class _OptDiag:
    __slots__ = ("gens", "seen", "warned")

    def __init__(self):
        self.gens = []        # generation right after each of the last steps
        self.warned = False
        self.seen = None      # the old graph checked last time (skip if unchanged)


def _diag_of(opt):
    try:
        d = _opt_state.get(opt)
        if d is None:
            d = _opt_state[opt] = _OptDiag()
        return d
    except TypeError:           # not weak-referenceable: no leak check
        return None


def optimizer_zero_grad(opt):
    """Called by ``Optimizer.zero_grad()``: a new iteration may begin."""
    _engine._bump_generation()


def optimizer_step(opt):
    """Called by ``Optimizer.step()``: check for leaked graphs, new generation."""
    d = _diag_of(opt)
    if d is not None and not d.warned and len(d.gens) >= 2 and \
            _engine._get_debug_level() > 0:
        _check_leak(opt, d)
    gen = _engine._bump_generation()
    if d is not None:
        d.gens.append(gen)
        del d.gens[:-2]


def _check_leak(opt, d):
    """Warn once when the graphs of the two previous iterations are still alive
    and reach this optimizer's parameters: a tensor computed from them outlives
    its iteration, so every iteration's graph stays in memory (one graph kept
    for later, e.g. a validation loss, is not reported)."""
    older, prev = d.gens[-2], d.gens[-1]
    old = _engine.live_nodes(before_gen=prev, limit=_LEAK_SCAN_LIMIT)
    if not old:
        return
    # A graph kept on purpose stays the same from step to step: check it once.
    key = (len(old), id(old[0]), id(old[-1]))
    if key == d.seen:
        return
    d.seen = key
    params = {id(p) for g in opt.param_groups for p in g["params"]}
    # Old nodes whose graph reaches one of this optimizer's parameters.  A
    # node's inputs are made before it, so one pass in creation order works.
    reach = set()
    mine = []
    for node in old:
        nxt, _ = _engine.node_inputs(node)
        for child in nxt:
            if child is None:
                continue
            if child.name() == "AccumulateGrad":
                v = child.variable
                hit = v is not None and id(v) in params
            else:
                hit = id(child) in reach
            if hit:
                reach.add(id(node))
                mine.append(node)
                break
    in_prev = any(n._gen is not None and n._gen >= older for n in mine)
    in_older = any(n._gen is not None and n._gen < older for n in mine)
    if not (in_prev and in_older):
        return
    d.warned = True
    # The culprit: the newest such node that consumes a tensor of an older
    # generation (``total_loss += loss`` joins iterations); failing that, the
    # newest one no other old node uses (held by a tensor, e.g. in a list).
    culprit = None
    used = set()
    for node in mine:
        nxt, _ = _engine.node_inputs(node)
        for child in nxt:
            if child is None:
                continue
            used.add(id(child))
            cg = getattr(child, "_gen", None)
            if child.name() != "AccumulateGrad" and cg is not None and \
                    node._gen is not None and cg < node._gen:
                culprit = node
    if culprit is None:
        roots = [n for n in mine if id(n) not in used]
        culprit = roots[-1] if roots else mine[-1]
    stats = _stats(mine)
    where = f"`{op_name(culprit)}`{_at(culprit._site)}"
    warnings.warn(
        f"optimizer.step(): the autograd graphs of earlier iterations are still "
        f"alive ({stats.nodes} nodes holding {_fmt_bytes(stats.saved_bytes)} of "
        f"saved tensors) and reach the parameters: a tensor made by {where} "
        "outlives its iteration, so every iteration's graph stays in memory. "
        "Typical causes: `total_loss += loss` (use `loss.item()`), keeping losses "
        "or outputs in a list (store `.item()` or `.detach()`), or state carried "
        "to the next iteration without `.detach()`. (Shown once per optimizer.)",
        UserWarning, stacklevel=_stacklevel())

