"""Datasets: map-style (``Dataset``) and iterable (``IterableDataset``).

A map-style dataset answers ``dataset[i]`` for ``0 <= i < len(dataset)``; the
loader draws the indices from a sampler.  An iterable dataset yields its
samples itself (a stream, a file read line by line); in worker processes each
worker iterates its own copy, and ``get_worker_info()`` lets it pick its share.

``TensorDataset`` is the common case of tensors indexed along their first
dimension; the loader reads a whole batch of it with one indexing per tensor
(see ``dataloader._fetch_tensor_batch``).
"""

from __future__ import annotations

import bisect
import itertools
import math
import numbers
import warnings
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from cygrad.utils.data.sampler import _permutation

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence

    from cygrad._tensor import Tensor
    from cygrad.creation import Generator

__all__ = [
    "ChainDataset",
    "ConcatDataset",
    "Dataset",
    "IterableDataset",
    "StackDataset",
    "Subset",
    "TensorDataset",
    "random_split",
]


T_co = TypeVar("T_co", covariant=True)


class Dataset(Generic[T_co]):
    """A map from keys (usually ``0 .. len - 1``) to samples.

    Generic in the sample type, as torch's is (``Dataset[tuple[Tensor, int]]``).

    Subclasses define ``__getitem__`` and, for the default samplers,
    ``__len__``.  They may define ``__getitems__(indices)`` returning the list
    of samples of a whole batch, which the loader then calls instead of one
    ``__getitem__`` per index.  ``a + b`` concatenates two datasets.
    """

    def __getitem__(self, index: Any) -> T_co:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset[Any]) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset that is a stream: subclasses define ``__iter__``.

    With ``num_workers > 0`` every worker gets its own copy and iterates it
    whole unless it uses ``get_worker_info()`` to take its share (duplicates
    otherwise).  ``a + b`` chains two streams.
    """

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError("Subclasses of IterableDataset should implement "
                                  "__iter__.")

    def __add__(self, other: Dataset[Any]) -> ChainDataset:
        return ChainDataset([self, other])


def _first_dim(t):
    shape = t.shape
    if len(shape) == 0:
        raise IndexError("TensorDataset: every tensor needs a first dimension to "
                         "index, got a 0-d tensor")
    return shape[0]


class TensorDataset(Dataset):
    """Sample ``i`` is ``tuple(t[i] for t in tensors)``.

    Parameters
    ----------
    *tensors : Tensor
        Tensors with the same size of their first dimension.

    Raises
    ------
    AssertionError
        If the first dimensions differ (torch raises the same).
    """

    def __init__(self, *tensors: Tensor) -> None:
        sizes = [_first_dim(t) for t in tensors]
        assert all(s == sizes[0] for s in sizes), "Size mismatch between tensors"
        self.tensors = tensors

    def __getitem__(self, index: Any) -> tuple[Tensor, ...]:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return _first_dim(self.tensors[0])


class StackDataset(Dataset):
    """Samples of several datasets side by side, as a tuple or as a dict.

    ``StackDataset(a, b)[i] == (a[i], b[i])``;
    ``StackDataset(x=a, y=b)[i] == {"x": a[i], "y": b[i]}``.  All datasets
    must have the same length.
    """

    def __init__(self, *args: Dataset[Any], **kwargs: Dataset[Any]) -> None:
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or"
                             "``dict``- (via ``kwargs``) like input/output, but "
                             "both types are given.")
        datasets = args if args else list(kwargs.values())
        if not datasets:
            raise ValueError("At least one dataset should be passed")
        self._length = len(datasets[0])
        if any(len(d) != self._length for d in datasets):
            raise ValueError("Size mismatch between datasets")
        self.datasets = args if args else kwargs

    def __getitem__(self, index: Any) -> Any:
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices: list[int]) -> list[Any]:
        """The samples of a batch, using each dataset's ``__getitems__``."""
        if isinstance(self.datasets, dict):
            cols = {k: _get_many(d, indices) for k, d in self.datasets.items()}
            return [{k: cols[k][j] for k in cols} for j in range(len(indices))]
        cols = [_get_many(d, indices) for d in self.datasets]
        return [tuple(c[j] for c in cols) for j in range(len(indices))]

    def __len__(self) -> int:
        return self._length


def _get_many(dataset, indices):
    getitems = getattr(dataset, "__getitems__", None)
    if callable(getitems):
        samples = getitems(indices)
        if len(samples) != len(indices):
            raise ValueError(f"Nested dataset's output size mismatch. Expected "
                             f"{len(indices)}, got {len(samples)}")
        return samples
    return [dataset[i] for i in indices]


class ConcatDataset(Dataset):
    """Several map-style datasets one after the other.

    Index ``i`` falls in the first dataset whose cumulative length exceeds it;
    negative indices count from the end of the whole.
    """

    @staticmethod
    def cumsum(sequence: Iterable[Dataset[Any]]) -> list[int]:
        return list(itertools.accumulate(len(d) for d in sequence))

    def __init__(self, datasets: Iterable[Dataset[Any]]) -> None:
        self.datasets = list(datasets)
        assert len(self.datasets) > 0, "datasets should not be an empty iterable"
        for d in self.datasets:
            assert not isinstance(d, IterableDataset), \
                "ConcatDataset does not support IterableDataset"
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int) -> Any:
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset "
                                 "length")
            idx = len(self) + idx
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which > 0 else 0
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    """Several iterable datasets, iterated one after the other."""

    def __init__(self, datasets: Iterable[Dataset[Any]]) -> None:
        self.datasets = datasets

    def __iter__(self) -> Iterator[Any]:
        for d in self.datasets:
            assert isinstance(d, IterableDataset), \
                "ChainDataset only supports IterableDataset"
            yield from d

    def __len__(self) -> int:
        total = 0
        for d in self.datasets:
            assert isinstance(d, IterableDataset), \
                "ChainDataset only supports IterableDataset"
            total += len(d)
        return total


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order.

    ``Subset(ds, idx)[j] == ds[idx[j]]``; a list of positions gives
    ``ds[[idx[j] for j in positions]]``.
    """

    def __init__(self, dataset: Dataset[Any], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list[Any]:
        """The samples at ``indices`` (positions in the subset)."""
        outer = [self.indices[i] for i in indices]
        getitems = getattr(self.dataset, "__getitems__", None)
        if callable(getitems):
            return getitems(outer)
        return [self.dataset[i] for i in outer]

    def __len__(self) -> int:
        return len(self.indices)


def _split_lengths(n, fractions):
    """Whole lengths from fractions summing to 1: floors, then one more item
    to each split in turn until all ``n`` are placed."""
    lengths = []
    for i, frac in enumerate(fractions):
        if frac < 0 or frac > 1:
            raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        lengths.append(math.floor(n * frac))
    for i in range(n - sum(lengths)):
        lengths[i % len(lengths)] += 1
    for i, length in enumerate(lengths):
        if length == 0:
            warnings.warn(f"Length of split at index {i} is 0. This might result in "
                          "an empty dataset.", stacklevel=3)
    return lengths


def random_split(dataset: Dataset[Any], lengths: Sequence[int | float],
                 generator: Generator | None = None) -> list[Subset]:
    """Split ``dataset`` at random into non-overlapping ``Subset``s.

    Parameters
    ----------
    dataset : Dataset
        A map-style dataset with ``len``.
    lengths : sequence of int or float
        The split sizes, summing to ``len(dataset)``, or fractions summing to
        1: each split gets ``floor(len * fraction)`` items and the remainder
        goes one item at a time to the splits in order (torch's rule).
    generator : Generator, optional
        The source of the permutation (``cygrad.default_generator`` when
        None).

    Returns
    -------
    list of Subset
        One per length, together a permutation of ``range(len(dataset))``.
    """
    lengths = list(lengths)
    total = sum(lengths)
    if math.isclose(total, 1) and total <= 1:
        lengths = _split_lengths(len(dataset), lengths)
    for length in lengths:
        if not isinstance(length, numbers.Integral):
            raise TypeError(f"random_split: lengths must be ints or fractions "
                            f"summing to 1, got {length!r}")
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the "
                         "input dataset!")
    indices = _permutation(sum(lengths), generator).tolist()
    splits, start = [], 0
    for length in lengths:
        splits.append(Subset(dataset, indices[start:start + length]))
        start += length
    return splits
