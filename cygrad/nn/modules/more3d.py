"""The 3-d members of ``more``'s families: power-average pooling
(``LPPool3d``) and the lazy transposed 3-d convolution."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import _functional_pool3d as Fp3
from .conv import ConvTranspose3d
from .more import _LPPoolNd, _lazy_conv_t

if TYPE_CHECKING:
    from cygrad._tensor import Tensor

__all__ = ["LPPool3d", "LazyConvTranspose3d"]


class LPPool3d(_LPPoolNd):
    """Power-average pooling over (N, C, D, H, W): ``(sum x^p)^(1/p)`` per
    window."""

    def forward(self, input: Tensor) -> Tensor:
        return Fp3.lp_pool3d(input, float(self.norm_type), self.kernel_size,
                             self.stride, self.ceil_mode)


LazyConvTranspose3d = _lazy_conv_t(ConvTranspose3d, 3)
LazyConvTranspose3d.__module__ = __name__
