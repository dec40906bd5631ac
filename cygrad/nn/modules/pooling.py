"""Pooling layers: max, average and adaptive pooling in 1-d and 2-d, with
torch's constructor arguments and ``extra_repr``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import _functional_pool as Fp
from ..module import Module

if TYPE_CHECKING:
    from cygrad._tensor import Tensor

__all__ = [
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "AvgPool1d",
    "AvgPool2d",
    "MaxPool1d",
    "MaxPool2d",
]


class _MaxPoolNd(Module):
    def __init__(self, kernel_size: int | tuple[int, ...],
                 stride: int | tuple[int, ...] | None = None,
                 padding: int | tuple[int, ...] | str = 0,
                 dilation: int | tuple[int, ...] = 1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, "
            f"padding={self.padding}, dilation={self.dilation}, "
            f"ceil_mode={self.ceil_mode}"
        )


class MaxPool2d(_MaxPoolNd):
    """Max over ``kernel_size`` windows of (N, C, H, W) or (C, H, W) input
    (see ``nn.functional.max_pool2d``)."""

    def forward(self, input: Tensor) -> Any:
        return Fp.max_pool2d(input, self.kernel_size, self.stride, self.padding,
                             self.dilation, ceil_mode=self.ceil_mode,
                             return_indices=self.return_indices)


class MaxPool1d(_MaxPoolNd):
    """Max over windows of (N, C, L) or (C, L) input."""

    def forward(self, input: Tensor) -> Any:
        return Fp.max_pool1d(input, self.kernel_size, self.stride, self.padding,
                             self.dilation, ceil_mode=self.ceil_mode,
                             return_indices=self.return_indices)


class AvgPool2d(Module):
    """Mean over ``kernel_size`` windows; ``count_include_pad`` counts the zero
    padding in the divisor, ``divisor_override`` replaces it."""

    def __init__(self, kernel_size: int | tuple[int, ...],
                 stride: int | tuple[int, ...] | None = None,
                 padding: int | tuple[int, ...] | str = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: Any = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}")

    def forward(self, input: Tensor) -> Tensor:
        return Fp.avg_pool2d(input, self.kernel_size, self.stride, self.padding,
                             self.ceil_mode, self.count_include_pad,
                             self.divisor_override)


class AvgPool1d(Module):
    """Mean over windows of (N, C, L) or (C, L) input."""

    def __init__(self, kernel_size: int | tuple[int, ...],
                 stride: int | tuple[int, ...] | None = None,
                 padding: int | tuple[int, ...] | str = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if (stride is not None) else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}")

    def forward(self, input: Tensor) -> Tensor:
        return Fp.avg_pool1d(input, self.kernel_size, self.stride, self.padding,
                             self.ceil_mode, self.count_include_pad)


def _single(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,)


class _AdaptiveNd(Module):
    def __init__(self, output_size: int | tuple[int, ...]) -> None:
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool2d(_AdaptiveNd):
    """Average to a fixed ``output_size`` (an int, or (H, W) with None meaning
    the input's size)."""

    def forward(self, input: Tensor) -> Tensor:
        return Fp.adaptive_avg_pool2d(input, self.output_size)


class AdaptiveAvgPool1d(_AdaptiveNd):
    """Average (N, C, L) input to length ``output_size``."""

    def forward(self, input: Tensor) -> Tensor:
        return Fp.adaptive_avg_pool1d(input, self.output_size)


class _AdaptiveMaxNd(Module):
    def __init__(self, output_size: int | tuple[int, ...],
                 return_indices: bool = False) -> None:
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool2d(_AdaptiveMaxNd):
    """Max to a fixed ``output_size`` (optionally with the indices)."""

    def forward(self, input: Tensor) -> Any:
        return Fp.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMaxNd):
    """Max of (N, C, L) input to length ``output_size``."""

    def forward(self, input: Tensor) -> Any:
        return Fp.adaptive_max_pool1d(input, self.output_size, self.return_indices)
