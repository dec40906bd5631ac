"""``Categorical(probs=None, logits=None)``."""

import math

from cygrad._typeinfo import finfo
from cygrad.creation import arange, full
from cygrad.distributions import constraints
from cygrad.distributions.distribution import Distribution
from cygrad.distributions.utils import _one_of, _ProbsOrLogits
from cygrad.ops import OPS
from cygrad.random import multinomial

__all__ = ["Categorical"]

_broadcast_tensors = OPS["broadcast_tensors"].fn


class Categorical(_ProbsOrLogits, Distribution):
    """Draws an index in ``0 .. K-1`` with the given (unnormalised) ``probs``
    or ``logits`` over the last dimension.

    Parameters
    ----------
    probs : Tensor, optional
        Non-negative weights, shape ``batch_shape + (K,)``; normalised to sum
        to 1.
    logits : Tensor, optional
        Unnormalised log-probabilities (normalised by ``logsumexp``).
        Exactly one of ``probs`` and ``logits`` is given.
    validate_args : bool, optional
    """

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True
    _binary = False

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            if probs.ndim < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.ndim < 1:
                raise ValueError("`logits` parameter must be at least "
                                 "one-dimensional.")
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        batch = tuple(self._param.shape[:-1]) if self._param.ndim > 1 else ()
        super().__init__(batch, validate_args=validate_args)


    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)



    @property
    def mean(self):
        return full(self._extended_shape(), math.nan, dtype=self.probs.dtype)

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return full(self._extended_shape(), math.nan, dtype=self.probs.dtype)

    def sample(self, sample_shape=()):
        n = 1
        for s in sample_shape:
            n *= int(s)
        probs_2d = self.probs.detach().reshape(-1, self._num_events)
        draws = multinomial(probs_2d, n, True).t()
        return draws.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = _broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self):
        logits = self.logits.clamp(min=finfo(self.logits.dtype).min)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        values = arange(self._num_events)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values
