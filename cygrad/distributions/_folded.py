"""The half distributions (``HalfNormal``, ``HalfCauchy``): ``|X|`` for a
distribution ``X`` symmetric about 0 with a ``scale``, as a transformed
distribution whose density, CDF, inverse CDF and entropy fold the base's."""

import math

from cygrad.distributions import constraints
from cygrad.distributions.transformed_distribution import TransformedDistribution
from cygrad.distributions.transforms import AbsTransform

__all__ = []


class _Folded(TransformedDistribution):
    """``|X|`` with ``X ~ _symmetric(0, scale)``; subclasses name the base."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _symmetric = None       # the base family: Normal, Cauchy

    def __init__(self, scale, validate_args=None):
        base = self._symmetric(0, scale, validate_args=False)
        super().__init__(base, AbsTransform(), validate_args=validate_args)

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mode(self):
        return self.scale * 0

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return log_prob.masked_fill(value < 0, -math.inf)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)
