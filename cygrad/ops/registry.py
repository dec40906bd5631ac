"""The op registry, the ``xp`` namespaces backward formulas are written
against, and the helpers every op module shares.

``OPS`` lists every public op; ``@op`` registers a function and attaches its
Tensor methods.  A ``backward`` is written once against ``xp = _ns()``:
NumPy arrays on the fast path (grad mode off), Tensors under
``create_graph=True`` (so the backward is itself recorded).
"""

import collections
import math
import weakref as _weakref

import numpy as np

from cygrad._kernels import engine as _engine
from cygrad._kernels.bmm import matmul as _bmm_matmul
from cygrad._kernels.engine import _wrap, function_apply, is_grad_enabled
from cygrad._kernels.reduce import sum_to_shape as _np_sum_to_shape
from cygrad._tensor import Tensor, _canon_dim
from cygrad.autograd.function import Function
from cygrad.creation import get_default_dtype

# --- the registry ------------------------------------------------------------------

class OpSpec:
    """One public op: its function, Tensor method names and aliases."""

    def __init__(self, name, fn, methods, primitive, domain, kind, aliases=(),
                 row=None):
        self.name = name
        self.aliases = aliases
        self.row = row      # the op-table row of an elementwise op
        self.fn = fn
        self.methods = methods
        self.primitive = primitive
        self.domain = domain
        self.kind = kind

    def __repr__(self):
        return self.name


OPS = {}


def op(name, methods=(), primitive=False, domain=None, kind="other", aliases=(),
       row=None):
    """Register ``fn`` as the public op ``name`` (and as Tensor methods)."""
    def deco(fn):
        OPS[name] = OpSpec(name, fn, tuple(methods), primitive, domain, kind,
                           tuple(aliases), row)
        for m in methods:
            setattr(Tensor, m, fn)
        return fn
    return deco


def return_type(name, fields):
    """The named tuple an op returns (``values, indices = x.max(1)``), printed
    as torch prints its ``torch.return_types.<name>``: one field per line."""
    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
        return f"torch.return_types.{name}(\n{body})"

    cls = type(name, (collections.namedtuple(name, fields),),
               {"__slots__": (), "__repr__": __repr__})
    cls.__module__ = "torch.return_types"
    return cls


# --- array namespaces for backward formulas ---------------------------------------

class _NumpyNS:
    """Backward formulas over NumPy arrays (grad mode off: the fast path).

    The array helpers are the engine's compiled ``xp_*`` functions (no
    Python frame per call) or NumPy's ufuncs.
    """

    val = staticmethod(_engine.xp_val)
    out = staticmethod(_engine.xp_out)
    matmul = staticmethod(_bmm_matmul)
    reshape = staticmethod(_engine.xp_reshape)
    broadcast_to = staticmethod(np.broadcast_to)
    swapaxes = staticmethod(_engine.xp_swapaxes)
    transpose = staticmethod(_engine.xp_transpose)
    expand_dims = staticmethod(np.expand_dims)
    exp = staticmethod(np.exp)
    sum_to_shape = staticmethod(_np_sum_to_shape)
    sum = staticmethod(_engine.xp_sum)

    @staticmethod
    def const(arr):
        """A constant operand (no gradient) of the formula."""
        return arr


class _TensorNS:
    """The same formulas over Tensors (create_graph=True: recorded).

    Through Tensor methods, which the op modules attach: this module sits
    below all of them.
    """

    @staticmethod
    def val(t):
        return t

    @staticmethod
    def out(a):
        return a

    @staticmethod
    def matmul(a, b):
        return a.matmul(b)

    @staticmethod
    def reshape(a, shape):
        return a.reshape(shape)

    @staticmethod
    def broadcast_to(a, shape):
        return a.expand(shape)

    @staticmethod
    def swapaxes(a, d0, d1):
        return a.transpose(d0, d1)

    @staticmethod
    def transpose(a, axes):
        return a.permute(axes)

    @staticmethod
    def expand_dims(a, axis):
        return a.unsqueeze(axis)

    @staticmethod
    def exp(a):
        return a.exp()

    @staticmethod
    def sum_to_shape(a, shape):
        return sum_to_shape(a, shape)

    @staticmethod
    def const(arr):
        return _wrap(arr)

    @staticmethod
    def sum(a, axis=None, keepdims=False):
        return a.sum(axis, keepdims)


def _ns():
    return _TensorNS if is_grad_enabled() else _NumpyNS


def xp_helper(name, arrays, tensors):
    """Give both namespaces the backward helper ``name``: ``arrays`` computes
    it on NumPy arrays (a compiled kernel, where speed needs one) and
    ``tensors`` is the same math over Tensors, recorded (create_graph).  A
    backward then calls ``xp.<name>`` once; ``tests/test_backward_paths.py``
    checks that the two agree for every op."""
    setattr(_NumpyNS, name, staticmethod(arrays))
    setattr(_TensorNS, name, staticmethod(tensors))


class _no_grad:
    def __enter__(self):
        self._prev = _engine._set_grad_mode(False)

    def __exit__(self, *exc):
        _engine._set_grad_mode(self._prev)


# --- helpers the op modules share ---------------------------------------------------

def _dims(dim, ndim):
    """Normalize ``dim`` (None, int, or tuple) to a sorted tuple of axes."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (list, tuple)):
        axes = tuple(sorted(set(_canon_dim(d, ndim) for d in dim)))
        if len(axes) != len(dim):
            raise RuntimeError(f"dim {list(dim)} appears multiple times in the list "
                               "of dims")
        return axes
    return (_canon_dim(dim, ndim),)


_KERNEL_FLOATS = (np.float32, np.float64)   # dtypes of the compiled row kernels


def _kept_shape(shape, axes):
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


_prod = math.prod


def _float_input(x, opname):
    """Integer inputs are promoted to the default float dtype (torch); bool too."""
    if x._arr.dtype.kind != "f":
        return x.to(get_default_dtype())
    return x


def _as_dtype(a, dtype):
    """The array ``a`` in ``dtype`` (itself when it has it already)."""
    return a if a.dtype == dtype else a.astype(dtype)


class SumToShape(Function):
    """out = x summed down to ``shape`` (undoing broadcasting); grad = expand."""

    _node_name = "SumToSizeBackward0"

    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = x._arr.shape
        return _wrap(_np_sum_to_shape(x._arr, tuple(shape)))

    @staticmethod
    def backward(ctx, g):
        xp = _ns()
        return xp.out(xp.broadcast_to(xp.val(g), ctx.in_shape)), None


def sum_to_shape(x, shape):
    shape = tuple(shape)
    if tuple(x._arr.shape) == shape:
        return x
    return SumToShape.apply(x, shape)


# --- views ------------------------------------------------------------------------

def _view_of(x, arr):
    """A Tensor over ``arr`` that shares x's storage and version counter
    (the compiled views' own helper)."""
    return _engine.view_result(x, arr, _register_view)


def _register_view(root, t):
    """Note the view ``t`` on its ``root`` (in-place updates of the root give
    its live views the new history): a list of weak references, dead ones
    dropped whenever the list reaches a power of two from 64 on.  (A WeakSet
    cost a microsecond a view, half of a small ``x.view(-1)``.)"""
    views = root.__dict__.get("_views")
    if views is None:
        root.__dict__["_views"] = [_weakref.ref(t)]
        return
    n = len(views)
    if n >= 64 and not n & (n - 1):
        views[:] = [r for r in views if r() is not None]
    views.append(_weakref.ref(t))


# --- torch's node names ----------------------------------------------------------
# Scripts print ``t.grad_fn``; one cygrad op can stand for several torch ops
# (a PermuteNode for transpose and t, Reshape for squeeze, sum / n for mean), so
# the op names the node after the torch op the user called.

_NAMED_NODES = {}


def apply_named(cls, node_name, *args):
    """``cls.apply(*args)`` with its node's class named ``node_name``."""
    node_cls = _NAMED_NODES.get((cls, node_name))
    if node_cls is None:
        node_cls = type(node_name, (cls._backward_cls,), {})
        _NAMED_NODES[cls, node_name] = node_cls
    return function_apply(cls, node_cls, args)


def named(t, node_name):
    """``t`` with its compiled ``grad_fn`` (if any) printing as ``node_name``."""
    fn = t._grad_fn
    if fn is not None:
        fn._torch_name = node_name
    return t


# --- float16 ------------------------------------------------------------------------
# torch on the CPU stores float16 and computes every op in float32, rounding
# the result back.  One rule, applied by the engine to the table's ops and to
# every Function not marked ``_half_native`` (views, copies and selections,
# which are exact in float16 and must stay views): float16 inputs are cast to
# float32 (recorded casts, so gradients come back float16), the op runs, and
# its float32 results are rounded to float16 (when no input was wider).

_F16, _F32 = np.dtype(np.float16), np.dtype(np.float32)


def half_cast(t, dtype):
    return t.to(dtype)


def half_function(cls, node_cls, args):
    wide = any(isinstance(a, Tensor) and a._arr.dtype.kind == "f"
               and a._arr.dtype.itemsize > 2 for a in args)
    up = tuple(a.to(_F32) if isinstance(a, Tensor) and a._arr.dtype == _F16 else a
               for a in args)
    out = function_apply(cls, node_cls, up)
    if wide:
        return out
    if isinstance(out, tuple):
        return tuple(_round_half(o) for o in out)
    return _round_half(out)


def _round_half(o):
    if isinstance(o, Tensor) and o._arr.dtype == _F32:
        return o.to(_F16)
    return o


# --- NumPy-style keyword aliases ------------------------------------------------------

_UNSET = object()


def np_aliases(fn):
    """``fn`` also taking NumPy's ``axis=`` for ``dim=`` and ``keepdims=`` for
    ``keepdim=``, as torch's reductions and shape ops do."""
    def wrapper(*args, axis=_UNSET, keepdims=_UNSET, **kwargs):
        if axis is _UNSET and keepdims is _UNSET:
            return fn(*args, **kwargs)
        for alias, name, value in (("axis", "dim", axis), ("keepdims", "keepdim",
                                                           keepdims)):
            if value is _UNSET:
                continue
            if name in kwargs:
                raise TypeError(f"{fn.__name__}() got both '{name}' and its alias "
                                f"'{alias}'")
            kwargs[name] = value
        return fn(*args, **kwargs)

    wrapper.__name__ = fn.__name__
    wrapper.__qualname__ = fn.__qualname__
    wrapper.__doc__ = fn.__doc__
    wrapper.__wrapped__ = fn
    return wrapper
