"""``RelaxedOneHotCategorical(temperature, probs=None, logits=None)`` and
its log-space base ``ExpRelaxedCategorical``."""

from cygrad.creation import full
from cygrad.distributions import constraints
from cygrad.distributions.categorical import Categorical
from cygrad.distributions.distribution import Distribution
from cygrad.distributions.transformed_distribution import TransformedDistribution
from cygrad.distributions.transforms import ExpTransform
from cygrad.distributions.utils import _uniform, broadcast_all, clamp_probs

__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]


class ExpRelaxedCategorical(Distribution):
    """The log of a relaxed one-hot categorical draw (Gumbel-softmax in log
    space): ``log_softmax((logits + gumbel) / temperature)``."""

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        self.temperature = temperature
        batch = self._categorical.batch_shape
        event = tuple(self._categorical.param_shape[-1:])
        super().__init__(batch, event, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ExpRelaxedCategorical, _instance)
        new.temperature = self.temperature
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def param_shape(self):
        return self._categorical.param_shape

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = clamp_probs(_uniform(shape, self.logits.dtype))
        gumbels = -(-u.log()).log()
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(-1, keepdim=True)

    def log_prob(self, value):
        k = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        t = self.temperature
        log_scale = (full(tuple(t.shape), float(k), dtype=t.dtype).lgamma()
                     - t.log() * (-(k - 1)))
        score = logits - value * t
        score = (score - score.logsumexp(-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    """A relaxed (continuous, reparameterisable) one-hot categorical on the
    simplex: the Gumbel-softmax / Concrete distribution."""

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = ExpRelaxedCategorical(temperature, probs, logits,
                                     validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(RelaxedOneHotCategorical, _instance)
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
