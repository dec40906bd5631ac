"""Variable-length batches for the recurrent layers, as ``torch.nn.utils.rnn``.

A ``PackedSequence`` holds a batch of sequences time-major without padding:
``data`` stacks, step by step, the step's rows of every sequence still
running (sequences sorted longest first), and ``batch_sizes[t]`` says how
many rows step ``t`` has.  Packing and unpacking are one row gather each
(``Tensor[index]``), so gradients flow back to the padded input; padding
positions read an extra constant row and get no gradient.
"""

from __future__ import annotations

from collections import namedtuple
from typing import TYPE_CHECKING, Any

import numpy as np

from cygrad import ops
from cygrad._tensor import Tensor
from cygrad.creation import full, tensor
from cygrad.ops.sorting import _introsort_order

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "PackedSequence",
    "pack_padded_sequence",
    "pack_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpack_sequence",
    "unpad_sequence",
]


class PackedSequence(namedtuple("PackedSequence_",
                                ["data", "batch_sizes", "sorted_indices",
                                 "unsorted_indices"])):
    """A packed batch: ``(data, batch_sizes, sorted_indices, unsorted_indices)``.

    Attributes
    ----------
    data : Tensor of shape (sum(lengths), *)
    batch_sizes : int64 Tensor of shape (max_length,)
        Rows per step, non-increasing.
    sorted_indices : int64 Tensor of shape (B,) or None
        ``sorted_indices[k]`` is the original batch index of packed column ``k``
        (None when the batch was packed already sorted).
    unsorted_indices : int64 Tensor of shape (B,) or None
        The inverse permutation.
    """

    def __new__(cls, data, batch_sizes=None, sorted_indices=None,
                unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = _invert(sorted_indices)
        if batch_sizes is None:
            raise TypeError("PackedSequence needs batch_sizes; build it with "
                            "pack_padded_sequence or pack_sequence")
        return super().__new__(cls, data, batch_sizes, sorted_indices,
                               unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """A PackedSequence whose ``data`` is ``data.to(*args, **kwargs)``."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes, self.sorted_indices,
                          self.unsorted_indices)

    def float(self) -> PackedSequence:
        return self.to(np.float32)

    def double(self) -> PackedSequence:
        return self.to(np.float64)

    def cpu(self) -> PackedSequence:
        return self

    @property
    def is_cuda(self) -> bool:
        return False

    def is_pinned(self) -> bool:
        return False


def _invert(perm):
    inv = np.empty_like(perm._arr)
    inv[perm._arr] = np.arange(perm._arr.shape[0], dtype=inv.dtype)
    return tensor(inv)


def _lengths_array(lengths):
    if isinstance(lengths, Tensor):
        arr = lengths._arr
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            raise RuntimeError(
                "'lengths' argument should be a 1D CPU int64 tensor, but got "
                f"{arr.ndim}D cpu {arr.dtype} tensor")
        return arr.astype(np.int64)
    arr = np.asarray(list(lengths), dtype=np.int64)
    if arr.ndim != 1:
        raise RuntimeError("'lengths' argument should be a 1D list of ints")
    return arr


def _batch_sizes(lengths):
    """Rows per step of sorted (non-increasing) ``lengths``."""
    steps = np.arange(int(lengths[0]) if lengths.size else 0)
    return (lengths[None, :] > steps[:, None]).sum(1).astype(np.int64)


def pack_padded_sequence(input: Tensor, lengths: Tensor | list[int],
                         batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``).

    Parameters
    ----------
    input : Tensor
    lengths : list of int or 1-d int64 Tensor of shape (B,)
        Every length in ``1..T``.
    batch_first : bool
    enforce_sorted : bool
        True: ``lengths`` must be non-increasing (``sorted_indices`` is None).
        False: the batch is sorted here and the permutation recorded.

    Returns
    -------
    PackedSequence
    """
    lens = _lengths_array(lengths)
    t_dim, b_dim = (1, 0) if batch_first else (0, 1)
    if input.dim() < 2:
        raise ValueError(
            f"pack_padded_sequence: input must have at least 2 dimensions (time "
            f"and batch), got shape {list(input.shape)}")
    steps, batch = int(input.shape[t_dim]), int(input.shape[b_dim])
    if lens.shape[0] != batch:
        raise RuntimeError(
            f"Expected `len(lengths)` to be equal to batch_size, but got "
            f"{lens.shape[0]} (batch_size={batch})")
    if enforce_sorted:
        if np.any(lens[1:] > lens[:-1]):
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when "
                "`enforce_sorted` is True. You can pass `enforce_sorted=False` to "
                "pack_padded_sequence and/or pack_sequence to sidestep this "
                "requirement if you do not need ONNX exportability.")
        order = None
    else:
        # torch sorts the lengths with its default (introsort) order, which
        # places tied sequences, and so the dropout mask rows they meet
        order = _introsort_order(lens, descending=True)
    if lens.size and lens.min() <= 0:
        raise RuntimeError(
            "Length of all samples has to be greater than 0, but found an element "
            "in 'lengths' that is <= 0")
    if lens.size and lens.max() > steps:
        raise RuntimeError(
            f"pack_padded_sequence: a length of {int(lens.max())} exceeds the "
            f"input's {steps} time steps (input shape {list(input.shape)})")
    cols = np.arange(batch) if order is None else order
    slens = lens[cols]
    bsz = _batch_sizes(slens)
    # row (t, k) of the packed data is input[t, cols[k]] (time-major)
    t_idx = np.concatenate([np.full(int(b), t) for t, b in enumerate(bsz)]) \
        if bsz.size else np.zeros(0, np.int64)
    k_idx = np.concatenate([np.arange(int(b)) for b in bsz]) \
        if bsz.size else np.zeros(0, np.int64)
    rows = t_idx * batch + cols[k_idx]
    if batch_first:
        rows = cols[k_idx] * steps + t_idx
    rest = tuple(input.shape[2:])
    data = input.reshape(steps * batch, *rest)[tensor(rows.astype(np.int64))]
    sorted_idx = None if order is None else tensor(order.astype(np.int64))
    return PackedSequence(data, tensor(bsz), sorted_idx, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """Undo :func:`pack_padded_sequence`.

    Returns
    -------
    (Tensor, Tensor)
        The padded batch ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``),
        ``T = total_length`` or the longest length, in the original batch
        order; and the lengths (int64, shape (B,)).
    """
    data, bsz_t = sequence.data, sequence.batch_sizes
    bsz = bsz_t._arr.astype(np.int64)
    max_len = int(bsz.shape[0])
    if total_length is not None:
        if total_length < max_len:
            raise ValueError(
                "Expected total_length to be at least the length of the longest "
                f"sequence in input, but got total_length={total_length} and max "
                f"sequence length being {max_len}")
        max_len = int(total_length)
    batch = int(bsz[0]) if bsz.size else 0
    lens = (bsz[None, :] > np.arange(batch)[:, None]).sum(1)  # per packed column
    offs = np.concatenate(([0], np.cumsum(bsz)))
    n = int(offs[-1])
    unsorted = sequence.unsorted_indices
    cols = np.arange(batch) if unsorted is None else unsorted._arr
    # index[t, b] = packed row of (t, original b), or n (the padding row)
    index = np.full((max_len, batch), n, dtype=np.int64)
    for t in range(bsz.shape[0]):
        k = np.arange(int(bsz[t]))
        index[t, k] = offs[t] + k
    index = index[:, cols]
    if batch_first:
        index = index.T
    rest = tuple(data.shape[1:])
    pad = full((1, *rest), padding_value, dtype=data.dtype)
    ext = ops.cat([data, pad], 0)
    out = ext[tensor(np.ascontiguousarray(index).reshape(-1))]
    out = out.reshape(*index.shape, *rest)
    return out, tensor(lens[cols].astype(np.int64))


def pad_sequence(sequences: Sequence[Tensor], batch_first: bool = False,
                 padding_value: float = 0.0, padding_side: str = "right") -> Tensor:
    """Stack tensors ``(L_i, *)`` into ``(L_max, B, *)`` (``(B, L_max, *)``),
    padding with ``padding_value`` on ``padding_side`` ("right" or "left")."""
    if padding_side not in ("left", "right"):
        raise RuntimeError(
            f"Expected padding_side to be one of left or right, but got "
            f"{padding_side}.")
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0)) if hasattr(sequences, "unbind") \
            else [sequences[i] for i in range(sequences.shape[0])]
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    rest = tuple(sequences[0].shape[1:])
    for k, s in enumerate(sequences):
        if tuple(s.shape[1:]) != rest:
            raise RuntimeError(
                f"pad_sequence: sequence {k} has shape {list(s.shape)}, but "
                f"sequence 0 has trailing dimensions {list(rest)}")
    lens = np.array([int(s.shape[0]) for s in sequences], dtype=np.int64)
    batch, max_len = len(sequences), int(lens.max())
    starts = np.concatenate(([0], np.cumsum(lens)))
    n = int(starts[-1])
    index = np.full((batch, max_len), n, dtype=np.int64)
    for b in range(batch):
        first = 0 if padding_side == "right" else max_len - int(lens[b])
        index[b, first:first + lens[b]] = starts[b] + np.arange(lens[b])
    if not batch_first:
        index = index.T
    dt = np.result_type(*[s._arr.dtype for s in sequences])
    pad = full((1, *rest), padding_value, dtype=dt)
    ext = ops.cat([s if s._arr.dtype == dt else s.to(dt) for s in sequences]
                  + [pad], 0)
    out = ext[tensor(np.ascontiguousarray(index).reshape(-1))]
    return out.reshape(*index.shape, *rest)


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor | list[int],
                   batch_first: bool = False) -> list[Tensor]:
    """The list of the batch's sequences, each cut to its length."""
    lens = _lengths_array(lengths)
    out = []
    for b, n in enumerate(lens):
        seq = padded_sequences[b] if batch_first else padded_sequences[:, b]
        out.append(seq[:int(n)])
    return out


def pack_sequence(sequences: Sequence[Tensor],
                  enforce_sorted: bool = True) -> PackedSequence:
    """``pack_padded_sequence(pad_sequence(sequences), lengths)``."""
    lengths = [int(s.shape[0]) for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of sequences (original order) of a PackedSequence."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of a permutation tensor (``inv[perm[i]] = i``), or None."""
    if permutation is None:
        return None
    return _invert(permutation)


__all__ += ["invert_permutation"]
