"""``RelaxedBernoulli(temperature, probs=None, logits=None)`` and its
logit-space base ``LogitRelaxedBernoulli``."""

from cygrad.distributions import constraints
from cygrad.distributions.distribution import Distribution
from cygrad.distributions.transformed_distribution import TransformedDistribution
from cygrad.distributions.transforms import SigmoidTransform
from cygrad.distributions.utils import (
    _one_of,
    _ProbsOrLogits,
    _uniform,
    broadcast_all,
    clamp_probs,
)

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]


class LogitRelaxedBernoulli(_ProbsOrLogits, Distribution):
    """The logit of a relaxed Bernoulli draw: ``(logit(u) + logits) /
    temperature`` for ``u`` uniform (the binary Concrete distribution in
    logit space)."""

    arg_constraints = {"probs": constraints.unit_interval,
                       "logits": constraints.real}
    support = constraints.real

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        _one_of(probs, logits)
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
        else:
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.shape, validate_args=validate_args)

    def _expand_params(self):
        return {"probs": 0, "logits": 0}




    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        probs = clamp_probs(self.probs.expand(shape))
        u = clamp_probs(_uniform(shape, probs.dtype))
        return (u.log() - (-u).log1p() + probs.log() - (-probs).log1p()) / \
            self.temperature

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value * self.temperature
        return self.temperature.log() + diff - 2 * diff.exp().log1p()


class RelaxedBernoulli(TransformedDistribution):
    """A relaxed (continuous, reparameterisable) Bernoulli on (0, 1): the
    sigmoid of a ``LogitRelaxedBernoulli`` draw; ``temperature`` near 0
    approaches the Bernoulli."""

    arg_constraints = {"probs": constraints.unit_interval,
                       "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(RelaxedBernoulli, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def logits(self):
        return self.base_dist.logits

    @property
    def probs(self):
        return self.base_dist.probs
