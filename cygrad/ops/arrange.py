"""Shape functions composed of the view, join and scatter ops: ravel,
tensor_split and hsplit/vsplit/dsplit, split_with_sizes and the unsafe_*
splits, unflatten, sum_to_size, rot90, diagflat, atleast_1d/2d/3d,
block_diag, cartesian_prod, combinations, column_stack/row_stack, diff,
vander, broadcast_shapes, unravel_index, narrow_copy, adjoint/mH/H,
slice/select/diagonal_scatter, as_strided and the ``*_copy`` functions.

Everything here is a composite: gradients come from the ops it calls.
"""

import itertools

import numpy as np

from cygrad import dtypes as _dt
from cygrad import storage as _storage
from cygrad._kernels.engine import TensorBase, _wrap
from cygrad._tensor import Size, Tensor, _canon_dim
from cygrad.autograd.function import Function
from cygrad.ops.out import _torch_name
from cygrad.ops.pieces import _pieces, chunk, hstack, meshgrid, narrow, split, vstack
from cygrad.ops.registry import _view_of, op, sum_to_shape
from cygrad.ops.shape import _promote_all, cat, clone, reshape, stack

# --- ravel, unflatten, sum_to_size ---------------------------------------------------------


@op("ravel", methods=("ravel",), kind="shape")
def ravel(input):
    """out = input flattened to 1-D (a view when the layout allows); grad = g
    reshaped back."""
    return reshape(input, -1)


@op("unflatten", methods=("unflatten",), kind="shape")
def unflatten(input, dim, sizes):
    """out = input with dimension ``dim`` expanded to ``sizes`` (one -1 allowed)."""
    sizes = [int(s) for s in sizes]
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    shape = list(input._arr.shape)
    d = _canon_dim(dim, len(shape))
    known = 1
    for s in sizes:
        if s != -1:
            known *= s
    n = shape[d]
    if (-1 in sizes and (known == 0 or n % known)) or (-1 not in sizes and known != n):
        raise RuntimeError(f"unflatten: Provided sizes {sizes} don't multiply up to "
                           f"the size of dim {dim} ({n}) in the input tensor")
    return reshape(input, shape[:d] + sizes + shape[d + 1:])


def _sum_to_size(self, *size):
    """``self`` summed to ``size`` (which it must broadcast from); grad = expand."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    size = tuple(int(s) for s in size)
    shape = self._arr.shape
    ok = len(size) <= len(shape) and all(
        s == t or s == 1 for s, t in zip(size[::-1], shape[::-1]))
    if not ok:
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size "
                           f"{{{list(shape)}}}.")
    return sum_to_shape(self, size)


# --- tensor_split and friends -----------------------------------------------------------------

def _split_points(n, indices):
    """Pieces [start, stop) of torch's tensor_split at ``indices``."""
    bounds = [0] + [min(max(i if i >= 0 else n + i, 0), n) for i in indices] + [n]
    return [(bounds[k], max(bounds[k + 1], bounds[k])) for k in range(len(bounds) - 1)]


@op("tensor_split", methods=("tensor_split",), kind="shape")
def tensor_split(input, indices_or_sections, dim=0):
    """Views of ``input`` cut along ``dim``: into ``sections`` nearly equal pieces
    (the first ``n % sections`` one longer), or at the given indices."""
    if input._arr.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, "
                           "but got a tensor with 0 dims")
    d = _canon_dim(dim, input._arr.ndim)
    n = input._arr.shape[d]
    s = indices_or_sections
    if isinstance(s, TensorBase):
        if s._arr.dtype != np.int64:
            raise RuntimeError(
                f"tensor_split expected tensor_indices_or_sections to have dtype of "
                f"long, but got {_torch_name(s._arr.dtype)}")
        if s._arr.ndim > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to "
                               "be a zero-dimensional or one-dimensional tensor, but "
                               f"got a tensor with {s._arr.ndim} dims")
        s = int(s._arr) if s._arr.ndim == 0 else [int(v) for v in s._arr]
    if isinstance(s, (list, tuple)):
        pieces = _split_points(n, [int(v) for v in s])
        if all(pieces[k][1] == pieces[k + 1][0] for k in range(len(pieces) - 1)):
            return _pieces(input, d, [b - a for a, b in pieces])
        return tuple(narrow(input, d, a, b - a) for a, b in pieces)
    s = int(s)
    if s <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {s}")
    q, r = divmod(n, s)
    return _pieces(input, d, [q + 1 if k < r else q for k in range(s)])


def _named_split(fname, input, sections, dim, min_dims):
    nd = input._arr.ndim
    if nd < min_dims:
        raise RuntimeError(f"torch.{fname} requires a tensor with at least {min_dims} "
                           f"dimension, but got a tensor with {nd} dimensions!")
    if isinstance(sections, int) and not isinstance(sections, bool):
        n = input._arr.shape[dim]
        if sections == 0 or n % sections:
            raise RuntimeError(
                f"torch.{fname} attempted to split along dimension {dim}, but the "
                f"size of the dimension {n} is not divisible by the split_size "
                f"{sections}!")
    return tensor_split(input, sections, dim)


@op("hsplit", methods=("hsplit",), kind="shape")
def hsplit(input, indices_or_sections):
    """``tensor_split`` along dim 1 (dim 0 for 1-D), sections dividing evenly."""
    dim = 1 if input._arr.ndim > 1 else 0
    return _named_split("hsplit", input, indices_or_sections, dim, 1)


@op("vsplit", methods=("vsplit",), kind="shape")
def vsplit(input, indices_or_sections):
    """``tensor_split`` along dim 0 of a tensor of 2 or more dims."""
    return _named_split("vsplit", input, indices_or_sections, 0, 2)


@op("dsplit", methods=("dsplit",), kind="shape")
def dsplit(input, indices_or_sections):
    """``tensor_split`` along dim 2 of a tensor of 3 or more dims."""
    return _named_split("dsplit", input, indices_or_sections, 2, 3)


@op("split_with_sizes", methods=("split_with_sizes",), kind="shape")
def split_with_sizes(input, split_sizes, dim=0):
    """Views of ``input`` of the given sizes along ``dim`` (they must sum to its
    size)."""
    return split(input, list(split_sizes), dim)


@op("unsafe_split", methods=("unsafe_split",), kind="shape")
def unsafe_split(input, split_size, dim=0):
    """``split`` (cygrad's pieces are always safe views)."""
    return split(input, split_size, dim)


@op("unsafe_split_with_sizes", methods=("unsafe_split_with_sizes",), kind="shape")
def unsafe_split_with_sizes(input, split_sizes, dim=0):
    """``split_with_sizes`` (cygrad's pieces are always safe views)."""
    return split(input, list(split_sizes), dim)


@op("unsafe_chunk", methods=("unsafe_chunk",), kind="shape")
def unsafe_chunk(input, chunks, dim=0):
    """``chunk`` (cygrad's pieces are always safe views)."""
    return chunk(input, chunks, dim)


# --- rot90, diagflat, adjoint --------------------------------------------------------------

@op("rot90", methods=("rot90",), kind="shape")
def rot90(input, k=1, dims=(0, 1)):
    """out = input rotated by 90 degrees k times in the plane ``dims`` (from
    the first axis towards the second); grad = g rotated back."""
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = "
                           f"{len(dims)}")
    nd = input._arr.ndim
    if nd < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {nd}")
    d0, d1 = _canon_dim(dims[0], nd), _canon_dim(dims[1], nd)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = "
                           f"{d0} and dim1 = {d1}")
    k = k % 4
    if k == 1:
        return input.flip([d1]).transpose(d0, d1)
    if k == 2:
        return input.flip([d0, d1])
    if k == 3:
        return input.flip([d0]).transpose(d0, d1)
    return clone(input)


@op("diagflat", methods=("diagflat",), kind="shape")
def diagflat(input, offset=0):
    """out = a 2-D matrix with the flattened input on diagonal ``offset``."""
    return input.reshape(-1).diag(offset)


def _matrix_transpose(self, what):
    nd = self._arr.ndim
    if nd < 2:
        raise RuntimeError(f"tensor.{what} is only supported on matrices or batches of "
                           f"matrices. Got {nd}-D tensor.")
    return self.transpose(-2, -1)


@op("adjoint", methods=("adjoint",), kind="shape")
def adjoint(input):
    """The conjugate transpose of the last two dims (a view; real tensors: mT)."""
    return _matrix_transpose(input, "adjoint()")


def _mH(self):
    return _matrix_transpose(self, "mH")


def _H(self):
    nd = self._arr.ndim
    if nd == 0:
        return self
    if nd != 2:
        hint = (" For batches of matrices, consider using tensor.mH" if nd > 2
                else "")
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). "
                           f"Got {nd}-D tensor.{hint}")
    return self.transpose(0, 1)


# --- at least n dims, column_stack, block_diag, cartesian_prod, combinations --------------

def _atleast(tensors, fix):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(fix(t) for t in tensors[0])
    if len(tensors) == 1:
        return fix(tensors[0])
    return tuple(fix(t) for t in tensors)


def _at1(t):
    return t.reshape(1) if t._arr.ndim == 0 else t


def _at2(t):
    nd = t._arr.ndim
    return t.reshape(1, 1) if nd == 0 else t.unsqueeze(0) if nd == 1 else t


def _at3(t):
    nd = t._arr.ndim
    if nd == 0:
        return t.reshape(1, 1, 1)
    if nd == 1:
        return t.unsqueeze(0).unsqueeze(-1)
    if nd == 2:
        return t.unsqueeze(-1)
    return t


@op("atleast_1d", kind="shape")
def atleast_1d(*tensors):
    """Each tensor with at least 1 dim (0-d becomes shape (1,)); one tensor in,
    one out, else a tuple."""
    return _atleast(tensors, _at1)


@op("atleast_2d", kind="shape")
def atleast_2d(*tensors):
    """Each tensor with at least 2 dims (leading ones added)."""
    return _atleast(tensors, _at2)


@op("atleast_3d", kind="shape")
def atleast_3d(*tensors):
    """Each tensor with at least 3 dims: (n,) -> (1, n, 1), (m, n) -> (m, n, 1)."""
    return _atleast(tensors, _at3)


@op("column_stack", kind="join")
def column_stack(tensors):
    """The tensors side by side as columns: 0-d and 1-D inputs become columns,
    then ``hstack``."""
    return hstack([t.reshape(-1, 1) if t._arr.ndim <= 1 else t for t in tensors])


@op("row_stack", kind="join")
def row_stack(tensors):
    """Alias of ``vstack``."""
    return vstack(tensors)


@op("block_diag", kind="join")
def block_diag(*tensors):
    """out = the tensors as blocks down the diagonal of a 2-D matrix (0-d and
    1-D inputs count as 1 x 1 and 1 x n), dtypes promoted; grad = each block."""
    blocks = []
    for i, t in enumerate(tensors):
        nd = t._arr.ndim
        if nd > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {i} has {nd} dimensions")
        blocks.append(t.reshape(1, -1) if nd == 1 else t.reshape(1, 1) if nd == 0
                      else t)
    if not blocks:
        return _wrap(np.zeros((1, 0), np.float32))
    blocks = _promote_all(blocks)
    dt = blocks[0]._arr.dtype
    width = sum(b._arr.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        r, c = b._arr.shape
        parts = [_wrap(np.zeros((r, left), dt)), b,
                 _wrap(np.zeros((r, width - left - c), dt))]
        rows.append(cat(parts, 1))
        left += c
    return cat(rows, 0)


def _vector_check(t):
    if t._arr.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(t._arr.shape)}")


@op("cartesian_prod", kind="join")
def cartesian_prod(*tensors):
    """out = every combination of one element from each 1-D tensor, as rows
    (one tensor: itself); grad flows back to each element."""
    for t in tensors:
        _vector_check(t)
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)


@op("combinations", kind="join")
def combinations(input, r=2, with_replacement=False):
    """out = the r-length combinations of the 1-D input's elements as rows (in
    itertools' order); grad flows back to the elements."""
    _vector_check(input)
    n = input._arr.shape[0]
    if r == 0:
        return _wrap(np.zeros((0,), input._arr.dtype))
    make = (itertools.combinations_with_replacement if with_replacement
            else itertools.combinations)
    idx = np.array(list(make(range(n), r)), np.int64).reshape(-1, r)
    if idx.shape[0] == 0:
        return _wrap(np.zeros((0, r), input._arr.dtype))
    return input[_wrap(idx.reshape(-1))].reshape(-1, r)


# --- diff, vander -------------------------------------------------------------------------

@op("diff", methods=("diff",), kind="other")   # takes out=, as torch
def diff(input, n=1, dim=-1, prepend=None, append=None):
    """out = the n-th forward difference along ``dim`` (after joining
    ``prepend`` and ``append``); bool inputs give x[i+1] != x[i]; grad from the
    subtractions."""
    nd = input._arr.ndim
    if nd == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = _canon_dim(dim, nd)
    parts = []
    for extra in (prepend, append):
        if extra is not None:
            if not isinstance(extra, TensorBase):
                extra = _wrap(np.asarray(extra, input._arr.dtype))
            if extra._arr.ndim != nd:
                raise RuntimeError("diff expects prepend or append to be the same "
                                   "dimension as input")
        parts.append(extra)
    x = input
    if parts[0] is not None or parts[1] is not None:
        x = cat([p for p in (parts[0], input, parts[1]) if p is not None], d)
    for _ in range(n):
        size = x._arr.shape[d]
        if size == 0:
            break
        hi, lo = narrow(x, d, 1, size - 1), narrow(x, d, 0, size - 1)
        x = hi.logical_xor(lo) if x._arr.dtype == np.bool_ else hi - lo
    return x


@op("vander", kind="linalg")
def vander(x, N=None, increasing=False):
    """out[i, j] = x[i] ** (N - 1 - j) (or ** j if ``increasing``); grad from
    the products."""
    if x._arr.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x._arr.shape[0] if N is None else int(N)
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if x._arr.dtype == np.bool_:
        x = x.long()
    if n == 0:
        return _wrap(np.zeros((x._arr.shape[0], 0), x._arr.dtype))
    one = _wrap(np.ones(x._arr.shape + (1,), x._arr.dtype))
    cols = [one]
    if n > 1:
        cols.append(x.unsqueeze(1).expand(-1, n - 1).cumprod(1))
    out = cat(cols, 1)
    return out if increasing else out.flip([1])


# --- broadcast_shapes, unravel_index --------------------------------------------------------

def broadcast_shapes(*shapes):
    """The shape that tensors of ``shapes`` broadcast to (torch.Size); ints
    count as 1-D shapes."""
    result = []
    for k, s in enumerate(shapes):
        s = (int(s),) if isinstance(s, int) or (hasattr(s, "__index__") and not
                                                 hasattr(s, "__len__")) else tuple(s)
        for i in range(1, len(s) + 1):
            v = int(s[-i])
            if i > len(result):
                result.insert(0, v)
            elif result[-i] == 1:
                result[-i] = v
            elif v != 1 and v != result[-i]:
                raise RuntimeError(
                    f"Attempting to broadcast a dimension of length {v} at -{i}! "
                    f"Mismatching argument at index {k} had {tuple(s)}; but expected "
                    f"shape should be broadcastable to {result}")
    return Size(result)


def unravel_index(indices, shape):
    """The coordinates, one int64 tensor per dim of ``shape``, of each flat
    index into a tensor of that shape (C order)."""
    if not isinstance(indices, TensorBase):
        indices = _wrap(np.asarray(indices, np.int64))
    if indices._arr.dtype.kind not in "iu" and indices._arr.dtype != np.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got "
                        f"torch.{_dt.name(indices._arr.dtype)}")
    shape = (int(shape),) if isinstance(shape, int) else tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got "
                         f"{tuple(shape)}")
    idx = indices._arr.astype(np.int64)
    out, stride = [], 1
    strides = []
    for s in reversed(shape):
        strides.append(stride)
        stride *= s
    for s, st in zip(shape, reversed(strides)):
        out.append(_wrap((idx // st) % s if s else idx * 0))
    return tuple(out)


# --- narrow_copy, the scatters -------------------------------------------------------------

@op("narrow_copy", methods=("narrow_copy",), kind="copy")
def narrow_copy(input, dim, start, length):
    """out = a copy of ``narrow(input, dim, start, length)``; grad = g in place."""
    return clone(narrow(input, dim, start, length))


def _scatter_into(input, src, where_fn):
    out = clone(input)
    dst = where_fn(out)
    if tuple(dst._arr.shape) != tuple(src._arr.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. "
                           f"src size = {list(src._arr.shape)}, slice size = "
                           f"{list(dst._arr.shape)}")
    dst.copy_(src)
    return out


@op("slice_scatter", methods=("slice_scatter",), kind="select")
def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """out = input with the slice start:end:step of ``dim`` replaced by src;
    grad_input = g outside the slice, grad_src = g on it."""
    d = _canon_dim(dim, input._arr.ndim)
    idx = (slice(None),) * d + (slice(start, end, step),)
    return _scatter_into(input, src, lambda t: t[idx])


@op("select_scatter", methods=("select_scatter",), kind="select")
def select_scatter(input, src, dim, index):
    """out = input with ``input.select(dim, index)`` replaced by src."""
    return _scatter_into(input, src, lambda t: t.select(dim, index))


@op("diagonal_scatter", methods=("diagonal_scatter",), kind="select")
def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """out = input with its diagonal (offset, dim1, dim2) replaced by src."""
    return _scatter_into(input, src, lambda t: t.diagonal(offset, dim1, dim2))


# --- as_strided ------------------------------------------------------------------------------

def _storage_offset(self):
    """Elements between the start of the storage (the memory ``self`` shares
    with its views, detached copies and ``set_`` aliases) and this tensor's
    first element."""
    if self._arr.size == 0:
        return 0
    return _storage.storage_bytes(self._arr)[1] // self._arr.itemsize


class AsStrided(Function):
    """out = the elements of x's storage at ``offset + sum_i k_i stride_i`` (a
    view); grad = g scatter-added back to the storage positions."""

    _half_native = True
    _node_name = "AsStridedBackward0"

    @staticmethod
    def forward(ctx, x, size, stride, offset):
        flat = x._arr.reshape(-1)       # a view: x is C-contiguous here
        ctx.numel, ctx.shape = flat.size, x._arr.shape
        ctx.index = offset + sum(
            (np.arange(s) * st).reshape((-1,) + (1,) * (len(size) - 1 - i))
            for i, (s, st) in enumerate(zip(size, stride))) if size else \
            np.asarray(offset)
        ctx.index = np.broadcast_to(ctx.index, size)
        isz = flat.itemsize
        arr = np.lib.stride_tricks.as_strided(
            flat[offset:], size, [st * isz for st in stride])
        return _view_of(x, arr)

    @staticmethod
    def backward(ctx, g):
        gflat = g.new_zeros(ctx.numel)
        gflat = gflat.index_add(0, _wrap(ctx.index.reshape(-1).astype(np.int64)),
                                g.reshape(-1))
        return gflat.reshape(ctx.shape), None, None, None


@op("as_strided", methods=("as_strided",), kind="view")
def as_strided(input, size, stride, storage_offset=None):
    """A view of ``input``'s storage with the given sizes, element strides and
    offset (cygrad: the input must be contiguous and the view must stay
    inside its elements); grad = g summed back into the positions it read."""
    size = tuple(int(s) for s in size)
    stride = tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError("as_strided: Negative strides are not supported at the "
                           f"moment, got strides: {list(stride)}")
    if not input._arr.flags.c_contiguous:
        raise NotImplementedError("cygrad's as_strided needs a contiguous input; "
                                  "call .contiguous() first")
    base = _storage_offset(input)
    offset = (base if storage_offset is None else int(storage_offset)) - base
    last = offset + sum((s - 1) * st for s, st in zip(size, stride)) if all(size) \
        else offset
    if offset < 0 or last >= max(input._arr.size, 1) and all(size):
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset "
            f"{offset + base} need more elements than the input's "
            f"{input._arr.size} (cygrad's as_strided stays inside the input)")
    return AsStrided.apply(input, size, stride, offset)


# --- the *_copy functions: each view op, copied ------------------------------------------------

def _copying(name, view):
    def fn(input, *args, **kwargs):
        res = view(input, *args, **kwargs)
        if isinstance(res, tuple):
            return tuple(clone(r) for r in res)
        return clone(res)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"A copy of ``{name[:-5]}`` (its own storage); grad = g."
    return fn


_VIEWS = {
    "view_copy": lambda t, *s: t.view(*s),
    "permute_copy": lambda t, *d: t.permute(*d),
    "transpose_copy": lambda t, a, b: t.transpose(a, b),
    "t_copy": lambda t: t.t(),
    "expand_copy": lambda t, *s, implicit=False: t.expand(*s),
    "squeeze_copy": lambda t, *d: t.squeeze(*d),
    "unsqueeze_copy": lambda t, d: t.unsqueeze(d),
    "select_copy": lambda t, d, i: t.select(d, i),
    "slice_copy": lambda t, dim=0, start=None, end=None, step=1: t[
        (slice(None),) * _canon_dim(dim, t._arr.ndim) + (slice(start, end, step),)],
    "diagonal_copy": lambda t, offset=0, dim1=0, dim2=1: t.diagonal(offset, dim1, dim2),
    "detach_copy": lambda t: t.detach(),
    "alias_copy": lambda t: t,
    "unbind_copy": lambda t, dim=0: t.unbind(dim),
    "split_copy": lambda t, s, dim=0: t.split(s, dim),
    "split_with_sizes_copy": lambda t, s, dim=0: t.split(list(s), dim),
    "unfold_copy": lambda t, d, size, step: t.unfold(d, size, step),
    "as_strided_copy": lambda t, size, stride, storage_offset=None: as_strided(
        t, size, stride, storage_offset),
}

for _name, _view in _VIEWS.items():
    op(_name, kind="copy")(_copying(_name, _view))   # copies take out=


def _install():
    Tensor.sum_to_size = _sum_to_size
    Tensor.storage_offset = _storage_offset
    Tensor.mH = property(_mH)
    Tensor.H = property(_H)


_install()
