"""Activation layers, as ``torch.nn.modules.activation``: each holds torch's
constructor arguments and calls its ``nn.functional`` form; reprs print as
torch's."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from cygrad._device import check_device
from cygrad.creation import empty, get_default_dtype

from .. import _functional_act as A
from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter
# torch keeps MultiheadAttention in this module too (scripts import it from here)
from .attention import MultiheadAttention  # noqa: F401
from .linear import NonDynamicallyQuantizableLinear  # noqa: F401

if TYPE_CHECKING:
    from cygrad._tensor import Tensor
    from cygrad._typing import Device, DType

__all__ = [
    "CELU",
    "ELU",
    "GELU",
    "GLU",
    "SELU",
    "Hardshrink",
    "Hardsigmoid",
    "Hardswish",
    "Hardtanh",
    "LeakyReLU",
    "LogSigmoid",
    "LogSoftmax",
    "Mish",
    "PReLU",
    "ReLU",
    "ReLU6",
    "SiLU",
    "Sigmoid",
    "Softmax",
    "Softmax2d",
    "Softmin",
    "Softplus",
    "Softshrink",
    "Softsign",
    "Tanh",
    "Tanhshrink",
    "Threshold",
]


class _Inplace(Module):
    """An activation with only torch's ``inplace`` flag."""

    _fn = None

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class _Plain(Module):
    """An activation without arguments (torch's take and ignore any)."""

    _fn = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input)


class ReLU(_Inplace):
    """``max(x, 0)`` elementwise; relu'(0) = 0 (as torch)."""

    _fn = staticmethod(A.relu)


class ReLU6(_Inplace):
    """``min(max(x, 0), 6)``."""

    _fn = staticmethod(A.relu6)


class SiLU(_Inplace):
    """``x * sigmoid(x)``."""

    _fn = staticmethod(A.silu)


class Mish(_Inplace):
    """``x * tanh(softplus(x))``."""

    _fn = staticmethod(A.mish)


class SELU(_Inplace):
    """Scaled ELU with torch's constants."""

    _fn = staticmethod(A.selu)


class Hardsigmoid(_Inplace):
    """``relu6(x + 3) / 6``."""

    _fn = staticmethod(A.hardsigmoid)

    def extra_repr(self) -> str:
        return ""          # torch's repr omits the flag here


class Hardswish(_Inplace):
    """``x * relu6(x + 3) / 6``."""

    _fn = staticmethod(A.hardswish)

    def extra_repr(self) -> str:
        return ""          # torch's repr omits the flag here


class Tanh(_Plain):
    """``tanh(x)`` elementwise."""

    _fn = staticmethod(F.tanh)


class Sigmoid(_Plain):
    """``1 / (1 + exp(-x))`` elementwise."""

    _fn = staticmethod(F.sigmoid)


class Softsign(_Plain):
    """``x / (1 + |x|)``."""

    _fn = staticmethod(A.softsign)


class LogSigmoid(_Plain):
    """``log(sigmoid(x))``."""

    _fn = staticmethod(A.logsigmoid)


class Tanhshrink(_Plain):
    """``x - tanh(x)``."""

    _fn = staticmethod(A.tanhshrink)


class GELU(Module):
    """``x * Phi(x)``; ``approximate="tanh"`` for the tanh form."""

    def __init__(self, approximate: Any = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return A.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class LeakyReLU(Module):
    """``x`` for ``x > 0``, else ``negative_slope * x``."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return A.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        s = f"negative_slope={self.negative_slope}"
        return s + (", inplace=True" if self.inplace else "")


class _Alpha(Module):
    _fn = None

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class ELU(_Alpha):
    """``x`` for ``x > 0``, else ``alpha * (exp(x) - 1)``."""

    _fn = staticmethod(A.elu)


class CELU(_Alpha):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""

    _fn = staticmethod(A.celu)


class Softplus(Module):
    """``log(1 + exp(beta x)) / beta``, linear above ``threshold``."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input: Tensor) -> Tensor:
        return A.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    """``clamp(x, min_val, max_val)`` (``min_value``/``max_value``: torch's
    deprecated spellings)."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0,
                 inplace: bool = False, min_value: Any = None,
                 max_value: Any = None) -> None:
        super().__init__()
        if min_value is not None:
            min_val = min_value
        if max_value is not None:
            max_val = max_value
        if min_val > max_val:
            raise AssertionError("min_val must be less than or equal to max_val")
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return A.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        s = f"min_val={self.min_val}, max_val={self.max_val}"
        return s + (", inplace=True" if self.inplace else "")


class Threshold(Module):
    """``x`` where ``x > threshold``, else ``value``."""

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return A.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        s = f"threshold={self.threshold}, value={self.value}"
        return s + (", inplace=True" if self.inplace else "")


class Softshrink(Module):
    """Shrink toward 0 by ``lambd``; 0 inside ``[-lambd, lambd]``."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        return A.softshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return str(self.lambd)


class Hardshrink(Softshrink):
    """``x`` where ``|x| > lambd``, else 0."""

    def forward(self, input: Tensor) -> Tensor:
        return A.hardshrink(input, self.lambd)


class PReLU(Module):
    """``x`` for ``x > 0``, else ``weight * x``, with a learned ``weight`` of
    ``num_parameters`` entries (one, or one per channel), filled with ``init``."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25,
                 device: Device | None = None, dtype: DType | None = None) -> None:
        super().__init__()
        check_device(device)
        self.num_parameters = num_parameters
        self.init = init
        dt = np.dtype(get_default_dtype() if dtype is None else dtype)
        self.weight = Parameter(empty(num_parameters, dtype=dt))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        return A.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class GLU(Module):
    """``a * sigmoid(b)`` of the halves of the input along ``dim``."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return A.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class _DimModule(Module):
    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax(_DimModule):
    """``softmax(x, dim)``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.softmax(input, self.dim, _stacklevel=5)


class LogSoftmax(_DimModule):
    """``log_softmax(x, dim)``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, self.dim, _stacklevel=5)


class Softmin(_DimModule):
    """``softmax(-x, dim)``."""

    def forward(self, input: Tensor) -> Tensor:
        return A.softmin(input, self.dim, _stacklevel=5)


class Softmax2d(_Plain):
    """Softmax over the channels of (N, C, H, W) or (C, H, W) inputs."""

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in (3, 4):
            raise ValueError(
                f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D instead")
        return F.softmax(input, -3)


class RReLU(Module):
    """Randomised leaky ReLU: slopes drawn from U(lower, upper) per element in
    training, their mean in evaluation (``F.rrelu``)."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input):
        return A.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        s = f"lower={self.lower}, upper={self.upper}"
        return s + (", inplace=True" if self.inplace else "")


__all__ += ["RReLU"]
