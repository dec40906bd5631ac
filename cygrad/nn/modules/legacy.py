"""torch's legacy layers, kept for old code: ``Container`` (a ``Module``
built from keyword children) and ``CrossMapLRN2d`` (Lua torch's
cross-channel response normalisation).

``CrossMapLRN2d`` is one node with torch's own forward and backward rules,
which differ from ``LocalResponseNorm``: channel ``c`` is divided by
``(k + alpha / size * S_c) ** beta`` with ``S_c`` the sum of squares over
channels ``max(1, c - p + 1) .. min(C - 1, c + p - 1)`` plus channel 0,
``p = (size - 1) // 2 + 1`` (torch's running-window update never takes
channel 0 out of the sum), and the backward sums ``grad * out / scale`` over
channels ``c - q .. c + size - 1 - q``, ``q = size - (size - 1) // 2``.  That
backward is not the derivative of that forward (torch's gradcheck of this
layer fails too); cygrad gives torch's numbers.
"""

import warnings

import numpy as np

from cygrad.autograd.function import Function
from cygrad.creation import from_numpy

from ..module import Module

__all__ = ["Container", "CrossMapLRN2d"]


class Container(Module):
    """Deprecated: a ``Module`` whose children are the keyword arguments."""

    def __init__(self, **kwargs):
        super().__init__()
        warnings.warn("`nn.Container` is deprecated. All of its functionality is now "
                      "implemented in `nn.Module`. Subclass that instead.",
                      FutureWarning, stacklevel=2)
        for name, module in kwargs.items():
            self.add_module(name, module)


def _window_sums(a, lo, hi):
    """For each channel c the sum of a[:, lo[c]:hi[c] + 1] (empty: 0)."""
    n, c = a.shape[:2]
    csum = np.concatenate([np.zeros((n, 1) + a.shape[2:]), np.cumsum(a, axis=1)],
                          axis=1)
    hi1 = np.clip(hi + 1, 0, c)
    lo = np.clip(lo, 0, c)
    return csum[:, np.maximum(hi1, lo)] - csum[:, lo]


class _CrossMapLRN2d(Function):
    """out = x * scale ** -beta (the module docstring gives torch's rules)."""

    _node_name = "CrossMapLRN2dBackward"

    @staticmethod
    def forward(ctx, x, size, alpha, beta, k):
        a = np.asarray(x._arr, np.float64)
        c = a.shape[1]
        sq = a * a
        pre = int((size - 1) / 2 + 1)
        ch = np.arange(c)
        hi = np.minimum(ch + pre - 1, c - 1)
        lo = np.maximum(1, ch - pre + 1)
        s = _window_sums(sq, lo, hi) + sq[:, :1]
        scale = s * (alpha / size) + k
        out = a * scale ** -beta
        ctx.saved = (a, out, scale, size, alpha, beta)
        return from_numpy(out.astype(x._arr.dtype))

    @staticmethod
    def backward(ctx, grad):
        a, out, scale, size, alpha, beta = ctx.saved
        g = np.asarray(grad._arr, np.float64)
        c = a.shape[1]
        ratio = g * out / scale
        q = int(size - (size - 1) / 2)
        ch = np.arange(c)
        acc = _window_sums(ratio, ch - q, ch + size - 1 - q)
        gx = scale ** -beta * g - (2 * alpha * beta / size) * a * acc
        return from_numpy(gx.astype(grad._arr.dtype)), None, None, None, None


class CrossMapLRN2d(Module):
    """Cross-channel local response normalisation of (N, C, H, W) input, with
    torch's legacy rules (see the module docstring)."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        if input.ndim != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got "
                             f"{input.ndim}D instead.")
        return _CrossMapLRN2d.apply(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
