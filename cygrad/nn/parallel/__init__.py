"""``cygrad.nn.parallel``: ``DistributedDataParallel`` on cygrad.distributed."""

from cygrad.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
