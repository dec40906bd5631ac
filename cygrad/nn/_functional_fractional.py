"""Fractional max pooling (Graham, 2014): ``kernel_size`` windows at
pseudo-random, increasing starts chosen so that ``output_size`` windows
cover the input; each (batch, channel) plane draws its own start sequence
from one uniform sample per axis.

The starts are torch's formula, computed in the input's dtype (so given the
same ``_random_samples`` the windows, values and indices equal torch's):
``start[i] = int((i + u) * alpha) - int(u * alpha)`` with ``alpha = (size -
k) / (out - 1)``, the last start ``size - k``.  Without ``_random_samples``
the samples come from cygrad's generator (``cygrad.rand``).

Windows differ per plane, so the gather is vectorised NumPy over all
windows at once (``(planes, *out, prod(kernel))`` values): the first maximum
wins a tie and the last NaN wins, as torch's loop.  The result is one
``_MaxPool`` node, whose gradient is the scatter to the maxima (and the
gradient of that the gather), as for the other max pools.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from cygrad.creation import from_numpy, rand

from ._functional_conv import _check_real, _tuple
from ._functional_pool import _MaxPool

if TYPE_CHECKING:
    from cygrad._tensor import Tensor

__all__ = [
    "fractional_max_pool2d", "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d", "fractional_max_pool3d_with_indices",
]

_AXES = {2: ("height", "width"), 3: ("time", "height", "width")}


def _starts(u, size, out, k):
    """(planes, out) window starts from the per-plane samples ``u``."""
    seq = np.empty((u.shape[0], out), dtype=np.int64)
    if out > 1:
        real = u.dtype.type
        alpha = real(size - k) / real(out - 1)
        i = np.arange(out - 1).astype(u.dtype)
        seq[:, :-1] = ((i[None, :] + u[:, None]) * alpha).astype(np.int64) \
            - (u * alpha).astype(np.int64)[:, None]
    if out > 0:
        seq[:, -1] = size - k
    return seq


def _pool_arr(x, samples, ks, outs):
    """Values and flat indices of the fractional windows of ``x`` (planes,
    *spatial); ``samples`` (planes, nd)."""
    nd = len(ks)
    b = x.shape[0]
    spatial = x.shape[1:]
    flat = np.zeros((b,) + tuple(outs) + tuple(ks), dtype=np.int64)
    for a in range(nd):
        offs = _starts(samples[:, a], spatial[a], outs[a], ks[a])[:, :, None] \
            + np.arange(ks[a])
        shape = [b] + [1] * (2 * nd)
        shape[1 + a], shape[1 + nd + a] = outs[a], ks[a]
        flat += offs.reshape(shape) * math.prod(spatial[a + 1:])
    taps = math.prod(ks)
    flat = flat.reshape(b, -1, taps)
    vals = np.take_along_axis(x.reshape(b, -1), flat.reshape(b, -1), axis=1).reshape(
        flat.shape)
    nan = np.isnan(vals)
    pick = np.argmax(vals, axis=-1)
    if nan.any():
        last_nan = taps - 1 - np.argmax(nan[..., ::-1], axis=-1)
        pick = np.where(nan.any(axis=-1), last_nan, pick)
    pick = pick[..., None]
    out = np.take_along_axis(vals, pick, axis=-1)[..., 0]
    idx = np.take_along_axis(flat, pick, axis=-1)[..., 0]
    return out, np.ascontiguousarray(idx)


def _fractional(input, nd, kernel_size, output_size, output_ratio, return_indices,
                _random_samples):
    name = f"fractional_max_pool{nd}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an "
                         "output_ratio")
    if input.ndim < nd + 1:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-input.ndim}, "
            f"{input.ndim - 1}], but got {-nd - 1})"
        )
    if input.ndim != nd + 2 and input.ndim != nd + 1:
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but "
                           f"got: {list(input.shape)}")
    _check_real(input)
    spatial = tuple(int(s) for s in input.shape[-nd:])
    ks = _tuple(kernel_size, nd, "kernel_size")
    if output_size is None:
        if nd == 2 and not hasattr(output_ratio, "__len__"):
            raise TypeError(f"object of type '{type(output_ratio).__name__}' has "
                            "no len()")
        ratio = output_ratio if nd == 2 else _tuple_f(output_ratio, nd)
        outs = tuple(int(s * r) for s, r in zip(spatial, ratio))
    else:
        outs = _tuple(output_size, nd, "output_size")
    n = 1 if input.ndim == nd + 1 else int(input.shape[0])
    c = int(input.shape[-nd - 1])
    if _random_samples is None:
        samples = rand(n, c, nd, dtype=input.dtype)
    else:
        samples = _random_samples
    if samples.ndim != 3 or int(samples.shape[2]) != nd:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {nd}; got "
                           f"{int(samples.shape[2]) if samples.ndim == 3 else None}.")
    if int(samples.shape[0]) < n:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch "
                           "size.")
    if int(samples.shape[1]) != c:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel "
                           "size.")
    prefix = f"{name}()" if nd == 2 else f"{name}_out()"
    slack = 1 if nd == 2 else 0   # torch's 3-d rule is strict: o + k <= size
    for axis, size, k, o in zip(_AXES[nd], spatial, ks, outs):
        if o + k - slack > size:
            raise RuntimeError(f"{prefix}: pool {axis} {k} too large relative to "
                               f"input {axis} {size}")
    x = np.ascontiguousarray(input._arr).reshape((n * c,) + spatial)
    u = np.ascontiguousarray(np.asarray(samples._arr)[:n], dtype=x.dtype).reshape(
        n * c, nd)
    if nd == 2:
        u = np.ascontiguousarray(u[:, ::-1])   # torch: sample 0 is the width's
    out, idx = _pool_arr(x, u, ks, outs)
    y_shape = tuple(input.shape[:-nd]) + outs
    y = _MaxPool.apply(input, out.reshape(y_shape), idx.reshape(n * c, 1, -1),
                       (1, math.prod(spatial)))
    if return_indices:
        return y, from_numpy(idx.reshape(y_shape).copy())
    return y


def _tuple_f(v, n):
    if isinstance(v, (int, float, np.number)):
        return (float(v),) * n
    v = tuple(float(a) for a in v)
    return v * n if len(v) == 1 else v


def fractional_max_pool2d(input: Tensor, kernel_size: int | tuple[int, ...],
                          output_size: int | tuple[int, ...] | None = None,
                          output_ratio: Any = None, return_indices: bool = False,
                          _random_samples: Any = None) -> Any:
    """Fractional max pooling of (N, C, H, W) or (C, H, W) input to
    ``output_size`` (or ``int(size * output_ratio)``); ``_random_samples``
    (N, C, 2) in [0, 1) fix the windows (sample 0 for the width, 1 for the
    height, as torch)."""
    return _fractional(input, 2, kernel_size, output_size, output_ratio,
                       return_indices, _random_samples)


def fractional_max_pool3d(input: Tensor, kernel_size: int | tuple[int, ...],
                          output_size: int | tuple[int, ...] | None = None,
                          output_ratio: Any = None, return_indices: bool = False,
                          _random_samples: Any = None) -> Any:
    """Fractional max pooling of (N, C, D, H, W) or (C, D, H, W) input;
    ``_random_samples`` (N, C, 3)."""
    return _fractional(input, 3, kernel_size, output_size, output_ratio,
                       return_indices, _random_samples)


def fractional_max_pool2d_with_indices(input: Tensor,
                                       kernel_size: int | tuple[int, ...],
                                       output_size: int | tuple[int, ...] | None = None,
                                       output_ratio: Any = None,
                                       return_indices: bool = False,
                                       _random_samples: Any = None) -> Any:
    """``fractional_max_pool2d`` returning ``(output, indices)``."""
    return _fractional(input, 2, kernel_size, output_size, output_ratio, True,
                       _random_samples)


def fractional_max_pool3d_with_indices(input: Tensor,
                                       kernel_size: int | tuple[int, ...],
                                       output_size: int | tuple[int, ...] | None = None,
                                       output_ratio: Any = None,
                                       return_indices: bool = False,
                                       _random_samples: Any = None) -> Any:
    """``fractional_max_pool3d`` returning ``(output, indices)``."""
    return _fractional(input, 3, kernel_size, output_size, output_ratio, True,
                       _random_samples)
