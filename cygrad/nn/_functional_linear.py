"""``bilinear`` and the pixel shuffles: compositions of matmul, reshape and
permute (views where torch's are), so their gradients come from those ops."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cygrad import ops

if TYPE_CHECKING:
    from cygrad._tensor import Tensor

__all__ = ["bilinear", "channel_shuffle", "native_channel_shuffle", "pixel_shuffle",
           "pixel_unshuffle"]


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor,
             bias: Tensor | None = None) -> Tensor:
    """``y[..., o] = sum_ij x1[..., i] weight[o, i, j] x2[..., j] + bias[o]``.

    input1 (*, in1), input2 (*, in2) with equal leading dims, weight
    (out, in1, in2), bias (out,).  One BLAS product: x1 @ W viewed as
    (in1, out * in2), then a row-wise contraction with x2.
    """
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be three-dimensional, got "
                           f"{weight.ndim}")
    out, in1, in2 = weight.shape
    if input1.shape[-1] != in1:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {in1}")
    if input2.shape[-1] != in2:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {in2}")
    if input1.ndim != input2.ndim:
        raise RuntimeError("bilinear(): input dimensions do not match: got "
                           f"{input1.ndim} and {input2.ndim}")
    for d in range(input1.ndim - 1):
        if input1.shape[d] != input2.shape[d]:
            raise RuntimeError(
                f"bilinear(): input batch dimensions do not match at dim {d}: got "
                f"{input1.shape[d]} and {input2.shape[d]}")
    lead = tuple(input1.shape[:-1])
    x1 = input1.reshape(-1, in1)
    x2 = input2.reshape(-1, in2)
    w = weight.permute(1, 0, 2).reshape(in1, out * in2)
    t = ops.matmul(x1, w).reshape(-1, out, in2)
    y = (t * x2.unsqueeze(1)).sum(-1)
    if bias is not None:
        y = y + bias
    return y.reshape(lead + (out,))


def _check_nd(input, name):
    if input.ndim < 3:
        raise RuntimeError(f"{name} expects input to have at least 3 dimensions, but "
                           f"got input with {input.ndim} dimension(s)")


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C r^2, H, W) -> (*, C, H r, W r)."""
    _check_nd(input, "pixel_shuffle")
    r = int(upscale_factor)
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got "
                           f"{r}")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(
            "pixel_shuffle expects its input's 'channel' dimension to be divisible by "
            f"the square of upscale_factor, but input.size(-3)={c} is not divisible "
            f"by {r * r}")
    lead = tuple(lead)
    k = len(lead)
    x = input.reshape(lead + (c // (r * r), r, r, h, w))
    perm = tuple(range(k)) + (k, k + 3, k + 1, k + 4, k + 2)
    return x.permute(*perm).reshape(lead + (c // (r * r), h * r, w * r))


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """(N, C, *) with C = g k: the channels read as a (g, k) grid, transposed
    to (k, g) (ShuffleNet's shuffle); a view chain, so gradients flow back."""
    g = int(groups)
    if input.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got "
                           f"input with sizes {list(input.shape)}")
    if g <= 0:
        raise RuntimeError("Number of groups to divide channels in must be positive. "
                           f"Value of groups:{g}")
    n, c, *rest = input.shape
    if c % g:
        raise RuntimeError("Number of channels must be divisible by groups. Got "
                           f"{c} channels and {g} groups.")
    rest = tuple(rest)
    x = input.reshape((n, g, c // g) + rest).transpose(1, 2)
    return x.reshape((n, c) + rest)


native_channel_shuffle = channel_shuffle


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H r, W r) -> (*, C r^2, H, W)."""
    _check_nd(input, "pixel_unshuffle")
    r = int(downscale_factor)
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but "
                           f"got {r}")
    *lead, c, h, w = input.shape
    if h % r:
        raise RuntimeError(
            "pixel_unshuffle expects height to be divisible by downscale_factor, but "
            f"input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError(
            "pixel_unshuffle expects width to be divisible by downscale_factor, but "
            f"input.size(-1)={w} is not divisible by {r}")
    lead = tuple(lead)
    k = len(lead)
    x = input.reshape(lead + (c, h // r, r, w // r, r))
    perm = tuple(range(k)) + (k, k + 2, k + 4, k + 1, k + 3)
    return x.permute(*perm).reshape(lead + (c * r * r, h // r, w // r))
