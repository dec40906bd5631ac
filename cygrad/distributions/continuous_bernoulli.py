"""``ContinuousBernoulli(probs=None, logits=None, lims=(0.499, 0.501))``."""

import math

from cygrad.autograd.grad_mode import no_grad
from cygrad.distributions import constraints
from cygrad.distributions.exp_family import ExponentialFamily
from cygrad.distributions.utils import (
    _bce_with_logits,
    _uniform,
    broadcast_all,
    clamp_probs,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)
from cygrad.ops.select import Where

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily):
    """The continuous Bernoulli distribution on [0, 1]: density proportional
    to ``p^x (1 - p)^(1 - x)``.  Within ``lims`` of ``p = 1/2`` the
    closed forms lose precision; there Taylor expansions around 1/2 are used
    (torch's choice)."""

    arg_constraints = {"probs": constraints.unit_interval,
                       "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501),
                 validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not "
                             "both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            if validate_args is not None and not bool(
                    self.arg_constraints["probs"].check(self.probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
            self._param = self.probs
        else:
            (self.logits,) = broadcast_all(logits)
            self._param = self.logits
        self._lims = lims
        super().__init__(self._param.shape, validate_args=validate_args)

    def _expanded_from(self, other):
        self._param = self.__dict__.get("probs", self.__dict__.get("logits"))

    def _outside_unstable_region(self):
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        return Where.apply(self._outside_unstable_region(), self.probs,
                           self.probs.new_full((), self._lims[0]))

    def _cont_bern_log_norm(self):
        """The log normalising constant as a function of ``probs``."""
        cut = self._cut_probs()
        below = Where.apply(cut <= 0.5, cut, cut.new_zeros(()))
        above = Where.apply(cut >= 0.5, cut, cut.new_ones(()))
        log_norm = ((-cut).log1p() - cut.log()).abs().log() - Where.apply(
            cut <= 0.5, (-2.0 * below).log1p(), (2.0 * above - 1.0).log())
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return Where.apply(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / ((-cut).log1p() - cut.log())
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return Where.apply(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        return self.variance.sqrt()

    @property
    def variance(self):
        cut = self._cut_probs()
        var = cut * (cut - 1.0) / (1.0 - 2.0 * cut).pow(2) + 1.0 / (
            (-cut).log1p() - cut.log()).pow(2)
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return Where.apply(self._outside_unstable_region(), var, taylor)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self):
        return self._param.size()

    def sample(self, sample_shape=()):
        u = _uniform(self._extended_shape(sample_shape), self.probs.dtype)
        with no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape=()):
        u = _uniform(self._extended_shape(sample_shape), self.probs.dtype)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -_bce_with_logits(logits, value) + self._cont_bern_log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        cdfs = (cut.pow(value) * (1.0 - cut).pow(1.0 - value) + cut - 1.0) / (
            2.0 * cut - 1.0)
        unbounded = Where.apply(self._outside_unstable_region(), cdfs, value)
        return Where.apply(value <= 0.0, value.new_zeros(()), Where.apply(
            value >= 1.0, value.new_ones(()), unbounded))

    def icdf(self, value):
        cut = self._cut_probs()
        inside = (((-cut + value * (2.0 * cut - 1.0)).log1p() - (-cut).log1p())
                  / (cut.log() - (-cut).log1p()))
        return Where.apply(self._outside_unstable_region(), inside, value)

    def entropy(self):
        log_probs0 = (-self.probs).log1p()
        log_probs1 = self.probs.log()
        return (self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm()
                - log_probs0)

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        lo, hi = self._lims[0] - 0.5, self._lims[1] - 0.5
        outside = (x <= lo) | (x > hi)
        cut = Where.apply(outside, x, x.new_full((), lo))
        log_norm = cut.expm1().abs().log() - cut.abs().log()
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return Where.apply(outside, log_norm, taylor)
