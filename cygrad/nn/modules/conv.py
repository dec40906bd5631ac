"""Convolution layers: ``Conv1d``, ``Conv2d``, ``Conv3d``, ``ConvTranspose1d``,
``ConvTranspose2d``, ``ConvTranspose3d``, with torch's arguments, parameter names and shapes and
default initialisation (so state dicts move between the two libraries)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from cygrad._device import check_device
from cygrad.creation import empty, get_default_dtype

from .. import _functional_conv as Fc
from .. import init
from ..module import Module
from ..parameter import Parameter
from .lazy import LazyModuleMixin

if TYPE_CHECKING:
    from cygrad._tensor import Tensor
    from cygrad._typing import Device, DType

__all__ = ["Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    """Shared construction of the convolution layers.

    ``weight`` has shape ``(out_channels, in_channels / groups, *kernel_size)``
    (transposed: ``(in_channels, out_channels / groups, *kernel_size)``),
    initialised by ``kaiming_uniform_(a=sqrt(5))``; ``bias`` ``(out_channels,)``
    from ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` with fan_in of the weight.
    """

    _nd = 2

    def __init__(self, in_channels: int, out_channels: int,
                 kernel_size: int | tuple[int, ...], stride: int | tuple[int, ...],
                 padding: int | tuple[int, ...] | str, dilation: int | tuple[int, ...],
                 transposed: Any, output_padding: int | tuple[int, ...], groups: int,
                 bias: bool, padding_mode: str, device: Device | None = None,
                 dtype: DType | None = None) -> None:
        super().__init__()
        check_device(device)
        nd = self._nd
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(
                    f"Invalid padding string {padding!r}, should be one of "
                    "{'valid', 'same'}"
                )
            if padding == "same" and any(s != 1 for s in Fc._tuple(stride, nd,
                                                                     "stride")):
                raise ValueError(
                    "padding='same' is not supported for strided convolutions"
                )
        if padding_mode not in _PADDING_MODES:
            raise ValueError(
                "padding_mode must be one of {'reflect', 'zeros', 'circular', "
                f"'replicate'}}, but got padding_mode='{padding_mode}'"
            )
        self.in_channels = int(in_channels)
        self.out_channels = int(out_channels)
        self.kernel_size = Fc._tuple(kernel_size, nd, "kernel_size")
        self.stride = Fc._tuple(stride, nd, "stride")
        self.padding = padding if isinstance(padding, str) else Fc._tuple(
            padding, nd, "padding")
        self.dilation = Fc._tuple(dilation, nd, "dilation")
        self.transposed = transposed
        self.output_padding = Fc._tuple(output_padding, nd, "output_padding")
        self.groups = int(groups)
        self.padding_mode = padding_mode
        if isinstance(self.padding, str):
            rev = [0, 0] * nd
            if padding == "same":
                for d, k, i in zip(self.dilation, self.kernel_size,
                                   range(nd - 1, -1, -1)):
                    total = d * (k - 1)
                    left = total // 2
                    rev[2 * i] = left
                    rev[2 * i + 1] = total - left
        else:
            rev = [p for p in reversed(self.padding) for _ in range(2)]
        self._reversed_padding_repeated_twice = rev
        dt = np.dtype(get_default_dtype() if dtype is None else dtype)
        if transposed:
            shape = (self.in_channels, self.out_channels // self.groups)
        else:
            shape = (self.out_channels, self.in_channels // self.groups)
        self.weight = Parameter(empty(*shape, *self.kernel_size, dtype=dt))
        if bias:
            self.bias = Parameter(empty(self.out_channels, dtype=dt))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw the parameters again from torch's default distributions."""
        if self.weight.numel() > 0:
            init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = init._fans(self.weight)[0]
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        nd = self._nd
        s = (f"{self.in_channels}, {self.out_channels}, "
             f"kernel_size={self.kernel_size}, stride={self.stride}")
        if self.padding != (0,) * nd:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * nd:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * nd:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s

    def _conv_forward(self, input, weight, bias):
        fn = {1: Fc.conv1d, 2: Fc.conv2d, 3: Fc.conv3d}[self._nd]
        if self.padding_mode != "zeros":
            mode = "constant" if self.padding_mode == "zeros" else self.padding_mode
            Fc._check_input_dim(input, self._nd, fn.__name__)
            padded = Fc.pad(input, self._reversed_padding_repeated_twice, mode=mode)
            return fn(padded, weight, bias, self.stride, 0, self.dilation, self.groups)
        return fn(input, weight, bias, self.stride, self.padding, self.dilation,
                  self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class Conv2d(_ConvNd):
    """2-d convolution layer over (N, C_in, H, W) or (C_in, H, W) input.

    Parameters
    ----------
    in_channels, out_channels : int
    kernel_size, stride, dilation : int or (int, int)
    padding : int, (int, int), 'valid' or 'same'
    groups : int dividing both channel counts (``groups == in_channels``:
        depthwise)
    bias : bool
    padding_mode : 'zeros', 'reflect', 'replicate' or 'circular'
    """

    _nd = 2

    def __init__(self, in_channels: int, out_channels: int,
                 kernel_size: int | tuple[int, ...], stride: int | tuple[int, ...] = 1,
                 padding: int | tuple[int, ...] | str = 0,
                 dilation: int | tuple[int, ...] = 1, groups: int = 1,
                 bias: bool = True, padding_mode: str = "zeros",
                 device: Device | None = None, dtype: DType | None = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding,
                         dilation, False, 0, groups, bias, padding_mode, device,
                         dtype)


class Conv1d(_ConvNd):
    """1-d convolution layer over (N, C_in, L) or (C_in, L) input (see Conv2d)."""

    _nd = 1

    def __init__(self, in_channels: int, out_channels: int,
                 kernel_size: int | tuple[int, ...], stride: int | tuple[int, ...] = 1,
                 padding: int | tuple[int, ...] | str = 0,
                 dilation: int | tuple[int, ...] = 1, groups: int = 1,
                 bias: bool = True, padding_mode: str = "zeros",
                 device: Device | None = None, dtype: DType | None = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding,
                         dilation, False, 0, groups, bias, padding_mode, device,
                         dtype)


class _ConvTransposeNd(_ConvNd):
    def __init__(self, in_channels: int, out_channels: int,
                 kernel_size: int | tuple[int, ...], stride: int | tuple[int, ...],
                 padding: int | tuple[int, ...] | str,
                 output_padding: int | tuple[int, ...], groups: int, bias: bool,
                 dilation: int | tuple[int, ...], padding_mode: str,
                 device: Device | None, dtype: DType | None) -> None:
        if padding_mode != "zeros":
            raise ValueError(
                f'Only "zeros" padding mode is supported for {type(self).__name__}'
            )
        if isinstance(padding, str):
            raise ValueError(
                f"{type(self).__name__}: padding must be an int or a tuple, got "
                f"{padding!r}"
            )
        super().__init__(in_channels, out_channels, kernel_size, stride, padding,
                         dilation, True, output_padding, groups, bias, padding_mode,
                         device, dtype)

    def forward(self, input: Tensor,
                output_size: int | tuple[int, ...] | None = None) -> Tensor:
        nd = self._nd
        name = f"conv_transpose{nd}d"
        Fc._check_input_dim(input, nd, name)
        unbatched = input.ndim == nd + 1
        x = input.unsqueeze(0) if unbatched else input
        geo = Fc._geo(nd, self.stride, self.padding, self.dilation, self.groups)
        # read once: a parametrized weight is computed on each read
        weight, bias = self.weight, self.bias
        Fc._check_conv(x, weight, bias, nd, geo, transposed=True)
        out_sp = Fc._conv_transpose_out(tuple(x.shape[2:]), self.kernel_size, geo, nd,
                                        self.output_padding, output_size)
        x_shape = (x.shape[0], self.out_channels, *out_sp)
        out = Fc._ConvTransposeData.apply(x, weight, bias, x_shape, geo)
        return out.squeeze(0) if unbatched else out


class ConvTranspose2d(_ConvTransposeNd):
    """Transposed 2-d convolution (the gradient of Conv2d with respect to its
    input); ``forward(input, output_size=None)``.

    Output ``H = (H_in - 1) stride - 2 padding + dilation (k - 1) +
    output_padding + 1``; weight ``(in_channels, out_channels / groups, kH, kW)``.
    """

    _nd = 2

    def __init__(self, in_channels: int, out_channels: int,
                 kernel_size: int | tuple[int, ...], stride: int | tuple[int, ...] = 1,
                 padding: int | tuple[int, ...] | str = 0,
                 output_padding: int | tuple[int, ...] = 0, groups: int = 1,
                 bias: bool = True, dilation: int | tuple[int, ...] = 1,
                 padding_mode: str = "zeros", device: Device | None = None,
                 dtype: DType | None = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding,
                         output_padding, groups, bias, dilation, padding_mode, device,
                         dtype)


class ConvTranspose1d(_ConvTransposeNd):
    """Transposed 1-d convolution; weight ``(in_channels, out_channels / groups,
    k)``."""

    _nd = 1

    def __init__(self, in_channels: int, out_channels: int,
                 kernel_size: int | tuple[int, ...], stride: int | tuple[int, ...] = 1,
                 padding: int | tuple[int, ...] | str = 0,
                 output_padding: int | tuple[int, ...] = 0, groups: int = 1,
                 bias: bool = True, dilation: int | tuple[int, ...] = 1,
                 padding_mode: str = "zeros", device: Device | None = None,
                 dtype: DType | None = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding,
                         output_padding, groups, bias, dilation, padding_mode, device,
                         dtype)


class Conv3d(_ConvNd):
    """3-d convolution layer over (N, C_in, D, H, W) or (C_in, D, H, W) input
    (see Conv2d; sizes an int or 3 ints)."""

    _nd = 3

    def __init__(self, in_channels: int, out_channels: int,
                 kernel_size: int | tuple[int, ...], stride: int | tuple[int, ...] = 1,
                 padding: int | tuple[int, ...] | str = 0,
                 dilation: int | tuple[int, ...] = 1, groups: int = 1,
                 bias: bool = True, padding_mode: str = "zeros",
                 device: Device | None = None, dtype: DType | None = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding,
                         dilation, False, 0, groups, bias, padding_mode, device,
                         dtype)


class ConvTranspose3d(_ConvTransposeNd):
    """Transposed 3-d convolution; weight ``(in_channels, out_channels / groups,
    kD, kH, kW)``; ``forward(input, output_size=None)``."""

    _nd = 3

    def __init__(self, in_channels: int, out_channels: int,
                 kernel_size: int | tuple[int, ...], stride: int | tuple[int, ...] = 1,
                 padding: int | tuple[int, ...] | str = 0,
                 output_padding: int | tuple[int, ...] = 0, groups: int = 1,
                 bias: bool = True, dilation: int | tuple[int, ...] = 1,
                 padding_mode: str = "zeros", device: Device | None = None,
                 dtype: DType | None = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding,
                         output_padding, groups, bias, dilation, padding_mode, device,
                         dtype)


__all__ += ["Conv3d", "ConvTranspose3d"]


def _lazy_conv(eager, nd):
    """The lazy form of ``eager``: ``in_channels`` from the first input."""

    class _Lazy(LazyModuleMixin, eager):
        cls_to_become = eager

        def __init__(self, out_channels, kernel_size, stride=1, padding=0,
                     dilation=1, groups=1, bias=True, padding_mode="zeros",
                     device=None, dtype=None):
            eager.__init__(self, 0, out_channels, kernel_size, stride, padding,
                           dilation, groups, bias, padding_mode, device, dtype)
            self._uninitialize()

        def initialize_parameters(self, input):
            # (N, C, *spatial) or unbatched (C, *spatial)
            self.in_channels = int(input.shape[1 if input.ndim == nd + 2 else 0])
            if self.in_channels % self.groups:
                raise ValueError("in_channels must be divisible by groups")
            self._materialize(self.weight, (self.out_channels,
                                            self.in_channels // self.groups)
                              + self.kernel_size)
            if self.bias is not None:
                self._materialize(self.bias, (self.out_channels,))
            self.reset_parameters()

    _Lazy.__name__ = _Lazy.__qualname__ = "Lazy" + eager.__name__
    _Lazy.__doc__ = (f"``{eager.__name__}`` whose ``in_channels`` is read from the "
                     "first input; it then becomes a " f"``{eager.__name__}``.")
    return _Lazy


LazyConv1d = _lazy_conv(Conv1d, 1)
LazyConv2d = _lazy_conv(Conv2d, 2)
LazyConv1d.__module__ = LazyConv2d.__module__ = __name__
__all__ += ["LazyConv1d", "LazyConv2d"]

LazyConv3d = _lazy_conv(Conv3d, 3)
LazyConv3d.__module__ = __name__
__all__ += ["LazyConv3d"]
