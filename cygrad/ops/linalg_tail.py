"""The rest of torch.linalg, composed of the decompositions and solves:
``lstsq``, ``matrix_rank``, ``cond``, ``vander``, ``diagonal``, the ``_ex``
forms (``inv_ex``, ``cholesky_ex``, ``solve_ex``: an ``info`` instead of an
error), ``tensorinv``, ``tensorsolve`` and ``householder_product``.

They are composites: gradients come from the ops they are made of.  The
``lstsq`` solution is ``pinv(A) @ B`` (the minimum-norm least-squares
solution, which LAPACK's default CPU driver gelsy also returns, and whose
gradient is the one torch defines for lstsq); which of ``residuals``,
``rank`` and ``singular_values`` are filled follows torch's drivers.
"""

import collections
import math

import numpy as np

from cygrad import dtypes as _dt
from cygrad._kernels.engine import _wrap
from cygrad.ops.decomp import (
    LinAlgError,
    _batch_label,
    _check_square,
    _not_pd_order,
    cholesky,
    eigvalsh,
    inv,
    matrix_norm,
    pinv,
    solve,
    svdvals,
)
from cygrad.ops.linalg import _check_tensors, matmul
from cygrad.ops.select import where
from cygrad.ops.shape import cat
from cygrad.ops.triangular import _np_lu, lu_factor_ex, lu_solve

__all__ = ["cholesky_ex", "cond", "diagonal", "householder_product", "inv_ex",
           "lstsq", "matrix_rank", "solve_ex", "tensorinv", "tensorsolve", "vander"]

_LSTSQ = collections.namedtuple("torch_return_types_linalg_lstsq",
                                ["solution", "residuals", "rank", "singular_values"])
_INV_EX = collections.namedtuple("torch_return_types_linalg_inv_ex",
                                 ["inverse", "info"])
_CHOL_EX = collections.namedtuple("torch_return_types_linalg_cholesky_ex",
                                  ["L", "info"])
_SOLVE_EX = collections.namedtuple("torch_return_types_linalg_solve_ex",
                                   ["result", "info"])

_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def _short(dtype):
    """torch's scalar-type name: Double, Float, Long..."""
    return _dt.type_name(dtype).removeprefix("torch.").removesuffix("Tensor")


def _empty(dtype):
    return _wrap(np.zeros((0,), dtype))


def _rank_from(S, m, n, atol, rtol):
    """Count of singular values above max(atol, rtol * s_max) (torch's rule
    for the defaults: rtol = eps * max(m, n) unless atol > 0 is given)."""
    s = S._arr
    eps = np.finfo(s.dtype).eps
    atol_a = np.asarray(0.0 if atol is None else
                        (atol._arr if hasattr(atol, "_arr") else atol), np.float64)
    if rtol is None:
        rtol_a = np.where(atol_a > 0, 0.0, eps * max(m, n)) if atol is not None \
            else np.asarray(eps * max(m, n))
    else:
        rtol_a = np.asarray(rtol._arr if hasattr(rtol, "_arr") else rtol, np.float64)
    smax = s.max(-1) if s.shape[-1] else np.zeros(s.shape[:-1], s.dtype)
    cutoff = np.maximum(atol_a, rtol_a * smax)
    return _wrap((s > cutoff[..., None]).sum(-1).astype(np.int64))


def lstsq(A, B, rcond=None, *, driver=None):
    """``(solution, residuals, rank, singular_values)`` of min ||A X - B||.

    Parameters
    ----------
    A : Tensor (*, m, n)
    B : Tensor (*, m, k), or (*, m) for one right-hand side
    rcond : float, optional
        Singular values at or below ``rcond * s_max`` count as zero
        (default eps * max(m, n)).
    driver : {"gelsy", "gels", "gelsd", "gelss"}, optional
        torch's CPU driver names; default "gelsy".  They decide which fields
        are filled: ``rank`` for all but gels, ``singular_values`` for gelsd
        and gelss, ``residuals`` (squared norms of the columns of A X - B)
        for all but gelsy when m > n and A has full rank.  The rest are
        empty tensors.

    Returns
    -------
    namedtuple; ``solution`` (*, n, k) is the minimum-norm least-squares
    solution, differentiable in A and B.
    """
    fname = "torch.linalg.lstsq"
    _check_tensors("linalg.lstsq", A=A, B=B)
    driver = "gelsy" if driver is None else driver
    if driver not in _DRIVERS:
        raise RuntimeError(f"{fname}: parameter `driver` should be one of "
                           "(gels, gelsy, gelsd, gelss)")
    a, b = A._arr, B._arr
    if a.ndim < 2:
        raise RuntimeError(f"{fname}: input must have at least 2 dimensions.")
    if a.dtype != b.dtype:
        raise RuntimeError(f"{fname}: Expected input and other to have the same "
                           f"dtype, but got input's dtype {_short(a.dtype)} and "
                           f"other's dtype {_short(b.dtype)}")
    if a.dtype.kind != "f":
        raise RuntimeError(f"{fname}: Expected input and other to be floating point "
                           "tensors")
    vector = b.ndim == a.ndim - 1
    Bm = B.unsqueeze(-1) if vector else B
    if Bm._arr.ndim < 2:
        raise RuntimeError(f"{fname}: input.dim() must be greater or equal to "
                           "other.dim() and (input.dim() - other.dim()) <= 1")
    if Bm._arr.shape[-2] != a.shape[-2]:
        raise RuntimeError(f"{fname}: input.size(-2) should match other.size(-2)")
    m, n = a.shape[-2:]
    eps = np.finfo(a.dtype).eps
    rtol = eps * max(m, n) if rcond is None or rcond < 0 else rcond
    X = matmul(pinv(A, rtol=rtol), Bm)
    S = svdvals(A)
    rank = _rank_from(S, m, n, None, rtol)
    full = bool((rank._arr == min(m, n)).all())
    if driver != "gelsy" and m > n and full:
        residuals = ((matmul(A, X) - Bm) ** 2).sum(-2)
        if vector:
            residuals = residuals.squeeze(-1)
    else:
        residuals = _empty(a.dtype)
    if driver == "gels":
        rank = _wrap(np.zeros((0,), np.int64))
    # torch's lstsq gives no gradient through its singular values
    singular = S.detach() if driver in ("gelsd", "gelss") else _empty(a.dtype)
    return _LSTSQ(X.squeeze(-1) if vector else X, residuals, rank, singular)


def matrix_rank(A, tol=None, hermitian=False, *, atol=None, rtol=None):
    """The number of singular values (``hermitian``: |eigenvalues|) above
    max(atol, rtol * largest), as int64; ``tol`` (torch's older keyword)
    is ``atol`` with ``rtol = 0``."""
    fname = "torch.linalg.matrix_rank"
    _check_tensors("linalg.matrix_rank", input=A)
    if A._arr.ndim < 2:
        raise RuntimeError(f"{fname}: The input tensor input must have at least 2 "
                           "dimensions.")
    if tol is not None:
        atol, rtol = tol, 0.0
    if hermitian:
        S = eigvalsh(A).abs()
    else:
        S = svdvals(A)
    m, n = A._arr.shape[-2:]
    return _rank_from(S, m, n, atol, rtol)


def cond(A, p=None):
    """The condition number ||A||_p ||A^-1||_p; p in None/2/-2 (ratio of
    extreme singular values; any shape) or 'fro', 'nuc', inf, -inf, 1, -1
    (square matrices; a singular one gives inf, or for 'nuc', computed from
    the singular values, a huge number or nan)."""
    _check_tensors("linalg.cond", A=A)
    if A._arr.ndim < 2:
        raise RuntimeError("linalg.cond: The input tensor A must have at least 2 "
                           "dimensions.")
    if p is None or p in (2, -2):
        S = svdvals(A)
        return S[..., 0] / S[..., -1] if p != -2 else S[..., -1] / S[..., 0]
    if p not in ("fro", "nuc", math.inf, -math.inf, 1, -1):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    _check_square(f"linalg.cond(ord={p})", A)
    if p == "nuc":      # from the singular values, as torch: 0 * inf is nan
        S = svdvals(A)
        with np.errstate(divide="ignore"):
            return S.sum(-1) * S.reciprocal().sum(-1)
    Ainv, info = inv_ex(A)
    singular = info._arr > 0
    if not singular.any():
        return matrix_norm(A, p) * matrix_norm(Ainv, p)
    bad = _wrap(singular[..., None, None])
    Ainv = where(bad, 0.0, Ainv)        # inf/nan entries would stop the SVD
    return where(_wrap(singular), math.inf, matrix_norm(A, p) * matrix_norm(Ainv, p))


def vander(x, *, N=None):
    """The Vandermonde matrix of ``x`` (*, n): columns x^0, x^1, ...,
    x^(N-1) (N defaults to n), as cumulative products (so the gradient is
    finite at 0)."""
    _check_tensors("linalg.vander", x=x)
    n = x._arr.shape[-1] if x._arr.ndim else 1
    N = n if N is None else N
    if x._arr.ndim == 0 or N <= 1:
        raise RuntimeError("N must be greater than 1.")
    ones = _wrap(np.ones(x._arr.shape + (1,), x._arr.dtype))
    powers = cat([ones, x.unsqueeze(-1).expand(x._arr.shape + (N - 1,))], -1)
    return powers.cumprod(-1)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """``cygrad.diagonal`` with the last two dims as the default."""
    return A.diagonal(offset, dim1, dim2)


def _lu_info(a):
    return _np_lu(a)[2]


def inv_ex(A, *, check_errors=False):
    """``(inverse, info)``: info (int32 per matrix) is k > 0 when U[k-1, k-1]
    of A's LU is zero; the inverse of a singular matrix is then inf/nan
    (from the LU solve), and no error is raised unless ``check_errors``."""
    _check_square("linalg.inv_ex", A)
    info = _lu_info(A._arr)
    if not info.any():
        return _INV_EX(inv(A), _wrap(info))
    if check_errors:
        flat = info.reshape(-1)
        i = int(np.flatnonzero(flat)[0])
        raise LinAlgError(f"linalg.inv_ex: {_batch_label(A._arr, i)}The diagonal "
                          f"element {flat[i]} is zero, the inversion could not be "
                          "completed because the input matrix is singular.")
    eye = _wrap(np.broadcast_to(np.eye(A._arr.shape[-1], dtype=A._arr.dtype),
                                A._arr.shape).copy())
    LU, piv, _ = lu_factor_ex(A)
    return _INV_EX(lu_solve(LU, piv, eye), _wrap(info))


def cholesky_ex(A, *, upper=False, check_errors=False):
    """``(L, info)``: info (int32 per matrix) is the order of the first leading
    minor that is not positive definite (0: all are).  Failed matrices give
    their lower triangle unfactored; no error unless ``check_errors``."""
    _check_square("linalg.cholesky_ex", A)
    flat = A._arr.reshape((-1,) + A._arr.shape[-2:])
    info = np.zeros(flat.shape[0], np.int32)
    for i, m in enumerate(flat):
        try:
            np.linalg.cholesky(m)
        except np.linalg.LinAlgError:
            info[i] = _not_pd_order(m)
    info = info.reshape(A._arr.shape[:-2])
    if not info.any():
        return _CHOL_EX(cholesky(A, upper=upper), _wrap(info))
    if check_errors:
        i = int(np.flatnonzero(info.reshape(-1))[0])
        raise LinAlgError(f"linalg.cholesky_ex: {_batch_label(A._arr, i)}The "
                          "factorization could not be completed because the input "
                          "is not positive-definite (the leading minor of order "
                          f"{info.reshape(-1)[i]} is not positive-definite).")
    good = _wrap((info == 0)[..., None, None])
    safe = where(good, A, _wrap(np.eye(A._arr.shape[-1], dtype=A._arr.dtype)))
    L = where(good, cholesky(safe), A.tril())
    return _CHOL_EX(L.transpose(-2, -1) if upper else L, _wrap(info))


def solve_ex(A, B, *, left=True, check_errors=False):
    """``(result, info)`` of ``solve``: info as ``inv_ex``'s; a singular system
    gives inf/nan (from the LU solve) instead of an error unless
    ``check_errors``."""
    _check_square("linalg.solve_ex", A)
    info = _lu_info(A._arr)
    if not info.any():
        return _SOLVE_EX(solve(A, B, left=left), _wrap(info))
    if check_errors:
        raise LinAlgError("torch.linalg.solve_ex: The solver failed because the "
                          "input matrix is singular.")
    vector = B._arr.ndim == 1 or (B._arr.ndim == A._arr.ndim - 1
                                  and B._arr.shape == A._arr.shape[:-1])
    Bm = B.unsqueeze(-1) if vector else B
    LU, piv, _ = lu_factor_ex(A)
    if not left:
        X = lu_solve(LU, piv, Bm, left=False)
    else:
        X = lu_solve(LU, piv, Bm)
    return _SOLVE_EX(X.squeeze(-1) if vector else X, _wrap(info))


def tensorinv(A, ind=2):
    """The inverse of A for ``tensordot(A, X, ind)``: A reshaped to a square
    matrix prod(shape[:ind]) x prod(shape[ind:]), inverted and reshaped to
    ``shape[ind:] + shape[:ind]``."""
    _check_tensors("linalg.tensorinv", input=A)
    if not isinstance(ind, int) or ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got "
                           f"{ind}")
    shape = tuple(A._arr.shape)
    rows, cols = math.prod(shape[:ind]), math.prod(shape[ind:])
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement "
                           f"prod(self.shape[ind:]) == prod(self.shape[:ind]), but "
                           f"got {cols} != {rows}")
    return inv(A.reshape(rows, cols)).reshape(shape[ind:] + shape[:ind])


def tensorsolve(A, B, dims=None):
    """X with ``tensordot(A, X, X.ndim) = B``: the dims of A listed in ``dims``
    move to the end first; X has shape A.shape[B.ndim:]."""
    _check_tensors("linalg.tensorsolve", input=A, other=B)
    if dims is not None:
        nd = A._arr.ndim
        moved = [d % nd for d in dims]
        rest = [d for d in range(nd) if d not in moved]
        A = A.permute(rest + moved)
    shape = tuple(A._arr.shape)
    k = B._arr.ndim
    rows, cols = math.prod(shape[:k]), math.prod(shape[k:])
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement "
                           f"prod(self.shape[other.ndim:]) == prod(self.shape[:other."
                           f"ndim]), but got {cols} != {rows}")
    X = solve(A.reshape(rows, cols), B.reshape(rows))
    return X.reshape(shape[k:])


def householder_product(A, tau):
    """The first n columns of H_1 H_2 ... H_k, H_i = I - tau_i v_i v_i^T with
    v_i = (0, ..., 0, 1, A[i+1:, i]) (the Q of a QR stored as reflectors);
    A (*, m, n), m >= n >= k = tau.shape[-1]."""
    fname = "torch.linalg.householder_product"
    _check_tensors("linalg.householder_product", input=A, tau=tau)
    if A._arr.ndim < 2:
        raise RuntimeError(f"{fname}: input must have at least 2 dimensions.")
    m, n = A._arr.shape[-2:]
    k = tau._arr.shape[-1] if tau._arr.ndim else 1
    if m < n:
        raise RuntimeError(f"{fname}: input.shape[-2] must be greater than or equal "
                           "to input.shape[-1]")
    if n < k:
        raise RuntimeError(f"{fname}: input.shape[-1] must be greater than or equal "
                           "to tau.shape[-1]")
    if tau._arr.ndim != A._arr.ndim - 1:
        raise RuntimeError(f"{fname}: Expected tau to have one dimension less than "
                           f"input, but got tau.ndim equal to {tau._arr.ndim} and "
                           f"input.ndim is equal to {A._arr.ndim}")
    dtype = A._arr.dtype
    batch = np.broadcast_shapes(A._arr.shape[:-2], tau._arr.shape[:-1])
    Q = _wrap(np.broadcast_to(np.eye(m, n, dtype=dtype), batch + (m, n)).copy())
    below = A.tril(-1)
    for i in range(k - 1, -1, -1):
        unit = np.zeros((m, 1), dtype)
        unit[i] = 1
        v = below[..., :, i:i + 1] + _wrap(unit)            # (*, m, 1)
        t = tau[..., i:i + 1].unsqueeze(-1)                  # (*, 1, 1)
        Q = Q - matmul(v * t, matmul(v.transpose(-2, -1), Q))
    return Q
