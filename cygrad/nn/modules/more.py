"""Layers over existing functionals: ``LPPool1d/2d``, ``LocalResponseNorm``,
and the lazy transposed convolutions and instance/3-d batch norms (``Fold``,
``Unfold``, the distance layers and ``ChannelShuffle`` are in fold.py and
pixelshuffle.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import _functional_more as _more
from ..module import Module
from .conv import ConvTranspose1d, ConvTranspose2d
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .lazy import LazyModuleMixin
from .normalization import BatchNorm3d, _lazy_bn

if TYPE_CHECKING:
    from cygrad._tensor import Tensor

__all__ = [
    "LPPool1d", "LPPool2d", "LazyBatchNorm3d", "LazyConvTranspose1d",
    "LazyConvTranspose2d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
    "LazyInstanceNorm3d", "LocalResponseNorm",
]


class _LPPoolNd(Module):
    def __init__(self, norm_type: float, kernel_size: int | tuple[int, ...],
                 stride: int | tuple[int, ...] | None = None,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return ("norm_type={norm_type}, kernel_size={kernel_size}, stride={stride}, "
                "ceil_mode={ceil_mode}".format(**self.__dict__))


class LPPool1d(_LPPoolNd):
    """Power-average pooling over (N, C, L): ``(sum x^p)^(1/p)`` per window."""

    def forward(self, input: Tensor) -> Tensor:
        return _more.lp_pool1d(input, float(self.norm_type), self.kernel_size,
                               self.stride, self.ceil_mode)


class LPPool2d(_LPPoolNd):
    """Power-average pooling over (N, C, H, W): ``(sum x^p)^(1/p)`` per window."""

    def forward(self, input: Tensor) -> Tensor:
        return _more.lp_pool2d(input, float(self.norm_type), self.kernel_size,
                               self.stride, self.ceil_mode)


class LocalResponseNorm(Module):
    """Normalise each channel by the squares of ``size`` neighbouring ones."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75,
                 k: int = 1.0) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input: Tensor) -> Tensor:
        return _more.local_response_norm(input, self.size, self.alpha, self.beta,
                                         self.k)

    def extra_repr(self) -> str:
        return "{size}, alpha={alpha}, beta={beta}, k={k}".format(**self.__dict__)


# ---------------------------------------------------------------------------
# lazy layers


def _lazy_conv_t(eager, nd):
    """The lazy form of transposed ``eager``: ``in_channels`` from the input."""

    class _Lazy(LazyModuleMixin, eager):
        cls_to_become = eager

        def __init__(self, out_channels, kernel_size, stride=1, padding=0,
                     output_padding=0, groups=1, bias=True, dilation=1,
                     padding_mode="zeros", device=None, dtype=None):
            eager.__init__(self, 0, out_channels, kernel_size, stride, padding,
                           output_padding, groups, bias, dilation, padding_mode,
                           device, dtype)
            self._uninitialize()

        def initialize_parameters(self, input, *args, **kwargs):
            self.in_channels = int(input.shape[1 if input.ndim == nd + 2 else 0])
            if self.in_channels % self.groups:
                raise ValueError("in_channels must be divisible by groups")
            self._materialize(self.weight, (self.in_channels,
                                            self.out_channels // self.groups)
                              + tuple(self.kernel_size))
            if self.bias is not None:
                self._materialize(self.bias, (self.out_channels,))
            self.reset_parameters()

    _Lazy.__name__ = _Lazy.__qualname__ = "Lazy" + eager.__name__
    _Lazy.__doc__ = (f"``{eager.__name__}`` whose ``in_channels`` is read from the "
                     f"first input; it then becomes a ``{eager.__name__}``.")
    _Lazy.__module__ = __name__
    return _Lazy


def _lazy_in(eager):
    """The lazy form of instance norm ``eager``: ``num_features`` from
    dimension 1 of the first input."""

    class _Lazy(LazyModuleMixin, eager):
        cls_to_become = eager

        def __init__(self, eps=1e-5, momentum=0.1, affine=True,
                     track_running_stats=True, device=None, dtype=None, *, bias=True):
            eager.__init__(self, 0, eps, momentum, affine, track_running_stats,
                           device, dtype, bias=bias)
            self._uninitialize()

        def initialize_parameters(self, input):
            self._check_input_dim(input)
            owned = [t for t in (self.weight, self.bias, self.running_mean,
                                 self.running_var) if t is not None]
            if not owned:  # nothing to shape: num_features stays 0, as torch
                return
            # torch reads dimension 1 even of unbatched input (which then fails
            # its size check in forward); kept for the same behaviour
            self.num_features = c = int(input.shape[1])
            for t in owned:
                self._materialize(t, (c,))
            self.reset_parameters()

    _Lazy.__name__ = _Lazy.__qualname__ = "Lazy" + eager.__name__
    _Lazy.__doc__ = (f"``{eager.__name__}`` whose ``num_features`` is read from the "
                     f"first input; it then becomes a ``{eager.__name__}``.")
    _Lazy.__module__ = __name__
    return _Lazy


LazyConvTranspose1d = _lazy_conv_t(ConvTranspose1d, 1)
LazyConvTranspose2d = _lazy_conv_t(ConvTranspose2d, 2)
LazyInstanceNorm1d = _lazy_in(InstanceNorm1d)
LazyInstanceNorm2d = _lazy_in(InstanceNorm2d)
LazyInstanceNorm3d = _lazy_in(InstanceNorm3d)
LazyBatchNorm3d = _lazy_bn(BatchNorm3d)
LazyBatchNorm3d.__module__ = __name__
