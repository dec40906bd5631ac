"""``GeneralizedPareto(loc, scale, concentration)``."""

import math

from cygrad.distributions import constraints
from cygrad.distributions.distribution import Distribution
from cygrad.distributions.utils import _uniform, broadcast_all
from cygrad.ops import OPS
from cygrad.ops.select import Where

__all__ = ["GeneralizedPareto"]

_isclose = OPS["isclose"].fn


class GeneralizedPareto(Distribution):
    """The generalised Pareto distribution: survival function
    ``(1 + concentration z)^(-1/concentration)`` with
    ``z = (x - loc) / scale`` (``exp(-z)`` at concentration 0); ``rsample``
    inverts the CDF."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale,
                                                                 concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def _safe_conc(self):
        c = self.concentration
        eq_zero = _isclose(c, c.new_zeros(()))
        return eq_zero, Where.apply(eq_zero, c.new_ones(()), c)

    def rsample(self, sample_shape=()):
        u = _uniform(self._extended_shape(sample_shape), self.loc.dtype)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe = self._safe_conc()
        y = 1 / safe + z.new_ones(tuple(z.shape))
        nonzero = Where.apply(y == 0, y, y * (safe * z).log1p())
        return -self.scale.log() - Where.apply(eq_zero, z, nonzero)

    def log_survival_function(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe = self._safe_conc()
        return Where.apply(eq_zero, -z, -(safe * z).log1p() / safe)

    def log_cdf(self, value):
        return (-self.log_survival_function(value).exp()).log1p()

    def cdf(self, value):
        return self.log_cdf(value).exp()

    def icdf(self, value):
        eq_zero, safe = self._safe_conc()
        logu = (-value).log1p()
        nonzero = self.loc + self.scale / safe * (-safe * logu).expm1()
        zero = self.loc - self.scale * logu
        return Where.apply(eq_zero, zero, nonzero)

    def _z(self, x):
        return (x - self.loc) / self.scale

    @property
    def mean(self):
        c = self.concentration
        valid = c < 1
        safe = Where.apply(valid, c, c.new_full((), 0.5))
        result = self.loc + self.scale / (1 - safe)
        return Where.apply(valid, result, result.new_full((), math.nan))

    @property
    def variance(self):
        c = self.concentration
        valid = c < 0.5
        safe = Where.apply(valid, c, c.new_full((), 0.25))
        result = self.scale ** 2 / ((1 - safe) ** 2 * (1 - 2 * safe))
        return Where.apply(valid, result, result.new_full((), math.nan))

    def entropy(self):
        ans = self.scale.log() + self.concentration + 1
        return ans.expand(tuple(self._batch_shape))

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        lower = self.loc
        upper = Where.apply(self.concentration < 0,
                            lower - self.scale / self.concentration,
                            lower.new_full((), math.inf))
        return constraints.interval(lower, upper)
