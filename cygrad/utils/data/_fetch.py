"""Reading one batch (or one sample) from a dataset, in any process.

The fast path: a ``TensorDataset`` (possibly behind ``Subset``s, as
``random_split`` makes them) collated by ``default_collate`` is read with one
``take`` per tensor along its first dimension.  That gives the same values,
dtypes and shapes as indexing each sample and stacking them, without a Python
call per sample; a tensor that requires grad is indexed through autograd
instead, so its batch keeps a ``grad_fn`` as the stacked one would.
Indices that are not a plain non-empty list of integers (floats, bools,
tensors, an empty batch) take the general path, which raises what indexing
one sample raises.
"""

import numpy as np

from cygrad._tensor import Tensor
from cygrad.creation import from_numpy
from cygrad.utils.data._collate import (
    _collate_tensor,
    default_collate,
    default_collate_fn_map,
)
from cygrad.utils.data.dataset import Subset, TensorDataset


def _tensor_batch_reader(dataset, collate_fn):
    """``read(index) -> list of tensors`` for the fast path, else None."""
    if collate_fn is not default_collate or (
            default_collate_fn_map.get(Tensor) is not _collate_tensor):
        return None             # not the default, or a user re-registered Tensor
    maps = []
    while type(dataset) is Subset:
        maps.append(dataset.indices)
        dataset = dataset.dataset
    if type(dataset) is not TensorDataset:
        return None
    tensors = dataset.tensors
    if not tensors or not all(type(t) is Tensor for t in tensors):
        return None
    arrays = []
    for m in maps:
        a = np.asarray(m.numpy() if isinstance(m, Tensor) else m)
        if a.ndim != 1 or a.dtype.kind not in "iu":
            return None
        arrays.append(a.astype(np.int64, copy=False))

    def read(index):
        idx = np.asarray(index)
        if idx.ndim != 1 or idx.dtype.kind not in "iu" or idx.size == 0:
            return None
        for a in arrays:        # the outermost Subset maps first
            idx = a[idx]
        out = []
        for t in tensors:
            if t.requires_grad:
                out.append(t[from_numpy(idx)])
            else:
                out.append(from_numpy(np.take(t._arr, idx, axis=0)))
        return out

    return read


class _MapFetcher:
    """Reads a map-style dataset at one index or at a batch of indices."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.read_tensors = (_tensor_batch_reader(dataset, collate_fn)
                             if auto_collation else None)

    def fetch(self, index):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        if self.read_tensors is not None:
            batch = self.read_tensors(index)
            if batch is not None:
                return batch
        getitems = getattr(self.dataset, "__getitems__", None)
        if callable(getitems):
            data = getitems(index)
        else:
            data = [self.dataset[i] for i in index]
        return self.collate_fn(data)


class _IterableFetcher:
    """Reads the next sample (or ``len(index)`` samples) of a stream."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset_iter = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            for _ in index:
                try:
                    data.append(next(self.dataset_iter))
                except StopIteration:
                    self.ended = True
                    break
            if not data or (self.drop_last and len(data) < len(index)):
                raise StopIteration
        else:
            data = next(self.dataset_iter)
        return self.collate_fn(data)


def make_fetcher(dataset, iterable, auto_collation, collate_fn, drop_last):
    cls = _IterableFetcher if iterable else _MapFetcher
    return cls(dataset, auto_collation, collate_fn, drop_last)
