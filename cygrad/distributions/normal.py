"""``Normal(loc, scale)``."""

import math

import numpy as np

from cygrad.creation import randn
from cygrad.distributions.distribution import Distribution, broadcast_all

__all__ = ["Normal"]


class Normal(Distribution):
    """The normal distribution N(loc, scale^2); ``rsample`` is
    ``loc + scale * eps`` (differentiable in both)."""

    arg_constraints = {"loc": "Real()", "scale": "GreaterThan(lower_bound=0.0)"}
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, (), validate_args)
        self._check_param("loc", self.loc, np.isfinite(self.loc.detach().numpy()),
                          "Real()")
        self._check_param("scale", self.scale, self.scale.detach().numpy() > 0,
                          "GreaterThan(lower_bound=0.0)")

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.scale ** 2

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = randn(*shape, dtype=self.loc.dtype)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        self._check_value(value, np.isfinite(value.detach().numpy()), "Real()")
        var = self.scale ** 2
        return (-((value - self.loc) ** 2) / (2 * var) - self.scale.log()
                - math.log(math.sqrt(2 * math.pi)))

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()
