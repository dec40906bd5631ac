"""Normalisation layers: ``BatchNorm1d``/``BatchNorm2d`` (running statistics),
``LayerNorm``, ``GroupNorm``, ``RMSNorm``, with torch's arguments, parameter
and buffer names (``running_mean``, ``running_var``, ``num_batches_tracked``)
and initialisation (weight 1, bias 0)."""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any

import numpy as np

from cygrad._device import check_device
from cygrad.creation import empty, get_default_dtype, ones, tensor, zeros
from cygrad.dtypes import int64

from .. import _functional_norm as Fn
from .. import init
from ..module import Module
from ..parameter import Parameter
from .lazy import LazyModuleMixin

if TYPE_CHECKING:
    from cygrad._tensor import Tensor
    from cygrad._typing import Device, DType

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "GroupNorm", "LayerNorm", "RMSNorm"]


def _dtype(dtype):
    return np.dtype(get_default_dtype() if dtype is None else dtype)


def _check_device(device):
    check_device(device)


class _NormBase(Module):
    """Shared state of the batch and instance norms (torch's ``_NormBase``):
    ``num_features``, the affine parameters, the running statistics and
    their resets."""

    _version = 2    # the state has num_batches_tracked

    def __init__(self, num_features: int, eps: float = 1e-5,
                 momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Device | None = None,
                 dtype: DType | None = None, *, bias: bool = True) -> None:
        super().__init__()
        _check_device(device)
        dt = _dtype(dtype)
        self.num_features = int(num_features)
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(empty(self.num_features, dtype=dt))
            if bias:
                self.bias = Parameter(empty(self.num_features, dtype=dt))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(self.num_features, dtype=dt))
            self.register_buffer("running_var", ones(self.num_features, dtype=dt))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean._arr[...] = 0
            self.running_var._arr[...] = 1
            self.num_batches_tracked._arr[...] = 0
            for t in (self.running_mean, self.running_var, self.num_batches_tracked):
                t._bump_version()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input):
        raise NotImplementedError

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, bias={self.bias is not None}, "
            f"track_running_stats={self.track_running_stats}"
        )



class _BatchNorm(_NormBase):
    """The batch norms' forward.

    Training normalises by the batch statistics and (with
    ``track_running_stats``) moves ``running_mean``/``running_var`` toward the
    batch mean and unbiased variance by ``momentum``, or, with
    ``momentum=None``, keeps their cumulative average (factor
    ``1 / num_batches_tracked``).  Eval normalises by the running statistics
    (by the batch's when they are not tracked).
    """

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        bn_training = self.training or (
            self.running_mean is None and self.running_var is None)
        use_stats = not self.training or self.track_running_stats
        running_mean = self.running_mean if use_stats else None
        running_var = self.running_var if use_stats else None
        # read once: a parametrized weight is computed on each read
        weight, bias = self.weight, self.bias
        # all checks before num_batches_tracked moves: bad input changes nothing
        Fn._check_batch_norm(input, running_mean, running_var, weight, bias,
                             bn_training)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            if self.num_batches_tracked is not None:
                self.num_batches_tracked._arr[...] += 1
                self.num_batches_tracked._bump_version()
                if self.momentum is None:
                    factor = 1.0 / float(self.num_batches_tracked._arr)
        return Fn.batch_norm(
            input,
            running_mean,
            running_var,
            weight,
            bias,
            bn_training,
            factor,
            self.eps,
        )


class BatchNorm1d(_BatchNorm):
    """Batch norm of (N, C) or (N, C, L) input over N (and L) per channel."""

    def _check_input_dim(self, input):
        if input.ndim not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.ndim}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch norm of (N, C, H, W) input over N, H and W per channel."""

    def _check_input_dim(self, input):
        if input.ndim != 4:
            raise ValueError(f"expected 4D input (got {input.ndim}D input)")


class BatchNorm3d(_BatchNorm):
    """Batch norm of (N, C, D, H, W) input over N, D, H and W per channel."""

    def _check_input_dim(self, input):
        if input.ndim != 5:
            raise ValueError(f"expected 5D input (got {input.ndim}D input)")


def _shape(normalized_shape):
    if isinstance(normalized_shape, numbers.Integral):
        return (int(normalized_shape),)
    return tuple(int(s) for s in normalized_shape)


class LayerNorm(Module):
    """Normalise over the trailing ``normalized_shape`` dimensions, then
    ``* weight + bias`` (each of that shape; ``elementwise_affine=False``:
    neither, ``bias=False``: no bias)."""

    def __init__(self, normalized_shape: Any, eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True,
                 device: Device | None = None, dtype: DType | None = None) -> None:
        super().__init__()
        _check_device(device)
        dt = _dtype(dtype)
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(ones(*self.normalized_shape, dtype=dt))
            if bias:
                self.bias = Parameter(zeros(*self.normalized_shape, dtype=dt))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return Fn.layer_norm(input, self.normalized_shape, self.weight, self.bias,
                             self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class GroupNorm(Module):
    """Normalise (N, C, *) input over ``num_groups`` groups of channels, then a
    per-channel ``weight``/``bias`` (``affine``)."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device: Device | None = None,
                 dtype: DType | None = None, *, bias: bool = True) -> None:
        super().__init__()
        _check_device(device)
        if num_channels % num_groups != 0:
            raise ValueError(
                f"num_channels ({num_channels}) must be divisible by num_groups "
                f"({num_groups})"
            )
        dt = _dtype(dtype)
        self.num_groups = int(num_groups)
        self.num_channels = int(num_channels)
        self.eps = eps
        self.affine = affine
        if affine:
            self.weight = Parameter(ones(self.num_channels, dtype=dt))
            if bias:
                self.bias = Parameter(zeros(self.num_channels, dtype=dt))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def reset_parameters(self) -> None:
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return Fn.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, "
                f"affine={self.affine}, bias={self.bias is not None}")


class RMSNorm(Module):
    """``x / sqrt(mean(x^2) + eps) * weight`` over the trailing
    ``normalized_shape``; ``eps=None`` is the input dtype's epsilon."""

    def __init__(self, normalized_shape: Any, eps: float | None = None,
                 elementwise_affine: bool = True, device: Device | None = None,
                 dtype: DType | None = None) -> None:
        super().__init__()
        _check_device(device)
        dt = _dtype(dtype)
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(ones(*self.normalized_shape, dtype=dt))
        else:
            self.register_parameter("weight", None)

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, input: Tensor) -> Tensor:
        return Fn.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


def _lazy_bn(eager):
    """The lazy form of ``eager``: ``num_features`` from the first input."""

    class _Lazy(LazyModuleMixin, eager):
        cls_to_become = eager

        def __init__(self, eps=1e-5, momentum=0.1, affine=True,
                     track_running_stats=True, device=None, dtype=None):
            eager.__init__(self, 0, eps, momentum, affine, track_running_stats,
                           device, dtype)
            self._uninitialize()

        def initialize_parameters(self, input):
            self._check_input_dim(input)
            self.num_features = c = int(input.shape[1])
            for t in (self.weight, self.bias, self.running_mean, self.running_var):
                if t is not None:
                    self._materialize(t, (c,))
            self.reset_parameters()

    _Lazy.__name__ = _Lazy.__qualname__ = "Lazy" + eager.__name__
    _Lazy.__doc__ = (f"``{eager.__name__}`` whose ``num_features`` is read from the "
                     f"first input; it then becomes a ``{eager.__name__}``.")
    _Lazy.__module__ = __name__
    return _Lazy


LazyBatchNorm1d = _lazy_bn(BatchNorm1d)
LazyBatchNorm2d = _lazy_bn(BatchNorm2d)
__all__ += ["LazyBatchNorm1d", "LazyBatchNorm2d"]
