"""``Bernoulli(probs=None, logits=None)``."""

import numpy as np

from cygrad.creation import rand
from cygrad.distributions.distribution import Distribution, _as_tensor

__all__ = ["Bernoulli"]


def _softplus(x):
    return (1 + (-x.abs()).exp()).log() + x.relu()


class Bernoulli(Distribution):
    """1 with probability ``probs`` (or ``sigmoid(logits)``), else 0."""

    arg_constraints = {"probs": "Interval(lower_bound=0.0, upper_bound=1.0)",
                       "logits": "Real()"}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not "
                             "both.")
        self._validate_args = True if validate_args is None else bool(validate_args)
        if probs is not None:
            self.probs = _as_tensor(probs)
            p = self.probs.detach().numpy()
            self._check_param("probs", self.probs, (p >= 0) & (p <= 1),
                              "Interval(lower_bound=0.0, upper_bound=1.0)")
            shape = self.probs.shape
        else:
            self.logits = _as_tensor(logits)
            shape = self.logits.shape
        super().__init__(shape, (), validate_args)

    def __getattr__(self, name):
        if name == "probs":
            self.probs = self.logits.sigmoid()
            return self.probs
        if name == "logits":
            eps = np.finfo(self.probs.dtype).eps
            p = self.probs.clamp(eps, 1 - eps)
            self.logits = p.log() - (1 - p).log()
            return self.logits
        raise AttributeError(name)

    @property
    def mean(self):
        return self.probs

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        p = self.probs.detach()
        return (rand(*shape, dtype=p.dtype) < p.expand(shape)).to(p.dtype)

    def log_prob(self, value):
        v = value.detach().numpy()
        self._check_value(value, (v == 0) | (v == 1), "Boolean()")
        x = self.logits
        return value * x - _softplus(x)

    def entropy(self):
        x = self.logits
        return _softplus(x) - self.probs * x

    def __repr__(self):
        parts = [f"{k}: {self.__dict__[k]}" for k in ("probs", "logits")
                 if k in self.__dict__]
        return f"{type(self).__name__}({', '.join(parts)})"
