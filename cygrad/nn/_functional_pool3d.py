"""3-d pooling and max unpooling, on the planar kernels of
``cygrad._kernels.pool``.

A box window is separable: its max (or sum) is the max (or sum), over the
depth taps, of the maxima (sums) of the (H, W) windows.  So a 3-d pool is
two passes of the 2-d kernels: the (H, W) pool of every depth slice, planes
``(B * D, H, W)``, then a pool down the columns of the planes
``(B, D, OH * OW)`` (window ``(kd, 1)``).  Both passes visit taps in (d, h,
w) order, so ties (the first maximum wins) and NaNs (the last NaN wins)
resolve as in one 3-d scan; the flat index ``d * H * W + h * W + w`` is the
depth pass's row times ``H * W`` plus the (H, W) pass's index at that row.
The result is then one ``_MaxPool`` (gradient: a scatter, whose gradient is
a gather) over planes ``(D, H * W)``; average pooling is two linear
``_AvgPool`` steps whose divisors multiply (per-axis counts, as torch's box
counts are).

``max_unpool{1,2,3}d`` writes each value at its index in a zeroed output
(duplicates: the last write wins, as torch's CPU loop); its gradient is the
gather at the indices (``_IdxGather``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import math

import numpy as np

from cygrad._kernels import pool as _k
from cygrad.autograd.function import Function
from cygrad.autograd.grad_mode import is_grad_enabled
from cygrad.creation import from_numpy

from ._functional_conv import _check_real, _size_str, _tname, _tuple
from ._functional_more import _lp_finish
from ._functional_pool import (
    _INTP, _AvgPool, _IdxGather, _MaxPool, _adaptive_sizes, _adaptive_windows,
    _avg_windows, _check_pool_input, _gather_arr, _pool_geometry,
)

if TYPE_CHECKING:
    from cygrad._tensor import Tensor

__all__ = [
    "adaptive_avg_pool3d", "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices",
    "avg_pool3d", "lp_pool3d", "max_pool3d", "max_pool3d_with_indices",
    "max_unpool1d", "max_unpool2d", "max_unpool3d",
]


# ---------------------------------------------------------------------------
# max pooling


def _run_max3(input, outs, fixed=None, windows=None, return_indices=False):
    """Max pooling of (..., D, H, W) to (..., *outs): ``fixed`` = (kernel,
    stride, padding, dilation) triples, or adaptive ``windows`` (three
    (start, count) pairs)."""
    a = np.ascontiguousarray(input._arr)
    d, h, w = a.shape[-3:]
    od, oh, ow = outs
    b = math.prod(a.shape[:-3])
    x = a.reshape(b * d, h, w)
    m1 = np.empty((b * d, oh, ow), dtype=a.dtype)
    i1 = np.empty((b * d, oh, ow), dtype=np.int64)
    length = oh * ow
    m2 = np.empty((b, od, length), dtype=a.dtype)
    i2 = np.empty((b, od, length), dtype=np.int64)
    if fixed is not None:
        ks, st, pd, dl = fixed
        _k.max_pool2d_fixed(x, ks[1], ks[2], st[1], st[2], pd[1], pd[2], dl[1], dl[2],
                            m1, i1)
        _k.max_pool2d_fixed(m1.reshape(b, d, length), ks[0], 1, st[0], 1, pd[0], 0,
                            dl[0], 1, m2, i2)
    else:
        (ds, dn), (hs, hn), (ws, wn) = windows
        _k.max_pool2d_fwd(x, hs, hn, 1, ws, wn, 1, m1, i1)
        cols = np.arange(length, dtype=_INTP)
        _k.max_pool2d_fwd(m1.reshape(b, d, length), ds, dn, 1, cols,
                          np.ones(length, _INTP), 1, m2, i2)
    rows = i2 // length
    idx = rows * (h * w) + np.take_along_axis(i1.reshape(b, d, length), rows, axis=1)
    y_shape = tuple(a.shape[:-3]) + tuple(outs)
    y = _MaxPool.apply(input, m2.reshape(y_shape), idx, (d, h * w))
    if return_indices:
        return y, from_numpy(idx.reshape(y_shape).copy())
    return y


def max_pool3d(input: Tensor, kernel_size: int | tuple[int, ...],
               stride: int | tuple[int, ...] | None = None,
               padding: int | tuple[int, ...] | str = 0,
               dilation: int | tuple[int, ...] = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Any:
    """3-d max pooling of (N, C, D, H, W) or (C, D, H, W) input (see
    ``max_pool2d``); indices are flat ``d * H * W + h * W + w``."""
    if input.ndim in (4, 5) and 0 in tuple(input.shape[-4:]):
        dim = tuple(input.shape[-4:]).index(0)
        raise RuntimeError(
            "max_pool3d_with_indices_out_cpu_template(): Expected input's non-batch "
            f"dimensions to have positive length, but input has a shape of "
            f"{_size_str(input.shape)} and non-batch dimension {dim} has length zero!"
        )
    _check_pool_input(input, 3, "max_pool3d")
    ks, st, pd, dl, outs = _pool_geometry(input, 3, kernel_size, stride, padding,
                                          dilation, ceil_mode, "max_pool3d")
    return _run_max3(input, outs, fixed=(ks, st, pd, dl),
                     return_indices=return_indices)


def max_pool3d_with_indices(input: Tensor, kernel_size: int | tuple[int, ...],
                            stride: int | tuple[int, ...] | None = None,
                            padding: int | tuple[int, ...] | str = 0,
                            dilation: int | tuple[int, ...] = 1,
                            ceil_mode: bool = False,
                            return_indices: bool = True) -> Any:
    """``max_pool3d`` returning ``(output, indices)``."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode,
                      return_indices=True)


def _adaptive_sizes3(input, output_size, name):
    if not isinstance(output_size, (int, np.integer)) and output_size is not None \
            and len(tuple(output_size)) != 3:
        raise RuntimeError(f"{name}: output_size must be 3")
    return _adaptive_sizes(input, 3, output_size, name)


def adaptive_max_pool3d(input: Tensor, output_size: int | tuple[int, ...],
                        return_indices: bool = False) -> Any:
    """Max over adaptive windows (floor(i*D/OD) to ceil((i+1)*D/OD) per axis)."""
    spatial, outs = _adaptive_sizes3(input, output_size, "adaptive_max_pool3d")
    windows = []
    for size, o in zip(spatial, outs):
        s, e = _adaptive_windows(size, o)
        windows.append((s, (e - s).astype(_INTP)))
    return _run_max3(input, outs, windows=windows, return_indices=return_indices)


def adaptive_max_pool3d_with_indices(input: Tensor, output_size: int | tuple[int, ...],
                                     return_indices: bool = True) -> Any:
    """``adaptive_max_pool3d`` returning ``(output, indices)``."""
    return adaptive_max_pool3d(input, output_size, return_indices=True)


# ---------------------------------------------------------------------------
# average pooling


def _run_avg3(input, outs, hw_win, d_win, hw_scale, d_scale):
    """Two ``_AvgPool`` passes: (H, W) windows of every depth slice, then the
    depth windows down the columns of (B, D, OH * OW)."""
    shape = tuple(input.shape)
    d, h, w = shape[-3:]
    od, oh, ow = outs
    b = math.prod(shape[:-3])
    length = oh * ow
    (hs, he), (ws, we) = hw_win
    win1 = (hs, he, ws, we, np.ascontiguousarray(hw_scale), (h, w))
    y1 = _AvgPool.apply(input, win1, (b * d, oh, ow))
    cols = np.arange(length, dtype=_INTP)
    scale2 = np.ascontiguousarray(np.broadcast_to(
        np.asarray(d_scale, np.float64).reshape(-1, 1), (od, length)))
    win2 = (d_win[0], d_win[1], cols, cols + 1, scale2, (d, length))
    return _AvgPool.apply(y1, win2, shape[:-3] + tuple(outs))


def _inv(counts):
    with np.errstate(divide="ignore"):
        s = 1.0 / np.asarray(counts, np.float64)
    s[~np.isfinite(s)] = 0.0
    return s


def avg_pool3d(input: Tensor, kernel_size: int | tuple[int, ...],
               stride: int | tuple[int, ...] | None = None,
               padding: int | tuple[int, ...] | str = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: Any = None) -> Tensor:
    """3-d average pooling (see ``avg_pool2d``); the divisor is the window's
    volume (with the padding when ``count_include_pad``) or
    ``divisor_override``."""
    _check_pool_input(input, 3, "avg_pool3d")
    ks = _tuple(kernel_size, 3, "kernel_size")
    spatial = tuple(input.shape[-3:])
    if min(ks) > 0 and any(s < k for s, k in zip(spatial, ks)):
        raise RuntimeError(
            f"input image (T: {spatial[0]} H: {spatial[1]} W: {spatial[2]}) smaller "
            f"than kernel size (kT: {ks[0]} kH: {ks[1]} kW: {ks[2]})"
        )
    ks, st, pd, _, outs = _pool_geometry(input, 3, kernel_size, stride, padding, 1,
                                         ceil_mode, "avg_pool3d")
    if divisor_override is not None and int(divisor_override) == 0:
        raise RuntimeError("divisor must be not zero")
    wins = [_avg_windows(s, o, k, t, p, count_include_pad)
            for s, o, k, t, p in zip(spatial, outs, ks, st, pd)]
    if divisor_override is not None:
        hw_scale = np.ones((outs[1], outs[2]))
        d_scale = np.full(outs[0], 1.0 / int(divisor_override))
    else:
        hw_scale = _inv(np.outer(wins[1][2], wins[2][2]))
        d_scale = _inv(wins[0][2])
    return _run_avg3(input, outs, ((wins[1][0], wins[1][1]), (wins[2][0], wins[2][1])),
                     (wins[0][0], wins[0][1]), hw_scale, d_scale)


def adaptive_avg_pool3d(input: Tensor, output_size: int | tuple[int, ...]) -> Tensor:
    """Average to ``output_size`` (an int or 3 entries, None keeping that size)
    over the adaptive windows of ``adaptive_max_pool3d``."""
    spatial, outs = _adaptive_sizes3(input, output_size, "adaptive_avg_pool3d")
    wins = [_adaptive_windows(s, o) for s, o in zip(spatial, outs)]
    hw_scale = _inv(np.outer(wins[1][1] - wins[1][0], wins[2][1] - wins[2][0]))
    d_scale = _inv(wins[0][1] - wins[0][0])
    return _run_avg3(input, outs, (wins[1], wins[2]), wins[0], hw_scale, d_scale)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size: int | tuple[int, ...],
              stride: int | tuple[int, ...] | None = None,
              ceil_mode: bool = False) -> Tensor:
    """``(sum over the window of x ** p) ** (1 / p)`` on (N, C, D, H, W) input."""
    kd, kh, kw = _tuple(kernel_size, 3, "kernel_size")
    out = avg_pool3d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, kd * kh * kw)


# ---------------------------------------------------------------------------
# max unpooling


class _MaxUnpool(Function):
    """``y = zeros; y[idx] = x`` per plane;  grad_x = gather(g, idx)."""

    _node_name = "MaxUnpoolBackward0"

    @staticmethod
    def forward(ctx, x, idx, y_shape, size):
        a = np.ascontiguousarray(x._arr)
        b = idx.shape[0]
        out = np.zeros((b, size), dtype=a.dtype)
        np.put_along_axis(out, idx.reshape(b, -1), a.reshape(b, -1), axis=1)
        ctx.idx, ctx.size, ctx.x_shape = idx, size, tuple(x.shape)
        return from_numpy(out.reshape(y_shape))

    @staticmethod
    def backward(ctx, grad):
        if not ctx.needs_input_grad[0]:
            return None, None, None, None
        plane = (1, ctx.size)
        if is_grad_enabled():
            return _IdxGather.apply(grad, ctx.idx, ctx.x_shape, plane), None, None, None
        return (from_numpy(_gather_arr(grad._arr, ctx.idx, ctx.x_shape, plane)),
                None, None, None)


def _unpool_size(spatial, ks, st, pd, output_size):
    default = [(s - 1) * t - 2 * p + k for s, t, p, k in zip(spatial, st, pd, ks)]
    nd = len(ks)
    if output_size is None:
        return tuple(default)
    size = [int(v) for v in output_size]
    if len(size) == nd + 2:
        size = size[2:]
    if len(size) != nd:
        raise ValueError(
            f"output_size should be a sequence containing {nd} or {nd + 2} elements, "
            f"but it has a length of '{len(size)}'"
        )
    for i, (want, base, t) in enumerate(zip(size, default, st)):
        if not base - t < want < base + t:
            raise ValueError(
                f"invalid output_size \"{tuple(size)}\" (dim {i} must be between "
                f"{base - t} and {base + t})"
            )
    return tuple(size)


def _max_unpool(input, indices, nd, kernel_size, stride, padding, output_size):
    if np.dtype(indices.dtype) != np.int64:
        raise RuntimeError("elements in indices should be type int64 but got: "
                           f"{_tname(np.dtype(indices.dtype))}")
    kd = max(nd, 2)  # 1-d unpooling is torch's 2-d kernel on (..., L, 1)
    ndim = input.ndim + (1 if nd == 1 else 0)
    if ndim not in (kd + 1, kd + 2):
        raise RuntimeError(
            f"Input to max_unpooling{kd}d should be a {kd + 1}d or {kd + 2}d Tensor, "
            f"but got a tensor with {ndim} dimensions."
        )
    if tuple(indices.shape) != tuple(input.shape):
        extra = (1,) if nd == 1 else ()
        raise RuntimeError(
            "Expected shape of indices to be same as that of the input tensor ("
            f"{_size_str(tuple(input.shape) + extra)}) but got indices tensor with "
            f"shape: {_size_str(tuple(indices.shape) + extra)}"
        )
    _check_real(input)
    ks = _tuple(kernel_size, nd, "kernel_size")
    st = ks if stride is None else _tuple(stride, nd, "stride")
    pd = _tuple(padding, nd, "padding")
    spatial = tuple(input.shape[-nd:])
    outs = _unpool_size(spatial, ks, st, pd, output_size)
    size = math.prod(outs)
    lead = tuple(input.shape[:-nd])
    b = math.prod(lead)
    idx = np.ascontiguousarray(indices._arr, dtype=np.int64).reshape(b, 1, -1)
    bad = (idx < 0) | (idx >= size)
    if bad.any():
        first = int(idx.reshape(-1)[np.argmax(bad.reshape(-1))])
        shown = outs + (1,) if nd == 1 else outs
        raise RuntimeError(
            f"Found an invalid max index: {first} (output volumes are of size "
            f"{'x'.join(map(str, shown))})"
        )
    return _MaxUnpool.apply(input, idx, lead + outs, size)


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size: int | tuple[int, ...],
                 stride: int | tuple[int, ...] | None = None,
                 padding: int | tuple[int, ...] | str = 0,
                 output_size: int | tuple[int, ...] | None = None) -> Tensor:
    """The inverse of ``max_pool1d``: each value at its index, zeros elsewhere;
    length ``(L - 1) * stride - 2 * padding + kernel_size`` or ``output_size``."""
    return _max_unpool(input, indices, 1, kernel_size, stride, padding, output_size)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size: int | tuple[int, ...],
                 stride: int | tuple[int, ...] | None = None,
                 padding: int | tuple[int, ...] | str = 0,
                 output_size: int | tuple[int, ...] | None = None) -> Tensor:
    """The inverse of ``max_pool2d`` (indices flat in each (H, W) plane)."""
    return _max_unpool(input, indices, 2, kernel_size, stride, padding, output_size)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size: int | tuple[int, ...],
                 stride: int | tuple[int, ...] | None = None,
                 padding: int | tuple[int, ...] | str = 0,
                 output_size: int | tuple[int, ...] | None = None) -> Tensor:
    """The inverse of ``max_pool3d`` (indices flat in each (D, H, W) volume)."""
    return _max_unpool(input, indices, 3, kernel_size, stride, padding, output_size)
