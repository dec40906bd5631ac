"""What runs inside a DataLoader worker process, and what crosses to it.

Protocol (one worker):
    main -> worker   ``index_queue`` (a multiprocessing Queue, so the main
                     process never blocks on a full pipe): ``(task, index)``,
                     a ``_Resume`` (persistent workers: restart an iterable
                     dataset's stream) or ``None`` (exit).
    worker -> main   ``result_conn`` (one pipe end per worker): bytes of
                     ``(task, payload)`` where payload is the fetched batch, an
                     ``ExceptionWrapper`` or a ``_StreamEnd`` (the worker's stream of
                     an ``IterableDataset`` is exhausted).
The main process waits on every result pipe and every worker's sentinel at
once, so a worker that dies is noticed at once, without polling.

Pickling: cygrad tensors refuse ``pickle`` (``cygrad.save`` is their file
format), so whatever crosses a process boundary here is pickled by
``dumps``, whose pickler sends a tensor as its NumPy array and
``requires_grad`` flag, and ``loads`` rebuilds it.  Nothing else of cygrad
changes.  Under ``fork`` the dataset, sampler and functions are inherited
rather than pickled.

Seeds: worker ``i`` seeds Python's ``random`` and cygrad's default generator
with ``base_seed + i`` and NumPy's global generator from ``(base_seed, i)``;
``base_seed`` is drawn once per loader iterator in the main process.
"""

from __future__ import annotations

import io
import os
import pickle
import queue
import random
import sys
import traceback

import numpy as np

from cygrad._kernels.threads import set_num_threads
from cygrad._tensor import Tensor
from cygrad.creation import from_numpy, manual_seed
from cygrad.utils.data._fetch import make_fetcher

__all__ = ["WorkerInfo", "get_worker_info"]

# how often (s) an idle worker checks that its parent is still alive
STATUS_CHECK_INTERVAL = 5.0



class _Resume:
    """Main -> persistent worker: a new epoch starts (restart the stream)."""


class _StreamEnd:
    """Worker -> main: this worker's copy of the IterableDataset is exhausted."""

_worker_info = None


class WorkerInfo:
    """What a worker knows about itself: ``id``, ``num_workers``, ``seed``
    and its copy of the ``dataset``.  Read-only."""

    __initialized = False

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.__keys = tuple(kwargs.keys())
        self.__initialized = True

    def __setattr__(self, key, val):
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {self.__class__.__name__} "
                               "objects")
        return super().__setattr__(key, val)

    def __repr__(self):
        items = ", ".join(f"{k}={getattr(self, k)}" for k in self.__keys)
        return f"{self.__class__.__name__}({items})"


def get_worker_info() -> WorkerInfo | None:
    """In a DataLoader worker: its ``WorkerInfo``; in the main process: None.

    Typical use, in an ``IterableDataset.__iter__`` or a ``worker_init_fn``:
    take the share ``info.id`` of ``info.num_workers`` of the data.
    """
    return _worker_info


class ExceptionWrapper:
    """An exception caught in a worker, with its formatted traceback.

    ``reraise()`` raises, in the main process, an exception of the same type
    whose message says which worker caught it and holds the original
    traceback (a ``RuntimeError`` if the type can't take one message).
    """

    def __init__(self, exc_info=None, where="in background"):
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_name = exc_info[0].__name__    # kept if exc_type is replaced
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        msg = (f"Caught {self.exc_name} {self.where}.\n"
               f"Original {self.exc_msg}")
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        try:
            exc = self.exc_type(msg)
        except Exception:  # noqa: BLE001 (a type that takes no message)
            raise RuntimeError(msg) from None
        raise exc


class _KeyErrorMessage(str):
    """KeyError shows the repr of its argument; this keeps the newlines."""

    def __repr__(self):
        return self


# --- pickling across processes -----------------------------------------------------

def _rebuild_tensor(arr, requires_grad):
    t = from_numpy(arr)
    if requires_grad:
        t.requires_grad_(True)
    return t


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj):
        if isinstance(obj, Tensor):
            if obj.requires_grad and not obj.is_leaf:
                raise RuntimeError(
                    "Cowardly refusing to serialize non-leaf tensor which requires_"
                    "grad, since autograd does not support crossing process "
                    "boundaries.  If you just want to transfer the data, call "
                    "detach() on the tensor before serializing (e.g., putting it on "
                    "the queue).")
            return _rebuild_tensor, (np.ascontiguousarray(obj._arr),
                                     bool(obj.requires_grad))
        return NotImplemented


def dumps(obj):
    """``pickle.dumps`` that also carries cygrad tensors (as NumPy arrays)."""
    buf = io.BytesIO()
    _Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buf.getvalue()


loads = pickle.loads


def _exception_payload(worker_id):
    wrapper = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
    try:
        pickle.dumps(wrapper.exc_type)
    except Exception:  # noqa: BLE001 (any pickling failure)
        # a class pickle can't name (defined in a function): keep the message
        wrapper.exc_type = RuntimeError
    return wrapper


# --- the worker process ---------------------------------------------------------

def _parent_alive(ppid):
    return os.getppid() == ppid


def _seed_worker(base_seed, worker_id):
    seed = base_seed + worker_id
    random.seed(seed)
    manual_seed(seed)
    np.random.seed(np.random.SeedSequence([worker_id, base_seed]).generate_state(4))
    return seed


def worker_loop(spec, index_queue, result_conn, worker_id, num_workers, base_seed,
                ppid, inherited=()):
    """Serve fetch requests until told to stop or the parent is gone.

    ``spec`` is ``(dataset, iterable, auto_collation, collate_fn, drop_last,
    worker_init_fn)``, or those bytes from ``dumps`` (start methods other than
    fork).  An exception while fetching is sent back, wrapped, for that task;
    one in starting up (unpickling ``spec``, ``worker_init_fn``, creating the
    stream) for every task.
    ``inherited`` are the main process's ends of the result pipes, copied by
    fork: closed at once, so that when the main process closes its own end a
    blocked send fails instead of waiting for a reader that never comes.
    """
    global _worker_info
    for conn in inherited:
        conn.close()
    try:
        set_num_threads(1)
        seed = _seed_worker(base_seed, worker_id)
        init_error = None
        fetcher = None
        try:
            if isinstance(spec, bytes):
                spec = loads(spec)   # fails if the dataset's class can't be imported
            dataset, iterable, auto_collation, collate_fn, drop_last, init_fn = spec
            _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers,
                                      seed=seed, dataset=dataset)
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = make_fetcher(dataset, iterable, auto_collation, collate_fn,
                                   drop_last)
        except Exception:  # noqa: BLE001 (user code: sent to main)
            init_error = _exception_payload(worker_id)
        stream_done = False
        while True:
            try:
                msg = index_queue.get(timeout=STATUS_CHECK_INTERVAL)
            except queue.Empty:
                if not _parent_alive(ppid):
                    return
                continue
            if msg is None:
                return
            if isinstance(msg, _Resume):
                stream_done = False
                if init_error is None:
                    try:
                        fetcher = make_fetcher(dataset, iterable, auto_collation,
                                               collate_fn, drop_last)
                    except Exception:  # noqa: BLE001 (user code: sent to main)
                        init_error = _exception_payload(worker_id)
                continue
            task, index = msg
            if init_error is not None:
                payload = init_error
            elif stream_done:
                payload = _StreamEnd()
            else:
                try:
                    payload = fetcher.fetch(index)
                except StopIteration:
                    if iterable:
                        payload, stream_done = _StreamEnd(), True
                    else:
                        payload = _exception_payload(worker_id)
                except Exception:  # noqa: BLE001 (user code: sent to main)
                    payload = _exception_payload(worker_id)
            try:
                blob = dumps((task, payload))
            except Exception:  # noqa: BLE001 (user code: sent to main)
                blob = dumps((task, _exception_payload(worker_id)))
            del payload
            result_conn.send_bytes(blob)
    except KeyboardInterrupt:
        pass        # the main process sees Ctrl-C too and raises it there
    except (BrokenPipeError, EOFError, OSError):
        pass        # the main process closed our pipe: it is shutting us down
    finally:
        try:
            result_conn.close()
        except OSError:
            pass
