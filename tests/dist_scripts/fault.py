"""Rank script: rank 1 fails in the way argv[1] says while the others wait
in a collective (they would wait forever if nothing ended the job)."""

import os
import signal
import sys
import time

import cygrad
import cygrad.distributed as dist


def main(mode):
    dist.init_process_group("mpi")
    rank = dist.get_rank()
    t = cygrad.ones(4)
    dist.all_reduce(t)          # everyone is up
    if rank == 1:
        time.sleep(0.3)
        if mode == "raise":
            raise ValueError("boom from rank 1")
        if mode == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if mode == "exit":
            sys.exit(3)
    dist.all_reduce(t)          # rank 1 never gets here
    print(f"rank {rank} was not ended", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
