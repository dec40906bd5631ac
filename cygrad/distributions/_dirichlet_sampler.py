"""Dirichlet (and Beta) draws with torch's implicit reparameterisation
gradient.

``sample_dirichlet(alpha)`` draws ``x = G / sum(G)`` from independent
``G_i ~ Gamma(alpha_i, 1)`` (NumPy on cygrad's generator).  Its gradient
is torch's ``_Dirichlet`` backward: with ``T = sum(alpha)`` and

    D_i = (dx_i/dalpha_i for x_i ~ Beta(alpha_i, T - alpha_i), the second
           parameter held, at fixed CDF value) / (1 - x_i),

``grad_alpha_i = D_i (g_i - sum_j x_j g_j)``.  For two categories this is
exactly the implicit gradient of a Beta draw through its CDF (what
``Beta.rsample`` differentiates).  torch approximates the Beta derivative;
here it is exact to double precision:

    I_x(p, q) = x^p (1 - x)^q / (p B(p, q)) sum_n (p + q)_n / (p + 1)_n x^n

(positive terms; ``(s)_n`` the rising factorial), differentiated term by
term in ``p`` and ``q`` and divided by the density.  The series is summed
below ``x = (p + 1) / (p + q + 2)``, where its terms decrease from the
start; above it the symmetry ``I_x(p, q) = 1 - I_(1-x)(q, p)`` moves the
point below.
"""

import numpy as np

from cygrad._kernels.engine import _wrap
from cygrad.autograd.function import Function
from cygrad.creation import _rng
from cygrad.ops.special import _np_digamma

__all__ = ["beta_sample_grad", "sample_dirichlet"]

_MAX_TERMS = 1_000_000


def _series(x, p, q):
    """((dI/dp) / pdf, (dI/dq) / pdf) of I_x(p, q), by the series above."""
    u = np.ones_like(x)             # u_n = (p+q)_n / (p+1)_n x^n
    total = np.ones_like(x)         # sum u_n
    sum_v = np.zeros_like(x)        # sum u_n v_n, v_n = d log u_n / dp
    sum_w = np.zeros_like(x)        # sum u_n w_n, w_n = d log u_n / dq
    v = np.zeros_like(x)
    w = np.zeros_like(x)
    active = np.ones(x.shape, dtype=bool)
    for n in range(_MAX_TERMS):
        ratio = (p + q + n) / (p + 1 + n)
        v = v + 1 / (p + q + n) - 1 / (p + 1 + n)
        w = w + 1 / (p + q + n)
        u = u * x * ratio
        total = total + np.where(active, u, 0.0)
        sum_v = sum_v + np.where(active, u * v, 0.0)
        sum_w = sum_w + np.where(active, u * w, 0.0)
        # once the terms shrink (x * ratio < 1) they only keep shrinking
        small = (u <= 1e-17 * total) & (np.abs(u * v) <= 1e-17 * np.abs(sum_v))
        active &= ~(small & (x * ratio < 1))
        if not active.any():
            break
    psi_pq = _np_digamma(p + q)
    c = x * (1 - x) / p
    rp = c * (total * (np.log(x) - 1 / p - _np_digamma(p) + psi_pq) + sum_v)
    rq = c * (total * (np.log1p(-x) - _np_digamma(q) + psi_pq) + sum_w)
    return rp, rq


def beta_sample_grad(x, a, b):
    """``dx/da`` of Beta(a, b) draws ``x`` at fixed CDF value, ``b`` held
    (NumPy float64 arrays that broadcast)."""
    x, a, b = np.broadcast_arrays(*(np.asarray(t, dtype=np.float64)
                                    for t in (x, a, b)))
    shape = x.shape
    x, a, b = x.ravel(), a.ravel(), b.ravel()
    out = np.zeros(x.shape)
    ok = (b > 0) & (x > 0) & (x < 1)
    low = ok & (x <= (a + 1) / (a + b + 2))
    high = ok & ~low
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if low.any():
            out[low] = -_series(x[low], a[low], b[low])[0]
        if high.any():
            out[high] = _series(1 - x[high], b[high], a[high])[1]
    return out.reshape(shape)


class _Dirichlet(Function):
    """x ~ Dirichlet(alpha); grad_alpha as in the module docstring."""

    _node_name = "DirichletBackward"

    @staticmethod
    def forward(ctx, alpha):
        a = alpha.detach().numpy()
        tiny = np.finfo(a.dtype).tiny
        g = np.maximum(_rng(None).standard_gamma(a.astype(np.float64)), 1e-300)
        x = np.maximum((g / g.sum(-1, keepdims=True)).astype(a.dtype), tiny)
        ctx.draws = (x, a)
        return _wrap(np.ascontiguousarray(x))

    @staticmethod
    def backward(ctx, grad):
        x, a = ctx.draws
        x64, a64 = x.astype(np.float64), a.astype(np.float64)
        rest = a64.sum(-1, keepdims=True) - a64
        with np.errstate(divide="ignore", invalid="ignore"):
            d = beta_sample_grad(x64, a64, rest) / (1 - x64)
        d = np.where(np.isfinite(d), d, 0.0).astype(a.dtype)
        xt = _wrap(x)
        return _wrap(d) * (grad - (xt * grad).sum(-1, keepdim=True))


def sample_dirichlet(concentration):
    """One Dirichlet draw per row of ``concentration`` (last dimension the
    categories), differentiable in ``concentration`` as torch's."""
    return _Dirichlet.apply(concentration.contiguous())
