"""Collectives on cygrad tensors, in place, through mpi4py's buffer interface.

A contiguous tensor's NumPy array is handed to MPI as it is (no copy); a
non-contiguous one goes through a contiguous copy that is written back.  The
list forms (``all_gather``, ``gather``, ``scatter``, ``reduce_scatter``) go
through one contiguous staging buffer.  ``async_op=True`` returns a ``Work``
built on MPI's non-blocking calls; copies back and ``AVG``'s division happen in
``wait()``.  Every write bumps the tensor's version counter, so a tensor saved
for backward and then overwritten is caught as for any in-place op.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from cygrad._tensor import Tensor
from cygrad.distributed.process_group import ReduceOp, _mpi, _resolve

if TYPE_CHECKING:
    from cygrad._typing import Device
    from cygrad.distributed.process_group import ProcessGroup

__all__ = [
    "Work", "all_gather", "all_gather_into_tensor", "all_gather_object", "all_reduce",
    "all_to_all_single", "barrier", "broadcast", "broadcast_object_list", "gather",
    "gather_object", "irecv", "isend", "recv", "reduce", "reduce_scatter",
    "reduce_scatter_tensor", "scatter", "scatter_object_list", "send",
]

_BOOL_OPS = {ReduceOp.SUM: "LOR", ReduceOp.MAX: "LOR", ReduceOp.PRODUCT: "LAND",
             ReduceOp.MIN: "LAND", ReduceOp.BAND: "LAND", ReduceOp.BOR: "LOR",
             ReduceOp.BXOR: "LXOR"}
_OPS = {ReduceOp.SUM: "SUM", ReduceOp.AVG: "SUM", ReduceOp.PRODUCT: "PROD",
        ReduceOp.MIN: "MIN", ReduceOp.MAX: "MAX", ReduceOp.BAND: "BAND",
        ReduceOp.BOR: "BOR", ReduceOp.BXOR: "BXOR"}


class Work:
    """Handle of a collective started with ``async_op=True``.

    ``wait()`` blocks until it completed (and finishes copies back);
    ``is_completed()`` tests without blocking.
    """

    def __init__(self, requests, finish=None, result=None):
        self._requests = list(requests)
        self._finish = finish
        self._result = result if result is not None else []
        self._done = False

    def is_completed(self):
        if self._done:
            return True
        if _mpi().Request.Testall(self._requests):
            self._complete()
        return self._done

    def wait(self, timeout=None):
        if not self._done:
            _mpi().Request.Waitall(self._requests)
            self._complete()
        return True

    def _complete(self):
        self._done = True
        self._requests = []
        if self._finish is not None:
            finish, self._finish = self._finish, None
            finish()

    def is_success(self):
        return self._done

    def exception(self):
        return None

    def result(self):
        return list(self._result)

    def __repr__(self):
        return f"Work(completed={self._done})"


def _done(async_op, requests, finish=None, result=None):
    work = Work(requests, finish, result)
    if async_op:
        return work
    work.wait()
    return None


def _check_tensor(t, what="tensor"):
    if not isinstance(t, Tensor):
        raise TypeError(
            f"Invalid function argument. Expected parameter `{what}` of type "
            f"Tensor but got {type(t).__name__} instead.")
    arr = t._arr
    if arr.dtype.kind not in "fiub" or arr.dtype.itemsize == 2 and arr.dtype.kind == "f":
        raise TypeError(f"{what}: dtype {arr.dtype} is not supported by the MPI backend")
    return arr


class _Buffer:
    """A tensor's array as an MPI buffer: the array itself when contiguous,
    otherwise a contiguous copy (``filled`` says whether it holds the values)."""

    def __init__(self, t, what="tensor", fill=True):
        arr = _check_tensor(t, what)
        self.tensor = t
        self.direct = arr.flags.c_contiguous and arr.flags.writeable
        self.arr = arr if self.direct else np.ascontiguousarray(arr)
        if not self.direct and not fill:
            self.arr = np.empty(arr.shape, arr.dtype)

    def written(self):
        """Values are final: copy back if needed and bump the version."""
        t = self.tensor
        if not self.direct:
            np.copyto(t._arr, self.arr, casting="unsafe")
        t._ver.v += 1


def _mpi_op(op, dtype):
    if not isinstance(op, ReduceOp):
        raise TypeError(f"op must be a ReduceOp, got {op!r}")
    MPI = _mpi()
    if dtype.kind == "b":
        return getattr(MPI, _BOOL_OPS[op]) if op is not ReduceOp.AVG else None
    if op is ReduceOp.AVG and dtype.kind != "f":
        raise RuntimeError(
            f"ReduceOp.AVG is not supported for integer tensors (got {dtype})")
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and dtype.kind == "f":
        raise RuntimeError(f"ReduceOp.{op.name} is not supported for {dtype}")
    return getattr(MPI, _OPS[op])


def _group(group):
    """(ProcessGroup, comm) or (pg, None) when this process is not a member."""
    pg = _resolve(group)
    return pg, pg.comm


def all_reduce(tensor: Tensor, op: ReduceOp = ReduceOp.SUM,
               group: ProcessGroup | None = None,
               async_op: bool = False) -> Work | None:
    """Reduce ``tensor`` over every rank of ``group``; all get the result."""
    pg, comm = _group(group)
    if comm is None:
        return None
    buf = _Buffer(tensor)
    mop = _mpi_op(op, buf.arr.dtype)
    if mop is None:
        raise RuntimeError("ReduceOp.AVG is not supported for bool tensors")
    req = comm.Iallreduce(_mpi().IN_PLACE, buf.arr, mop)

    def finish():
        if op is ReduceOp.AVG:
            np.divide(buf.arr, pg.size(), out=buf.arr)
        buf.written()
    return _done(async_op, [req], finish, [tensor])


def broadcast(tensor: Tensor, src: int | None = None, group: ProcessGroup | None = None,
              async_op: bool = False, group_src: int | None = None) -> Work | None:
    """Copy ``tensor`` of rank ``src`` (a global rank) into every rank's."""
    pg, comm = _group(group)
    if comm is None:
        return None
    root = _root(pg, src, group_src, "src")
    buf = _Buffer(tensor, fill=comm.Get_rank() == root)
    req = comm.Ibcast(buf.arr, root=root)
    finish = buf.written if comm.Get_rank() != root else None
    return _done(async_op, [req], finish, [tensor])


def _root(pg, rank, group_rank, what):
    if group_rank is not None:
        if rank is not None:
            raise ValueError(f"Can not specify both {what} and group_{what}")
        if not 0 <= group_rank < pg.size():
            raise ValueError(f"Invalid group_{what} {group_rank}")
        return group_rank
    return pg.group_rank(0 if rank is None else rank, what)


def reduce(tensor: Tensor, dst: int | None = None, op: ReduceOp = ReduceOp.SUM,
           group: ProcessGroup | None = None, async_op: bool = False,
           group_dst: int | None = None) -> Work | None:
    """Reduce ``tensor`` over ``group`` into rank ``dst``'s tensor."""
    pg, comm = _group(group)
    if comm is None:
        return None
    root = _root(pg, dst, group_dst, "dst")
    buf = _Buffer(tensor)
    mop = _mpi_op(op, buf.arr.dtype)
    if mop is None:
        raise RuntimeError("ReduceOp.AVG is not supported for bool tensors")
    MPI = _mpi()
    mine = comm.Get_rank() == root
    req = comm.Ireduce(MPI.IN_PLACE if mine else buf.arr, buf.arr if mine else None,
                       mop, root=root)

    def finish():
        if mine:
            if op is ReduceOp.AVG:
                np.divide(buf.arr, pg.size(), out=buf.arr)
            buf.written()
    return _done(async_op, [req], finish, [tensor])


def _same_layout(t, ref, what):
    arr = _check_tensor(t, what)
    if arr.dtype != ref.dtype:
        raise TypeError(f"{what}: dtype {arr.dtype} does not match the input's "
                        f"{ref.dtype}")
    return arr


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor,
                           group: ProcessGroup | None = None,
                           async_op: bool = False) -> Work | None:
    """Concatenate every rank's ``input_tensor`` into ``output_tensor`` (of
    ``world_size * input.numel()`` elements, e.g. shape ``(world_size, *shape)``
    or ``(world_size * shape[0], *shape[1:])``)."""
    pg, comm = _group(group)
    if comm is None:
        return None
    src = _check_tensor(input_tensor, "input_tensor")
    _same_layout(output_tensor, src, "output_tensor")
    _check_numel(output_tensor, src.size * pg.size(), "output_tensor")
    out = _Buffer(output_tensor, "output_tensor", fill=False)
    req = comm.Iallgather(np.ascontiguousarray(src), out.arr)
    return _done(async_op, [req], out.written, [output_tensor])


def _check_numel(t, want, what):
    if t._arr.size != want:
        raise ValueError(
            f"{what} must have {want} elements (world_size times the input's), got "
            f"shape {tuple(t._arr.shape)}")


def reduce_scatter_tensor(output: Tensor, input: Tensor, op: ReduceOp = ReduceOp.SUM,
                          group: ProcessGroup | None = None,
                          async_op: bool = False) -> Work | None:
    """Reduce ``input`` (``world_size`` equal chunks) over ``group``; rank i
    receives the reduced chunk i in ``output``."""
    pg, comm = _group(group)
    if comm is None:
        return None
    src = _check_tensor(input, "input")
    _same_layout(output, src, "output")
    _check_numel(input, output._arr.size * pg.size(), "input")
    out = _Buffer(output, "output", fill=False)
    mop = _mpi_op(op, src.dtype)
    req = comm.Ireduce_scatter_block(np.ascontiguousarray(src), out.arr, mop)

    def finish():
        if op is ReduceOp.AVG:
            np.divide(out.arr, pg.size(), out=out.arr)
        out.written()
    return _done(async_op, [req], finish, [output])


def _check_list(tensors, n, ref, what):
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{what} must be a list of tensors, got {type(tensors).__name__}")
    if len(tensors) != n:
        raise ValueError(f"{what} must have world_size ({n}) tensors, got "
                         f"{len(tensors)}")
    for i, t in enumerate(tensors):
        arr = _same_layout(t, ref, f"{what}[{i}]")
        if arr.shape != ref.shape:
            raise ValueError(f"{what}[{i}] has shape {tuple(arr.shape)}, expected "
                             f"{tuple(ref.shape)}")


def _unstack(stage, tensors):
    for i, t in enumerate(tensors):
        np.copyto(t._arr, stage[i], casting="unsafe")
        t._ver.v += 1


def all_gather(tensor_list: list[Tensor], tensor: Tensor,
               group: ProcessGroup | None = None,
               async_op: bool = False) -> Work | None:
    """Every rank's ``tensor`` into ``tensor_list`` (one per rank, in order)."""
    pg, comm = _group(group)
    if comm is None:
        return None
    src = _check_tensor(tensor)
    _check_list(tensor_list, pg.size(), src, "tensor_list")
    stage = np.empty((pg.size(),) + src.shape, src.dtype)
    req = comm.Iallgather(np.ascontiguousarray(src), stage)
    return _done(async_op, [req], lambda: _unstack(stage, tensor_list), tensor_list)


def reduce_scatter(output: Tensor, input_list: list[Tensor],
                   op: ReduceOp = ReduceOp.SUM, group: ProcessGroup | None = None,
                   async_op: bool = False) -> Work | None:
    """Reduce ``input_list[i]`` over ``group`` into rank i's ``output``."""
    pg, comm = _group(group)
    if comm is None:
        return None
    ref = _check_tensor(output, "output")
    _check_list(input_list, pg.size(), ref, "input_list")
    stage = np.stack([t._arr for t in input_list])
    out = _Buffer(output, "output", fill=False)
    req = comm.Ireduce_scatter_block(stage, out.arr, _mpi_op(op, ref.dtype))

    def finish():
        if op is ReduceOp.AVG:
            np.divide(out.arr, pg.size(), out=out.arr)
        out.written()
    return _done(async_op, [req], finish, [output])


def gather(tensor: Tensor, gather_list: list[Tensor] | None = None,
           dst: int | None = None, group: ProcessGroup | None = None,
           async_op: bool = False, group_dst: int | None = None) -> Work | None:
    """Every rank's ``tensor`` into ``gather_list`` on rank ``dst`` only."""
    pg, comm = _group(group)
    if comm is None:
        return None
    root = _root(pg, dst, group_dst, "dst")
    src = _check_tensor(tensor)
    mine = comm.Get_rank() == root
    if mine:
        if gather_list is None:
            raise ValueError("Argument ``gather_list`` must be specified on destination "
                             "rank.")
        _check_list(gather_list, pg.size(), src, "gather_list")
        stage = np.empty((pg.size(),) + src.shape, src.dtype)
    elif gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on "
                         "non-destination ranks.")
    else:
        stage = None
    req = comm.Igather(np.ascontiguousarray(src), stage, root=root)
    finish = (lambda: _unstack(stage, gather_list)) if mine else None
    return _done(async_op, [req], finish, gather_list if mine else [])


def scatter(tensor: Tensor, scatter_list: list[Tensor] | None = None,
            src: int | None = None, group: ProcessGroup | None = None,
            async_op: bool = False, group_src: int | None = None) -> Work | None:
    """Rank ``src``'s ``scatter_list[i]`` into rank i's ``tensor``."""
    pg, comm = _group(group)
    if comm is None:
        return None
    root = _root(pg, src, group_src, "src")
    ref = _check_tensor(tensor)
    mine = comm.Get_rank() == root
    if mine:
        if scatter_list is None:
            raise ValueError("Argument ``scatter_list`` must be specified on source "
                             "rank.")
        _check_list(scatter_list, pg.size(), ref, "scatter_list")
        stage = np.stack([t._arr for t in scatter_list])
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on "
                         "non-source ranks.")
    else:
        stage = None
    out = _Buffer(tensor, fill=False)
    req = comm.Iscatter(stage, out.arr, root=root)
    return _done(async_op, [req], out.written, [tensor])


def all_to_all_single(output: Tensor, input: Tensor,
                      output_split_sizes: list[int] | None = None,
                      input_split_sizes: list[int] | None = None,
                      group: ProcessGroup | None = None,
                      async_op: bool = False) -> Work | None:
    """Rank i sends chunk j of ``input`` to rank j, which stores it as chunk i of
    ``output`` (equal chunks along dim 0 unless split sizes are given)."""
    pg, comm = _group(group)
    if comm is None:
        return None
    src = _check_tensor(input, "input")
    _same_layout(output, src, "output")
    n = pg.size()
    row = int(np.prod(src.shape[1:], dtype=np.int64)) if src.ndim else 1
    ins = _splits(input_split_sizes, src.shape[0] if src.ndim else 1, n, "input")
    outs = _splits(output_split_sizes, output._arr.shape[0] if output._arr.ndim else 1,
                   n, "output")
    out = _Buffer(output, "output", fill=False)
    sc = [s * row for s in ins]
    rc = [s * row for s in outs]
    req = comm.Ialltoallv([np.ascontiguousarray(src), (sc, _offsets(sc))],
                          [out.arr, (rc, _offsets(rc))])
    return _done(async_op, [req], out.written, [output])


def _splits(sizes, dim0, n, what):
    if not sizes:
        if dim0 % n:
            raise ValueError(f"{what}: dim 0 ({dim0}) is not divisible by the world "
                             f"size ({n})")
        return [dim0 // n] * n
    sizes = [int(s) for s in sizes]
    if len(sizes) != n or sum(sizes) != dim0:
        raise ValueError(f"{what}_split_sizes {sizes} must have {n} entries summing "
                         f"to {dim0}")
    return sizes


def _offsets(counts):
    return [int(x) for x in np.concatenate([[0], np.cumsum(counts)[:-1]])]


def barrier(group: ProcessGroup | None = None, async_op: bool = False,
            device_ids: list[int] | None = None) -> Work | None:
    """Wait until every rank of ``group`` reached this call."""
    _, comm = _group(group)
    if comm is None:
        return None
    return _done(async_op, [comm.Ibarrier()])


def _p2p_peer(pg, peer, group_peer, what):
    if group_peer is not None:
        return group_peer
    if peer is None:
        raise ValueError(f"{what} must be given")
    return pg.group_rank(peer, what)


def send(tensor: Tensor, dst: int | None = None, group: ProcessGroup | None = None,
         tag: int = 0, group_dst: int | None = None) -> None:
    """Send ``tensor`` to rank ``dst``; blocks until the buffer can be reused."""
    pg, comm = _group(group)
    if comm is None:
        return
    comm.Send(np.ascontiguousarray(_check_tensor(tensor)),
              dest=_p2p_peer(pg, dst, group_dst, "dst"), tag=tag)


def isend(tensor: Tensor, dst: int | None = None, group: ProcessGroup | None = None,
          tag: int = 0, group_dst: int | None = None) -> Work | None:
    """Non-blocking ``send``: returns a ``Work``."""
    pg, comm = _group(group)
    if comm is None:
        return None
    arr = np.ascontiguousarray(_check_tensor(tensor))
    req = comm.Isend(arr, dest=_p2p_peer(pg, dst, group_dst, "dst"), tag=tag)
    return Work([req], result=[tensor])


def recv(tensor: Tensor, src: int | None = None, group: ProcessGroup | None = None,
         tag: int = 0, group_src: int | None = None) -> int:
    """Receive into ``tensor`` from rank ``src`` (any rank when None); returns
    the sender's global rank."""
    pg, comm = _group(group)
    if comm is None:
        return -1
    MPI = _mpi()
    buf = _Buffer(tensor, fill=False)
    status = MPI.Status()
    source = (MPI.ANY_SOURCE if src is None and group_src is None
              else _p2p_peer(pg, src, group_src, "src"))
    comm.Recv(buf.arr, source=source, tag=tag, status=status)
    buf.written()
    return pg.ranks[status.Get_source()]


def irecv(tensor: Tensor, src: int | None = None, group: ProcessGroup | None = None,
          tag: int = 0, group_src: int | None = None) -> Work | None:
    """Non-blocking ``recv``: returns a ``Work``."""
    pg, comm = _group(group)
    if comm is None:
        return None
    MPI = _mpi()
    buf = _Buffer(tensor, fill=False)
    source = (MPI.ANY_SOURCE if src is None and group_src is None
              else _p2p_peer(pg, src, group_src, "src"))
    req = comm.Irecv(buf.arr, source=source, tag=tag)
    return Work([req], buf.written, [tensor])


# --- picklable objects -----------------------------------------------------------

def all_gather_object(object_list: list[Any], obj: Any,
                      group: ProcessGroup | None = None) -> None:
    """Every rank's ``obj`` (pickled) into ``object_list``, in rank order."""
    pg, comm = _group(group)
    if comm is None:
        return
    _check_obj_list(object_list, pg.size(), "object_list")
    object_list[:] = comm.allgather(obj)


def _check_obj_list(lst, n, what):
    if not isinstance(lst, list):
        raise TypeError(f"{what} must be a list, got {type(lst).__name__}")
    if n is not None and len(lst) != n:
        raise ValueError(f"{what} must have world_size ({n}) entries, got {len(lst)}")


def broadcast_object_list(object_list: list[Any], src: int | None = None,
                          group: ProcessGroup | None = None,
                          device: Device | None = None,
                          group_src: int | None = None) -> Work | None:
    """Rank ``src``'s ``object_list`` entries into every rank's list, in place."""
    pg, comm = _group(group)
    if comm is None:
        return
    _check_obj_list(object_list, None, "object_list")
    root = _root(pg, src, group_src, "src")
    data = comm.bcast(object_list if comm.Get_rank() == root else None, root=root)
    if len(data) != len(object_list):
        raise ValueError(f"object_list has {len(object_list)} entries here but "
                         f"{len(data)} on the source rank")
    object_list[:] = data


def gather_object(obj: Any, object_gather_list: Any = None, dst: int | None = None,
                  group: ProcessGroup | None = None,
                  group_dst: int | None = None) -> Work | None:
    """Every rank's ``obj`` into ``object_gather_list`` on rank ``dst``."""
    pg, comm = _group(group)
    if comm is None:
        return
    root = _root(pg, dst, group_dst, "dst")
    if comm.Get_rank() == root:
        _check_obj_list(object_gather_list, pg.size(), "object_gather_list")
    data = comm.gather(obj, root=root)
    if comm.Get_rank() == root:
        object_gather_list[:] = data


def scatter_object_list(scatter_object_output_list: Any,
                        scatter_object_input_list: Any = None, src: int | None = None,
                        group: ProcessGroup | None = None,
                        group_src: int | None = None) -> Work | None:
    """Rank ``src``'s ``scatter_object_input_list[i]`` into rank i's
    ``scatter_object_output_list[0]``."""
    pg, comm = _group(group)
    if comm is None:
        return
    if not isinstance(scatter_object_output_list, list) or \
            len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list "
                         "of size at least 1.")
    root = _root(pg, src, group_src, "src")
    if comm.Get_rank() == root:
        _check_obj_list(scatter_object_input_list, pg.size(),
                        "scatter_object_input_list")
    scatter_object_output_list[0] = comm.scatter(
        scatter_object_input_list if comm.Get_rank() == root else None, root=root)

