"""Pooling and interpolation as autograd Functions on ``cygrad._kernels.pool``.

Every pooling here works on planes ``(B, H, W)`` (``B = N * C``; 1-d pooling
is ``H = 1``) through per-output window lists that Python computes once per
call (a few hundred integers): fixed and adaptive pools share the kernels.

Max pooling: the forward kernel returns the values and each maximum's flat
index; the gradient scatters ``g`` to those indices (``_IdxScatter``) and the
gradient of that is the gather at the same indices (``_IdxGather``): both are
linear, so every derivative order is one of the two.  Average pooling is
linear too: ``_AvgPool`` and its adjoint ``_AvgPoolGrad`` differentiate into
each other.

``interpolate``: 'nearest' is a gather through index maps (the padding
Function of ``_functional_conv``); 'linear'/'bilinear' is the compiled
kernel of ``_kernels/interp.pyx``, whose adjoint is its gradient (so it
differentiates to any order).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from cygrad._kernels import interp as _ki
from cygrad._kernels import pool as _k
from cygrad.autograd.function import Function
from cygrad.autograd.grad_mode import is_grad_enabled
from cygrad.creation import from_numpy

from ._functional_conv import _check_real, _Pad, _size_str, _tuple

if TYPE_CHECKING:
    from cygrad._tensor import Tensor

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "avg_pool1d",
    "avg_pool2d",
    "interpolate",
    "max_pool1d",
    "max_pool2d",
]

_INTP = np.intp


def _planes(input, nd):
    """Contiguous (B, H, W) view of an (N, C, *spatial) or (C, *spatial) array."""
    a = np.ascontiguousarray(input._arr)
    if nd == 1:
        return a.reshape(-1, 1, a.shape[-1])
    return a.reshape(-1, a.shape[-2], a.shape[-1])


def _check_pool_input(input, nd, name):
    if input.ndim not in (nd + 1, nd + 2) or 0 in tuple(input.shape[1:]):
        kind = f"{nd + 1}D or {nd + 2}D (batch mode)"
        raise RuntimeError(
            f"{name}: non-empty {kind} tensor expected for input, got input of size "
            f"{_size_str(input.shape)}"
        )
    _check_real(input)


# ---------------------------------------------------------------------------
# max pooling


class _MaxPool(Function):
    """``y = x[idx]`` (idx from the forward kernel);  grad_x = scatter(g, idx).

    ``plane`` is the (H, W) of the input planes (H = 1 for 1-d pooling)."""

    _node_name = "MaxPool2DWithIndicesBackward0"

    @staticmethod
    def forward(ctx, x, out, idx, plane):
        ctx.idx, ctx.plane = idx, plane
        ctx.x_shape = tuple(x.shape)
        return from_numpy(out)

    @staticmethod
    def backward(ctx, grad):
        return _scatter_grad(ctx, grad), None, None, None


def _scatter_grad(ctx, grad):
    if not ctx.needs_input_grad[0]:
        return None
    if is_grad_enabled():
        return _IdxScatter.apply(grad, ctx.idx, ctx.x_shape, ctx.plane)
    return from_numpy(_scatter_arr(grad._arr, ctx.idx, ctx.x_shape, ctx.plane))


def _scatter_arr(g, idx, x_shape, plane):
    g = np.ascontiguousarray(g).reshape(idx.shape)
    out = np.empty(x_shape, dtype=g.dtype)
    _k.max_pool2d_bwd(g, idx, out.reshape((idx.shape[0],) + plane))
    return out


def _gather_arr(x, idx, y_shape, plane):
    x = np.ascontiguousarray(x)
    out = np.empty(idx.shape, dtype=x.dtype)
    _k.gather_idx(x.reshape((idx.shape[0],) + plane), idx, out)
    return out.reshape(y_shape)


class _IdxScatter(Function):
    """``z = scatter(g, idx)`` into x's shape;  grad_g = gather(h, idx)."""

    _node_name = "MaxPool2DWithIndicesBackwardBackward0"

    @staticmethod
    def forward(ctx, g, idx, x_shape, plane):
        ctx.idx, ctx.plane = idx, plane
        ctx.y_shape = tuple(g.shape)
        return from_numpy(_scatter_arr(g._arr, idx, x_shape, plane))

    @staticmethod
    def backward(ctx, h):
        if not ctx.needs_input_grad[0]:
            return None, None, None, None
        if is_grad_enabled():
            gg = _IdxGather.apply(h, ctx.idx, ctx.y_shape, ctx.plane)
            return gg, None, None, None
        return (from_numpy(_gather_arr(h._arr, ctx.idx, ctx.y_shape, ctx.plane)),
                None, None, None)


class _IdxGather(Function):
    """``y = x[idx]``;  grad_x = scatter(g, idx)."""

    _node_name = "GatherBackward0"

    @staticmethod
    def forward(ctx, x, idx, y_shape, plane):
        ctx.idx, ctx.plane = idx, plane
        ctx.x_shape = tuple(x.shape)
        return from_numpy(_gather_arr(x._arr, idx, y_shape, plane))

    @staticmethod
    def backward(ctx, grad):
        return _scatter_grad(ctx, grad), None, None, None


def _pool_geometry(input, nd, kernel_size, stride, padding, dilation, ceil_mode, name):
    ks = _tuple(kernel_size, nd, "kernel_size")
    st = ks if stride is None or (not isinstance(stride, int) and len(stride) == 0) \
        else _tuple(stride, nd, "stride")
    pd = _tuple(padding, nd, "padding")
    dl = _tuple(dilation, nd, "dilation")
    if min(ks) < 1:
        raise RuntimeError(
            f"{name}: kernel_size must be greater than zero, but got {ks}"
        )
    if min(st) < 1:
        raise RuntimeError(f"{name}: stride must be greater than zero, but got {st}")
    if min(dl) < 1:
        raise RuntimeError(
            f"{name}: dilation must be greater than zero, but got {dl}"
        )
    for k, p, d in zip(ks, pd, dl):
        if p < 0 or p > k // 2:
            raise RuntimeError(
                "pad should be at most half of effective kernel size, but got "
                f"pad={p}, kernel_size={k} and dilation={d}"
            )
    spatial = tuple(input.shape[-nd:])
    outs = []
    for size, k, s, p, d in zip(spatial, ks, st, pd, dl):
        num = size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
        o = num // s + 1
        if ceil_mode and (o - 1) * s >= size + p:
            o -= 1
        outs.append(o)
    if min(outs) < 1:
        c = input.shape[-nd - 1]
        raise RuntimeError(
            f"Given input size: ({'x'.join(map(str, (c, *spatial)))}). Calculated "
            f"output size: ({'x'.join(map(str, (c, *outs)))}). Output size is too small"
        )
    return ks, st, pd, dl, tuple(outs)


def _max_pool(input, nd, kernel_size, stride, padding, dilation, ceil_mode,
              return_indices, name):
    _check_pool_input(input, nd, name)
    ks, st, pd, dl, outs = _pool_geometry(input, nd, kernel_size, stride, padding,
                                          dilation, ceil_mode, name)
    if nd == 1:
        ks, st, pd, dl, outs = (1,) + ks, (1,) + st, (0,) + pd, (1,) + dl, (1,) + outs
    fixed = (ks, st, pd, dl)
    return _run_max(input, nd, fixed, None, outs, return_indices)


def _run_max(input, nd, fixed, windows, outs, return_indices):
    """Max pooling by the fixed-window kernel (``fixed`` = kernel, stride,
    padding, dilation) or the window-list kernel (adaptive ``windows``)."""
    x = _planes(input, nd)
    b = x.shape[0]
    out = np.empty((b, outs[0], outs[1]), dtype=x.dtype)
    idx = np.empty((b, outs[0], outs[1]), dtype=np.int64)
    if fixed is not None:
        (kh, kw), (sh, sw), (ph, pw), (dh, dw) = fixed
        _k.max_pool2d_fixed(x, kh, kw, sh, sw, ph, pw, dh, dw, out, idx)
    else:
        _k.max_pool2d_fwd(x, *windows, out, idx)
    y_shape = tuple(input.shape[:-nd]) + tuple(outs[2 - nd:])
    y = _MaxPool.apply(input, out.reshape(y_shape), idx, x.shape[1:])
    if return_indices:
        # a copy: an in-place change to the returned indices must not reach
        # the gradient, which scatters through the saved ones
        return y, from_numpy(idx.reshape(y_shape).copy())
    return y


def max_pool2d(input: Tensor, kernel_size: int | tuple[int, ...],
               stride: int | tuple[int, ...] | None = None,
               padding: int | tuple[int, ...] | str = 0,
               dilation: int | tuple[int, ...] = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Any:
    """2-d max pooling of (N, C, H, W) or (C, H, W) input.

    Windows ``kernel_size`` (dilated by ``dilation``) every ``stride`` (default:
    the kernel size) over the input padded by ``padding`` (-inf, at most half
    the kernel); ``ceil_mode`` keeps a last partial window that starts inside
    the input or the left padding.  ``return_indices`` also returns the flat
    index ``h * W + w`` of each maximum in its plane (int64).
    """
    return _max_pool(input, 2, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices, "max_pool2d")


def max_pool1d(input: Tensor, kernel_size: int | tuple[int, ...],
               stride: int | tuple[int, ...] | None = None,
               padding: int | tuple[int, ...] | str = 0,
               dilation: int | tuple[int, ...] = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Any:
    """1-d max pooling of (N, C, L) or (C, L) input (see ``max_pool2d``)."""
    return _max_pool(input, 1, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices, "max_pool1d")


# ---------------------------------------------------------------------------
# average pooling


class _AvgPool(Function):
    """``y = scale * window sums of x``;  grad_x = the adjoint (_AvgPoolGrad)."""

    _node_name = "AvgPool2DBackward0"

    @staticmethod
    def forward(ctx, x, win, y_shape):
        ctx.win = win
        ctx.x_shape = tuple(x.shape)
        return from_numpy(_avg_arr(x._arr, win, y_shape))

    @staticmethod
    def backward(ctx, grad):
        if not ctx.needs_input_grad[0]:
            return None, None, None
        if is_grad_enabled():
            return _AvgPoolGrad.apply(grad, ctx.win, ctx.x_shape), None, None
        return from_numpy(_avg_grad_arr(grad._arr, ctx.win, ctx.x_shape)), None, None


class _AvgPoolGrad(Function):
    """Adjoint of ``_AvgPool``; its gradient is ``_AvgPool``."""

    _node_name = "AvgPool2DBackwardBackward0"

    @staticmethod
    def forward(ctx, g, win, x_shape):
        ctx.win = win
        ctx.y_shape = tuple(g.shape)
        return from_numpy(_avg_grad_arr(g._arr, win, x_shape))

    @staticmethod
    def backward(ctx, grad):
        if not ctx.needs_input_grad[0]:
            return None, None, None
        if is_grad_enabled():
            return _AvgPool.apply(grad, ctx.win, ctx.y_shape), None, None
        return from_numpy(_avg_arr(grad._arr, ctx.win, ctx.y_shape)), None, None


def _avg_arr(x, win, y_shape):
    hs, he, ws, we, scale, plane = win
    x = np.ascontiguousarray(x).reshape((-1,) + plane)
    out = np.empty((x.shape[0], len(hs), len(ws)), dtype=x.dtype)
    _k.avg_pool2d_fwd(x, hs, he, ws, we, scale, out)
    return out.reshape(y_shape)


def _avg_grad_arr(g, win, x_shape):
    hs, he, ws, we, scale, plane = win
    g = np.ascontiguousarray(g)
    out = np.empty(x_shape, dtype=g.dtype)
    _k.avg_pool2d_bwd(g.reshape(-1, len(hs), len(ws)), hs, he, ws, we, scale,
                      out.reshape((-1,) + plane))
    return out


def _avg_windows(size, out, k, s, p, count_pad):
    start = np.arange(out) * s - p
    end = np.minimum(start + k, size + p)
    full = end - start
    cs = np.maximum(start, 0)
    ce = np.minimum(end, size)
    return cs.astype(_INTP), ce.astype(_INTP), (full if count_pad else ce - cs)


def _avg_pool(input, nd, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override, name):
    if nd == 2 and input.ndim < 3:
        # torch reads dimension -3 first, so the error is its IndexError
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-input.ndim}, "
            f"{input.ndim - 1}], but got -3): {name} expects 3D or 4D input, got "
            f"input of size {_size_str(input.shape)}"
        )
    _check_pool_input(input, nd, name)
    ks, st, pd, _, outs = _pool_geometry(input, nd, kernel_size, stride, padding, 1,
                                         ceil_mode, name)
    if divisor_override is not None and int(divisor_override) == 0:
        raise RuntimeError("divisor must be not zero")
    spatial = tuple(input.shape[-nd:])
    if nd == 1:
        ks, st, pd, outs, spatial = (1,) + ks, (1,) + st, (0,) + pd, (1,) + outs, \
            (1,) + spatial
    hs, he, hc = _avg_windows(spatial[0], outs[0], ks[0], st[0], pd[0],
                              count_include_pad)
    ws, we, wc = _avg_windows(spatial[1], outs[1], ks[1], st[1], pd[1],
                              count_include_pad)
    if divisor_override is not None:
        scale = np.full((outs[0], outs[1]), 1.0 / int(divisor_override))
    else:
        with np.errstate(divide="ignore"):
            scale = 1.0 / np.outer(hc, wc).astype(np.float64)
        scale[~np.isfinite(scale)] = 0.0
    win = (hs, he, ws, we, np.ascontiguousarray(scale), tuple(spatial))
    y_shape = tuple(input.shape[:-nd]) + tuple(outs[2 - nd:])
    return _AvgPool.apply(input, win, y_shape)


def avg_pool2d(input: Tensor, kernel_size: int | tuple[int, ...],
               stride: int | tuple[int, ...] | None = None,
               padding: int | tuple[int, ...] | str = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: Any = None) -> Tensor:
    """2-d average pooling; the divisor counts the zero padding when
    ``count_include_pad`` (torch's default), or is ``divisor_override``."""
    return _avg_pool(input, 2, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override, "avg_pool2d")


def avg_pool1d(input: Tensor, kernel_size: int | tuple[int, ...],
               stride: int | tuple[int, ...] | None = None,
               padding: int | tuple[int, ...] | str = 0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """1-d average pooling of (N, C, L) or (C, L) input."""
    return _avg_pool(input, 1, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, None, "avg_pool1d")


# ---------------------------------------------------------------------------
# adaptive pooling


def _adaptive_windows(size, out):
    o = np.arange(out)
    start = (o * size) // out
    end = -((-(o + 1) * size) // out)  # ceil((o + 1) * size / out)
    return start.astype(_INTP), end.astype(_INTP)


def _adaptive_sizes(input, nd, output_size, name):
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got "
            f"{_size_str(input.shape)}"
        )
    for i in range(1, input.ndim):
        if input.shape[i] == 0:
            raise RuntimeError(
                f"{name}(): Expected input to have non-zero size for non-batch "
                f"dimensions, but input has sizes {_size_str(input.shape)} with "
                f"dimension {i} being empty"
            )
    _check_real(input)
    if isinstance(output_size, (int, np.integer)) or output_size is None:
        output_size = (output_size,) * nd
    sizes = tuple(output_size)
    if len(sizes) != nd:
        raise ValueError(f"{name}: output_size must be an int or {nd} ints")
    spatial = tuple(input.shape[-nd:])
    outs = tuple(s if o is None else int(o) for s, o in zip(spatial, sizes))
    if min(outs) < 0:
        raise RuntimeError(f"{name}: elements of output_size must be greater than or "
                           f"equal to 0 but received {outs}")
    if nd == 1:
        return (1,) + spatial, (1,) + outs
    return spatial, outs


def _adaptive_avg(input, nd, output_size, name):
    spatial, outs = _adaptive_sizes(input, nd, output_size, name)
    hs, he = _adaptive_windows(spatial[0], outs[0])
    ws, we = _adaptive_windows(spatial[1], outs[1])
    scale = 1.0 / np.outer(he - hs, we - ws).astype(np.float64)
    win = (hs, he, ws, we, np.ascontiguousarray(scale.reshape(outs)), tuple(spatial))
    y_shape = tuple(input.shape[:-nd]) + tuple(outs[2 - nd:])
    return _AvgPool.apply(input, win, y_shape)


def adaptive_avg_pool2d(input: Tensor, output_size: int | tuple[int, ...]) -> Tensor:
    """Average over ``output_size`` windows spanning floor(i*H/OH) to
    ceil((i+1)*H/OH) (an entry None keeps that input size)."""
    return _adaptive_avg(input, 2, output_size, "adaptive_avg_pool2d")


def adaptive_avg_pool1d(input: Tensor, output_size: int | tuple[int, ...]) -> Tensor:
    """1-d adaptive average pooling of (N, C, L) or (C, L) input."""
    return _adaptive_avg(input, 1, output_size, "adaptive_avg_pool1d")


def _adaptive_max(input, nd, output_size, return_indices, name):
    spatial, outs = _adaptive_sizes(input, nd, output_size, name)
    hs, he = _adaptive_windows(spatial[0], outs[0])
    ws, we = _adaptive_windows(spatial[1], outs[1])
    windows = (hs, (he - hs).astype(_INTP), 1, ws, (we - ws).astype(_INTP), 1)
    return _run_max(input, nd, None, windows, outs, return_indices)


def adaptive_max_pool2d(input: Tensor, output_size: int | tuple[int, ...],
                        return_indices: bool = False) -> Any:
    """Max over the adaptive windows of ``adaptive_avg_pool2d``."""
    return _adaptive_max(input, 2, output_size, return_indices, "adaptive_max_pool2d")


def adaptive_max_pool1d(input: Tensor, output_size: int | tuple[int, ...],
                        return_indices: bool = False) -> Any:
    """1-d adaptive max pooling."""
    return _adaptive_max(input, 1, output_size, return_indices, "adaptive_max_pool1d")


# ---------------------------------------------------------------------------
# interpolate


_MODES = ("nearest", "nearest-exact", "linear", "bilinear")


def _scales(input, nd, size, scale_factor, recompute):
    spatial = tuple(input.shape[-nd:])
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        outs = _tuple(size, nd, "size")
        return spatial, outs, tuple(i / o for i, o in zip(spatial, outs))
    sf = scale_factor if isinstance(scale_factor, (tuple, list)) else \
        (scale_factor,) * nd
    if len(sf) != nd:
        raise ValueError(
            f"Input and scale_factor must have the same number of spatial dimensions,"
            f" but got input with spatial dimensions of {list(spatial)} and "
            f"scale_factor of shape {list(sf)}."
        )
    outs = tuple(math.floor(i * float(f)) for i, f in zip(spatial, sf))
    if recompute:
        return spatial, outs, tuple(i / o for i, o in zip(spatial, outs))
    return spatial, outs, tuple(1.0 / float(f) for f in sf)


def _nearest_map(size, out, scale, exact):
    o = np.arange(out, dtype=np.float64)
    src = np.floor((o + 0.5) * scale) if exact else np.floor(o * scale)
    return np.minimum(src, size - 1).astype(_INTP)


def _linear_axis(size, out, scale, align_corners):
    o = np.arange(out, dtype=np.float64)
    if align_corners:
        src = o * ((size - 1) / (out - 1)) if out > 1 else np.zeros(out)
    else:
        src = np.maximum((o + 0.5) * scale - 0.5, 0.0)
    i0 = np.minimum(np.floor(src), size - 1).astype(_INTP)
    i1 = np.minimum(i0 + 1, size - 1).astype(_INTP)
    lam = np.ascontiguousarray(src - i0, dtype=np.float64)
    return i0, i1, lam


def interpolate(input: Tensor, size: Any = None, scale_factor: Any = None,
                mode: str = "nearest", align_corners: bool | None = None,
                recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize the spatial dimensions of (N, C, L) or (N, C, H, W) input.

    Modes 'nearest' (source ``floor(o * in / out)``), 'nearest-exact'
    (``floor((o + 0.5) * in / out)``), 'linear' (3-D) and 'bilinear' (4-D),
    with ``align_corners`` as torch (False: pixel centres; True: the corner
    pixels of input and output coincide).
    """
    if mode not in _MODES:
        raise NotImplementedError(
            f"interpolate: mode {mode!r} is not supported by cygrad (modes: "
            f"{', '.join(_MODES)})"
        )
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported")
    if mode.startswith("nearest") and align_corners is not None:
        raise ValueError(
            "align_corners option can only be set with the interpolating modes: "
            "linear | bilinear | bicubic | trilinear"
        )
    nd = input.ndim - 2
    if nd not in (1, 2):
        raise NotImplementedError(
            f"Input Error: cygrad interpolates 3D or 4D input, got {input.ndim}D"
        )
    if mode == "linear" and nd != 1:
        raise NotImplementedError(f"Got {input.ndim}D input, but linear mode needs 3D "
                                  "input")
    if mode == "bilinear" and nd != 2:
        raise NotImplementedError(f"Got {input.ndim}D input, but bilinear mode needs "
                                  "4D input")
    _check_real(input)
    spatial, outs, scales = _scales(input, nd, size, scale_factor,
                                    recompute_scale_factor)
    if min(outs) < 1:
        raise RuntimeError(
            f"Input and output sizes should be greater than 0, but got input "
            f"({', '.join(map(str, spatial))}) and output ({', '.join(map(str, outs))})"
        )
    if nd == 1:
        spatial, outs, scales = (1,) + spatial, (1,) + outs, (1.0,) + scales
    x = input if nd == 2 else input.unsqueeze(-2)
    if mode.startswith("nearest"):
        exact = mode == "nearest-exact"
        ih = _nearest_map(spatial[0], outs[0], scales[0], exact)
        iw = _nearest_map(spatial[1], outs[1], scales[1], exact)
        y = _Pad.apply(x, ih, iw, 0.0)
    else:
        ac = bool(align_corners)
        if nd == 2:
            rows = _linear_axis(spatial[0], outs[0], scales[0], ac)
        else:
            rows = (np.zeros(1, _INTP), np.zeros(1, _INTP), np.zeros(1))
        maps = rows + _linear_axis(spatial[1], outs[1], scales[1], ac)
        y = _Bilinear.apply(x, maps, tuple(x.shape[:-2]) + tuple(outs))
    return y if nd == 2 else y.squeeze(-2)


def _bilinear_arr(x, maps, y_shape):
    x = np.ascontiguousarray(x)
    out = np.empty(y_shape, dtype=x.dtype)
    _ki.bilinear_fwd(x.reshape((-1,) + x.shape[-2:]), *maps,
                     out.reshape((-1,) + tuple(y_shape[-2:])))
    return out


def _bilinear_grad_arr(g, maps, x_shape):
    g = np.ascontiguousarray(g)
    out = np.empty(x_shape, dtype=g.dtype)
    _ki.bilinear_bwd(g.reshape((-1,) + g.shape[-2:]), *maps,
                     out.reshape((-1,) + tuple(x_shape[-2:])))
    return out


class _Bilinear(Function):
    """``y = bilinear resampling of x`` (compiled);  grad_x = its adjoint."""

    _node_name = "UpsampleBilinear2DBackward0"

    @staticmethod
    def forward(ctx, x, maps, y_shape):
        ctx.maps = maps
        ctx.x_shape = tuple(x.shape)
        return from_numpy(_bilinear_arr(x._arr, maps, y_shape))

    @staticmethod
    def backward(ctx, grad):
        if not ctx.needs_input_grad[0]:
            return None, None, None
        if is_grad_enabled():
            return _BilinearGrad.apply(grad, ctx.maps, ctx.x_shape), None, None
        return from_numpy(_bilinear_grad_arr(grad._arr, ctx.maps, ctx.x_shape)), \
            None, None


class _BilinearGrad(Function):
    """The adjoint of ``_Bilinear``; its gradient is ``_Bilinear``."""

    _node_name = "UpsampleBilinear2DBackwardBackward0"

    @staticmethod
    def forward(ctx, g, maps, x_shape):
        ctx.maps = maps
        ctx.y_shape = tuple(g.shape)
        return from_numpy(_bilinear_grad_arr(g._arr, maps, x_shape))

    @staticmethod
    def backward(ctx, grad):
        if not ctx.needs_input_grad[0]:
            return None, None, None
        if is_grad_enabled():
            return _Bilinear.apply(grad, ctx.maps, ctx.y_shape), None, None
        return from_numpy(_bilinear_arr(grad._arr, ctx.maps, ctx.y_shape)), None, None
