"""``conv_tbc``: 1-d convolution of (time, batch, channel) sequences, as
``conv1d`` on the permuted input and weight (so its gradients, of every
order, are ``conv1d``'s)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._functional_conv import conv1d

if TYPE_CHECKING:
    from cygrad._tensor import Tensor

__all__ = ["conv_tbc"]


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """``out[t, b, o] = bias[o] + sum_{k, i} input[t + k - pad, b, i] weight[k, i, o]``.

    Parameters
    ----------
    input : Tensor (T, B, C_in)
    weight : Tensor (K, C_in, C_out)
    bias : Tensor (C_out,)
    pad : int
        Zeros added at both ends of time (a negative pad drops steps).

    Returns
    -------
    Tensor (T + 2 pad - K + 1, B, C_out)
    """
    if bias is None or not hasattr(bias, "shape"):
        raise TypeError("conv_tbc(): argument 'bias' (position 3) must be Tensor, not "
                        f"{type(bias).__name__}")
    if input.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError(
            "Weight tensor must have 3 dims: kernel_width, in_channels, out_channels.")
    if bias.dim() != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError(
            "Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if bias.shape[0] != weight.shape[2]:
        raise RuntimeError(
            "Bias size must equal dim 2 in the weight tensor (output channels).")
    pad = int(pad)
    steps = input.shape[0] + 2 * pad - weight.shape[0] + 1
    if steps < 0:
        raise RuntimeError(
            f"Trying to create tensor with negative dimension {steps}: "
            f"[{steps}, {input.shape[1]}, {weight.shape[2]}]")
    if pad < 0:
        input = input[-pad:input.shape[0] + pad]
        pad = 0
    x = input.permute(1, 2, 0)
    w = weight.permute(2, 1, 0)
    return conv1d(x, w, bias, padding=pad).permute(2, 0, 1)
