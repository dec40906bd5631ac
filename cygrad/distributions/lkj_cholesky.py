"""``LKJCholesky(dim, concentration=1.0)``: the LKJ distribution over
Cholesky factors of correlation matrices."""

import math

from cygrad._typeinfo import finfo
from cygrad.creation import arange, randn
from cygrad.distributions import constraints
from cygrad.distributions.beta import Beta
from cygrad.distributions.distribution import Distribution
from cygrad.distributions.utils import broadcast_all
from cygrad.ops import OPS

__all__ = ["LKJCholesky"]

_cat = OPS["cat"].fn
_mvlgamma = OPS["mvlgamma"].fn


class LKJCholesky(Distribution):
    """Lower Cholesky factors ``L`` of ``dim x dim`` correlation matrices
    with density proportional to ``det(L L^T)^(concentration - 1)``.
    Sampling is the onion method (row by row: a Beta-distributed squared
    norm in a uniform direction)."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal "
                             f"to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = tuple(self.concentration.shape)
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = arange(self.dim - 1, dtype=self.concentration.dtype)
        offset = _cat([offset.new_zeros((1,)), offset])
        beta_conc1 = offset + 0.5
        beta_conc0 = marginal_conc.unsqueeze(-1) - 0.5 * offset
        self._beta = Beta(beta_conc1, beta_conc0)
        super().__init__(batch_shape, (dim, dim), validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = tuple(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(batch_shape + (self.dim,))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=()):
        y = self._beta.sample(sample_shape).unsqueeze(-1)
        u_normal = randn(*self._extended_shape(sample_shape), dtype=y.dtype).tril(-1)
        norm = u_normal.norm(dim=-1, keepdim=True)
        # row 0 has no strictly-lower entries: its direction is 0, not 0/0
        row0 = (arange(self.dim) == 0).reshape(-1, 1)
        u_hypersphere = (u_normal / norm.masked_fill(row0, 1.0)).masked_fill(row0, 0.0)
        w = y.sqrt() * u_hypersphere
        tiny = finfo(w.dtype).tiny
        diag = (1 - (w ** 2).sum(-1)).clamp(min=tiny).sqrt()
        return w + diag.diag_embed()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = arange(2, self.dim + 1)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized = (order * diag_elems.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = alpha.lgamma() * dm1
        numerator = _mvlgamma(alpha - 0.5, dm1)
        pi_constant = 0.5 * dm1 * math.log(math.pi)
        return unnormalized - (pi_constant + numerator - denominator)
