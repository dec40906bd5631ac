"""``Dirichlet(concentration)``."""

from cygrad.creation import arange
from cygrad.distributions import constraints
from cygrad.distributions._dirichlet_sampler import sample_dirichlet
from cygrad.distributions.exp_family import ExponentialFamily
from cygrad.distributions.utils import _xlogy

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution on the simplex of the last dimension of
    ``concentration``.

    Parameters
    ----------
    concentration : Tensor
        Positive, shape ``batch_shape + (K,)`` (at least one dimension).
    validate_args : bool, optional
    """

    arg_constraints = {"concentration": constraints.independent(
        constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.ndim < 1:
            raise ValueError("`concentration` parameter must be at least "
                             "one-dimensional.")
        self.concentration = concentration
        shape = tuple(concentration.shape)
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        return sample_dirichlet(self.concentration.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return (_xlogy(c - 1.0, value).sum(-1) + c.sum(-1).lgamma()
                - c.lgamma().sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        cm1 = (self.concentration - 1).clamp(min=0.0)
        mode = cm1 / cm1.sum(-1, keepdim=True)
        # every concentration below 1: the mode is the corner of the largest
        k = cm1.shape[-1]
        corner = (cm1.argmax(-1, keepdim=True) == arange(k)).to(mode.dtype)
        all_small = (self.concentration < 1).all(-1, keepdim=True)
        return mode.masked_fill(all_small, 0) + corner * all_small.to(mode.dtype)

    @property
    def variance(self):
        c = self.concentration
        c0 = c.sum(-1, keepdim=True)
        return c * (c0 - c) / (c0.pow(2) * (c0 + 1))

    def entropy(self):
        c = self.concentration
        k = c.shape[-1]
        a0 = c.sum(-1)
        return (c.lgamma().sum(-1) - a0.lgamma() - (k - a0) * a0.digamma()
                - ((c - 1.0) * c.digamma()).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - x.sum(-1).lgamma()
