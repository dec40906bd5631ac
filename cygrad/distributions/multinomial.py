"""``Multinomial(total_count=1, probs=None, logits=None)``."""

import math

import numpy as np

from cygrad.distributions import constraints
from cygrad.distributions.binomial import Binomial
from cygrad.distributions.categorical import Categorical
from cygrad.distributions.distribution import Distribution
from cygrad.distributions.utils import broadcast_all

__all__ = ["Multinomial"]


class Multinomial(Distribution):
    """Counts of ``total_count`` independent categorical draws over the last
    dimension of ``probs`` (or ``logits``)."""

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        batch = self._categorical.batch_shape
        event = tuple(self._categorical.param_shape[-1:])
        super().__init__(batch, event, validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = tuple(batch_shape)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        new._binomial = Binomial(total_count=self.total_count, probs=new.probs,
                                 validate_args=False)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def param_shape(self):
        return self._categorical.param_shape

    def sample(self, sample_shape=()):
        sample_shape = tuple(sample_shape)
        draws = self._categorical.sample((self.total_count,) + sample_shape)
        # (total_count, *sample, *batch) -> (*sample, *batch, total_count)
        order = list(range(1, draws.ndim)) + [0]
        draws = draws.permute(*order)
        counts = draws.new_zeros(tuple(self._extended_shape(sample_shape)))
        counts = counts.scatter_add(-1, draws, draws.new_ones(tuple(draws.shape)))
        return counts.to(self.probs.dtype)

    def entropy(self):
        n = self.total_count
        support = self._binomial.enumerate_support()
        binomial_probs = self._binomial.log_prob(support).exp()
        weights = (support + 1).lgamma()
        # torch takes lgamma(n + 1) of a default-dtype (float32) tensor
        log_factorial_n = float(np.float32(math.lgamma(n + 1)))
        return (n * self._categorical.entropy() - log_factorial_n
                + (binomial_probs * weights).sum(0).sum(-1))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_factorial_n = (value.sum(-1) + 1).lgamma()
        log_factorial_xs = (value + 1).lgamma().sum(-1)
        # an impossible category (logit -inf) counted 0 times adds 0, not NaN
        logits = logits.masked_fill((value == 0) & (logits == -math.inf), 0)
        log_powers = (logits * value).sum(-1)
        return log_factorial_n - log_factorial_xs + log_powers
