"""``t[index]``: torch's indexing rules, views for basic indices and
gathered copies for advanced ones.

An index is normalized in two stages, as torch applies it: the *basic* part
(ints, slices, None, Ellipsis; every advanced index replaced by full slices)
gives a view, and the *advanced* part (integer arrays, the coordinates of
bool masks) then indexes that view.  Ints are thus applied first, as torch
does (``x[0, :, [1, 2]]`` has shape ``[4, 2]`` for ``x`` of shape
``[3, 4, 5]``; NumPy would give ``[2, 4]``), and NumPy's rule for the second
stage (advanced dims in place when adjacent, else first) is torch's.
"""

import re
import warnings

import numpy as np

from cygrad._kernels import engine as _engine
from cygrad._kernels import select as _select_k
from cygrad._kernels.engine import TensorBase, _wrap
from cygrad._tensor import Tensor
from cygrad.autograd.function import Function
from cygrad.ops.registry import _ns, _NumpyNS, _register_view, _view_of, op, xp_helper

# --- normalizing an index ---------------------------------------------------------------

_INT, _SLICE, _NONE, _ELL, _ARR, _MASK = range(6)
_INDEX_INTS = (np.dtype(np.int64), np.dtype(np.int32))   # torch's long and int
_INT64 = np.dtype(np.int64)
_MASK_DTYPES = (np.dtype(np.bool_), np.dtype(np.uint8))  # bool and (legacy) byte
_SEQUENCES = (list, tuple, range, np.ndarray, TensorBase)


def _index_error(e, arr):
    msg = str(e).replace("axis", "dimension").replace("arrays", "tensors")
    msg = msg.replace("array", "tensor")
    head, sep, shapes = msg.partition("broadcast together with shapes ")
    if sep:
        # NumPy writes "(2,) (3,) (1,1,4) "; torch "[2], [3], [1, 1, 4]"
        dims = re.findall(r"\(([\d,]*)\)", shapes)
        msg = head + sep + ", ".join(
            str([int(d) for d in ds.split(",") if d]) for ds in dims)
    return IndexError(msg + f" (indexing a tensor of shape {list(arr.shape)})")


def _seq_as_tuple(index):
    """torch's (and old NumPy's) reading of a short list holding a sequence,
    tensor, slice, None or Ellipsis as a tuple of indices:
    ``x[[[0, 1], [1, 2]]]`` is ``x[[0, 1], [1, 2]]``."""
    if len(index) >= 32:
        return False
    return any(isinstance(k, _SEQUENCES) or isinstance(k, slice) or k is None
               or k is Ellipsis for k in index)


def _token(k):
    """One index item as (kind, value, dims of the tensor it consumes)."""
    if isinstance(k, TensorBase):
        k = k._arr
    elif isinstance(k, slice):
        if k.step is not None and int(k.step) <= 0:
            raise ValueError("step must be greater than zero")
        return _SLICE, k, 1
    elif k is None:
        return _NONE, None, 0
    elif k is Ellipsis:
        return _ELL, None, 0
    elif isinstance(k, (bool, np.bool_)):
        return _MASK, np.asarray(bool(k)), 0
    elif isinstance(k, (int, np.integer)):
        return _INT, int(k), 1
    if isinstance(k, (list, tuple, range)):
        try:
            a = np.asarray(k)
        except ValueError:
            raise IndexError("an index sequence must be rectangular (got "
                             f"{k!r})") from None
        if a.size == 0 and a.dtype.kind == "f":
            a = a.astype(np.int64)
        elif a.dtype.kind in "iu" and a.dtype != np.uint8:
            a = a.astype(np.int64, copy=False)
    elif isinstance(k, np.ndarray):
        a = k
    else:
        raise IndexError(
            "only integers, slices (`:`), ellipsis (`...`), None and long or byte "
            f"Variables are valid indices (got {type(k).__name__})")
    dt = a.dtype
    if dt in _MASK_DTYPES:
        if dt == np.uint8:
            warnings.warn("indexing with dtype torch.uint8 is now deprecated, "
                          "please use a dtype torch.bool instead.", UserWarning,
                          stacklevel=4)
        return _MASK, a, a.ndim
    if dt not in _INDEX_INTS:
        raise IndexError("tensors used as indices must be long, int, byte or bool "
                         f"tensors, got {dt}")
    if a.ndim == 0:
        return _INT, int(a), 1
    return _ARR, a, 1


def _norm_index(index, shape):
    """A torch index for a tensor of ``shape`` as (basic, adv).

    ``basic`` is a NumPy basic index (ints, slices, None, one Ellipsis) whose
    result is a view; ``adv`` is None or a tuple of full slices and int64
    arrays that indexes that view.  Every bound and mask shape is checked
    here, before anything is read or written.
    """
    kind = type(index)
    if kind is int or kind is slice:
        return _plain_index((index,), shape)
    if isinstance(index, TensorBase):
        fast = _long_indices((index,), shape)
        if fast is not None:
            return fast
    if kind is tuple:
        if all(type(k) is int or type(k) is slice for k in index):
            return _plain_index(index, shape)
        fast = _long_indices(index, shape)
        if fast is not None:
            return fast
        items = index
    elif isinstance(index, list) and _seq_as_tuple(index):
        items = tuple(index)
    else:
        items = (index,)
    toks = [_token(k) for k in items]
    ndim = len(shape)
    used = sum(t[2] for t in toks)
    if used > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    basic, adv = [], {}
    src = out = 0
    ell = False
    for kind, v, n in toks:
        if kind == _INT:
            size = shape[src]
            if not -size <= v < size:
                raise IndexError(f"index {v} is out of bounds for dimension {src} "
                                 f"with size {size}")
            basic.append(v)
            src += 1
        elif kind == _SLICE:
            basic.append(v)
            src += 1
            out += 1
        elif kind == _NONE:
            basic.append(None)
            out += 1
        elif kind == _ELL:
            if ell:
                raise IndexError("an index can only have a single ellipsis ('...')")
            ell = True
            basic.append(Ellipsis)
            src += ndim - used
            out += ndim - used
        elif kind == _ARR:
            _check_bounds(v, shape[src], src)
            basic.append(slice(None))
            adv[out] = v
            src += 1
            out += 1
        elif v.ndim == 0:       # True / False: a new dim of size 1 or 0
            basic.append(None)
            adv[out] = np.zeros(1 if v else 0, np.int64)
            out += 1
        else:
            _check_mask(v, shape, src)
            basic.extend([slice(None)] * n)
            for j, a in enumerate(np.nonzero(v)):
                adv[out + j] = a
            src += n
            out += n
    if not ell:
        basic.append(Ellipsis)      # so that a 0-d result is a view, not a scalar
    if not adv:
        return tuple(basic), None
    return tuple(basic), tuple(adv.get(i, slice(None)) for i in range(max(adv) + 1))


def _long_indices(items, shape):
    """The fast path of ``_norm_index`` for int64 index tensors only, one per
    leading dim (``C[Xb]``, ``logits[rows, Y]``): the general path's result
    without its tokens.  None when it does not apply: the general path
    decides."""
    if len(items) > len(shape):
        return None
    adv = []
    for dim, k in enumerate(items):
        if not isinstance(k, TensorBase):
            return None
        a = k._arr
        if a.dtype != _INT64 or a.ndim == 0 or not a.size:
            return None
        _check_bounds(a, shape[dim], dim)
        adv.append(a)
    return (slice(None),) * len(adv) + (Ellipsis,), tuple(adv)


def _plain_index(items, shape):
    """The fast path of ``_norm_index``: only ints and slices (``x[3]``,
    ``x[:, 1:4]``), the most common indices, checked without tokens."""
    if len(items) > len(shape):
        raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
    for dim, k in enumerate(items):
        if type(k) is int:
            size = shape[dim]
            if not -size <= k < size:
                raise IndexError(f"index {k} is out of bounds for dimension {dim} "
                                 f"with size {size}")
        elif k.step is not None and int(k.step) <= 0:
            raise ValueError("step must be greater than zero")
    return items + (Ellipsis,), None


def _check_bounds(a, size, dim):
    if a.size == 0:
        return
    if a.dtype == _INT64 and _select_k.index_bad(
            np.ascontiguousarray(a).reshape(-1), size) < 0:
        return          # every index in [0, size): one compiled pass
    lo, hi = int(a.min()), int(a.max())
    if hi >= size or lo < -size:
        bad = hi if hi >= size else lo
        raise IndexError(f"index {bad} is out of bounds for dimension {dim} with "
                         f"size {size}")


def _check_mask(m, shape, dim):
    for j, n in enumerate(m.shape):
        if shape[dim + j] != n:
            raise IndexError(
                f"The shape of the mask {list(m.shape)} at index {j} does not match "
                f"the shape of the indexed tensor {list(shape)} at index {dim + j}")


def _adv_shape(shape, adv):
    """The shape of ``view[adv]`` for a view of ``shape``, without indexing."""
    pos = [i for i, a in enumerate(adv) if not isinstance(a, slice)]
    try:
        b = np.broadcast_shapes(*(adv[i].shape for i in pos))
    except ValueError:
        raise IndexError(
            "shape mismatch: indexing tensors could not be broadcast together with "
            "shapes " + ", ".join(str(list(adv[i].shape)) for i in pos)) from None
    shape = tuple(shape)
    if pos[-1] - pos[0] == len(pos) - 1:
        return shape[:pos[0]] + b + shape[pos[-1] + 1:]
    return b + tuple(s for i, s in enumerate(shape) if i not in pos)


def _index_into(arr, basic, adv):
    """arr[basic][adv] (a view when adv is None)."""
    view = arr[basic]
    return view if adv is None else view[adv]


class GetItem(Function):
    """out = x[idx]; grad = zeros with g put at idx (accumulated over repeated
    indices of an advanced index).  A basic index gives a view of x."""

    _half_native = True     # exact in float16 (see registry: float16)

    _node_name = "IndexBackward0"

    @staticmethod
    def forward(ctx, x, basic, adv):
        arr = x._arr
        ctx.basic, ctx.adv, ctx.shape = basic, adv, arr.shape
        if adv is None:
            return _view_of(x, arr[basic])
        view = arr[basic]
        try:
            return _wrap(np.asarray(view[adv]))
        except IndexError as e:
            raise _index_error(e, arr) from None

    @staticmethod
    def backward(ctx, g):
        xp = _ns()
        return (xp.out(xp.put_item(xp.val(g), ctx.basic, ctx.adv, ctx.shape)), None,
                None)


def _put_item(g, basic, adv, shape):
    """zeros(shape) with the array g put at [basic][adv] (added over repeats)."""
    out = np.zeros(shape, g.dtype)
    if adv is not None and len(adv) == 1 and g.dtype in _KFLOATS and out.ndim and \
            all(k is Ellipsis or k == _FULL for k in basic):
        # x[idx] (an embedding lookup, C[Xb]): rows added by the compiled
        # loop, in index order; np.add.at is ~10x slower here.
        idx = adv[0].reshape(-1)
        idx = np.where(idx < 0, idx + shape[0], idx) if idx.size and \
            idx.min() < 0 else idx
        _select_k.add_rows(out.reshape(-1), np.ascontiguousarray(idx, np.int64),
                           np.ascontiguousarray(g).reshape(-1), shape[0],
                           out.size // shape[0] if shape[0] else 0)
        return out
    view = out[basic]
    if adv is None:
        view[...] = g
    else:
        np.add.at(view, adv, g)
    return out


_FULL = slice(None)
_KFLOATS = (np.dtype(np.float32), np.dtype(np.float64))


class PutItem(Function):
    """out = zeros(shape) with g put (added, for repeated indices) at idx;
    grad = gg[idx]: the backward of GetItem, and the other way round."""

    _half_native = True     # exact in float16 (see registry: float16)

    _node_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx, g, basic, adv, shape):
        ctx.basic, ctx.adv = basic, adv
        return _wrap(_put_item(g._arr, basic, adv, shape))

    @staticmethod
    def backward(ctx, gg):
        return GetItem.apply(gg, ctx.basic, ctx.adv), None, None, None


xp_helper("put_item", _put_item, PutItem.apply)


def _put_basic_graph(g, index, shape):
    """The compiled basic-index node's backward under create_graph: zeros of
    ``shape`` with the Tensor ``g`` at ``index``, differentiable."""
    return PutItem.apply(g, index, None, shape)


class AddAt(Function):
    """out = x with v added at [basic][adv], one element after another (as
    torch's ``index_put_(accumulate=True)``, ``index_add`` and ``scatter_add``
    do, so repeated indices round the same); grad_x = g, grad_v = g[idx]."""

    _node_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx, x, v, basic, adv):
        ctx.basic, ctx.adv = basic, adv
        out = x._arr.copy()
        view = out[basic]
        if adv is None:
            view += v._arr
        else:
            np.add.at(view, adv, v._arr)
        return _wrap(out)

    @staticmethod
    def backward(ctx, g):
        xp = _ns()
        gv = None
        if ctx.needs_input_grad[1]:
            gv = GetItem.apply(g, ctx.basic, ctx.adv) if xp is not _NumpyNS else \
                _wrap(np.ascontiguousarray(_index_into(g._arr, ctx.basic, ctx.adv)))
        return g, gv, None, None


def getitem(input, index):
    """``input[index]`` with torch's rules: ints, slices (positive steps), None,
    Ellipsis give a view; integer tensors/arrays/lists/ranges and bool masks
    (or bool lists) give a copy, with the advanced dims first when slices
    separate them.  The gradient scatters back, adding over repeated
    indices."""
    kind = index.__class__
    if kind is Tensor or kind is tuple and index and index[0].__class__ is Tensor:
        # x[idx], x[i, j]: rows of the leading dims, compiled (None: not that)
        res = _engine.index_rows(input, index)
        if res is not None:
            return res
    basic, adv = _norm_index(index, input._arr.shape)
    if adv is None:         # a view, with the engine's compiled node
        # (a bare slice, even ``x[:]``, slices in torch; in a tuple a full
        # slice does nothing)
        kind = type(index)
        name = ("SelectBackward0" if kind is int else "SliceBackward0"
                if kind is slice else _basic_node_name(basic, input._arr.shape))
        return _engine.basic_view(input, basic, name, _register_view)
    return GetItem.apply(input, basic, adv)


def _basic_node_name(idx, shape):
    """torch's node for a basic index: that of its last component that does
    something (an int selects, a slice narrower than its dim slices, None
    unsqueezes); an index that does nothing (``x[:]``, ``x[...]``,
    ``x[0:len]``) aliases."""
    if None not in idx and idx[-1] is Ellipsis and Ellipsis not in idx[:-1]:
        # _plain_index's form (ints and slices, then Ellipsis): item i is dim i
        for pos in range(len(idx) - 2, -1, -1):
            k = idx[pos]
            if type(k) is not slice:
                return "SelectBackward0"
            n = shape[pos]
            if k.indices(n) != (0, n, 1):
                return "SliceBackward0"
        return "AliasBackward0"
    dims = [None] * len(idx)            # the dim each int or slice indexes
    d = 0
    for pos, k in enumerate(idx):
        if k is Ellipsis:
            rest = sum(1 for j in idx[pos + 1:] if j is not None)
            d = len(shape) - rest
        elif k is not None:
            dims[pos] = d
            d += 1
    for pos in range(len(idx) - 1, -1, -1):
        k = idx[pos]
        if k is None:
            return "UnsqueezeBackward0"
        if k is Ellipsis:
            continue
        if type(k) is not slice:
            return "SelectBackward0"
        n = shape[dims[pos]]
        if k.indices(n) != (0, n, 1):
            return "SliceBackward0"
    return "AliasBackward0"


op("getitem", methods=("__getitem__",), primitive=True, kind="index")(getitem)


@op("select", methods=("select",), kind="shape")
def select(input, dim, index):
    """The slice at ``index`` along ``dim`` (that dim removed), a view; grad =
    zeros with g put there."""
    shape = input._arr.shape
    if not shape:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    nd = len(shape)
    if not -nd <= dim < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-nd}, {nd - 1}], but got {dim})")
    dim %= nd
    i = int(index)
    if not -shape[dim] <= i < shape[dim]:
        raise IndexError(f"select(): index {i} out of range for tensor of size "
                         f"{list(shape)} at dimension {dim}")
    return getitem(input, (slice(None),) * dim + (i,))
