"""``cygrad.utils.checkpoint``: activation checkpointing, as torch's.

A checkpointed region keeps only what it reads after the forward pass; its
backward runs the region again (with cygrad's generator set back, so
dropout draws the same masks) and differentiates that recomputation.

Two variants, chosen by ``use_reentrant`` as in torch:

- ``True`` (``CheckpointFunction``, torch's design): the forward runs the
  region under no_grad; the backward replays the generator, runs the
  region again on the detached arguments with grad on and backpropagates
  through that in a nested pass, so the parameters get their gradients in
  ``.grad`` there.  Only tensors passed directly as arguments are inputs,
  at least one must require grad, and ``autograd.grad`` /
  ``backward(inputs=...)`` are refused (torch's rules and messages).
- ``False``: without torch's saved-tensor hooks (cygrad's compiled nodes
  keep their saved arrays) the region is one node whose inputs are its
  argument tensors (nested in tuples, lists and dicts too), the leaves it
  reads (parameters) and the non-leaf tensors it captures.  The forward
  runs the region with grad on and walks its graph to find those (and to
  log the tensors its ops save, for the determinism check), then lets the
  graph go; the backward recomputes on the detached arguments and takes
  the gradients with ``autograd.grad``.  So ``autograd.grad``,
  ``backward(inputs=...)`` and ``create_graph=True`` work, to any order,
  and keyword arguments and non-tensor outputs are allowed.

Captured non-leaf tensors (both variants) are looked for in closures,
defaults, the globals the function names, ``functools.partial`` arguments
and the attributes of objects and modules reachable from them
(``_SCAN_DEPTH`` steps).  They are inputs of the checkpoint's node, and
during the recomputation each is a leaf of its own, so that their
gradients reach their graphs once, through that node.  A non-reentrant
region that reaches the outer graph some other way raises
``CheckpointError`` at backward, asking for the tensor to be passed as an
argument.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import types
import warnings
import weakref
from typing import TYPE_CHECKING, Any

from cygrad._kernels.engine import (
    AccumulateGrad,
    TensorBase,
    _grad_edge,
    is_grad_enabled,
)
from cygrad.autograd.backprop import (
    _is_checkpoint_valid,
    _part_of_running_pass,
    backward,
    grad,
)
from cygrad.autograd.function import Function
from cygrad.autograd.grad_mode import enable_grad
from cygrad.creation import zeros_like
from cygrad.random import fork_rng, get_rng_state, set_rng_state

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from contextlib import AbstractContextManager

__all__ = [
    "CheckpointError",
    "CheckpointFunction",
    "check_backward_validity",
    "checkpoint",
    "checkpoint_sequential",
    "detach_variable",
    "noop_context_fn",
    "set_checkpoint_debug_enabled",
]

_DETERMINISM_CHECKS = ("default", "none")
_debug_override: bool | None = None
# How far the search for captured tensors follows references from the
# function (closure -> object -> its module -> submodule -> tensor ...).
_SCAN_DEPTH = 6


# Marks where the captured tensors begin in CheckpointFunction's arguments.
_CAPTURED = object()


class CheckpointError(RuntimeError):
    """The recomputation of a checkpointed region did not match its forward."""


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled: bool | None) -> Iterator[None]:
    """Override ``checkpoint(..., debug=...)`` inside the block.

    Parameters
    ----------
    enabled : bool or None
        True or False replaces every checkpoint's ``debug`` flag while the
        block runs; None leaves each call's own flag in force.
    """
    global _debug_override
    prev = _debug_override
    _debug_override = enabled
    try:
        yield
    finally:
        _debug_override = prev


def noop_context_fn() -> tuple[AbstractContextManager, AbstractContextManager]:
    """The default ``context_fn``: two contexts that do nothing."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs: tuple) -> tuple:
    """Each tensor of the tuple ``inputs`` detached, keeping its
    ``requires_grad``; other items unchanged."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(  # noqa: TRY004  (torch's type)
            "Only tuple of tensors is supported. Got Unsupported input type: "
            f"{type(inputs).__name__}")
    return tuple(_detached(x) if isinstance(x, TensorBase) else x for x in inputs)


def check_backward_validity(inputs: Iterable[Any]) -> None:
    """Warn when no tensor of ``inputs`` requires grad (the reentrant
    checkpoint then gives no gradients at all)."""
    if not any(x.requires_grad for x in inputs if isinstance(x, TensorBase)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will "
                      "be None", stacklevel=2)


def _detached(t):
    d = t.detach()
    d.requires_grad_(t.requires_grad)
    return d


def _needs_grad(t):
    return isinstance(t, TensorBase) and t.requires_grad


def _fresh(tensors):
    """Leaves standing for ``tensors`` (or None) in a recomputation."""
    return [_detached(t) if _needs_grad(t) else t for t in tensors]


@contextlib.contextmanager
def _held(tensors):
    """For the recomputation: the tensors' hooks are held back (the outer
    pass delivers their gradients through the checkpoint's node, and runs
    the hooks then), and each non-leaf one is a leaf of its own, so that the
    recomputed graph stops there and a nested ``backward`` leaves its
    gradient in ``._grad``."""
    kept = [(t, t._grad_fn, t._acc, t._hooks, t._grad) for t in tensors]
    try:
        for t, fn, _, _, _ in kept:
            t._hooks = None
            if fn is not None:
                t._grad_fn, t._acc, t._grad = None, None, None
        yield
    finally:
        for t, fn, acc, hooks, grad_ in reversed(kept):
            t._hooks = hooks
            if fn is not None:
                t._grad_fn, t._acc, t._grad = fn, acc, grad_


# --- nested arguments and outputs --------------------------------------------------
# A spec is None for a leaf, (type, specs) for a tuple, list or namedtuple,
# (type, keys, specs) for a dict or OrderedDict: the containers torch's
# non-reentrant checkpoint looks into.

def _flatten(obj, leaves):
    kind = type(obj)
    if kind is tuple or kind is list or (isinstance(obj, tuple)
                                         and hasattr(kind, "_fields")):
        return (kind, [_flatten(v, leaves) for v in obj])
    if kind is dict or kind is collections.OrderedDict:
        keys = list(obj)
        return (kind, keys, [_flatten(obj[k], leaves) for k in keys])
    leaves.append(obj)
    return None


def _unflatten(spec, it):
    if spec is None:
        return next(it)
    if len(spec) == 3:
        kind, keys, specs = spec
        return kind(zip(keys, [_unflatten(s, it) for s in specs]))
    kind, specs = spec
    items = [_unflatten(s, it) for s in specs]
    if kind is list:
        return items
    return tuple(items) if kind is tuple else kind(*items)


# --- what a region reads from outside ----------------------------------------------

def _referents(obj):
    """The objects ``obj`` holds that a call of it could read tensors from."""
    if isinstance(obj, (tuple, list, set, frozenset)):
        return list(obj)
    if isinstance(obj, dict):
        return list(obj.values())
    if isinstance(obj, functools.partial):
        return [obj.func, *obj.args, *obj.keywords.values()]
    if isinstance(obj, types.MethodType):
        return [obj.__func__, obj.__self__]
    if isinstance(obj, types.FunctionType):
        found = [c.cell_contents for c in obj.__closure__ or () if _is_set(c)]
        found += list(obj.__defaults__ or ())
        found += list((obj.__kwdefaults__ or {}).values())
        g = obj.__globals__
        found += [g[n] for n in _global_names(obj.__code__) if n in g]
        return found
    attrs = getattr(obj, "__dict__", None)
    if attrs is None:
        return ()
    if "_modules" in attrs and "_buffers" in attrs:
        # a Module: its parameters are leaves and its hook tables are
        # empty in the common case; what may hold a non-leaf is a buffer, a
        # submodule or an attribute of the user's
        return [*attrs["_buffers"].values(), *attrs["_modules"].values(),
                *(v for k, v in attrs.items() if k[0] != "_")]
    return list(attrs.values())


def _is_set(cell):
    try:
        cell.cell_contents  # noqa: B018  (an empty cell raises)
    except ValueError:
        return False
    return True


def _global_names(code):
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _global_names(c)
    return names


_OPAQUE = (str, bytes, int, float, complex, type, types.ModuleType,
           types.BuiltinFunctionType, types.CodeType)


def _captured(objs):
    """{(node id, output number): tensor} of the non-leaf tensors requiring
    grad reachable from ``objs`` (at most ``_SCAN_DEPTH`` steps away)."""
    found, seen = {}, set()
    stack = [(o, _SCAN_DEPTH) for o in objs]
    while stack:
        obj, depth = stack.pop()
        if isinstance(obj, TensorBase):
            if obj._grad_fn is not None:
                found.setdefault((id(obj._grad_fn), obj._out_nr), obj)
            continue
        if depth == 0 or isinstance(obj, _OPAQUE) or id(obj) in seen:
            continue
        seen.add(id(obj))
        stack.extend((r, depth - 1) for r in _referents(obj))
    return found


def _walk(roots, own, captured):
    """Walk the graph behind the tensors ``roots`` of a region.

    The walk stops at leaves and at the edges of ``captured``
    ({(node id, output number): tensor}); ``own`` holds the ids of the
    region's own argument leaves.  Returns the other leaves reached and the
    captured tensors reached (each once, in walk order), the region's log
    (per node: its name and the (shape, bytes) of each tensor it saved) and
    a weak reference to each node.
    """
    leaves, hit, log, nodes = [], [], [], []
    seen, seen_t = set(), set()
    stack = [(_grad_edge(t), t._out_nr) for t in reversed(roots)]
    while stack:
        node, nr = stack.pop()
        if node is None:
            continue
        tensor = captured.get((id(node), nr))
        if tensor is not None:
            if id(tensor) not in seen_t:
                seen_t.add(id(tensor))
                hit.append(tensor)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, AccumulateGrad):
            leaf = node.variable
            if leaf is not None and id(leaf) not in own and id(leaf) not in seen_t:
                seen_t.add(id(leaf))
                leaves.append(leaf)
            continue
        log.append((node.name(), [(tuple(shape), nbytes)
                                  for _, shape, nbytes in node._saved_shapes()]))
        nodes.append(weakref.ref(node))
        stack.extend(reversed(node.next_functions))
    return leaves, hit, log, nodes


def _rerun(function, rng, context, args, kwargs):
    """``function`` again, with grad on and the generator at ``rng`` (when
    not None; the generator is put back afterwards)."""
    with fork_rng(enabled=rng is not None):
        if rng is not None:
            set_rng_state(rng)
        with enable_grad(), context:
            return function(*args, **kwargs)


class _Region:
    """A checkpointed call: what was called, on what, and what it read."""

    def __init__(self, function, spec, leaves, preserve, recompute_ctx, check,
                 debug):
        self.function = function
        self.spec = spec
        self.tensor_pos = [i for i, x in enumerate(leaves)
                           if isinstance(x, TensorBase)]
        self.leaves = [None if isinstance(x, TensorBase) else x for x in leaves]
        self.rng = get_rng_state() if preserve else None
        self.recompute_ctx = recompute_ctx
        self.check = check
        self.debug = debug
        self.extra = ()       # the leaves, then the captured tensors, it reads
        self.log = None       # the forward's log (see _walk)
        self.nodes = ()       # weak references to the forward's nodes

    def arguments(self, tensors):
        """The call's (args, kwargs) with ``tensors`` in the tensors' places."""
        leaves = list(self.leaves)
        for i, t in zip(self.tensor_pos, tensors):
            leaves[i] = t
        return _unflatten(self.spec, iter(leaves))

    def learn(self, roots, own, captured):
        """Walk the forward's graph (see the module doc)."""
        leaves, hit, self.log, self.nodes = _walk(roots, own, captured)
        self.extra = tuple(leaves) + tuple(hit)

    def rerun(self, args, kwargs):
        """The function again, on ``args``, as it ran in the forward."""
        return _rerun(self.function, self.rng, self.recompute_ctx, args, kwargs)

    def verify(self, roots, own):
        """Check the recomputation's graph against the forward's."""
        leaves, _, log, nodes = _walk(roots, own, {})
        forward_nodes = {id(n) for n in (r() for r in self.nodes) if n is not None}
        for r in nodes:
            node = r()
            if node is not None and id(node) in forward_nodes:
                # a node that outlived the forward: the graph outside the region
                raise CheckpointError(
                    "checkpoint: the checkpointed function reads a tensor that "
                    f"requires grad and has a history ({node.name()}) without "
                    "taking it as an argument, and cygrad could not find it; pass "
                    "it to checkpoint() as an argument.")
        known = {id(t) for t in self.extra}
        for t in leaves:
            if id(t) not in known:
                raise CheckpointError(
                    "checkpoint: the recomputation read a tensor that requires "
                    f"grad (shape {list(t.shape)}) that the original forward did "
                    "not read; the checkpointed function must compute the same "
                    "thing both times.")
        if self.check:
            _check_same(self, log)


# --- the determinism check -----------------------------------------------------------

def _meta(entry):
    shape, nbytes = entry
    return f"{{'shape': {list(shape)}, 'bytes': {nbytes}}}"


def _saved(log):
    return [(name, entry) for name, entries in log for entry in entries]


def _format_log(log):
    lines = []
    for name, entries in log:
        saved = ", ".join(_meta(e) for e in entries)
        lines.append(f"  {name}" + (f": {saved}" if saved else ""))
    return "\n".join(lines) + "\n"


def _check_same(region, log):
    """Raise CheckpointError when the recomputation saved other tensors than
    the forward did (their number, shapes or sizes)."""
    before, after = _saved(region.log), _saved(log)
    if len(before) != len(after):
        msg = ("torch.utils.checkpoint: A different number of tensors was saved "
               "during the original forward and recomputation.\n"
               f"Number of tensors saved during forward: {len(before)}\n"
               f"Number of tensors saved during recomputation: {len(after)}.\n")
    else:
        differ = [(i, b, a) for i, ((_, b), (_, a)) in enumerate(zip(before, after))
                  if b != a]
        if not differ:
            return
        msg = ("torch.utils.checkpoint: Recomputed values for the following tensors "
               "have different metadata than during the forward pass.\n")
        for i, b, a in differ:
            msg += (f"tensor at position {i} (saved by {before[i][0]}):\n"
                    f"saved metadata: {_meta(b)}\n"
                    f"recomputed metadata: {_meta(a)}\n")
    if region.debug:
        msg += ("\nOperations of the original forward, from the output back, with "
                "the tensors each saved:\n" + _format_log(region.log)
                + "\nOperations of the recomputation:\n" + _format_log(log))
    else:
        msg += ("\nTip: pass debug=True to checkpoint(), or run it inside "
                "set_checkpoint_debug_enabled(True), to list the operations of "
                "both runs.")
    raise CheckpointError(msg)


# --- the reentrant variant ---------------------------------------------------------

class CheckpointFunction(Function):
    """``CheckpointFunction.apply(run_function, preserve_rng_state, *args)``:
    the reentrant checkpoint (see the module doc).

    ``checkpoint()`` passes, after the arguments, ``_CAPTURED`` and the
    captured tensors it found, so that their gradients reach their graphs.
    """

    _half_native = True      # the region runs in its own dtypes

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        n = next((i for i, a in enumerate(args) if a is _CAPTURED), len(args))
        captured, args = args[n + 1:], args[:n]
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.rng = get_rng_state() if preserve_rng_state else None
        ctx.inputs = [None if isinstance(a, TensorBase) else a for a in args]
        ctx.tensor_indices = [i for i, a in enumerate(args)
                              if isinstance(a, TensorBase)]
        ctx.n_captured = len(captured)
        ctx.save_for_backward(*(args[i] for i in ctx.tensor_indices), *captured)
        return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        if not _is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible "
                "with .grad() or passing an `inputs` parameter to .backward(). To "
                "resolve this error, you can either set use_reentrant=False, or "
                "call .backward() without passing the `inputs` argument.")
        saved = ctx.saved_tensors
        n = len(saved) - ctx.n_captured
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, saved[:n]):
            inputs[i] = t
        detached = detach_variable(tuple(inputs))
        captured = saved[n:]
        with _held(captured):
            outputs = _rerun(ctx.run_function, ctx.rng, contextlib.nullcontext(),
                             detached, {})
            if isinstance(outputs, TensorBase):
                outputs = (outputs,)
            roots, seeds = [], []
            for out, g in zip(outputs, grads):
                if isinstance(out, TensorBase) and out.requires_grad:
                    roots.append(out)
                    seeds.append(g)
            if not roots:
                raise RuntimeError("none of output has requires_grad=True, this "
                                   "checkpoint() is not necessary")
            backward(roots, seeds)
            captured_grads = tuple(t._grad for t in captured)
        result = tuple(x.grad if isinstance(x, TensorBase) else None
                       for x in detached)
        if captured:
            result += (None, *captured_grads)
        return (None, None, *result)


# --- the non-reentrant variant -----------------------------------------------------

class _Isolated(Function):
    """``outs = fn(*inputs)``, differentiated by recomputing ``fn`` on fresh
    leaves.  ``fn.n_extra`` trailing inputs are tensors ``fn`` reads itself
    (``_held`` while it runs, instead of being replaced).  Under
    ``create_graph=True`` the gradient is itself an ``_Isolated`` call (of
    ``_VJP(fn)``), so every order of derivative is available."""

    _node_name = "CheckpointGradBackward"
    _half_native = True

    @staticmethod
    def forward(ctx, fn, *inputs):
        ctx.fn = fn
        ctx.save_for_backward(*inputs)
        values = getattr(fn, "values", None)
        if values is not None:
            fn.values = None           # computed by the caller already
        else:
            plain, extra = _split(fn, inputs)
            with _held(extra), enable_grad():
                values = fn(*_fresh(plain), *extra)
        return tuple(v.detach() for v in values)

    @staticmethod
    def backward(ctx, *grads):
        fn = ctx.fn
        inputs = ctx.saved_tensors
        if is_grad_enabled():          # create_graph=True: differentiable
            # (the engine materializes missing output gradients as zeros)
            vjp = _VJP(fn, len(grads))
            return (None, *_Isolated.apply(vjp, *grads, *inputs))
        plain, extra = _split(fn, inputs)
        fresh = _fresh(plain)
        targets = [t for t in fresh + list(extra) if _needs_grad(t)]
        with _held(extra):
            outs = fn(*fresh, *extra)
            found = _vjp(outs, grads, targets, create_graph=False)
        by_id = dict(zip(map(id, targets), found))
        return (None, *(by_id.get(id(t)) for t in fresh + list(extra)))


def _split(fn, inputs):
    n = len(inputs) - fn.n_extra
    return inputs[:n], inputs[n:]


def _vjp(outs, grads, targets, create_graph):
    """The gradients of ``outs`` (weighted by ``grads``) for ``targets``."""
    roots, seeds = [], []
    for o, g in zip(outs, grads):
        if g is not None and _needs_grad(o):
            roots.append(o)
            seeds.append(g)
    if not roots or not targets:
        return [None] * len(targets)
    with _part_of_running_pass():
        return grad(roots, targets, seeds, create_graph=create_graph,
                    allow_unused=True)


class _VJP:
    """``(grads..., inputs...) -> gradients of fn(*inputs) for inputs``: the
    function whose ``_Isolated`` call is a differentiable gradient."""

    def __init__(self, fn, n_out):
        self.fn = fn
        self.n_out = n_out
        self.n_extra = fn.n_extra
        self.values = None

    def __call__(self, *tensors):
        grads, inputs = tensors[:self.n_out], tensors[self.n_out:]
        outs = self.fn(*inputs)
        targets = [t for t in inputs if _needs_grad(t)]
        found = _vjp(outs, grads, targets, create_graph=True)
        by_id = dict(zip(map(id, targets), found))
        out = []
        for t in inputs:
            g = by_id.get(id(t))
            out.append(g if g is not None or t is None else zeros_like(t))
        return tuple(out)


class _RegionFn:
    """A non-reentrant region as a function of its argument tensors (then
    the tensors it reads itself, which it takes from where it finds them)."""

    def __init__(self, region, n_flat, out_pos, values):
        self.region = region
        self.n_flat = n_flat
        self.out_pos = out_pos
        self.n_extra = len(region.extra)
        self.values = values

    def __call__(self, *tensors):
        region = self.region
        args = tensors[:len(tensors) - self.n_extra]
        own = {id(t) for t in args if t.requires_grad}
        call_args, call_kwargs = region.arguments(args)
        flat = []
        _flatten(region.rerun(call_args, call_kwargs), flat)
        if len(flat) != self.n_flat or not all(
                isinstance(flat[i], TensorBase) and flat[i].requires_grad
                for i in self.out_pos):
            n = sum(isinstance(o, TensorBase) and o.requires_grad for o in flat)
            raise CheckpointError(
                f"checkpoint: the recomputation returned {len(flat)} values, {n} "
                "of them tensors that require grad, where the original forward "
                f"returned {self.n_flat} and {len(self.out_pos)}; the checkpointed "
                "function must compute the same thing both times.")
        outs = [flat[i] for i in self.out_pos]
        region.verify(outs, own)
        return outs


class _Checkpoint(_Isolated):
    """The node of a non-reentrant checkpointed region."""

    _node_name = "CheckpointBackward"


def _checkpoint_without_reentrant(function, preserve, context_fn, determinism_check,
                                  debug, args, kwargs):
    if _debug_override is not None:
        debug = _debug_override
    if debug and context_fn is not noop_context_fn:
        raise ValueError("debug=True is incompatible with non-default context_fn")
    if determinism_check not in _DETERMINISM_CHECKS:
        raise ValueError(f"determinism_check should be one of "
                         f"{list(_DETERMINISM_CHECKS)}, but got {determinism_check}")
    forward_ctx, recompute_ctx = context_fn()
    if not is_grad_enabled():
        return function(*args, **kwargs)
    leaves = []
    spec = _flatten((args, kwargs), leaves)
    region = _Region(function, spec, leaves, preserve, recompute_ctx,
                     determinism_check == "default", debug)
    # Looked for before the call: a tensor the function stores while it runs
    # is its own.
    captured = _captured([function] + [x for x in leaves
                                       if not isinstance(x, TensorBase)])
    tensors = [leaves[i] for i in region.tensor_pos]
    local = _fresh(tensors)
    own = {id(t) for t in local if t.requires_grad}
    call_args, call_kwargs = region.arguments(local)
    finished = False
    with forward_ctx:
        out = function(*call_args, **call_kwargs)
        finished = True
    if not finished:
        raise RuntimeError(
            "torch.utils.checkpoint: the forward context provided by context_fn "
            "suppressed an exception raised during the checkpointed forward. This "
            "is not supported because checkpoint cannot return a value for a "
            "failed forward.")
    flat = []
    out_spec = _flatten(out, flat)
    out_pos = [i for i, o in enumerate(flat)
               if isinstance(o, TensorBase) and o.requires_grad]
    if not out_pos:
        return out
    values = [flat[i] for i in out_pos]
    region.learn(values, own, captured)
    fn = _RegionFn(region, len(flat), out_pos, values)
    news = _Checkpoint.apply(fn, *tensors, *region.extra)
    for i, t in zip(out_pos, news):
        flat[i] = t
    return _unflatten(out_spec, iter(flat))


# --- the public functions ----------------------------------------------------------

def _warn_reentrant_default(where):
    warnings.warn(
        f"{where}: the use_reentrant parameter should be passed explicitly. "
        "Without it cygrad, like torch 2.13, uses use_reentrant=True; "
        "use_reentrant=False is the recommended variant (it also supports "
        "autograd.grad, keyword arguments and nested inputs).", stacklevel=3)


def checkpoint(function: Callable[..., Any], *args: Any,
               use_reentrant: bool | None = None,
               context_fn: Callable[[], tuple[AbstractContextManager,
                                              AbstractContextManager]]
               = noop_context_fn,
               determinism_check: str = "default", debug: bool = False,
               early_stop: bool = True, preserve_rng_state: bool = True,
               **kwargs: Any) -> Any:
    """Run ``function(*args, **kwargs)`` without keeping its activations.

    The backward pass runs ``function`` again, with grad enabled and (when
    ``preserve_rng_state``) cygrad's generator set back to its state at the
    call, and differentiates that recomputation.  The function must compute
    the same thing both times.

    Parameters
    ----------
    function : callable
        The region: a module or any function of tensors.
    *args, **kwargs
        Its arguments.  Keyword arguments need ``use_reentrant=False``.
    use_reentrant : bool
        Which variant (see the module doc).  Pass it: without it a
        ``UserWarning`` is given and the reentrant variant is used, as in
        torch 2.13.
    context_fn : callable, optional
        Returns two context managers: the forward runs inside the first, the
        recomputation inside the second (``use_reentrant=False`` only).
    determinism_check : {"default", "none"}
        ``"default"`` compares the number, shapes and sizes of the tensors
        the region's ops saved in the forward and in the recomputation and
        raises ``CheckpointError`` when they differ (``use_reentrant=False``
        only).
    debug : bool
        Add the operations of both runs to that error
        (``use_reentrant=False`` only).
    early_stop : bool
        Accepted for torch's signature; cygrad always recomputes the whole
        region, which gives the same gradients.
    preserve_rng_state : bool
        Restore the generator for the recomputation (default True).

    Returns
    -------
    object
        What ``function`` returns; its tensors carry the region's gradient.
    """
    if use_reentrant is None:
        _warn_reentrant_default("torch.utils.checkpoint")
        use_reentrant = True
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if not use_reentrant:
        return _checkpoint_without_reentrant(function, preserve_rng_state,
                                             context_fn, determinism_check, debug,
                                             args, kwargs)
    if context_fn is not noop_context_fn or debug is not False:
        raise ValueError("Passing `context_fn` or `debug` is only supported when "
                         "use_reentrant=False.")
    captured = ()
    if is_grad_enabled() and any(_needs_grad(a) for a in args):
        captured = tuple(_captured([function] + [
            a for a in args if not isinstance(a, TensorBase)]).values())
    if captured:
        args = (*args, _CAPTURED, *captured)
    return CheckpointFunction.apply(function, preserve_rng_state, *args)


def _is_sequential(obj):
    # nn.Sequential by name: cygrad.nn imports cygrad.utils (hooks), so this
    # module cannot import cygrad.nn.
    return any(c.__name__ == "Sequential" and c.__module__.startswith("cygrad.nn")
               for c in type(obj).__mro__)


def checkpoint_sequential(functions: Any, segments: int, input: Any,
                          use_reentrant: bool | None = None, **kwargs: Any) -> Any:
    """Run a chain of modules in ``segments`` checkpointed pieces.

    Every piece but the last is checkpointed; the last runs normally, so its
    activations are kept as usual.

    Parameters
    ----------
    functions : nn.Sequential or list of callables
        The chain; each element takes and returns one value.  A Sequential is
        split into its (distinct) children.
    segments : int
        Number of pieces, each of ``len(functions) // segments`` elements;
        the last takes the remainder.
    input : Tensor
        Input of the first element.
    use_reentrant : bool
        As for ``checkpoint`` (warned about and taken as True when omitted).
    preserve_rng_state : bool, optional (keyword)
        As for ``checkpoint``; no other keyword is accepted.

    Returns
    -------
    object
        The output of the last element.
    """
    if use_reentrant is None:
        _warn_reentrant_default("torch.utils.checkpoint.checkpoint_sequential")
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if _is_sequential(functions):
        functions = list(functions.children())

    def run(part):
        def forward(x):
            for f in part:
                x = f(x)
            return x
        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        # each piece holds only its own elements (fewer places to look for
        # captured tensors)
        input = checkpoint(run([functions[j] for j in range(start, end + 1)]), input,
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run([functions[j] for j in range(end + 1, len(functions))])(input)
