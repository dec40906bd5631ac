"""``HalfCauchy(scale)``: ``|X|`` for ``X ~ Cauchy(0, scale)``."""

import math

from cygrad.creation import full
from cygrad.distributions._folded import _Folded
from cygrad.distributions.cauchy import Cauchy

__all__ = ["HalfCauchy"]


class HalfCauchy(_Folded):
    """The half-Cauchy distribution of ``scale``."""

    _symmetric = Cauchy

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(HalfCauchy, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return full(self._extended_shape(), math.inf, dtype=self.scale.dtype)

    @property
    def variance(self):
        return self.base_dist.variance
