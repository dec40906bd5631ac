"""Pooling layers: max, average and adaptive pooling in 1-d, 2-d and 3-d, and
max unpooling, with torch's constructor arguments and ``extra_repr``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import _functional_pool as Fp
from .. import _functional_fractional as Ffr
from .. import _functional_pool3d as Fp3
from .._functional_conv import _tuple
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


class MaxPool3d(_MaxPoolNd):
    """Max over ``kernel_size`` windows of (N, C, D, H, W) or (C, D, H, W) input
    (see ``nn.functional.max_pool3d``)."""

    def forward(self, input: Tensor) -> Any:
        return Fp3.max_pool3d(input, self.kernel_size, self.stride, self.padding,
                              self.dilation, ceil_mode=self.ceil_mode,
                              return_indices=self.return_indices)


class AvgPool3d(AvgPool2d):
    """Mean over ``kernel_size`` windows of (N, C, D, H, W) or (C, D, H, W)
    input (see AvgPool2d)."""

    def forward(self, input: Tensor) -> Tensor:
        return Fp3.avg_pool3d(input, self.kernel_size, self.stride, self.padding,
                              self.ceil_mode, self.count_include_pad,
                              self.divisor_override)


class AdaptiveAvgPool3d(_AdaptiveNd):
    """Average to a fixed ``output_size`` (an int, or (D, H, W) with None
    meaning the input's size)."""

    def forward(self, input: Tensor) -> Tensor:
        return Fp3.adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool3d(_AdaptiveMaxNd):
    """Max to a fixed 3-d ``output_size`` (optionally with the indices)."""

    def forward(self, input: Tensor) -> Any:
        return Fp3.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class _MaxUnpoolNd(Module):
    _nd = 2

    def __init__(self, kernel_size: int | tuple[int, ...],
                 stride: int | tuple[int, ...] | None = None,
                 padding: int | tuple[int, ...] | str = 0) -> None:
        super().__init__()
        nd = self._nd
        self.kernel_size = _tuple(kernel_size, nd, "kernel_size")
        self.stride = _tuple(stride if stride is not None else kernel_size, nd,
                             "stride")
        self.padding = _tuple(padding, nd, "padding")

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}")

    def forward(self, input: Tensor, indices: Tensor,
                output_size: int | tuple[int, ...] | None = None) -> Tensor:
        fn = (Fp3.max_unpool1d, Fp3.max_unpool2d, Fp3.max_unpool3d)[self._nd - 1]
        return fn(input, indices, self.kernel_size, self.stride, self.padding,
                  output_size)


class MaxUnpool1d(_MaxUnpoolNd):
    """Inverse of MaxPool1d: ``forward(input, indices, output_size=None)``
    puts each value at its index, zeros elsewhere."""

    _nd = 1


class MaxUnpool2d(_MaxUnpoolNd):
    """Inverse of MaxPool2d (indices flat in each (H, W) plane)."""

    _nd = 2


class MaxUnpool3d(_MaxUnpoolNd):
    """Inverse of MaxPool3d (indices flat in each (D, H, W) volume)."""

    _nd = 3


__all__ += ["AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "AvgPool3d", "MaxPool3d",
            "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d"]


class _FractionalMaxPoolNd(Module):
    _nd = 2

    def __init__(self, kernel_size: int | tuple[int, ...],
                 output_size: int | tuple[int, ...] | None = None,
                 output_ratio: Any = None, return_indices: bool = False,
                 _random_samples: Any = None) -> None:
        super().__init__()
        nd = self._nd
        name = type(self).__name__
        self.kernel_size = _tuple(kernel_size, nd, "kernel_size")
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = (None if output_size is None
                            else _tuple(output_size, nd, "output_size"))
        self.output_ratio = (None if output_ratio is None
                             else _ratio(output_ratio, nd))
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or "
                             "a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be "
                             "specified")
        if self.output_ratio is not None and not all(0 < r < 1
                                                     for r in self.output_ratio):
            raise ValueError(
                f"output_ratio must be between 0 and 1 (got {output_ratio})"
            )

    def forward(self, input: Tensor) -> Any:
        fn = Ffr.fractional_max_pool2d if self._nd == 2 else Ffr.fractional_max_pool3d
        return fn(input, self.kernel_size, self.output_size, self.output_ratio,
                  self.return_indices, _random_samples=self._random_samples)


def _ratio(v, n):
    if isinstance(v, (tuple, list)):
        return tuple(v) * n if len(v) == 1 else tuple(v)
    return (v,) * n


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Fractional max pooling of (N, C, H, W) or (C, H, W) input to
    ``output_size`` or ``output_ratio`` of the input size (windows from
    cygrad's generator, or the fixed ``_random_samples`` buffer)."""

    _nd = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Fractional max pooling of (N, C, D, H, W) or (C, D, H, W) input."""

    _nd = 3


__all__ += ["FractionalMaxPool2d", "FractionalMaxPool3d"]
