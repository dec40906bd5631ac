"""Samplers: the order in which the loader reads a map-style dataset.

A sampler is an iterable of indices (``BatchSampler``: of lists of indices).
Random samplers draw from a cygrad ``Generator`` (``cygrad.default_generator``
when none is given) exactly as torch's samplers draw from theirs, so after
the same seed a shuffle has torch's order, epoch after epoch.

``RandomSampler`` without a generator draws one seed from the default
generator at each ``iter()`` and shuffles with a generator of its own made
from it (as torch does), so that ``cygrad.manual_seed(s)`` fixes every epoch.
"""

from __future__ import annotations

import numbers
import warnings
from itertools import islice
from typing import TYPE_CHECKING, Generic, TypeVar

import numpy as np

from cygrad.creation import Generator, _mt, from_numpy
from cygrad.random import multinomial, randperm

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence, Sized

    from cygrad._tensor import Tensor

__all__ = [
    "BatchSampler",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
]


def _stream(generator):
    """The stream of a cygrad ``Generator`` (the default one when None)."""
    if generator is not None and not isinstance(generator, Generator):
        raise TypeError(f"generator must be a cygrad.Generator, got "
                        f"{type(generator).__name__}")
    return _mt(generator)


def _draw_seed(generator=None):
    """A fresh seed in [0, 2**63) drawn from ``generator``: torch's
    ``empty((), dtype=int64).random_()``, so the same draw as torch's."""
    return int(_stream(generator).ints(1, 2 ** 63, 0, True)[0])


def _permutation(n, generator=None):
    """A random permutation of ``range(n)`` as an int64 array (torch's randperm)."""
    _stream(generator)
    return randperm(n, generator=generator)._arr


def _check_positive_int(name, value):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} should be a positive integer value, but got "
                         f"{name}={value}")


def _check_bool(name, value, exc=ValueError):
    if not isinstance(value, bool):
        raise exc(f"{name} should be a boolean value, but got {name}={value}")


T_co = TypeVar("T_co", covariant=True)


class Sampler(Generic[T_co]):
    """Base class: subclasses define ``__iter__`` (indices) and may define
    ``__len__``.  Generic in the index type (``Sampler[int]``)."""

    def __init__(self, data_source: Sized | None = None) -> None:
        if data_source is not None:
            warnings.warn("`data_source` argument is not used and will be removed "
                          "in 2.2.0.You may still have custom implementation that "
                          "utilizes it.", stacklevel=2)

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """Indices of ``data_source`` in random order.

    Parameters
    ----------
    data_source : Dataset
        What is sampled (only its ``len`` is read).
    replacement : bool
        Draw ``num_samples`` indices independently (True) or permutations of
        the whole range, concatenated and cut to ``num_samples`` (False).
    num_samples : int, optional
        How many indices one pass yields; ``len(data_source)`` when None.
    generator : Generator, optional
        The source of randomness; when None each ``iter()`` seeds a private
        generator from ``cygrad.default_generator``.
    """

    def __init__(self, data_source: Sized, replacement: bool = False,
                 num_samples: int | None = None,
                 generator: Generator | None = None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        _check_bool("replacement", replacement, TypeError)
        _check_positive_int("num_samples", self.num_samples)

    @property
    def num_samples(self) -> int:
        if self._num_samples is None:
            return len(self.data_source)
        return self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        if self.generator is None:
            gen = Generator(_draw_seed())
        else:
            gen = self.generator
        m = self.num_samples
        if self.replacement:
            # drawn in blocks of 32 so that a long pass is not drawn up front
            stream = _stream(gen)
            for _ in range(m // 32):
                yield from stream.ints(32, n, 0, n >= 2 ** 32).tolist()
            yield from stream.ints(m % 32, n, 0, n >= 2 ** 32).tolist()
        else:
            for _ in range(m // n):
                yield from _permutation(n, gen).tolist()
            yield from _permutation(n, gen).tolist()[:m % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given ``indices``, in a random order (a new one each pass)."""

    def __init__(self, indices: Sequence[int],
                 generator: Generator | None = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in _permutation(len(self.indices), self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices in ``[0, len(weights))``, index ``i`` drawn with
    probability ``weights[i] / sum(weights)``.

    Parameters
    ----------
    weights : sequence of float
        Non-negative weights, not all zero (they need not sum to 1).
    num_samples : int
        How many indices one pass yields.
    replacement : bool
        Without replacement an index appears at most once, so ``num_samples``
        cannot exceed the number of non-zero weights.
    generator : Generator, optional
        ``cygrad.default_generator`` when None.

    Raises
    ------
    ValueError
        For a non-positive ``num_samples``, a non-bool ``replacement`` or
        weights that are not 1-D.
    RuntimeError
        When iterated with negative, non-finite or all-zero weights, or with
        too few non-zero weights to draw without replacement.
    """

    def __init__(self, weights: Sequence[float] | Tensor, num_samples: int,
                 replacement: bool = True, generator: Generator | None = None) -> None:
        _check_positive_int("num_samples", num_samples)
        _check_bool("replacement", replacement)
        if hasattr(weights, "detach"):
            weights = weights.detach().numpy()
        w = np.asarray(weights, dtype=np.float64)
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights "
                             f"have shape {tuple(w.shape)}")
        self.weights = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        w = self.weights
        if not np.all(np.isfinite(w)):
            raise RuntimeError("invalid multinomial distribution (encountering "
                               "probability entry = infinity or NaN)")
        if np.any(w < 0):
            raise RuntimeError("invalid multinomial distribution (encountering "
                               "probability entry < 0)")
        total = w.sum()
        if not total > 0:
            raise RuntimeError("invalid multinomial distribution (sum of "
                               "probabilities <= 0)")
        if not self.replacement and self.num_samples > np.count_nonzero(w):
            raise RuntimeError(
                f"cannot sample n_sample={self.num_samples} indices without "
                f"replacement from {np.count_nonzero(w)} non-zero weights")
        _stream(self.generator)
        drawn = multinomial(from_numpy(w), self.num_samples, self.replacement,
                            generator=self.generator)
        yield from drawn._arr.tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of ``batch_size`` consecutive indices of ``sampler``.

    The last list is shorter when ``len(sampler)`` is not a multiple of
    ``batch_size``, unless ``drop_last`` drops it.
    """

    def __init__(self, sampler: Iterable[int], batch_size: int,
                 drop_last: bool) -> None:
        _check_positive_int("batch_size", batch_size)
        _check_bool("drop_last", drop_last)
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        it = iter(self.sampler)
        size = self.batch_size
        while True:
            batch = list(islice(it, size))
            if not batch or (self.drop_last and len(batch) < size):
                return
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size

