"""``t[index]``: torch's indexing rules, views for basic indices and
gathered copies for advanced ones."""

import numpy as np

from cygrad._kernels.engine import TensorBase, _wrap
from cygrad.autograd.function import Function
from cygrad.ops.registry import _ns, _view_of, apply_named, op, xp_helper

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

    _half_native = True     # exact in float16 (see registry: float16)

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
        xp = _ns()
        return xp.out(xp.put_item(xp.val(g), ctx.idx, ctx.basic, ctx.shape)), None, None


def _put_item(g, idx, basic, shape):
    """zeros(shape) with the array g put at idx (added over repeated indices)."""
    out = np.zeros(shape, g.dtype)
    if basic:
        _basic_view(out, idx)[...] = g
    else:
        np.add.at(out, idx, g)
    return out


class PutItem(Function):
    """out = zeros(shape) with g put (added, for repeated indices) at idx;
    grad = gg[idx]: the backward of GetItem, and the other way round."""

    _half_native = True     # exact in float16 (see registry: float16)

    _node_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx, g, idx, basic, shape):
        ctx.idx, ctx.basic = idx, basic
        return _wrap(_put_item(g._arr, idx, basic, shape))

    @staticmethod
    def backward(ctx, gg):
        return GetItem.apply(gg, ctx.idx, ctx.basic), None, None, None


xp_helper("put_item", _put_item, PutItem.apply)


def getitem(input, index):
    """``input[index]`` with torch's rules: ints, slices (positive steps), None,
    Ellipsis give a view; integer tensors/arrays/lists and bool masks give a
    copy.  The gradient scatters back, adding over repeated indices."""
    idx, basic = _norm_index(index)
    if basic:
        return apply_named(GetItem, _basic_node_name(idx), input, idx, basic)
    return GetItem.apply(input, idx, basic)


def _basic_node_name(idx):
    """torch's node for a basic index: that of its last component that does
    something (an int selects, a slice slices, None unsqueezes); ``x[:]``
    slices, ``x[...]`` aliases."""
    for k in reversed(idx):
        if isinstance(k, slice):
            if k != slice(None):
                return "SliceBackward0"
        elif k is None:
            return "UnsqueezeBackward0"
        elif k is not Ellipsis:
            return "SelectBackward0"
    return "SliceBackward0" if slice(None) in idx else "AliasBackward0"


op("getitem", methods=("__getitem__",), primitive=True, kind="index")(getitem)
