"""``Categorical(probs=None, logits=None)``."""

import numpy as np

from cygrad.creation import arange
from cygrad.distributions.distribution import Distribution, _as_tensor
from cygrad.random import multinomial

__all__ = ["Categorical"]


def _probs_logits(dist, probs, logits):
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    if probs is not None:
        probs = _as_tensor(probs)
        p = probs.detach().numpy()
        dist._check_probs(probs, p)
        probs = probs / probs.sum(-1, keepdim=True)
        return probs, None
    logits = _as_tensor(logits)
    return None, logits - logits.logsumexp(-1, keepdim=True)


class Categorical(Distribution):
    """Draws an index in ``0 .. K-1`` with the given (unnormalised) ``probs``
    or ``logits`` over the last dimension."""

    arg_constraints = {"probs": "Simplex()", "logits": "IndependentConstraint(Real(), 1)"}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._validate_args = True if validate_args is None else bool(validate_args)
        p, lg = _probs_logits(self, probs, logits)
        if p is not None:
            self.probs = p
        else:
            self.logits = lg
        param = p if p is not None else lg
        if param.ndim < 1:
            raise ValueError("`logits` parameter must be at least one-dimensional.")
        self._num_events = param.shape[-1]
        super().__init__(tuple(param.shape[:-1]), (), validate_args)

    def _check_probs(self, probs, p):
        ok = np.all(p >= 0) and np.all(np.isfinite(p)) and p.ndim >= 1 and np.all(
            p.sum(-1) > 0)
        if self._validate_args and not ok:
            raise ValueError(
                f"Expected parameter probs (Tensor of shape {tuple(probs.shape)}) of "
                f"distribution {type(self).__name__}(probs: {probs.size()}) to "
                f"satisfy the constraint Simplex(), but found invalid values:\n"
                f"{probs}")

    def __getattr__(self, name):
        # probs and logits are computed from each other on first use
        if name == "probs":
            self.probs = self.logits.softmax(-1)
            return self.probs
        if name == "logits":
            eps = np.finfo(self.probs.dtype).eps
            self.logits = self.probs.clamp(eps, 1 - eps).log()
            return self.logits
        raise AttributeError(name)

    @property
    def param_shape(self):
        return (self.probs if "probs" in self.__dict__ else self.logits).size()

    @property
    def mean(self):
        return self.probs.new_full(tuple(self.batch_shape), float("nan"))

    @property
    def mode(self):
        return self.probs.argmax(-1)

    def sample(self, sample_shape=()):
        n = int(np.prod(sample_shape, dtype=np.int64)) if len(sample_shape) else 1
        p = self.probs.detach().reshape(-1, self._num_events)
        draws = multinomial(p, n, True)              # (batch, n)
        out = draws.t() if draws.ndim == 2 else draws
        return out.reshape(tuple(sample_shape) + tuple(self.batch_shape))

    def log_prob(self, value):
        v = value.detach().numpy()
        self._check_value(value, (v >= 0) & (v < self._num_events) & (v == np.round(v)),
                          f"IntegerInterval(lower_bound=0, upper_bound="
                          f"{self._num_events - 1})")
        logits = self.logits
        onehot = (value.long().unsqueeze(-1) == arange(self._num_events)).to(
            logits.dtype)
        return (onehot * logits).sum(-1)

    def entropy(self):
        min_real = float(np.finfo(self.logits.dtype).min)
        logits = self.logits.clamp(min=min_real)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        values = arange(self._num_events).reshape((-1,) + (1,) * len(self.batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self.batch_shape))
        return values

    def __repr__(self):
        parts = [f"{k}: {self.__dict__[k].size()}" for k in ("probs", "logits")
                 if k in self.__dict__]
        return f"{type(self).__name__}({', '.join(parts)})"
