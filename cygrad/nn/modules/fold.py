"""``Fold`` / ``Unfold`` (sliding blocks to columns and back) and the
distance modules ``PairwiseDistance`` / ``CosineSimilarity``: torch's
modules over the functional forms, with its argument names and reprs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import _functional_conv as Fc
from .. import _functional_loss as Fl
from ..module import Module

if TYPE_CHECKING:
    from cygrad._tensor import Tensor

__all__ = ["CosineSimilarity", "Fold", "PairwiseDistance", "Unfold"]


class Fold(Module):
    """Sum (N, C*kh*kw, L) columns into (N, C, *output_size) (``F.fold``)."""

    def __init__(self, output_size: int | tuple[int, ...],
                 kernel_size: int | tuple[int, ...],
                 dilation: int | tuple[int, ...] = 1,
                 padding: int | tuple[int, ...] | str = 0,
                 stride: int | tuple[int, ...] = 1) -> None:
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return Fc.fold(input, self.output_size, self.kernel_size, self.dilation,
                       self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, "
                f"stride={self.stride}")


class Unfold(Module):
    """Sliding blocks of (N, C, H, W) as (N, C*kh*kw, L) columns (``F.unfold``)."""

    def __init__(self, kernel_size: int | tuple[int, ...],
                 dilation: int | tuple[int, ...] = 1,
                 padding: int | tuple[int, ...] | str = 0,
                 stride: int | tuple[int, ...] = 1) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return Fc.unfold(input, self.kernel_size, self.dilation, self.padding,
                         self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class PairwiseDistance(Module):
    """``||x1 - x2 + eps||_p`` over the last dim (``F.pairwise_distance``)."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6,
                 keepdim: bool = False) -> None:
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return Fl.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class CosineSimilarity(Module):
    """Cosine of the angle between x1 and x2 along ``dim``
    (``F.cosine_similarity``)."""

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return Fl.cosine_similarity(x1, x2, self.dim, self.eps)
