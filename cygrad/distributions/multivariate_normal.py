"""``MultivariateNormal(loc, covariance_matrix=None, precision_matrix=None,
scale_tril=None)``."""

import math

from cygrad.creation import eye
from cygrad.distributions import constraints
from cygrad.distributions.distribution import Distribution
from cygrad.distributions.utils import _standard_normal, lazy_property
from cygrad.linalg import cholesky, solve
from cygrad.ops import OPS
from cygrad.ops.arrange import broadcast_shapes

__all__ = ["MultivariateNormal"]

_cholesky_inverse = OPS["cholesky_inverse"].fn


def _batch_mv(bmat, bvec):
    """Matrix times vector over broadcast batch dimensions."""
    return (bmat @ bvec.unsqueeze(-1)).squeeze(-1)


def _solve_tril(L, B):
    """``L^-1 B`` for lower-triangular ``L`` (batches broadcast).  Only
    ``L``'s lower triangle is read, so only it receives a gradient (as
    torch's ``solve_triangular``)."""
    return solve(L.tril(), B)


def _batch_mahalanobis(L, x):
    """``|L^-1 x|^2`` over the last dimension: the squared Mahalanobis
    distance of ``x`` for the covariance ``L L^T``."""
    n = x.shape[-1]
    if L.ndim == 2:
        # one matrix: a single solve with every vector as a column
        flat = x.reshape(-1, n).t()
        m = _solve_tril(L, flat).pow(2).sum(0)
        return m.reshape(tuple(x.shape[:-1]))
    return _solve_tril(L, x.unsqueeze(-1)).squeeze(-1).pow(2).sum(-1)


def _precision_to_scale_tril(P):
    """The lower Cholesky factor of ``P^-1``, from the Cholesky factor of
    ``P`` with its rows and columns reversed (no explicit inverse of ``P``)."""
    Lf = cholesky(P.flip((-2, -1)))
    L_inv = Lf.flip((-2, -1)).mT
    return _solve_tril(L_inv, eye(P.shape[-1], dtype=P.dtype))


class MultivariateNormal(Distribution):
    """The multivariate normal distribution of mean ``loc`` and one of
    ``covariance_matrix``, ``precision_matrix`` or ``scale_tril`` (the lower
    Cholesky factor of the covariance).  ``rsample`` is
    ``loc + scale_tril @ eps``.

    Parameters
    ----------
    loc : Tensor
        The mean, shape ``batch_shape + (D,)``.
    covariance_matrix, precision_matrix : Tensor, optional
        Positive-definite, shape ``batch_shape + (D, D)``.
    scale_tril : Tensor, optional
        Lower triangular with a positive diagonal.  Exactly one of the three
        matrices is given; the others are derived on first use.  Batch
        dimensions of ``loc`` and the matrix broadcast.
    validate_args : bool, optional
    """

    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None,
                 scale_tril=None, validate_args=None):
        if loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = [m is not None for m in (covariance_matrix, scale_tril,
                                         precision_matrix)]
        if sum(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix "
                             "or scale_tril may be specified.")
        for name, mat in (("scale_tril", scale_tril),
                          ("covariance_matrix", covariance_matrix),
                          ("precision_matrix", precision_matrix)):
            if mat is None:
                continue
            if mat.ndim < 2:
                what = "scale_tril matrix" if name == "scale_tril" else name
                raise ValueError(f"{what} must be at least two-dimensional, with "
                                 "optional leading batch dimensions")
            batch_shape = tuple(broadcast_shapes(tuple(mat.shape[:-2]),
                                                 tuple(loc.shape[:-1])))
            setattr(self, name, mat.expand(batch_shape + tuple(mat.shape[-2:])))
        self.loc = loc.expand(batch_shape + tuple(loc.shape[-1:]))
        super().__init__(batch_shape, tuple(self.loc.shape[-1:]),
                         validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = tuple(batch_shape)
        event = tuple(self.event_shape)
        new.loc = self.loc.expand(batch_shape + event)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(batch_shape + event
                                                              + event))
        Distribution.__init__(new, batch_shape, event, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _full(self, m):
        return m.expand(tuple(self._batch_shape) + tuple(self._event_shape) * 2)

    @lazy_property
    def scale_tril(self):
        return self._full(self._unbroadcasted_scale_tril)

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return self._full(L @ L.mT)

    @lazy_property
    def precision_matrix(self):
        return self._full(_cholesky_inverse(self._unbroadcasted_scale_tril))

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(
            tuple(self._batch_shape) + tuple(self._event_shape))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(shape, self.loc.dtype)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        L = self._unbroadcasted_scale_tril
        m = _batch_mahalanobis(L, diff)
        half_log_det = L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + m) - half_log_det

    def entropy(self):
        L = self._unbroadcasted_scale_tril
        half_log_det = L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        h = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + half_log_det
        if len(self._batch_shape) == 0:
            return h
        return h.expand(tuple(self._batch_shape))
