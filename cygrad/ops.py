"""Every differentiable op of cygrad: primitives (with backward), then composites.

Elementwise ops come from the kernel table in ``_kernels/elementwise.pyx.tp``
(forward, derivative and the differentiable form of the derivative, from one
row).  The other primitives are ``Function`` subclasses whose ``backward`` is
written once against a small array namespace ``xp``: NumPy arrays on the fast
path, cygrad Tensors (so the backward is itself recorded) under
``create_graph=True``.

The ``OPS`` registry lists every public op; ``Tensor`` methods and the
``cygrad.<name>`` functions are attached from it.
"""

import math

import numpy as np

from cygrad import dtypes as _dt
from cygrad._kernels import engine as _engine
from cygrad._kernels import reductions as _R
from cygrad._kernels import select as _select_k
from cygrad._kernels import optable as _optable
from cygrad._kernels.engine import TensorBase, _alias, _wrap, is_grad_enabled
from cygrad._kernels.reduce import sum_all as _sum_all
from cygrad._kernels.reduce import sum_to_shape as _np_sum_to_shape
from cygrad.autograd.function import Function
from cygrad._tensor import Tensor, _canon_dim

# --- the registry ------------------------------------------------------------------

class OpSpec:
    """One public op: its function, Tensor method names and NumPy reference."""

    def __init__(self, name, fn, methods, ref, primitive, domain, kind, aliases=(),
                 row=None):
        self.name = name
        self.aliases = aliases
        self.row = row      # the op-table row of an elementwise op
        self.fn = fn
        self.methods = methods
        self.ref = ref
        self.primitive = primitive
        self.domain = domain
        self.kind = kind

    def __repr__(self):
        return self.name


class _Registry(dict):
    def primitives(self):
        return [s for s in self.values() if s.primitive]

    def of_kind(self, kind):
        return [s for s in self.values() if s.kind == kind]


OPS = _Registry()


def op(name, methods=(), ref=None, primitive=False, domain=None, kind="other",
       aliases=(), row=None):
    """Register ``fn`` as the public op ``name`` (and as Tensor methods)."""
    def deco(fn):
        OPS[name] = OpSpec(name, fn, tuple(methods), ref, primitive, domain, kind,
                           tuple(aliases), row)
        for m in methods:
            setattr(Tensor, m, fn)
        return fn
    return deco


# --- array namespaces for backward formulas ---------------------------------------

class _NumpyNS:
    """Backward formulas over NumPy arrays (grad mode off: the fast path)."""

    @staticmethod
    def val(t):
        return t._arr if isinstance(t, TensorBase) else t

    @staticmethod
    def out(a):
        return _wrap(np.asarray(a)) if a is not None else None

    matmul = staticmethod(np.matmul)
    reshape = staticmethod(np.reshape)
    broadcast_to = staticmethod(np.broadcast_to)
    swapaxes = staticmethod(np.swapaxes)
    transpose = staticmethod(np.transpose)
    expand_dims = staticmethod(np.expand_dims)
    exp = staticmethod(np.exp)
    sum_to_shape = staticmethod(_np_sum_to_shape)

    @staticmethod
    def sum(a, axis=None, keepdims=False):
        return np.sum(a, axis=axis, keepdims=keepdims)


class _TensorNS:
    """The same formulas over Tensors (create_graph=True: recorded)."""

    @staticmethod
    def val(t):
        return t

    @staticmethod
    def out(a):
        return a

    @staticmethod
    def matmul(a, b):
        return matmul(a, b)

    @staticmethod
    def reshape(a, shape):
        return reshape(a, shape)

    @staticmethod
    def broadcast_to(a, shape):
        return expand(a, shape)

    @staticmethod
    def swapaxes(a, d0, d1):
        return transpose(a, d0, d1)

    @staticmethod
    def transpose(a, axes):
        return permute(a, axes)

    @staticmethod
    def expand_dims(a, axis):
        return unsqueeze(a, axis)

    @staticmethod
    def exp(a):
        return exp(a)

    @staticmethod
    def sum_to_shape(a, shape):
        return sum_to_shape(a, shape)

    @staticmethod
    def sum(a, axis=None, keepdims=False):
        return sum(a, axis, keepdims)


def _ns():
    return _TensorNS if is_grad_enabled() else _NumpyNS


# --- elementwise ops from the op table -----------------------------------------------

def _table_function(row):
    """The public function of an op-table row (compiled where it can be)."""
    if row.arity == 1:
        fn = _engine.unary_method(row.name)
    elif row.alpha:
        binary = _engine.binary

        def fn(input, other, *, alpha=1):
            if alpha != 1:
                other = other * alpha
            return binary(row.name, input, other)
        fn.__name__ = fn.__qualname__ = row.name
    else:
        fn = _engine.binary_method(row.name)
    fn.__doc__ = row.summary()
    return fn


for _row in _optable.UNARY + _optable.BINARY:
    globals()[_row.name] = op(_row.name, methods=_row.methods + _row.aliases,
                              ref=_row.ref, primitive=True, domain=_row.domain,
                              kind="unary" if _row.arity == 1 else "binary",
                              aliases=_row.aliases, row=_row)(_table_function(_row))
    for _other in _row.aliases:
        globals()[_other] = globals()[_row.name]


# The helpers the table's derivative expressions call, over Tensors.
def _sign(x):
    with _no_grad():
        return _wrap(np.sign(x._arr))


def _pow_grad_base(g, a, b, y):
    # y (the forward output) serves the float32 kernel's a**b / a; the
    # graph keeps b * a**(b - 1), differentiable in a and b.
    b_t = b if isinstance(b, TensorBase) else _wrap(np.asarray(b))
    return where(b_t == 0, 0.0, g * (b * pow(a, b - 1)))


def _pow_grad_exp(g, a, b, y):
    mask = (a == 0) & (b >= 0)
    return g * where(mask, 0.0, y * log(a))  # noqa: F821


class _no_grad:
    def __enter__(self):
        self._prev = _engine._set_grad_mode(False)

    def __exit__(self, *exc):
        _engine._set_grad_mode(self._prev)


def _graph_rules():
    """Each row's derivatives as functions over Tensors (create_graph)."""
    ns = {r.name: globals()[r.name] for r in _optable.UNARY + _optable.BINARY}
    ns.update(keep=lambda g, c: where(c, g, 0.0), fabs=ns["abs"], sign=_sign,
              pow_grad_base=_pow_grad_base, pow_grad_exp=_pow_grad_exp)
    missing = set(_optable.HELPERS) - set(ns) - {"pick"}
    if missing:
        raise ImportError(f"op table helpers without a Tensor form: {missing}")
    unary = {r.name: eval(f"lambda g, x, y: {r.graph[0]}", ns) for r in _optable.UNARY}
    binary = {r.name: tuple(eval(f"lambda g, a, b, y: {e}", ns) for e in r.graph)
              for r in _optable.BINARY}
    return unary, binary


# --- comparisons and logical ops (no gradient) -------------------------------------------

def compare(a, other, ufunc):
    """Elementwise comparison with broadcasting; a bool tensor, never a gradient."""
    x = a._arr
    if isinstance(other, TensorBase):
        y = other._arr
    elif isinstance(other, (int, float, bool, np.number)):
        y = other
    else:
        return NotImplemented
    try:
        res = ufunc(x, y)
    except ValueError:
        raise RuntimeError(
            f"The size of tensor a must match the size of tensor b: shapes "
            f"{list(x.shape)} and {list(np.shape(y))} do not broadcast") from None
    return _wrap(np.asarray(res))


for _name, _uf in (("lt", np.less), ("le", np.less_equal), ("gt", np.greater),
                   ("ge", np.greater_equal), ("eq", np.equal), ("ne", np.not_equal)):
    def _mk(uf, name):
        def fn(input, other):
            return compare(input, other, uf)
        fn.__name__ = name
        fn.__doc__ = f"Elementwise ``{name}`` comparison; a bool tensor."
        return fn
    globals()[_name] = op(_name, methods=(_name,), ref=_uf, kind="compare")(
        _mk(_uf, _name))


def _logical(ufunc, name):
    def fn(a, b):
        x = a._arr
        y = b._arr if isinstance(b, TensorBase) else b
        if x.dtype.kind == "f" or np.asarray(y).dtype.kind == "f":
            raise TypeError(f"{name} is only supported for integer and bool tensors")
        return _wrap(np.asarray(ufunc(x, y)))
    return fn


Tensor.__and__ = Tensor.__rand__ = _logical(np.bitwise_and, "&")
Tensor.__or__ = Tensor.__ror__ = _logical(np.bitwise_or, "|")
Tensor.__xor__ = Tensor.__rxor__ = _logical(np.bitwise_xor, "^")


def _invert(a):
    if a._arr.dtype.kind == "f":
        raise TypeError("~ (bitwise not) is only supported for integer and bool tensors")
    return _wrap(np.invert(a._arr))


Tensor.__invert__ = _invert


def logical_not(a):
    return _wrap(np.logical_not(a._arr))


Tensor.logical_not = logical_not


# --- dtype cast, clone, copy ---------------------------------------------------------------

class Cast(Function):
    """out = x as another dtype; grad = g cast back to x's dtype."""

    _node_name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx, x, dtype):
        ctx.src = x._arr.dtype
        return _wrap(x._arr.astype(dtype))

    @staticmethod
    def backward(ctx, g):
        if ctx.src.kind != "f":
            return None, None
        return g.to(ctx.src), None


def cast(x, dtype):
    return Cast.apply(x, _dt.to_numpy(dtype))


class Clone(Function):
    """out = copy of x; grad = g."""

    _node_name = "CloneBackward0"

    @staticmethod
    def forward(ctx, x):
        return _wrap(np.array(x._arr, order="C", copy=True))

    @staticmethod
    def backward(ctx, g):
        return g


@op("clone", methods=("clone",), ref=np.copy, primitive=True, kind="shape")
def clone(input, memory_format=None):
    """A copy with its own storage; the gradient flows through unchanged."""
    return Clone.apply(input)


@op("contiguous", methods=("contiguous",), kind="shape")
def contiguous(input, memory_format=None):
    """``input`` itself when C-contiguous, else a contiguous copy (grad = g)."""
    if input._arr.flags.c_contiguous:
        return input
    return Clone.apply(input)


class CopyInto(Function):
    """self <- broadcast(src): grad_self = 0, grad_src = sum_to(g, src.shape)."""

    _node_name = "CopyBackwards"

    @staticmethod
    def forward(ctx, dst, src):
        ctx.src_shape = src._arr.shape
        ctx.src_dtype = src._arr.dtype
        np.copyto(dst._arr, src._arr, casting="unsafe")
        _engine._mark_inplace(dst, "copy_")
        ctx.mark_dirty(dst)
        return dst

    @staticmethod
    def backward(ctx, g):
        xp = _ns()
        gs = xp.sum_to_shape(xp.val(g), ctx.src_shape)
        zero = xp.val(g) * 0
        return xp.out(zero), xp.out(gs).to(ctx.src_dtype) if ctx.src_dtype.kind == "f" \
            else None


def copy_(dst, src):
    """Copy ``src`` into ``dst`` in place (broadcasting, casting)."""
    if not isinstance(src, TensorBase):
        from cygrad.creation import tensor as _tensor
        src = _tensor(src, dtype=dst._arr.dtype)
    try:
        np.broadcast_shapes(src._arr.shape, dst._arr.shape)
        if np.broadcast_shapes(src._arr.shape, dst._arr.shape) != dst._arr.shape:
            raise ValueError
    except ValueError:
        raise RuntimeError(
            f"The size of tensor a ({list(dst._arr.shape)}) must match the size of "
            f"tensor b ({list(src._arr.shape)}): copy_ cannot broadcast the source "
            "to the destination") from None
    dst._writable_check("copy_")
    _engine._check_inplace(dst, "copy_")
    root = _root(dst)
    if is_grad_enabled() and (dst._requires_grad or src._requires_grad
                              or root._requires_grad):
        if root is not dst:
            return _write(dst, (Ellipsis,), True, src, "copy_")
        CopyInto.apply(dst, src)
        _regenerate_views(dst)
        return dst
    np.copyto(dst._arr, src._arr, casting="unsafe")
    _engine._mark_inplace(dst, "copy_")
    return dst


def full_like_const(t, value):
    return _wrap(np.full(t._arr.shape, value, t._arr.dtype))


# --- reductions ---------------------------------------------------------------------------

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


class Sum(Function):
    """out = sum of x over ``axes``; grad = g broadcast back to x's shape."""

    _node_name = "SumBackward0"

    @staticmethod
    def forward(ctx, x, axes, keepdim):
        arr = x._arr
        ctx.in_shape = arr.shape
        ctx.kept = _kept_shape(arr.shape, axes)
        if len(axes) == arr.ndim and not keepdim and arr.dtype.kind == "f":
            return _wrap(_sum_all(arr))
        if arr.dtype.kind != "f":
            arr = arr.astype(np.int64)
        elif (arr.dtype.type in _KERNEL_FLOATS and arr.flags.c_contiguous and axes
                and axes == tuple(range(arr.ndim - len(axes), arr.ndim))):
            # Trailing axes of a contiguous array: compiled row sums.
            x2 = arr.reshape(-1, _prod(arr.shape[d] for d in axes))
            out = np.empty(x2.shape[0], arr.dtype)
            _R.sum_fwd(x2, out)
            return _wrap(out.reshape(ctx.kept if keepdim else arr.shape[:-len(axes)]))
        return _wrap(np.asarray(np.sum(arr, axis=axes, keepdims=keepdim)))

    @staticmethod
    def backward(ctx, g):
        xp = _ns()
        gv = xp.reshape(xp.val(g), ctx.kept)
        return xp.out(xp.broadcast_to(gv, ctx.in_shape)), None, None


@op("sum", methods=("sum",), ref=np.sum, primitive=True, kind="reduce")
def sum(input, dim=None, keepdim=False, dtype=None):  # noqa: A001 - torch's name
    """Sum over ``dim`` (int, tuple, or all); grad broadcasts g back."""
    if dtype is not None:
        input = input.to(dtype)
    if dim is None and not keepdim and input._arr.dtype.kind == "f":
        return _engine.sum_all(input)
    return Sum.apply(input, _dims(dim, input._arr.ndim), bool(keepdim))


@op("mean", methods=("mean",), ref=np.mean, kind="reduce")
def mean(input, dim=None, keepdim=False, dtype=None):
    """Mean over ``dim``: sum / count (composite)."""
    if dtype is not None:
        input = input.to(dtype)
    if input._arr.dtype.kind != "f":
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a "
            f"floating point or complex dtype. Got: {_dt.name(input._arr.dtype)}")
    if dim is None and not keepdim:          # a loss: the compiled full sum
        n = input._arr.size
        return _engine.sum_all(input) / (n if n else float("nan"))
    axes = _dims(dim, input._arr.ndim)
    n = 1
    for a in axes:
        n *= input._arr.shape[a]
    return Sum.apply(input, axes, bool(keepdim)) / (n if n else float("nan"))


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


# --- matmul ---------------------------------------------------------------------------------

class Matmul(Function):
    """out = a @ b (BLAS); grad_a = g @ b^T, grad_b = a^T @ g (batch dims summed)."""

    _node_name = "MmBackward0"

    @staticmethod
    def forward(ctx, a, b):
        x, y = a._arr, b._arr
        if x.ndim == 0 or y.ndim == 0:
            raise RuntimeError(
                "both arguments to matmul need to be at least 1D, but they are "
                f"{x.ndim}D and {y.ndim}D")
        k_a = x.shape[-1]
        k_b = y.shape[-2] if y.ndim > 1 else y.shape[0]
        if k_a != k_b:
            sa = "x".join(map(str, x.shape))
            sb = "x".join(map(str, y.shape))
            raise RuntimeError(
                f"mat1 and mat2 shapes cannot be multiplied ({sa} and {sb}): the "
                f"inner sizes {k_a} and {k_b} differ")
        try:
            out = np.matmul(x, y)
        except ValueError as e:
            raise RuntimeError(f"matmul: batch dimensions do not broadcast: shapes "
                               f"{list(x.shape)} and {list(y.shape)} ({e})") from None
        # Save only what backward reads (as torch): a for grad_b, b for grad_a;
        # else an in-place change of an input that needs no gradient raised
        # the version error where torch does not.
        needs = ctx.needs_input_grad
        ctx.save_for_backward(a if needs[1] else None, b if needs[0] else None)
        ctx.shapes = (x.shape, y.shape)
        return _wrap(np.asarray(out))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        xp = _ns()
        sx, sy = ctx.shapes
        # Treat vectors as matrices: a (k,) is (1, k); b (k,) is (k, 1).
        sx2 = (1,) + sx if len(sx) == 1 else sx
        sy2 = sy + (1,) if len(sy) == 1 else sy
        out_shape = np.broadcast_shapes(sx2[:-2], sy2[:-2]) + (sx2[-2], sy2[-1])
        g2 = xp.reshape(xp.val(g), out_shape)
        ga = gb = None
        if ctx.needs_input_grad[0]:
            y2 = xp.reshape(xp.val(b), sy2)
            ga = xp.matmul(g2, xp.swapaxes(y2, -1, -2))
            ga = xp.reshape(xp.sum_to_shape(ga, sx2), sx)
        if ctx.needs_input_grad[1]:
            x2 = xp.reshape(xp.val(a), sx2)
            gb = xp.matmul(xp.swapaxes(x2, -1, -2), g2)
            gb = xp.reshape(xp.sum_to_shape(gb, sy2), sy)
        return xp.out(ga), xp.out(gb)


@op("matmul", methods=("matmul",), ref=np.matmul, primitive=True, kind="matmul")
def matmul(input, other):
    """Matrix product with torch's 1-D and batched-broadcast rules (BLAS)."""
    if not isinstance(other, TensorBase) or not isinstance(input, TensorBase):
        raise TypeError("matmul(): arguments must be Tensors, got "
                        f"{type(input).__name__} and {type(other).__name__}")
    res = _engine.matmul_2d(input, other)       # 2-D floats: compiled
    if res is not None:
        return res
    if input._arr.dtype != other._arr.dtype:
        if input._arr.dtype.kind == "f" and other._arr.dtype.kind == "f":
            raise RuntimeError(
                f"expected m1 and m2 to have the same dtype, but got: "
                f"{_dt.name(input._arr.dtype)} != {_dt.name(other._arr.dtype)}")
    return Matmul.apply(input, other)


def _matmul_graph_backward(g, a, b, need_a, need_b):
    """MatmulNode's rule over Tensors, recorded (create_graph=True)."""
    return (matmul(g, b.t()) if need_a else None,
            matmul(a.t(), g) if need_b else None)


_engine._set_graph_matmul(_matmul_graph_backward)


mm = matmul
Tensor.mm = matmul
Tensor.dot = matmul
Tensor.__matmul__ = matmul
Tensor.__rmatmul__ = lambda self, other: matmul(other, self)


# --- shape ops ------------------------------------------------------------------------------

def _view_of(x, arr):
    """A Tensor over ``arr`` that shares x's storage and version counter."""
    t = _alias(x, arr)
    root = x if x._base is None else x._base
    t._base = root
    _register_view(root, t)
    return t


def _infer_shape(shape, n):
    shape = list(shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise RuntimeError(f"invalid shape dimension {s}")
            known *= s
    if neg:
        if known == 0 or n % known:
            raise RuntimeError(f"shape '{shape}' is invalid for input of size {n}")
        shape[neg[0]] = n // known
    elif known != n:
        raise RuntimeError(f"shape '{shape}' is invalid for input of size {n}")
    return tuple(shape)


def _shape_args(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return tuple(int(s) for s in shape)


class Reshape(Function):
    """out = x with a new shape (a view when possible); grad = g reshaped back."""

    _node_name = "ViewBackward0"

    @staticmethod
    def forward(ctx, x, shape, strict_view):
        arr = x._arr
        ctx.in_shape = arr.shape
        if strict_view:
            try:
                v = arr.view()
                v.shape = shape
            except AttributeError:
                raise RuntimeError(
                    f"view size is not compatible with input tensor's size and "
                    f"stride (shape {list(arr.shape)} to {list(shape)}): at least "
                    "one dimension spans across two contiguous subspaces. Use "
                    ".reshape(...) instead.") from None
            return _view_of(x, v)
        v = arr.reshape(shape)
        if np.shares_memory(v, arr) if v.size else False:
            return _view_of(x, v)
        return _wrap(v)

    @staticmethod
    def backward(ctx, g):
        xp = _ns()
        return xp.out(xp.reshape(xp.val(g), ctx.in_shape)), None, None


@op("reshape", methods=("reshape",), ref=np.reshape, primitive=True, kind="shape")
def reshape(input, *shape):
    """out = x with shape ``shape`` (-1 inferred); a view when the layout allows."""
    shape = _infer_shape(_shape_args(shape), input._arr.size)
    if shape == input._arr.shape:
        return Reshape.apply(input, shape, False)
    return Reshape.apply(input, shape, False)


@op("view", methods=("view",), kind="shape")
def view(input, *shape):
    """Like reshape but always a view; error if the layout does not allow one."""
    if len(shape) == 1 and not isinstance(shape[0], (tuple, list, int)):
        return input.to(shape[0])
    shape = _infer_shape(_shape_args(shape), input._arr.size)
    return Reshape.apply(input, shape, True)


class Permute(Function):
    """out = x with axes permuted (a view); grad = g with the inverse permutation."""

    _node_name = "PermuteBackward0"

    @staticmethod
    def forward(ctx, x, axes):
        ctx.inv = tuple(np.argsort(axes))
        return _view_of(x, np.transpose(x._arr, axes))

    @staticmethod
    def backward(ctx, g):
        xp = _ns()
        return xp.out(xp.transpose(xp.val(g), ctx.inv)), None


@op("permute", methods=("permute",), ref=np.transpose, primitive=True, kind="shape")
def permute(input, *dims):
    """Reorder the axes (a view); grad = g with the inverse permutation."""
    dims = _shape_args(dims)
    nd = input._arr.ndim
    if len(dims) != nd:
        raise RuntimeError(
            f"permute(sparse_coo): number of dimensions in the tensor input does not "
            f"match the length of the desired ordering of dimensions i.e. input.dim() "
            f"= {nd} is not equal to len(dims) = {len(dims)}")
    axes = tuple(_canon_dim(d, nd) for d in dims)
    if len(set(axes)) != nd:
        raise RuntimeError(f"permute(): duplicate dims are not allowed: {list(dims)}")
    return Permute.apply(input, axes)


@op("transpose", methods=("transpose", "swapaxes"), kind="shape")
def transpose(input, dim0, dim1):
    """Swap two axes (a view)."""
    nd = input._arr.ndim
    if nd == 0:
        return input
    d0, d1 = _canon_dim(dim0, nd), _canon_dim(dim1, nd)
    axes = list(range(nd))
    axes[d0], axes[d1] = axes[d1], axes[d0]
    return Permute.apply(input, tuple(axes))


def _t(input):
    nd = input._arr.ndim
    if nd > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{nd}D")
    return transpose(input, 0, 1) if nd == 2 else input


Tensor.t = _t
t = _t


def _T(self):
    nd = self._arr.ndim
    if nd < 2:
        return self
    return Permute.apply(self, tuple(reversed(range(nd))))


Tensor.T = property(_T)
Tensor.mT = property(lambda self: transpose(self, -2, -1))


class Expand(Function):
    """out = x broadcast to ``shape`` (a view); grad = g summed back to x's shape."""

    _node_name = "ExpandBackward0"

    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = x._arr.shape
        return _view_of(x, np.broadcast_to(x._arr, shape))

    @staticmethod
    def backward(ctx, g):
        xp = _ns()
        return xp.out(xp.sum_to_shape(xp.val(g), ctx.in_shape)), None


@op("expand", methods=("expand",), ref=np.broadcast_to, primitive=True, kind="shape")
def expand(input, *sizes):
    """Broadcast size-1 axes to ``sizes`` (-1 keeps a size; a view); grad = g
    summed back to the input's shape."""
    sizes = _shape_args(sizes)
    shape = input._arr.shape
    if len(sizes) < len(shape):
        raise RuntimeError(
            f"expand: the number of sizes provided ({len(sizes)}) must be greater or "
            f"equal to the number of dimensions in the tensor ({len(shape)})")
    lead = len(sizes) - len(shape)
    out = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise RuntimeError(f"expand: -1 is not allowed in a leading, "
                                   f"non-existing dimension {i}")
            out.append(s)
            continue
        cur = shape[i - lead]
        if s == -1:
            s = cur
        if cur != s and cur != 1:
            raise RuntimeError(
                f"The expanded size of the tensor ({s}) must match the existing size "
                f"({cur}) at non-singleton dimension {i}.  Target sizes: "
                f"{list(sizes)}.  Tensor sizes: {list(shape)}")
        out.append(s)
    out = tuple(out)
    if out == shape:
        return input if not input._requires_grad else Expand.apply(input, out)
    return Expand.apply(input, out)


def expand_as(input, other):
    return expand(input, other._arr.shape)


Tensor.expand_as = expand_as


@op("squeeze", methods=("squeeze",), kind="shape")
def squeeze(input, dim=None):
    """Drop size-1 axes (all, or those in ``dim``); a view; grad = g reshaped."""
    shape = input._arr.shape
    if dim is None:
        new = tuple(s for s in shape if s != 1)
    else:
        axes = _dims(dim, input._arr.ndim) if input._arr.ndim else ()
        new = tuple(s for i, s in enumerate(shape) if not (i in axes and s == 1))
    return Reshape.apply(input, new, False)


@op("unsqueeze", methods=("unsqueeze",), kind="shape")
def unsqueeze(input, dim):
    """Insert a size-1 axis at ``dim`` (a view); grad = g reshaped."""
    nd = input._arr.ndim + 1
    if not -nd <= dim < nd:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], "
            f"but got {dim}) for unsqueeze of a tensor with {nd - 1} dimensions")
    d = dim % nd
    shape = list(input._arr.shape)
    shape.insert(d, 1)
    return Reshape.apply(input, tuple(shape), False)


@op("flatten", methods=("flatten",), kind="shape")
def flatten(input, start_dim=0, end_dim=-1):
    """Merge axes ``start_dim..end_dim`` into one (a view when the layout
    allows); grad = g reshaped back."""
    shape = input._arr.shape
    if not shape:
        return Reshape.apply(input, (1,), False)
    s = _canon_dim(start_dim, len(shape))
    e = _canon_dim(end_dim, len(shape))
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after "
                           "end_dim")
    n = 1
    for d in shape[s:e + 1]:
        n *= d
    return Reshape.apply(input, shape[:s] + (n,) + shape[e + 1:], False)


# --- selection ---------------------------------------------------------------------------

class Where(Function):
    """out = x where cond else y; grad_x = g * cond, grad_y = g * ~cond.

    The gradients are exact zeros on the unselected side, even where g is
    inf or NaN (torch's where(cond, grad, 0)).  Float inputs of the output's
    shape, or of one element, go through the compiled branch-free select
    (``_kernels/select.pyx``); other broadcasting and other dtypes use
    np.where.
    """

    _node_name = "WhereBackward0"

    @staticmethod
    def forward(ctx, cond, x, y):
        c, a, b = cond._arr, x._arr, y._arr
        ctx.cond = c
        ctx.flat = None
        if _where_fits(c, a, b):
            ctx.flat = c.reshape(-1).view(np.uint8)
            out = np.empty(c.shape, a.dtype)
            _select_k.where_fwd(ctx.flat, a.reshape(-1), b.reshape(-1),
                                out.reshape(-1))
            return _wrap(out)
        try:
            return _wrap(np.asarray(np.where(c, a, b)))
        except ValueError:
            raise RuntimeError(
                f"where: the shapes of condition {list(cond._arr.shape)}, input "
                f"{list(x._arr.shape)} and other {list(y._arr.shape)} do not "
                "broadcast") from None

    @staticmethod
    def backward(ctx, g):
        xp = _ns()
        need_x, need_y = ctx.needs_input_grad[1], ctx.needs_input_grad[2]
        if xp is _NumpyNS and ctx.flat is not None:
            garr = g._arr
            if garr.shape == ctx.cond.shape and garr.flags.c_contiguous and \
                    garr.dtype.type in _SELECT_DTYPES:
                gx = np.empty(garr.shape, garr.dtype) if need_x else None
                gy = np.empty(garr.shape, garr.dtype) if need_y else None
                _select_k.where_bwd(ctx.flat, garr.reshape(-1),
                                    None if gx is None else gx.reshape(-1),
                                    None if gy is None else gy.reshape(-1))
                return None, _NumpyNS.out(gx), _NumpyNS.out(gy)
        c = ctx.cond if xp is _NumpyNS else _wrap(ctx.cond)
        gv = xp.val(g)
        # torch's where(cond, grad, 0): an exact zero, even where grad is
        # inf or NaN; on arrays a scalar (no 4M-element zero array to fill).
        zero = gv.dtype.type(0) if xp is _NumpyNS else gv * 0
        gx = xp.out(_select(xp, c, gv, zero)) if need_x else None
        gy = xp.out(_select(xp, c, zero, gv)) if need_y else None
        return None, gx, gy


_SELECT_DTYPES = (np.float32, np.float64)   # the kernels' real_t


def _where_fits(c, a, b):
    """Whether the compiled select takes where(c, a, b): a C-contiguous bool
    mask of the output's shape, float a and b of one dtype, each C-contiguous
    with the mask's shape or a single element that does not add dimensions."""
    if c.dtype != np.bool_ or not c.flags.c_contiguous or a.dtype != b.dtype or \
            a.dtype.type not in _SELECT_DTYPES:
        return False
    shape, nd = c.shape, c.ndim
    return all((v.shape == shape and v.flags.c_contiguous) or
               (v.size == 1 and v.ndim <= nd) for v in (a, b))


def _select(xp, c, a, b):
    if xp is _NumpyNS:
        return np.where(c, a, b)
    return where(c, a, b)


@op("where", ref=np.where, primitive=True, kind="select")
def where(condition, input, other):
    """Pick ``input`` where ``condition`` holds, else ``other`` (broadcasting)."""
    from cygrad.creation import tensor as _tensor
    if not isinstance(condition, TensorBase):
        condition = _tensor(condition)
    if condition._arr.dtype != np.bool_:
        condition = _wrap(condition._arr.astype(bool))
    tensors = [t for t in (input, other) if isinstance(t, TensorBase)]
    if tensors:
        fl = [t._arr.dtype for t in tensors]
        dt = np.result_type(*fl)
        if any(not isinstance(v, TensorBase) and isinstance(v, float)
               for v in (input, other)) and dt.kind != "f":
            dt = np.dtype(np.float32)
    else:
        dt = np.dtype(np.float32)
    x = input if isinstance(input, TensorBase) else _wrap(np.asarray(input, dt))
    y = other if isinstance(other, TensorBase) else _wrap(np.asarray(other, dt))
    if x._arr.dtype != dt:
        x = x.to(dt)
    if y._arr.dtype != dt:
        y = y.to(dt)
    return Where.apply(condition, x, y)


# --- clamp and integer-aware unary ops ------------------------------------------------------

def _int_clip(input, min, max):
    """clamp of an integer tensor by integer bounds: exact, no gradient."""
    lo = min._arr if isinstance(min, TensorBase) else min
    hi = max._arr if isinstance(max, TensorBase) else max
    out = input._arr
    if lo is not None:
        out = np.maximum(out, lo)
    if hi is not None:
        out = np.minimum(out, hi)
    return _wrap(np.asarray(out, dtype=np.result_type(out)))


def _is_int_bound(b):
    if b is None:
        return True
    if isinstance(b, TensorBase):
        return b._arr.dtype.kind in "iub"
    return isinstance(b, (int, np.integer)) and not isinstance(b, bool) or \
        isinstance(b, bool)


@op("clamp", methods=("clamp", "clip"), ref=np.clip, kind="unary")
def clamp(input, min=None, max=None):
    """out = min(max(x, min), max); grad = g where min <= x <= max, else 0.

    Either bound may be None (not both), a number or a broadcastable tensor.
    At a bound the gradient passes (torch's rule); with min > max every
    element is ``max`` and no gradient reaches x.
    """
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not "
                           "be None")
    if input._arr.dtype.kind != "f" and _is_int_bound(min) and _is_int_bound(max):
        return _int_clip(input, min, max)
    if input._arr.dtype.kind == "f" and _plain_bound(min) and _plain_bound(max):
        lo = -math.inf if min is None else float(min)
        hi = math.inf if max is None else float(max)
        return Clamp.apply(input, lo, hi)
    out = input
    if min is not None:
        out = _engine.binary("clamp_min", out, min)
    if max is not None:
        out = _engine.binary("clamp_max", out, max)
    return out


clip = clamp


def _plain_bound(b):
    return b is None or (isinstance(b, (int, float, np.integer, np.floating))
                         and not math.isnan(b))


class Clamp(Function):
    """out = min(max(x, lo), hi) for number bounds, one fused compiled pass;
    grad = g where lo <= x <= hi, else 0 (torch's boundary rule)."""

    _node_name = "ClampBackward1"

    @staticmethod
    def forward(ctx, x, lo, hi):
        arr = x._arr
        ctx.lo, ctx.hi = lo, hi
        src = np.ascontiguousarray(arr)
        out = np.empty(arr.shape, arr.dtype)
        _select_k.clamp_fwd(src.reshape(-1), lo, hi, out.reshape(-1))
        ctx.save_for_backward(x)
        return _wrap(out)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        if not is_grad_enabled():
            arr = np.ascontiguousarray(x._arr)
            garr = np.ascontiguousarray(_grad_array(g, arr.dtype))
            out = np.empty(arr.shape, arr.dtype)
            _select_k.clamp_bwd(arr.reshape(-1), garr.reshape(-1), ctx.lo, ctx.hi,
                                out.reshape(-1))
            return _wrap(out), None, None
        mask = (x >= ctx.lo) & (x <= ctx.hi)
        return where(mask, g, 0.0), None, None




# --- row reductions: softmax, log_softmax, logsumexp, var, max/min -------------------------

_prod = math.prod


def _to_rows(arr, axes):
    """``arr`` with ``axes`` moved last, as a C-contiguous (rows, n) array.

    Returns the 2-D array and the permutation used (None when no move was
    needed, in which case the result is a reshape of ``arr``, copied only if
    ``arr`` is not contiguous).
    """
    nd = arr.ndim
    rest = [d for d in range(nd) if d not in axes]
    perm = rest + list(axes)
    n = _prod(arr.shape[d] for d in axes)
    rows = _prod(arr.shape[d] for d in rest)
    if perm == list(range(nd)):
        return np.ascontiguousarray(arr).reshape(rows, n), None
    return np.ascontiguousarray(arr.transpose(perm)).reshape(rows, n), perm


def _rows_out(x2, perm, shape):
    """An output for a kernel on ``x2``: (2-D view to fill, array to return).

    Without a permutation the returned array owns its data (the engine can
    then keep it as ``.grad`` without a copy)."""
    if perm is None:
        full = np.empty(shape, x2.dtype)
        return full.reshape(x2.shape), full
    out = np.empty_like(x2)
    return out, None


def _from_rows(a2, perm, shape, full=None):
    """Inverse of ``_to_rows`` for a full-size (rows, n) result."""
    if full is not None:
        return full
    if perm is None:
        return a2.reshape(shape)
    moved = a2.reshape(tuple(shape[d] for d in perm))
    return np.ascontiguousarray(moved.transpose(np.argsort(perm)))


def _float_input(x, opname):
    """Integer inputs are promoted to the default float dtype (torch); bool too."""
    if x._arr.dtype.kind != "f":
        from cygrad.creation import get_default_dtype
        return x.to(get_default_dtype())
    return x


def _grad_array(g, dtype):
    a = g._arr
    return a if a.dtype == dtype else a.astype(dtype)


class Softmax(Function):
    """y = softmax(x) along ``dim``: exp(x - max) / sum; grad = y * (g - sum(g*y)).

    With ``take_log``: y = (x - max) - log(sum(exp(x - max))); grad =
    g - exp(y) * sum(g).  One compiled pass each way (max-subtracted, stable).
    """

    _node_name = "SoftmaxBackward0"

    @staticmethod
    def forward(ctx, x, dim, take_log):
        arr = x._arr
        ctx.dim = dim
        ctx.take_log = take_log
        if arr.ndim == 0:
            y = np.zeros((), arr.dtype) if take_log else np.ones((), arr.dtype)
        else:
            x2, perm = _to_rows(arr, (dim,))
            y2, full = _rows_out(x2, perm, arr.shape)
            # The kernel finds each row's max itself, keeping the row in cache.
            _R.softmax_fwd(x2, y2, take_log)
            y = _from_rows(y2, perm, arr.shape, full)
        out = _wrap(y)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        dim = ctx.dim
        if not is_grad_enabled():
            yarr = y._arr
            if yarr.ndim == 0:
                return _wrap(np.zeros((), yarr.dtype)), None, None
            y2, perm = _to_rows(yarr, (dim,))
            g2, _ = _to_rows(_grad_array(g, yarr.dtype), (dim,))
            out, full = _rows_out(y2, perm, yarr.shape)
            _R.softmax_bwd(y2, g2, out, ctx.take_log)
            return _wrap(_from_rows(out, perm, yarr.shape, full)), None, None
        d = dim if y._arr.ndim else None
        if ctx.take_log:
            return g - exp(y) * sum(g, d, True), None, None  # noqa: F821
        return y * (g - sum(g * y, d, True)), None, None


class LogSoftmax(Softmax):
    """Softmax with ``take_log`` (its own node name, as torch)."""

    _node_name = "LogSoftmaxBackward0"


def _softmax_dim(input, dim, name):
    if dim is None:
        raise TypeError(f"{name}() missing required argument 'dim'")
    return _canon_dim(dim, input._arr.ndim)


@op("softmax", methods=("softmax",), ref=lambda x, dim: _ref_softmax(x, dim),
    primitive=True, kind="softmax")
def softmax(input, dim=None, dtype=None):
    """softmax along ``dim`` (stable); grad = y * (g - sum(g * y, dim))."""
    if dtype is not None:
        input = input.to(dtype)
    d = _softmax_dim(input, dim, "softmax")
    return Softmax.apply(_float_input(input, "softmax"), d, False)


@op("log_softmax", methods=("log_softmax",),
    ref=lambda x, dim: np.log(_ref_softmax(x, dim)), primitive=True, kind="softmax")
def log_softmax(input, dim=None, dtype=None):
    """log(softmax) along ``dim`` (stable); grad = g - exp(y) * sum(g, dim)."""
    if dtype is not None:
        input = input.to(dtype)
    d = _softmax_dim(input, dim, "log_softmax")
    return LogSoftmax.apply(_float_input(input, "log_softmax"), d, True)


def _ref_softmax(x, dim):
    e = np.exp(x - np.max(x, axis=dim, keepdims=True))
    return e / np.sum(e, axis=dim, keepdims=True)


def _ref_logsumexp(x, dim=None, keepdim=False):
    m = np.max(x, axis=dim, keepdims=True)
    out = np.log(np.sum(np.exp(x - m), axis=dim, keepdims=True)) + m
    return out if keepdim else np.squeeze(out, axis=dim)


class LogSumExp(Function):
    """out = log(sum(exp(x))) over ``axes`` (max-subtracted);
    grad = g * exp(x - out) (= g * softmax(x))."""

    _node_name = "LogsumexpBackward0"

    @staticmethod
    def forward(ctx, x, axes, keepdim):
        arr = x._arr
        ctx.axes = axes
        ctx.kept = _kept_shape(arr.shape, axes)
        x2, _ = _to_rows(arr, axes)
        lse = np.empty(x2.shape[0], arr.dtype)
        _R.logsumexp_fwd(x2, lse)
        out = _wrap(lse.reshape(ctx.kept if keepdim else tuple(
            s for i, s in enumerate(arr.shape) if i not in axes)))
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        if not is_grad_enabled():
            arr = x._arr
            x2, perm = _to_rows(arr, ctx.axes)
            res, full = _rows_out(x2, perm, arr.shape)
            _R.logsumexp_bwd(x2, out._arr.reshape(-1),
                             np.ascontiguousarray(_grad_array(g, arr.dtype)).reshape(-1),
                             res)
            return _wrap(_from_rows(res, perm, arr.shape, full)), None, None
        gk = reshape(g, ctx.kept)
        return gk * exp(x - reshape(out, ctx.kept)), None, None  # noqa: F821


@op("logsumexp", methods=("logsumexp",), ref=_ref_logsumexp, primitive=True,
    kind="reduce")
def logsumexp(input, dim=None, keepdim=False):
    """log(sum(exp(x), dim)), stable; grad = g * softmax(x) over ``dim``."""
    input = _float_input(input, "logsumexp")
    return LogSumExp.apply(input, _dims(dim, input._arr.ndim), bool(keepdim))


class Var(Function):
    """out = sum((x - mean)^2) / (n - correction) over ``axes``;
    grad = g * 2 * (x - mean) / (n - correction).  Two passes, double sums."""

    _node_name = "VarBackward0"

    @staticmethod
    def forward(ctx, x, axes, correction, keepdim):
        arr = x._arr
        ctx.axes = axes
        ctx.kept = _kept_shape(arr.shape, axes)
        n = _prod(arr.shape[a] for a in axes)
        ctx.n = n
        ctx.correction = correction
        x2, _ = _to_rows(arr, axes)
        out = np.empty(x2.shape[0], arr.dtype)
        mean = np.empty(x2.shape[0], arr.dtype)
        _R.var_fwd(x2, float(correction), out, mean)
        ctx.mean = mean
        ctx.save_for_backward(x)
        shape = ctx.kept if keepdim else tuple(
            s for i, s in enumerate(arr.shape) if i not in axes)
        return _wrap(out.reshape(shape))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        denom = ctx.n - ctx.correction
        scale = 2.0 / denom if denom > 0 else float("nan")
        if not is_grad_enabled():
            arr = x._arr
            x2, perm = _to_rows(arr, ctx.axes)
            res, full = _rows_out(x2, perm, arr.shape)
            _R.var_bwd(x2, ctx.mean,
                       np.ascontiguousarray(_grad_array(g, arr.dtype)).reshape(-1),
                       scale, res)
            return _wrap(_from_rows(res, perm, arr.shape, full)), None, None, None
        axes = ctx.axes
        centered = x - mean(x, axes, True)
        return reshape(g, ctx.kept) * centered * scale, None, None, None


@op("var", methods=("var",), ref=lambda x, dim=None, keepdim=False, correction=1:
    np.var(x, axis=dim, ddof=correction, keepdims=keepdim), primitive=True,
    kind="reduce")
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Variance over ``dim`` with torch's ``correction`` (default 1, Bessel) or
    ``unbiased``; grad = g * 2 * (x - mean) / (n - correction)."""
    if isinstance(dim, bool):
        unbiased, dim = dim, None
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    elif unbiased is not None:
        raise RuntimeError("var(): cannot pass both 'unbiased' and 'correction'")
    if input._arr.dtype.kind != "f":
        raise RuntimeError(
            "std and var only support floating point and complex dtypes, got "
            f"{_dt.name(input._arr.dtype)}")
    return Var.apply(input, _dims(dim, input._arr.ndim), correction, bool(keepdim))


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """sqrt(var) (composite)."""
    return sqrt(var(input, dim, unbiased, keepdim, correction=correction))  # noqa: F821


Tensor.std = std


class _TakeAlong(Function):
    """out = x gathered at ``idx`` along ``dim`` (idx has x's rank);
    grad = scatter of g into zeros at idx (the pair is each other's backward)."""

    _node_name = "GatherBackward0"

    @staticmethod
    def forward(ctx, x, idx, dim):
        ctx.idx, ctx.dim, ctx.shape = idx, dim, x._arr.shape
        return _wrap(np.take_along_axis(x._arr, idx, axis=dim))

    @staticmethod
    def backward(ctx, g):
        return _PutAlong.apply(g, ctx.idx, ctx.dim, ctx.shape), None, None


class _PutAlong(Function):
    """out = zeros(shape) with g placed at ``idx`` along ``dim``; grad = gather."""

    _node_name = "ScatterBackward0"

    @staticmethod
    def forward(ctx, g, idx, dim, shape):
        ctx.idx, ctx.dim = idx, dim
        out = np.zeros(shape, g._arr.dtype)
        np.put_along_axis(out, idx, g._arr, axis=dim)
        return _wrap(out)

    @staticmethod
    def backward(ctx, gg):
        return _TakeAlong.apply(gg, ctx.idx, ctx.dim), None, None, None


class _ExtremeDim(Function):
    """(values, indices) = max (or min) over ``dim``; the gradient goes to the
    element whose index is returned (the first of ties, as torch)."""

    _node_name = "MaxBackward0"

    @staticmethod
    def forward(ctx, x, dim, keepdim, is_min):
        arr = x._arr
        ctx.dim = dim
        ctx.in_shape = arr.shape
        kept = _kept_shape(arr.shape, (dim,))
        shape = kept if keepdim else arr.shape[:dim] + arr.shape[dim + 1:]
        ctx.rows = None
        if (dim == arr.ndim - 1 and arr.size and arr.flags.c_contiguous
                and arr.dtype.type in _KERNEL_FLOATS):
            # The last dim of a contiguous array: a compiled vectorised max
            # and first-index search per row (first NaN wins, as torch).
            x2 = arr.reshape(-1, arr.shape[-1])
            vals = np.empty(x2.shape[0], arr.dtype)
            idx = np.empty(x2.shape[0], np.int64)
            _R.extreme_dim_fwd(x2, vals, idx, is_min)
            ctx.rows = x2.shape
            idx = idx.reshape(kept)
        else:
            # NumPy's argmax/argmin are SIMD and return the first NaN, as torch.
            idx = (np.argmin if is_min else np.argmax)(arr, axis=dim)
            idx = np.expand_dims(idx.astype(np.int64, copy=False), dim)
            vals = np.take_along_axis(arr, idx, axis=dim)
        ctx.idx = idx
        ctx.kept = kept
        values = _wrap(vals.reshape(shape))
        indices = _wrap(idx.reshape(shape))
        ctx.mark_non_differentiable(indices)
        return values, indices

    @staticmethod
    def backward(ctx, g, g_idx):
        if not is_grad_enabled():
            if ctx.rows is not None and g._arr.dtype.type in _KERNEL_FLOATS:
                out = np.empty(ctx.in_shape, g._arr.dtype)
                _R.extreme_dim_bwd(ctx.idx.reshape(-1),
                                   np.ascontiguousarray(g._arr).reshape(-1),
                                   out.reshape(ctx.rows))
                return _wrap(out), None, None, None
            out = np.zeros(ctx.in_shape, g._arr.dtype)
            np.put_along_axis(out, ctx.idx, g._arr.reshape(ctx.kept), axis=ctx.dim)
            return _wrap(out), None, None, None
        return (_PutAlong.apply(reshape(g, ctx.kept), ctx.idx, ctx.dim, ctx.in_shape),
                None, None, None)


class _MinDim(_ExtremeDim):
    _node_name = "MinBackward0"


class _ExtremeAll(Function):
    """out = max (or min) of every element; the gradient is split evenly among
    the elements equal to it (torch's rule for the full reduction)."""

    _node_name = "MaxBackward1"

    @staticmethod
    def forward(ctx, x, is_min):
        arr = x._arr
        val = np.asarray(arr.min() if is_min else arr.max())  # NaN propagates
        mask = np.asarray(np.isnan(arr) if np.isnan(val) else (arr == val))
        ctx.mask = mask
        ctx.count = int(np.count_nonzero(mask))
        return _wrap(val)

    @staticmethod
    def backward(ctx, g):
        if not is_grad_enabled():
            return _wrap(np.asarray(ctx.mask * (g._arr / ctx.count))), None
        m = _wrap(ctx.mask.astype(g._arr.dtype))
        return m * (g / ctx.count), None


class _MinAll(_ExtremeAll):
    _node_name = "MinBackward1"


_MinMax = __import__("collections").namedtuple("return_types", ["values", "indices"])


def _extreme(input, dim, keepdim, is_min, name):
    if isinstance(dim, TensorBase):
        return (minimum if is_min else maximum)(input, dim)  # noqa: F821
    arr = input._arr
    if dim is None:
        if arr.size == 0:
            raise RuntimeError(
                f"{name}(): Expected reduction dim to be specified for "
                "input.numel() == 0. Specify the reduction dim with the 'dim' "
                "argument.")
        if arr.dtype.kind != "f":
            return _wrap(np.asarray(arr.min() if is_min else arr.max()))
        return (_MinAll if is_min else _ExtremeAll).apply(input, is_min)
    d = _canon_dim(dim, arr.ndim)
    if arr.ndim == 0:
        return _MinMax(input.clone(), _wrap(np.zeros((), np.int64)))
    if arr.shape[d] == 0:
        raise IndexError(
            f"{name}(): Expected reduction dim {dim} to have non-zero size.")
    if arr.dtype.kind != "f":
        f = np.argmin if is_min else np.argmax
        idx = np.expand_dims(f(arr, axis=d), d)
        vals = np.take_along_axis(arr, idx, axis=d)
        if not keepdim:
            idx, vals = np.squeeze(idx, d), np.squeeze(vals, d)
        return _MinMax(_wrap(vals), _wrap(idx.astype(np.int64)))
    values, indices = (_MinDim if is_min else _ExtremeDim).apply(
        input, d, bool(keepdim), is_min)
    return _MinMax(values, indices)


@op("max", methods=("max",), ref=np.max, primitive=True, kind="reduce")
def max(input, dim=None, keepdim=False):
    """Largest element; with ``dim``, ``(values, indices)`` along it.

    Gradient: with ``dim`` it goes to the returned index (first of ties);
    over all elements it is split evenly among the tied maxima.  With a
    tensor as second argument this is ``maximum``.
    """
    return _extreme(input, dim, keepdim, False, "max")


@op("min", methods=("min",), ref=np.min, primitive=True, kind="reduce")
def min(input, dim=None, keepdim=False):
    """Smallest element; with ``dim``, ``(values, indices)`` (see ``max``)."""
    return _extreme(input, dim, keepdim, True, "min")


def _arg_extreme(input, dim, keepdim, is_min):
    arr = input._arr
    if dim is None:
        if arr.size == 0:
            raise RuntimeError("argmax(): Expected reduction dim to be specified for "
                               "input.numel() == 0.")
        return _wrap(np.asarray(_extreme(input.detach().reshape(-1), 0, False, is_min,
                                         "argmin" if is_min else "argmax")[1]._arr))
    d = _canon_dim(dim, arr.ndim)
    if arr.ndim == 0:
        return _wrap(np.zeros((), np.int64))
    res = _extreme(input.detach(), d, keepdim, is_min, "argmin" if is_min else "argmax")
    return res[1]


@op("argmax", methods=("argmax",), ref=np.argmax, kind="index")
def argmax(input, dim=None, keepdim=False):
    """Index of the first largest element (NaN counts as largest); no gradient."""
    return _arg_extreme(input, dim, keepdim, False)


@op("argmin", methods=("argmin",), ref=np.argmin, kind="index")
def argmin(input, dim=None, keepdim=False):
    """Index of the first smallest element (NaN first); no gradient."""
    return _arg_extreme(input, dim, keepdim, True)


# --- cat and stack -----------------------------------------------------------------------------

class Cat(Function):
    """out = the inputs joined along ``dim``; grad_i = the matching slice of g."""

    _node_name = "CatBackward0"

    @staticmethod
    def forward(ctx, dim, *xs):
        ctx.dim = dim
        ctx.sizes = [x._arr.shape[dim] for x in xs]
        return _wrap(np.concatenate([x._arr for x in xs], axis=dim))

    @staticmethod
    def backward(ctx, g):
        dim = ctx.dim
        grads = []
        start = 0
        for n in ctx.sizes:
            sl = (slice(None),) * dim + (slice(start, start + n),)
            if is_grad_enabled():
                grads.append(getitem(g, sl))
            else:
                grads.append(_wrap(g._arr[sl]))
            start += n
        return (None, *grads)


def _as_tensor_list(tensors, name):
    if isinstance(tensors, TensorBase) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}(): argument 'tensors' must be a tuple or list of "
                        f"Tensors, not {type(tensors).__name__}")
    if len(tensors) == 0:
        raise RuntimeError(f"{name}(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if not isinstance(t, TensorBase):
            raise TypeError(f"{name}(): expected Tensor as element {i} in argument "
                            f"0, but got {type(t).__name__}")
    return list(tensors)


def _promote_all(tensors):
    dt = tensors[0]._arr.dtype
    for t in tensors[1:]:
        other = t._arr.dtype
        if other == dt:
            continue
        ck, ok = dt.kind == "f", other.kind == "f"
        if ck != ok:
            dt = dt if ck else other
        else:
            dt = np.result_type(dt, other)
    return [t if t._arr.dtype == dt else t.to(dt) for t in tensors]


@op("cat", ref=np.concatenate, primitive=True, kind="join")
def cat(tensors, dim=0):
    """Join tensors along an existing ``dim`` (dtypes promoted as torch);
    each input's gradient is its slice of g.  1-D empty tensors are skipped,
    as torch's legacy rule."""
    tensors = _as_tensor_list(tensors, "cat")
    ref = next((t for t in tensors if t._arr.shape != (0,)), tensors[0])
    nd = ref._arr.ndim
    if nd == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be "
                           "concatenated")
    d = _canon_dim(dim, nd)
    keep = []
    for i, t in enumerate(tensors):
        s = t._arr.shape
        if s == (0,) and nd != 1:
            continue
        if len(s) != nd:
            raise RuntimeError(
                f"Tensors must have same number of dimensions: got {nd} and {len(s)} "
                f"(tensor number {i} in the list)")
        for k in range(nd):
            if k != d and s[k] != ref._arr.shape[k]:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {d}. Expected "
                    f"size {ref._arr.shape[k]} but got size {s[k]} for tensor number "
                    f"{i} in the list.")
        keep.append(t)
    keep = _promote_all(keep)
    return Cat.apply(d, *keep)


concat = concatenate = cat


@op("stack", ref=np.stack, kind="join")
def stack(tensors, dim=0):
    """Join equal-shaped tensors along a new ``dim`` (unsqueeze, then cat)."""
    tensors = _as_tensor_list(tensors, "stack")
    shape0 = tensors[0]._arr.shape
    for i, t in enumerate(tensors[1:], 1):
        if t._arr.shape != shape0:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got "
                f"{list(shape0)} at entry 0 and {list(t._arr.shape)} at entry {i}")
    nd = len(shape0) + 1
    if not -nd <= dim < nd:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], "
            f"but got {dim}) for stack of tensors with {nd - 1} dimensions")
    d = dim % nd
    return Cat.apply(d, *[unsqueeze(t, d) for t in _promote_all(tensors)])


# --- indexing ----------------------------------------------------------------------------------

def _index_error(e, arr):
    msg = str(e).replace("axis", "dimension").replace("array", "tensor")
    return IndexError(msg + f" (indexing a tensor of shape {list(arr.shape)})")


def _norm_index(idx):
    """Normalize a torch-style index to NumPy's; return (index tuple, basic).

    Tensors become arrays (ints -> int64, bool masks -> their nonzero()
    coordinates so that every advanced index is an integer array), 0-d
    integer tensors become Python ints.  ``basic`` is True when the result
    is a view (only ints, slices, None and Ellipsis).
    """
    if not isinstance(idx, tuple):
        idx = (idx,)
    out = []
    basic = True
    for k in idx:
        if isinstance(k, TensorBase):
            k = k._arr
        if isinstance(k, (list, np.ndarray)):
            a = np.asarray(k)
            if a.dtype == np.bool_:
                if a.ndim == 0:
                    out.append(a)
                    basic = False
                    continue
                out.extend(np.nonzero(a))
                basic = False
                continue
            if a.size == 0 and a.dtype.kind == "f" and isinstance(k, list):
                a = a.astype(np.int64)
            if a.dtype.kind not in "iu":
                raise IndexError("tensors used as indices must be long, int, byte or "
                                 f"bool tensors, got {a.dtype}")
            if a.ndim == 0:
                out.append(int(a))
                continue
            out.append(a.astype(np.int64, copy=False))
            basic = False
            continue
        if isinstance(k, slice):
            if k.step is not None and int(k.step) <= 0:
                raise ValueError("step must be greater than zero")
            out.append(k)
            continue
        if k is None or k is Ellipsis:
            out.append(k)
            continue
        if isinstance(k, (bool, np.bool_)):
            out.append(np.asarray(k))
            basic = False
            continue
        if isinstance(k, (int, np.integer)):
            out.append(int(k))
            continue
        raise IndexError(
            "only integers, slices (`:`), ellipsis (`...`), None and long or byte "
            f"Variables are valid indices (got {type(k).__name__})")
    return tuple(out), basic


def _basic_view(arr, idx):
    """arr[idx] for a basic index, always an ndarray view (0-d included)."""
    if not any(k is Ellipsis for k in idx):
        idx = idx + (Ellipsis,)
    return arr[idx]


class GetItem(Function):
    """out = x[idx]; grad = zeros with g put at idx (accumulated over repeated
    indices of an advanced index).  A basic index gives a view of x."""

    _node_name = "IndexBackward0"

    @staticmethod
    def forward(ctx, x, idx, basic):
        arr = x._arr
        ctx.idx, ctx.basic, ctx.shape = idx, basic, arr.shape
        try:
            if basic:
                return _view_of(x, _basic_view(arr, idx))
            return _wrap(np.asarray(arr[idx]))
        except IndexError as e:
            raise _index_error(e, arr) from None

    @staticmethod
    def backward(ctx, g):
        if not is_grad_enabled():
            out = np.zeros(ctx.shape, g._arr.dtype)
            if ctx.basic:
                _basic_view(out, ctx.idx)[...] = g._arr
            else:
                np.add.at(out, ctx.idx, g._arr)
            return _wrap(out), None, None
        return PutItem.apply(g, ctx.idx, ctx.basic, ctx.shape), None, None


class PutItem(Function):
    """out = zeros(shape) with g put (added, for repeated indices) at idx;
    grad = gg[idx]: the backward of GetItem, and the other way round."""

    _node_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx, g, idx, basic, shape):
        ctx.idx, ctx.basic = idx, basic
        out = np.zeros(shape, g._arr.dtype)
        if basic:
            _basic_view(out, idx)[...] = g._arr
        else:
            np.add.at(out, idx, g._arr)
        return _wrap(out)

    @staticmethod
    def backward(ctx, gg):
        return GetItem.apply(gg, ctx.idx, ctx.basic), None, None, None


def getitem(input, index):
    """``input[index]`` with torch's rules: ints, slices (positive steps), None,
    Ellipsis give a view; integer tensors/arrays/lists and bool masks give a
    copy.  The gradient scatters back, adding over repeated indices."""
    idx, basic = _norm_index(index)
    return GetItem.apply(input, idx, basic)


OPS["getitem"] = OpSpec("getitem", getitem, ("__getitem__",), None, True, None,
                        "index")
Tensor.__getitem__ = getitem


# --- writes: __setitem__, in-place ops, and views of a rewritten tensor -------------------------
#
# torch's model: an in-place write into a tensor that is part of a graph
# rebases its history.  A write into a base ``b`` (not a view) gets a node
# whose backward routes the written region's gradient to the source and the
# rest to b's old history (IndexPut).  A write through a view ``v`` of ``b``
# rewrites b's history (CopySlices: the region of b that v[idx] covers, found
# from v's strides) and regenerates v's history as a strided view of the new
# b.  Every other live view of b is regenerated the same way, so a view read
# after the write differentiates into the new history, as torch's views do.
# A write cygrad cannot express exactly raises instead of giving a wrong
# gradient (a base with a non C-contiguous layout; overlapping memory).

import weakref as _weakref


def _register_view(root, t):
    views = root.__dict__.get("_views")
    if views is None:
        views = root.__dict__["_views"] = _weakref.WeakSet()
    views.add(t)


def _view_ids(view_arr, root):
    """Flat C-order positions in ``root`` of every element of ``view_arr``."""
    base = root._arr
    if view_arr.size == 0:
        return np.zeros(view_arr.shape, np.int64)
    if not base.flags.c_contiguous:
        raise RuntimeError(
            "cygrad cannot differentiate an in-place write through a view of a "
            f"tensor whose storage is not C-contiguous (base shape {list(base.shape)},"
            " strides "
            f"{list(base.strides)}); clone() the base first")
    item = base.itemsize
    off = (view_arr.__array_interface__["data"][0]
           - base.__array_interface__["data"][0])
    strides = view_arr.strides
    if off % item or any(s % item for s in strides):
        raise RuntimeError("cygrad cannot map this view onto its base's elements")
    ids = np.arange(base.size, dtype=np.int64)
    return np.lib.stride_tricks.as_strided(
        ids[off // item:], view_arr.shape, tuple(s // item * 8 for s in strides),
        writeable=False)


class _Gather(Function):
    """out = x.flat[ids]; grad = zeros with g added at ids (scatter-add)."""

    _node_name = "AsStridedBackward0"

    @staticmethod
    def forward(ctx, x, ids, arr):
        ctx.ids, ctx.shape = ids, x._arr.shape
        return _wrap(arr if arr is not None else x._arr.reshape(-1)[ids])

    @staticmethod
    def backward(ctx, g):
        return _ScatterAdd.apply(g, ctx.ids, ctx.shape), None, None


class _ScatterAdd(Function):
    """out = zeros(shape); out.flat[ids] += g (repeats add); grad = gg.flat[ids]."""

    _node_name = "ScatterAddBackward0"

    @staticmethod
    def forward(ctx, g, ids, shape):
        ctx.ids = ids
        n = _prod(shape)
        flat = np.bincount(ids.reshape(-1), weights=g._arr.reshape(-1), minlength=n)
        return _wrap(flat.astype(g._arr.dtype, copy=False).reshape(shape))

    @staticmethod
    def backward(ctx, gg):
        return _Gather.apply(reshape(gg, -1) if is_grad_enabled() else gg,
                             ctx.ids, None), None, None


def _regenerate_views(root):
    """Point every live view of ``root`` at root's current history."""
    views = root.__dict__.get("_views")
    if not views or not root._requires_grad:
        return
    for v in list(views):
        ids = _view_ids(v._arr, root)
        o = _Gather.apply(root, ids, v._arr)
        v._grad_fn = o._grad_fn
        v._out_nr = 0
        v._requires_grad = True


class IndexPut(Function):
    """self[idx] = value, in place; grad_self = g with the region zeroed,
    grad_value = g[idx] summed to value's shape."""

    _node_name = "IndexPutBackward1"

    @staticmethod
    def forward(ctx, dst, value, idx, basic):
        ctx.idx, ctx.basic = idx, basic
        ctx.vshape = value._arr.shape
        ctx.shape = dst._arr.shape
        if basic:
            _basic_view(dst._arr, idx)[...] = value._arr
        else:
            dst._arr[idx] = value._arr
        _engine._mark_inplace(dst, "index_put_")
        ctx.mark_dirty(dst)
        return dst

    @staticmethod
    def backward(ctx, g):
        idx, basic = ctx.idx, ctx.basic
        if not is_grad_enabled():
            garr = g._arr
            gd = np.array(garr, copy=True)
            if basic:
                _basic_view(gd, idx)[...] = 0
                gv = _basic_view(garr, idx)
            else:
                gd[idx] = 0
                gv = garr[idx]
            return _wrap(gd), _wrap(_sum_to(gv, ctx.vshape)), None, None
        mask = np.ones(ctx.shape, g._arr.dtype)
        if basic:
            _basic_view(mask, idx)[...] = 0
        else:
            mask[idx] = 0
        gv = sum_to_shape(GetItem.apply(g, idx, basic), ctx.vshape)
        return g * _wrap(mask), gv, None, None


class CopySlices(Function):
    """root.flat[region] = value (a write through a view), in place;
    grad_root = g with the region zeroed, grad_value = g.flat[region] summed
    to value's shape."""

    _node_name = "CopySlices"

    @staticmethod
    def forward(ctx, root, value, region):
        ctx.region = region
        ctx.vshape = value._arr.shape
        ctx.shape = root._arr.shape
        root._arr.reshape(-1)[region] = np.broadcast_to(value._arr, region.shape)
        _engine._mark_inplace(root, "copy_slices")
        ctx.mark_dirty(root)
        return root

    @staticmethod
    def backward(ctx, g):
        region = ctx.region
        if not is_grad_enabled():
            gd = np.array(g._arr, copy=True)
            gd.reshape(-1)[region] = 0
            gv = g._arr.reshape(-1)[region]
            return _wrap(gd), _wrap(_sum_to(gv, ctx.vshape)), None
        mask = np.ones(_prod(ctx.shape), g._arr.dtype)
        mask[region] = 0
        gv = sum_to_shape(_Gather.apply(reshape(g, -1), region, None), ctx.vshape)
        return g * _wrap(mask.reshape(ctx.shape)), gv, None


def _sum_to(a, shape):
    """NumPy ``a`` summed to ``shape``, C-contiguous, 0-d kept 0-d."""
    return np.array(_np_sum_to_shape(np.asarray(a), tuple(shape)), order="C",
                    copy=True).reshape(shape)


def _value_tensor(value, dtype, shape):
    """``value`` as a tensor of ``dtype`` that broadcasts to ``shape``."""
    if isinstance(value, TensorBase):
        v = value
        if v._arr.dtype != dtype:
            v = v.to(dtype) if dtype.kind == "f" or not v._requires_grad else \
                _wrap(v._arr.astype(dtype))
    else:
        try:
            v = _wrap(np.asarray(value, dtype=dtype))
        except (TypeError, ValueError):
            raise TypeError(f"can't assign a {type(value).__name__} to a "
                            f"{_dt.name(dtype)} tensor") from None
    lead = 0
    while v._arr.ndim - lead > len(shape) and v._arr.shape[lead] == 1:
        lead += 1   # torch drops leading 1s: z[1] = t of shape (1,) is allowed
    if lead:
        v = reshape(v, v._arr.shape[lead:])
    try:
        ok = np.broadcast_shapes(v._arr.shape, shape) == tuple(shape)
    except ValueError:
        ok = False
    if not ok:
        raise RuntimeError(
            f"shape mismatch: value tensor of shape {list(v._arr.shape)} cannot be "
            f"broadcast to indexing result of shape {list(shape)}")
    return v


def _root(t):
    return t._base if t._base is not None else t


def _write(dst, idx, basic, value, opname):
    """dst[idx] = value with every check done before anything is written."""
    arr = dst._arr
    try:
        target = _basic_view(arr, idx) if basic else arr[idx]
    except IndexError as e:
        raise _index_error(e, arr) from None
    v = _value_tensor(value, arr.dtype, target.shape)
    if v._ver is dst._ver:
        # The source aliases the destination (``x[i] += 1`` writes x[i] back
        # into itself): read it from a copy, with its history.
        v = clone(v)
    _check_overlap(dst)
    dst._writable_check(opname)
    _engine._check_inplace(dst, opname)
    root = _root(dst)
    need = is_grad_enabled() and (root._requires_grad or dst._requires_grad
                                  or v._requires_grad)
    if not need:
        if basic:
            target[...] = v._arr
        else:
            arr[idx] = v._arr
        _engine._mark_inplace(dst, opname)
        return dst
    if root is dst:
        IndexPut.apply(dst, v, idx, basic)
        _regenerate_views(dst)
        return dst
    region = _view_ids(dst._arr, root)
    region = np.ascontiguousarray(_basic_view(region, idx) if basic else region[idx])
    if region.size and np.unique(region).size != region.size:
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor "
            "refers to a single memory location. Please clone() the tensor before "
            "performing the operation.")
    CopySlices.apply(root, v, region)
    _regenerate_views(root)
    return dst


def setitem(self, index, value):
    """``self[index] = value`` in place (value broadcast and cast to self's
    dtype), version-counted; differentiable as torch's index_put_/CopySlices."""
    idx, basic = _norm_index(index)
    _write(self, idx, basic, value, "setitem")


Tensor.__setitem__ = setitem


def _snapshot(t):
    """A copy of t's values that carries t's current history (for an op
    computed out of place and written back)."""
    old = _alias(t, np.array(t._arr, copy=True), False)
    old._grad_fn = t._grad_fn
    old._out_nr = t._out_nr
    old._requires_grad = t._requires_grad
    if t._grad_fn is None:
        old._acc = t._acc
    return old


def _inplace_apply(t, fn, opname, other=None):
    """t <- fn(t) in place, with torch's autograd rules for bases and views.

    ``other``: the op's tensor operand, if any.  When it requires grad the
    write joins the graph even if neither ``t`` nor its base does (else
    ``view.add_(w)`` dropped w's gradient silently).
    """
    _check_overlap(t)
    t._writable_check(opname)
    root = _root(t)
    if is_grad_enabled() and (t._requires_grad or root._requires_grad or (
            isinstance(other, TensorBase) and other._requires_grad)):
        _engine._check_inplace(t, opname)
        res = fn(_snapshot(t))
        if res._arr.dtype != t._arr.dtype and res._arr.dtype.kind == "f" and \
                t._arr.dtype.kind != "f":
            raise RuntimeError(f"result type {_dt.name(res._arr.dtype)} can't be "
                               f"cast to the desired output type "
                               f"{_dt.name(t._arr.dtype)} ({opname})")
        return _write(t, (Ellipsis,), True, res, opname)
    with _no_grad():
        res = fn(t)
    if res._arr.dtype.kind == "f" and t._arr.dtype.kind != "f":
        raise RuntimeError(f"result type {_dt.name(res._arr.dtype)} can't be cast to "
                           f"the desired output type {_dt.name(t._arr.dtype)} "
                           f"({opname})")
    _engine._check_inplace(t, opname)
    np.copyto(t._arr, res._arr, casting="unsafe")
    _engine._mark_inplace(t, opname)
    return t


def clamp_(input, min=None, max=None):
    """In-place ``clamp`` (see ``clamp`` for the gradient)."""
    return _inplace_apply(input, lambda t: clamp(t, min, max), "clamp_")


def clamp_min_(input, min):
    return _inplace_apply(input, lambda t: clamp_min(t, min), "clamp_min_")


def clamp_max_(input, max):
    return _inplace_apply(input, lambda t: clamp_max(t, max), "clamp_max_")


Tensor.clamp_ = Tensor.clip_ = clamp_
Tensor.clamp_min_ = clamp_min_
Tensor.clamp_max_ = clamp_max_


def _internal_overlap(arr):
    """True when two elements of ``arr`` share memory (an expanded view).

    An empty array has no elements to share (NumPy gives its copies 0 strides).
    """
    if arr.size <= 1 or arr.flags.c_contiguous:     # the common case, cheaply
        return False
    return any(st == 0 and n > 1 for st, n in zip(arr.strides, arr.shape))


def _check_overlap(t):
    if _internal_overlap(t._arr):
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor "
            "refers to a single memory location. Please clone() the tensor before "
            "performing the operation.")


def _through_view(self, other):
    """True when an in-place op on ``self`` must rebase a base's history."""
    root = self._base
    return root is not None and is_grad_enabled() and (
        root._requires_grad or self._requires_grad or (
            isinstance(other, TensorBase) and other._requires_grad))


def _after_inplace(self):
    # Cheap tests first: optimizer updates run under no_grad on plain leaves.
    if self._requires_grad and is_grad_enabled() and "_views" in self.__dict__:
        _regenerate_views(self)


def _view_aware_inplace(name, opname, self, other):
    """The in-place operators (``+= -= *= /=``) when the compiled one defers:
    writes through a view of a tensor in the graph go through CopySlices; a
    base's other views are regenerated."""
    if not isinstance(other, (TensorBase, int, float, bool, np.number)):
        return NotImplemented
    _check_overlap(self)
    if _through_view(self, other):
        return _inplace_apply(self, lambda t: _engine.binary(name, t, other),
                              opname, other)
    res = _engine.inplace_binary(name, self, other, opname)
    _after_inplace(self)
    return res


def _view_aware_method(name, opname, alpha):
    """``add_``/``sub_``/``mul_``/``div_`` with the same view handling."""
    def method(self, other):
        if isinstance(other, (TensorBase, int, float, bool, np.number)):
            _check_overlap(self)
            if _through_view(self, other):
                return _inplace_apply(
                    self, lambda t: _engine.binary(name, t, other), opname, other)
        res = _engine.inplace_binary(name, self, other, opname)
        _after_inplace(self)
        return res

    if alpha:
        def fn(self, other, alpha=1):
            if alpha != 1:
                other = other * alpha
            return method(self, other)
    else:
        fn = method
    fn.__name__ = opname
    fn.__doc__ = f"In-place ``{name}`` (broadcasting ``other`` to self's shape)."
    return fn


_engine._set_inplace_views(_view_aware_inplace)
Tensor.add_ = _view_aware_method("add", "add_", True)
Tensor.sub_ = _view_aware_method("sub", "sub_", True)
Tensor.mul_ = _view_aware_method("mul", "mul_", False)
Tensor.div_ = _view_aware_method("div", "div_", False)


# --- composites ------------------------------------------------------------------------------

def _install():
    unary, binary = _graph_rules()
    import os
    pkg_dir = os.path.dirname(os.path.abspath(__file__)) + os.sep
    _engine._install(Tensor, unary, binary, sum_to_shape, pkg_dir)
    _engine._set_graph_expand(expand)


_install()
