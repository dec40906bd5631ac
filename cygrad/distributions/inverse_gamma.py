"""``InverseGamma(concentration, rate)``: ``1 / X`` for
``X ~ Gamma(concentration, rate)``."""

import math

from cygrad.distributions import constraints
from cygrad.distributions.gamma import Gamma
from cygrad.distributions.transformed_distribution import TransformedDistribution
from cygrad.distributions.transforms import PowerTransform
from cygrad.ops.select import Where

__all__ = ["InverseGamma"]


class InverseGamma(TransformedDistribution):
    """The inverse-gamma distribution (reparameterised through Gamma)."""

    arg_constraints = {"concentration": constraints.positive,
                       "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        base = Gamma(concentration, rate, validate_args=validate_args)
        neg_one = -base.rate.new_ones(())
        super().__init__(base, PowerTransform(neg_one), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(InverseGamma, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def concentration(self):
        return self.base_dist.concentration

    @property
    def rate(self):
        return self.base_dist.rate

    @property
    def mean(self):
        result = self.rate / (self.concentration - 1)
        return Where.apply(self.concentration > 1, result,
                           result.new_full((), math.inf))

    @property
    def mode(self):
        return self.rate / (self.concentration + 1)

    @property
    def variance(self):
        c = self.concentration
        result = self.rate.square() / ((c - 1).square() * (c - 2))
        return Where.apply(c > 2, result, result.new_full((), math.inf))

    def entropy(self):
        c = self.concentration
        return c + self.rate.log() + c.lgamma() - (1 + c) * c.digamma()
