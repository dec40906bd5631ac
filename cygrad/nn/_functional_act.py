"""Activations of ``nn.functional`` and their in-place forms.

The parameterless pointwise ones (``silu``, ``gelu``, ``mish``, ``selu``,
``hardswish``, ...) are rows of the op table: one compiled pass each way.
The piecewise-linear ones with parameters (``leaky_relu``, ``hardtanh``,
``threshold``, the shrinks) are one node each: the forward is a NumPy
select, the backward multiplies by the saved slope array (their second
derivative is zero, so ``create_graph`` needs nothing more).  ``elu``,
``celu`` and ``softplus`` compose table ops (their exponentials are clamped
so that the branch ``where`` does not pick never overflows into a NaN
gradient).

In-place forms (``relu_``, ``F.elu(x, inplace=True)``, ...) write the result
into the input; autograd sees a ``copy_`` (the input's history continues
through the activation), so a leaf that requires grad is refused as torch
refuses it.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np

from cygrad import ops
from cygrad._kernels import act as _act
from cygrad._tensor import Tensor
from cygrad.autograd.function import Function
from cygrad.autograd.grad_mode import is_grad_enabled
from cygrad.creation import _mt, from_numpy

from ._functional_dropout import _apply

if TYPE_CHECKING:
    from cygrad._typing import DType

__all__ = [
    "celu", "celu_", "elu", "elu_", "gelu", "glu", "hardshrink", "hardsigmoid",
    "hardswish", "hardtanh", "hardtanh_", "leaky_relu", "leaky_relu_", "logsigmoid",
    "mish", "prelu", "relu", "relu6", "relu_", "selu", "selu_", "silu", "softmin",
    "softplus", "softshrink", "softsign", "tanhshrink", "threshold", "threshold_",
]


def _floating(input, name):
    dt = np.dtype(input.dtype)
    if dt.kind != "f":
        raise RuntimeError(f"{name}: expected a floating point input, got {dt}")


# ---------------------------------------------------------------------------
# table rows under their functional names


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """``max(x, 0)``;  relu'(0) = 0."""
    return _apply(input, ops.relu, inplace)


def relu_(input: Tensor) -> Tensor:
    """``relu`` in place."""
    return _apply(input, ops.relu, True)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * sigmoid(x)`` (compiled)."""
    return _apply(input, ops.silu, inplace)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * tanh(softplus(x))`` (compiled)."""
    return _apply(input, ops.mish, inplace)


class _GeluKept(Function):
    """float32 ``gelu`` that keeps its derivative Phi(x) + x phi(x) for the
    backward (``act.gelu_keep``): the table's gelu node saves only x, and
    its backward computes the Gaussian and Phi again.  The same bits both
    ways as the table's kernels; under ``create_graph`` the backward is the
    table's derivative over Tensors."""

    _node_name = "GeluBackward0"

    @staticmethod
    def forward(ctx, x):
        xa = np.ascontiguousarray(x._arr).reshape(-1)
        y, d = np.empty_like(xa), np.empty_like(xa)
        _act.gelu_keep(xa, y, d)
        ctx.kept = (xa, d)
        ctx.save_for_backward(x)
        return from_numpy(y.reshape(x._arr.shape))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        if is_grad_enabled():
            phi = 0.5 + 0.5 * ops.erf(x * 0.7071067811865476)
            return g * (phi + x * (0.3989422804014327 * ops.exp(-0.5 * (x * x))))
        xa, d = ctx.kept
        ga = np.ascontiguousarray(g._arr, dtype=np.float32).reshape(-1)
        out = np.empty_like(xa)
        _act.gelu_bwd_kept(ga, xa, d, out)
        return from_numpy(out.reshape(x._arr.shape))


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """``x * Phi(x)``, Phi the standard normal CDF; ``approximate="tanh"`` uses
    ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`` (compiled).  A float32
    input that needs a gradient keeps Phi and phi for the backward (one
    multiply-add per element then)."""
    if approximate == "none":
        if (input.requires_grad and is_grad_enabled()
                and input._arr.dtype == np.float32 and isinstance(input, Tensor)):
            return _GeluKept.apply(input)
        return ops.gelu(input)
    if approximate == "tanh":
        return ops.gelu_tanh(input)
    raise RuntimeError("approximate argument must be either none or tanh.")


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """``scale * (max(0, x) + min(0, alpha (exp(x) - 1)))``, torch's constants."""
    return _apply(input, ops.selu, inplace)


def selu_(input: Tensor) -> Tensor:
    return _apply(input, ops.selu, True)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """``relu6(x + 3) / 6``."""
    return _apply(input, ops.hardsigmoid, inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * relu6(x + 3) / 6``."""
    return _apply(input, ops.hardswish, inplace)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """``min(max(x, 0), 6)``."""
    return _apply(input, ops.relu6, inplace)


def logsigmoid(input: Tensor) -> Tensor:
    """``log(sigmoid(x))`` without overflow."""
    return ops.logsigmoid(input)


def softsign(input: Tensor) -> Tensor:
    """``x / (1 + |x|)``."""
    return ops.softsign(input)


def tanhshrink(input: Tensor) -> Tensor:
    """``x - tanh(x)``."""
    return ops.tanhshrink(input)


# ---------------------------------------------------------------------------
# piecewise-linear activations with parameters: one node each


class _Piecewise(Function):
    """``out`` given (a select over x); grad = g * slope (slope saved)."""

    @staticmethod
    def forward(ctx, x, out, slope):
        ctx.slope = slope
        return from_numpy(out)

    @staticmethod
    def backward(ctx, grad):
        if not ctx.needs_input_grad[0]:
            return None, None, None
        return grad * from_numpy(ctx.slope), None, None


# one class per node name (grad_fn.name() as torch's)
_NODES = {name: type(name[:-len("Backward0")], (_Piecewise,), {"_node_name": name})
          for name in ("LeakyReluBackward0", "HardtanhBackward0", "ThresholdBackward0",
                       "SoftshrinkBackward0", "HardshrinkBackward0",
                       "RreluWithNoiseBackward0")}


def _piecewise(input, out, slope, name, inplace):
    """Apply the precomputed ``out`` / ``slope`` arrays as an activation."""
    dt = input._arr.dtype
    out = np.asarray(out, dtype=dt)
    slope = np.asarray(slope, dtype=dt)

    def fn(x):
        return _NODES[name].apply(x, out, slope)
    return _apply(input, fn, inplace)


def leaky_relu(input: Tensor, negative_slope: float = 0.01,
               inplace: bool = False) -> Tensor:
    """``x`` where ``x > 0``, else ``negative_slope * x`` (slope at 0)."""
    _floating(input, "leaky_relu")
    x = input._arr
    pos = x > 0
    out = np.where(pos, x, x * x.dtype.type(negative_slope))
    return _piecewise(input, out, np.where(pos, 1.0, negative_slope),
                      "LeakyReluBackward0", inplace)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    return leaky_relu(input, negative_slope, True)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """``clamp(x, min_val, max_val)``; the gradient passes strictly inside."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    _floating(input, "hardtanh")
    x = input._arr
    out = np.clip(x, min_val, max_val)
    out = np.where(np.isnan(x), x, out)
    return _piecewise(input, out, (x > min_val) & (x < max_val),
                      "HardtanhBackward0", inplace)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    return hardtanh(input, min_val, max_val, True)


def threshold(input: Tensor, threshold: float, value: float,
              inplace: bool = False) -> Tensor:
    """``x`` where ``x > threshold``, else ``value``."""
    _floating(input, "threshold")
    x = input._arr
    keep = x > threshold
    out = np.where(keep | np.isnan(x), x, x.dtype.type(value))
    return _piecewise(input, out, keep, "ThresholdBackward0", inplace)


_threshold = threshold


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    return _threshold(input, threshold, value, True)


def _check_lambd(input, lambd):
    if lambd < 0:
        kind = "Float" if input._arr.dtype == np.float32 else "Double"
        top = "3.40282e+38" if kind == "Float" else "1.79769e+308"
        raise RuntimeError(
            f"lambda must be in range [0, {top}] for input dtype {kind}, but found "
            f"{lambd}")


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0."""
    _floating(input, "softshrink")
    _check_lambd(input, lambd)
    x = input._arr
    lam = x.dtype.type(lambd)
    out = np.where(x > lam, x - lam, np.where(x < -lam, x + lam, x * 0))
    return _piecewise(input, out, (x > lam) | (x < -lam), "SoftshrinkBackward0",
                      False)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x`` where ``|x| > lambd``, else 0."""
    _floating(input, "hardshrink")
    x = input._arr
    keep = (x > lambd) | (x < -lambd)
    out = np.where(keep | np.isnan(x), x, x * 0)
    return _piecewise(input, out, keep, "HardshrinkBackward0", False)


# ---------------------------------------------------------------------------
# exponential-based activations with parameters: composites of table ops


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)``."""
    def fn(x):
        neg = ops.expm1(ops.clamp(x, max=0.0)) * alpha
        return ops.where(x > 0, x, neg)
    return _apply(input, fn, inplace)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return elu(input, alpha, True)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")

    def fn(x):
        neg = ops.expm1(ops.clamp(x, max=0.0) * (1.0 / alpha)) * alpha
        return ops.where(x > 0, x, neg)
    return _apply(input, fn, inplace)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return celu(input, alpha, True)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta x)) / beta``; linear where ``beta x > threshold``."""
    bx = input * beta
    soft = ops.log1p(ops.exp(ops.clamp(bx, max=float(threshold)))) * (1.0 / beta)
    return ops.where(bx > threshold, input, soft)


# ---------------------------------------------------------------------------
# activations over tensors


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``x`` where ``x > 0``, else ``weight * x``; ``weight`` has one entry or
    one per channel (dim 1; dim 0 for a 1-D input)."""
    if not isinstance(weight, Tensor):
        raise TypeError(f"prelu: weight must be a Tensor, got {type(weight).__name__}")
    n = weight.numel()
    if n != 1:
        channels = input.shape[1] if input.ndim >= 2 else (
            input.shape[0] if input.ndim == 1 else 1)
        if n != channels:
            raise RuntimeError(
                "Mismatch of parameter numbers and input channel size. Found "
                f"parameter numbers = {n} and channel size = {channels}.")
        if input.ndim >= 2:
            weight = weight.reshape((n,) + (1,) * (input.ndim - 2))
    elif input.ndim >= 1:
        weight = weight.reshape(())
    return ops.where(input > 0, input, weight * input)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """``a * sigmoid(b)``, ``a`` and ``b`` the two halves of ``input`` along
    ``dim``."""
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must "
                           "be even")
    d = dim % input.ndim if -input.ndim <= dim < input.ndim else None
    if d is None:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-input.ndim}, "
            f"{input.ndim - 1}], but got {dim})")
    size = input.shape[d]
    if size % 2:
        raise RuntimeError(
            f"Halving dimension must be even, but dimension {d} is size {size}")
    half = size // 2
    lead = (slice(None),) * d
    a = input[lead + (slice(0, half),)]
    b = input[lead + (slice(half, size),)]
    return a * ops.sigmoid(b)


def _softmax_dim(name, ndim, stacklevel):
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call "
        "to include dim=X as an argument.", UserWarning, stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype: DType | None = None) -> Tensor:
    """``softmax(-x, dim)``."""
    if dim is None:
        dim = _softmax_dim("softmin", input.ndim, _stacklevel)
    if dtype is not None:
        input = input.to(dtype)
    return ops.softmax(-input, dim)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomised leaky ReLU: ``x`` where ``x > 0``, else ``a * x``.

    In training each element's slope ``a`` is drawn from U(lower, upper) by
    cygrad's generator (``manual_seed`` repeats it; the numbers are not
    torch's); in evaluation ``a = (lower + upper) / 2``.  The gradient is
    the slope used (the drawn one at 0, as torch's ``input <= 0`` rule).
    """
    return rrelu_with_generator(input, lower, upper, training, inplace, None)


def rrelu_with_generator(input, lower, upper, training, inplace, generator):
    """``rrelu`` drawing from ``generator`` (None: cygrad's default one), for
    ``cygrad.rrelu``'s ``generator=`` argument."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper "
                           "bound")
    dt = np.dtype(input.dtype)
    if dt.kind != "f":
        names = {"i": "Long", "u": "Byte", "b": "Bool"}
        raise NotImplementedError('"rrelu_with_noise_out_cpu" not implemented for '
                                  f"'{names.get(dt.kind, str(dt))}'")
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    x = input._arr
    # torch draws one uniform double per non-positive element, in order,
    # between the bounds rounded to the input's dtype
    slope = np.ones(x.shape, x.dtype)
    neg = ~(x > 0)
    drawn = np.empty(int(np.count_nonzero(neg)))
    _mt(generator).uniform_d(drawn, float(x.dtype.type(lower)), float(x.dtype.type(upper)))
    slope[neg] = drawn
    return _piecewise(input, x * slope, slope, "RreluWithNoiseBackward0", inplace)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    """``rrelu`` in place."""
    return rrelu(input, lower, upper, training, True)


__all__ += ["rrelu", "rrelu_"]
