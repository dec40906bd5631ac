"""Rank script: the launcher's environment and argument forwarding."""

import os
import sys

import cygrad.distributed as dist

dist.init_process_group()
rank, n = dist.get_rank(), dist.get_world_size()
assert os.environ["RANK"] == str(rank), os.environ["RANK"]
assert os.environ["WORLD_SIZE"] == str(n)
assert os.environ["LOCAL_RANK"] == str(rank)
assert os.environ["LOCAL_WORLD_SIZE"] == str(n)
assert os.environ["MASTER_ADDR"] and os.environ["MASTER_PORT"]
assert os.environ["CYGRAD_FORWARDED"] == "yes"
assert __name__ == "__main__"
print(f"args {sys.argv[1:]}")
print(f"rank {rank} ok")
dist.destroy_process_group()
