"""Window functions for spectral analysis: bartlett, blackman, hamming,
hann and kaiser windows (torch's ``*_window``).

Each is a closed form evaluated in float64 and rounded once to ``dtype``.
``periodic=True`` (torch's default) gives the first N points of the
symmetric window of N + 1 points, as used before an FFT.
"""

import math

import numpy as np

from cygrad import dtypes as _dt
from cygrad._kernels.engine import _wrap
from cygrad.creation import get_default_dtype
from cygrad.ops.registry import op


def _window(fname, window_length, periodic, dtype, requires_grad, formula):
    if window_length < 0:
        raise RuntimeError(f"{fname} requires non-negative window_length, got "
                           f"window_length={window_length}")
    dt = np.dtype(_dt.to_numpy(dtype)) if dtype is not None else \
        np.dtype(get_default_dtype())
    if dt.kind != "f":
        raise RuntimeError(f"{fname} expects floating point dtypes, got: "
                           f"{_dt.name(dt)}")
    if window_length == 0:
        vals = np.zeros(0)
    elif window_length == 1:
        vals = np.ones(1)
    else:
        n = window_length + 1 if periodic else window_length
        vals = formula(np.arange(n, dtype=np.float64), n)[:window_length]
    out = _wrap(vals.astype(dt))
    if requires_grad:
        out.requires_grad_(True)
    return out


def _cosines(alpha, beta):
    def formula(k, n):
        return alpha - beta * np.cos(2 * math.pi * k / (n - 1))
    return formula


@op("hann_window", kind="creation")
def hann_window(window_length, periodic=True, *, dtype=None, layout=None,
                device=None, pin_memory=False, requires_grad=False):
    """w[k] = 0.5 - 0.5 cos(2 pi k / (N - 1))."""
    return _window("hann_window", window_length, periodic, dtype, requires_grad,
                   _cosines(0.5, 0.5))


@op("hamming_window", kind="creation")
def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *,
                   dtype=None, layout=None, device=None, pin_memory=False,
                   requires_grad=False):
    """w[k] = alpha - beta cos(2 pi k / (N - 1))."""
    return _window("hamming_window", window_length, periodic, dtype, requires_grad,
                   _cosines(alpha, beta))


@op("blackman_window", kind="creation")
def blackman_window(window_length, periodic=True, *, dtype=None, layout=None,
                    device=None, pin_memory=False, requires_grad=False):
    """w[k] = 0.42 - 0.5 cos(2 pi k / (N - 1)) + 0.08 cos(4 pi k / (N - 1))."""
    def formula(k, n):
        # summed smallest-first, so the ends are exactly 0 (as torch's)
        ang = 2 * math.pi * k / (n - 1)
        return 0.08 * np.cos(2 * ang) - 0.5 * np.cos(ang) + 0.42
    return _window("blackman_window", window_length, periodic, dtype, requires_grad,
                   formula)


@op("bartlett_window", kind="creation")
def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None,
                    device=None, pin_memory=False, requires_grad=False):
    """w[k] = 1 - |2 k / (N - 1) - 1| (a triangle)."""
    return _window("bartlett_window", window_length, periodic, dtype, requires_grad,
                   lambda k, n: 1 - np.abs(2 * k / (n - 1) - 1))


@op("kaiser_window", kind="creation")
def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None,
                  layout=None, device=None, pin_memory=False, requires_grad=False):
    """w[k] = I0(beta sqrt(1 - (2 k / (N - 1) - 1)^2)) / I0(beta)."""
    return _window("kaiser_window", window_length, periodic, dtype, requires_grad,
                   lambda k, n: np.kaiser(n, beta))
