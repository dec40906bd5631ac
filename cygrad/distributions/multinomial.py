"""``Multinomial(total_count=1, probs=None, logits=None)``."""

import math

import numpy as np

from cygrad._kernels.engine import _wrap
from cygrad.distributions.categorical import Categorical
from cygrad.distributions.distribution import Distribution
from cygrad.random import multinomial

__all__ = ["Multinomial"]

_lgamma = np.vectorize(math.lgamma, otypes=[np.float64])


class Multinomial(Distribution):
    """Counts of ``total_count`` independent categorical draws."""

    arg_constraints = {}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits,
                                        validate_args=validate_args)
        batch = self._categorical.batch_shape
        super().__init__(batch, (self._categorical._num_events,), validate_args)

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        k = self._categorical._num_events
        n_samples = int(np.prod(sample_shape, dtype=np.int64)) if len(sample_shape) \
            else 1
        p = self.probs.detach().reshape(-1, k)
        draws = multinomial(p, self.total_count * n_samples, True).numpy()
        rows = draws.shape[0]
        draws = draws.reshape(rows, n_samples, self.total_count)
        counts = np.zeros((rows, n_samples, k), dtype=p.numpy().dtype)
        for j in range(k):
            counts[..., j] = (draws == j).sum(-1)
        counts = np.moveaxis(counts, 1, 0).reshape(
            tuple(sample_shape) + tuple(self.batch_shape) + (k,))
        return _wrap(np.ascontiguousarray(counts))

    def log_prob(self, value):
        v = value.detach().numpy()
        self._check_value(value, (v >= 0) & (v == np.round(v)) & np.isclose(
            v.sum(-1), self.total_count), f"IntegerInterval(lower_bound=0, "
            f"upper_bound={self.total_count})")
        logits = self.logits
        # clamped, so an impossible category counted 0 times adds 0, not NaN
        logits = logits.clamp(min=float(np.finfo(logits.dtype).min))
        norm = math.lgamma(self.total_count + 1) - _lgamma(v + 1).sum(-1)
        return (logits * value).sum(-1) + value.new_tensor(norm)

    def __repr__(self):
        return f"{type(self).__name__}()"
