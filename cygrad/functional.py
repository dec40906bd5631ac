"""``torch.functional``: the module where torch defines some of its
functions (``einsum``, ``split``, ``norm``, ``meshgrid``, ...), which scripts
import as ``import torch.functional as F``.  The same functions as
``cygrad.<name>``.  ``stft``, ``istft``, ``lu``, ``pca_lowrank`` and
``svd_lowrank`` are not built yet (AttributeError)."""

from cygrad.ops import OPS, public
from cygrad.ops.arrange import broadcast_shapes, unravel_index

__all__ = [
    "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_shapes", "broadcast_tensors",
    "cartesian_prod", "block_diag", "cdist", "chain_matmul", "einsum", "norm",
    "meshgrid", "split", "tensordot", "unique", "unique_consecutive", "unravel_index",
]

globals().update({name: public(OPS[name]) for name in __all__
                  if name not in ("broadcast_shapes", "unravel_index")})
