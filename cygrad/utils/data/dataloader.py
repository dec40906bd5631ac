"""``DataLoader``: batches from a dataset, in this process or in workers.

One pass (``iter(loader)``) first draws a base seed from the loader's
generator (``cygrad.default_generator`` when None), then reads the sampler:
indices, or lists of indices when batching is automatic (``batch_size`` not
None), each fetched and collated into one batch.

With ``num_workers=0`` the fetching happens here.  With ``num_workers > 0``
the sampler still runs here, in the main process, and its indices go round
robin to worker processes; their batches come back in the order of the
indices.  The batches are therefore exactly those of ``num_workers=0`` for the
same seed (the random draws of the sampler happen in the same process, in the
same order), as long as the dataset itself draws no random numbers.

A worker that raises: the main process stops every worker, then raises an
exception of the same type whose message holds the worker's traceback.  A
worker that dies, or a ``timeout`` that expires, also stops every worker and
raises ``RuntimeError``.  Idle workers leave when the main process is gone.

Differences from torch: tensors cross from the workers through pipes as
NumPy arrays (no shared memory); ``pin_memory`` does nothing but warn, as
torch does without an accelerator (cygrad runs on the CPU); an iterator whose
worker raised is finished (torch keeps its workers and lets ``next`` go on).
"""

from __future__ import annotations

import itertools
import multiprocessing
import multiprocessing.connection
import os
import time
import warnings
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from cygrad.utils.data import _worker
from cygrad.utils.data._collate import default_collate, default_convert
from cygrad.utils.data._fetch import make_fetcher
from cygrad.utils.data._worker import ExceptionWrapper, dumps, loads
from cygrad.utils.data.dataset import IterableDataset
from cygrad.utils.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    _draw_seed,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

    from cygrad.creation import Generator
    from cygrad.utils.data.dataset import Dataset

__all__ = ["DataLoader"]


class _InfiniteConstantSampler(Sampler):
    """``None`` forever: the 'indices' of an IterableDataset."""

    def __iter__(self):
        while True:
            yield None


def _check_context(ctx, num_workers):
    if ctx is None:
        return None
    if num_workers == 0:
        raise ValueError(
            f"multiprocessing_context can only be used with multi-process loading "
            f"(num_workers > 0), but got num_workers={num_workers}")
    if isinstance(ctx, str):
        methods = multiprocessing.get_all_start_methods()
        if ctx not in methods:
            raise ValueError(
                f"multiprocessing_context option should specify a valid start "
                f"method in {methods!r}, but got multiprocessing_context={ctx!r}")
        return multiprocessing.get_context(ctx)
    if not isinstance(ctx, multiprocessing.context.BaseContext):
        raise TypeError(
            f"multiprocessing_context option should be a valid context object or a "
            f"string specifying the start method, but got "
            f"multiprocessing_context={ctx}")
    return ctx


T_co = TypeVar("T_co", covariant=True)


class DataLoader(Generic[T_co]):
    """Iterate over a dataset in batches (generic like torch's: ``DataLoader[T]``).

    Parameters
    ----------
    dataset : Dataset or IterableDataset
    batch_size : int or None
        Samples per batch (1); None turns automatic batching off: each item
        of the sampler is one sample, passed through ``default_convert``.
    shuffle : bool, optional
        A new random order at every pass (``RandomSampler``).
    sampler : Sampler or iterable, optional
        The indices to read; excludes ``shuffle``.
    batch_sampler : Sampler or iterable, optional
        Lists of indices, one per batch; excludes ``batch_size``, ``shuffle``,
        ``sampler`` and ``drop_last``.
    num_workers : int
        Worker processes (0: load in this process).
    collate_fn : callable, optional
        Samples -> batch; ``default_collate`` (``default_convert`` without
        batching) when None.
    pin_memory : bool
        Accepted for compatibility; does nothing.
    drop_last : bool
        Drop the last, incomplete batch.
    timeout : float
        Seconds to wait for a batch from the workers (0: forever).
    worker_init_fn : callable, optional
        Called as ``worker_init_fn(worker_id)`` in each worker, after seeding.
    multiprocessing_context : str or context, optional
        How to start workers (``"fork"``, ``"spawn"``, ...).
    generator : Generator, optional
        Draws the base seed of the workers and, with ``shuffle``, the order.
    prefetch_factor : int, optional
        Batches requested ahead per worker (2 when ``num_workers > 0``).
    persistent_workers : bool
        Keep the workers from one pass to the next.
    pin_memory_device : str
        Accepted for compatibility; does nothing.
    in_order : bool
        Batches in sampler order (True) or as the workers finish them.

    Raises
    ------
    ValueError
        For negative ``num_workers`` or ``timeout`` and for options that
        exclude each other (with torch's messages).
    """

    _initialized = False
    _PROTECTED = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                  "persistent_workers")

    def __init__(self, dataset: Dataset[T_co], batch_size: int | None = 1,
                 shuffle: bool | None = None, sampler: Iterable[Any] | None = None,
                 batch_sampler: Iterable[list[Any]] | None = None, num_workers: int = 0,
                 collate_fn: Callable[[list[Any]], Any] | None = None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Callable[[int], None] | None = None,
                 multiprocessing_context: Any = None,
                 generator: Generator | None = None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use "
                             "num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in "
                             "multiprocessing.let num_workers > 0 to enable "
                             "multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = _check_context(multiprocessing_context,
                                                      num_workers)
        self.in_order = in_order
        self._iterable = isinstance(dataset, IterableDataset)

        if self._iterable:
            if shuffle not in (None, False):
                raise ValueError(f"DataLoader with IterableDataset: expected "
                                 f"unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected "
                                 f"unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected "
                                 f"unspecified batch_sampler option, but got "
                                 f"batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with "
                                 "batch_size, shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is "
                             "mutually exclusive with drop_last")
        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._iterator = None
        self._initialized = True
        self.check_worker_number_rationality()

    def check_worker_number_rationality(self) -> None:
        """Warn (UserWarning, as torch does when the loader is made and at each
        new multi-process iterator) when ``num_workers`` exceeds the CPUs this
        process may run on: the workers then compete for them."""
        if not self.num_workers:
            return
        try:
            cpus = len(os.sched_getaffinity(0))
        except AttributeError:          # no affinity on this platform
            cpus = os.cpu_count()
        if cpus is None or self.num_workers > cpus:
            have = (f"this process may run on {cpus} CPUs" if cpus is not None
                    else "the number of CPUs is unknown")
            warnings.warn(
                f"This DataLoader will create {self.num_workers} worker processes in "
                f"total, but {have}: workers beyond that compete for them and can "
                "make loading slow or stall it; lower num_workers.",
                UserWarning, stacklevel=3)

    def __setattr__(self, attr: str, val: Any) -> None:
        if self._initialized and attr in self._PROTECTED:
            raise ValueError(f"{attr} attribute should not be set after "
                             f"{self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        self.check_worker_number_rationality()
        return _MultiProcessIter(self)

    def __iter__(self) -> Iterator[Any]:
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None or self._iterator._stopped:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def __len__(self) -> int:
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is not None:
                if self.drop_last:
                    n = n // self.batch_size
                else:
                    n = -(-n // self.batch_size)
            return n
        return len(self._index_sampler)


class _BaseIter:
    def __init__(self, loader):
        # torch's warnings at every new iterator (cygrad has no accelerator)
        if loader.pin_memory and loader.pin_memory_device:
            warnings.warn(
                "pin_memory_device is deprecated, the current accelerator will be "
                f"used as the device,ignore pin_memory_device="
                f"'{loader.pin_memory_device}'.", stacklevel=3)
        if loader.pin_memory:
            warnings.warn("'pin_memory' argument is set as true but no accelerator "
                          "is found, then device pinned memory won't be used.",
                          stacklevel=3)
        self._dataset = loader.dataset
        self._iterable = loader._iterable
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._collate_fn = loader.collate_fn
        self._num_workers = loader.num_workers
        self._timeout = loader.timeout
        self._base_seed = _draw_seed(loader.generator)
        self._stopped = False
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0

    def _reset(self, loader, first_iter=False):
        if not first_iter:
            # one draw per pass, as a fresh iterator makes: a persistent
            # loader shuffles like a non-persistent one
            _draw_seed(loader.generator)
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0

    def __iter__(self):
        return self

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        return data

    def __len__(self):
        return len(self._index_sampler)


class _SingleProcessIter(_BaseIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._fetcher = make_fetcher(self._dataset, self._iterable,
                                     self._auto_collation, self._collate_fn,
                                     self._drop_last)

    def _next_data(self):
        index = next(self._sampler_iter)
        return self._fetcher.fetch(index)


class _MultiProcessIter(_BaseIter):
    """Workers, their queues and pipes, and the reordering of their results.

    ``_task_info[i]`` is ``(worker,)`` while task ``i`` is out, and
    ``(worker, batch)`` once its batch came back before an earlier one.
    Tasks carry the pass number, so that a persistent worker's leftovers from
    an abandoned pass are recognised and dropped.
    """

    def __init__(self, loader):
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        self._persistent = loader.persistent_workers
        self._in_order = loader.in_order
        self._epoch = 0
        self._workers, self._index_queues, self._conns = [], [], []
        ctx = loader.multiprocessing_context or multiprocessing.get_context()
        spec = (self._dataset, self._iterable, self._auto_collation,
                self._collate_fn, self._drop_last, loader.worker_init_fn)
        forking = ctx.get_start_method() == "fork"
        if not forking:
            spec = dumps(spec)
        try:
            for wid in range(self._num_workers):
                q = ctx.Queue()
                q.cancel_join_thread()      # never block exit on a dead worker
                recv, send = ctx.Pipe(duplex=False)
                p = ctx.Process(
                    target=_worker.worker_loop,
                    args=(spec, q, send, wid, self._num_workers, self._base_seed,
                          os.getpid(), [*self._conns, recv] if forking else ()),
                    daemon=True)
                p.start()
                send.close()                # EOF on recv when the worker ends
                self._workers.append(p)
                self._index_queues.append(q)
                self._conns.append(recv)
            self._reset(loader, first_iter=True)
        except BaseException:       # a failing start or sampler: no orphans
            self._shutdown_workers()
            raise

    def _reset(self, loader, first_iter=False):
        super()._reset(loader, first_iter)
        self._epoch += 1
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info = {}
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter and self._iterable:
            for q in self._index_queues:
                q.put(_worker._Resume())
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_put_index(self):
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        for _ in range(self._num_workers):
            wid = next(self._worker_cycle)
            if self._workers_status[wid]:
                break
        else:
            return      # every worker's stream has ended
        self._index_queues[wid].put(((self._epoch, self._send_idx), index))
        self._task_info[self._send_idx] = (wid,)
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _next_data(self):
        if self._stopped:
            raise StopIteration
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None and (len(info) == 2 or
                                         self._workers_status[info[0]]):
                    break
                self._task_info.pop(self._rcvd_idx, None)
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                data = self._task_info.pop(self._rcvd_idx)[1]
                self._rcvd_idx += 1
                return self._process_data(data)
            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if isinstance(data, _worker._StreamEnd):
                self._workers_status[self._task_info[idx][0]] = False
                self._try_put_index()
                continue
            if idx == self._rcvd_idx:
                del self._task_info[idx]
                self._rcvd_idx += 1
                return self._process_data(data)
            if not self._in_order:
                del self._task_info[idx]
                return self._process_data(data)
            self._task_info[idx] += (data,)

    def _process_data(self, data):
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            self._shutdown_workers()
            data.reraise()
        return data

    def _get_data(self):
        """``(task, payload)`` of the next result of this pass from any worker."""
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        by_sentinel = {p.sentinel: i for i, p in enumerate(self._workers)}
        while True:
            wait = _worker.STATUS_CHECK_INTERVAL
            if deadline is not None:
                wait = deadline - time.monotonic()
                if wait <= 0:
                    self._shutdown_workers()
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} "
                                       "seconds")
            ready = multiprocessing.connection.wait(
                self._conns + list(by_sentinel), timeout=wait)
            dead = []
            for obj in ready:
                if obj in by_sentinel:
                    if not self._conns[by_sentinel[obj]].poll(0):
                        dead.append(by_sentinel[obj])
                    continue
                try:
                    blob = obj.recv_bytes()
                except (EOFError, OSError):
                    dead.append(self._conns.index(obj))
                    continue
                try:
                    (epoch, task), payload = loads(blob)
                except Exception:
                    # e.g. a class only the worker could import: stop, then say so
                    self._shutdown_workers()
                    raise
                if epoch == self._epoch:
                    return task, payload
            if dead:
                pids = ", ".join(str(self._workers[i].pid)
                                 for i in sorted(set(dead)))
                self._shutdown_workers()
                raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited "
                                   "unexpectedly")

    def _shutdown_workers(self):
        """Stop every worker and release the queues; safe to call twice."""
        if self._stopped:
            return
        self._stopped = True
        for q in self._index_queues:
            try:
                q.put(None)
            except (OSError, ValueError):
                pass
        # a worker blocked on sending a batch gets a broken pipe and leaves
        for c in self._conns:
            c.close()
        deadline = time.monotonic() + _worker.STATUS_CHECK_INTERVAL
        for p in self._workers:
            p.join(timeout=max(0.0, deadline - time.monotonic()))
        for p in self._workers:
            if p.is_alive():
                p.terminate()
                p.join(timeout=1.0)
            if p.is_alive():
                p.kill()
                p.join()
        for q in self._index_queues:
            q.close()

    def __del__(self):
        try:
            self._shutdown_workers()
        except Exception:  # noqa: BLE001, S110 (interpreter shutdown)
            pass
