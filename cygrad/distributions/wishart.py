"""``Wishart(df, covariance_matrix=None, precision_matrix=None,
scale_tril=None)``."""

import math
import numbers
import warnings

from cygrad._kernels.engine import TensorBase
from cygrad._typeinfo import finfo
from cygrad.creation import arange, eye, randn, tensor
from cygrad.distributions import constraints
from cygrad.distributions.chi2 import Chi2
from cygrad.distributions.exp_family import ExponentialFamily
from cygrad.distributions.multivariate_normal import _precision_to_scale_tril
from cygrad.distributions.utils import lazy_property, vec_to_tril_matrix
from cygrad.linalg import cholesky, slogdet
from cygrad.ops import OPS
from cygrad.ops.arrange import broadcast_shapes

__all__ = ["Wishart"]

_LOG_2 = math.log(2)
_mvlgamma = OPS["mvlgamma"].fn
_cholesky_solve = OPS["cholesky_solve"].fn
_einsum = OPS["einsum"].fn


def _mvdigamma(x, p):
    """The multivariate digamma: sum_i digamma(x - i/2), i < p."""
    if not bool((x > (p - 1) / 2).all()):
        raise AssertionError("Wrong domain for multivariate digamma function.")
    offsets = arange(p, dtype=x.dtype) / 2
    return (x.unsqueeze(-1) - offsets.expand(tuple(x.shape) + (-1,))).digamma().sum(-1)


class Wishart(ExponentialFamily):
    """The Wishart distribution over positive-definite matrices with ``df``
    degrees of freedom and scale given by one of ``covariance_matrix``,
    ``precision_matrix``, ``scale_tril``.  ``rsample`` is Bartlett's
    decomposition (reparameterised through the chi-squared diagonal)."""

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None,
                 scale_tril=None, validate_args=None):
        given = [m is not None for m in (covariance_matrix, scale_tril,
                                         precision_matrix)]
        if sum(given) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix "
                                 "or scale_tril may be specified.")
        param = next(p for p in (covariance_matrix, precision_matrix, scale_tril)
                     if p is not None)
        if param.ndim < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with "
                             "optional leading batch dimensions")
        if isinstance(df, numbers.Number) and not isinstance(df, TensorBase):
            batch_shape = tuple(param.shape[:-2])
            self.df = tensor(df, dtype=param.dtype)
        else:
            batch_shape = tuple(broadcast_shapes(tuple(param.shape[:-2]),
                                                 tuple(df.shape)))
            self.df = df.expand(batch_shape)
        event_shape = tuple(param.shape[-2:])
        if bool((self.df <= event_shape[-1] - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = "
                             f"{event_shape[-1] - 1}.")
        full = batch_shape + event_shape
        if scale_tril is not None:
            self.scale_tril = param.expand(full)
        elif covariance_matrix is not None:
            self.covariance_matrix = param.expand(full)
        else:
            self.precision_matrix = param.expand(full)
        if bool((self.df < event_shape[-1]).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely "
                          "to occur for ndim - 1 < df < ndim.", stacklevel=2)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._batch_dims = [-(x + 1) for x in range(len(self._batch_shape))]
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)
        self._dist_chi2 = self._chi2(batch_shape)

    def _chi2(self, batch_shape):
        p = self._event_shape[-1] if hasattr(self, "_event_shape") else None
        p = self._unbroadcasted_scale_tril.shape[-1] if p is None else p
        offsets = arange(p, dtype=self._unbroadcasted_scale_tril.dtype)
        return Chi2(df=self.df.unsqueeze(-1) - offsets.expand(tuple(batch_shape)
                                                              + (-1,)))

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = tuple(batch_shape)
        cov_shape = batch_shape + tuple(self.event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(batch_shape)
        new._batch_dims = [-(x + 1) for x in range(len(batch_shape))]
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(cov_shape))
        ExponentialFamily.__init__(new, batch_shape, self.event_shape,
                                   validate_args=False)
        new._dist_chi2 = new._chi2(batch_shape)
        new._validate_args = self._validate_args
        return new

    def _full(self, m):
        return m.expand(tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def scale_tril(self):
        return self._full(self._unbroadcasted_scale_tril)

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return self._full(L @ L.mT)

    @lazy_property
    def precision_matrix(self):
        L = self._unbroadcasted_scale_tril
        identity = eye(self._event_shape[-1], dtype=L.dtype)
        return self._full(_cholesky_solve(identity, L))

    def _df_matrix(self, t):
        return t.reshape(tuple(self._batch_shape) + (1, 1))

    @property
    def mean(self):
        return self._df_matrix(self.df) * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = factor.masked_fill(factor <= 0, math.nan)
        return self._df_matrix(factor) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        diag_V = V.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix(self.df) * (V.pow(2) + _einsum("...i,...j->...ij",
                                                             diag_V, diag_V))

    def _bartlett_sampling(self, sample_shape=()):
        p = self._event_shape[-1]
        eps = finfo(self.df.dtype).eps
        diag = self._dist_chi2.rsample(sample_shape).sqrt().clamp(min=eps)
        off = randn(*(tuple(sample_shape) + tuple(self._batch_shape)
                      + (p * (p - 1) // 2,)), dtype=diag.dtype)
        noise = diag.diag_embed() + vec_to_tril_matrix(off, diag=-1)
        chol = self._unbroadcasted_scale_tril @ noise
        return chol @ chol.mT

    def rsample(self, sample_shape=(), max_try_correction=None):
        """A Bartlett draw; draws that are not numerically positive definite
        are redrawn (all together) up to ``max_try_correction`` (10) times."""
        max_try_correction = 10 if max_try_correction is None else max_try_correction
        sample = self._bartlett_sampling(sample_shape)
        ok = self.support.check(sample)
        if not bool(ok.all()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                fresh = self._bartlett_sampling(sample_shape)
                bad = (~ok).reshape(tuple(ok.shape) + (1, 1))
                sample = fresh * bad.to(fresh.dtype) + sample.masked_fill(bad, 0)
                ok = self.support.check(sample)
                if bool(ok.all()):
                    break
        return sample

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        return (-nu * (p * _LOG_2 / 2 + L.diagonal(dim1=-2, dim2=-1).log().sum(-1))
                - _mvlgamma(nu / 2, p) + (nu - p - 1) / 2 * slogdet(value).logabsdet
                - _cholesky_solve(value, L).diagonal(dim1=-2, dim2=-1).sum(-1) / 2)

    def entropy(self):
        nu = self.df
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        return ((p + 1) * (p * _LOG_2 / 2 + L.diagonal(dim1=-2, dim2=-1).log().sum(-1))
                + _mvlgamma(nu / 2, p) - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p)
                + nu * p / 2)

    @property
    def _natural_params(self):
        nu = self.df
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (nu - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return ((y + (p + 1) / 2) * (-slogdet(-2 * x).logabsdet + _LOG_2 * p)
                + _mvlgamma(y + (p + 1) / 2, p))
