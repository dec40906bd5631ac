"""``Gumbel(loc, scale)``."""

import math

from cygrad._typeinfo import finfo
from cygrad.distributions import constraints
from cygrad.distributions.transformed_distribution import TransformedDistribution
from cygrad.distributions.transforms import AffineTransform, ExpTransform
from cygrad.distributions.uniform import Uniform
from cygrad.distributions.utils import broadcast_all, euler_constant

__all__ = ["Gumbel"]


class Gumbel(TransformedDistribution):
    """The Gumbel (type-I extreme value) distribution:
    ``loc - scale * log(-log(u))`` for ``u`` uniform on (0, 1)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        fi = finfo(self.loc.dtype)
        base = Uniform(self.loc.new_full(tuple(self.loc.shape), fi.tiny),
                       self.loc.new_full(tuple(self.loc.shape), 1 - fi.eps),
                       validate_args=validate_args)
        parts = [ExpTransform().inv,
                 AffineTransform(loc=0, scale=-self.scale.new_ones(
                     tuple(self.scale.shape))),
                 ExpTransform().inv,
                 AffineTransform(loc=self.loc, scale=-self.scale)]
        super().__init__(base, parts, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gumbel, _instance)
        new.loc = self.loc.expand(tuple(batch_shape))
        new.scale = self.scale.expand(tuple(batch_shape))
        return super().expand(batch_shape, _instance=new)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (self.loc - value) / self.scale
        return -self.scale.log() + z - z.exp()

    @property
    def mean(self):
        return self.loc + self.scale * euler_constant

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def entropy(self):
        return self.scale.log() + (1 + euler_constant)
