"""``Linear``: ``y = x @ W.T + b`` with torch's default initialisation."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from cygrad._device import check_device
from cygrad.creation import empty, get_default_dtype

from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter
from .lazy import LazyModuleMixin

if TYPE_CHECKING:
    from cygrad._tensor import Tensor
    from cygrad._typing import Device, DType

__all__ = ["Bilinear", "Identity", "LazyLinear", "Linear",
           "NonDynamicallyQuantizableLinear"]


class Linear(Module):
    """Affine layer ``y = x @ weight.T + bias``.

    Parameters
    ----------
    in_features, out_features : int
    bias : bool
        Whether to learn an additive bias (default True).
    device : None or "cpu"
    dtype : dtype, optional
        Of the parameters; cygrad's default (float32) when None.

    Attributes
    ----------
    weight : Parameter of shape (out_features, in_features), initialised from
        U(-1/sqrt(in_features), 1/sqrt(in_features)) (``kaiming_uniform_``
        with ``a=sqrt(5)``, as torch)
    bias : Parameter of shape (out_features,), from the same interval
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device: Device | None = None, dtype: DType | None = None) -> None:
        super().__init__()
        check_device(device)
        self.in_features = int(in_features)
        self.out_features = int(out_features)
        dtype = np.dtype(get_default_dtype() if dtype is None else dtype)
        self.weight = Parameter(
            empty(self.out_features, self.in_features, dtype=dtype)
        )
        if bias:
            self.bias = Parameter(empty(self.out_features, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw the parameters again from torch's default distributions."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.in_features
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class NonDynamicallyQuantizableLinear(Linear):
    """``Linear`` under the name torch's ``MultiheadAttention`` uses for its
    output projection (quantization tooling tells them apart; here they are
    the same layer)."""


class LazyLinear(LazyModuleMixin, Linear):
    """``Linear`` whose ``in_features`` is read from the first input's last
    dimension; it then becomes a ``Linear`` (as torch's)."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True,
                 device: Device | None = None, dtype: DType | None = None) -> None:
        Linear.__init__(self, 0, out_features, bias, device, dtype)
        self._uninitialize()

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            Linear.reset_parameters(self)

    def initialize_parameters(self, input: Tensor) -> None:
        self.in_features = int(input.shape[-1])
        self._materialize(self.weight, (self.out_features, self.in_features))
        if self.bias is not None:
            self._materialize(self.bias, (self.out_features,))
        Linear.reset_parameters(self)


class Bilinear(Module):
    """``y = x1^T A x2 + b``: ``y[n, o] = sum_ij x1[n, i] weight[o, i, j]
    x2[n, j] + bias[o]``.

    Parameters
    ----------
    in1_features, in2_features, out_features : int
    bias : bool

    Attributes
    ----------
    weight : (out_features, in1_features, in2_features), U(-k, k) with
        k = 1/sqrt(in1_features) (torch's init)
    bias : (out_features,), the same interval
    """

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device: Device | None = None,
                 dtype: DType | None = None) -> None:
        super().__init__()
        check_device(device)
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        dt = np.dtype(get_default_dtype() if dtype is None else dtype)
        self.weight = Parameter(empty(out_features, in1_features, in2_features,
                                      dtype=dt))
        if bias:
            self.bias = Parameter(empty(out_features, dtype=dt))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class Identity(Module):
    """Returns its input unchanged (constructor arguments are ignored, as
    torch's)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Any:
        return input
