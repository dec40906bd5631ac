"""Matrix decompositions and what is built on them (LAPACK through NumPy):
``inv``, ``det``, ``slogdet``, ``cholesky``, ``solve``, ``svd``, ``qr``,
``eigh``, ``matrix_norm``, ``norm``, ``matrix_power``, ``pinv``.

Every function takes batches (``(..., m, n)``).  The backwards are the
standard closed forms, written once against ``xp`` (so they run on arrays,
and over Tensors under ``create_graph``):

- inv: gA = -Y^T g Y^T (Y = A^-1);  det: gA = g det(A) A^-T;
  slogdet: gA = g_logabsdet A^-T;  solve: gB = A^-T g, gA = -gB X^T;
- cholesky (A = L L^T): gA = sym(L^-T Phi(L^T gL) L^-1), Phi = lower
  triangle with the diagonal halved;
- eigh (A = V diag(w) V^T): gA = sym(V (diag(gw) + (V^T gV) / E) V^T),
  E_ij = w_j - w_i off the diagonal;
- svd (A = U diag(S) Vh, k = min(m, n)): the gauge-invariant form with
  F_ij = 1 / (s_j^2 - s_i^2), plus the terms for the complement of U (m > k)
  or V (n > k); for full_matrices the first k singular vectors carry it;
- qr (reduced, m >= n): gA = (gQ + Q copyltu(M)) R^-T, M = R gR^T - gQ^T Q.

Singular or non-positive-definite inputs raise ``LinAlgError`` (a
RuntimeError, as torch's) with torch's phrases.
"""

import math

import numpy as np

from cygrad import dtypes as _dt
from cygrad._kernels.engine import _wrap
from cygrad.autograd.function import Function
from cygrad.ops.linalg import _check_tensors, matmul, vector_norm
from cygrad.ops.registry import OPS, _ns, _NumpyNS, op, return_type, xp_helper

__all__ = [
    "LinAlgError", "cholesky", "det", "eigh", "eigvalsh", "inv", "matrix_norm",
    "matrix_power", "norm", "pinv", "qr", "slogdet", "solve", "svd", "svdvals",
]


class LinAlgError(RuntimeError):
    """A linear-algebra routine failed on its input (singular, not positive
    definite): torch's ``torch.linalg.LinAlgError``, a RuntimeError."""


_SVD = return_type("linalg_svd", ["U", "S", "Vh"])
_QR = return_type("linalg_qr", ["Q", "R"])
_EIGH = return_type("linalg_eigh", ["eigenvalues", "eigenvectors"])
_SLOGDET = return_type("linalg_slogdet", ["sign", "logabsdet"])


def _T(xp, x):
    return xp.swapaxes(x, -1, -2)


def _check_float(fname, A):
    if A._arr.dtype.kind != "f" or A._arr.dtype == np.float16:
        raise RuntimeError(f"{fname}: Expected a floating point tensor as input "
                           f"(float32 or float64). Got {_dt.name(A._arr.dtype)}")


def _check_square_shape(fname, A, name="A"):
    """``A`` (argument ``name``) is a batch of square matrices."""
    a = A._arr
    if a.ndim < 2:
        raise RuntimeError(f"{fname}: The input tensor {name} must have at least 2 "
                           f"dimensions.")
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"{fname}: {name} must be batches of square matrices, but "
                           f"they are {a.shape[-2]} by {a.shape[-1]} matrices")


def _check_square(fname, A):
    _check_tensors(fname, A=A)
    _check_square_shape(fname, A)
    _check_float(fname, A)


def _batch_label(a, flat_index):
    if a.ndim == 2:
        return ""
    return f"(Batch element {flat_index}): "


def _singular_index(a):
    """The first batch element of ``a`` whose matrix is singular, or None."""
    flat = a.reshape((-1,) + a.shape[-2:])
    for i, m in enumerate(flat):
        try:
            np.linalg.inv(m)
        except np.linalg.LinAlgError:
            return i
    return None


def _np_inv(a, fname="linalg.inv"):
    try:
        with np.errstate(all="ignore"):
            return np.linalg.inv(a)
    except np.linalg.LinAlgError:
        i = _singular_index(a)
        raise LinAlgError(f"{fname}: {_batch_label(a, i)}The inversion could not be "
                          "completed because the input matrix is singular.") from None


# --- inv, det, slogdet -----------------------------------------------------------------

class Inverse(Function):
    """Y = A^-1;  gA = -Y^T g Y^T."""

    _node_name = "LinalgInvExBackward0"

    @staticmethod
    def forward(ctx, A):
        y = _wrap(np.asarray(_np_inv(A._arr), order="C"))
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        xp = _ns()
        (y,) = ctx.saved_tensors
        yt = _T(xp, xp.val(y))
        return xp.out(-xp.matmul(xp.matmul(yt, xp.val(g)), yt))


@op("inverse", methods=("inverse",), kind="linalg")
def inv(A):
    """The inverse of each square matrix of ``A``; LinAlgError if singular."""
    _check_square("linalg.inv", A)
    return Inverse.apply(A)


xp_helper("inv", _np_inv, lambda t: inv(t))


class Det(Function):
    """d = det(A);  gA = g d A^-T."""

    _node_name = "LinalgDetBackward0"

    @staticmethod
    def forward(ctx, A):
        d = _wrap(np.asarray(np.linalg.det(A._arr), order="C"))
        ctx.save_for_backward(A, d)
        return d

    @staticmethod
    def backward(ctx, g):
        xp = _ns()
        A, d = ctx.saved_tensors
        gv = xp.expand_dims(xp.expand_dims(xp.val(g), -1), -1)
        if xp is _NumpyNS and _near_singular(A._arr):
            return xp.out(gv * _adjugate_t(A._arr))
        dv = xp.expand_dims(xp.expand_dims(xp.val(d), -1), -1)
        return xp.out(gv * dv * _T(xp, xp.inv(xp.val(A))))


def _near_singular(a):
    """Whether some matrix of ``a`` is singular to working precision (where
    A^-T det A loses every digit)."""
    if a.size == 0:
        return False
    s = np.linalg.svd(a, compute_uv=False)
    return bool(np.any(s[..., -1] <= s[..., 0] * a.shape[-1] * np.finfo(a.dtype).eps))


def _adjugate_t(a):
    """adj(A)^T, the gradient of det at any rank (A^-T det A where A is
    invertible): from A = U diag(s) Vh, adj(A)^T = det(U) det(Vh) U diag(p) Vh
    with p_i the product of the other singular values.  (Kernel path only:
    under create_graph a singular input's det has no recorded gradient.)"""
    u, s, vh = np.linalg.svd(a)
    prods = np.empty_like(s)
    for i in range(s.shape[-1]):
        prods[..., i] = np.prod(np.delete(s, i, axis=-1), axis=-1)
    sign = np.linalg.det(u) * np.linalg.det(vh)
    return np.einsum("...ij,...j,...jk->...ik", u, prods, vh) * sign[..., None, None]


@op("det", methods=("det",), kind="linalg")
def det(A):
    """Determinant of each square matrix of ``A``."""
    _check_square("linalg.det", A)
    return Det.apply(A)


class SlogDet(Function):
    """(sign, log|det A|);  g_A = g_logabsdet A^-T (sign has no gradient)."""

    _node_name = "LinalgSlogdetBackward0"

    @staticmethod
    def forward(ctx, A):
        sign, logabs = np.linalg.slogdet(A._arr)
        ctx.save_for_backward(A)
        s = _wrap(np.asarray(sign, order="C"))
        ctx.mark_non_differentiable(s)
        return s, _wrap(np.asarray(logabs, order="C"))

    @staticmethod
    def backward(ctx, g_sign, g):
        xp = _ns()
        (A,) = ctx.saved_tensors
        scale = xp.expand_dims(xp.expand_dims(xp.val(g), -1), -1)
        return xp.out(scale * _T(xp, xp.inv(xp.val(A))))


@op("slogdet", methods=("slogdet",), kind="linalg")
def slogdet(A):
    """``(sign, logabsdet)`` of each square matrix: det = sign * exp(logabsdet)."""
    _check_square("linalg.slogdet", A)
    return _SLOGDET(*SlogDet.apply(A))


# --- cholesky, solve -------------------------------------------------------------------

def _not_pd_order(m):
    for k in range(1, m.shape[-1] + 1):
        try:
            np.linalg.cholesky(m[:k, :k])
        except np.linalg.LinAlgError:
            return k
    return m.shape[-1]


class Cholesky(Function):
    """L = cholesky(A) (lower);  gA = sym(L^-T Phi(L^T gL) L^-1)."""

    _node_name = "LinalgCholeskyExBackward0"

    @staticmethod
    def forward(ctx, A):
        a = A._arr
        try:
            L = np.linalg.cholesky(a)
        except np.linalg.LinAlgError:
            flat = a.reshape((-1,) + a.shape[-2:])
            for i, m in enumerate(flat):
                try:
                    np.linalg.cholesky(m)
                except np.linalg.LinAlgError:
                    raise LinAlgError(
                        f"linalg.cholesky: {_batch_label(a, i)}The factorization "
                        "could not be completed because the input is not "
                        f"positive-definite (the leading minor of order "
                        f"{_not_pd_order(m)} is not positive-definite).") from None
            raise
        out = _wrap(np.asarray(L, order="C"))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        xp = _ns()
        (L,) = ctx.saved_tensors
        Lv = xp.val(L)
        n = L._arr.shape[-1]
        phi = np.tril(np.ones((n, n)), -1) + 0.5 * np.eye(n)
        P = xp.matmul(_T(xp, Lv), xp.val(g)) * xp.const(phi.astype(L._arr.dtype))
        Li = xp.inv(Lv)
        gA = xp.matmul(xp.matmul(_T(xp, Li), P), Li)
        return xp.out((gA + _T(xp, gA)) * 0.5)


@op("cholesky", methods=("cholesky",), kind="linalg")
def cholesky(A, upper=False):
    """The Cholesky factor of each symmetric positive-definite matrix: lower L
    with A = L L^T (``upper=True``: L^T).  Only the lower triangle is read."""
    _check_square("linalg.cholesky", A)
    L = Cholesky.apply(A)
    return L.transpose(-1, -2) if upper else L


def _np_solve(a, b):
    try:
        return np.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        raise LinAlgError("torch.linalg.solve: The solver failed because the input "
                          "matrix is singular.") from None


class Solve(Function):
    """X = A^-1 B (B of shape (..., n, k));  gB = A^-T g,  gA = -gB X^T."""

    _node_name = "LinalgSolveExBackward0"

    @staticmethod
    def forward(ctx, A, B):
        a, b = A._arr, B._arr
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        x = _np_solve(np.broadcast_to(a, batch + a.shape[-2:]),
                      np.broadcast_to(b, batch + b.shape[-2:]))
        X = _wrap(np.asarray(x, order="C"))
        ctx.save_for_backward(A, X)
        return X

    @staticmethod
    def backward(ctx, g):
        xp = _ns()
        A, X = ctx.saved_tensors
        gB = xp.solve(_T(xp, xp.val(A)), xp.val(g))
        gA = -xp.matmul(gB, _T(xp, xp.val(X))) if ctx.needs_input_grad[0] else None
        return xp.out(gA), xp.out(gB)


def _solve_matrix(A, B):
    """Solve with B already (..., n, k)."""
    return Solve.apply(A, B)


@op("linalg_solve", kind="linalg")
def solve(A, B, *, left=True):
    """X with A X = B (``left=False``: X A = B); B may be a vector (shape
    ``A.shape[:-1]`` or ``(n,)``); batches broadcast."""
    _check_square("linalg.solve", A)
    _check_tensors("linalg.solve", B=B)
    if A._arr.dtype != B._arr.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, "
                           f"but found A of type {_dt.name(A._arr.dtype)} and B of "
                           f"type {_dt.name(B._arr.dtype)} instead")
    if not left:
        return solve(A.transpose(-1, -2), B.transpose(-1, -2)).transpose(-1, -2)
    a, b = A._arr, B._arr
    n = a.shape[-1]
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])
    Bm = B.unsqueeze(-1) if vector else B
    if Bm._arr.shape[-2] != n:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the "
                           f"equation AX = B ({n}x{n} and {Bm._arr.shape[-2]}x"
                           f"{Bm._arr.shape[-1]})")
    try:
        np.broadcast_shapes(a.shape[:-2], Bm._arr.shape[:-2])
    except ValueError:
        raise RuntimeError(f"linalg.solve: the batch dimensions of A {list(a.shape)} "
                           f"and B {list(b.shape)} do not broadcast") from None
    X = _solve_matrix(A, Bm)
    return X.squeeze(-1) if vector else X


xp_helper("solve", _np_solve, lambda a, b: _solve_matrix(a, b))


# --- svd, qr, eigh ---------------------------------------------------------------------

def _diag_embed(xp, v):
    n = v.shape[-1]
    return xp.expand_dims(v, -1) * xp.const(np.eye(n, dtype=v.dtype))


def _offdiag_inverse(xp, diff, dtype):
    """1 / diff off the diagonal, 0 on it (diff's diagonal is 0)."""
    n = diff.shape[-1]
    eye = xp.const(np.eye(n, dtype=dtype))
    return (1.0 - eye) / (diff + eye)


class SVD(Function):
    """A = U diag(S) Vh (LAPACK gesdd); the gradient in the standard
    gauge-invariant closed form (module docstring)."""

    _node_name = "LinalgSvdBackward0"

    @staticmethod
    def forward(ctx, A, full_matrices):
        u, s, vh = np.linalg.svd(A._arr, full_matrices=full_matrices)
        outs = tuple(_wrap(np.asarray(x, order="C")) for x in (u, s, vh))
        ctx.save_for_backward(*outs)
        ctx.mn = A._arr.shape[-2:]
        return outs

    @staticmethod
    def backward(ctx, gU, gS, gVh):
        xp = _ns()
        U, S, Vh = (xp.val(t) for t in ctx.saved_tensors)
        m, n = ctx.mn
        k = min(m, n)
        dtype = ctx.saved_tensors[1]._arr.dtype
        if U.shape[-1] != k:                       # full_matrices: the first k
            U = U[..., :k]
            gU = None if gU is None else xp.val(gU)[..., :k]
        if Vh.shape[-2] != k:
            Vh = Vh[..., :k, :]
            gVh = None if gVh is None else xp.val(gVh)[..., :k, :]
        inner = _diag_embed(xp, xp.val(gS)) if gS is not None else None
        s2 = S * S
        F = _offdiag_inverse(xp, xp.expand_dims(s2, -2) - xp.expand_dims(s2, -1),
                             dtype)

        def add(a, b):
            return b if a is None else a + b

        extra = None
        if gU is not None:
            gU = xp.val(gU)
            UtgU = xp.matmul(_T(xp, U), gU)
            J = F * (UtgU - _T(xp, UtgU))
            inner = add(inner, J * xp.expand_dims(S, -2))
            if m > k:
                proj = gU - xp.matmul(U, UtgU)
                extra = xp.matmul(proj / xp.expand_dims(S, -2), Vh)
        if gVh is not None:
            gVh = xp.val(gVh)
            VtgV = xp.matmul(Vh, _T(xp, gVh))
            K = F * (VtgV - _T(xp, VtgV))
            inner = add(inner, xp.expand_dims(S, -1) * K)
            if n > k:
                proj = gVh - xp.matmul(_T(xp, VtgV), Vh)
                extra = add(extra, xp.matmul(U, proj / xp.expand_dims(S, -1)))
        gA = None if inner is None else xp.matmul(xp.matmul(U, inner), Vh)
        gA = add(gA, extra) if extra is not None else gA
        return xp.out(gA), None


@op("linalg_svd", kind="linalg")
def svd(A, full_matrices=True, *, driver=None):
    """``(U, S, Vh)`` with A = U diag(S) Vh, S descending.  ``full_matrices``:
    U is (m, m) and Vh (n, n), else (m, k) and (k, n), k = min(m, n).  The
    gradient needs distinct singular values (as torch's)."""
    _check_tensors("linalg.svd", A=A)
    if A._arr.ndim < 2:
        raise RuntimeError("linalg.svd: The input tensor A must have at least 2 "
                           "dimensions.")
    _check_float("linalg.svd", A)
    return _SVD(*SVD.apply(A, bool(full_matrices)))


@op("linalg_svdvals", kind="linalg")
def svdvals(A, *, driver=None):
    """The singular values of ``A``, descending (gradient U diag(gS) Vh)."""
    return svd(A, full_matrices=False).S


class QR(Function):
    """A = Q R.  m >= n: gA = (gQ + Q copyltu(M)) R^-T with M = R gR^T - gQ^T Q
    (copyltu: the symmetric matrix of M's lower triangle).  m < n: A = [X|Y],
    the same rule for X with gQ + Y gR_Y^T, and gY = Q gR_Y."""

    _node_name = "LinalgQrBackward0"

    @staticmethod
    def forward(ctx, A, mode):
        q, r = np.linalg.qr(A._arr, mode=mode)
        Q, R = _wrap(np.asarray(q, order="C")), _wrap(np.asarray(r, order="C"))
        ctx.save_for_backward(Q, R)
        ctx.mn = A._arr.shape[-2:]
        ctx.mode = mode
        return Q, R

    @staticmethod
    def backward(ctx, gQ, gR):
        xp = _ns()
        Q, R = (xp.val(t) for t in ctx.saved_tensors)
        m, n = ctx.mn
        if ctx.mode == "complete" and m > n:
            raise NotImplementedError(
                "The derivative of linalg.qr with mode='complete' and more rows "
                "than columns is not implemented (torch neither); use "
                "mode='reduced'")
        dtype = ctx.saved_tensors[0]._arr.dtype
        gQ = None if gQ is None else xp.val(gQ)
        gR = None if gR is None else xp.val(gR)
        if m >= n:
            return xp.out(_qr_square_grad(xp, Q, R, gQ, gR, dtype)), None
        # wide: A = [X | Y], R = [U | V] with V = Q^T Y
        Y = xp.matmul(Q, R[..., :, m:])
        gU = None if gR is None else gR[..., :, :m]
        gV = None if gR is None else gR[..., :, m:]
        if gV is not None:
            extra = xp.matmul(Y, _T(xp, gV))
            gQ = extra if gQ is None else gQ + extra
        gX = _qr_square_grad(xp, Q, R[..., :, :m], gQ, gU, dtype)
        gY = xp.matmul(Q, gV) if gV is not None else Y * 0.0
        return xp.out(_cat_last(xp, gX, gY)), None


def _cat_last(xp, a, b):
    if xp is _NumpyNS:
        return np.concatenate([a, b], axis=-1)
    return OPS["cat"].fn([a, b], -1)


def _qr_square_grad(xp, Q, R, gQ, gR, dtype):
    n = R.shape[-1]
    M = None
    if gR is not None:
        M = xp.matmul(R, _T(xp, gR))
    if gQ is not None:
        t = xp.matmul(_T(xp, gQ), Q)
        M = -t if M is None else M - t
    lower = xp.const(np.tril(np.ones((n, n), dtype=dtype), -1))
    eye = xp.const(np.eye(n, dtype=dtype))
    low = M * lower
    sym = low + _T(xp, low) + M * eye
    b = xp.matmul(Q, sym)
    if gQ is not None:
        b = b + gQ
    return xp.matmul(b, _T(xp, xp.inv(R)))


@op("linalg_qr", kind="linalg")
def qr(A, mode="reduced"):
    """``(Q, R)`` with A = Q R, Q orthonormal columns and R upper triangular.
    ``mode``: ``"reduced"`` (k = min(m, n) columns), ``"complete"`` (Q square)
    or ``"r"`` (R only; Q empty)."""
    _check_tensors("linalg.qr", A=A)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one "
                           "of 'reduced' (default), 'r', or 'complete'")
    if A._arr.ndim < 2:
        raise RuntimeError("linalg.qr: The input tensor A must have at least 2 "
                           "dimensions.")
    _check_float("linalg.qr", A)
    if mode == "r":
        _Q, R = QR.apply(A.detach(), "reduced")
        return _QR(_wrap(np.zeros((0,), A._arr.dtype)), R)
    return _QR(*QR.apply(A, mode))


class Eigh(Function):
    """A = V diag(w) V^T (symmetric A, w ascending);
    gA = sym(V (diag(gw) + F o (V^T gV)) V^T), F_ij = 1 / (w_j - w_i)."""

    _node_name = "LinalgEighBackward0"

    @staticmethod
    def forward(ctx, A, uplo):
        w, v = np.linalg.eigh(A._arr, UPLO=uplo)
        W, V = _wrap(np.asarray(w, order="C")), _wrap(np.asarray(v, order="C"))
        ctx.save_for_backward(W, V)
        return W, V

    @staticmethod
    def backward(ctx, gw, gV):
        xp = _ns()
        W, V = (xp.val(t) for t in ctx.saved_tensors)
        dtype = ctx.saved_tensors[0]._arr.dtype
        inner = None
        if gw is not None:
            inner = _diag_embed(xp, xp.val(gw))
        if gV is not None:
            F = _offdiag_inverse(xp, xp.expand_dims(W, -2) - xp.expand_dims(W, -1),
                                 dtype)
            part = F * xp.matmul(_T(xp, V), xp.val(gV))
            inner = part if inner is None else inner + part
        gA = xp.matmul(xp.matmul(V, inner), _T(xp, V))
        return xp.out((gA + _T(xp, gA)) * 0.5), None


@op("linalg_eigh", kind="linalg")
def eigh(A, UPLO="L"):
    """``(eigenvalues, eigenvectors)`` of symmetric matrices (ascending), from
    the ``UPLO`` triangle.  The gradient needs distinct eigenvalues."""
    _check_square("linalg.eigh", A)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return _EIGH(*Eigh.apply(A, UPLO))


@op("linalg_eigvalsh", kind="linalg")
def eigvalsh(A, UPLO="L"):
    """The eigenvalues of symmetric matrices, ascending."""
    return eigh(A, UPLO).eigenvalues


# --- matrix norms, norm, matrix_power, pinv --------------------------------------------

def _two_dims(dim, ndim, fname):
    if len(dim) != 2:
        raise RuntimeError(f"{fname}: dim must be a 2-tuple. Got {list(dim)}")
    d = tuple(int(x) % max(ndim, 1) for x in dim)
    if d[0] == d[1]:
        raise RuntimeError(f"{fname}: dims must be different. Got ({dim[0]}, "
                           f"{dim[1]})")
    return d


def _to_end(A, d):
    """A with dims d (two of them) moved last, in that order."""
    rest = [i for i in range(A._arr.ndim) if i not in d]
    return A.permute(rest + list(d))


def _restore(out, d, ndim, keepdim):
    """A result over the leading (non-matrix) dims, with the two dims of ``d``
    put back as size 1 when ``keepdim``."""
    if not keepdim:
        return out
    for i in sorted(d):
        out = out.unsqueeze(i)
    return out


@op("linalg_matrix_norm", kind="linalg")
def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """Matrix norm over the two dims ``dim``: ``'fro'``, ``'nuc'``, ``2``/``-2``
    (largest/smallest singular value), ``1``/``-1`` (max/min column abs sum),
    ``inf``/``-inf`` (max/min row abs sum)."""
    _check_tensors("linalg.matrix_norm", A=A)
    if dtype is not None:
        A = A.to(dtype)
    if A._arr.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least "
                           "2 dimensions.")
    if A._arr.dtype.kind != "f":
        raise RuntimeError(f"linalg.matrix_norm: Expected a floating point or complex "
                           f"tensor as input. Got {_dt.name(A._arr.dtype)}")
    d = _two_dims(tuple(dim), A._arr.ndim, "linalg.matrix_norm")
    nd = A._arr.ndim
    if ord == "fro":
        return vector_norm(A, 2, d, keepdim)
    if ord == "nuc" or ord in (2, -2):
        S = svdvals(_to_end(A, d))
        if ord == "nuc":
            res = S.sum(-1)
        else:
            res = S[..., 0] if ord == 2 else S[..., -1]
        return _restore(res, d, nd, keepdim)
    if ord in (1, -1, math.inf, -math.inf):
        sum_dim, max_dim = (d[0], d[1]) if ord in (1, -1) else (d[1], d[0])
        sums = A.abs().sum(sum_dim, keepdim=True)
        ext = sums.max(max_dim, keepdim=True) if ord > 0 else sums.min(
            max_dim, keepdim=True)
        res = ext[0]
        return res if keepdim else res.squeeze(max(d)).squeeze(min(d))
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


@op("linalg_norm", kind="linalg")
def linalg_norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):
    """``linalg.norm``: a vector norm over one dim (or all elements when ``dim``
    and ``ord`` are None), a matrix norm over two dims or of a 2-D input."""
    _check_tensors("linalg.norm", A=A)
    if dim is not None and not isinstance(dim, int):
        dim = tuple(dim)
        if len(dim) == 2:
            return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim,
                               dtype=dtype)
        if len(dim) != 1:
            raise RuntimeError(f"linalg.norm: If dim is specified, it must be of "
                               f"length 1 or 2. Got {list(dim)}")
    if dim is None and ord is not None:
        if A._arr.ndim == 2:
            return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
        if A._arr.ndim != 1:
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the "
                               f"input must be 1D or 2D. Got {A._arr.ndim}D.")
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.norm: the {ord!r} norm is a matrix norm: give "
                           "two dims (or a 2-D input)")
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


@op("norm", methods=("norm",), kind="linalg")
def norm(input, p="fro", dim=None, keepdim=False, dtype=None, out=None):
    """torch.norm: ``p='fro'`` (the 2-norm of the selected elements), ``'nuc'``
    (nuclear norm over two dims), or a number (vector ``p``-norm over ``dim``,
    all elements when None)."""
    _check_tensors("norm", input=input)
    if isinstance(dim, int):
        dim = (dim,)
    if p == "nuc":
        return matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim,
                           dtype=dtype)
    if p == "fro" or p is None:
        p = 2
    if isinstance(p, str):
        raise RuntimeError(f"norm: p must be 'fro', 'nuc' or a number, got {p!r}")
    return vector_norm(input, p, dim, keepdim, dtype=dtype)


@op("matrix_power", methods=("matrix_power",), kind="linalg")
def matrix_power(A, n):
    """A to the integer power ``n`` (repeated squaring; n < 0 inverts first,
    n == 0 gives the identity)."""
    _check_tensors("linalg.matrix_power", A=A)
    a = A._arr
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square "
                           f"matrices, but they are {a.shape[-2] if a.ndim > 1 else 1}"
                           f" by {a.shape[-1]} matrices")
    n = int(n)
    if n == 0:
        eye = np.broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), a.shape)
        return _wrap(np.array(eye, order="C"))
    if n < 0:
        A, n = inv(A), -n
    result, base = None, A
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return result


@op("linalg_pinv", kind="linalg")
def pinv(A, *, atol=None, rtol=None, hermitian=False):
    """The Moore-Penrose pseudo-inverse from the SVD: singular values at or
    below max(atol, rtol * s_max) (rtol default eps * max(m, n)) count as 0."""
    _check_tensors("linalg.pinv", A=A)
    U, S, Vh = svd(A, full_matrices=False)
    s = S._arr
    m, n = A._arr.shape[-2:]
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else \
            np.finfo(s.dtype).eps * max(m, n)
    smax = s[..., :1] if s.shape[-1] else np.zeros(s.shape[:-1] + (1,), s.dtype)
    cutoff = np.maximum(atol or 0.0, rtol * smax)
    keep = (s > cutoff).astype(s.dtype)
    keep_t = _wrap(keep)
    s_inv = keep_t / (S + _wrap(1.0 - keep))
    return matmul(Vh.transpose(-1, -2) * s_inv.unsqueeze(-2), U.transpose(-1, -2))


@op("pinverse", methods=("pinverse",), kind="linalg")
def pinverse(input, rcond=1e-15):
    """torch.pinverse: ``linalg.pinv`` with singular values at or below
    ``rcond * s_max`` treated as 0."""
    return pinv(input, rtol=rcond)


_SVD_OLD = return_type("svd", ["U", "S", "V"])


@op("svd", methods=("svd",), kind="linalg")
def svd_old(input, some=True, compute_uv=True):
    """torch.svd (the older API): ``(U, S, V)`` with A = U diag(S) V^T;
    ``some=False`` gives square U and V.  ``compute_uv=False`` returns
    zero-filled U and V, as torch."""
    U, S, Vh = svd(input, full_matrices=not some)
    if not compute_uv:
        return _SVD_OLD(U.detach() * 0, S, Vh.detach().transpose(-1, -2) * 0)
    return _SVD_OLD(U, S, Vh.transpose(-1, -2))


@op("qr", methods=("qr",), kind="linalg")
def qr_old(input, some=True):
    """torch.qr (the older API): ``linalg.qr`` in mode reduced (``some``) or
    complete."""
    return qr(input, mode="reduced" if some else "complete")
