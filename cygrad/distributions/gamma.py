"""``Gamma(concentration, rate)``."""

from cygrad._typeinfo import finfo
from cygrad.distributions import constraints
from cygrad.distributions._gamma_sampler import standard_gamma
from cygrad.distributions.exp_family import ExponentialFamily
from cygrad.distributions.utils import _xlogy, broadcast_all
from cygrad.ops.special import igamma

__all__ = ["Gamma"]


def _clamp_tiny(value):
    """``value`` raised to the smallest normal number where it underflowed,
    keeping its gradient (as torch's in-place clamp of the detached data)."""
    tiny = finfo(value.dtype).tiny
    return value + (value.detach().clamp(min=tiny) - value.detach())


class Gamma(ExponentialFamily):
    """The gamma distribution of shape ``concentration`` and ``rate`` (inverse
    scale).  ``rsample`` has torch's implicit reparameterisation gradient.

    Parameters
    ----------
    concentration, rate : float or Tensor
        Both > 0, broadcast to the batch shape.
    validate_args : bool, optional
    """

    arg_constraints = {"concentration": constraints.positive,
                       "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        value = standard_gamma(self.concentration.expand(shape)) / \
            self.rate.expand(shape)
        return _clamp_tiny(value)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c, r = self.concentration, self.rate
        return _xlogy(c, r) + _xlogy(c - 1, value) - r * value - c.lgamma()

    def entropy(self):
        c = self.concentration
        return c - self.rate.log() + c.lgamma() + (1.0 - c) * c.digamma()

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return (x + 1).lgamma() + (x + 1) * (-y.reciprocal()).log()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return igamma(self.concentration, self.rate * value)
