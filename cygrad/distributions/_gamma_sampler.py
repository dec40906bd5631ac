"""Standard gamma draws with implicit reparameterisation gradients.

``standard_gamma(alpha)`` draws ``x ~ Gamma(alpha, 1)`` (NumPy's sampler on
cygrad's generator) and differentiates it as torch's ``_standard_gamma``:
holding the draw's CDF value ``u = P(alpha, x)`` fixed,

    dx/dalpha = -(dP/dalpha) / (dP/dx),   dP/dx = x^(alpha-1) e^-x / Gamma(alpha).

Torch approximates this ratio (a series, Rice's saddle point, a rational
fit); here it is computed to double precision by one of two exact
expressions, each used where it does not cancel:

* below ``alpha + 2 sqrt(alpha) + 1`` the power series of P, differentiated
  term by term: ``(dP/dalpha) / pdf = sum_n r_n (log x - psi(alpha + n + 1))``
  with ``r_0 = x / alpha`` and ``r_n = r_(n-1) x / (alpha + n)``;
* above it, the upper tail ``Q = 1 - P`` as an integral,
  ``(dQ/dalpha) / pdf = int_0^inf (log(x + s) - psi(alpha))
  (1 + s/x)^(alpha-1) e^-s ds``, by Gauss-Laguerre quadrature after scaling
  ``s`` by the integrand's decay rate ``1 - (alpha - 1)/x``.
"""

import numpy as np

from cygrad._kernels.engine import _wrap
from cygrad.autograd.function import Function
from cygrad.creation import _rng
from cygrad.ops.special import _np_digamma

__all__ = ["standard_gamma", "standard_gamma_grad"]

_LAGUERRE_U, _LAGUERRE_W = np.polynomial.laguerre.laggauss(80)


def _series_ratio(x, a):
    """(dP/da) / pdf by the term-wise derivative of P's power series."""
    logx = np.log(x)
    r = x / a
    psi = _np_digamma(a + 1.0)
    total = r * (logx - psi)
    n_max = int(np.max(np.maximum(x - a, 0) + 12 * np.sqrt(x + a) + 40)) \
        if x.size else 0
    active = np.ones(x.shape, dtype=bool)
    for n in range(1, n_max + 1):
        psi = psi + 1.0 / (a + n)
        r = r * (x / (a + n))
        term = r * (logx - psi)
        total = total + np.where(active, term, 0.0)
        # past the peak of r_n (n > x - a) the terms only shrink
        active &= ~((n > x - a) & (np.abs(term) <= 1e-17 * np.abs(total)))
        if not active.any():
            break
    return total


def _tail_ratio(x, a):
    """(dQ/da) / pdf by Gauss-Laguerre quadrature of the upper tail."""
    lam = 1.0 - (a - 1.0) / x
    lam = np.where(lam > 0, lam, 1.0)
    s = _LAGUERRE_U[:, None] / lam[None, :]
    xx, aa = x[None, :], a[None, :]
    log_g = (aa - 1.0) * np.log1p(s / xx) - s + _LAGUERRE_U[:, None]
    g = (np.log(xx + s) - _np_digamma(aa)) * np.exp(log_g) / lam[None, :]
    return (_LAGUERRE_W[:, None] * g).sum(0)


def standard_gamma_grad(x, alpha):
    """``dx/dalpha`` of standard gamma draws ``x`` of concentration ``alpha``
    (NumPy float64 arrays of one shape), at fixed CDF value."""
    x = np.asarray(x, dtype=np.float64)
    a = np.asarray(alpha, dtype=np.float64)
    x, a = np.broadcast_arrays(x, a)
    shape = x.shape
    x, a = x.ravel(), a.ravel()
    out = np.empty_like(x)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        _fill(out, x, a)
    return out.reshape(shape)


def _fill(out, x, a):
    tail = x > a + 2 * np.sqrt(a) + 1
    if tail.any():
        out[tail] = _tail_ratio(x[tail], a[tail])
    head = ~tail
    if head.any():
        out[head] = -_series_ratio(x[head], a[head])


class _StandardGamma(Function):
    """x ~ Gamma(alpha, 1); grad_alpha = grad * dx/dalpha (module docstring)."""

    _node_name = "StandardGammaBackward0"

    @staticmethod
    def forward(ctx, alpha):
        a = alpha.detach().numpy()
        draws = _rng(None).standard_gamma(a.astype(np.float64))
        x = np.maximum(np.asarray(draws, dtype=a.dtype), np.finfo(a.dtype).tiny)
        ctx.draws = (x, a)          # the derivative is computed only if asked
        return _wrap(np.ascontiguousarray(x))

    @staticmethod
    def backward(ctx, grad):
        x, a = ctx.draws
        return grad * _wrap(standard_gamma_grad(x, a).astype(a.dtype))


def standard_gamma(alpha):
    """Draws of Gamma(alpha, 1), one per entry of ``alpha``, differentiable
    in ``alpha`` by implicit reparameterisation."""
    return _StandardGamma.apply(alpha.contiguous())
