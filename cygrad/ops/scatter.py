"""Gathers and scatters along a dim: ``gather``, ``scatter`` (and its
``reduce=``), ``scatter_add``, ``scatter_reduce``, ``index_select``,
``index_add``, ``index_copy``, ``index_fill``, ``index_put``, ``take``,
``take_along_dim``, ``put_``, with their in-place forms.

Most are composites of indexing's primitives: ``GetItem`` (a gather; its
backward adds over repeats), ``PutItem`` (zeros with values added at an index)
and the differentiable write of ``setitem``.  ``gather(x, dim, index)`` is
``x[adv]`` with ``adv`` the index along ``dim`` and open aranges elsewhere, so
gradients, double backward and the fast NumPy paths come from those ops.
``scatter_reduce`` is the one primitive here.  Every index is checked (dtype,
shape, bounds) before anything is read or written.
"""

import math

import numpy as np

from cygrad._kernels import engine as _engine
from cygrad._kernels import select as _select_k
from cygrad._kernels.engine import TensorBase, _wrap, is_grad_enabled
from cygrad._tensor import Tensor, _canon_dim
from cygrad.autograd.function import Function
from cygrad.ops.indexing import AddAt, GetItem, _adv_shape, _norm_index
from cygrad.ops.inplace import _check_overlap, _inplace_apply, _write
from cygrad.ops.registry import _ns, _NumpyNS, op, xp_helper
from cygrad.ops.shape import clone, expand, reshape

_INTS = (np.dtype(np.int64), np.dtype(np.int32))
_ALL = (Ellipsis,)


# --- checks -----------------------------------------------------------------------------

def _index_arr(index, opname):
    if not isinstance(index, TensorBase):
        raise TypeError(f"{opname}(): argument 'index' must be Tensor, not "
                        f"{type(index).__name__}")
    a = index._arr
    if a.dtype not in _INTS:
        raise RuntimeError(f"{opname}(): Expected dtype int32/int64 for index")
    return a


def _along(index, dim, opname, size):
    """The open-mesh NumPy index that puts ``index`` along ``dim``: entry
    ``[i][j][k]`` of the result addresses ``x[i][index[i][j][k]][k]`` (dim 1).
    ``index`` values must lie in [0, size) (torch refuses negatives here)."""
    if index.size:
        lo, hi = int(index.min()), int(index.max())
        if lo < 0 or hi >= size:
            bad = lo if lo < 0 else hi
            raise RuntimeError(f"index {bad} is out of bounds for dimension {dim} "
                               f"with size {size}")
    nd = index.ndim
    parts = []
    for d, n in enumerate(index.shape):
        if d == dim:
            parts.append(index.astype(np.int64, copy=False))
        else:
            shape = [1] * nd
            shape[d] = n
            parts.append(np.arange(n).reshape(shape))
    return tuple(parts)


def _dim_index(input, dim, index, opname, src=None):
    """Checks shared by gather and the scatters; returns (dim, adv)."""
    x = input._arr
    idx = _index_arr(index, opname)
    nd = max(x.ndim, 1)
    dim = _canon_dim(dim, x.ndim)
    if idx.ndim != x.ndim and not (idx.size == 0 or (x.ndim == 0 and idx.ndim <= 1)):
        raise RuntimeError("Index tensor must have the same number of dimensions as "
                           "self tensor")
    xs = x.shape if x.ndim else (1,)
    ishape = idx.shape if idx.ndim else (1,)
    if src is None:
        for d in range(nd):
            if d != dim and ishape[d] > xs[d]:
                raise RuntimeError(
                    f"Size does not match at dimension {d} expected index "
                    f"{list(idx.shape)} to be no larger than self {list(x.shape)} "
                    f"apart from dimension {dim}")
    else:
        ss = src.shape if src.ndim else (1,)
        if len(ss) != nd or any((d != dim and ishape[d] > xs[d]) or ishape[d] > ss[d]
                                for d in range(nd)):
            raise RuntimeError(
                f"Expected index {list(idx.shape)} to be no larger than self "
                f"{list(x.shape)} apart from dimension {dim} and to be no larger "
                f"size than src {list(src.shape)}")
    if x.ndim == 0:
        idx = idx.reshape(-1)
    adv = _along(idx, dim, opname, xs[dim])
    if x.ndim == 0:
        adv = (adv[0][:0] if idx.size == 0 else np.zeros(idx.shape, np.int64)),
        return dim, None if idx.size else adv
    return dim, adv


def _src_part(src, shape):
    """``src`` cut to the index's extent (a view), as a Tensor."""
    if tuple(src._arr.shape) == tuple(shape):
        return src
    return GetItem.apply(src, tuple(slice(0, n) for n in shape) + _ALL, None)


def _as_value(value, like, opname):
    """A Tensor of ``like``'s dtype for a number or a tensor ``value``."""
    if isinstance(value, TensorBase):
        return value if value._arr.dtype == like._arr.dtype else value.to(
            like._arr.dtype)
    return _wrap(np.asarray(value, dtype=like._arr.dtype))


# --- gather and scatter_add along a dim: compiled loops -----------------------------------

_KFLOATS = (np.dtype(np.float32), np.dtype(np.float64))   # the kernels' real_t


def _blocks(shape, dim):
    """(outer, inner) of ``shape`` around ``dim``."""
    return math.prod(shape[:dim]), math.prod(shape[dim + 1:])


def _extent(shape, idx_shape, dim):
    """The slices that cut ``shape`` to the index's extent off ``dim`` (None
    when nothing is cut)."""
    if shape[:dim] == idx_shape[:dim] and shape[dim + 1:] == idx_shape[dim + 1:]:
        return None
    return tuple(slice(None) if d == dim else slice(0, n)
                 for d, n in enumerate(idx_shape))


def _gather_arrays(x, dim, idx):
    """x gathered along ``dim`` at ``idx`` (int64, C order, same ndim).  Out
    of range: RuntimeError, raised after the loop (``out`` is fresh)."""
    cut = _extent(x.shape, idx.shape, dim)
    sub = x if cut is None else x[cut]
    n = x.shape[dim]
    if x.dtype in _KFLOATS:
        src = sub if sub.flags.c_contiguous else np.ascontiguousarray(sub)
        out = np.empty(idx.shape, x.dtype)
        outer, inner = _blocks(idx.shape, dim)
        bad = _select_k.gather(src.reshape(-1), idx.reshape(-1), out.reshape(-1), outer,
                               n, idx.shape[dim], inner)
        if bad >= 0:
            raise RuntimeError(f"index {int(idx.reshape(-1)[bad])} is out of bounds "
                               f"for dimension {dim} with size {n}")
        return out
    _check_range(idx, n, dim)
    return np.take_along_axis(sub, idx, dim)


def _check_range(idx, n, dim):
    bad = _select_k.index_bad(idx.reshape(-1), n)
    if bad >= 0:
        raise RuntimeError(f"index {int(idx.reshape(-1)[bad])} is out of bounds for "
                           f"dimension {dim} with size {n}")


def _scatter_add_into(out, dim, idx, src):
    """out[..., idx[...], ...] += src along ``dim``, in index order (checked
    indices; src of idx's shape)."""
    cut = _extent(out.shape, idx.shape, dim)
    if out.dtype in _KFLOATS and cut is None and out.flags.c_contiguous:
        outer, inner = _blocks(idx.shape, dim)
        _select_k.scatter_add(out.reshape(-1), idx.reshape(-1),
                              np.ascontiguousarray(src, out.dtype).reshape(-1), outer,
                              out.shape[dim], idx.shape[dim], inner)
        return out
    np.add.at(out, _along(idx, dim, "scatter_add", out.shape[dim]), src)
    return out


class GatherDim(Function):
    """out[i][j][k] = x[i][index[i][j][k]][k] (dim 1); grad = zeros with g
    added at the index, in index order (repeats add)."""

    _node_name = "GatherBackward0"

    @staticmethod
    def forward(ctx, x, dim, idx):
        ctx.dim, ctx.idx, ctx.shape = dim, idx, x._arr.shape
        return _wrap(_gather_arrays(x._arr, dim, idx))

    @staticmethod
    def backward(ctx, g):
        xp = _ns()
        return (xp.out(xp.scatter_add_dim(xp.val(g), ctx.dim, ctx.idx, ctx.shape)),
                None, None)


def _scatter_add_dim(g, dim, idx, shape):
    return _scatter_add_into(np.zeros(shape, g.dtype), dim, idx, g)


class ScatterAddDim(Function):
    """out = zeros(shape) with g added at the index along dim (the adjoint of
    ``GatherDim``); grad = gg gathered."""

    _node_name = "ScatterAddBackward0"

    @staticmethod
    def forward(ctx, g, dim, idx, shape):
        ctx.dim, ctx.idx = dim, idx
        return _wrap(_scatter_add_dim(g._arr, dim, idx, shape))

    @staticmethod
    def backward(ctx, gg):
        return GatherDim.apply(gg, ctx.dim, ctx.idx), None, None, None


xp_helper("scatter_add_dim", _scatter_add_dim, ScatterAddDim.apply)


class ScatterAdd(Function):
    """out = x with src added at the index along dim, in index order;
    grad_x = g, grad_src = g gathered at the index."""

    _node_name = "ScatterAddBackward0"

    @staticmethod
    def forward(ctx, x, src, dim, idx):
        ctx.dim, ctx.idx = dim, idx
        return _wrap(_scatter_add_into(np.array(x._arr, order="C"), dim, idx,
                                       src._arr))

    @staticmethod
    def backward(ctx, g):
        gs = GatherDim.apply(g, ctx.dim, ctx.idx) if ctx.needs_input_grad[1] else None
        return g, gs, None, None


def _gather_checks(input, dim, index, opname, src=None):
    """dim, and the index as a C-ordered int64 array, for gather and the
    scatters (dtype, ndim and extents checked; bounds are the caller's)."""
    x = input._arr
    idx = _index_arr(index, opname)
    dim = _canon_dim(dim, x.ndim)
    if idx.ndim != x.ndim and idx.size:
        raise RuntimeError("Index tensor must have the same number of dimensions as "
                           f"{'input' if src is None else 'self'} tensor")
    for d in range(idx.ndim if idx.size else 0):
        if d != dim and idx.shape[d] > x.shape[d]:
            if src is None:
                raise RuntimeError(
                    f"Size does not match at dimension {d} expected index "
                    f"{list(idx.shape)} to be no larger than self {list(x.shape)} "
                    f"apart from dimension {dim}")
            break
    if src is not None and idx.size and (
            src.ndim != idx.ndim or any(
                (d != dim and idx.shape[d] > x.shape[d]) or idx.shape[d] > src.shape[d]
                for d in range(idx.ndim))):
        raise RuntimeError(
            f"Expected index {list(idx.shape)} to be no larger than self "
            f"{list(x.shape)} apart from dimension {dim} and to be no larger "
            f"size than src {list(src.shape)}")
    return dim, np.ascontiguousarray(idx, np.int64)


@op("gather", methods=("gather",), kind="gather")
def gather(input, dim, index, *, sparse_grad=False):
    """out[i][j][k] = input[i][index[i][j][k]][k] (for dim=1); grad = zeros with
    g added at the index (repeated indices add).  A compiled loop for float
    tensors; an index outside [0, size) raises RuntimeError."""
    if input._arr.ndim == 0:
        x1 = reshape(input, 1)
        dim, idx = _gather_checks(x1, dim, index, "gather")
        return reshape(GatherDim.apply(x1, 0, idx.reshape(-1)), index._arr.shape)
    if isinstance(index, TensorBase) and index._arr.ndim == 0:
        # a 0-d index counts as one of shape (1,), as torch (the result is 0-d)
        return reshape(gather(input, dim, reshape(index, 1)), ())
    dim, idx = _gather_checks(input, dim, index, "gather")
    if idx.size == 0:
        return _wrap(np.zeros(idx.shape, input._arr.dtype))
    return GatherDim.apply(input, dim, idx)


@op("take_along_dim", methods=("take_along_dim",), kind="gather")
def take_along_dim(input, indices, dim=None):
    """``gather`` of ``input`` and ``indices`` broadcast against each other
    (except along ``dim``); negative indices count from the end.  With
    ``dim=None`` both are flattened first."""
    idx = _index_arr(indices, "take_along_dim")
    if dim is None:
        return take_along_dim(reshape(input, -1), reshape(indices, -1), 0)
    x = input._arr
    if x.ndim != idx.ndim:
        raise RuntimeError("torch.take_along_dim(): input and indices should have "
                           f"the same number of dimensions, but got {x.ndim} "
                           f"dimensions for input, and {idx.ndim} dimensions for "
                           "indices")
    dim = _canon_dim(dim, x.ndim)
    size = x.shape[dim] if x.ndim else 1
    if idx.size and (int(idx.min()) < -size or int(idx.max()) >= size):
        bad = int(idx.min()) if int(idx.min()) < -size else int(idx.max())
        raise RuntimeError(f"index {bad} is out of bounds for dimension {dim} with "
                           f"size {size}")
    try:
        bx = list(np.broadcast_shapes(
            tuple(1 if d == dim else s for d, s in enumerate(x.shape)),
            tuple(1 if d == dim else s for d, s in enumerate(idx.shape))))
    except ValueError:
        raise RuntimeError(f"take_along_dim(): the shapes of input {list(x.shape)} "
                           f"and indices {list(idx.shape)} do not broadcast apart "
                           f"from dimension {dim}") from None
    xs, js = list(bx), list(bx)
    xs[dim], js[dim] = size, idx.shape[dim]
    if tuple(xs) != x.shape:
        input = expand(input, xs)
    wrapped = np.where(idx < 0, idx + size, idx) if idx.size and idx.min() < 0 else idx
    return gather(input, dim, _wrap(np.broadcast_to(wrapped, js)))


@op("take", methods=("take",), kind="gather")
def take(input, index):
    """out = input.flatten()[index] (shape of ``index``; negatives count from
    the end); grad = zeros with g added at the index."""
    idx = _index_arr(index, "take")
    n = input._arr.size
    if idx.size and (int(idx.max()) >= n or int(idx.min()) < -n):
        bad = int(idx.max()) if int(idx.max()) >= n else int(idx.min())
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of "
                         f"{n} elements.")
    return GetItem.apply(reshape(input, -1), _ALL, (idx.astype(np.int64, copy=False),))


# --- scatter ----------------------------------------------------------------------------

def _zero_dim(*ts):
    return any(isinstance(t, TensorBase) and t._arr.ndim == 0 for t in ts)


def _one_d(t):
    return reshape(t, 1) if isinstance(t, TensorBase) and t._arr.ndim == 0 else t


@op("scatter", methods=("scatter",), kind="gather")
def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    """out = input with out[i][index[i][j]] = src[i][j] (dim=1) or = value;
    grad_input = g with the written positions zeroed, grad_src = g gathered.
    Of repeated indices the last write wins.  ``reduce='add'``/``'multiply'``
    combine instead (as ``scatter_reduce`` with 'sum'/'prod')."""
    if src is None and value is None:
        raise TypeError("scatter() missing 1 required positional argument: 'src' "
                        "or 'value'")
    if src is None:
        src = value
    if _zero_dim(input, index, src):
        # torch counts a 0-d self, index or src as one of shape (1,)
        out = scatter(_one_d(input), dim, _one_d(index), _one_d(src), reduce=reduce)
        return out if input._arr.ndim else reshape(out, ())
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise RuntimeError("reduce argument must be either add or multiply.")
        if not isinstance(src, TensorBase):
            src = _wrap(np.full(index._arr.shape, src, input._arr.dtype))
        return scatter_reduce(input, dim, index, src,
                              "sum" if reduce == "add" else "prod")
    if isinstance(src, TensorBase):
        dim, adv = _dim_index(input, dim, index, "scatter", src._arr)
        val = _src_part(_as_value(src, input, "scatter"), index._arr.shape)
    else:
        dim, adv = _dim_index(input, dim, index, "scatter")
        val = _as_value(src, input, "scatter")
    out = clone(input)
    if adv is not None:
        _write(out, _ALL, adv, val, "scatter")
    return out


@op("scatter_add", methods=("scatter_add",), kind="gather")
def scatter_add(input, dim, index, src):
    """out = input with src[i][j] added at out[i][index[i][j]] (dim=1; repeats
    add); grad_input = g, grad_src = g gathered at the index."""
    if not isinstance(src, TensorBase):
        raise TypeError("scatter_add(): argument 'src' (position 3) must be Tensor, "
                        f"not {type(src).__name__}")
    x1 = input if input._arr.ndim else reshape(input, 1)
    s1 = src if src._arr.ndim else reshape(src, 1)
    dim, idx = _gather_checks(x1, dim, index if index._arr.ndim else
                              reshape(index, 1), "scatter_add", s1._arr)
    if idx.size == 0:
        return clone(input)
    _check_range(idx, x1._arr.shape[dim], dim)
    val = _src_part(_as_value(s1, input, "scatter_add"), idx.shape)
    out = ScatterAdd.apply(x1, val, dim, idx)
    return out if input._arr.ndim else reshape(out, ())


_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def _reduce_init(reduce, dtype):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    big = np.inf if dtype.kind == "f" else np.iinfo(dtype).max
    return -big if reduce == "amax" else big


class ScatterReduce(Function):
    """out = input with src reduced into it at the index along a dim.

    sum: grad_input = g (0 where written, without include_self), grad_src = g
    gathered; mean: both divided by the count at the target; amax/amin: g
    shared evenly by every element equal to the result (torch's rule for
    ties, which counts input's tie even with include_self=False); prod: g * out / element, with zeros handled exactly (one zero: the
    product of the others; two or more: 0).
    """

    _node_name = "ScatterReduceBackward0"

    @staticmethod
    def forward(ctx, x, src, adv, reduce, include_self):
        a, s = x._arr, src._arr
        out = a.copy()
        hit = np.zeros(a.shape, np.int64)     # how many src elements land here
        np.add.at(hit, adv, 1)
        if not include_self:
            out[hit > 0] = _reduce_init(reduce, a.dtype)
        if reduce in ("sum", "mean"):
            np.add.at(out, adv, s)
        elif reduce == "prod":
            np.multiply.at(out, adv, s)
        elif reduce == "amax":
            np.maximum.at(out, adv, s)
        else:
            np.minimum.at(out, adv, s)
        count = hit + (1 if include_self else 0)
        if reduce == "mean":
            c = np.maximum(count, 1)
            keep = count == 0
            out = np.where(keep, a, out // c if a.dtype.kind != "f" else out / c)
            out = out.astype(a.dtype, copy=False)
        ctx.adv, ctx.reduce, ctx.include = adv, reduce, include_self
        ctx.hit, ctx.count = hit, count
        if x._requires_grad or src._requires_grad:
            ctx.x_arr, ctx.s_arr, ctx.out_arr = a.copy(), s, out
            ctx.save_for_backward(x, src)
        return _wrap(out)

    @staticmethod
    def backward(ctx, g):
        xp = _ns()
        gv = xp.val(g)
        adv, red, inc = ctx.adv, ctx.reduce, ctx.include
        hit, count = ctx.hit, ctx.count
        self_on = np.ones(hit.shape, bool) if inc else hit == 0
        if red == "sum":
            w_self, w_src = self_on.astype(gv.dtype), None
        elif red == "mean":
            c = np.maximum(count, 1).astype(gv.dtype)
            w_self, w_src = self_on / c, (1 / c)[adv]
        elif red in ("amax", "amin"):
            x, s, out = ctx.x_arr, ctx.s_arr, ctx.out_arr
            # torch counts input's tie even when include_self=False leaves
            # it out (so the src's shares then sum to less than g): as torch.
            tie_self = x == out
            tie_src = s == out[adv]
            ties = tie_self.astype(np.int64)
            tie_self = tie_self & self_on
            np.add.at(ties, adv, tie_src.astype(np.int64))
            ties = np.maximum(ties, 1).astype(gv.dtype)
            w_self, w_src = tie_self / ties, tie_src / ties[adv]
        else:
            return _prod_backward(ctx, xp, g, gv, self_on)
        gx = xp.out(gv * xp.const(w_self.astype(gv.dtype))) if ctx.needs_input_grad[0] \
            else None
        gs = None
        if ctx.needs_input_grad[1]:
            gs = GetItem.apply(g, _ALL, adv) if xp is not _NumpyNS else None
            gs = gv[adv] if gs is None else xp.val(gs)
            if w_src is not None:
                gs = gs * xp.const(w_src.astype(gv.dtype))
            gs = xp.out(gs)
        return gx, gs, None, None, None


def _prod_backward(ctx, xp, g, gv, self_on):
    adv = ctx.adv
    x, s, out = ctx.x_arr, ctx.s_arr, ctx.out_arr
    zeros = np.where(self_on, x == 0, False).astype(np.int64)
    np.add.at(zeros, adv, (s == 0).astype(np.int64))
    if not zeros.any():
        if xp is _NumpyNS:
            gx = np.where(self_on, gv * out / np.where(x == 0, 1, x), 0)
            gs = (gv * out)[adv] / s
        else:
            xt, st = ctx.saved_tensors
            outt = ScatterReduce.apply(xt, st, adv, "prod", ctx.include)
            go = g * outt
            gx = go / xt * _wrap(self_on.astype(gv.dtype))
            gs = GetItem.apply(go, _ALL, adv) / st
    else:
        if xp is not _NumpyNS:
            raise NotImplementedError(
                "scatter_reduce(reduce='prod'): the second derivative with a zero "
                "among the reduced elements is not implemented in cygrad")
        # The product of the non-zero elements at each target.
        nz = np.where(self_on & (x != 0), x, 1).astype(out.dtype)
        np.multiply.at(nz, adv, np.where(s != 0, s, 1))
        one = zeros == 1
        safe_x = np.where(x == 0, 1, x)
        safe_s = np.where(s == 0, 1, s)
        gx = np.where(self_on & (zeros == 0), gv * out / safe_x, 0)
        gx = np.where(self_on & one & (x == 0), gv * nz, gx)
        z_at, one_at, nz_at = zeros[adv], one[adv], nz[adv]
        go = gv[adv]
        gs = np.where(z_at == 0, go * out[adv] / safe_s, 0)
        gs = np.where(one_at & (s == 0), go * nz_at, gs)
    return (xp.out(gx) if ctx.needs_input_grad[0] else None,
            xp.out(gs) if ctx.needs_input_grad[1] else None, None, None, None)


@op("scatter_reduce", methods=("scatter_reduce",), kind="gather")
def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """out = input with src reduced in at the index along ``dim``: 'sum',
    'prod', 'mean', 'amax' or 'amin'; ``include_self=False`` leaves input's
    values out of the reduction where something is scattered.  Gradients as
    torch (see ``ScatterReduce``)."""
    if reduce not in _REDUCES:
        raise RuntimeError("reduce argument must be either sum, prod, mean, amax or "
                           f"amin, got {reduce}")
    if not isinstance(src, TensorBase):
        raise TypeError("scatter_reduce(): argument 'src' (position 4) must be "
                        f"Tensor, not {type(src).__name__}")
    dim, adv = _dim_index(input, dim, index, "scatter_reduce", src._arr)
    if adv is None:
        return clone(input)
    val = _src_part(_as_value(src, input, "scatter_reduce"), index._arr.shape)
    x = input if input._arr.ndim else reshape(input, 1)
    out = ScatterReduce.apply(x, val, adv, reduce, include_self)
    return out if input._arr.ndim else reshape(out, ())


# --- along one dim: index_* ---------------------------------------------------------------

def _dim_vector(input, dim, index, opname, err=IndexError, negatives=True):
    """(dim, adv) for an index vector along ``dim``: adv puts it at ``dim``."""
    idx = _index_arr(index, opname)
    if idx.ndim > 1:
        raise IndexError(f"{opname}(): Index is supposed to be a vector")
    idx = idx.reshape(-1)
    nd = input._arr.ndim
    dim = _canon_dim(dim, nd)
    size = input._arr.shape[dim] if nd else 1
    if idx.size:
        lo, hi = int(idx.min()), int(idx.max())
        if hi >= size or lo < (-size if negatives else 0):
            bad = hi if hi >= size else lo
            if opname == "index_select":
                raise IndexError("index out of range in self")
            prefix = "index_copy_(): " if opname == "index_copy" else ""
            raise err(f"{prefix}index {bad} is out of bounds for dimension {dim} "
                      f"with size {size}")
    adv = (slice(None),) * dim + (idx.astype(np.int64, copy=False),)
    return dim, adv


def _source_check(input, dim, index, source, opname):
    want = list(input._arr.shape)
    if want:
        want[dim] = index._arr.size
    if list(source._arr.shape) != want and not (not want and source._arr.size ==
                                                index._arr.size):
        if opname == "index_add" and source._arr.ndim and \
                source._arr.shape[dim if dim < source._arr.ndim else 0] != \
                index._arr.size:
            raise RuntimeError(
                f"index_add_(): Number of indices ({index._arr.size}) should be "
                f"equal to source.size(dim): ({source._arr.shape[dim]}), for dim: "
                f"{dim}")
        raise RuntimeError(f"{opname}_(): source of shape {list(source._arr.shape)} "
                           f"does not match the indexed shape {want} of self "
                           f"{list(input._arr.shape)} along dim {dim}")


@op("index_select", methods=("index_select",), kind="gather")
def index_select(input, dim, index):
    """out = input with only the entries ``index`` along ``dim`` (in that
    order); grad = zeros with g added back at the index (repeats add)."""
    dim, adv = _dim_vector(input, dim, index, "index_select", negatives=False)
    if input._arr.ndim == 0:
        return GetItem.apply(reshape(input, 1), _ALL, adv)
    return GetItem.apply(input, _ALL, adv)


@op("index_add", methods=("index_add",), kind="gather")
def index_add(input, dim, index, source, *, alpha=1):
    """out = input with ``alpha * source`` added at ``index`` along ``dim``
    (repeats add); grad_input = g, grad_source = alpha * g selected at the
    index."""
    dim, adv = _dim_vector(input, dim, index, "index_add", RuntimeError,
                           negatives=False)
    _source_check(input, dim, index, source, "index_add")
    src = _as_value(source, input, "index_add")
    if alpha != 1:
        src = src * alpha
    if input._arr.ndim == 0:
        return input + reshape(src, ()).sum() if index._arr.size else clone(input)
    return AddAt.apply(input, src, _ALL, adv)


@op("index_copy", methods=("index_copy",), kind="gather")
def index_copy(input, dim, index, source):
    """out = input with the entries ``index`` along ``dim`` replaced by
    ``source``; grad_input = g zeroed there, grad_source = g selected."""
    dim, adv = _dim_vector(input, dim, index, "index_copy", negatives=False)
    _source_check(input, dim, index, source, "index_copy")
    out = clone(input)
    _write(out, _ALL, adv if input._arr.ndim else None,
           _as_value(source, input, "index_copy"), "index_copy")
    return out


@op("index_fill", methods=("index_fill",), kind="gather")
def index_fill(input, dim, index, value):
    """out = input with the entries ``index`` along ``dim`` set to ``value``
    (a number or a 0-d tensor, which gets their summed gradient)."""
    dim, adv = _dim_vector(input, dim, index, "index_fill")
    if isinstance(value, TensorBase) and value._arr.ndim:
        raise RuntimeError("index_fill_ only supports a 0-dimensional value tensor, "
                           f"but got tensor with {value._arr.ndim} dimension(s).")
    out = clone(input)
    _write(out, _ALL, adv if input._arr.ndim else None,
           _as_value(value, input, "index_fill"), "index_fill")
    return out


def _put_index(input, indices):
    if not isinstance(indices, (tuple, list)):
        raise TypeError("index_put(): argument 'indices' must be tuple of Tensors")
    return _norm_index(tuple(indices), input._arr.shape)


@op("index_put", methods=("index_put",), kind="gather")
def index_put(input, indices, values, accumulate=False):
    """out = input with ``values`` written at ``input[indices]`` (a tuple of
    index tensors); ``accumulate=True`` adds instead, repeats included."""
    basic, adv = _put_index(input, indices)
    vals = _as_value(values, input, "index_put")
    if not accumulate:
        out = clone(input)
        _write(out, basic, adv, vals, "index_put")
        return out
    view_shape = input._arr[basic].shape
    target = view_shape if adv is None else _adv_shape(view_shape, adv)
    if tuple(vals._arr.shape) != tuple(target):
        vals = expand(vals, target)
    return AddAt.apply(input, vals, basic, adv)


# --- in-place forms ---------------------------------------------------------------------

def _plain(self, *others):
    """True when an in-place op can write directly (nothing to record)."""
    if not is_grad_enabled():
        return True
    if self._requires_grad or (self._base is not None and self._base._requires_grad):
        return False
    return not any(isinstance(o, TensorBase) and o._requires_grad for o in others)


def scatter_(self, dim, index, src=None, value=None, *, reduce=None):
    """In-place ``scatter`` (``reduce='add'``/``'multiply'`` accepted)."""
    if src is None:
        src = value
    if reduce is None and _plain(self, src) and not _zero_dim(self, index, src):
        if isinstance(src, TensorBase):
            dim, adv = _dim_index(self, dim, index, "scatter", src._arr)
            val = src._arr[tuple(slice(0, n) for n in index._arr.shape)]
        else:
            dim, adv = _dim_index(self, dim, index, "scatter")
            val = src
        if adv is not None:
            _write(self, _ALL, adv, _as_value(val if isinstance(val, (int, float))
                                              else _wrap(val), self, "scatter_"),
                   "scatter_")
        return self
    return _inplace_apply(self, lambda t: scatter(t, dim, index, src, reduce=reduce),
                          "scatter_", src)


def scatter_add_(self, dim, index, src):
    """In-place ``scatter_add``."""
    return _inplace_apply(self, lambda t: scatter_add(t, dim, index, src),
                          "scatter_add_", src)


def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
    """In-place ``scatter_reduce``."""
    return _inplace_apply(
        self, lambda t: scatter_reduce(t, dim, index, src, reduce,
                                       include_self=include_self),
        "scatter_reduce_", src)


def index_add_(self, dim, index, source, *, alpha=1):
    """In-place ``index_add``; without a graph to record, one ``np.add.at``."""
    if _plain(self, source) and self._arr.ndim:
        d, adv = _dim_vector(self, dim, index, "index_add", RuntimeError,
                             negatives=False)
        _source_check(self, d, index, source, "index_add")
        vals = _as_value(source, self, "index_add_")._arr
        if alpha != 1:
            vals = vals * alpha
        _check_overlap(self)
        self._writable_check("index_add_")
        _engine._check_inplace(self, "index_add_")
        np.add.at(self._arr, adv, vals)
        _engine._mark_inplace(self, "index_add_")
        return self
    return _inplace_apply(self, lambda t: index_add(t, dim, index, source,
                                                    alpha=alpha),
                          "index_add_", source)


def index_copy_(self, dim, index, source):
    """In-place ``index_copy``."""
    d, adv = _dim_vector(self, dim, index, "index_copy", negatives=False)
    _source_check(self, d, index, source, "index_copy")
    _write(self, _ALL, adv if self._arr.ndim else None,
           _as_value(source, self, "index_copy_"), "index_copy_")
    return self


def index_fill_(self, dim, index, value):
    """In-place ``index_fill``."""
    d, adv = _dim_vector(self, dim, index, "index_fill")
    if isinstance(value, TensorBase) and value._arr.ndim:
        raise RuntimeError("index_fill_ only supports a 0-dimensional value tensor, "
                           f"but got tensor with {value._arr.ndim} dimension(s).")
    _write(self, _ALL, adv if self._arr.ndim else None,
           _as_value(value, self, "index_fill_"), "index_fill_")
    return self


def index_put_(self, indices, values, accumulate=False):
    """In-place ``index_put``; ``accumulate=True`` adds (repeats included)."""
    if not accumulate:
        basic, adv = _put_index(self, indices)
        _write(self, basic, adv, _as_value(values, self, "index_put_"), "index_put_")
        return self
    return _inplace_apply(self, lambda t: index_put(t, indices, values, True),
                          "index_put_", values)


def put_(self, index, source, accumulate=False):
    """self.flatten()[index] = source (in place; ``accumulate=True`` adds)."""
    idx = _index_arr(index, "put_")
    n = self._arr.size
    if idx.size and (int(idx.max()) >= n or int(idx.min()) < -n):
        bad = int(idx.max()) if int(idx.max()) >= n else int(idx.min())
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of "
                         f"{n} elements.")
    src = _as_value(source, self, "put_")
    if src._arr.size != idx.size:
        raise RuntimeError(f"put_(): Expected source and index to have the same "
                           f"number of elements, but got source with "
                           f"{src._arr.size} and index with {idx.size}")
    flat = (idx.reshape(-1).astype(np.int64, copy=False),)

    def fn(t):
        shape = t._arr.shape
        f = reshape(t, -1)
        v = reshape(src, -1)
        if accumulate:
            return reshape(AddAt.apply(f, v, _ALL, flat), shape)
        out = clone(f)
        _write(out, _ALL, flat, v, "put_")
        return reshape(out, shape)

    return _inplace_apply(self, fn, "put_", src)


@op("put", methods=("put",), kind="gather")
def put(input, index, source, accumulate=False):
    """out = input with ``out.flatten()[index] = source`` (``accumulate=True``
    adds, repeats included); grad_input = g (zeroed where written unless
    accumulating), grad_source = g at the index."""
    return put_(clone(input), index, source, accumulate)


Tensor.scatter_ = scatter_
Tensor.scatter_add_ = scatter_add_
Tensor.scatter_reduce_ = scatter_reduce_
Tensor.index_add_ = index_add_
Tensor.index_copy_ = index_copy_
Tensor.index_fill_ = index_fill_
Tensor.index_put_ = index_put_
Tensor.put_ = put_
