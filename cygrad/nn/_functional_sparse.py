"""Lookups: ``embedding``, ``embedding_bag`` and ``one_hot``.

``embedding`` is one autograd node.  Its forward is a row gather
(``np.take``); its backward adds the incoming rows into a zero table with
the compiled loop of ``cygrad._kernels.embed`` (``np.add.at`` is ~70x
slower), dropping ``padding_idx``'s contributions and dividing by each
row's count for ``scale_grad_by_freq``.  Indices are checked (integer
dtype, in range) before anything runs.  ``max_norm`` renormalises the
looked-up rows of ``weight`` in place, outside autograd, as torch's
``embedding_renorm_``.  Under ``create_graph=True`` the backward is a node
whose own backward gathers again, so second derivatives work.
"""

from __future__ import annotations

import numpy as np

from cygrad import ops
from cygrad._kernels import embed as _k
from cygrad._tensor import Tensor
from cygrad.autograd.function import Function
from cygrad.autograd.grad_mode import is_grad_enabled, no_grad
from cygrad.creation import from_numpy
from cygrad.ops.reductions import _TakeAlong

__all__ = ["embedding", "embedding_bag", "one_hot"]

_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half",
               "bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short"}


def _indices(input, name="embedding"):
    """The index array of ``input`` as int64, after torch's dtype check."""
    arr = input._arr if isinstance(input, Tensor) else np.asarray(input)
    dt = np.dtype(arr.dtype)
    if dt not in (np.dtype(np.int64), np.dtype(np.int32)):
        kind = _TYPE_NAMES.get(dt.name, dt.name)
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following "
            f"scalar types: Long, Int; but got torch.{kind}Tensor instead (while "
            f"checking arguments for {name})")
    return arr.astype(np.int64, copy=False)


def _check_range(idx, num):
    if idx.size and (idx.min() < 0 or idx.max() >= num):
        bad = idx[(idx < 0) | (idx >= num)].flat[0]
        raise IndexError(
            f"index out of range in self: index {int(bad)} is outside [0, {num}) of "
            f"the embedding table's {num} rows")


def _padding(padding_idx, num):
    if padding_idx is None:
        return -1
    p = int(padding_idx)
    if p >= 0:
        if p >= num:
            raise AssertionError("Padding_idx must be within num_embeddings")
        return p
    if p < -num:
        raise AssertionError("Padding_idx must be within num_embeddings")
    return p + num


def _grad_table(idx, g, num, skip, scale_by_freq):
    """(num, d) table: ``out[idx[i]] += g[i]`` (skip dropped, freq-scaled)."""
    d = g.shape[-1]
    flat = idx.reshape(-1)
    rows = np.ascontiguousarray(g).reshape(flat.size, d)
    out = np.zeros((num, d), dtype=rows.dtype)
    _k.embedding_bwd(np.ascontiguousarray(flat), rows, out, skip)
    if scale_by_freq:
        counts = np.bincount(flat, minlength=num)
        nz = counts > 1
        out[nz] /= counts[nz, None].astype(out.dtype)
    return out


class _Embedding(Function):
    """``out = weight[idx]``;  grad_weight = scatter-add of g into idx's rows
    (0 at padding_idx; / count with scale_grad_by_freq)."""

    _node_name = "EmbeddingBackward0"

    @staticmethod
    def forward(ctx, weight, idx, skip, scale_by_freq):
        ctx.idx, ctx.skip, ctx.freq = idx, skip, scale_by_freq
        ctx.num = weight._arr.shape[0]
        return from_numpy(np.take(weight._arr, idx, axis=0))

    @staticmethod
    def backward(ctx, grad):
        if not ctx.needs_input_grad[0]:
            return None, None, None, None
        if is_grad_enabled():
            g = _EmbeddingDense.apply(grad, ctx.idx, ctx.num, ctx.skip, ctx.freq)
        else:
            g = from_numpy(_grad_table(ctx.idx, grad._arr, ctx.num, ctx.skip,
                                       ctx.freq))
        return g, None, None, None


class _EmbeddingDense(Function):
    """The backward of ``_Embedding`` as a node (linear in g); its backward
    gathers gg at idx with the same padding and scaling."""

    _node_name = "EmbeddingDenseBackward0"

    @staticmethod
    def forward(ctx, grad, idx, num, skip, scale_by_freq):
        ctx.idx, ctx.skip, ctx.freq, ctx.num = idx, skip, scale_by_freq, num
        return from_numpy(_grad_table(idx, grad._arr, num, skip, scale_by_freq))

    @staticmethod
    def backward(ctx, gg):
        rows = _Embedding.apply(gg, ctx.idx, -1, False)
        if ctx.skip < 0 and not ctx.freq:
            return rows, None, None, None, None
        scale = np.ones(ctx.idx.shape, dtype=np.dtype(gg.dtype))
        if ctx.skip >= 0:
            scale[ctx.idx == ctx.skip] = 0
        if ctx.freq:
            counts = np.bincount(ctx.idx.reshape(-1), minlength=ctx.num)
            scale = scale / counts[ctx.idx]
        rows = rows * from_numpy(scale[..., None].astype(np.dtype(gg.dtype)))
        return rows, None, None, None, None


def _renorm_(weight, idx, max_norm, norm_type):
    """Scale the rows of ``weight`` that ``idx`` names to norm <= max_norm."""
    rows = np.unique(idx)
    with no_grad():
        w = weight._arr
        sub = w[rows].astype(np.float64)
        if norm_type == float("inf"):
            norms = np.abs(sub).max(axis=1)
        else:
            norms = (np.abs(sub) ** norm_type).sum(axis=1) ** (1.0 / norm_type)
        big = norms > max_norm
        if big.any():
            scale = max_norm / (norms[big] + 1e-7)
            w[rows[big]] = (sub[big] * scale[:, None]).astype(w.dtype)
            weight._bump_version()


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` at the indices ``input``.

    Parameters
    ----------
    input : integer Tensor (int64 or int32), any shape, values in [0, V)
    weight : Tensor (V, D)
    padding_idx : int, optional
        Its row gets no gradient (a negative value counts from the end).
    max_norm : float, optional
        Rows looked up are first rescaled in place to norm <= max_norm.
    norm_type : float
        The p of the p-norm for ``max_norm`` (default 2).
    scale_grad_by_freq : bool
        Divide each row's gradient by its number of occurrences in ``input``.
    sparse : bool
        Only False (cygrad has no sparse gradients).

    Returns
    -------
    Tensor of shape ``input.shape + (D,)``.
    """
    if sparse:
        raise NotImplementedError(
            "embedding: sparse=True needs sparse gradients, which cygrad does not "
            "have; use sparse=False (a dense gradient)")
    idx = _indices(input)
    if weight.ndim != 2:
        raise RuntimeError(
            f"embedding: 'weight' must be 2-D (num_embeddings, embedding_dim), got "
            f"shape {list(weight.shape)}")
    num = weight.shape[0]
    skip = _padding(padding_idx, num)
    _check_range(idx, num)
    if max_norm is not None:
        _renorm_(weight, idx, float(max_norm), float(norm_type))
    return _Embedding.apply(weight, idx, skip, bool(scale_grad_by_freq))


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 tensor of shape ``tensor.shape + (num_classes,)`` with a 1 at each
    class index (``num_classes=-1``: one more than the largest index)."""
    arr = tensor._arr
    if np.dtype(arr.dtype) != np.dtype(np.int64):
        raise RuntimeError("one_hot is only applicable to index tensor of type "
                           "LongTensor.")
    if num_classes == -1:
        if arr.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty "
                               "tensor.")
        num_classes = int(arr.max()) + 1
    if arr.size:
        if arr.min() < 0:
            raise RuntimeError("Class values must be non-negative.")
        if arr.max() >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    out = np.zeros(arr.shape + (int(num_classes),), dtype=np.int64)
    np.put_along_axis(out, arr[..., None], 1, axis=-1)
    return from_numpy(out)


# ---------------------------------------------------------------------------
# embedding bags


def _bags(input, offsets, include_last_offset):
    """(flat indices, bag id per index, number of bags)."""
    idx = _indices(input, "embedding_bag")
    if idx.ndim == 2:
        if offsets is not None:
            raise ValueError(
                "if input is 2D, then offsets has to be None, as input is treated is "
                "a mini-batch of fixed length sequences. However, found offsets of "
                f"type {type(offsets)}")
        b, n = idx.shape
        return idx.reshape(-1), np.repeat(np.arange(b), n), b
    if idx.ndim != 1:
        raise ValueError(
            f"input has to be 1D or 2D Tensor, but got Tensor of dimension {idx.ndim}")
    if offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    off = _indices(offsets, "embedding_bag")
    if off.ndim != 1:
        raise ValueError("offsets has to be a 1D Tensor")
    if off.size and off[0] != 0:
        raise RuntimeError(
            f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has "
            f"to start from position 0. However, got {int(off[0])}")
    if off.size and off[-1] > idx.size:
        raise RuntimeError(
            f"offsets[-1] can not be greater than input's length {idx.size}, but got "
            f"offsets[-1] of {int(off[-1])}")
    if include_last_offset:
        # offsets[-1] should be the input's length; torch's own paths disagree
        # on indices past a smaller one (its sum and mean fast path drops
        # them, max and padding_idx keep them in the last bag): kept here
        starts = off[:-1]
    else:
        starts = off
    nbags = starts.size
    bag = np.zeros(idx.size, np.int64)
    if nbags and idx.size:
        marks = np.zeros(idx.size + 1, np.int64)
        np.add.at(marks, starts[1:], 1)
        bag = np.cumsum(marks[:-1])
    return idx, bag, nbags


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None,
                  max_norm: float | None = None, norm_type: float = 2,
                  scale_grad_by_freq: bool = False, mode: str = "mean",
                  sparse: bool = False, per_sample_weights: Tensor | None = None,
                  include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """Sums, means or maxima of bags of embedding rows.

    ``input`` is (B, N) (B bags of N indices) or 1-D with ``offsets`` (the
    start of each bag); ``padding_idx`` entries are left out of their bag
    (and of a mean's count); an empty bag gives zeros.
    ``per_sample_weights`` (the input's shape) scales rows, ``mode="sum"``
    only.  Returns (B, D).
    """
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is "
            f"only supported for mode='sum' (got mode='{mode}'). Please open a "
            "feature request on GitHub.")
    if per_sample_weights is not None and tuple(per_sample_weights.shape) != tuple(
            input.shape):
        raise ValueError(
            f"embedding_bag: If per_sample_weights ({list(per_sample_weights.shape)})"
            f" is not None, then it must have the same shape as the input "
            f"({list(input.shape)})")
    idx, bag, nbags = _bags(input, offsets, include_last_offset)
    num = weight.shape[0]
    skip = _padding(padding_idx, num)
    keep = idx != skip if skip >= 0 else np.ones(idx.size, bool)
    sel = np.nonzero(keep)[0]
    idx_k, bag_k = idx[sel], bag[sel]
    rows = embedding(from_numpy(idx_k), weight, None, max_norm, norm_type,
                     scale_grad_by_freq, sparse)
    dt = np.dtype(weight.dtype)
    d = weight.shape[1]
    if mode == "max":
        if idx_k.size == 0:
            return from_numpy(np.zeros((nbags, d), dt)) + weight.sum() * 0
        # per bag and column, the first row holding the maximum
        order = np.argsort(bag_k, kind="stable")
        sorted_bags = bag_k[order]
        present, starts = np.unique(sorted_bags, return_index=True)
        ws = weight._arr[idx_k[order]]
        best = np.maximum.reduceat(ws, starts, axis=0)
        pos = np.arange(idx_k.size)[order][:, None]
        slot = np.searchsorted(present, sorted_bags)
        cand = np.where(ws == best[slot], pos, idx_k.size)
        first = np.minimum.reduceat(cand, starts, axis=0)
        picked = _TakeAlong.apply(rows, first, 0)
        if present.size == nbags:
            return picked
        place = np.zeros((nbags, present.size), dt)   # empty bags stay 0
        place[present, np.arange(present.size)] = 1
        return ops.matmul(from_numpy(place), picked)
    if idx_k.size == 0:
        return from_numpy(np.zeros((nbags, d), dt)) + weight.sum() * 0
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.reshape(-1)[from_numpy(sel)].reshape(-1, 1)
    # each bag's rows added in input order (the compiled scatter-add of
    # embedding's backward, whose own backward gathers), then a mean divided
    # by its count (torch's order and rounding; a reciprocal is an ulp off)
    out = _EmbeddingDense.apply(rows, bag_k, nbags, -1, False)
    if mode == "mean":
        counts = np.maximum(np.bincount(bag_k, minlength=nbags), 1).astype(dt)
        out = out / from_numpy(counts.reshape(-1, 1))
    return out
