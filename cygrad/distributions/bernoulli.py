"""``Bernoulli(probs=None, logits=None)``."""

import math

from cygrad.creation import arange
from cygrad.distributions import constraints
from cygrad.distributions.exp_family import ExponentialFamily
from cygrad.distributions.utils import (
    _bce_with_logits,
    _one_of,
    _ProbsOrLogits,
    _uniform,
    broadcast_all,
)

__all__ = ["Bernoulli"]


class Bernoulli(_ProbsOrLogits, ExponentialFamily):
    """1 with probability ``probs`` (or ``sigmoid(logits)``), else 0.

    Parameters
    ----------
    probs : float or Tensor, optional
        The probability of 1, in [0, 1].
    logits : float or Tensor, optional
        Its log-odds.  Exactly one of ``probs`` and ``logits`` is given; the
        other is derived on first use.
    validate_args : bool, optional
    """

    arg_constraints = {"probs": constraints.unit_interval,
                       "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            self._param = self.probs
        else:
            (self.logits,) = broadcast_all(logits)
            self._param = self.logits
        super().__init__(self._param.shape, validate_args=validate_args)




    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return mode.masked_fill(self.probs == 0.5, math.nan)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        p = self.probs.detach().expand(shape)
        return (_uniform(shape, p.dtype) < p).to(p.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -_bce_with_logits(logits, value)

    def entropy(self):
        return _bce_with_logits(self.logits, self.probs)

    def enumerate_support(self, expand=True):
        values = arange(2, dtype=self._param.dtype)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        return x.exp().log1p()
