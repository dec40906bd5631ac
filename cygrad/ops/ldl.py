"""``linalg.ldl_factor``/``ldl_factor_ex``/``ldl_solve``: the LDL^T
factorization of symmetric matrices with Bunch-Kaufman pivoting, on NumPy.

The factorization is LAPACK's unblocked lower-triangle algorithm (sytf2,
which LAPACK's sytrf also runs on matrices smaller than its block): at
column k a 1x1 pivot is taken when |a_kk| >= alpha * (the column's largest
off-diagonal magnitude), alpha = (1 + sqrt(17)) / 8, else the row and column
of that largest entry is swapped in as a 1x1 pivot or paired with k as a
2x2 pivot, by the same tests as LAPACK's.  ``LD`` holds L below the
diagonal (unit diagonal implied) and D's 1x1 and 2x2 blocks on and under
the diagonal; its upper triangle is zero.  ``pivots`` are LAPACK's, 1-based
int32: p > 0 a 1x1 block with rows/columns k and p swapped, a pair of equal
negative entries a 2x2 block with rows/columns k+1 and -p swapped.

Each step is a Python step per column (and per batch element, since
pivots differ between matrices).  torch defines no derivative for these
functions; neither does cygrad (backward raises torch's error).
"""

import collections
import math

import numpy as np

from cygrad import dtypes as _dt
from cygrad._kernels.engine import _wrap
from cygrad.autograd.function import Function
from cygrad.ops.decomp import LinAlgError, _batch_label, _check_square_shape
from cygrad.ops.linalg import _check_tensors

__all__ = ["ldl_factor", "ldl_factor_ex", "ldl_solve"]

_ALPHA = (1 + math.sqrt(17)) / 8

_LDL = collections.namedtuple("torch_return_types_linalg_ldl_factor",
                              ["LD", "pivots"])
_LDL_EX = collections.namedtuple("torch_return_types_linalg_ldl_factor_ex",
                                 ["LD", "pivots", "info"])


def _np_ldl(a):
    """(LD, 1-based pivots, info) of one symmetric matrix (lower triangle
    read)."""
    a = np.tril(np.array(a, dtype=a.dtype, copy=True))
    a = a + np.tril(a, -1).T            # the full symmetric matrix
    n = a.shape[0]
    piv = np.zeros(n, np.int32)
    info = 0
    k = 0
    with np.errstate(all="ignore"):
        while k < n:
            step = 1
            absakk = abs(a[k, k])
            if k + 1 < n:
                imax = k + 1 + int(np.argmax(np.abs(a[k + 1:, k])))
                colmax = abs(a[imax, k])
            else:
                imax, colmax = k, 0.0
            if max(absakk, colmax) == 0 or np.isnan(absakk):
                info = info or k + 1
                kp = k
            else:
                if absakk >= _ALPHA * colmax:
                    kp = k
                else:
                    # the largest off-diagonal magnitude in row/column imax
                    rowmax = np.max(np.abs(a[imax, k:imax])) if imax > k else 0.0
                    if imax + 1 < n:
                        rowmax = max(rowmax, np.max(np.abs(a[imax + 1:, imax])))
                    if absakk >= _ALPHA * colmax * (colmax / rowmax):
                        kp = k
                    elif abs(a[imax, imax]) >= _ALPHA * rowmax:
                        kp = imax
                    else:
                        kp, step = imax, 2
                kk = k + step - 1
                if kp != kk:
                    # swap rows and columns kk and kp of the trailing block
                    # only: the columns of L already made keep their rows
                    # (L is a product of permutations and unit triangles)
                    a[[kk, kp], k:] = a[[kp, kk], k:]
                    a[k:, [kk, kp]] = a[k:, [kp, kk]]
                if step == 1:
                    d = a[k, k]
                    x = a[k + 1:, k].copy()
                    a[k + 1:, k + 1:] -= np.outer(x, x) / d
                    a[k + 1:, k] = x / d
                    a[k, k + 1:] = a[k + 1:, k]
                else:
                    d21 = a[k + 1, k]
                    d11 = a[k + 1, k + 1] / d21
                    d22 = a[k, k] / d21
                    t = 1 / (d11 * d22 - 1)
                    d21 = t / d21
                    c0, c1 = a[k + 2:, k].copy(), a[k + 2:, k + 1].copy()
                    wk = d21 * (d11 * c0 - c1)
                    wkp1 = d21 * (d22 * c1 - c0)
                    a[k + 2:, k + 2:] -= np.outer(c0, wk) + np.outer(c1, wkp1)
                    a[k + 2:, k], a[k + 2:, k + 1] = wk, wkp1
                    a[k, k + 2:], a[k + 1, k + 2:] = wk, wkp1
            if step == 1:
                piv[k] = kp + 1
            else:
                piv[k] = piv[k + 1] = -(kp + 1)
            k += step
    return np.tril(a), piv, info


def _np_ldl_solve(ld, piv, b):
    """X with A X = b from one matrix's (LD, pivots) (LAPACK's sytrs)."""
    x = np.array(b, dtype=np.result_type(ld, b), copy=True)
    n = ld.shape[0]
    with np.errstate(all="ignore"):
        k = 0
        while k < n:                    # L D y = b
            if piv[k] > 0:
                p = piv[k] - 1
                if p != k:
                    x[[k, p]] = x[[p, k]]
                x[k + 1:] -= np.outer(ld[k + 1:, k], x[k])
                x[k] /= ld[k, k]
                k += 1
            else:
                p = -piv[k] - 1
                if p != k + 1:
                    x[[k + 1, p]] = x[[p, k + 1]]
                x[k + 2:] -= (np.outer(ld[k + 2:, k], x[k])
                              + np.outer(ld[k + 2:, k + 1], x[k + 1]))
                e = ld[k + 1, k]
                akm1, ak = ld[k, k] / e, ld[k + 1, k + 1] / e
                denom = akm1 * ak - 1
                bkm1, bk = x[k] / e, x[k + 1] / e
                x[k], x[k + 1] = (ak * bkm1 - bk) / denom, (akm1 * bk - bkm1) / denom
                k += 2
        k = n - 1
        while k >= 0:                   # L^T x = y
            if piv[k] > 0:
                x[k] -= ld[k + 1:, k] @ x[k + 1:]
                p = piv[k] - 1
                if p != k:
                    x[[k, p]] = x[[p, k]]
                k -= 1
            else:
                x[k] -= ld[k + 1:, k] @ x[k + 1:]
                x[k - 1] -= ld[k + 1:, k - 1] @ x[k + 1:]
                p = -piv[k] - 1
                if p != k:
                    x[[k, p]] = x[[p, k]]
                k -= 2
    return x


class _NoDerivative(Function):
    """Values computed without a graph; backward raises torch's error."""

    @staticmethod
    def forward(ctx, name, fn, *tensors):
        ctx.name = name
        outs = fn(*tensors)
        return outs

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(f"derivative for aten::{ctx.name} is not implemented")


def _check_ldl_input(fname, A):
    _check_tensors(fname, A=A)
    _check_square_shape(f"torch.{fname}", A)
    a = A._arr
    if a.dtype.kind != "f" or a.dtype == np.float16:
        raise RuntimeError(f"torch.{fname}: Expected a floating point or complex "
                           f"tensor as input. Got {_dt.name(a.dtype)}")


def _factor_all(A):
    a = A._arr
    flat = a.reshape((-1,) + a.shape[-2:])
    res = [_np_ldl(m) for m in flat]
    batch = a.shape[:-2]
    ld = np.stack([r[0] for r in res]).reshape(a.shape) if res else a.copy()
    piv = np.stack([r[1] for r in res]).reshape(batch + a.shape[-1:]) if res else \
        np.zeros(batch + a.shape[-1:], np.int32)
    info = np.array([r[2] for r in res], np.int32).reshape(batch)
    return _wrap(ld), _wrap(piv), _wrap(info)


def ldl_factor_ex(A, *, hermitian=False, check_errors=False):
    """``(LD, pivots, info)``: A = P L D L^T P^T (module docstring); info k > 0
    when column k has no nonzero pivot (D singular).  ``hermitian`` is the
    same for real matrices."""
    _check_ldl_input("linalg.ldl_factor_ex", A)
    LD, piv, info = _NoDerivative.apply("linalg_ldl_factor_ex", _factor_all, A)
    if check_errors:
        _raise_if_singular("linalg.ldl_factor_ex", A, info)
    return _LDL_EX(LD, piv, info)


def ldl_factor(A, *, hermitian=False):
    """``(LD, pivots)`` of ``ldl_factor_ex``; raises when D is singular."""
    LD, piv, info = ldl_factor_ex(A, hermitian=hermitian)
    _raise_if_singular("linalg.ldl_factor", A, info)
    return _LDL(LD, piv)


def _raise_if_singular(fname, A, info):
    """torch's LinAlgError naming the first matrix whose D is singular."""
    if info._arr.any():
        i = int(np.flatnonzero(info._arr.reshape(-1))[0])
        raise LinAlgError(f"torch.{fname}: {_batch_label(A._arr, i)}"
                          f"The factorization could not be completed because the "
                          f"block diagonal matrix D is singular (its "
                          f"{int(info._arr.reshape(-1)[i])}-th diagonal block is "
                          "zero).")


def _solve_all(LD, pivots, B):
    ld, piv, b = LD._arr, pivots._arr, B._arr
    batch = np.broadcast_shapes(ld.shape[:-2], piv.shape[:-1], b.shape[:-2])
    ld = np.broadcast_to(ld, batch + ld.shape[-2:]).reshape((-1,) + ld.shape[-2:])
    piv = np.broadcast_to(piv, batch + piv.shape[-1:]).reshape((-1, piv.shape[-1]))
    bb = np.broadcast_to(b, batch + b.shape[-2:]).reshape((-1,) + b.shape[-2:])
    out = np.stack([_np_ldl_solve(m, p, r) for m, p, r in zip(ld, piv, bb)]) \
        if bb.shape[0] else np.zeros(bb.shape, ld.dtype)
    return _wrap(out.reshape(batch + b.shape[-2:]))


def ldl_solve(LD, pivots, B, *, hermitian=False):
    """X with A X = B from A's ``ldl_factor`` (B (*, n, k)); batches
    broadcast."""
    _check_tensors("linalg.ldl_solve", LD=LD, pivots=pivots, B=B)
    ld, b = LD._arr, B._arr
    if ld.ndim < 2 or b.ndim < 2:
        raise RuntimeError("torch.linalg.ldl_solve: LD and B must have at least 2 "
                           "dimensions")
    if pivots._arr.dtype != np.int32:
        raise RuntimeError("torch.linalg.ldl_solve: Expected pivots to be integers. "
                           f"Got {_dt.name(pivots._arr.dtype)}")
    if ld.dtype != b.dtype:
        raise RuntimeError(f"torch.linalg.ldl_solve: Expected LD and B to have the "
                           f"same dtype, but got LD with dtype {_dt.name(ld.dtype)} "
                           f"and B with dtype {_dt.name(b.dtype)} instead")
    if b.shape[-2] != ld.shape[-1]:
        raise RuntimeError(f"Incompatible matrix sizes for torch.linalg.ldl_solve: "
                           f"each A matrix is {ld.shape[-2]} by {ld.shape[-1]} but "
                           f"each b matrix is {b.shape[-2]} by {b.shape[-1]}")
    return _NoDerivative.apply("linalg_ldl_solve", _solve_all, LD, pivots, B)
