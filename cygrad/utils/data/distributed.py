"""``DistributedSampler``: each of ``num_replicas`` processes reads its share.

The indices (a permutation seeded by ``seed + epoch`` when shuffling, else
``0 .. n-1``) are padded by repeating their start until their number divides
by ``num_replicas`` (or cut down to it with ``drop_last``); replica ``rank``
takes every ``num_replicas``-th index from position ``rank``.  Every replica
computes the same permutation, so the shares are disjoint (up to padding) and
together complete.  Call ``set_epoch(e)`` before each epoch for a new order.

``num_replicas`` and ``rank`` default to the world size and rank of
``cygrad.distributed``'s process group; it is only imported then.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from cygrad.creation import Generator
from cygrad.utils.data.sampler import Sampler, _permutation

if TYPE_CHECKING:
    from collections.abc import Iterator, Sized

__all__ = ["DistributedSampler"]


def _process_group():
    """``cygrad.distributed``, initialised, or a RuntimeError saying why not."""
    try:
        from cygrad import distributed as dist
    except ImportError as e:
        raise RuntimeError(
            "DistributedSampler: num_replicas and rank were not given and "
            f"cygrad.distributed is not available ({e}); pass num_replicas= and "
            "rank=, or install the extra (pip install 'cygrad[distributed]') and "
            "call cygrad.distributed.init_process_group() first") from None
    is_available = getattr(dist, "is_available", None)
    if is_available is not None and not is_available():
        raise RuntimeError(
            "DistributedSampler: num_replicas and rank were not given and "
            "cygrad.distributed is not available (mpi4py missing?); pass "
            "num_replicas= and rank=")
    is_initialized = getattr(dist, "is_initialized", None)
    if is_initialized is not None and not is_initialized():
        raise RuntimeError(
            "DistributedSampler: num_replicas and rank were not given and the "
            "default process group has not been initialized; call "
            "cygrad.distributed.init_process_group() first or pass num_replicas= "
            "and rank=")
    return dist


class DistributedSampler(Sampler):
    """The share of a dataset's indices that belongs to one replica.

    Parameters
    ----------
    dataset : Dataset
        A map-style dataset (only its ``len`` is read).
    num_replicas : int, optional
        Number of processes; the process group's world size when None.
    rank : int, optional
        This process's rank in ``[0, num_replicas)``; the group's when None.
    shuffle : bool
        Permute the indices (seeded by ``seed + epoch``).
    seed : int
        The same on every replica.
    drop_last : bool
        Drop the tail so every replica gets the same number of distinct
        indices, instead of padding with repeated ones.

    Raises
    ------
    ValueError
        For a rank outside ``[0, num_replicas - 1]``.
    RuntimeError
        If ``num_replicas`` or ``rank`` is None and no process group exists.
    """

    def __init__(self, dataset: Sized, num_replicas: int | None = None,
                 rank: int | None = None, shuffle: bool = True, seed: int = 0,
                 drop_last: bool = False) -> None:
        if num_replicas is None:
            num_replicas = _process_group().get_world_size()
        if rank is None:
            rank = _process_group().get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            gen = Generator(self.seed + self.epoch)
            indices = _permutation(n, gen).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            pad = self.total_size - len(indices)
            if pad > 0:
                reps = math.ceil(pad / len(indices))
                indices += (indices * reps)[:pad]
        else:
            indices = indices[:self.total_size]
        if len(indices) != self.total_size:
            raise RuntimeError(f"DistributedSampler: {len(indices)} indices for a "
                               f"total size of {self.total_size}; did the "
                               "dataset's length change?")
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch: with ``shuffle``, each epoch has its own order."""
        self.epoch = epoch
