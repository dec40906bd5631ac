"""Turning a list of samples into a batch: ``default_collate`` and friends.

``collate`` walks the structure of the first sample and, level by level,
groups the values found at the same place in every sample; the leaves are
merged by the function ``collate_fn_map`` registers for their type.  With
``default_collate_fn_map`` that gives torch's batches: tensors are stacked
along a new first dimension, NumPy arrays become tensors first, Python floats
become a float64 tensor, Python ints an int64 tensor (``torch.tensor`` of the
list, so bools stay bool), NumPy scalars keep their dtype, strings and bytes
stay a list.  Containers keep their type where it can be rebuilt: a dict
gives a dict of batches, a namedtuple the same namedtuple, a list a list; a
plain tuple gives a *list* of batches, as torch does.

``default_convert`` is what the loader applies when automatic batching is off
(``batch_size=None``): NumPy arrays and scalars become tensors, everything else
is left as it is, through the same containers.
"""

from __future__ import annotations

import collections.abc
import copy
import re
from typing import TYPE_CHECKING, Any

import numpy as np

from cygrad import ops
from cygrad._tensor import Tensor
from cygrad.creation import as_tensor, from_numpy, tensor
from cygrad.dtypes import float64

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["collate", "default_collate", "default_collate_fn_map", "default_convert"]

# NumPy dtype kinds that hold no numbers: bytes, unicode, void, object
_NON_NUMERIC_KINDS = re.compile(r"[SaUO]")

_ERR = ("default_collate: batch must contain tensors, numpy arrays, numbers, "
        "dicts or lists; found {}")


def _rebuild_mapping(elem, values):
    """A mapping like ``elem`` holding ``values`` (a dict when it can't be)."""
    try:
        if isinstance(elem, collections.abc.MutableMapping):
            clone = copy.copy(elem)
            clone.update(values)
            return clone
        return type(elem)(values)
    except TypeError:
        return values


def _rebuild_sequence(elem, values):
    """A sequence like ``elem`` holding ``values`` (a list when it can't be)."""
    try:
        if isinstance(elem, collections.abc.MutableSequence):
            clone = copy.copy(elem)
            for i, v in enumerate(values):
                clone[i] = v
            return clone
        return type(elem)(values)
    except TypeError:
        return values


def collate(batch, *, collate_fn_map=None):
    """Merge a list of samples into one batch, recursing through containers.

    Parameters
    ----------
    batch : sequence
        The samples, all with the same structure.
    collate_fn_map : dict, optional
        ``{type or tuple of types: fn(batch, *, collate_fn_map)}`` for the
        leaves.  The exact type of the first sample is looked up first, then
        each key in insertion order with ``isinstance``.

    Returns
    -------
    The batch, with the containers of a sample and batched leaves.

    Raises
    ------
    TypeError
        For a leaf type that no entry of ``collate_fn_map`` handles.
    RuntimeError
        If sequences in the samples differ in length.
    """
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        fn = collate_fn_map.get(elem_type)
        if fn is not None:
            return fn(batch, collate_fn_map=collate_fn_map)
        for key, fn in collate_fn_map.items():
            if isinstance(elem, key):
                return fn(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        values = {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                  for key in elem}
        return _rebuild_mapping(elem, values)
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return elem_type(*(collate(s, collate_fn_map=collate_fn_map)
                           for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        # the samples of one field stay a tuple (strings come back as that tuple)
        values = [collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)]
        if isinstance(elem, tuple):
            return values        # torch gives a list for a plain tuple
        return _rebuild_sequence(elem, values)
    raise TypeError(_ERR.format(elem_type))


def _stack_uniform(arrays):
    """``np.stack(arrays)`` when every array has the first one's shape and
    native dtype, else None.

    One ``concatenate`` is ~15x faster than ``ops.stack`` on 128 tensors
    (measured, benchmarks/bench_data.py) and gives what stacking the
    tensors gives when no promotion and no graph are involved.
    """
    first = arrays[0]
    shape, dtype = first.shape, first.dtype
    if not dtype.isnative:
        return None
    for a in arrays:
        if a.shape != shape or a.dtype != dtype:
            return None
    if not shape:
        return np.array(arrays)
    return np.concatenate(arrays).reshape((len(arrays), *shape))


def _collate_tensor(batch, *, collate_fn_map=None):
    arrays = []
    for t in batch:
        if not isinstance(t, Tensor) or t.requires_grad:
            return ops.stack(batch, 0)      # a graph, promotion or the error
        arrays.append(t._arr)
    out = _stack_uniform(arrays)
    return ops.stack(batch, 0) if out is None else from_numpy(out)


def _collate_numpy_array(batch, *, collate_fn_map=None):
    if _NON_NUMERIC_KINDS.search(batch[0].dtype.str) is not None:
        raise TypeError(_ERR.format(batch[0].dtype))
    if all(isinstance(b, np.ndarray) for b in batch):
        out = _stack_uniform(batch)
        if out is not None:
            return from_numpy(out)
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def _collate_numpy_scalar(batch, *, collate_fn_map=None):
    return as_tensor(list(batch))


def _collate_float(batch, *, collate_fn_map=None):
    return tensor(list(batch), dtype=float64)


def _collate_int(batch, *, collate_fn_map=None):
    # torch.tensor of the list: ints give int64, bools bool, a float among the
    # ints the default dtype
    return tensor(list(batch))


def _collate_str(batch, *, collate_fn_map=None):
    return batch


# Order matters: NumPy scalars come before float, since np.float64 is a float.
default_collate_fn_map = {
    Tensor: _collate_tensor,
    np.ndarray: _collate_numpy_array,
    (np.bool_, np.number, np.object_): _collate_numpy_scalar,
    float: _collate_float,
    int: _collate_int,
    str: _collate_str,
    bytes: _collate_str,
}


def default_collate(batch: Sequence[Any]) -> Any:
    """The loader's default ``collate_fn``: ``collate`` with the default map.

    A batch of tensors of shape ``s`` becomes one tensor of shape
    ``(len(batch), *s)``; see the module docstring for every other type.

    Examples
    --------
    >>> default_collate([(1, 2.0), (3, 4.0)])
    [tensor([1, 3]), tensor([2., 4.], dtype=cygrad.float64)]
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)


def _is_numpy_value(data):
    t = type(data)
    return t.__module__ == "numpy" and t.__name__ not in ("str_", "bytes_", "string_")


def default_convert(data: Any) -> Any:
    """The loader's ``collate_fn`` without batching: NumPy data to tensors.

    Tensors, numbers, strings and other objects come back unchanged; NumPy
    arrays (of numbers) and scalars become tensors (arrays share memory); the
    containers are rebuilt like ``collate`` does (a tuple gives a list).
    """
    if isinstance(data, Tensor):
        return data
    if _is_numpy_value(data):
        if isinstance(data, np.ndarray) and _NON_NUMERIC_KINDS.search(
                data.dtype.str) is not None:
            return data
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {k: default_convert(data[k]) for k in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(
            data, (str, bytes)):
        return _rebuild_sequence(data, [default_convert(d) for d in data])
    return data
