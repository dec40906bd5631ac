"""Ops that cut a tensor into pieces or build one out of copies: split,
chunk, unbind, narrow (views), hstack/vstack/dstack, repeat, tile,
repeat_interleave, meshgrid and ``Tensor.unfold`` (a strided view)."""

import warnings

import numpy as np

from cygrad._kernels.engine import TensorBase, _wrap
from cygrad._tensor import Tensor, _canon_dim
from cygrad.autograd.function import Function
from cygrad.ops.indexing import GetItem
from cygrad.ops.registry import _ns, _NumpyNS, _view_of, np_aliases, op
from cygrad.ops.shape import _as_tensor_list, cat, expand, reshape, unsqueeze

# --- split, chunk, unbind, narrow: views -----------------------------------------------------


class SplitViews(Function):
    """outs = views of x along ``dim``, piece i of ``sizes[i]`` elements (or the
    single index i when ``squeeze``); grad = the pieces' gradients joined
    along ``dim`` (one pass, however many pieces)."""

    _node_name = "SplitWithSizesBackward0"

    @staticmethod
    def forward(ctx, x, dim, sizes, squeeze):
        arr = x._arr
        ctx.dim, ctx.squeeze = dim, squeeze
        lead = (slice(None),) * dim
        outs, start = [], 0
        for n in sizes:
            idx = lead + ((start,) if squeeze else (slice(start, start + n),))
            outs.append(_view_of(x, arr[idx + (Ellipsis,)]))
            start += n
        return tuple(outs)

    @staticmethod
    def backward(ctx, *gs):
        xp = _ns()
        if xp is _NumpyNS:
            parts = [xp.val(g) for g in gs]
            join = np.stack if ctx.squeeze else np.concatenate
            return xp.out(join(parts, axis=ctx.dim)), None, None, None
        parts = [unsqueeze(g, ctx.dim) if ctx.squeeze else g for g in gs]
        return cat(parts, ctx.dim), None, None, None


class UnbindViews(SplitViews):
    _node_name = "UnbindBackward0"


def _split_sizes(n, split_size_or_sections, dim):
    s = split_size_or_sections
    if isinstance(s, TensorBase):
        s = s.tolist()
    if isinstance(s, (list, tuple)):
        sizes = [int(v) for v in s]
        if any(v < 0 for v in sizes) or sum(sizes) != n:
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {n} (input "
                f"tensor's size at dimension {dim}), but got split_sizes={sizes}")
        return sizes
    s = int(s)
    if s < 0 or (s == 0 and n != 0):
        raise RuntimeError(f"split expects split_size be non-negative, but got "
                           f"split_size={s}")
    if n == 0:
        return [0]
    return [min(s, n - i) for i in range(0, n, s)]


def _pieces(input, dim, sizes, squeeze=False):
    fn = UnbindViews if squeeze else SplitViews
    if not sizes:
        return ()
    return tuple(fn.apply(input, dim, tuple(sizes), squeeze))


@op("split", methods=("split",), kind="shape")
@np_aliases
def split(tensor, split_size_or_sections=None, dim=0, *, split_size=None):
    """Views of ``tensor`` along ``dim``: pieces of ``split_size`` elements (the
    last may be smaller) or of the listed sizes; grad = the pieces' grads joined."""
    if split_size_or_sections is None:
        if split_size is None:
            raise TypeError("split() missing required argument 'split_size' (pos 1)")
        split_size_or_sections = split_size
    d = _canon_dim(dim, tensor._arr.ndim)
    sizes = _split_sizes(tensor._arr.shape[d], split_size_or_sections, d)
    return _pieces(tensor, d, sizes)


@op("chunk", methods=("chunk",), kind="shape")
@np_aliases
def chunk(input, chunks, dim=0):
    """At most ``chunks`` views along ``dim``, each of ceil(n / chunks)
    elements (the last may be smaller, and fewer may come back)."""
    chunks = int(chunks)
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: "
                           f"{chunks}")
    d = _canon_dim(dim, input._arr.ndim)
    n = input._arr.shape[d]
    if n == 0:
        return _pieces(input, d, [0] * chunks)
    return _pieces(input, d, _split_sizes(n, -(-n // chunks), d))


@op("unbind", methods=("unbind",), kind="shape")
@np_aliases
def unbind(input, dim=0):
    """The slices of ``input`` along ``dim``, as a tuple of views without that
    dim; grad = their grads stacked."""
    if input._arr.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = _canon_dim(dim, input._arr.ndim)
    return _pieces(input, d, [1] * input._arr.shape[d], squeeze=True)


@op("narrow", methods=("narrow",), kind="shape")
def narrow(input, dim, start, length):
    """The view ``input[..., start:start + length, ...]`` along ``dim``
    (negative ``start`` counts from the end)."""
    if input._arr.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = _canon_dim(dim, input._arr.ndim)
    n = input._arr.shape[d]
    start = int(start.item() if isinstance(start, TensorBase) else start)
    length = int(length)
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, "
                         f"{n}], but got {start})")
    if start < 0:
        start += n
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension "
                           f"size ({n}).")
    idx = (slice(None),) * d + (slice(start, start + length),)
    return GetItem.apply(input, idx + (Ellipsis,), None)       # a view


# --- stacking along existing axes -------------------------------------------------------------

def _atleast(t, nd):
    shape = t._arr.shape
    if len(shape) >= nd:
        return t
    if nd == 1:
        return reshape(t, (1,))
    if nd == 2:
        return reshape(t, (1,) * (2 - len(shape)) + shape)
    return reshape(t, {0: (1, 1, 1), 1: (1,) + shape + (1,)}.get(len(shape),
                                                                  shape + (1,)))


@op("hstack", kind="join")
def hstack(tensors):
    """Join along dim 1 (dim 0 for 1-D tensors), after ``atleast_1d``."""
    ts = [_atleast(t, 1) for t in _as_tensor_list(tensors, "hstack")]
    return cat(ts, 0 if ts[0]._arr.ndim == 1 else 1)


@op("vstack", kind="join")
def vstack(tensors):
    """Join along dim 0 after ``atleast_2d`` (1-D tensors become rows)."""
    return cat([_atleast(t, 2) for t in _as_tensor_list(tensors, "vstack")], 0)


@op("dstack", kind="join")
def dstack(tensors):
    """Join along dim 2 after ``atleast_3d``."""
    return cat([_atleast(t, 3) for t in _as_tensor_list(tensors, "dstack")], 2)


# --- repeat, tile, repeat_interleave ----------------------------------------------------------

def _sizes(sizes):
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    return tuple(int(s) for s in sizes)


def _repeat(self, *sizes):
    """The tensor tiled ``sizes[i]`` times along each dim (a copy; extra
    leading sizes add dims); grad = g summed over the copies."""
    reps = _sizes(sizes)
    shape = self._arr.shape
    if len(reps) < len(shape):
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller "
                           "than number of dimensions of tensor")
    if any(r < 0 for r in reps):
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{min(reps)}: {list(reps)}")
    shape = (1,) * (len(reps) - len(shape)) + shape
    spread = tuple(v for s in shape for v in (1, s))
    wide = tuple(v for r, s in zip(reps, shape) for v in (r, s))
    out = expand(reshape(self, spread), wide)
    return reshape(out, tuple(r * s for r, s in zip(reps, shape)))


Tensor.repeat = _repeat


@op("tile", methods=("tile",), kind="shape")
def tile(input, dims):
    """``input.repeat(dims)`` with ``dims`` padded by leading ones to the
    tensor's rank."""
    dims = _sizes((dims,)) if isinstance(dims, (tuple, list)) else (int(dims),)
    dims = (1,) * (input._arr.ndim - len(dims)) + dims
    return _repeat(input, dims)


@op("repeat_interleave", methods=("repeat_interleave",), kind="shape")
@np_aliases
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Each element repeated ``repeats`` times along ``dim`` (the flattened
    tensor when None); ``repeats`` is an int or a tensor of one count per
    element.  With one argument, the indices ``0..n-1`` each repeated
    ``input[i]`` times.  grad = g summed over the copies."""
    if repeats is None:
        return _wrap(_repeat_index(input._arr, None))
    if dim is None:
        input, d = reshape(input, (-1,)), 0
    else:
        d = _canon_dim(dim, input._arr.ndim)
    n = input._arr.shape[d] if input._arr.ndim else 1
    if isinstance(repeats, TensorBase) and repeats._arr.size == 1:
        repeats = int(repeats._arr.reshape(()))
    if isinstance(repeats, (int, np.integer)):
        repeats = int(repeats)
        if repeats < 0:
            raise RuntimeError("Repeats must be non-negative")
        if input._arr.ndim == 0:
            input = reshape(input, (1,))
        shape = input._arr.shape
        wide = shape[:d + 1] + (repeats,) + shape[d + 1:]
        out = expand(unsqueeze(input, d + 1), wide)
        res = reshape(out, shape[:d] + (shape[d] * repeats,) + shape[d + 1:])
    else:
        idx = _repeat_index(repeats._arr, n)
        res = GetItem.apply(input, (Ellipsis,),
                            (slice(None),) * d + (idx.astype(np.int64, copy=False),))
    if output_size is not None and res._arr.shape[d] != int(output_size):
        raise RuntimeError(f"allocated size does not match required size: "
                           f"output_size={output_size}, required "
                           f"{res._arr.shape[d]}")
    return res


def _repeat_index(counts, n):
    if counts.ndim != 1 or counts.dtype.kind not in "iu":
        raise RuntimeError("repeats has to be a 1D tensor of integers (long or int)")
    if n is not None and counts.shape[0] != n:
        raise RuntimeError(
            f"repeats must have the same size as input along dim, but got "
            f"repeats.size(0) = {counts.shape[0]} and input.size(0) = {n}")
    if counts.size and counts.min() < 0:
        raise RuntimeError("repeats can not be negative")
    return np.repeat(np.arange(counts.shape[0], dtype=np.int64), counts)


# --- meshgrid ------------------------------------------------------------------------------------

@op("meshgrid", kind="shape")
def meshgrid(*tensors, indexing=None):
    """Coordinate grids of 1-D tensors (views): with ``indexing='ij'`` output
    i varies along dim i; ``'xy'`` swaps the first two dims.  None means
    'ij' with torch's warning."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required "
                      "to pass the indexing argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise ValueError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", "
                         f"but received: {indexing}")
    ts = _as_tensor_list(list(tensors), "meshgrid")
    for t in ts:
        if t._arr.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the "
                               f"tensor list but got: {t}")
    ts = [reshape(t, (-1,)) for t in ts]
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t._arr.shape[0] for t in ts)
    nd = len(ts)
    outs = [expand(reshape(t, tuple(-1 if k == i else 1 for k in range(nd))), shape)
            for i, t in enumerate(ts)]
    if swap:
        outs[0], outs[1] = outs[1], outs[0]
    return tuple(outs)


# --- unfold: sliding windows as a strided view --------------------------------------------

class Unfold(Function):
    """out[..., k, ..., j] = x[..., k * step + j, ...] (windows of ``size``
    along ``dim``, a view); grad = each window's g added back (Fold)."""

    _node_name = "UnfoldBackward0"

    @staticmethod
    def forward(ctx, x, dim, size, step):
        arr = x._arr
        ctx.dim, ctx.size, ctx.step, ctx.in_shape = dim, size, step, arr.shape
        return _view_of(x, _windows(arr, dim, size, step))

    @staticmethod
    def backward(ctx, g):
        return Fold.apply(g, ctx.dim, ctx.size, ctx.step, ctx.in_shape), None, None, \
            None


class Fold(Function):
    """out = zeros(shape) with each window g[..., k, ..., :] added at
    x[..., k * step:k * step + size, ...]; grad = Unfold (its adjoint)."""

    _node_name = "UnfoldBackwardBackward0"

    @staticmethod
    def forward(ctx, g, dim, size, step, shape):
        ctx.dim, ctx.size, ctx.step = dim, size, step
        garr = g._arr
        out = np.zeros(shape, garr.dtype)
        nw = garr.shape[dim]
        lead = (slice(None),) * dim
        # One strided add per window offset j (size of them), each over every window.
        for j in range(size):
            out[lead + (slice(j, j + step * (nw - 1) + 1, step),)] += garr[..., j]
        return _wrap(out)

    @staticmethod
    def backward(ctx, gg):
        return Unfold.apply(gg, ctx.dim, ctx.size, ctx.step), None, None, None, None


def _windows(arr, dim, size, step):
    shape = arr.shape
    nw = (shape[dim] - size) // step + 1 if arr.ndim else 1
    if arr.ndim == 0:
        return arr.reshape(1)
    st = arr.strides
    new_shape = shape[:dim] + (nw,) + shape[dim + 1:] + (size,)
    new_strides = st[:dim] + (st[dim] * step,) + st[dim + 1:] + (st[dim],)
    return np.lib.stride_tricks.as_strided(arr, new_shape, new_strides,
                                           writeable=step >= size
                                           and arr.flags.writeable)


def _unfold(self, dimension, size, step):
    """Windows of ``size`` elements every ``step`` along ``dimension``, as a
    new last dim (a view); grad = the windows' grads added back."""
    nd = self._arr.ndim
    d = _canon_dim(dimension, nd) if nd else 0
    n = self._arr.shape[d] if nd else 1
    size, step = int(size), int(step)
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but "
                           f"size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if nd == 0:
        return reshape(self, (1,))
    return Unfold.apply(self, d, size, step)


Tensor.unfold = _unfold
