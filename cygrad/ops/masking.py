"""Masks, diagonals and positions: ``masked_fill``, ``masked_select``,
``masked_scatter``, ``nonzero``/``argwhere``, ``searchsorted``, ``bucketize``,
``tril``/``triu`` and their index forms, ``diag``, ``diagonal`` (a view),
``diag_embed`` and ``trace``.

``masked_fill`` and ``tril``/``triu`` are selects (the ``Where`` primitive:
an exact 0 gradient where the value was replaced); the mask ops gather with
``GetItem`` and write with ``setitem``'s differentiable write.  ``diagonal``
and its adjoint ``DiagonalPut`` are the primitives here.
"""

import numpy as np

from cygrad import dtypes as _dt
from cygrad._kernels import engine as _engine
from cygrad._kernels import select as _select_k
from cygrad._kernels.engine import TensorBase, _wrap
from cygrad._tensor import Tensor, _canon_dim
from cygrad.autograd.function import Function
from cygrad.ops.indexing import GetItem
from cygrad.ops.inplace import _check_overlap, _inplace_apply, _write
from cygrad.ops.registry import _ns, _NumpyNS, _view_of, op, xp_helper
from cygrad.ops.scatter import _plain
from cygrad.ops.select import Where
from cygrad.ops.shape import clone, expand, reshape

_ALL = (Ellipsis,)


def _bool_mask(mask, opname, msg=None):
    if not isinstance(mask, TensorBase):
        raise TypeError(f"{opname}(): argument 'mask' must be Tensor, not "
                        f"{type(mask).__name__}")
    if mask._arr.dtype != np.bool_:
        raise RuntimeError(msg or f"{opname} only supports boolean masks, but got "
                           f"mask with dtype {_dt.name(mask._arr.dtype)}")
    return mask


def _fill_value(value, input, opname):
    """``value`` (a number or a 0-d tensor) as a 0-d tensor of input's dtype."""
    if isinstance(value, TensorBase):
        if value._arr.ndim:
            raise RuntimeError(f"{opname} only supports a 0-dimensional value tensor, "
                               f"but got tensor with {value._arr.ndim} dimension(s).")
        if value._arr.dtype == input._arr.dtype:
            return value
        if value._requires_grad and input._arr.dtype.kind == "f":
            return value.to(input._arr.dtype)
        return _wrap(value._arr.astype(input._arr.dtype))
    try:
        return _wrap(np.asarray(value, dtype=input._arr.dtype))
    except (TypeError, ValueError):
        raise TypeError(f"{opname}(): value must be a number or a 0-d tensor, got "
                        f"{type(value).__name__}") from None


def _broadcast(a, b, what):
    try:
        return np.broadcast_shapes(a, b)
    except ValueError:
        raise RuntimeError(f"The size of tensor a ({list(a)}) must match the size of "
                           f"tensor b ({list(b)}) ({what})") from None


# --- masked_* ---------------------------------------------------------------------------

_KFLOATS = (np.dtype(np.float32), np.dtype(np.float64))   # the kernels' real_t


def _trailing_mask(x, mask):
    """The mask as flat uint8 when it covers x's trailing dims (leading 1s
    allowed) and x is a C-contiguous float array: the compiled path."""
    if x.dtype not in _KFLOATS or not x.flags.c_contiguous:
        return None
    ms = mask.shape
    k = 0
    while k < len(ms) and ms[k] == 1 and len(ms) - k > 0:
        k += 1
    core = ms[k:]
    if len(ms) > x.ndim or (core and tuple(x.shape[x.ndim - len(core):]) != core):
        return None
    # A sliced mask (``bias[:T, :T]``) is copied: T*T bytes, cheaper than
    # np.where's broadcast over the scores.
    return np.ascontiguousarray(mask).reshape(-1).view(np.uint8)


class MaskedFill(Function):
    """out = value where mask else x (mask over x's trailing dims, a number
    value); grad = g where not mask, an exact 0 under it (one compiled pass
    each way)."""

    _node_name = "MaskedFillBackward0"

    @staticmethod
    def forward(ctx, x, mask, flat, value):
        ctx.mask, ctx.flat = mask, flat
        arr = x._arr
        out = np.empty(arr.shape, arr.dtype)
        _select_k.masked_fill(arr.reshape(-1), flat, value, out.reshape(-1))
        return _wrap(out)

    @staticmethod
    def backward(ctx, g):
        xp = _ns()
        if xp is _NumpyNS:
            garr = np.ascontiguousarray(g._arr)
            out = np.empty(garr.shape, garr.dtype)
            _select_k.masked_fill(garr.reshape(-1), ctx.flat, 0.0, out.reshape(-1))
            return _wrap(out), None, None, None
        zero = _wrap(np.zeros((), g._arr.dtype))
        return Where.apply(_wrap(ctx.mask), zero, g), None, None, None


@op("masked_fill", methods=("masked_fill",), kind="select")
def masked_fill(input, mask, value):
    """out = value where mask else input (mask and input broadcast);
    grad_input = g where not mask (an exact 0 under the mask), grad_value =
    the sum of g under the mask.  ``mask`` must be bool; ``value`` a number or
    a 0-d tensor."""
    _bool_mask(mask, "masked_fill_")
    arr, m = input._arr, mask._arr
    if not isinstance(value, TensorBase) and isinstance(value, (int, float)) and \
            not isinstance(value, bool):
        flat = _trailing_mask(arr, m)
        if flat is not None:
            return MaskedFill.apply(input, m, flat, float(value))
    v = _fill_value(value, input, "masked_fill_")
    if arr.shape != m.shape:
        _broadcast(arr.shape, m.shape, "masked_fill")
    return Where.apply(mask, v, input)


def masked_fill_(self, mask, value):
    """In-place ``masked_fill``; ``mask`` must broadcast to self's shape."""
    _bool_mask(mask, "masked_fill_")
    v = _fill_value(value, self, "masked_fill_")
    shape = self._arr.shape
    if mask._arr.shape != shape and _broadcast(shape, mask._arr.shape,
                                               "masked_fill_") != shape:
        raise RuntimeError(f"output with shape {list(shape)} doesn't match the "
                           f"broadcast shape "
                           f"{list(np.broadcast_shapes(shape, mask._arr.shape))}")
    if _plain(self, v):
        _check_overlap(self)
        self._writable_check("masked_fill_")
        _engine._check_inplace(self, "masked_fill_")
        flat = _trailing_mask(self._arr, mask._arr)
        if flat is not None:
            a = self._arr.reshape(-1)
            _select_k.masked_fill(a, flat, float(v._arr), a)
        else:
            np.copyto(self._arr, v._arr, where=mask._arr)
        _engine._mark_inplace(self, "masked_fill_")
        return self
    return _inplace_apply(self, lambda t: masked_fill(t, mask, v), "masked_fill_", v)


@op("masked_select", methods=("masked_select",), kind="gather")
def masked_select(input, mask):
    """out = the elements of input (broadcast with mask) where mask holds, as
    a 1-D tensor in C order; grad = zeros with g put back there."""
    _bool_mask(mask, "masked_select", "masked_select: expected BoolTensor for mask")
    shape = _broadcast(input._arr.shape, mask._arr.shape, "masked_select")
    x = input if input._arr.shape == shape else expand(input, shape)
    m = np.broadcast_to(mask._arr, shape)
    if not shape:
        x, m = reshape(x, 1), m.reshape(1)
    return GetItem.apply(x, _ALL, np.nonzero(m))


@op("masked_scatter", methods=("masked_scatter",), kind="gather")
def masked_scatter(input, mask, source):
    """out = input with the positions where mask holds filled, in C order, by
    the leading elements of ``source``; grad_input = g zeroed there,
    grad_source = g at those positions (0 for the unused rest)."""
    _bool_mask(mask, "masked_scatter_")
    shape = _broadcast(input._arr.shape, mask._arr.shape, "masked_scatter")
    out = clone(input if input._arr.shape == shape else expand(input, shape))
    _scatter_into(out, np.broadcast_to(mask._arr, shape), source)
    return out


def _scatter_into(out, m, source):
    if not isinstance(source, TensorBase):
        raise TypeError("masked_scatter_(): argument 'source' must be Tensor, not "
                        f"{type(source).__name__}")
    n = int(np.count_nonzero(m))
    if source._arr.size < n:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    flat = reshape(source, -1)
    part = flat if flat._arr.size == n else GetItem.apply(flat, (slice(0, n),) + _ALL,
                                                          None)
    if part._arr.dtype != out._arr.dtype:
        part = part.to(out._arr.dtype)
    if out._arr.ndim == 0:
        if n:
            _write(out, _ALL, None, reshape(part, ()), "masked_scatter_")
        return
    _write(out, _ALL, np.nonzero(m), part, "masked_scatter_")


def masked_scatter_(self, mask, source):
    """In-place ``masked_scatter``; ``mask`` must broadcast to self's shape."""
    _bool_mask(mask, "masked_scatter_")
    shape = self._arr.shape
    if _broadcast(shape, mask._arr.shape, "masked_scatter_") != shape:
        raise RuntimeError(f"output with shape {list(shape)} doesn't match the "
                           f"broadcast shape "
                           f"{list(np.broadcast_shapes(shape, mask._arr.shape))}")
    _scatter_into(self, np.broadcast_to(mask._arr, shape), source)
    return self


Tensor.masked_fill_ = masked_fill_
Tensor.masked_scatter_ = masked_scatter_


# --- positions --------------------------------------------------------------------------

@op("nonzero", methods=("nonzero",), kind="index")
def nonzero(input, *, as_tuple=False):
    """The coordinates of the non-zero elements, int64, in C order: an
    (n, ndim) tensor, or with ``as_tuple=True`` one 1-D tensor per dim (a
    0-d input counts as 1-D)."""
    arr = input._arr
    if as_tuple:
        return tuple(_wrap(a) for a in np.nonzero(arr.reshape(1) if arr.ndim == 0
                                                  else arr))
    return _wrap(np.argwhere(arr).astype(np.int64, copy=False))


@op("argwhere", methods=("argwhere",), kind="index")
def argwhere(input):
    """The (n, ndim) int64 coordinates of the non-zero elements."""
    return nonzero(input)


def _values_arr(v):
    if isinstance(v, TensorBase):
        return v._arr, False
    return np.asarray(v), True


@op("searchsorted", kind="index")
def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
                 sorter=None):
    """For each value, the index at which it would be inserted in
    ``sorted_sequence`` (along its last dim) to keep it sorted: the first
    such index, or the last with ``right=True``/``side='right'``.  An N-D
    sequence pairs its rows with the rows of ``input``."""
    if side is not None and side not in ("left", "right"):
        raise RuntimeError("torch.searchsorted(): side can only be 'left' or 'right' "
                           f"but got {side}")
    if side == "left" and right:
        raise RuntimeError("torch.searchsorted(): side and right can't be set to "
                           "opposites, got side of left while right was True")
    how = "right" if right or side == "right" else "left"
    b = sorted_sequence._arr
    v, scalar = _values_arr(input)
    srt = None if sorter is None else sorter._arr
    if srt is not None and srt.shape != b.shape:
        raise RuntimeError("torch.searchsorted(): boundary and sorter must have the "
                           f"same size, but got boundary tensor {list(b.shape)} and "
                           f"got sorter tensor {list(srt.shape)}")
    dt = np.int32 if out_int32 else np.int64
    if b.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 "
                           "dimension or the first N-1 dimensions of boundaries "
                           "tensor and input value tensor must match")
    if b.ndim == 1:
        return _wrap(np.asarray(np.searchsorted(b, v, how, srt), dtype=dt))
    if scalar or v.shape[:-1] != b.shape[:-1]:
        raise RuntimeError(
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the "
            "first N-1 dimensions of boundaries tensor and input value tensor must "
            f"match, but we got boundaries tensor {list(b.shape)} and input value "
            f"tensor {list(v.shape)}")
    rows_b = b.reshape(-1, b.shape[-1])
    rows_v = v.reshape(-1, v.shape[-1])
    rows_s = None if srt is None else srt.reshape(-1, b.shape[-1])
    out = np.empty(rows_v.shape, dt)
    for i in range(rows_b.shape[0]):
        out[i] = np.searchsorted(rows_b[i], rows_v[i], how,
                                 None if rows_s is None else rows_s[i])
    return _wrap(out.reshape(v.shape))


@op("bucketize", methods=("bucketize",), kind="index")
def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each value: i with boundaries[i-1] < x <= boundaries[i]
    (``right=True``: boundaries[i-1] <= x < boundaries[i]); ``boundaries`` is
    1-D and sorted."""
    b = boundaries._arr
    if b.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim("
                           f"{b.ndim})")
    v, _ = _values_arr(input)
    return _wrap(np.asarray(np.searchsorted(b, v, "right" if right else "left"),
                            dtype=np.int32 if out_int32 else np.int64))


# --- triangles --------------------------------------------------------------------------

_TRI_MASKS = {}      # (rows, cols, diagonal, lower) -> read-only bool mask


def _tri_mask(input, diagonal, lower, opname):
    """The triangle's bool mask, built once per shape and diagonal (a model
    takes the same triangle every step; np.tri cost a third of the call)."""
    shape = input._arr.shape
    if len(shape) < 2:
        raise RuntimeError(f"{opname}: input tensor must have at least 2 dimensions")
    key = (shape[-2], shape[-1], int(diagonal), lower)
    keep = _TRI_MASKS.get(key)
    if keep is None:
        r, c, d = key[:3]
        keep = np.tri(r, c, d, dtype=bool) if lower else ~np.tri(r, c, d - 1, dtype=bool)
        keep.flags.writeable = False
        if len(_TRI_MASKS) < 64:
            _TRI_MASKS[key] = keep
    return keep


class _Tril(Where):
    """tril: where(the lower triangle, x, 0), under torch's node name."""

    _node_name = "TrilBackward0"


class _Triu(Where):
    """triu: where(the upper triangle, x, 0), under torch's node name."""

    _node_name = "TriuBackward0"


def _tri(input, diagonal, lower, opname):
    keep = _tri_mask(input, diagonal, lower, opname)
    return (_Tril if lower else _Triu).apply(_wrap(keep), input,
                                             _wrap(np.zeros((), input._arr.dtype)))


@op("tril", methods=("tril",), kind="select")
def tril(input, diagonal=0):
    """The lower triangle of the last two dims (on and below ``diagonal``),
    zeros above; grad = g there, exactly 0 above."""
    return _tri(input, diagonal, True, "tril")


@op("triu", methods=("triu",), kind="select")
def triu(input, diagonal=0):
    """The upper triangle of the last two dims (on and above ``diagonal``),
    zeros below; grad = g there, exactly 0 below."""
    return _tri(input, diagonal, False, "triu")


def _tri_(self, diagonal, lower, opname):
    keep = _tri_mask(self, diagonal, lower, opname)
    if _plain(self):
        _check_overlap(self)
        self._writable_check(opname)
        _engine._check_inplace(self, opname)
        np.copyto(self._arr, 0, where=~keep)
        _engine._mark_inplace(self, opname)
        return self
    return _inplace_apply(self, lambda t: _tri(t, diagonal, lower, opname), opname)


def tril_(self, diagonal=0):
    """In-place ``tril``."""
    return _tri_(self, diagonal, True, "tril_")


def triu_(self, diagonal=0):
    """In-place ``triu``."""
    return _tri_(self, diagonal, False, "triu_")


Tensor.tril_ = tril_
Tensor.triu_ = triu_


def _tri_indices(row, col, offset, dtype, lower, opname):
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    dt = np.dtype(np.int64) if dtype is None else np.dtype(_dt.to_numpy(dtype))
    f = np.tril_indices if lower else np.triu_indices
    return _wrap(np.stack(f(row, offset, col)).astype(dt))


@op("tril_indices", kind="index")
def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (2, n) coordinates of the lower triangle of a row x col matrix (on
    and below diagonal ``offset``), row by row."""
    return _tri_indices(row, col, offset, dtype, True, "tril_indices")


@op("triu_indices", kind="index")
def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (2, n) coordinates of the upper triangle of a row x col matrix (on
    and above diagonal ``offset``), row by row."""
    return _tri_indices(row, col, offset, dtype, False, "triu_indices")


# --- diagonals --------------------------------------------------------------------------

def _diag_view(arr, offset, d1, d2):
    """A writable view of arr's diagonal (offset over dims d1, d2), laid out
    as ``np.diagonal``'s: the other dims in order, then the diagonal."""
    cut = [slice(None)] * arr.ndim
    if offset >= 0:
        cut[d2] = slice(offset, None)
    else:
        cut[d1] = slice(-offset, None)
    base = arr[tuple(cut)]
    d = np.diagonal(base, 0, d1, d2)
    return np.lib.stride_tricks.as_strided(base, d.shape, d.strides,
                                           writeable=arr.flags.writeable)


def _diag_dims(ndim, dim1, dim2):
    d1, d2 = _canon_dim(dim1, ndim), _canon_dim(dim2, ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return d1, d2


class Diagonal(Function):
    """out = the diagonal of x over (dim1, dim2), a view; grad = zeros with g
    on that diagonal."""

    _node_name = "DiagonalBackward0"

    @staticmethod
    def forward(ctx, x, offset, d1, d2):
        ctx.args = (x._arr.shape, offset, d1, d2)
        return _view_of(x, _diag_view(x._arr, offset, d1, d2))

    @staticmethod
    def backward(ctx, g):
        xp = _ns()
        return xp.out(xp.diagonal_put(xp.val(g), *ctx.args)), None, None, None


def _diagonal_put(g, shape, offset, d1, d2):
    out = np.zeros(shape, g.dtype)
    _diag_view(out, offset, d1, d2)[...] = g
    return out


class DiagonalPut(Function):
    """out = zeros(shape) with g on the diagonal over (dim1, dim2) (the
    adjoint of ``Diagonal``); grad = the diagonal of gg."""

    _node_name = "DiagEmbedBackward0"

    @staticmethod
    def forward(ctx, g, shape, offset, d1, d2):
        ctx.args = (offset, d1, d2)
        return _wrap(_diagonal_put(g._arr, shape, offset, d1, d2))

    @staticmethod
    def backward(ctx, gg):
        return Diagonal.apply(gg, *ctx.args), None, None, None, None


xp_helper("diagonal_put", _diagonal_put, DiagonalPut.apply)


@op("diagonal", methods=("diagonal",), kind="shape")
def diagonal(input, offset=0, dim1=0, dim2=1):
    """The diagonal ``offset`` over dims (dim1, dim2), as a view whose last
    dim is the diagonal; grad = zeros with g on that diagonal."""
    d1, d2 = _diag_dims(input._arr.ndim, dim1, dim2)
    return Diagonal.apply(input, int(offset), d1, d2)


@op("diag_embed", methods=("diag_embed",), kind="shape")
def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """A tensor whose diagonal ``offset`` over (dim1, dim2) holds the last dim
    of ``input`` (zeros elsewhere); grad = that diagonal of g."""
    shape = input._arr.shape
    nd = len(shape) + 1
    d1, d2 = _diag_dims(nd, dim1, dim2)
    n = (shape[-1] if shape else 1) + abs(int(offset))
    rest = iter(shape[:-1])
    out = [n if d in (d1, d2) else next(rest) for d in range(nd)]
    x = input if shape else reshape(input, 1)
    return DiagonalPut.apply(x, tuple(out), int(offset), d1, d2)


@op("diag", methods=("diag",), kind="shape")
def diag(input, diagonal=0):
    """1-D input: the square matrix with input on diagonal ``diagonal``; 2-D:
    a copy of that diagonal."""
    nd = input._arr.ndim
    if nd == 1:
        return diag_embed(input, diagonal, 0, 1)
    if nd == 2:
        return clone(Diagonal.apply(input, int(diagonal), 0, 1))
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {nd}D")


@op("trace", methods=("trace",), kind="reduce")
def trace(input):
    """The sum of the main diagonal of a matrix; grad = g on the diagonal."""
    if input._arr.ndim != 2:
        raise RuntimeError("trace: expected a matrix, but got tensor with dim "
                           f"{input._arr.ndim}")
    d = Diagonal.apply(input, 0, 0, 1)
    return d.sum()

