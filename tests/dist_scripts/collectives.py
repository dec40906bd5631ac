"""Rank script: every collective against NumPy, for float32/float64/int64 and
every ReduceOp.  Each rank rebuilds every other rank's input (they depend only
on the rank), so each can compute the expected result itself."""

import numpy as np

import cygrad
import cygrad.distributed as dist

DTYPES = {"float32": cygrad.float32, "float64": cygrad.float64, "int64": cygrad.int64}
REF = {dist.ReduceOp.SUM: lambda xs: np.sum(xs, axis=0),
       dist.ReduceOp.PRODUCT: lambda xs: np.prod(xs, axis=0),
       dist.ReduceOp.MIN: lambda xs: np.min(xs, axis=0),
       dist.ReduceOp.MAX: lambda xs: np.max(xs, axis=0),
       dist.ReduceOp.AVG: lambda xs: np.sum(xs, axis=0) / len(xs),
       dist.ReduceOp.BAND: lambda xs: np.bitwise_and.reduce(xs, axis=0),
       dist.ReduceOp.BOR: lambda xs: np.bitwise_or.reduce(xs, axis=0),
       dist.ReduceOp.BXOR: lambda xs: np.bitwise_xor.reduce(xs, axis=0)}


def data(rank, dtype, shape=(2, 3)):
    """Exactly representable values, different on each rank (and for MIN/MAX
    not ordered by rank)."""
    n = int(np.prod(shape))
    base = (np.arange(n) * 7 + rank * 5) % 11 - 3
    if dtype == "int64":
        return base.reshape(shape).astype(np.int64)
    return (base * 0.25 + rank * 0.5).reshape(shape).astype(dtype)


def make(arr, name):
    return cygrad.tensor(arr, dtype=DTYPES[name])


def ops_for(name):
    ops = [dist.ReduceOp.SUM, dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN,
           dist.ReduceOp.MAX]
    if name == "int64":
        return ops + [dist.ReduceOp.BAND, dist.ReduceOp.BOR, dist.ReduceOp.BXOR]
    return ops + [dist.ReduceOp.AVG]


def eq(got, want):
    got = got.numpy() if isinstance(got, cygrad.Tensor) else got
    assert got.dtype == np.asarray(want).dtype or got.dtype.kind == "f", (got.dtype,)
    np.testing.assert_array_equal(got, np.asarray(want).astype(got.dtype))


def main():
    dist.init_process_group("mpi")
    rank, n = dist.get_rank(), dist.get_world_size()
    assert dist.is_initialized() and dist.get_backend() == "mpi"
    checks = 0
    for name in DTYPES:
        everyone = np.stack([data(r, name) for r in range(n)])
        for op in ops_for(name):
            for async_op in (False, True):
                t = make(data(rank, name), name)
                arr, ver = t._arr, t._version
                work = dist.all_reduce(t, op=op, async_op=async_op)
                if async_op:
                    assert work.wait() and work.is_completed()
                    assert work.result()[0] is t
                else:
                    assert work is None
                assert t._arr is arr, "all_reduce must work in place"
                assert t._version > ver
                eq(t, REF[op](everyone))
                checks += 1
            # reduce to the last rank: only dst's tensor holds the result
            t = make(data(rank, name), name)
            dist.reduce(t, dst=n - 1, op=op)
            eq(t, REF[op](everyone) if rank == n - 1 else data(rank, name))
            checks += 1
        if name == "int64":
            try:
                dist.all_reduce(make(data(rank, name), name), op=dist.ReduceOp.AVG)
            except RuntimeError as exc:
                assert "AVG" in str(exc) and "int64" in str(exc)
            else:
                raise AssertionError("AVG on int64 did not raise")

        # broadcast from every rank in turn, blocking and async
        for src in range(n):
            t = make(data(rank, name), name)
            work = dist.broadcast(t, src=src, async_op=src % 2 == 1)
            if work is not None:
                work.wait()
            eq(t, data(src, name))
            checks += 1

        # non-contiguous: a transposed view is reduced and written back
        base = make(data(rank, name, (3, 2)), name)
        view = base.t()
        assert not view._arr.flags.c_contiguous
        dist.all_reduce(view)
        eq(base, np.stack([data(r, name, (3, 2)) for r in range(n)]).sum(0))
        checks += 1

        # all_gather into a list, and into one tensor of either layout
        outs = [make(np.zeros((2, 3)), name) for _ in range(n)]
        dist.all_gather(outs, make(data(rank, name), name))
        for r in range(n):
            eq(outs[r], data(r, name))
        flat = make(np.zeros((2 * n, 3)), name)
        arr = flat._arr
        dist.all_gather_into_tensor(flat, make(data(rank, name), name))
        assert flat._arr is arr
        eq(flat, np.concatenate([data(r, name) for r in range(n)]))
        stacked = make(np.zeros((n, 2, 3)), name)
        dist.all_gather_into_tensor(stacked, make(data(rank, name), name),
                                    async_op=True).wait()
        eq(stacked, everyone)
        checks += 3

        # reduce_scatter: rank r gets the reduced chunk r
        big = [data(rank * n + j, name) for j in range(n)]
        full = {op: REF[op](np.stack([np.stack([data(r * n + j, name)
                                                for j in range(n)])
                                      for r in range(n)]))
                for op in (dist.ReduceOp.SUM, dist.ReduceOp.MAX)}
        for op in full:
            out = make(np.zeros((2, 3)), name)
            dist.reduce_scatter_tensor(out, make(np.concatenate(big), name), op=op)
            eq(out, full[op][rank])
            out = make(np.zeros((2, 3)), name)
            dist.reduce_scatter(out, [make(b, name) for b in big], op=op)
            eq(out, full[op][rank])
            checks += 2

        # gather / scatter to and from the last rank
        dst = n - 1
        lst = [make(np.zeros((2, 3)), name) for _ in range(n)] if rank == dst else None
        dist.gather(make(data(rank, name), name), lst, dst=dst)
        if rank == dst:
            for r in range(n):
                eq(lst[r], data(r, name))
        t = make(np.zeros((2, 3)), name)
        pieces = [make(data(10 + r, name), name) for r in range(n)] \
            if rank == dst else None
        dist.scatter(t, pieces, src=dst)
        eq(t, data(10 + rank, name))
        checks += 2

        # point to point: a ring, blocking one way, non-blocking the other
        # (a blocking send to oneself would wait forever, as in MPI)
        right, left = (rank + 1) % n, (rank - 1) % n
        if n == 1:
            continue
        t = make(np.zeros((2, 3)), name)
        if rank % 2 == 0:
            dist.send(make(data(rank, name), name), dst=right)
            sender = dist.recv(t, src=left)
        else:
            sender = dist.recv(t)
            dist.send(make(data(rank, name), name), dst=right)
        assert sender == left
        eq(t, data(left, name))
        t = make(np.zeros((2, 3)), name)
        reqs = [dist.isend(make(data(rank, name), name), dst=left, tag=7),
                dist.irecv(t, src=right, tag=7)]
        for w in reqs:
            w.wait()
        eq(t, data(right, name))
        checks += 2

        # all_to_all_single: chunk j of rank i lands as chunk i of rank j
        inp = make(np.concatenate([data(rank * 100 + j, name)[:1] for j in range(n)]),
                   name)
        out = make(np.zeros((n, 3)), name)
        dist.all_to_all_single(out, inp)
        eq(out, np.concatenate([data(i * 100 + rank, name)[:1] for i in range(n)]))
        checks += 1

    # objects
    got = [None] * n
    dist.all_gather_object(got, {"rank": rank, "sq": rank * rank})
    assert got == [{"rank": r, "sq": r * r} for r in range(n)]
    objs = ["a", 1, {"k": (2, 3)}] if rank == n - 1 else [None, None, None]
    dist.broadcast_object_list(objs, src=n - 1)
    assert objs == ["a", 1, {"k": (2, 3)}]
    lst = [None] * n if rank == 0 else None
    dist.gather_object(("r", rank), lst, dst=0)
    if rank == 0:
        assert lst == [("r", r) for r in range(n)]
    out = [None]
    dist.scatter_object_list(out, [f"to {r}" for r in range(n)] if rank == 0 else None)
    assert out == [f"to {rank}"]
    checks += 4

    # a subgroup of the first and the last rank
    members = sorted({0, n - 1})
    g = dist.new_group(members)
    t = make(data(rank, "float64"), "float64")
    dist.all_reduce(t, group=g)
    if rank in members:
        assert dist.get_rank(g) == members.index(rank)
        assert dist.get_world_size(g) == len(members)
        eq(t, sum(data(r, "float64") for r in members))
        t = make(data(rank, "float64"), "float64")
        dist.broadcast(t, src=n - 1, group=g)
        eq(t, data(n - 1, "float64"))
    else:
        assert dist.get_rank(g) == -1
        eq(t, data(rank, "float64"))
    checks += 1

    # argument errors leave the tensor as it was
    t = make(data(rank, "float32"), "float32")
    for bad, exc in ((lambda: dist.all_gather([t] * (n + 1), t), ValueError),
                     (lambda: dist.all_reduce(np.ones(3)), TypeError),
                     (lambda: dist.broadcast(t, src=n), ValueError),
                     (lambda: dist.all_reduce(t, op="sum"), TypeError)):
        try:
            bad()
        except exc:
            pass
        else:
            raise AssertionError(f"{bad} did not raise {exc.__name__}")
    eq(t, data(rank, "float32"))
    checks += 1

    w = dist.barrier(async_op=True)
    w.wait()
    assert w.is_completed()
    dist.destroy_process_group()
    assert not dist.is_initialized()
    print(f"rank {rank} ok {checks} checks", flush=True)


if __name__ == "__main__":
    main()
