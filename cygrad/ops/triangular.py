"""Triangular solves and the LU factorization, written on NumPy (no SciPy,
no LAPACK beyond what NumPy links): ``linalg.solve_triangular``,
``triangular_solve``, ``linalg.lu_factor``/``lu_factor_ex``/``lu``/
``lu_solve`` and ``lu_unpack``.

- Triangular solves substitute in blocks of ``_BLOCK`` rows: each block's
  rows one at a time (a Python step per row, vectorized over the batch and
  the right-hand sides), the rest of the right-hand side updated by one
  matmul per block, as a BLAS trsm is organized.  Lower systems are solved
  as upper ones with the order of rows and columns reversed.  A zero on the
  diagonal divides by zero (inf/nan), as trsm does: no error.
- LU is partial pivoting by columns (``P^T A = L U``, the row of largest
  magnitude pivots, the first one on ties, as LAPACK's getrf): ``min(m, n)``
  Python steps, each a rank-1 update of the trailing block over the whole
  batch.  A zero pivot column is skipped and recorded in ``info``.
  Pivots are LAPACK's: 1-based int32 row swaps in order.

Gradients: X = A^-1 B (A triangular): gB = A^-T g, gA = -gB X^T restricted
to A's triangle (strict with ``unitriangular``).  For A = P L U with
k = min(m, n) and the square part written L1, U1:
gA = P L1^-T [tril(L^T gL - gU2 U2^T, -1) + triu(gU U^T - L2^T gL2)] U1^-T
(wide matrices have a U2 block, tall ones an L2 block, whose own gradients
gA2 = P L^-T gU2 or P gL2 U^-T are added).  ``lu_solve`` and ``lu_unpack``
are composites, differentiable through them.
"""

import collections
import warnings

import numpy as np

from cygrad import dtypes as _dt
from cygrad._kernels.engine import _wrap
from cygrad.autograd.function import Function
from cygrad.ops.decomp import _check_square_shape
from cygrad.ops.linalg import _check_tensors, matmul
from cygrad.ops.registry import op
from cygrad.ops.shape import cat

__all__ = ["lu", "lu_factor", "lu_factor_ex", "lu_solve", "lu_unpack",
           "solve_triangular", "torch_lu", "torch_lu_solve", "triangular_solve"]

_BLOCK = 32

_LU_FACTOR = collections.namedtuple("torch_return_types_linalg_lu_factor",
                                    ["LU", "pivots"])
_LU_FACTOR_EX = collections.namedtuple("torch_return_types_linalg_lu_factor_ex",
                                       ["LU", "pivots", "info"])
_PLU = collections.namedtuple("torch_return_types_linalg_lu", ["P", "L", "U"])
_LU_UNPACK = collections.namedtuple("torch_return_types_lu_unpack", ["P", "L", "U"])
_TRI_SOLVE = collections.namedtuple("torch_return_types_triangular_solve",
                                    ["solution", "cloned_coefficient"])


def _mT(t):
    return t.transpose(-2, -1)


# --- substitution on arrays -----------------------------------------------------------

def _np_upper_solve(u, b, unit):
    """X with triu(u) X = b; u (..., n, n) and b (..., n, k) broadcast."""
    n = u.shape[-1]
    batch = np.broadcast_shapes(u.shape[:-2], b.shape[:-2])
    x = np.array(np.broadcast_to(b, batch + b.shape[-2:]), dtype=np.result_type(u, b))
    with np.errstate(all="ignore"):
        for stop in range(n, 0, -_BLOCK):
            start = max(0, stop - _BLOCK)
            if stop < n:           # the rows below this block are solved
                x[..., start:stop, :] -= np.matmul(u[..., start:stop, stop:],
                                                   x[..., stop:, :])
            for i in range(stop - 1, start - 1, -1):
                if i + 1 < stop:
                    x[..., i, :] -= np.matmul(u[..., i:i + 1, i + 1:stop],
                                              x[..., i + 1:stop, :])[..., 0, :]
                if not unit:
                    x[..., i, :] /= u[..., i, i][..., None]
    return x


def _np_triangular_solve(a, b, upper, unit):
    if upper:
        return _np_upper_solve(a, b, unit)
    # reversing rows and columns turns a lower triangle into an upper one
    x = _np_upper_solve(a[..., ::-1, ::-1], b[..., ::-1, :], unit)
    return np.ascontiguousarray(x[..., ::-1, :])


class SolveTriangular(Function):
    """X = A^-1 B (A's upper or lower triangle);  gB = A^-T g,
    gA = -gB X^T on A's triangle."""

    _node_name = "LinalgSolveTriangularBackward0"

    @staticmethod
    def forward(ctx, A, B, upper, unit):
        x = _np_triangular_solve(A._arr, B._arr, upper, unit)
        X = _wrap(np.ascontiguousarray(x))
        ctx.upper, ctx.unit = upper, unit
        ctx.save_for_backward(A, X)
        return X

    @staticmethod
    def backward(ctx, g):
        A, X = ctx.saved_tensors
        gB = SolveTriangular.apply(_mT(A), g, not ctx.upper, ctx.unit)
        gA = None
        if ctx.needs_input_grad[0]:
            gA = -matmul(gB, _mT(X))
            shift = 1 if ctx.unit else 0
            gA = gA.triu(shift) if ctx.upper else gA.tril(-shift)
        return gA, gB, None, None


def _check_float_pair(fname, A, B):
    for t in (A, B):
        if t._arr.dtype.kind != "f" or t._arr.dtype == np.float16:
            raise RuntimeError(f"{fname}: Expected a floating point tensor as input. "
                               f"Got {_dt.name(t._arr.dtype)}")


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """X with A X = B (``left=False``: X A = B) for triangular A.

    Parameters
    ----------
    A : Tensor (*, n, n)
        Only its upper (``upper=True``) or lower triangle is read; with
        ``unitriangular`` its diagonal is taken as ones.
    B : Tensor (*, n, k) (``left=False``: (*, k, n)); batches broadcast.

    Returns
    -------
    Tensor of B's shape (with the broadcast batch).  A zero on A's diagonal
    gives inf/nan, not an error (as torch).
    """
    fname = "linalg.solve_triangular"
    _check_tensors(fname, A=A, B=B)
    _check_square_shape(fname, A)
    if B._arr.ndim < 2:
        raise RuntimeError(f"{fname}: The input tensor B must have at least 2 "
                           "dimensions.")
    _check_float_pair(fname, A, B)
    if B._arr.dtype != A._arr.dtype:      # torch solves in A's dtype
        B = B.to(A.dtype)
    n = A._arr.shape[-1]
    rows = B._arr.shape[-2] if left else B._arr.shape[-1]
    if rows != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{fname}: Incompatible shapes of A and B for the equation "
                           f"{eq} ({n}x{n} and {B._arr.shape[-2]}x"
                           f"{B._arr.shape[-1]})")
    if left:
        X = SolveTriangular.apply(A, B, bool(upper), bool(unitriangular))
    else:
        X = _mT(SolveTriangular.apply(_mT(A), _mT(B), not upper, bool(unitriangular)))
    if out is not None:
        out.copy_(X)
        return out
    return X


@op("triangular_solve", methods=("triangular_solve",), kind="linalg")
def triangular_solve(input, A, upper=True, transpose=False, unitriangular=False):
    """``(solution, cloned_coefficient)``: X with op(A) X = input, op(A) = A or
    A^T, A triangular (deprecated in torch for ``linalg.solve_triangular``,
    whose arguments come the other way round)."""
    warnings.warn(
        "torch.triangular_solve is deprecated in favor of "
        "torch.linalg.solve_triangularand will be removed in a future PyTorch "
        "release.\ntorch.linalg.solve_triangular has its arguments reversed and "
        "does not return a copy of one of the inputs.\nX = torch.triangular_solve"
        "(B, A).solution\nshould be replaced with\nX = torch.linalg."
        "solve_triangular(A, B).", UserWarning, stacklevel=2)
    _check_tensors("triangular_solve", self=input, A=A)
    for t, nm in ((input, "b"), (A, "A")):
        if t._arr.ndim < 2:
            raise RuntimeError(f"torch.triangular_solve: Expected {nm} to have at "
                               f"least 2 dimensions, but it has {t._arr.ndim} "
                               "dimensions instead")
    M = _mT(A) if transpose else A
    X = solve_triangular(M, input, upper=bool(upper) != bool(transpose),
                         unitriangular=unitriangular)
    batch = X._arr.shape[:-2]
    return _TRI_SOLVE(X, A.expand(batch + A._arr.shape[-2:]).clone())


# --- LU -------------------------------------------------------------------------------

def _np_lu(a):
    """(packed LU, 0-based pivot rows (int), info) of each matrix of ``a``."""
    lu = np.array(a, dtype=a.dtype, order="C", copy=True)
    m, n = lu.shape[-2:]
    k = min(m, n)
    batch = lu.shape[:-2]
    flat = lu.reshape((-1, m, n))
    piv = np.zeros((flat.shape[0], k), dtype=np.int64)
    info = np.zeros(flat.shape[0], dtype=np.int32)
    rows = np.arange(flat.shape[0])
    with np.errstate(all="ignore"):
        for j in range(k):
            p = j + np.argmax(np.abs(flat[:, j:, j]), axis=1)
            piv[:, j] = p
            swap = p != j
            if swap.any():
                r = rows[swap]
                top = flat[r, j, :].copy()
                flat[r, j, :] = flat[r, p[swap], :]
                flat[r, p[swap], :] = top
            pivot = flat[:, j, j]
            zero = pivot == 0
            info[(info == 0) & zero] = j + 1
            scale = np.where(zero, 1, pivot)
            flat[:, j + 1:, j] /= scale[:, None]
            flat[:, j + 1:, j + 1:] -= (flat[:, j + 1:, j, None]
                                        * flat[:, j, None, j + 1:])
    return (flat.reshape(batch + (m, n)), piv.reshape(batch + (k,)),
            info.reshape(batch))


def _np_perm(piv, m):
    """The row order ``perm`` with (P^T A) = A[perm] from 0-based swaps."""
    batch = piv.shape[:-1]
    flat = piv.reshape((-1, piv.shape[-1]))
    perm = np.tile(np.arange(m), (flat.shape[0], 1))
    rows = np.arange(flat.shape[0])
    for j in range(flat.shape[1]):
        p = flat[:, j]
        a, b = perm[rows, j].copy(), perm[rows, p].copy()
        perm[rows, j], perm[rows, p] = b, a
    return perm.reshape(batch + (m,))


def _np_perm_matrix(perm, dtype):
    """P with A = P (A[perm]): P[perm[j], j] = 1."""
    m = perm.shape[-1]
    eye = np.eye(m, dtype=dtype)
    return np.ascontiguousarray(np.swapaxes(eye[perm], -1, -2))


def _unpack(LU, k):
    """(L, U) tensors from a packed LU tensor (differentiable)."""
    m = LU._arr.shape[-2]
    eye = _wrap(np.eye(m, k, dtype=LU._arr.dtype))
    L = LU[..., :, :k].tril(-1) + eye
    U = LU[..., :k, :].triu()
    return L, U


class LUFactor(Function):
    """(LU, pivots) = getrf(A);  the gradient of the module docstring."""

    _node_name = "LinalgLuFactorExBackward0"

    @staticmethod
    def forward(ctx, A):
        lu, piv, _ = _np_lu(A._arr)
        LU = _wrap(lu)
        ctx.save_for_backward(LU)
        ctx.perm = _np_perm_matrix(_np_perm(piv, A._arr.shape[-2]), A._arr.dtype)
        pivots = _wrap((piv + 1).astype(np.int32))
        ctx.mark_non_differentiable(pivots)
        return LU, pivots

    @staticmethod
    def backward(ctx, gLU, gpiv):
        (LU,) = ctx.saved_tensors
        P = _wrap(ctx.perm)
        m, n = LU._arr.shape[-2:]
        k = min(m, n)
        L, U = _unpack(LU, k)
        gL = gLU[..., :, :k].tril(-1)
        gU = gLU[..., :k, :].triu()
        L1, U1 = L[..., :k, :], U[..., :, :k]
        inner_l = matmul(_mT(L1), gL[..., :k, :])
        inner_u = matmul(gU[..., :, :k], _mT(U1))
        if n > k:          # wide: U = [U1 U2]
            inner_l = inner_l - matmul(gU[..., :, k:], _mT(U[..., :, k:]))
        if m > k:          # tall: L = [L1; L2]
            inner_u = inner_u - matmul(_mT(L[..., k:, :]), gL[..., k:, :])
        M = inner_l.tril(-1) + inner_u.triu()
        # L1^-T M U1^-T
        G = solve_triangular(_mT(L1), M, upper=True, unitriangular=True)
        G = solve_triangular(_mT(U1), G, upper=False, left=False)
        if n > k:
            G2 = solve_triangular(_mT(L1), gU[..., :, k:], upper=True,
                                  unitriangular=True)
            G = cat([G, G2], -1)
        if m > k:
            G2 = solve_triangular(_mT(U1), gL[..., k:, :], upper=False, left=False)
            G = cat([G, G2], -2)
        return matmul(P, G)


def _check_lu_input(fname, A):
    _check_tensors(fname, A=A)
    a = A._arr
    if a.ndim < 2:
        raise RuntimeError(f"torch.lu_factor: Expected tensor with 2 or more "
                           f"dimensions. Got size: {list(a.shape)} instead")
    if a.dtype.kind != "f" or a.dtype == np.float16:
        raise RuntimeError(f"{fname}: Expected a floating point tensor as input. "
                           f"Got {_dt.name(a.dtype)}")


def _factor(fname, A, pivot):
    _check_lu_input(fname, A)
    if not pivot:
        raise RuntimeError(f"{fname}: LU without pivoting is not implemented on the "
                           "CPU")
    LU, pivots = LUFactor.apply(A)
    return LU, pivots, _lu_info(LU)


def _lu_info(LU):
    """The info of the factorization that produced ``LU`` (0: no zero pivot,
    else the 1-based index of the first zero on U's diagonal)."""
    d = np.diagonal(LU._arr, axis1=-2, axis2=-1)
    zero = d == 0
    first = np.where(zero.any(-1), zero.argmax(-1) + 1, 0)
    return first.astype(np.int32)


def _raise_singular(fname, info):
    bad = np.flatnonzero(info.reshape(-1))
    if bad.size:
        i = int(bad[0])
        label = "" if info.ndim == 0 else f"(Batch element {i}): "
        j = int(info.reshape(-1)[i])
        raise RuntimeError(f"torch.{fname}: {label}U[{j},{j}] is zero and using it on "
                           "lu_solve would result in a division by zero. If you still "
                           "want to perform the factorization, consider calling "
                           "linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")


def lu_factor_ex(A, *, pivot=True, check_errors=False):
    """``(LU, pivots, info)``: L (unit lower, below the diagonal) and U packed
    in one matrix, LAPACK's 1-based int32 row swaps and an int32 ``info``
    per matrix (k > 0: U[k-1, k-1] is zero).  Never raises on a singular
    matrix unless ``check_errors``."""
    LU, pivots, info = _factor("linalg.lu_factor_ex", A, pivot)
    if check_errors:
        _raise_singular("linalg.lu_factor_ex", info)
    return _LU_FACTOR_EX(LU, pivots, _wrap(info))


def lu_factor(A, *, pivot=True):
    """``(LU, pivots)`` of ``lu_factor_ex``; raises on a zero pivot (the
    factors would divide by zero in ``lu_solve``)."""
    LU, pivots, info = _factor("linalg.lu_factor", A, pivot)
    _raise_singular("linalg.lu_factor", info)
    return _LU_FACTOR(LU, pivots)


def lu(A, *, pivot=True):
    """``(P, L, U)`` with A = P L U: P a permutation matrix, L (m, k) unit
    lower triangular, U (k, n) upper triangular, k = min(m, n)."""
    LU, pivots, _ = _factor("linalg.lu", A, pivot)
    return _PLU(*lu_unpack(LU, pivots))


@op("lu_unpack", kind="linalg")
def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """``(P, L, U)`` from ``lu_factor``'s ``(LU, pivots)``; a part not unpacked
    is an empty tensor.  Differentiable in ``LU_data``."""
    _check_tensors("lu_unpack", LU_data=LU_data, LU_pivots=LU_pivots)
    if LU_pivots._arr.dtype != np.int32:
        raise RuntimeError("lu_unpack: LU_pivots is expected to be a contiguous "
                           "tensor of torch.int32 dtype.\nNote: this function is "
                           "intended to be used with the output produced by "
                           "torch.linalg.lu_factor")
    m, n = LU_data._arr.shape[-2:]
    k = min(m, n)
    dtype = LU_data._arr.dtype
    if unpack_data:
        L, U = _unpack(LU_data, k)
    else:
        L = U = _wrap(np.zeros((0,), dtype))
    if unpack_pivots:
        piv = LU_pivots._arr.astype(np.int64) - 1
        P = _wrap(_np_perm_matrix(_np_perm(piv, m), dtype))
    else:
        P = _wrap(np.zeros((0,), dtype))
    return _LU_UNPACK(P, L, U)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False):
    """X with A X = B from A's ``lu_factor`` (``adjoint``: A^T X = B;
    ``left=False``: X A = B).  Differentiable in LU and B."""
    fname = "linalg.lu_solve"
    _check_tensors(fname, LU=LU, pivots=pivots, B=B)
    _check_square_shape(fname, LU, "LU")
    if B._arr.ndim < 2:
        raise RuntimeError(f"{fname}: The input tensor B must have at least 2 "
                           "dimensions.")
    n = LU._arr.shape[-1]
    if (B._arr.shape[-2] if left else B._arr.shape[-1]) != n:
        raise RuntimeError(f"{fname}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and "
                           f"{B._arr.shape[-2]}x{B._arr.shape[-1]})")
    if not left:        # X A = B  <=>  A^T X^T = B^T
        return _mT(lu_solve(LU, pivots, _mT(B), adjoint=not adjoint))
    P = lu_unpack(LU, pivots, unpack_data=False).P
    if not adjoint:     # A = P L U: X = U^-1 L^-1 P^T B
        Y = solve_triangular(LU, matmul(_mT(P), B), upper=False, unitriangular=True)
        return solve_triangular(LU, Y, upper=True)
    # A^T = U^T L^T P^T: X = P L^-T U^-T B
    Y = solve_triangular(_mT(LU), B, upper=False)
    Y = solve_triangular(_mT(LU), Y, upper=True, unitriangular=True)
    return matmul(P, Y)


@op("lu", methods=("lu",), kind="linalg")
def torch_lu(A, pivot=True, get_infos=False):
    """``(LU, pivots)`` (and ``infos`` with ``get_infos``): torch.lu, deprecated
    in torch for ``linalg.lu_factor``/``lu_factor_ex``."""
    warnings.warn(
        "torch.lu is deprecated in favor of torch.linalg.lu_factor / "
        "torch.linalg.lu_factor_ex and will be removed in a future PyTorch "
        "release.\nLU, pivots = torch.lu(A, compute_pivots)\nshould be replaced "
        "with\nLU, pivots = torch.linalg.lu_factor(A, compute_pivots)\nand\nLU, "
        "pivots, info = torch.lu(A, compute_pivots, get_infos=True)\nshould be "
        "replaced with\nLU, pivots, info = torch.linalg.lu_factor_ex(A, "
        "compute_pivots)", UserWarning, stacklevel=2)
    res = lu_factor_ex(A, pivot=pivot)
    return tuple(res) if get_infos else (res.LU, res.pivots)


@op("lu_solve", methods=("lu_solve",), kind="linalg")
def torch_lu_solve(b, LU_data, LU_pivots):
    """X with A X = b from A's LU factorization (deprecated in torch for
    ``linalg.lu_solve``, whose arguments come the other way round)."""
    warnings.warn(
        "torch.lu_solve is deprecated in favor of torch.linalg.lu_solveand will "
        "be removed in a future PyTorch release.\nNote that torch.linalg.lu_solve "
        "has its arguments reversed.\nX = torch.lu_solve(B, LU, pivots)\nshould be "
        "replaced with\nX = torch.linalg.lu_solve(LU, pivots, B)", UserWarning,
        stacklevel=2)
    return lu_solve(LU_data, LU_pivots, b)
