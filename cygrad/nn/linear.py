"""``Linear``: ``y = x @ W.T + b`` with torch's default initialisation."""

import math

import numpy as np

from cygrad._device import check_device
from cygrad.creation import empty

from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter

__all__ = ["Identity", "Linear"]


class Linear(Module):
    """Affine layer ``y = x @ weight.T + bias``.

    Parameters
    ----------
    in_features, out_features : int
    bias : bool
        Whether to learn an additive bias (default True).
    device : None or "cpu"
    dtype : dtype, optional
        Of the parameters; the default dtype (``get_default_dtype()``) when None.

    Attributes
    ----------
    weight : Parameter of shape (out_features, in_features), initialised from
        U(-1/sqrt(in_features), 1/sqrt(in_features)) (``kaiming_uniform_``
        with ``a=sqrt(5)``, as torch)
    bias : Parameter of shape (out_features,), from the same interval
    """

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        if device is not None:
            check_device(device)
        self.in_features = int(in_features)
        self.out_features = int(out_features)
        dtype = None if dtype is None else np.dtype(dtype)     # None: the default dtype
        self.weight = Parameter(
            empty(self.out_features, self.in_features, dtype=dtype)
        )
        if bias:
            self.bias = Parameter(empty(self.out_features, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Draw the parameters again from torch's default distributions."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.in_features
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class Identity(Module):
    """Returns its input unchanged."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input
