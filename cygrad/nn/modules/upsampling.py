"""``Upsample`` (and its two fixed-mode aliases) on ``interpolate``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import _functional_pool as Fp
from ..module import Module

if TYPE_CHECKING:
    from cygrad._tensor import Tensor

__all__ = ["Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d"]


class Upsample(Module):
    """Resize by ``size`` or ``scale_factor`` with ``mode`` 'nearest',
    'nearest-exact', 'linear' or 'bilinear' (see ``interpolate``)."""

    def __init__(self, size: int | tuple[int, ...] | None = None,
                 scale_factor: Any = None,
                 mode: str = "nearest", align_corners: bool | None = None,
                 recompute_scale_factor: bool | None = None) -> None:
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        self.scale_factor = float(scale_factor) if isinstance(
            scale_factor, (int, float)) else scale_factor
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return Fp.interpolate(input, self.size, self.scale_factor, self.mode,
                              self.align_corners, self.recompute_scale_factor)

    def extra_repr(self) -> str:
        if self.scale_factor is not None:
            info = f"scale_factor={self.scale_factor!r}"
        else:
            info = f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """``Upsample(mode='nearest')``."""

    def __init__(self, size: int | tuple[int, ...] | None = None,
                 scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """``Upsample(mode='bilinear', align_corners=True)``."""

    def __init__(self, size: int | tuple[int, ...] | None = None,
                 scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
