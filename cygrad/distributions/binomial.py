"""``Binomial(total_count=1, probs=None, logits=None)``."""

import numpy as np

from cygrad._kernels.engine import _wrap
from cygrad.creation import _rng, arange
from cygrad.distributions import constraints
from cygrad.distributions.distribution import Distribution
from cygrad.distributions.utils import _one_of, _ProbsOrLogits, broadcast_all

__all__ = ["Binomial"]


def _clamp_by_zero(x):
    # max(x, 0) with the gradient 1/2 at 0 (torch's choice, kept)
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(_ProbsOrLogits, Distribution):
    """The number of successes in ``total_count`` independent trials of
    success probability ``probs`` (or ``sigmoid(logits)``)."""

    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.to(self.probs.dtype)
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.to(self.logits.dtype)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.shape, validate_args=validate_args)


    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(
            max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)



    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        n = np.broadcast_to(self.total_count.detach().numpy(), shape)
        p = np.broadcast_to(self.probs.detach().numpy(), shape)
        draws = _rng(None).binomial(n.astype(np.int64), p.astype(np.float64))
        return _wrap(np.ascontiguousarray(draws, dtype=p.dtype))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        n, logits = self.total_count, self.logits
        log_factorial_n = (n + 1).lgamma()
        log_factorial_k = (value + 1).lgamma()
        log_factorial_nmk = (n - value + 1).lgamma()
        # n * log(1 + exp(logits)), written to keep its gradient finite
        normalize = (n * _clamp_by_zero(logits) + n * (-logits.abs()).exp().log1p()
                     - log_factorial_n)
        return value * logits - log_factorial_k - log_factorial_nmk - normalize

    def _homogeneous_count(self, what):
        top = int(self.total_count.max())
        if not bool((self.total_count.min() == top).all()):
            raise NotImplementedError(
                f"Inhomogeneous total count not supported by `{what}`.")
        return top

    def entropy(self):
        self._homogeneous_count("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(log_prob.exp() * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        top = self._homogeneous_count("enumerate_support")
        values = arange(1 + top, dtype=self._param.dtype)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values
