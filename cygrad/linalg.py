"""``cygrad.linalg``: torch.linalg's names (decompositions, solves, norms).

The functions live in ``cygrad/ops/linalg.py`` (products, ``vector_norm``),
``cygrad/ops/decomp.py`` (decompositions, matrix norms),
``cygrad/ops/triangular.py`` (triangular solves, LU) and
``cygrad/ops/linalg_tail.py`` (lstsq, matrix_rank, cond, the ``_ex`` forms,
...) and ``cygrad/ops/ldl.py`` (LDL^T with Bunch-Kaufman pivoting); this
module gives them torch.linalg's spelling.

Not here: ``eig`` and ``eigvals`` (complex results; cygrad has no complex
dtype).
"""

from cygrad.ops.decomp import (
    LinAlgError,
    cholesky,
    det,
    eigh,
    eigvalsh,
    inv,
    matrix_norm,
    matrix_power,
    pinv,
    qr,
    slogdet,
    solve,
    svd,
    svdvals,
)
from cygrad.ops.decomp import (
    linalg_norm as norm,
)
from cygrad.ops.linalg import cross as _cross
from cygrad.ops.linalg import matmul, vector_norm
from cygrad.ops.ldl import ldl_factor, ldl_factor_ex, ldl_solve
from cygrad.ops.linalg_extra import matrix_exp
from cygrad.ops.linalg_tail import (
    cholesky_ex,
    cond,
    diagonal,
    householder_product,
    inv_ex,
    lstsq,
    matrix_rank,
    solve_ex,
    tensorinv,
    tensorsolve,
    vander,
)
from cygrad.ops.triangular import (
    lu,
    lu_factor,
    lu_factor_ex,
    lu_solve,
    solve_triangular,
)

__all__ = [
    "LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal",
    "eigh", "eigvalsh", "householder_product", "inv", "inv_ex", "ldl_factor",
    "ldl_factor_ex", "ldl_solve", "lstsq", "lu",
    "lu_factor", "lu_factor_ex", "lu_solve", "matmul", "matrix_exp", "matrix_norm",
    "matrix_power", "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet",
    "solve", "solve_ex", "solve_triangular", "svd", "svdvals", "tensorinv",
    "tensorsolve", "vander", "vecdot", "vector_norm",
]


def cross(input, other, *, dim=-1):
    """Cross product of 3-vectors along ``dim`` (default the last); inputs
    broadcast."""
    return _cross(input, other, dim=dim)


def multi_dot(tensors):
    """The product of a chain of matrices (first may be 1-D, last may be 1-D),
    multiplied in the order that costs the fewest flops."""
    ts = list(tensors)
    if len(ts) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got "
                           f"{len(ts)}")
    for i, t in enumerate(ts):
        nd = t.ndim
        if (nd not in (1, 2)) or (nd == 1 and 0 < i < len(ts) - 1):
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D"
                               + (" or 1D" if i in (0, len(ts) - 1) else "")
                               + f" but got {nd}D")
    first_vec, last_vec = ts[0].ndim == 1, ts[-1].ndim == 1
    if first_vec:
        ts[0] = ts[0].unsqueeze(0)
    if last_vec:
        ts[-1] = ts[-1].unsqueeze(-1)
    dims = [t.shape[0] for t in ts] + [ts[-1].shape[1]]
    n = len(ts)
    # the classic matrix-chain order (dynamic programming)
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for span in range(1, n):
        for i in range(n - span):
            j = i + span
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k

    out = _chain_product(ts, split, 0, n - 1)
    if first_vec:
        out = out.squeeze(0)
    if last_vec:
        out = out.squeeze(-1)
    return out


def _chain_product(ts, split, i, j):
    """ts[i] @ ... @ ts[j] in the order ``split`` chose (a module function:
    a nested one calling itself would be a reference cycle holding ``ts``)."""
    if i == j:
        return ts[i]
    k = split[i][j]
    return matmul(_chain_product(ts, split, i, k), _chain_product(ts, split, k + 1, j))


def vecdot(x, y, *, dim=-1):
    """Dot products along ``dim`` (inputs broadcast)."""
    return (x * y).sum(dim)
