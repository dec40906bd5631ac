"""``linear``: ``x @ W.T + b`` as one autograd node (one BLAS product forward,
only the needed gradients backward, differentiable Tensor ops under
``create_graph``).  Its own module so that the functional forms built on it
(``multi_head_attention_forward``) import it without ``functional``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cygrad import ops
from cygrad.autograd.function import Function
from cygrad.creation import from_numpy
from cygrad.ops.registry import _ns

if TYPE_CHECKING:
    from cygrad._tensor import Tensor

__all__ = ["linear"]


class _Linear(Function):
    """``out = x @ W.T + b``;  grad_x = g @ W, grad_W = g.T @ x, grad_b = sum(g)."""

    _node_name = "MmBackward0"      # torch's node names for x @ W.T (+ b)

    @staticmethod
    def forward(ctx, x, weight, bias=None):
        xa, wa = x._arr, weight._arr
        if xa.dtype != wa.dtype or (bias is not None and bias._arr.dtype != wa.dtype):
            raise RuntimeError(
                f"mat1 and mat2 must have the same dtype, but got {xa.dtype} and "
                f"{wa.dtype}"
            )
        if xa.shape[-1:] != wa.shape[1:]:
            raise RuntimeError(
                f"mat1 and mat2 shapes cannot be multiplied "
                f"({int(np.prod(xa.shape[:-1]))}x{xa.shape[-1] if xa.ndim else 1} "
                f"and {wa.shape[1]}x{wa.shape[0]})"
            )
        if xa.ndim > 2:
            # one GEMM over the flattened leading dimensions: NumPy's matmul of
            # a stack runs one small GEMM per matrix (1.8x slower at 16x32x64)
            out = np.matmul(xa.reshape(-1, xa.shape[-1]), wa.T).reshape(
                xa.shape[:-1] + (wa.shape[0],))
        else:
            out = np.matmul(xa, wa.T)
        if bias is not None:
            try:
                fits = np.broadcast_shapes(out.shape, bias._arr.shape) == out.shape
            except ValueError:
                fits = False
            if not fits:
                raise RuntimeError(
                    f"The expanded size of the tensor ({out.shape[-1]}) must match "
                    f"the existing size ({bias._arr.shape[-1]}): linear's bias of "
                    f"shape {list(bias._arr.shape)} does not broadcast to the "
                    f"output's shape {list(out.shape)}")
            out += bias._arr
        ctx.save_for_backward(x, weight)
        return from_numpy(out)

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        needs = ctx.needs_input_grad
        xp = _ns()
        g = xp.val(grad)
        out_f, in_f = weight.shape
        g2 = xp.reshape(g, (-1, out_f))
        grad_x = None
        if needs[0]:
            grad_x = xp.matmul(g2, xp.val(weight))
            if len(g.shape) != 2:
                grad_x = xp.reshape(grad_x, tuple(g.shape[:-1]) + (in_f,))
            grad_x = xp.out(grad_x)
        grad_weight = grad_bias = None
        if needs[1]:
            x2 = xp.reshape(xp.val(x), (-1, in_f))
            grad_weight = xp.out(xp.matmul(xp.swapaxes(g2, 0, 1), x2))
        if len(needs) > 2 and needs[2]:
            grad_bias = xp.out(xp.sum(g2, 0))
        if len(needs) > 2:
            return grad_x, grad_weight, grad_bias
        return grad_x, grad_weight


class _LinearBias(_Linear):
    """``_Linear`` with a bias, under torch's node name."""

    _node_name = "AddmmBackward0"


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias`` as one autograd node.

    Parameters
    ----------
    input : Tensor of shape (*, in_features)
    weight : Tensor of shape (out_features, in_features)
    bias : Tensor of shape (out_features,), optional

    Returns
    -------
    Tensor of shape (*, out_features), the inputs' dtype (which must agree).
    A 1-D ``weight`` of shape (in_features,) gives shape (*,) (``input @
    weight``), as torch; a bias then needs a 1-D input.
    """
    if weight.ndim == 1:
        out = ops.matmul(input, weight)
        if bias is None:
            return out
        if input.ndim != 1:
            raise RuntimeError("mat2 must be a matrix, got 1-D tensor")
        return out + bias
    if bias is None:
        return _Linear.apply(input, weight)
    return _LinearBias.apply(input, weight, bias)
