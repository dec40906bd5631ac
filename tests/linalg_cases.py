"""The registry cases of the linear-algebra ops (``cygrad/ops/linalg.py``
and ``decomp.py``), merged into ``reference.CASES``: each lambda runs on
cygrad and on torch (``test_ops_torch.py``), is gradchecked
(``test_ops.py``) and has both backward paths compared
(``test_backward_paths.py``).

Decompositions are given well-conditioned inputs built inside the lambda
(symmetric positive definite, symmetric) and gauge-invariant outputs
(squared singular vectors), so their values are unique."""

import numpy as np


def _spd(m, a):
    n = a.shape[-1]
    return a @ a.transpose(-1, -2) + n * m.eye(n, dtype=a.dtype)


def _sym(m, a):
    return (a + a.transpose(-1, -2)) / 2


def _np_spd(a):
    n = a.shape[-1]
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def cases(Case):
    f64 = ("float64",)
    c = {}
    c["dot"] = [Case(lambda m, a, b: m.dot(a, b), ((5,), (5,)), np.dot)]
    c["vdot"] = [Case(lambda m, a, b: m.vdot(a, b), ((4,), (4,)), np.vdot)]
    c["mv"] = [Case(lambda m, a, b: m.mv(a, b), ((3, 4), (4,)), np.dot)]
    c["outer"] = [Case(lambda m, a, b: m.outer(a, b), ((3,), (4,)), np.outer),
                  Case(lambda m, a, b: a.ger(b), ((2,), (3,)), np.outer, ids="ger")]
    c["bmm"] = [Case(lambda m, a, b: m.bmm(a, b), ((2, 3, 4), (2, 4, 5)), np.matmul)]
    c["addmm"] = [
        Case(lambda m, c_, a, b: m.addmm(c_, a, b), ((2, 3), (2, 4), (4, 3)),
             lambda c_, a, b: c_ + a @ b),
        Case(lambda m, c_, a, b: m.addmm(c_, a, b, beta=0.5, alpha=-2.0),
             ((3,), (2, 4), (4, 3)), lambda c_, a, b: 0.5 * c_ - 2 * (a @ b),
             ids="scaled-broadcast")]
    c["addmv"] = [Case(lambda m, c_, a, b: m.addmv(c_, a, b, alpha=3),
                       ((2,), (2, 3), (3,)), lambda c_, a, b: c_ + 3 * (a @ b))]
    c["baddbmm"] = [Case(lambda m, c_, a, b: m.baddbmm(c_, a, b, beta=2),
                         ((5,), (3, 2, 4), (3, 4, 5)),
                         lambda c_, a, b: 2 * c_ + a @ b)]
    c["addbmm"] = [Case(lambda m, c_, a, b: m.addbmm(c_, a, b),
                        ((2, 5), (3, 2, 4), (3, 4, 5)),
                        lambda c_, a, b: c_ + (a @ b).sum(0))]
    c["kron"] = [Case(lambda m, a, b: m.kron(a, b), ((2, 3), (4,)), np.kron),
                 Case(lambda m, a, b: m.kron(a, b), ((2, 2), (3, 2)), np.kron)]
    c["tensordot"] = [
        Case(lambda m, a, b: m.tensordot(a, b), ((2, 3, 4), (3, 4, 5)),
             lambda a, b: np.tensordot(a, b)),
        Case(lambda m, a, b: m.tensordot(a, b, dims=([1, 0], [0, 2])),
             ((2, 3, 4), (3, 5, 2)),
             lambda a, b: np.tensordot(a, b, axes=([1, 0], [0, 2])), ids="lists")]
    c["cross"] = [
        Case(lambda m, a, b: m.cross(a, b, dim=0), ((3, 4), (3, 4)),
             lambda a, b: np.cross(a, b, axis=0)),
        Case(lambda m, a, b: m.linalg.cross(a, b), ((4, 3), (1, 3)),
             lambda a, b: np.cross(a, b), ids="linalg-broadcast")]
    c["einsum"] = [
        Case(lambda m, a, b: m.einsum("ij,jk->ik", a, b), ((2, 3), (3, 4)),
             lambda a, b: a @ b),
        Case(lambda m, a: m.einsum("ii->i", a), ((3, 3),), np.diagonal, ids="diag"),
        Case(lambda m, a: m.einsum("iij->", a), ((2, 2, 3),),
             lambda a: np.einsum("iij->", a), ids="trace-sum"),
        Case(lambda m, a, b: m.einsum("...ij,...jk", a, b), ((2, 1, 2, 3), (5, 3, 4)),
             lambda a, b: np.matmul(a, b), ids="ellipsis-broadcast"),
        Case(lambda m, a, b, c_: m.einsum("bi,bj,bk->ijk", a, b, c_),
             ((2, 3), (2, 2), (2, 4)),
             lambda a, b, c_: np.einsum("bi,bj,bk->ijk", a, b, c_), ids="three"),
        Case(lambda m, a, b: m.einsum("i,j", [a, b]), ((3,), (2,)), np.outer,
             ids="list-implicit")]
    c["linalg_vector_norm"] = [
        Case(lambda m, x: m.linalg.vector_norm(x), ((3, 4),),
             lambda x: np.linalg.norm(x.ravel())),
        Case(lambda m, x: m.linalg.vector_norm(x, 3, dim=1, keepdim=True), ((3, 4),),
             lambda x: np.linalg.norm(x, 3, axis=1, keepdims=True), ids="ord3"),
        Case(lambda m, x: m.linalg.vector_norm(x, 1, dim=(0, 2)), ((2, 3, 2),),
             lambda x: np.abs(x).sum((0, 2)), ids="ord1"),
        Case(lambda m, x: m.linalg.vector_norm(x, float("inf"), dim=-1), ((3, 4),),
             lambda x: np.abs(x).max(-1), ids="inf"),
        Case(lambda m, x: m.linalg.vector_norm(x, -1.5), ((5,),),
             lambda x: (np.abs(x) ** -1.5).sum() ** (-1 / 1.5), ids="neg")]
    c["cdist"] = [
        Case(lambda m, a, b: m.cdist(a, b), ((3, 4), (5, 4)),
             lambda a, b: np.sqrt(((a[:, None] - b[None]) ** 2).sum(-1))),
        Case(lambda m, a, b: m.cdist(a, b, p=1), ((2, 3, 4), (5, 4)),
             lambda a, b: np.abs(a[..., :, None, :] - b[None, None]).sum(-1),
             ids="p1-batch")]
    c["inverse"] = [
        Case(lambda m, a: m.inverse(_spd(m, a)), ((3, 3),),
             lambda a: np.linalg.inv(_np_spd(a))),
        Case(lambda m, a: m.linalg.inv(_spd(m, a)), ((2, 3, 3),),
             lambda a: np.linalg.inv(_np_spd(a)), ids="batch")]
    c["det"] = [Case(lambda m, a: m.det(a), ((2, 3, 3),), np.linalg.det),
                Case(lambda m, a: m.linalg.det(a), ((4, 4),), np.linalg.det)]
    c["slogdet"] = [Case(lambda m, a: m.linalg.slogdet(a)[1], ((2, 3, 3),),
                         lambda a: np.linalg.slogdet(a)[1])]
    c["cholesky"] = [
        Case(lambda m, a: m.linalg.cholesky(_spd(m, a)), ((3, 3),),
             lambda a: np.linalg.cholesky(_np_spd(a))),
        Case(lambda m, a: m.cholesky(_spd(m, a), upper=True), ((2, 3, 3),),
             lambda a: np.swapaxes(np.linalg.cholesky(_np_spd(a)), -1, -2),
             ids="upper-batch")]
    c["linalg_solve"] = [
        Case(lambda m, a, b: m.linalg.solve(_spd(m, a), b), ((3, 3), (3, 2)),
             lambda a, b: np.linalg.solve(_np_spd(a), b)),
        Case(lambda m, a, b: m.linalg.solve(_spd(m, a), b), ((2, 3, 3), (2, 3)),
             lambda a, b: np.linalg.solve(_np_spd(a), b[..., None])[..., 0],
             ids="vector-batch"),
        Case(lambda m, a, b: m.linalg.solve(_spd(m, a), b, left=False),
             ((3, 3), (2, 3)),
             lambda a, b: np.linalg.solve(_np_spd(a).T, b.T).T, ids="right")]
    c["linalg_svd"] = [
        Case(lambda m, a: m.linalg.svd(a, full_matrices=False)[1], ((4, 3),),
             lambda a: np.linalg.svd(a)[1], dtypes=f64),
        Case(lambda m, a: m.linalg.svd(a, full_matrices=False)[0] ** 2, ((4, 3),),
             lambda a: np.linalg.svd(a, full_matrices=False)[0] ** 2, ids="U",
             dtypes=f64),
        Case(lambda m, a: m.linalg.svd(a, full_matrices=False).Vh ** 2, ((3, 5),),
             lambda a: np.linalg.svd(a, full_matrices=False)[2] ** 2, ids="Vh-wide",
             dtypes=f64),
        Case(lambda m, a: m.linalg.svd(a)[0][:, :2] ** 2, ((4, 2),),
             lambda a: np.linalg.svd(a)[0][:, :2] ** 2, ids="full", dtypes=f64)]
    c["linalg_svdvals"] = [Case(lambda m, a: m.linalg.svdvals(a), ((2, 3, 4),),
                                lambda a: np.linalg.svd(a)[1], dtypes=f64)]
    c["svd"] = [Case(lambda m, a: m.svd(a)[2] ** 2, ((4, 3),),
                     lambda a: np.linalg.svd(a, full_matrices=False)[2].T ** 2,
                     dtypes=f64)]
    c["linalg_qr"] = [
        Case(lambda m, a: m.linalg.qr(a)[1] ** 2, ((4, 3),),
             lambda a: np.linalg.qr(a)[1] ** 2, dtypes=f64),
        Case(lambda m, a: m.linalg.qr(a).Q * m.linalg.qr(a).R[0], ((3, 3),),
             lambda a: np.linalg.qr(a)[0] * np.linalg.qr(a)[1][0], ids="QR",
             dtypes=f64),
        Case(lambda m, a: m.linalg.qr(a)[0] ** 2, ((3, 5),),
             lambda a: np.linalg.qr(a)[0] ** 2, ids="wide", dtypes=f64)]
    c["qr"] = [Case(lambda m, a: m.qr(a)[1] ** 2, ((4, 3),),
                    lambda a: np.linalg.qr(a)[1] ** 2, dtypes=f64)]
    c["linalg_eigh"] = [
        Case(lambda m, a: m.linalg.eigh(_sym(m, a))[0], ((4, 4),),
             lambda a: np.linalg.eigh((a + a.T) / 2)[0], dtypes=f64),
        Case(lambda m, a: m.linalg.eigh(_sym(m, a)).eigenvectors ** 2, ((2, 3, 3),),
             lambda a: np.linalg.eigh((a + np.swapaxes(a, -1, -2)) / 2)[1] ** 2,
             ids="vectors", dtypes=f64)]
    c["linalg_eigvalsh"] = [Case(lambda m, a: m.linalg.eigvalsh(_sym(m, a)), ((3, 3),),
                                 lambda a: np.linalg.eigvalsh((a + a.T) / 2),
                                 dtypes=f64)]
    c["linalg_matrix_norm"] = [
        Case(lambda m, a: m.linalg.matrix_norm(a), ((2, 3, 4),),
             lambda a: np.linalg.norm(a, "fro", axis=(-2, -1))),
        Case(lambda m, a: m.linalg.matrix_norm(a, "nuc"), ((3, 4),),
             lambda a: np.linalg.norm(a, "nuc"), ids="nuc", dtypes=f64),
        Case(lambda m, a: m.linalg.matrix_norm(a, 2, keepdim=True), ((2, 3, 4),),
             lambda a: np.linalg.norm(a, 2, axis=(-2, -1), keepdims=True), ids="2",
             dtypes=f64),
        Case(lambda m, a: m.linalg.matrix_norm(a, -2), ((3, 4),),
             lambda a: np.linalg.norm(a, -2), ids="-2", dtypes=f64),
        Case(lambda m, a: m.linalg.matrix_norm(a, 1), ((3, 4),),
             lambda a: np.linalg.norm(a, 1), ids="1"),
        Case(lambda m, a: m.linalg.matrix_norm(a, float("-inf"), dim=(0, 1)),
             ((3, 4),), lambda a: np.linalg.norm(a, -np.inf), ids="-inf")]
    c["linalg_norm"] = [
        Case(lambda m, a: m.linalg.norm(a), ((3, 4, 2),),
             lambda a: np.linalg.norm(a.ravel())),
        Case(lambda m, a: m.linalg.norm(a, ord=float("inf")), ((3, 4),),
             lambda a: np.linalg.norm(a, np.inf), ids="matrix-inf"),
        Case(lambda m, a: m.linalg.norm(a, dim=1), ((3, 4),),
             lambda a: np.linalg.norm(a, axis=1), ids="dim")]
    c["norm"] = [
        Case(lambda m, a: m.norm(a), ((3, 4),), lambda a: np.linalg.norm(a.ravel())),
        Case(lambda m, a: a.norm(p=1, dim=1, keepdim=True), ((3, 4),),
             lambda a: np.abs(a).sum(1, keepdims=True), ids="p1"),
        Case(lambda m, a: a.norm(dim=(0, 1)), ((3, 4, 2),),
             lambda a: np.sqrt((a * a).sum((0, 1))), ids="fro-dims")]
    c["matrix_power"] = [
        Case(lambda m, a: m.matrix_power(a, 3), ((3, 3),),
             lambda a: np.linalg.matrix_power(a, 3)),
        Case(lambda m, a: m.linalg.matrix_power(_spd(m, a), -2), ((2, 3, 3),),
             lambda a: np.linalg.matrix_power(_np_spd(a), -2), ids="neg")]
    c["linalg_pinv"] = [Case(lambda m, a: m.linalg.pinv(a), ((4, 3),), np.linalg.pinv,
                             dtypes=f64)]
    c["pinverse"] = [Case(lambda m, a: m.pinverse(a), ((3, 4),), np.linalg.pinv,
                          dtypes=f64)]
    return c


# Once differentiable, as torch's (no second derivative).
_ONCE = {"cdist"}


def higher_order_samples():
    """SAMPLES entries for ``test_higher_order.py``: every case of every op
    above but the once-differentiable ones, run on cygrad."""
    from reference import CASES

    import cygrad

    out = {}
    for name in cases(lambda *a, **k: None):
        if name in _ONCE:
            continue
        out[name] = [(f"{c!r}-{i}", (lambda c: lambda *xs: c.fn(cygrad, *xs))(c),
                      list(c.shapes)) for i, c in enumerate(CASES[name])]
    return out
