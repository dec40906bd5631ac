"""Sorting and order statistics (sort, argsort, msort, topk, kthvalue,
median, mode, unique) and counting (bincount, histc, histogram).

Every order comes from one stable NumPy sort, so equal elements keep their
original order (torch's ``stable=True``; its default CPU sort is introsort,
which keeps that order only for 16 elements or fewer); NaN sorts as the
largest value.  ``_introsort_order`` reproduces torch's default order for
the short key lists where a program can see it (``pack_padded_sequence``'s
permutation of a batch).  The values of sort, topk,
kthvalue, median and mode are a gather of the input at the returned
indices, so their gradient is g put back at those indices.
"""


import numpy as np

from cygrad import dtypes as _dt
from cygrad._kernels import select as _S
from cygrad._kernels.engine import TensorBase, _wrap, is_grad_enabled
from cygrad._tensor import _canon_dim
from cygrad.ops.reductions import _TakeAlong
from cygrad.ops.registry import np_aliases, op, return_type

_Sort = return_type("sort", ["values", "indices"])
_Topk = return_type("topk", ["values", "indices"])
_Kth = return_type("kthvalue", ["values", "indices"])
_Median = return_type("median", ["values", "indices"])
_Mode = return_type("mode", ["values", "indices"])
_Hist = return_type("histogram", ["hist", "bin_edges"])


class _SortValues(_TakeAlong):
    _node_name = "SortBackward0"


class _TopkValues(_TakeAlong):
    _node_name = "TopkBackward0"


class _TopkKernel(_TakeAlong):
    """topk's values as ``select.topk_rows`` found them (with the indices);
    the backward is _TakeAlong's scatter at the indices."""

    _node_name = "TopkBackward0"

    @staticmethod
    def forward(ctx, x, idx, dim, vals):
        ctx.idx, ctx.dim, ctx.shape = idx, dim, x._arr.shape
        return _wrap(vals)

    @staticmethod
    def backward(ctx, g):
        return _TakeAlong.backward(ctx, g)[0], None, None, None


class _KthValues(_TakeAlong):
    _node_name = "KthvalueBackward0"


class _MedianValues(_TakeAlong):
    _node_name = "MedianBackward1"


class _ModeValues(_TakeAlong):
    _node_name = "ModeBackward0"


def _order(arr, axis, descending):
    """Stable argsort along ``axis``; NaN is the largest value."""
    if not descending:
        return np.argsort(arr, axis=axis, kind="stable")
    kind = arr.dtype.kind
    if kind == "f":
        nan = np.isnan(arr)
        key = np.where(nan, -np.inf, -arr)
        return np.lexsort((key, ~nan), axis=axis)
    return np.argsort(~arr, axis=axis, kind="stable")     # ints, uints, bool


def _introsort_order(keys, descending=False):
    """The permutation torch's default (``stable=False``) CPU sort gives for
    the 1-D sequence ``keys`` (numbers, no NaN): libstdc++'s ``std::sort``
    (introsort: median-of-three quicksort down to runs of 16, heapsort past
    the depth limit, one insertion sort at the end) run on (key, index)
    pairs that compare by key.  Equal keys end up in that algorithm's order,
    which differs from the stable order beyond 16 elements.  Plain Python:
    meant for short lists such as a batch's sequence lengths."""
    keys = [k.item() if hasattr(k, "item") else k for k in keys]
    a = list(range(len(keys)))
    if descending:
        def less(i, j):
            return keys[i] > keys[j]
    else:
        def less(i, j):
            return keys[i] < keys[j]

    def linear_insert(last):        # shift `a[last]` left past greater items
        val, prev = a[last], last - 1
        while less(val, a[prev]):
            a[last] = a[prev]
            last, prev = prev, prev - 1
        a[last] = val

    def insertion_sort(first, last):
        for i in range(first + 1, last):
            if less(a[i], a[first]):
                val = a[i]
                a[first + 1:i + 1] = a[first:i]
                a[first] = val
            else:
                linear_insert(i)

    def sift_down(first, hole, n, val):     # __adjust_heap then __push_heap
        top = child = hole
        while child < (n - 1) // 2:
            child = 2 * (child + 1)
            if less(a[first + child], a[first + child - 1]):
                child -= 1
            a[first + hole] = a[first + child]
            hole = child
        if n % 2 == 0 and child == (n - 2) // 2:
            child = 2 * (child + 1)
            a[first + hole] = a[first + child - 1]
            hole = child - 1
        parent = (hole - 1) // 2
        while hole > top and less(a[first + parent], val):
            a[first + hole] = a[first + parent]
            hole, parent = parent, (parent - 1) // 2
        a[first + hole] = val

    def heap_sort(first, last):
        n = last - first
        for parent in range((n - 2) // 2, -1, -1):
            sift_down(first, parent, n, a[first + parent])
        while last - first > 1:
            last -= 1
            val, a[last] = a[last], a[first]
            sift_down(first, 0, last - first, val)

    def median_to_first(result, x, y, z):
        if less(a[x], a[y]):
            pick = y if less(a[y], a[z]) else (z if less(a[x], a[z]) else x)
        elif less(a[x], a[z]):
            pick = x
        else:
            pick = z if less(a[y], a[z]) else y
        a[result], a[pick] = a[pick], a[result]

    def partition(first, last, pivot):
        while True:
            while less(a[first], a[pivot]):
                first += 1
            last -= 1
            while less(a[pivot], a[last]):
                last -= 1
            if first >= last:
                return first
            a[first], a[last] = a[last], a[first]
            first += 1

    def introsort(first, last, depth):
        while last - first > 16:
            if depth == 0:
                heap_sort(first, last)
                return
            depth -= 1
            median_to_first(first, first + 1, first + (last - first) // 2, last - 1)
            cut = partition(first + 1, last, first)
            introsort(cut, last, depth)
            last = cut

    n = len(a)
    if n > 1:
        introsort(0, n, 2 * (n.bit_length() - 1))
        insertion_sort(0, min(n, 16))
        for i in range(16, n):
            linear_insert(i)
    return np.array(a, dtype=np.int64)


def _gather(cls, input, idx, dim):
    """Values of ``input`` at ``idx`` along ``dim``: differentiable for floats."""
    if input._arr.dtype.kind == "f":
        return cls.apply(input, idx, dim)
    return _wrap(np.take_along_axis(input._arr, idx, axis=dim))


def _squeeze_dim(t, dim, keepdim):
    if keepdim:
        return t
    return t.squeeze(dim) if isinstance(t, TensorBase) else np.squeeze(t, dim)


@op("sort", methods=("sort",), kind="sort")
@np_aliases
def sort(input, dim=-1, descending=False, *, stable=False):
    """``(values, indices)`` sorted along ``dim`` (stable, NaN last ascending
    and first descending); grad = g put back at the indices."""
    if isinstance(dim, bool):
        raise TypeError("sort(): argument 'dim' must be int, not bool")
    arr = input._arr
    if arr.ndim == 0:
        return _Sort(input.clone(), _wrap(np.zeros((), np.int64)))
    d = _canon_dim(dim, arr.ndim)
    idx = _order(arr, d, bool(descending)).astype(np.int64, copy=False)
    return _Sort(_gather(_SortValues, input, idx, d), _wrap(idx))


@op("argsort", methods=("argsort",), kind="index")
@np_aliases
def argsort(input, dim=-1, descending=False, *, stable=False):
    """The indices that sort ``input`` along ``dim`` (stable); int64."""
    if input._arr.ndim == 0:
        return _wrap(np.zeros((), np.int64))
    d = _canon_dim(dim, input._arr.ndim)
    return _wrap(_order(input._arr, d, bool(descending)).astype(np.int64, copy=False))


@op("msort", methods=("msort",), kind="sort")
def msort(input):
    """``sort(input, dim=0).values``."""
    return sort(input, 0).values


@op("topk", methods=("topk",), kind="sort")
@np_aliases
def topk(input, k, dim=-1, largest=True, sorted=True):
    """``(values, indices)`` of the ``k`` largest (or smallest) elements along
    ``dim``, in sorted order; ties keep their original order (torch leaves
    that order unspecified).  grad = g put back at the indices."""
    arr = input._arr
    d = _canon_dim(dim, arr.ndim) if arr.ndim else 0
    n = arr.shape[d] if arr.ndim else 1
    k = int(k)
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    if arr.ndim == 0:
        return _Topk(input.clone() if k else input.reshape(0)[:0],
                     _wrap(np.zeros((), np.int64)))
    if 0 < k <= _KERNEL_K and arr.dtype.type in _KERNEL_FLOATS:
        return _topk_kernel(input, arr, k, d, bool(largest))
    idx = _topk_indices(arr, k, d, bool(largest))
    return _Topk(_gather(_TopkValues, input, idx, d), _wrap(idx))


# topk_rows keeps the k best in a sorted buffer: one pass for random data,
# up to k shifts per element at worst, so only a small k takes it.
_KERNEL_K = 32
_KERNEL_FLOATS = (np.float32, np.float64)


def _topk_kernel(input, arr, k, d, largest):
    """topk by ``select.topk_rows`` over the rows of ``dim`` (moved last)."""
    last = d == arr.ndim - 1
    work = arr if last else np.moveaxis(arr, d, -1)
    n = work.shape[-1]
    rows = work if work.ndim == 2 and work.flags.c_contiguous else \
        np.ascontiguousarray(work).reshape(-1, n)
    m = rows.shape[0]
    vals = np.empty((m, k), arr.dtype)
    idx = np.empty((m, k), np.int64)
    _S.topk_rows(rows, vals, idx, largest)
    if work.ndim != 2:
        shape = work.shape[:-1] + (k,)
        vals, idx = vals.reshape(shape), idx.reshape(shape)
    if not last:
        vals = np.ascontiguousarray(np.moveaxis(vals, -1, d))
        idx = np.ascontiguousarray(np.moveaxis(idx, -1, d))
    if input._requires_grad and is_grad_enabled():
        return _Topk(_TopkKernel.apply(input, idx, d, vals), _wrap(idx))
    return _Topk(_wrap(vals), _wrap(idx))


def _topk_indices(arr, k, d, largest):
    """The first ``k`` indices of the stable order along ``d``, found in O(n)
    with a partition (then only the k chosen are sorted)."""
    n = arr.shape[d]
    if (k == 0 or k == n or arr.size <= _SMALL
            or (arr.dtype.kind == "f" and np.isnan(arr).any())):
        order = _order(arr, d, largest)[(slice(None),) * d + (slice(0, k),)]
        return np.ascontiguousarray(order).astype(np.int64, copy=False)
    work = np.moveaxis(arr.view(np.uint8) if arr.dtype == np.bool_ else arr, d, -1)
    kth = n - k if largest else k - 1
    v = np.partition(work, kth, axis=-1)[..., kth:kth + 1]
    better = work > v if largest else work < v
    eq = work == v
    # Of the elements equal to the k-th, the first ones in index order (a
    # stable sort's choice) fill the places the strictly better ones leave.
    need = k - np.sum(better, axis=-1, keepdims=True)
    take = better | (eq & (np.cumsum(eq, axis=-1) <= need))
    cols = np.nonzero(take.reshape(-1, n))[1].reshape(work.shape[:-1] + (k,))
    cols = np.take_along_axis(cols, _order(np.take_along_axis(work, cols, -1), -1,
                                           largest), -1)
    return np.ascontiguousarray(np.moveaxis(cols, -1, d)).astype(np.int64, copy=False)


# Below this many elements a full stable sort is cheaper than a partition
# and its bookkeeping (measured: 8x16 topk 110 us -> 30 us).
_SMALL = 4096


def _rank_index(arr, rank, dim):
    """The index a stable sort puts at ``rank`` along ``dim`` (keepdims), in
    O(n): of the elements equal to the rank's value, the (rank - #smaller)-th
    in index order."""
    work = arr.view(np.uint8) if arr.dtype == np.bool_ else arr
    v = np.take(np.partition(work, rank, axis=dim), [rank], axis=dim)
    eq = work == v
    if arr.dtype.kind == "f":       # the rank falls on a NaN (last in order)
        eq |= np.isnan(work) & np.isnan(v)
    target = rank + 1 - np.sum(work < v, axis=dim, keepdims=True)
    return np.argmax(eq & (np.cumsum(eq, axis=dim) == target), axis=dim,
                     keepdims=True)


def _sorted_rank(arr, rank, dim, nan_first):
    """``_select_rank``'s indices (keepdims) by NumPy: a sort, or for large
    inputs ``_rank_index`` (NaN last); with ``nan_first``, a row with a NaN
    gives its first NaN."""
    if arr.size <= _SMALL:      # a few calls beat the partition's dozen
        idx = np.take(_order(arr, dim, False), [rank], axis=dim)
    else:
        idx = _rank_index(arr, rank, dim)
    if nan_first and arr.dtype.kind == "f":
        nan = np.isnan(arr)
        has = nan.any(axis=dim, keepdims=True)
        if has.any():           # a row with a NaN: its first NaN (torch)
            idx = np.where(has, np.argmax(nan, axis=dim, keepdims=True), idx)
    return idx


def _compiled_rank(arr, rank, dim, nan_first):
    """The same indices by ``select.rank_rows`` (float32/float64): one
    selection per row instead of a sort; rows it leaves at -1 (an order
    that defeats its pivots) are sorted."""
    last = dim == arr.ndim - 1
    moved = arr if last else np.moveaxis(arr, dim, -1)
    rows = np.ascontiguousarray(moved).reshape(-1, moved.shape[-1])
    flat = np.empty(rows.shape[0], np.int64)
    _S.rank_rows(rows, rank, nan_first, flat)
    if flat.min() < 0:
        left = np.flatnonzero(flat < 0)
        flat[left] = _sorted_rank(rows[left], rank, 1, nan_first)[:, 0]
    if last:
        return flat.reshape(arr.shape[:-1] + (1,))
    return np.expand_dims(flat.reshape(moved.shape[:-1]), dim)


def _select_rank(input, rank, dim, keepdim, cls, tup, nan_first):
    """Element of rank ``rank`` (0-based, per row) along ``dim``: NaN is the
    largest value (kthvalue), or with ``nan_first`` a row's first NaN is
    its result (median)."""
    arr = input._arr
    if arr.ndim == 0:
        return tup(input.clone(), _wrap(np.zeros((), np.int64)))
    if arr.dtype in (np.float32, np.float64) and arr.size:
        idx = _compiled_rank(arr, rank, dim, nan_first)
    else:
        idx = _sorted_rank(arr, rank, dim, nan_first)
    idx = np.ascontiguousarray(idx, dtype=np.int64)
    vals = _gather(cls, input, idx, dim)
    return tup(_squeeze_dim(vals, dim, keepdim), _wrap(_squeeze_dim(idx, dim, keepdim)))


@op("kthvalue", methods=("kthvalue",), kind="sort")
@np_aliases
def kthvalue(input, k, dim=-1, keepdim=False):
    """``(values, indices)`` of the k-th smallest element along ``dim``
    (k from 1); grad = g at the index."""
    arr = input._arr
    d = _canon_dim(dim, arr.ndim) if arr.ndim else 0
    n = arr.shape[d] if arr.ndim else 1
    if not 1 <= int(k) <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for "
                           f"dimension {d}")
    return _select_rank(input, int(k) - 1, d, keepdim, _KthValues, _Kth, False)


@op("median", methods=("median",), kind="sort")
@np_aliases
def median(input, dim=None, keepdim=False):
    """The lower median: of every element (a 0-d tensor) or, with ``dim``,
    ``(values, indices)`` along it; NaN propagates.  grad = g at the
    selected element."""
    arr = input._arr
    if dim is None:
        if arr.size == 0:
            return _wrap(np.full((), np.nan, arr.dtype if arr.dtype.kind == "f"
                                 else np.float32))
        flat = input.reshape(-1)
        return _select_rank(flat, (arr.size - 1) // 2, 0, False, _MedianValues,
                            _Median, True).values
    d = _canon_dim(dim, arr.ndim) if arr.ndim else 0
    if arr.ndim and arr.shape[d] == 0:
        raise IndexError(f"median(): Expected reduction dim {d} to have non-zero "
                         "size.")
    n = arr.shape[d] if arr.ndim else 1
    return _select_rank(input, (n - 1) // 2, d, keepdim, _MedianValues, _Median, True)


@op("mode", methods=("mode",), kind="sort")
@np_aliases
def mode(input, dim=-1, keepdim=False):
    """``(values, indices)``: the most frequent value along ``dim`` (the
    smallest of equally frequent ones) and the index of its last occurrence;
    grad = g at that index."""
    arr = input._arr
    if arr.ndim == 0:
        return _Mode(input.clone(), _wrap(np.zeros((), np.int64)))
    d = _canon_dim(dim, arr.ndim)
    n = arr.shape[d]
    if n == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    moved = np.moveaxis(arr, d, -1).reshape(-1, n)
    order = np.argsort(moved, axis=1, kind="stable")
    s = np.take_along_axis(moved, order, 1)
    pos = np.arange(n)
    start = np.ones(s.shape, bool)
    start[:, 1:] = s[:, 1:] != s[:, :-1]
    end = np.ones(s.shape, bool)
    end[:, :-1] = start[:, 1:]
    first = np.maximum.accumulate(np.where(start, pos, 0), axis=1)
    count = np.where(end, pos - first + 1, -1)
    best = np.argmax(count, axis=1)               # the smallest of the most frequent
    rows_idx = order[np.arange(order.shape[0]), best]   # its last occurrence
    kept = arr.shape[:d] + (1,) + arr.shape[d + 1:]
    idx = np.moveaxis(rows_idx.reshape(arr.shape[:d] + arr.shape[d + 1:] + (1,)),
                      -1, d).reshape(kept).astype(np.int64)
    idx = np.ascontiguousarray(idx)
    vals = _gather(_ModeValues, input, idx, d)
    return _Mode(_squeeze_dim(vals, d, keepdim), _wrap(_squeeze_dim(idx, d, keepdim)))


@op("unique", methods=("unique",), kind="index")
def unique(input, sorted=True, return_inverse=False, return_counts=False,
           dim=None):
    """The distinct elements (or slices along ``dim``), sorted; with
    ``return_inverse`` each element's position among them, with
    ``return_counts`` how often each occurs.  No gradient."""
    arr = input._arr
    if dim is None:
        vals, inv, counts = np.unique(arr.reshape(-1), return_inverse=True,
                                      return_counts=True)
        inv = inv.reshape(arr.shape)
    else:
        d = _canon_dim(dim, arr.ndim)
        if arr.shape[d] == 0 and arr.size == 0 and arr.ndim > 1:
            vals = arr
            inv = np.zeros(0, np.int64)
            counts = np.zeros(0, np.int64)
        else:
            vals, inv, counts = np.unique(arr, return_inverse=True,
                                          return_counts=True, axis=d)
            inv = inv.reshape(-1)
    out = [_wrap(np.ascontiguousarray(vals))]
    if return_inverse:
        out.append(_wrap(inv.astype(np.int64)))
    if return_counts:
        out.append(_wrap(counts.astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


# --- counting --------------------------------------------------------------------------------

@op("bincount", methods=("bincount",), kind="index")
def bincount(input, weights=None, minlength=0):
    """Counts of each value of a 1-D non-negative integer tensor (length at
    least ``minlength``); with ``weights`` their sums (float32 weights give
    float32, others float64).  No gradient."""
    arr = input._arr
    if arr.ndim != 1 or arr.dtype.kind not in "iub" or (arr.size and arr.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights is None:
        return _wrap(np.bincount(arr, minlength=minlength).astype(np.int64))
    w = weights._arr if isinstance(weights, TensorBase) else np.asarray(weights)
    if w.shape != arr.shape:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    out_dtype = np.float32 if w.dtype == np.float32 else np.float64
    return _wrap(np.bincount(arr, weights=w.astype(np.float64),
                             minlength=minlength).astype(out_dtype))


def _linspace_edges(lo, hi, bins, dtype):
    """torch.linspace(lo, hi, bins + 1) in ``dtype``: from both ends toward the
    middle, as torch computes it."""
    steps = bins + 1
    step = (dtype.type(hi) - dtype.type(lo)) / dtype.type(bins)
    i = np.arange(steps)
    half = steps // 2
    front = dtype.type(lo) + step * i.astype(dtype)
    back = dtype.type(hi) - step * (steps - 1 - i).astype(dtype)
    return np.where(i < half, front, back).astype(dtype)


def _bin_counts(x, edges, weight, uniform):
    """Per-bin counts (or weight sums) of x in the closed range of ``edges``;
    the last bin includes its right edge."""
    bins = edges.shape[0] - 1
    lo, hi = edges[0], edges[-1]
    keep = (x >= lo) & (x <= hi)
    v = x[keep]
    if uniform and hi > lo:
        pos = ((v - lo) / (hi - lo) * bins).astype(np.int64)
        pos = np.clip(pos, 0, bins - 1)
        # Round-off of the quotient: move to the bin whose edges hold v.
        pos = pos - (v < edges[pos])
        pos = pos + ((v >= edges[np.minimum(pos + 1, bins)]) & (pos + 1 < bins))
    else:
        pos = np.clip(np.searchsorted(edges, v, side="right") - 1, 0, bins - 1)
    w = None if weight is None else weight[keep].astype(np.float64)
    return np.bincount(pos, weights=w, minlength=bins)[:bins]


@op("histc", methods=("histc",), kind="index")
def histc(input, bins=100, min=0, max=0):
    """Histogram of ``bins`` equal bins over [min, max] (the data's range when
    both are 0; widened by 1 each way when it is one point); elements
    outside are ignored.  Same dtype as input, no gradient."""
    arr = input._arr
    if arr.dtype.kind != "f":
        raise RuntimeError(f'"histogram_cpu" not implemented for '
                           f"'{_dt.type_name(arr.dtype).replace('Tensor', '')}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histc(): bins must be > 0, but got {bins} for "
                           "dimension 0")
    lo, hi = float(min), float(max)
    if lo == hi and arr.size:
        lo, hi = float(arr.min()), float(arr.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError(f"torch.histc(): max must be larger than min, but got "
                           f"min {lo} max {hi}")
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"torch.histc(): range of [{lo}, {hi}] is not finite")
    edges = _linspace_edges(lo, hi, int(bins), arr.dtype)
    return _wrap(_bin_counts(arr.reshape(-1), edges, None, True).astype(arr.dtype))


@op("histogram", methods=("histogram",), kind="index")
def histogram(input, bins=100, *, range=None, weight=None, density=False):
    """``(hist, bin_edges)``: ``bins`` equal bins over ``range`` (the data's
    range by default, widened by 0.5 each way when it is one point), or the
    given increasing edges; ``weight`` sums weights, ``density`` normalises
    to unit area.  No gradient."""
    arr = input._arr
    if arr.dtype.kind != "f":
        raise RuntimeError(f"torch.histogram: input tensor and bins tensors should "
                           f"have the same dtype, but got input "
                           f"{_dt.name(arr.dtype)}")
    x = arr.reshape(-1)
    w = None
    if weight is not None:
        w = weight._arr.reshape(-1)
        if weight._arr.shape != arr.shape:
            raise RuntimeError("torch.histogram: if weight tensor is provided it "
                               "should have the same shape as the input tensor")
    if isinstance(bins, TensorBase):
        edges = bins._arr.astype(arr.dtype).reshape(-1)
        if edges.size < 1 or np.any(np.diff(edges) < 0):
            raise ValueError("torch.histogram: bin edges must be increasing")
        uniform = False
    else:
        nb = int(bins)
        if nb <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {nb} "
                               "for dimension 0")
        if range is not None:
            lo, hi = float(range[0]), float(range[1])
        elif x.size:
            lo, hi = float(x.min()), float(x.max())
        else:
            lo, hi = 0.0, 0.0
        if lo > hi:
            raise RuntimeError(f"torch.histogram(): min should not exceed max, but "
                               f"got min {lo} max {hi}")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges = _linspace_edges(lo, hi, nb, arr.dtype)
        uniform = True
    hist = _bin_counts(x, edges, w, uniform)
    if density:
        widths = np.diff(edges.astype(np.float64))
        total = hist.sum()
        hist = hist / (total * widths) if total else hist * np.nan
    return _Hist(_wrap(hist.astype(arr.dtype)), _wrap(np.ascontiguousarray(edges)))
