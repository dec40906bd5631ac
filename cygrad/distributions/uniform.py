"""``Uniform(low, high)``."""

import numpy as np

from cygrad.creation import rand
from cygrad.distributions.distribution import Distribution, broadcast_all

__all__ = ["Uniform"]


class Uniform(Distribution):
    """The uniform distribution on [low, high); ``rsample`` is
    ``low + u * (high - low)`` (differentiable in both)."""

    arg_constraints = {"low": "Real()", "high": "Real()"}
    has_rsample = True

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = broadcast_all(low, high)
        super().__init__(self.low.shape, (), validate_args)
        self._check_param("low", self.low, self.low.detach().numpy()
                          < self.high.detach().numpy(), "LessThan(high)")

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def variance(self):
        return (self.high - self.low) ** 2 / 12

    def rsample(self, sample_shape=()):
        u = rand(*self._extended_shape(sample_shape), dtype=self.low.dtype)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value):
        v = value.detach().numpy()
        lo, hi = self.low.detach().numpy(), self.high.detach().numpy()
        self._check_value(value, (v >= lo) & (v <= hi),
                          f"Interval(lower_bound={_num(self.low)}, "
                          f"upper_bound={_num(self.high)})")
        inside = ((v >= lo) & (v < hi))
        width = self.high - self.low
        out = -(width.log()) + value * 0
        mask = value.new_tensor(np.where(inside, 0.0, -np.inf))
        return out + mask

    def entropy(self):
        return (self.high - self.low).log()


def _num(t):
    return t.item() if t.numel() == 1 else t
