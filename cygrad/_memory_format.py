"""torch's memory formats: ``contiguous_format``, ``channels_last``,
``channels_last_3d`` and ``preserve_format``.

A cygrad tensor is a NumPy array, whose strides can be any order, so a
format is honoured by strides where a tensor is laid out: ``contiguous``,
``to``, ``clone`` and the ``*_like`` constructors.  ``channels_last`` keeps
an (N, C, H, W) tensor's channels adjacent in memory (strides
``(HWC, 1, WC, C)``), exactly as torch.  The ops themselves return
row-major (contiguous) results whatever their inputs' layout: torch's
propagation of channels_last through convolutions and elementwise ops is
not reproduced (values are the same; only ``stride()`` and
``is_contiguous(memory_format=...)`` of results differ).

``preserve_format`` keeps the stride order of a dense tensor (and falls
back to row-major otherwise).  Where a format is not given, cygrad gives
row-major copies (``clone()`` and ``empty_like`` included, where torch's
default is ``preserve_format``).
"""

import numpy as np

__all__ = ["as_format", "channels_last", "channels_last_3d", "contiguous_format",
           "empty_as", "empty_in", "is_format", "memory_format", "preserve_format",
           "suggest"]


class memory_format:
    """One of torch's memory formats (compare by identity)."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"cygrad.{self.name}"

    def __reduce__(self):
        return self.name


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")

# the dims in memory order (outermost first) of the channels-last formats
_ORDER = {channels_last: (4, (0, 2, 3, 1)), channels_last_3d: (5, (0, 2, 3, 4, 1))}


def _check(fmt):
    if fmt is not None and not isinstance(fmt, memory_format):
        raise TypeError(f"memory_format must be torch.memory_format, not "
                        f"{type(fmt).__name__}")


def _order(arr, fmt):
    """The memory order of ``fmt`` for ``arr``, or None for row-major."""
    if fmt in _ORDER:
        rank, order = _ORDER[fmt]
        if arr.ndim != rank:
            raise RuntimeError(f"required rank {rank} tensor to use {fmt.name} "
                               "format")
        return order
    if fmt is preserve_format and arr.ndim > 1 and _dense(arr):
        # outermost first: the largest stride, ties kept in dim order
        return tuple(sorted(range(arr.ndim), key=lambda d: (-arr.strides[d], d)))
    return None


def _dense(arr):
    """Whether ``arr`` covers its memory without gaps or overlaps."""
    if arr.size <= 1:
        return True
    dims = sorted((st, sz) for st, sz in zip(arr.strides, arr.shape) if sz != 1)
    expect = arr.itemsize
    for st, sz in dims:
        if st != expect:
            return False
        expect *= sz
    return True


def as_format(arr, fmt, copy=True):
    """``arr`` laid out in ``fmt`` (a copy unless ``copy=False`` and it
    already is); None or contiguous_format: row-major."""
    _check(fmt)
    order = _order(arr, fmt)
    if order is None:
        return np.array(arr, order="C", copy=True) if copy else \
            np.ascontiguousarray(arr)
    if not copy and is_format(arr, fmt):
        return arr
    out = _blank(arr.shape, order, arr.dtype)
    out[...] = arr
    return out


def _strides(shape, order):
    """Element strides of a dense layout whose dims, outermost first, are
    ``order`` (products of the sizes, as torch forms them, so empty tensors
    get torch's strides too)."""
    strides = [0] * len(shape)
    step = 1
    for d in reversed(order):
        strides[d] = step
        step *= shape[d]
    return strides


def _blank(shape, order, dtype):
    """An uninitialized array of ``shape`` laid out in ``order``."""
    shape = tuple(shape)
    if 0 in shape:          # NumPy gives empty arrays arbitrary strides
        itemsize = np.dtype(dtype).itemsize
        return np.lib.stride_tricks.as_strided(
            np.empty(0, dtype), shape, [st * itemsize for st in _strides(shape, order)])
    return np.empty([shape[d] for d in order], dtype).transpose(np.argsort(order))


def empty_as(arr, fmt, dtype):
    """An uninitialized array shaped like ``arr`` in ``fmt``."""
    _check(fmt)
    order = _order(arr, fmt)
    if order is None:
        return np.empty(arr.shape, dtype)
    return _blank(arr.shape, order, dtype)


def suggest(arr):
    """The format whose stride order ``arr`` has: channels_last(_3d) for a
    4-d (5-d) array with the channels innermost, else contiguous_format
    (torch's ``suggest_memory_format``, which ``to`` compares against)."""
    for fmt, (rank, order) in _ORDER.items():
        if arr.ndim != rank or arr.flags.c_contiguous:
            continue
        if tuple(sorted(range(rank), key=lambda d: (-arr.strides[d], d))) == order:
            return fmt
    return contiguous_format


def empty_in(shape, fmt, dtype):
    """An uninitialized array of ``shape`` in a channels-last or the
    row-major format (``empty(..., memory_format=)``)."""
    _check(fmt)
    if fmt is preserve_format:
        raise RuntimeError("unsupported memory format Preserve")
    if fmt in _ORDER:
        rank, order = _ORDER[fmt]
        if len(shape) != rank:
            raise RuntimeError(f"required rank {rank} tensor to use {fmt.name} "
                               "format")
        return _blank(shape, order, dtype)
    return np.empty(shape, dtype)


def is_format(arr, fmt):
    """torch's ``is_contiguous(memory_format=fmt)`` of an array."""
    _check(fmt)
    if fmt in _ORDER:
        rank, order = _ORDER[fmt]
        if arr.ndim != rank:
            return False
        if arr.size == 0:
            own = [st // arr.itemsize for st in arr.strides]
            return own == _strides(arr.shape, order)
        return bool(np.transpose(arr, order).flags.c_contiguous)
    return bool(arr.flags.c_contiguous)
