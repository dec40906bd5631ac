"""A torch-style DDP script that calls multiprocessing.spawn (run without
mpiexec: spawn starts the ranks)."""

import os
import sys

import cygrad
import cygrad.distributed as dist
import cygrad.multiprocessing as mp


def worker(rank, world_size, tag):
    os.environ.setdefault("MASTER_ADDR", "localhost")
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    t = cygrad.tensor([float(rank + 1)])
    dist.all_reduce(t)
    assert t.item() == world_size * (world_size + 1) / 2
    if tag == "fail" and rank == 1:
        raise RuntimeError("worker 1 failed on purpose")
    print(f"rank {rank} ok {tag} sum={t.item()}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    n = int(sys.argv[1])
    print("main starts", flush=True)
    try:
        mp.spawn(worker, args=(n, sys.argv[2]), nprocs=n, join=True)
    except mp.ProcessException as exc:
        print(f"main caught {type(exc).__name__}: {exc}", flush=True)
        sys.exit(2)
    print("main done", flush=True)
