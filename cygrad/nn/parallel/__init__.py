"""``cygrad.nn.parallel``: ``DistributedDataParallel`` on cygrad.distributed, and
``DataParallel`` (the CPU: the wrapped module as is)."""

from cygrad.nn.parallel.data_parallel import DataParallel
from cygrad.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel"]
