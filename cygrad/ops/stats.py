"""Statistics composed of the reductions, sorts and gathers: nansum,
nanmean, nanmedian, quantile/nanquantile, cummax/cummin, logcumsumexp,
aminmax, cov, corrcoef, dist, renorm, trapezoid/cumulative_trapezoid, isin
and unique_consecutive.

Values chosen from the input (medians, quantile endpoints, running
extremes) are gathered with ``take_along_dim``, so their gradient goes to
the element chosen, as torch's does.
"""

import warnings

import numpy as np

from cygrad._kernels.engine import TensorBase, _wrap, is_grad_enabled
from cygrad._tensor import Tensor, _canon_dim
from cygrad.autograd.function import Function
from cygrad.creation import get_default_dtype
from cygrad.ops.inplace import _inplace_apply, _shaped_inplace
from cygrad.ops.linalg import DistNorm, _vector_norm
from cygrad.ops.mathextra import _tensor_arg
from cygrad.ops.out import _torch_name
from cygrad.ops.reductions import _TakeAlong, amax, amin
from cygrad.ops.registry import op, return_type
from cygrad.ops.select import where

_values_indices = {}


def _pair(name):
    cls = _values_indices.get(name)
    if cls is None:
        cls = _values_indices[name] = return_type(name, ["values", "indices"])
    return cls


# --- nansum, nanmean, nanmedian ------------------------------------------------------------

@op("nansum", methods=("nansum",), kind="reduce")
def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """out = the sum treating NaN as 0; grad = g where x is not NaN, else 0."""
    _tensor_arg(input, "nansum")
    x = input
    if x._arr.dtype.kind == "f" and bool(np.isnan(x._arr).any()):
        x = where(x.isnan(), 0.0, x)
    if dim is None and not keepdim:
        return x.sum(dtype=dtype)
    return x.sum(dim if dim is not None else tuple(range(x.ndim)), keepdim,
                 dtype=dtype)


@op("nanmean", methods=("nanmean",), kind="reduce")
def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """out = the mean of the non-NaN elements (NaN when there are none); grad =
    g / count where x is not NaN."""
    _tensor_arg(input, "nanmean")
    if input._arr.dtype.kind != "f" and dtype is None:
        raise RuntimeError(f"nanmean(): expected input to have floating point or "
                           f"complex dtype but got {_torch_name(input._arr.dtype)}")
    x = input if dtype is None else input.to(dtype)
    count = (~x.isnan()).sum(dim if dim is not None else tuple(range(x.ndim)),
                             keepdim)
    return nansum(x, dim, keepdim) / count


def _nan_last_sort(arr, axis):
    """Indices sorting ``arr`` along ``axis``, NaNs last, ties in order."""
    return np.argsort(arr, axis=axis, kind="stable")


@op("nanmedian", methods=("nanmedian",), kind="sort")
def nanmedian(input, dim=None, keepdim=False):
    """The lower median of the non-NaN elements (NaN if all are NaN): a 0-d
    tensor, or ``(values, indices)`` along ``dim``; grad = g at the element."""
    _tensor_arg(input, "nanmedian")
    arr = input._arr
    if dim is None:
        if arr.size == 0:
            return _wrap(np.full((), np.nan, arr.dtype))
        res = _nanmedian_dim(input.reshape(-1), 0, False)
        return res.values
    d = _canon_dim(dim, arr.ndim) if arr.ndim else 0
    if arr.ndim == 0:
        return _pair("nanmedian")(input.clone(), _wrap(np.zeros((), np.int64)))
    if arr.shape[d] == 0:
        raise IndexError(f"nanmedian(): Expected reduction dim {d} to have non-zero "
                         "size.")
    return _nanmedian_dim(input, d, keepdim)


def _nanmedian_dim(input, d, keepdim):
    arr = input._arr
    order = _nan_last_sort(arr, d)
    valid = (~np.isnan(arr)).sum(axis=d, keepdims=True) if arr.dtype.kind == "f" \
        else np.full(_kept(arr.shape, d), arr.shape[d])
    rank = np.maximum((valid - 1) // 2, 0)
    idx = np.take_along_axis(order, rank, axis=d)
    vals = _TakeAlong.apply(input, idx, d)
    if not keepdim:
        vals, idx = vals.squeeze(d), np.squeeze(idx, d)
    return _pair("nanmedian")(vals, _wrap(idx.astype(np.int64)))


def _kept(shape, d):
    return tuple(1 if i == d else s for i, s in enumerate(shape))


# --- quantile, nanquantile ---------------------------------------------------------------------

_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(fname, input, q, dim, keepdim, interpolation, ignore_nan):
    _tensor_arg(input, fname)
    arr = input._arr
    if arr.dtype not in (np.float32, np.float64):
        raise RuntimeError(f"{fname}() input tensor must be either float or double "
                           "dtype")
    if interpolation not in _MODES:
        raise RuntimeError(f"{fname}() interpolation must be one of linear, lower, "
                           f"higher, midpoint or nearest, but got {interpolation}")
    scalar_q = not isinstance(q, TensorBase)
    if scalar_q:
        qa = np.asarray([float(q)], arr.dtype)
    else:
        if q._arr.ndim > 1:
            raise RuntimeError(f"{fname}() q must be a scalar or 1D tensor")
        if q._arr.dtype != arr.dtype:
            raise RuntimeError(f"{fname}() q tensor must be same dtype as the input "
                               "tensor")
        qa = q._arr.reshape(-1)
    if arr.size == 0:
        raise RuntimeError(f"{fname}() input tensor must be non-empty")
    if ((qa < 0) | (qa > 1)).any():
        if scalar_q:
            raise RuntimeError(f"{fname}() q must be in the range [0, 1] but got "
                               f"{float(q)}")
        raise RuntimeError(f"{fname}() q values must be in the range [0, 1]")
    x = input.reshape(-1) if dim is None else input
    if x._arr.ndim == 0:
        x = x.reshape(1)
    d = 0 if dim is None else _canon_dim(dim, x._arr.ndim)
    xa = x._arr
    n = xa.shape[d]
    order = _nan_last_sort(xa, d)
    sorted_x = _TakeAlong.apply(x, order, d)
    nan_count = np.isnan(xa).sum(axis=d, keepdims=True)
    # the last valid rank: -1 when a row is all NaN (nanquantile)
    last = (n - nan_count - 1 if ignore_nan else np.full(nan_count.shape, n - 1))
    last = last.astype(np.float64)
    # ranks: one per q, on a new leading axis of the kept shape
    qs = qa.astype(np.float64).reshape((-1,) + (1,) * xa.ndim)
    rank = qs * last[None]
    if not ignore_nan:
        rank = np.where(nan_count[None] > 0, n - 1, rank)
    rank = np.where(last[None] < 0, 0.0, rank)       # all NaN: pick a NaN
    lo = np.floor(rank)
    hi = np.ceil(rank)
    if interpolation == "lower":
        hi = lo
    elif interpolation == "higher":
        lo = hi
    elif interpolation == "nearest":
        lo = hi = np.round(rank)      # half to even, as torch
    nq = qs.shape[0]
    expanded = sorted_x.unsqueeze(0).expand((nq,) + xa.shape)
    lo_i = lo.astype(np.int64)
    hi_i = hi.astype(np.int64)
    ax = d + 1
    vlo = _TakeAlong.apply(expanded, lo_i, ax)
    if interpolation in ("lower", "higher", "nearest"):
        out = vlo
    else:
        vhi = _TakeAlong.apply(expanded, hi_i, ax)
        if interpolation == "midpoint":
            out = vlo + (vhi - vlo) * 0.5
        else:
            w = _wrap((rank - lo).astype(xa.dtype))
            out = vlo + (vhi - vlo) * w
    # out: (nq, *kept shape)
    if dim is None:
        out = out.reshape((nq,) + ((1,) * input._arr.ndim if keepdim else ()))
    elif not keepdim:
        out = out.squeeze(ax)
    return out.squeeze(0) if scalar_q else out


@op("quantile", methods=("quantile",), kind="sort")
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The q-th quantiles along ``dim`` (of all elements if None), interpolating
    between the two nearest order statistics (``linear``, ``lower``,
    ``higher``, ``midpoint``, ``nearest``); a NaN in a row gives NaN. A tensor
    ``q`` adds a leading dim.  grad goes to the order statistics used."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


@op("nanquantile", methods=("nanquantile",), kind="sort")
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """``quantile`` of the non-NaN elements (NaN where a row has none)."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


# --- cummax, cummin, logcumsumexp ---------------------------------------------------------------

def _cum_extreme(fname, input, dim, accumulate):
    _tensor_arg(input, fname)
    arr = input._arr
    if arr.ndim == 0:
        return _pair(fname)(input.clone(), _wrap(np.zeros((), np.int64)))
    d = _canon_dim(dim, arr.ndim)
    if arr.size == 0:
        return _pair(fname)(input.clone(), _wrap(np.zeros(arr.shape, np.int64)))
    vals = accumulate(arr, axis=d)
    pos = np.arange(arr.shape[d]).reshape(
        tuple(arr.shape[d] if i == d else 1 for i in range(arr.ndim)))
    if arr.dtype.kind == "f":
        hit = (arr == vals) | (np.isnan(arr) & np.isnan(vals))
    else:
        hit = arr == vals
    idx = np.maximum.accumulate(np.where(hit, pos, 0), axis=d).astype(np.int64)
    index = _wrap(idx)
    return _pair(fname)(CumExtreme.apply(input, _wrap(vals), index, d), index)


class CumExtreme(Function):
    """out = the running extreme (computed by the caller); grad = g summed
    into the positions ``idx`` it came from (a running extreme repeats
    indices, whose gradients add up)."""

    _node_name = "CummaxBackward0"

    @staticmethod
    def forward(ctx, x, vals, idx, dim):
        ctx.idx, ctx.dim, ctx.shape = idx, dim, x._arr.shape
        return vals

    @staticmethod
    def backward(ctx, g):
        zeros = g.new_zeros(ctx.shape)
        return zeros.scatter_add(ctx.dim, ctx.idx, g), None, None, None


def _nan_max(a, axis):
    if a.dtype.kind == "f":
        return np.maximum.accumulate(a, axis=axis)   # NaN propagates
    if a.dtype == np.bool_:
        return np.logical_or.accumulate(a, axis=axis)
    return np.maximum.accumulate(a, axis=axis)


def _nan_min(a, axis):
    if a.dtype == np.bool_:
        return np.logical_and.accumulate(a, axis=axis)
    return np.minimum.accumulate(a, axis=axis)


@op("cummax", methods=("cummax",), kind="sort")
def cummax(input, dim):
    """``(values, indices)``: the running maximum along ``dim`` and the index
    of its latest occurrence (NaN, once seen, stays); grad = g at that index."""
    return _cum_extreme("cummax", input, dim, _nan_max)


@op("cummin", methods=("cummin",), kind="sort")
def cummin(input, dim):
    """``(values, indices)``: the running minimum along ``dim``, as cummax."""
    return _cum_extreme("cummin", input, dim, _nan_min)


class LogCumSumExp(Function):
    """out_j = log sum_{i<=j} exp(x_i) along ``dim`` (logaddexp accumulated:
    no overflow, no underflow); grad_i = sum_{j>=i} g_j exp(x_i - out_j),
    evaluated as exp(x_i + reversed logcumsumexp(log g_j - out_j)) for the
    positive and the negative parts of g (twice differentiable)."""

    _node_name = "LogcumsumexpBackward0"

    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        with np.errstate(all="ignore"):
            out = np.logaddexp.accumulate(x._arr, axis=dim)
        y = _wrap(out)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        d = ctx.dim
        if is_grad_enabled():     # create_graph: out as a function of x
            y = LogCumSumExp.apply(x, d)

        def rev(t):
            return LogCumSumExp.apply(t.flip([d]), d).flip([d])

        tiny = float(np.finfo(x._arr.dtype).tiny)

        def part(h):
            # log of h's positive part; the smallest normal float instead of
            # log(0) = -inf keeps every term finite (an -inf in a logcumsumexp
            # turns its own gradient into nan or garbage) and adds < 1e-37
            logh = where(h > 0, h, tiny).log()
            return (x + rev(logh - y)).exp()

        return part(g) - part(-g), None


@op("logcumsumexp", methods=("logcumsumexp",), kind="reduce")
def logcumsumexp(input, dim):
    """out_j = log(sum_{i<=j} exp(x_i)) along ``dim``, computed stably; grad_i =
    sum_{j>=i} g_j exp(x_i - out_j)."""
    _tensor_arg(input, "logcumsumexp")
    if input._arr.dtype.kind != "f":
        raise NotImplementedError(f'"logcumsumexp_out_cpu" not implemented for '
                                  f"'{_torch_name(input._arr.dtype)}'")
    x = input
    if x._arr.ndim == 0:
        return x.clone()
    return LogCumSumExp.apply(x, _canon_dim(dim, x._arr.ndim))


aminmax_result = return_type("aminmax", ["min", "max"])


@op("aminmax", methods=("aminmax",), kind="reduce")
def aminmax(input, *, dim=None, keepdim=False):
    """``(min, max)`` over ``dim`` (all elements if None); gradients as amin's
    and amax's (ties split evenly)."""
    _tensor_arg(input, "aminmax")
    if input._arr.size == 0 and dim is None:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty "
                           "dimension as the operation has no identity.")
    dims = () if dim is None else dim
    if dim is None and keepdim:
        dims = tuple(range(input._arr.ndim))
    return aminmax_result(amin(input, dims, keepdim), amax(input, dims, keepdim))


# --- cov, corrcoef, dist, renorm ---------------------------------------------------------------

@op("cov", methods=("cov",), kind="reduce")
def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the rows of ``input`` (variables) over its
    columns (observations), with frequency and observation weights;
    ``correction`` is subtracted from the weight sum.  Composed of
    differentiable ops."""
    _tensor_arg(input, "cov")
    if input._arr.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions "
                           f"but got an input with {input._arr.ndim} dimensions")
    x = input.reshape(1, -1) if input._arr.ndim < 2 else input
    if x._arr.dtype.kind != "f":
        x = x.to(get_default_dtype())
    n = x._arr.shape[1]
    w = None
    if fweights is not None:
        if fweights._arr.dtype.kind not in "iu":
            raise RuntimeError("cov(): expected fweights to have integral dtype but "
                               f"got fweights with {_torch_name(fweights._arr.dtype)}"
                               " dtype")
        if fweights._arr.ndim > 1 or fweights._arr.shape[-1:] != (n,):
            raise RuntimeError(f"cov(): expected fweights to have one dimension and "
                               f"the same number of elements as the observations "
                               f"({n})")
        if (fweights._arr < 0).any():
            raise RuntimeError("cov(): fweights cannot be negative")
        w = fweights.to(x.dtype)
    if aweights is not None:
        if aweights._arr.dtype.kind != "f":
            raise RuntimeError("cov(): expected aweights to have floating point dtype "
                               f"but got aweights with "
                               f"{_torch_name(aweights._arr.dtype)} dtype")
        if aweights._arr.ndim > 1 or aweights._arr.shape[-1:] != (n,):
            raise RuntimeError(f"cov(): expected aweights to have one dimension and "
                               f"the same number of elements as the observations "
                               f"({n})")
        if (aweights._arr < 0).any():
            raise RuntimeError("cov(): aweights cannot be negative")
        w = aweights if w is None else w * aweights
    if w is None:
        avg = x.mean(1)
        norm = n - correction
        w_sum = None
    else:
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
        if aweights is None:
            norm = w_sum - correction
        else:
            norm = w_sum - correction * (w * aweights).sum() / w_sum
    norm_val = float(norm._arr) if isinstance(norm, TensorBase) else float(norm)
    if norm_val <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be "
                      "strictly less than the number of observations.",
                      UserWarning, stacklevel=2)
        norm = norm * 0 if isinstance(norm, TensorBase) else 0.0
    xm = x - avg.unsqueeze(1)
    xw = xm if w is None else xm * w
    c = xw.matmul(xm.t()) / norm
    return c.squeeze()


@op("corrcoef", methods=("corrcoef",), kind="reduce")
def corrcoef(input):
    """The Pearson correlation matrix of the rows of ``input`` (cov divided by
    the standard deviations, clamped to [-1, 1])."""
    c = cov(input)
    if c._arr.ndim == 0:
        return c / c
    sd = c.diagonal().sqrt()
    c = c / sd.unsqueeze(1)
    c = c / sd.unsqueeze(0)
    return c.clamp(-1, 1)


@op("dist", methods=("dist",), kind="reduce")
def dist(input, other, p=2):
    """out = the p-norm of (input - other), broadcast; grad from the norm's."""
    _tensor_arg(input, "dist")
    _tensor_arg(other, "dist", "other", 2)
    return _vector_norm(DistNorm, (input - other).reshape(-1), p, None, False, None)


@op("renorm", methods=("renorm",), kind="reduce")
def renorm(input, p, dim, maxnorm):
    """out = each slice along ``dim`` rescaled to p-norm ``maxnorm`` where its
    norm exceeds it (by maxnorm / (norm + 1e-7)); grad through the norm too."""
    _tensor_arg(input, "renorm")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    nd = input._arr.ndim
    d = _canon_dim(dim, nd)
    others = tuple(i for i in range(nd) if i != d)
    norm = input.norm(p, dim=others, keepdim=True) if others else input.abs()
    factor = where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)
    return input * factor.to(input.dtype)


# --- trapezoid, cumulative_trapezoid --------------------------------------------------------------

def _spacing(y, x, dx, d, fname):
    n = y._arr.shape[d]
    if x is None:
        return dx if dx is not None else 1
    if x._arr.ndim == 1:
        if x._arr.shape[0] != n:
            raise RuntimeError(f"{fname}: There must be one `x` value for each sample "
                               "point")
        diff = x[1:] - x[:-1]
        shape = [1] * y._arr.ndim
        shape[d] = max(n - 1, 0)
        return diff.reshape(shape)
    xd = _canon_dim(d - y._arr.ndim, x._arr.ndim)
    size = x._arr.shape[xd]
    return x.narrow(xd, 1, size - 1) - x.narrow(xd, 0, size - 1)


def _trapezoid(fname, y, x, dx, dim, cumulative):
    _tensor_arg(y, fname, "y")
    if x is not None and dx is not None:
        raise TypeError(f"{fname}() received both x and dx")
    if y._arr.ndim == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    d = _canon_dim(dim, y._arr.ndim)
    n = y._arr.shape[d]
    yf = y if y._arr.dtype.kind == "f" else y.to(get_default_dtype())
    if n <= 1:
        return yf.narrow(d, 0, 0) if cumulative else yf.sum(d) * 0
    h = _spacing(yf, x, dx, d, fname)
    pairs = (yf.narrow(d, 1, n - 1) + yf.narrow(d, 0, n - 1)) * h / 2
    return pairs.cumsum(d) if cumulative else pairs.sum(d)


@op("trapezoid", kind="reduce")
def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoid rule along ``dim``: sum of (y[i+1] + y[i]) * dx_i / 2 with
    spacings from ``x`` or the constant ``dx`` (default 1)."""
    return _trapezoid("trapezoid", y, x, dx, dim, False)


@op("trapz", kind="reduce")
def trapz(y, x=None, *, dx=None, dim=-1):
    """Alias of ``trapezoid``."""
    return _trapezoid("trapz", y, x, dx, dim, False)


@op("cumulative_trapezoid", kind="reduce")
def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoid rule along ``dim`` (one element shorter)."""
    return _trapezoid("cumulative_trapezoid", y, x, dx, dim, True)


# --- isin, unique_consecutive -------------------------------------------------------------------

@op("isin", kind="compare")
def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """out[i] = whether elements[i] is in test_elements (bool, elements' shape);
    either may be a number."""
    if not isinstance(elements, TensorBase) and not isinstance(test_elements,
                                                               TensorBase):
        raise TypeError("isin() received an invalid combination of arguments")
    ea = elements._arr if isinstance(elements, TensorBase) else np.asarray(elements)
    ta = test_elements._arr if isinstance(test_elements, TensorBase) else \
        np.asarray(test_elements)
    return _wrap(np.isin(ea, ta.reshape(-1), invert=invert).reshape(ea.shape))


@op("unique_consecutive", methods=("unique_consecutive",), kind="index")
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """The input with each run of equal consecutive elements (or slices along
    ``dim``) kept once; optionally the index of each element's run and the
    runs' lengths."""
    _tensor_arg(input, "unique_consecutive")
    arr = input._arr
    if dim is None:
        flat = arr.reshape(-1)
        if flat.size == 0:
            starts = np.zeros(0, bool)
        else:
            starts = np.concatenate([[True], flat[1:] != flat[:-1]])
        out = flat[starts]
        inverse = (np.cumsum(starts) - 1).reshape(arr.shape)
    else:
        d = _canon_dim(dim, arr.ndim)
        moved = np.moveaxis(arr, d, 0).reshape(arr.shape[d], -1)
        if moved.shape[0] == 0:
            starts = np.zeros(0, bool)
        else:
            starts = np.concatenate([[True], (moved[1:] != moved[:-1]).any(axis=1)])
        out = np.compress(starts, arr, axis=d)
        inverse = np.cumsum(starts) - 1
    pos = np.flatnonzero(starts)
    counts = np.diff(np.append(pos, starts.size))
    res = [_wrap(np.ascontiguousarray(out))]
    if return_inverse:
        res.append(_wrap(inverse.astype(np.int64)))
    if return_counts:
        res.append(_wrap(counts.astype(np.int64)))
    return res[0] if len(res) == 1 else tuple(res)


@op("index_reduce", methods=("index_reduce",), kind="select")
def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """out = input with the slices of ``source`` reduced into the slices
    ``index`` along ``dim`` ('prod', 'mean', 'amax' or 'amin'; include_self as
    scatter_reduce); gradients those of scatter_reduce."""
    _tensor_arg(input, "index_reduce")
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, "
                           f"amax or amin but got {reduce}.")
    nd = input._arr.ndim
    d = _canon_dim(dim, nd) if nd else 0
    idx = index._arr.reshape(-1)
    if index._arr.ndim > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    src_shape = source._arr.shape if source._arr.ndim else (1,)
    if src_shape[d] != idx.size:
        raise IndexError(f"index_reduce_(): Number of indices ({idx.size}) should be "
                         f"equal to source.size(dim) ({src_shape[d]})")
    full = np.broadcast_to(idx.reshape(tuple(-1 if i == d else 1
                                            for i in range(len(src_shape)))),
                           src_shape)
    return input.scatter_reduce(d, _wrap(np.ascontiguousarray(full)),
                                source.reshape(src_shape), reduce,
                                include_self=include_self)


def _index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    """In-place ``index_reduce``."""
    return _inplace_apply(self, lambda t: index_reduce(
        t, dim, index, source, reduce, include_self=include_self), "index_reduce_",
        source)


def _install():
    Tensor.renorm_ = _shaped_inplace("renorm", renorm)
    Tensor.index_reduce_ = _index_reduce_


_install()
