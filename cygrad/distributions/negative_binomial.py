"""``NegativeBinomial(total_count, probs=None, logits=None)``."""

from cygrad.autograd.grad_mode import no_grad
from cygrad.distributions import constraints
from cygrad.distributions.distribution import Distribution
from cygrad.distributions.gamma import Gamma
from cygrad.distributions.utils import (
    _log_sigmoid,
    _one_of,
    _ProbsOrLogits,
    broadcast_all,
    lazy_property,
)
from cygrad.random import poisson

__all__ = ["NegativeBinomial"]


class NegativeBinomial(_ProbsOrLogits, Distribution):
    """The number of successes (probability ``probs`` each) before
    ``total_count`` failures; a gamma-Poisson mixture."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.to(self.probs.dtype)
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.to(self.logits.dtype)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.shape, validate_args=validate_args)


    @property
    def mean(self):
        return self.total_count * self.logits.exp()

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / (-self.logits).sigmoid()



    @lazy_property
    def _gamma(self):
        return Gamma(concentration=self.total_count, rate=(-self.logits).exp(),
                     validate_args=False)

    def sample(self, sample_shape=()):
        with no_grad():
            rate = self._gamma.sample(sample_shape)
            return poisson(rate.contiguous())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        n = self.total_count
        log_unnormalized = n * _log_sigmoid(-self.logits) + value * _log_sigmoid(
            self.logits)
        log_normalization = -(n + value).lgamma() + (1.0 + value).lgamma() + n.lgamma()
        # total_count 0 and value 0: probability 1
        log_normalization = log_normalization.masked_fill(n + value == 0.0, 0.0)
        return log_unnormalized - log_normalization
