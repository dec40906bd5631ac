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
from cygrad._kernels.elementwise import BINARY_OPS, UNARY_OPS
from cygrad._kernels.engine import TensorBase, _alias, _wrap, is_grad_enabled
from cygrad._kernels.reduce import sum_all as _sum_all
from cygrad._kernels.reduce import sum_to_shape as _np_sum_to_shape
from cygrad.autograd.function import Function
from cygrad.tensor import Tensor, _canon_dim


# --- the registry ------------------------------------------------------------------

class OpSpec:
    """One public op: its function, Tensor method names and NumPy reference."""

    def __init__(self, name, fn, methods, ref, primitive, domain, kind):
        self.name = name
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


def op(name, methods=(), ref=None, primitive=False, domain=None, kind="other"):
    """Register ``fn`` as the public op ``name`` (and as Tensor methods)."""
    def deco(fn):
        OPS[name] = OpSpec(name, fn, tuple(methods), ref, primitive, domain, kind)
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


# --- elementwise ops from the kernel table -------------------------------------------

_REFS_U = {
    "neg": np.negative, "exp": np.exp, "log": np.log, "tanh": np.tanh,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "relu": lambda x: np.maximum(x, 0),
    "sqrt": np.sqrt, "abs": np.abs, "sin": np.sin, "cos": np.cos,
}
_DOMAINS_U = {"log": (0.1, 5.0), "sqrt": (0.1, 5.0)}
_REFS_B = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    "pow": np.power, "maximum": np.maximum, "minimum": np.minimum,
}
_DOMAINS_B = {"div": ((-3, 3), (0.5, 3.0)), "pow": ((0.2, 3.0), (-2, 2))}


def _make_unary(name):
    unary = _engine.unary

    def fn(input):
        return unary(name, input)
    fn.__name__ = name
    fn.__qualname__ = name
    fn.__doc__ = (f"Elementwise {name}: out = {UNARY_OPS[name][1]}; "
                  f"grad = {UNARY_OPS[name][2]}.")
    return fn


def _make_binary(name):
    binary = _engine.binary

    def fn(input, other):
        return binary(name, input, other)
    fn.__name__ = name
    fn.__qualname__ = name
    fn.__doc__ = (f"Elementwise {name} with broadcasting: out = "
                  f"{BINARY_OPS[name][1]}; grad_a = {BINARY_OPS[name][2]}, "
                  f"grad_b = {BINARY_OPS[name][3]}.")
    return fn


for _name in UNARY_OPS:
    _methods = (_name,) if _name != "neg" else ("neg", "negative")
    globals()[_name] = op(_name, methods=_methods, ref=_REFS_U[_name], primitive=True,
                          domain=_DOMAINS_U.get(_name), kind="unary")(
        _make_unary(_name))
for _name in ("mul", "div", "maximum", "minimum"):
    globals()[_name] = op(_name, methods=(_name,), ref=_REFS_B[_name], primitive=True,
                          domain=_DOMAINS_B.get(_name), kind="binary")(
        _make_binary(_name))
multiply = mul
divide = true_divide = div
negative = neg  # noqa: F821 - defined from the table above


@op("add", methods=("add",), ref=np.add, primitive=True, kind="binary")
def add(input, other, alpha=1):
    """out = a + alpha * b (broadcasting); grad_a = g, grad_b = alpha * g."""
    if alpha != 1:
        other = other * alpha
    return _engine.binary("add", input, other)


@op("sub", methods=("sub", "subtract"), ref=np.subtract, primitive=True,
    kind="binary")
def sub(input, other, alpha=1):
    """out = a - alpha * b (broadcasting); grad_a = g, grad_b = -alpha * g."""
    if alpha != 1:
        other = other * alpha
    return _engine.binary("sub", input, other)


subtract = sub


@op("pow", methods=("pow",), ref=np.power, primitive=True,
    domain=_DOMAINS_B["pow"], kind="binary")
def pow(input, exponent):
    """out = a ** b; grad_a = b * a**(b-1) (0 where b == 0), grad_b = out * log(a)
    (0 where a == 0 and b >= 0), as PyTorch."""
    return _engine.binary("pow", input, exponent)


# The names the table's derivative expressions use, over Tensors.
def _sign(x):
    with _no_grad():
        return _wrap(np.sign(x._arr))


def _pow_grad_base(g, a, b):
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


def _graph_namespace():
    ns = {n: globals()[n] for n in UNARY_OPS}
    ns.update(fabs=globals()["abs"], sign=_sign, pow=pow, maximum=maximum,
              minimum=minimum, pow_grad_base=_pow_grad_base,
              pow_grad_exp=_pow_grad_exp)
    return ns


GRAPH_NAMESPACE = _graph_namespace()


def _compile_graph_rules():
    unary = {}
    for name, row in UNARY_OPS.items():
        unary[name] = eval(f"lambda g, x, y: {row[2]}", GRAPH_NAMESPACE)
    binary = {}
    for name, row in BINARY_OPS.items():
        binary[name] = (eval(f"lambda g, a, b, y: {row[2]}", GRAPH_NAMESPACE),
                        eval(f"lambda g, a, b, y: {row[3]}", GRAPH_NAMESPACE))
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
    if is_grad_enabled() and (dst._requires_grad or src._requires_grad):
        return CopyInto.apply(dst, src)
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
        ctx.save_for_backward(a, b)
        return _wrap(np.asarray(out))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        xp = _ns()
        x, y, gv = xp.val(a), xp.val(b), xp.val(g)
        # Treat vectors as matrices: a (k,) is (1, k); b (k,) is (k, 1).
        x2 = xp.reshape(x, (1, x.shape[0])) if x.ndim == 1 else x
        y2 = xp.reshape(y, (y.shape[0], 1)) if y.ndim == 1 else y
        out_shape = np.broadcast_shapes(x2.shape[:-2], y2.shape[:-2]) + (
            x2.shape[-2], y2.shape[-1])
        g2 = xp.reshape(gv, out_shape)
        ga = gb = None
        if ctx.needs_input_grad[0]:
            ga = xp.matmul(g2, xp.swapaxes(y2, -1, -2))
            ga = xp.reshape(xp.sum_to_shape(ga, x2.shape), x.shape)
        if ctx.needs_input_grad[1]:
            gb = xp.matmul(xp.swapaxes(x2, -1, -2), g2)
            gb = xp.reshape(xp.sum_to_shape(gb, y2.shape), y.shape)
        return xp.out(ga), xp.out(gb)


@op("matmul", methods=("matmul",), ref=np.matmul, primitive=True, kind="matmul")
def matmul(input, other):
    """Matrix product with torch's 1-D and batched-broadcast rules (BLAS)."""
    if not isinstance(other, TensorBase) or not isinstance(input, TensorBase):
        raise TypeError("matmul(): arguments must be Tensors, got "
                        f"{type(input).__name__} and {type(other).__name__}")
    if input._arr.dtype != other._arr.dtype:
        if input._arr.dtype.kind == "f" and other._arr.dtype.kind == "f":
            raise RuntimeError(
                f"expected m1 and m2 to have the same dtype, but got: "
                f"{_dt.name(input._arr.dtype)} != {_dt.name(other._arr.dtype)}")
    return Matmul.apply(input, other)


mm = matmul
Tensor.mm = matmul
Tensor.dot = matmul


# --- shape ops ------------------------------------------------------------------------------

def _view_of(x, arr):
    """A Tensor over ``arr`` that shares x's storage and version counter."""
    t = _alias(x, arr)
    t._base = x if x._base is None else x._base
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
    shape = input._arr.shape
    if dim is None:
        new = tuple(s for s in shape if s != 1)
    else:
        axes = _dims(dim, input._arr.ndim) if input._arr.ndim else ()
        new = tuple(s for i, s in enumerate(shape) if not (i in axes and s == 1))
    return Reshape.apply(input, new, False)


@op("unsqueeze", methods=("unsqueeze",), kind="shape")
def unsqueeze(input, dim):
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
    """out = x where cond else y; grad_x = g * cond, grad_y = g * ~cond."""

    _node_name = "WhereBackward0"

    @staticmethod
    def forward(ctx, cond, x, y):
        ctx.cond = cond._arr
        return _wrap(np.asarray(np.where(cond._arr, x._arr, y._arr)))

    @staticmethod
    def backward(ctx, g):
        xp = _ns()
        c = ctx.cond if xp is _NumpyNS else _wrap(ctx.cond)
        gv = xp.val(g)
        zero = gv * 0
        gx = xp.out(_select(xp, c, gv, zero)) if ctx.needs_input_grad[1] else None
        gy = xp.out(_select(xp, c, zero, gv)) if ctx.needs_input_grad[2] else None
        return None, gx, gy


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


# --- composites ------------------------------------------------------------------------------

def _install():
    unary, binary = _compile_graph_rules()
    import os
    pkg_dir = os.path.dirname(os.path.abspath(__file__)) + os.sep
    _engine._install(Tensor, unary, binary, sum_to_shape, pkg_dir)


_install()
