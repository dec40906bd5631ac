"""``parametrizations.orthogonal``: a weight kept orthogonal (orthonormal
columns, or rows when it is wide) by computing it from an unconstrained
"original".

The map from the original ``X`` (tall ``n x k`` after a transpose of wide
weights) to ``Q``:

- ``matrix_exp`` / ``cayley``: ``A = L - L^T`` with ``L`` the lower
  triangle of ``X`` widened to ``n x n`` by zero columns; ``Q = exp(A)`` or
  ``(I - A/2)^-1 (I + A/2)``, first ``k`` columns;
- ``householder``: the product of the reflections ``I - tau_i v_i v_i^T``
  with ``v_i`` the strictly-lower column ``i`` of ``X`` (unit ``i``-th
  entry) and ``tau_i = 2 / (1 + |v_i|^2)`` (exact reflections), columns
  signed by the integer part of ``X``'s diagonal, as torch.

With ``use_trivialization`` (the default) ``Q`` is also multiplied by a
buffer ``base``: assigning a weight (and registering) stores the weight,
made orthogonal (QR with positive ``R`` diagonal; a tall non-square one is
first completed by random columns from cygrad's generator), as ``base`` and
sets the original to ``-I``, whose ``Q`` is ``I``.  All maps are composites
of differentiable ops, so gradients reach the original.
"""

from __future__ import annotations

from enum import Enum, auto
from typing import Any

import numpy as np

from cygrad.autograd.grad_mode import no_grad
from cygrad.creation import from_numpy, randn
from cygrad.ops.decomp import solve
from cygrad.ops.linalg_extra import matrix_exp
from cygrad.ops.shape import cat

from ..module import Module
from .parametrize import register_parametrization

__all__ = ["orthogonal"]


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


def _eye(n, like):
    return from_numpy(np.eye(n, dtype=np.dtype(like.dtype)))


def _householder_product(a, tau):
    """``H_0 H_1 ... H_{k-1}`` (the first ``k`` columns) for reflections
    ``H_i = I - tau_i v_i v_i^T``, ``v_i`` column ``i`` of ``a`` below the
    diagonal with a unit ``i``-th entry; batched over leading dims."""
    n, k = a.shape[-2], a.shape[-1]
    rows = np.arange(n)[:, None]
    below = from_numpy((rows > np.arange(k)[None, :]).astype(np.dtype(a.dtype)))
    unit = from_numpy((rows == np.arange(k)[None, :]).astype(np.dtype(a.dtype)))
    v = a * below + unit
    q = _eye(n, a)
    for i in range(k):
        vi = v[..., :, i:i + 1]
        ti = tau[..., i:i + 1].unsqueeze(-1)
        q = q - (q @ vi) @ (vi.transpose(-1, -2) * ti)
    return q[..., :, :k]


def _make_orthogonal(a):
    """``Q`` of ``a = QR`` with ``R``'s diagonal made positive (NumPy, no
    gradient: used to set the buffer)."""
    arr = np.asarray(a._arr)
    q, r = np.linalg.qr(arr)
    signs = np.sign(np.diagonal(r, axis1=-2, axis2=-1))
    signs = np.where(signs == 0, 1, signs)
    return from_numpy(np.ascontiguousarray(q * signs[..., None, :]))


def _is_orthogonal(q):
    arr = np.asarray(q._arr)
    n, k = arr.shape[-2], arr.shape[-1]
    eps = 10 * n * np.finfo(arr.dtype).eps
    gram = np.swapaxes(arr, -1, -2) @ arr
    return bool(np.allclose(gram, np.eye(k), atol=eps))


class _Orthogonal(Module):
    """The parametrization (see module doc)."""

    def __init__(self, weight: Any, orthogonal_map: _OrthMaps, *,
                 use_trivialization: bool = True) -> None:
        super().__init__()
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Any) -> Any:
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.transpose(-1, -2)
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                zeros = from_numpy(np.zeros(tuple(X.shape[:-2]) + (n, n - k),
                                            dtype=np.dtype(X.dtype)))
                X = cat([X, zeros], -1)
            A = X - X.transpose(-1, -2)
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = matrix_exp(A)
            else:
                eye = _eye(n, A)
                Q = solve(eye - 0.5 * A, eye + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _householder_product(A, tau)
            diag = np.trunc(np.diagonal(np.asarray(X.detach()._arr), axis1=-2,
                                        axis2=-1))
            Q = Q * from_numpy(np.ascontiguousarray(diag[..., None, :]))
        if self._buffers.get("base") is not None:
            Q = self.base @ Q
        if transposed:
            Q = Q.transpose(-1, -2)
        return Q

    def right_inverse(self, Q: Any) -> Any:
        with no_grad():
            if tuple(Q.shape) != self.shape:
                raise ValueError(
                    f"Expected a matrix or batch of matrices of shape {self.shape}. "
                    f"Got a tensor of shape {tuple(Q.shape)}.")
            q_init = Q
            n, k = Q.shape[-2], Q.shape[-1]
            transpose = n < k
            if transpose:
                Q = Q.transpose(-1, -2)
                n, k = k, n
            if "base" not in self._buffers:
                if self.orthogonal_map != _OrthMaps.householder:
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential or the "
                        "Cayley parametrizations when use_trivialization=False.")
                a = _geqrf(np.asarray(Q._arr))
                return from_numpy(np.ascontiguousarray(
                    np.swapaxes(a, -1, -2) if transpose else a))
            if n == k:
                Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
            else:
                extra = randn(*(tuple(Q.shape[:-2]) + (n, n - k)),
                              dtype=Q.dtype)
                Q = _make_orthogonal(cat([Q, extra], -1))
            self.base = Q
            neg = np.zeros(tuple(q_init.shape), dtype=np.dtype(q_init.dtype))
            idx = np.arange(min(neg.shape[-2:]))
            neg[..., idx, idx] = -1.0
            return from_numpy(neg)


def _geqrf(a):
    """LAPACK geqrf's packed QR of ``a`` (batched), its diagonal replaced by
    the signs torch's right inverse puts there (-1 where tau is 0 flips)."""
    out = np.empty_like(a)
    flat_in = a.reshape(-1, *a.shape[-2:])
    flat_out = out.reshape(-1, *a.shape[-2:])
    for i, m in enumerate(flat_in):
        h, tau = np.linalg.qr(m, mode="raw")
        packed = h.T.copy()
        d = np.arange(min(packed.shape))
        diag = np.sign(packed[d, d])
        diag[tau[: d.size] == 0.0] *= -1
        packed[d, d] = diag
        flat_out[i] = packed
    return out


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None,
               *, use_trivialization: bool = True) -> Module:
    """Parametrize ``module.name`` (a matrix or a batch of them) to stay
    orthogonal.

    Parameters
    ----------
    module : Module
    name : str
    orthogonal_map : {"matrix_exp", "cayley", "householder"}, optional
        Default: "matrix_exp" for square matrices, "householder" otherwise.
    use_trivialization : bool
        Keep a ``base`` buffer (see the module doc); needed to assign to
        the weight with "matrix_exp" and "cayley".

    Returns
    -------
    The module, its weight now ``module.parametrizations.<name>``.
    """
    weight = getattr(module, name, None)
    if not hasattr(weight, "shape"):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name "
                         f"'{name}'")
    if weight.ndim < 2:
        raise ValueError("Expected a matrix or batch of matrices. Got a tensor of "
                         f"{weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = ("matrix_exp" if weight.shape[-2] == weight.shape[-1]
                          else "householder")
    orth_enum = getattr(_OrthMaps, str(orthogonal_map), None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    register_parametrization(module, name, orth, unsafe=True)
    return module
