"""``torch.nn.modules.batchnorm``'s path: the batch norms and their bases
(``_BatchNorm`` for ``isinstance`` checks; instance norms are ``_NormBase``
only, as torch's), defined in ``normalization`` and ``syncbatchnorm``."""

from .normalization import (  # noqa: F401
    BatchNorm1d, BatchNorm2d, BatchNorm3d, LazyBatchNorm1d, LazyBatchNorm2d,
    _BatchNorm, _NormBase,
)
from .more import LazyBatchNorm3d  # noqa: F401
from .syncbatchnorm import SyncBatchNorm  # noqa: F401

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d",
           "LazyBatchNorm2d", "LazyBatchNorm3d", "SyncBatchNorm"]
