"""Reductions: sum, mean, softmax/log_softmax, logsumexp, var/std (and
their ``_mean`` pairs), max/min (with indices), amax/amin, argmax/argmin,
all/any/count_nonzero and norm."""

import warnings

import numpy as np

from cygrad import dtypes as _dt
from cygrad._kernels import engine as _engine
from cygrad._kernels import reductions as _R
from cygrad._kernels.engine import TensorBase, _wrap
from cygrad._kernels.reduce import sum_all as _sum_all
from cygrad._kernels.reduce import sum_to_shape as _sum_to_shape
from cygrad._tensor import _canon_dim
from cygrad.autograd.function import Function
from cygrad.ops.elementwise import _scalar_type, exp, maximum, minimum
from cygrad.ops.registry import (
    _KERNEL_FLOATS,
    _as_dtype,
    _dims,
    _float_input,
    _kept_shape,
    _ns,
    _NumpyNS,
    _prod,
    apply_named,
    named,
    np_aliases,
    op,
    return_type,
    xp_helper,
)
from cygrad.ops.select import where
from cygrad.ops.shape import reshape


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
        if arr.dtype.type in _KERNEL_FLOATS and arr.flags.c_contiguous and axes:
            # Leading (or middle) axes: the compiled column sums of
            # sum_to_shape (NumPy's axis-0 sum of a (10000, 10) array: 160 us)
            out = _sum_to_shape(arr, ctx.kept)
            return _wrap(out if keepdim else out.reshape(
                tuple(n for i, n in enumerate(arr.shape) if i not in axes)))
        return _wrap(np.asarray(np.sum(arr, axis=axes, keepdims=keepdim)))

    @staticmethod
    def backward(ctx, g):
        xp = _ns()
        gv = xp.reshape(xp.val(g), ctx.kept)
        return xp.out(xp.broadcast_to(gv, ctx.in_shape)), None, None


def _sum(input, dim=None, keepdim=False, dtype=None, *, axis=None, keepdims=None):
    """Sum over ``dim`` (int, tuple, or all; ``axis``/``keepdims`` are NumPy's
    names for ``dim``/``keepdim``); grad broadcasts g back."""
    if axis is not None:
        if dim is not None:
            raise TypeError("sum() got both 'dim' and its alias 'axis'")
        dim = axis
    if keepdims is not None:
        keepdim = keepdims
    if dtype is not None:
        input = input.to(dtype)
    if dim is None and not keepdim and input._arr.dtype.type in _KERNEL_FLOATS:
        return _engine.sum_all(input)
    if dim is None:
        return Sum.apply(input, _dims(dim, input._arr.ndim), bool(keepdim))
    return apply_named(Sum, "SumBackward1", input, _dims(dim, input._arr.ndim),
                       bool(keepdim))


# The full float sum is compiled; every other call runs _sum.
sum = op("sum", methods=("sum",), primitive=True, kind="reduce")(  # noqa: A001
    _engine.sum_method(_sum))


@op("mean", methods=("mean",), kind="reduce")
@np_aliases
def mean(input, dim=None, keepdim=False, dtype=None):
    """Mean over ``dim``: sum / count (composite)."""
    if dtype is not None:
        input = input.to(dtype)
    if input._arr.dtype.kind != "f":
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a "
            f"floating point or complex dtype. Got: {_dt.name(input._arr.dtype)}")
    if input._arr.dtype == np.float16:       # in float32, rounded once (as torch)
        return mean(input.to(np.float32), dim, keepdim).to(np.float16)
    if dim is None and not keepdim and input._arr.dtype.type in _KERNEL_FLOATS:
        n = input._arr.size                  # a loss: the compiled full sum
        out = _engine.sum_all(input) / (n if n else float("nan"))
        if out._grad_fn is not None:         # named() inlined: a loss's hot path
            out._grad_fn._torch_name = "MeanBackward0"
        return out
    axes = _dims(dim, input._arr.ndim)
    n = 1
    for a in axes:
        n *= input._arr.shape[a]
    if len(axes) == 1:
        total = sum(input, axes[0], bool(keepdim))      # a compiled node
    else:
        total = Sum.apply(input, axes, bool(keepdim))
    return named(total / (n if n else float("nan")), "MeanBackward1")


def _to_rows(arr, axes):
    """``arr`` with ``axes`` moved last, as a C-contiguous (rows, n) array.

    Returns the 2-D array and the permutation used (None when no move was
    needed, in which case the result is a reshape of ``arr``, copied only if
    ``arr`` is not contiguous).
    """
    nd = arr.ndim
    if axes == (nd - 1,) and arr.flags.c_contiguous:   # the usual case: a reshape
        n = arr.shape[-1]
        return arr.reshape(arr.size // n if n else _prod(arr.shape[:-1]), n), None
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
        xp = _ns()
        return xp.out(xp.softmax_grad(xp.val(y), xp.val(g), ctx.dim,
                                      ctx.take_log)), None, None


def _softmax_grad_arrays(y, g, dim, take_log):
    if y.ndim == 0:
        return np.zeros((), y.dtype)
    y2, perm = _to_rows(y, (dim,))
    g2, _ = _to_rows(_as_dtype(g, y.dtype), (dim,))
    out, full = _rows_out(y2, perm, y.shape)
    _R.softmax_bwd(y2, g2, out, take_log)
    return _from_rows(out, perm, y.shape, full)


def _softmax_grad_tensors(y, g, dim, take_log):
    d = dim if y.ndim else None
    if take_log:
        return g - exp(y) * sum(g, d, True)
    return y * (g - sum(g * y, d, True))


# grad = y * (g - sum(g * y, dim)); with take_log g - exp(y) * sum(g, dim).
xp_helper("softmax_grad", _softmax_grad_arrays, _softmax_grad_tensors)


class LogSoftmax(Softmax):
    """Softmax with ``take_log`` (its own node name, as torch)."""

    _node_name = "LogSoftmaxBackward0"


def _softmax_dim(input, dim, name):
    """``dim`` as an index, for a floating input (torch has no integer
    softmax: the caller's ``dtype=`` converts first)."""
    if dim is None:
        raise TypeError(f"{name}() missing required argument 'dim'")
    if input._arr.dtype.kind != "f":
        raise NotImplementedError(
            f'"{name}_lastdim_kernel_impl" not implemented for '
            f"'{_scalar_type(input.dtype)}' ({name} needs a floating input; pass "
            "dtype= to convert)")
    return _canon_dim(dim, input._arr.ndim)


def _softmax(input, dim=None, dtype=None):
    """softmax along ``dim`` (stable); grad = y * (g - sum(g * y, dim))."""
    if dtype is not None:
        input = input.to(dtype)
    return Softmax.apply(input, _softmax_dim(input, dim, "softmax"), False)


def _log_softmax(input, dim=None, dtype=None):
    """log(softmax) along ``dim`` (stable); grad = g - exp(y) * sum(g, dim)."""
    if dtype is not None:
        input = input.to(dtype)
    return LogSoftmax.apply(input, _softmax_dim(input, dim, "log_softmax"), True)


# Over the last dim of a contiguous float tensor, compiled nodes of the
# engine (the same kernels); every other call runs the Functions above.
softmax = op("softmax", methods=("softmax",), primitive=True, kind="softmax")(
    _engine.softmax_method(_softmax, False))
log_softmax = op("log_softmax", methods=("log_softmax",), primitive=True,
                 kind="softmax")(_engine.softmax_method(_log_softmax, True))


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
        xp = _ns()
        return xp.out(xp.logsumexp_grad(xp.val(x), xp.val(out), xp.val(g), ctx.axes,
                                        ctx.kept)), None, None


def _logsumexp_grad_arrays(x, out, g, axes, kept):
    x2, perm = _to_rows(x, axes)
    res, full = _rows_out(x2, perm, x.shape)
    g = _as_dtype(g, x.dtype)
    _R.logsumexp_bwd(x2, out.reshape(-1), np.ascontiguousarray(g).reshape(-1), res)
    return _from_rows(res, perm, x.shape, full)


def _logsumexp_grad_tensors(x, out, g, axes, kept):
    return reshape(g, kept) * exp(x - reshape(out, kept))


# grad = g * exp(x - out) = g * softmax(x) over the reduced axes.
xp_helper("logsumexp_grad", _logsumexp_grad_arrays, _logsumexp_grad_tensors)


@op("logsumexp", methods=("logsumexp",), primitive=True, kind="reduce")
@np_aliases
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
        xp = _ns()
        return xp.out(xp.var_grad(xp.val(x), xp.val(g), ctx.mean, ctx.axes, ctx.kept,
                                  scale)), None, None, None


def _var_grad_arrays(x, g, mean_rows, axes, kept, scale):
    x2, perm = _to_rows(x, axes)
    res, full = _rows_out(x2, perm, x.shape)
    g = _as_dtype(g, x.dtype)
    _R.var_bwd(x2, mean_rows, np.ascontiguousarray(g).reshape(-1), scale, res)
    return _from_rows(res, perm, x.shape, full)


def _var_grad_tensors(x, g, mean_rows, axes, kept, scale):
    return reshape(g, kept) * (x - mean(x, axes, True)) * scale


# grad = g * (x - mean) * 2 / (n - correction); the kernel reuses the rows'
# means from the forward.
xp_helper("var_grad", _var_grad_arrays, _var_grad_tensors)


@op("var", methods=("var",), primitive=True, kind="reduce")
@np_aliases
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Variance over ``dim`` with torch's ``correction`` (default 1, Bessel) or
    ``unbiased``; grad = g * 2 * (x - mean) / (n - correction)."""
    axes, correction = _var_args(input, dim, unbiased, correction, "var")
    return Var.apply(input, axes, correction, bool(keepdim))


def _var_args(input, dim, unbiased, correction, name):
    """(axes, correction) of a var/std call; ``var(x, False)`` is unbiased=False."""
    if isinstance(dim, bool):
        unbiased, dim = dim, None
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    elif unbiased is not None:
        raise RuntimeError(f"{name}(): cannot pass both 'unbiased' and 'correction'")
    if input._arr.dtype.kind != "f":
        raise RuntimeError(
            "std and var only support floating point and complex dtypes, got "
            f"{_dt.name(input._arr.dtype)}")
    axes = _dims(dim, input._arr.ndim)
    if _prod(input._arr.shape[a] for a in axes) - correction <= 0:
        warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be "
                      "strictly less than the reduction factor (input numel divided "
                      "by output numel).", UserWarning, stacklevel=4)
    return axes, correction


class Std(Var):
    """out = sqrt(var(x)) over ``axes``; grad = g * (x - mean) / ((n - correction)
    * out), and 0 where out is 0 (a constant input: torch's subgradient, not
    the NaN of sqrt'(0) * 0)."""

    _node_name = "StdBackward0"

    @staticmethod
    def forward(ctx, x, axes, correction, keepdim):
        out = Var.forward(ctx, x, axes, correction, keepdim)
        np.sqrt(out._arr, out=out._arr)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        denom = ctx.n - ctx.correction
        scale = 1.0 / denom if denom > 0 else float("nan")
        xp = _ns()
        return xp.out(xp.std_grad(xp.val(x), xp.val(out), xp.val(g), ctx.mean,
                                  ctx.axes, ctx.kept, scale)), None, None, None


def _std_grad_arrays(x, out, g, mean_rows, axes, kept, scale):
    g = _as_dtype(g, x.dtype).reshape(-1)
    o = out.reshape(-1)
    safe = np.where(o == 0, 1, o)
    g = np.where(o == 0, 0, g / safe).astype(x.dtype)
    return _var_grad_arrays(x, g, mean_rows, axes, kept, scale)


def _std_grad_tensors(x, out, g, mean_rows, axes, kept, scale):
    zero = out == 0
    safe = where(zero, 1.0, out)
    gs = where(zero, 0.0, g / safe)
    return reshape(gs, kept) * (x - mean(x, axes, True)) * scale


xp_helper("std_grad", _std_grad_arrays, _std_grad_tensors)


@op("std", methods=("std",), primitive=True, kind="reduce")
@np_aliases
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Standard deviation over ``dim`` (``correction``/``unbiased`` as var);
    grad = g * (x - mean) / ((n - correction) * std), 0 where std is 0."""
    axes, correction = _var_args(input, dim, unbiased, correction, "std")
    return Std.apply(input, axes, correction, bool(keepdim))


@op("var_mean", kind="reduce")
@np_aliases
def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """The tuple ``(var, mean)`` over ``dim`` (composite of the two)."""
    axes, correction = _var_args(input, dim, unbiased, correction, "var_mean")
    return Var.apply(input, axes, correction, bool(keepdim)), mean(input, axes,
                                                                   keepdim)


@op("std_mean", kind="reduce")
@np_aliases
def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """The tuple ``(std, mean)`` over ``dim`` (composite of the two)."""
    axes, correction = _var_args(input, dim, unbiased, correction, "std_mean")
    return Std.apply(input, axes, correction, bool(keepdim)), mean(input, axes,
                                                                   keepdim)




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


def _put_along_arrays(g, idx, dim, kept, in_shape, rows):
    if rows is not None and g.dtype.type in _KERNEL_FLOATS:
        out = np.empty(in_shape, g.dtype)
        _R.extreme_dim_bwd(idx.reshape(-1), np.ascontiguousarray(g).reshape(-1),
                           out.reshape(rows))
        return out
    out = np.zeros(in_shape, g.dtype)
    np.put_along_axis(out, idx, g.reshape(kept), axis=dim)
    return out


def _put_along_tensors(g, idx, dim, kept, in_shape, rows):
    return _PutAlong.apply(reshape(g, kept), idx, dim, in_shape)


# zeros(in_shape) with g (reduced over ``dim``, of shape ``kept``) placed at
# idx along dim: the backward of a max/min over a dim.
xp_helper("put_along", _put_along_arrays, _put_along_tensors)


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
        xp = _ns()
        return (xp.out(xp.put_along(xp.val(g), ctx.idx, ctx.dim, ctx.kept,
                                    ctx.in_shape, ctx.rows)), None, None, None)


class _MinDim(_ExtremeDim):
    _node_name = "MinBackward0"


def _all_extreme(arr, is_min):
    """The max (min) of every element of ``arr`` as a 0-d array; NaN if it
    holds one.  Contiguous floats: the compiled row extreme (NumPy's
    reduction and its NaN check cost ~6 us a call at 1,000 elements)."""
    if arr.dtype.type in _KERNEL_FLOATS and arr.size and arr.flags.c_contiguous:
        val = np.empty(1, arr.dtype)
        _R.extreme_dim_fwd(arr.reshape(1, -1), val, np.empty(1, np.int64), is_min)
        return val.reshape(())
    return np.asarray(arr.min() if is_min else arr.max())  # NaN propagates


class _ExtremeAll(Function):
    """out = max (or min) of every element; the gradient is split evenly among
    the elements equal to it (torch's rule for the full reduction; it saves
    the input, as torch's node does)."""

    _node_name = "MaxBackward1"

    @staticmethod
    def forward(ctx, x, is_min):
        val = _all_extreme(x._arr, is_min)
        ctx.val = val
        ctx.save_for_backward(x)
        return _wrap(val.copy())

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        arr, val = x._arr, ctx.val
        mask = np.isnan(arr) if np.isnan(val) else (arr == val)
        xp = _ns()
        gv = xp.val(g)
        return xp.out(xp.const(mask.astype(gv.dtype)) * (gv / int(np.count_nonzero(mask)))), None


class _MinAll(_ExtremeAll):
    _node_name = "MinBackward1"


_MinMax = {"max": return_type("max", ["values", "indices"]),
           "min": return_type("min", ["values", "indices"])}


def _extreme(input, dim, keepdim, is_min, name):
    if isinstance(dim, TensorBase):
        return (minimum if is_min else maximum)(input, dim)
    arr = input._arr
    if dim is None:
        if arr.size == 0:
            raise RuntimeError(
                f"{name}(): Expected reduction dim to be specified for "
                "input.numel() == 0. Specify the reduction dim with the 'dim' "
                "argument.")
        if arr.dtype.kind != "f" or not input.requires_grad:
            return _wrap(_all_extreme(arr, is_min))
        return (_MinAll if is_min else _ExtremeAll).apply(input, is_min)
    d = _canon_dim(dim, arr.ndim)
    result = _MinMax["min" if is_min else "max"]
    if arr.ndim == 0:
        return result(input.clone(), _wrap(np.zeros((), np.int64)))
    if arr.shape[d] == 0:
        raise IndexError(
            f"{name}(): Expected reduction dim {dim} to have non-zero size.")
    if arr.dtype.kind != "f":
        f = np.argmin if is_min else np.argmax
        idx = np.expand_dims(f(arr, axis=d), d)
        vals = np.take_along_axis(arr, idx, axis=d)
        if not keepdim:
            idx, vals = np.squeeze(idx, d), np.squeeze(vals, d)
        return result(_wrap(vals), _wrap(idx.astype(np.int64)))
    values, indices = (_MinDim if is_min else _ExtremeDim).apply(
        input, d, bool(keepdim), is_min)
    return result(values, indices)


@op("max", methods=("max",), primitive=True, kind="reduce")
@np_aliases
def max(input, dim=None, keepdim=False):
    """Largest element; with ``dim``, ``(values, indices)`` along it.

    Gradient: with ``dim`` it goes to the returned index (first of ties);
    over all elements it is split evenly among the tied maxima.  With a
    tensor as second argument this is ``maximum``.
    """
    return _extreme(input, dim, keepdim, False, "max")


@op("min", methods=("min",), primitive=True, kind="reduce")
@np_aliases
def min(input, dim=None, keepdim=False):
    """Smallest element; with ``dim``, ``(values, indices)`` (see ``max``)."""
    return _extreme(input, dim, keepdim, True, "min")


def _arg_extreme(input, dim, keepdim, is_min):
    arr = input._arr
    d = None if dim is None or arr.ndim == 0 else _canon_dim(dim, arr.ndim)
    if (arr.dtype.type in _KERNEL_FLOATS and arr.size and arr.flags.c_contiguous
            and (dim is None or d == arr.ndim - 1)):
        # all elements, or the last dim of a contiguous array: the compiled
        # row extremes' indices (first NaN wins), no values node
        x2 = arr.reshape(1, -1) if dim is None else arr.reshape(-1, arr.shape[-1])
        idx = np.empty(x2.shape[0], np.int64)
        _R.extreme_dim_fwd(x2, np.empty(x2.shape[0], arr.dtype), idx, is_min)
        if dim is None:
            return _wrap(idx.reshape(()))
        return _wrap(idx.reshape(arr.shape[:-1] + ((1,) if keepdim else ())))
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


@op("argmax", methods=("argmax",), kind="index")
@np_aliases
def argmax(input, dim=None, keepdim=False):
    """Index of the first largest element (NaN counts as largest); no gradient."""
    return _arg_extreme(input, dim, keepdim, False)


@op("argmin", methods=("argmin",), kind="index")
@np_aliases
def argmin(input, dim=None, keepdim=False):
    """Index of the first smallest element (NaN first); no gradient."""
    return _arg_extreme(input, dim, keepdim, True)


# --- amax / amin ------------------------------------------------------------------------

class AMax(Function):
    """out = max (or min) over ``axes``; grad = g split evenly among the
    elements equal to it (torch's amax/amin rule; NaN counts as equal to NaN)."""

    _node_name = "AmaxBackward0"

    @staticmethod
    def forward(ctx, x, axes, keepdim, is_min):
        arr = x._arr
        kept = _kept_shape(arr.shape, axes)
        if (axes == (arr.ndim - 1,) and arr.size and arr.flags.c_contiguous
                and arr.dtype.type in _KERNEL_FLOATS):
            # the last dim of a contiguous array: the compiled row extremes
            # (NumPy's reduction of short rows cost 45 ns a row)
            x2 = arr.reshape(-1, arr.shape[-1])
            val = np.empty(x2.shape[0], arr.dtype)
            _R.extreme_dim_fwd(x2, val, np.empty(x2.shape[0], np.int64), is_min)
            val = val.reshape(kept)
        else:
            val = (np.min if is_min else np.max)(arr, axis=axes, keepdims=True)
        ctx.val, ctx.axes, ctx.kept, ctx.in_shape = val, axes, kept, arr.shape
        ctx.save_for_backward(x)
        return _wrap(val.reshape(kept if keepdim else tuple(
            s for i, s in enumerate(arr.shape) if i not in axes)).copy())

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        arr, val = x._arr, ctx.val
        mask = arr == val
        if np.isnan(val).any():
            mask |= np.isnan(arr) & np.isnan(val)
        count = np.sum(mask, axis=ctx.axes, keepdims=True)
        xp = _ns()
        if xp is _NumpyNS:     # one pass: where(mask, g / count, 0)
            share = np.divide(xp.val(g).reshape(ctx.kept), count, dtype=arr.dtype)
            return xp.out(np.where(mask, share, arr.dtype.type(0))), None, None, None
        scale = np.divide(mask, count, dtype=arr.dtype)
        gv = xp.broadcast_to(xp.reshape(xp.val(g), ctx.kept), ctx.in_shape)
        return xp.out(xp.const(scale) * gv), None, None, None


class AMin(AMax):
    _node_name = "AminBackward0"


def _amax(input, dim, keepdim, is_min, name):
    arr = input._arr
    whole = dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0)
    axes = _dims(None if whole else dim, arr.ndim)
    if arr.size == 0:
        if whole:
            raise RuntimeError(
                f"{name}(): Expected reduction dim to be specified for input.numel() "
                "== 0. Specify the reduction dim with the 'dim' argument.")
        for a in axes:
            if arr.shape[a] == 0:
                raise IndexError(
                    f"{name}(): Expected reduction dim {a} to have non-zero size.")
    if arr.dtype.kind != "f":
        f = np.min if is_min else np.max
        return _wrap(np.asarray(f(arr, axis=axes, keepdims=bool(keepdim))))
    return (AMin if is_min else AMax).apply(input, axes, bool(keepdim), is_min)


@op("amax", methods=("amax",), primitive=True, kind="reduce")
@np_aliases
def amax(input, dim=(), keepdim=False):
    """Largest value over ``dim`` (all dims when empty); grad = g split evenly
    among the tied maxima."""
    return _amax(input, dim, keepdim, False, "amax")


@op("amin", methods=("amin",), primitive=True, kind="reduce")
@np_aliases
def amin(input, dim=(), keepdim=False):
    """Smallest value over ``dim`` (all dims when empty); grad = g split evenly
    among the tied minima."""
    return _amax(input, dim, keepdim, True, "amin")


# --- logical reductions and counts -------------------------------------------------------

def _logical(input, dim, keepdim, f):
    arr = input._arr
    axes = _dims(dim, arr.ndim) if arr.ndim else None
    out = np.asarray(f(arr, axis=axes, keepdims=bool(keepdim)))
    return _wrap(out.astype(np.uint8) if arr.dtype == np.uint8 else out)


@op("all", methods=("all",), kind="compare")
@np_aliases
def all(input, dim=None, keepdim=False):
    """True where every element over ``dim`` (int, tuple, or all) is nonzero;
    bool (uint8 for uint8 input), no gradient."""
    return _logical(input, dim, keepdim, np.all)


@op("any", methods=("any",), kind="compare")
@np_aliases
def any(input, dim=None, keepdim=False):
    """True where some element over ``dim`` is nonzero; bool (uint8 for uint8
    input), no gradient."""
    return _logical(input, dim, keepdim, np.any)


@op("count_nonzero", methods=("count_nonzero",), kind="index")
@np_aliases
def count_nonzero(input, dim=None):
    """Number of nonzero elements over ``dim`` (int, tuple, or all); int64."""
    arr = input._arr
    axes = _dims(dim, arr.ndim) if arr.ndim else None
    return _wrap(np.asarray(np.count_nonzero(arr, axis=axes), dtype=np.int64))


