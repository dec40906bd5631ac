"""``VonMises(loc, concentration)``: the circular normal distribution."""

import math

import numpy as np

from cygrad._kernels.engine import _wrap
from cygrad.creation import _rng
from cygrad.distributions import constraints
from cygrad.distributions.distribution import Distribution
from cygrad.distributions.utils import broadcast_all, lazy_property
from cygrad.ops.select import Where

__all__ = ["VonMises"]

# Abramowitz & Stegun 9.8.1-9.8.4: polynomial approximations of I0 and I1
# below 3.75 (in (x/3.75)^2) and of sqrt(x) e^-x I_n(x) above it (in
# 3.75/x), accurate to about 1e-7 relative.  torch uses them for the
# normaliser; they are kept so that log_prob matches torch.
_I0_SMALL = [1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.0360768, 0.0045813]
_I0_LARGE = [0.39894228, 0.01328592, 0.00225319, -0.00157565, 0.00916281,
             -0.02057706, 0.02635537, -0.01647633, 0.00392377]
_I1_SMALL = [0.5, 0.87890594, 0.51498869, 0.15084934, 0.02658733, 0.00301532,
             0.00032411]
_I1_LARGE = [0.39894228, -0.03988024, -0.00362018, 0.00163801, -0.01031555,
             0.02282967, -0.02895312, 0.01787654, -0.00420059]


def _horner(y, coef):
    result = coef[-1]
    for c in reversed(coef[:-1]):
        result = c + y * result
    return result


def _log_modified_bessel_fn(x, order=0):
    """log I_order(x) for order 0 or 1 (the polynomial approximations)."""
    if order not in (0, 1):
        raise AssertionError(f"order must be 0 or 1, got {order}")
    y = (x / 3.75) ** 2
    small = _horner(y, _I0_SMALL if order == 0 else _I1_SMALL)
    if order == 1:
        small = x.abs() * small
    small = small.log()
    y = 3.75 / x
    large = x - 0.5 * x.log() + _horner(y, _I0_LARGE if order == 0
                                        else _I1_LARGE).log()
    return Where.apply(x < 3.75, small, large)


def _rejection_sample(loc, kappa, proposal_r, shape, rng):
    """Best and Fisher's (1979) rejection sampler, in float64 NumPy."""
    x = np.zeros(shape)
    done = np.zeros(shape, dtype=bool)
    loc = np.broadcast_to(loc, shape)
    kappa = np.broadcast_to(kappa, shape)
    r = np.broadcast_to(proposal_r, shape)
    while not done.all():
        u1, u2, u3 = rng.random((3,) + shape)
        z = np.cos(math.pi * u1)
        f = (1 + r * z) / (r + z)
        c = kappa * (r - f)
        with np.errstate(divide="ignore", invalid="ignore"):
            accept = (c * (2 - c) - u2 > 0) | (np.log(c / u2) + 1 - c >= 0)
        accept &= ~done
        x = np.where(accept, np.sign(u3 - 0.5) * np.arccos(np.clip(f, -1, 1)), x)
        done |= accept
    return np.mod(x + math.pi + loc, 2 * math.pi) - math.pi


class VonMises(Distribution):
    """The von Mises distribution on the circle (values are angles; the
    density is periodic).  Not reparameterisable."""

    arg_constraints = {"loc": constraints.real,
                       "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, (), validate_args)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.concentration * (value - self.loc).cos()
        return (log_prob - math.log(2 * math.pi)
                - _log_modified_bessel_fn(self.concentration, order=0))

    @lazy_property
    def _proposal_r(self):
        kappa = self.concentration.detach().numpy().astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            tau = 1 + np.sqrt(1 + 4 * kappa ** 2)
            rho = (tau - np.sqrt(2 * tau)) / (2 * kappa)
            r = (1 + rho ** 2) / (2 * rho)
        return np.where(kappa < 1e-5, 1 / kappa + kappa, r)

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        loc = self.loc.detach().numpy().astype(np.float64)
        kappa = self.concentration.detach().numpy().astype(np.float64)
        out = _rejection_sample(loc, kappa, self._proposal_r, shape, _rng(None))
        dtype = self.loc.detach().numpy().dtype
        return _wrap(np.ascontiguousarray(out.astype(dtype)))

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        return 1 - (_log_modified_bessel_fn(self.concentration, order=1)
                    - _log_modified_bessel_fn(self.concentration, order=0)).exp()
