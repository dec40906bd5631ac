"""More stateless layers of ``torch.nn.functional``, composed of cygrad's
differentiable pieces (pooling, padding, interpolate, indexing): the
``*_with_indices`` pooling forms, the deprecated ``upsample``
aliases, ``pdist``, power-average pooling and local response normalisation.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from cygrad import ops
from cygrad.creation import from_numpy

from . import _functional_pool as _pool
from ._functional_conv import pad

if TYPE_CHECKING:
    from cygrad._tensor import Tensor

__all__ = [
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
    "local_response_norm", "lp_pool1d", "lp_pool2d", "max_pool1d_with_indices",
    "max_pool2d_with_indices", "pdist", "upsample", "upsample_bilinear", "upsample_nearest",
]


# ---------------------------------------------------------------------------
# pooling with indices


def max_pool1d_with_indices(input: Tensor, kernel_size: int | tuple[int, ...],
                            stride: int | tuple[int, ...] | None = None,
                            padding: int | tuple[int, ...] | str = 0,
                            dilation: int | tuple[int, ...] = 1,
                            ceil_mode: bool = False,
                            return_indices: bool = True) -> Any:
    """``max_pool1d`` returning ``(output, indices)``."""
    return _pool.max_pool1d(input, kernel_size, stride, padding, dilation,
                            ceil_mode=ceil_mode, return_indices=True)


def max_pool2d_with_indices(input: Tensor, kernel_size: int | tuple[int, ...],
                            stride: int | tuple[int, ...] | None = None,
                            padding: int | tuple[int, ...] | str = 0,
                            dilation: int | tuple[int, ...] = 1,
                            ceil_mode: bool = False,
                            return_indices: bool = True) -> Any:
    """``max_pool2d`` returning ``(output, indices)``."""
    return _pool.max_pool2d(input, kernel_size, stride, padding, dilation,
                            ceil_mode=ceil_mode, return_indices=True)


def adaptive_max_pool1d_with_indices(input: Tensor, output_size: int | tuple[int, ...],
                                     return_indices: bool = True) -> Any:
    """``adaptive_max_pool1d`` returning ``(output, indices)``."""
    return _pool.adaptive_max_pool1d(input, output_size, return_indices=True)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size: int | tuple[int, ...],
                                     return_indices: bool = True) -> Any:
    """``adaptive_max_pool2d`` returning ``(output, indices)``."""
    return _pool.adaptive_max_pool2d(input, output_size, return_indices=True)


# ---------------------------------------------------------------------------
# deprecated interpolate aliases


def upsample(input: Tensor, size: int | None = None, scale_factor: Any = None,
             mode: str = "nearest", align_corners: bool | None = None) -> Tensor:
    """Deprecated alias of ``interpolate`` (warns as torch)."""
    warnings.warn("nn.functional.upsample is deprecated. Use nn.functional.interpolate "
                  "instead.", stacklevel=2)
    return _pool.interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size: int | None = None,
                     scale_factor: Any = None) -> Tensor:
    """Deprecated: ``interpolate(..., mode='nearest')``."""
    warnings.warn("nn.functional.upsample_nearest is deprecated. Use "
                  "nn.functional.interpolate instead.", stacklevel=2)
    return _pool.interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size: int | None = None,
                      scale_factor: Any = None) -> Tensor:
    """Deprecated: ``interpolate(..., mode='bilinear', align_corners=True)``."""
    warnings.warn("nn.functional.upsample_bilinear is deprecated. Use "
                  "nn.functional.interpolate instead.", stacklevel=2)
    return _pool.interpolate(input, size, scale_factor, mode="bilinear",
                             align_corners=True)


# ---------------------------------------------------------------------------
# pdist


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """The p-norm distances between the rows of (N, M) ``input``, pairs
    ``i < j`` in row-major order: N (N - 1) / 2 values."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = int(input.shape[0])
    i, j = np.triu_indices(n, 1)
    if len(i) == 0:
        return input.sum(1)[:0]
    diff = input[from_numpy(i.astype(np.int64))] - input[from_numpy(j.astype(np.int64))]
    return ops.norm(diff, p, dim=1)


# ---------------------------------------------------------------------------
# power-average pooling and local response norm


def _lp_finish(out, p, area):
    # torch's form: sign(out) * relu(|out|) keeps negative averages (odd p) at 0
    return (ops.sign(out) * ops.relu(ops.abs(out))).mul(area).pow(1.0 / p)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int | tuple[int, ...],
              stride: int | tuple[int, ...] | None = None,
              ceil_mode: bool = False) -> Tensor:
    """``(sum over the window of x ** p) ** (1 / p)`` on (N, C, L) input."""
    k = kernel_size[0] if isinstance(kernel_size, (tuple, list)) else kernel_size
    out = _pool.avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, int(k))


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: int | tuple[int, ...],
              stride: int | tuple[int, ...] | None = None,
              ceil_mode: bool = False) -> Tensor:
    """``(sum over the window of x ** p) ** (1 / p)`` on (N, C, H, W) input."""
    if isinstance(kernel_size, (tuple, list)):
        kh, kw = kernel_size
    else:
        kh = kw = kernel_size
    out = _pool.avg_pool2d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, int(kh) * int(kw))


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4,
                        beta: float = 0.75, k: Any = 1.0) -> Tensor:
    """``x / (k + alpha / size * sum of x^2 over ``size`` neighbouring
    channels) ** beta`` (the window zero-padded, ``size // 2`` before)."""
    dim = input.ndim
    if dim < 3:
        raise ValueError("Expected 3D or higher dimensionality input "
                         f"(got {dim} dimensions)")
    if input.numel() == 0:
        return input
    n, c = int(input.shape[0]), int(input.shape[1])
    sq = (input * input).reshape((n, 1, c, -1))
    sq = pad(sq, (0, 0, size // 2, (size - 1) // 2))
    div = _pool.avg_pool2d(sq, (size, 1), stride=1).reshape(tuple(input.shape))
    div = (div * alpha + k).pow(beta)
    return input / div
