"""Linear algebra against torch beyond the registry cases
(``tests/linalg_cases.py``): error types and messages, gradients at the
special points (zero norms, zero distances, singular det), einsum over many
equations, the namedtuple results and the ``cygrad.linalg`` module."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cygrad
from cygrad.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")


def both(fn, *arrays, grad=True):
    """fn on cygrad and torch with the same inputs: (values, grads) each."""
    res = []
    for m in (cygrad, torch):
        ts = [m.tensor(a, requires_grad=grad) for a in arrays]
        y = fn(m, *ts)
        gs = None
        if grad:
            w = np.random.default_rng(0).standard_normal(tuple(y.shape))
            (y * m.tensor(w)).sum().backward()
            gs = [None if t.grad is None else t.grad.numpy() for t in ts]
        res.append((y.detach().numpy(), gs))
    return res


def assert_same(fn, *arrays, rtol=1e-9, atol=1e-10):
    (a, ga), (b, gb) = both(fn, *arrays)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    for x, y in zip(ga, gb):
        assert (x is None) == (y is None)
        if x is not None:
            np.testing.assert_allclose(x, y, rtol=rtol, atol=atol)


rng = np.random.default_rng(42)


def r(*shape):
    return rng.standard_normal(shape)


# --- errors -----------------------------------------------------------------------

def Z(m, *s, **k):
    return m.zeros(*s, **k)


ERRORS = [
    lambda m: m.dot(Z(m, 3), Z(m, 4)),
    lambda m: m.dot(Z(m, 3, 1), Z(m, 3)),
    lambda m: m.dot(Z(m, 3), Z(m, 3, dtype=m.float64)),
    lambda m: m.mv(Z(m, 3, 4), Z(m, 3)),
    lambda m: m.mv(Z(m, 3), Z(m, 3)),
    lambda m: m.outer(Z(m, 3), Z(m, 2, 2)),
    lambda m: m.bmm(Z(m, 2, 3, 4), Z(m, 3, 4, 5)),
    lambda m: m.bmm(Z(m, 3, 4), Z(m, 4, 5)),
    lambda m: m.addmm(Z(m, 3, 4), Z(m, 2, 4), Z(m, 4, 3)),
    lambda m: m.cross(Z(m, 4, 4), Z(m, 4, 4)),
    lambda m: m.cross(Z(m, 3, 4), Z(m, 3, 4), dim=1),
    lambda m: m.cdist(Z(m, 3, 4), Z(m, 5, 3)),
    lambda m: m.cdist(Z(m, 3), Z(m, 5, 3)),
    lambda m: m.tensordot(Z(m, 2, 3, 4), Z(m, 2, 5), dims=([1], [0])),
    lambda m: m.inverse(Z(m, 3, 4)),
    lambda m: m.det(Z(m, 2, 3)),
    lambda m: m.linalg.solve(m.eye(3), Z(m, 4)),
    lambda m: m.matrix_power(Z(m, 2, 3), 2),
    lambda m: m.einsum("ij,jk", Z(m, 2, 3), Z(m, 4, 5)),
    lambda m: m.einsum("ij,jk->ik", Z(m, 2, 3)),
    lambda m: m.einsum("ii", Z(m, 2, 3)),
    lambda m: m.einsum("ij->ij", Z(m, 2, 3, 4)),
    lambda m: m.einsum("i->ii", Z(m, 3)),
    lambda m: m.einsum("i->j", Z(m, 3)),
    lambda m: m.linalg.vector_norm(Z(m, 3, dtype=m.int64)),
    lambda m: m.linalg.matrix_norm(Z(m, 3)),
    lambda m: m.linalg.norm(Z(m, 3, 3, 3), ord=2),
    lambda m: m.linalg.matrix_norm(Z(m, 3, 3), ord=3),
    lambda m: m.linalg.vector_norm(Z(m, 3), ord="fro"),
]

# the phrase both messages share, per case (cygrad may add help after it)
PHRASES = [
    "inconsistent tensor size", "1D tensors expected", "same dtype",
    "size mismatch", "vector + matrix @ vector expected", "Expected 1-D argument vec2",
    "Expected size for first two dimensions of batch2 tensor", "batch1 must be a 3D",
    "expanded size of the tensor", "no dimension of size 3 in input",
    "inputs dimension 1 must have length 3", ("X1 and X2 must have the same number "
    "of columns"), "cdist only supports at least 2D tensors",
    "contracted dimensions need to match", "A must be batches of square matrices",
    "A must be batches of square matrices", "Incompatible shapes of A and B",
    "A must be batches of square matrices", "does not broadcast with previously seen",
    "fewer operands were provided", "is repeated for operand 0 but the sizes don't",
    "does not match the number of dimensions", "appears more than once in the output",
    "does not appear in the equation for any input operand",
    "Expected a floating point or complex tensor as input",
    "must have at least 2 dimensions", "If dim is not specified but ord is",
    "Order 3 not supported", "must be Number, not str",
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_bad_input_raises_like_torch(i):
    call = ERRORS[i]
    with pytest.raises(Exception) as want:
        call(torch)
    with pytest.raises(Exception) as got:
        call(cygrad)
    assert isinstance(got.value, type(want.value)) or (
        type(want.value).__name__ == "_LinAlgError"
        and isinstance(got.value, RuntimeError)), (got.value, want.value)
    assert PHRASES[i].lower() in str(want.value).lower(), str(want.value)
    assert PHRASES[i].lower() in str(got.value).lower(), str(got.value)


@pytest.mark.parametrize("call,phrase", [
    (lambda m: m.linalg.inv(m.zeros(3, 3)), "singular"),
    (lambda m: m.inverse(m.zeros(2, 3, 3)), "Batch element 0"),
    (lambda m: m.linalg.cholesky(-m.ones(2, 2)), ("leading minor of order 1 is not "
     "positive-definite")),
    (lambda m: m.linalg.cholesky(m.tensor([[1.0, 2], [2, 1]])), ("leading minor of "
     "order 2")),
    (lambda m: m.linalg.solve(m.zeros(3, 3), m.zeros(3)), "singular"),
])
def test_linalg_errors_are_linalgerror(call, phrase):
    with pytest.raises(torch.linalg.LinAlgError) as want:
        call(torch)
    with pytest.raises(cygrad.linalg.LinAlgError) as got:
        call(cygrad)
    assert isinstance(got.value, RuntimeError)
    assert phrase in str(want.value) and phrase in str(got.value)


# --- gradients at special points -------------------------------------------------

@pytest.mark.parametrize("ord", [0, 1, 2, 3.5, math.inf, -math.inf, -1])
def test_vector_norm_gradient_with_zeros_matches_torch(ord):
    x = np.array([[1.0, -2.0, 0.0, 3.0], [0.0, 0.0, 0.0, 0.0]])
    assert_same(lambda m, t: m.linalg.vector_norm(t, ord, dim=1), x)


def test_norms_of_zero_have_zero_gradient():
    for fn in (lambda t: t.norm(), lambda t: cygrad.linalg.norm(t),
               lambda t: cygrad.linalg.matrix_norm(t)):
        x = cygrad.zeros(2, 3, requires_grad=True)
        fn(x).backward()
        assert x.grad.tolist() == [[0.0] * 3] * 2


def test_inf_norm_splits_ties_like_torch():
    assert_same(lambda m, t: m.linalg.vector_norm(t, math.inf),
                np.array([3.0, -3.0, 1.0]))


def test_cdist_zero_distance_gradient_is_zero():
    a = np.array([[0.0, 1.0], [2.0, 2.0]])
    for p in (1.0, 2.0, 3.0):
        assert_same(lambda m, x, y: m.cdist(x, y, p=p), a, a.copy())


def test_cdist_is_once_differentiable():
    x = cygrad.tensor(r(3, 2), requires_grad=True)
    y = cygrad.tensor(r(4, 2), requires_grad=True)
    (gx,) = cygrad.autograd.grad(cygrad.cdist(x, y).sum(), x, create_graph=True)
    assert not gx.requires_grad


def _cofactors(a):
    n = a.shape[0]
    return np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(a, i, 0),
                                                                 j, 1))
                      for j in range(n)] for i in range(n)])


def test_det_gradient_of_a_singular_matrix_is_the_adjugate():
    # torch 2.13 returns 0 here (and fails its own gradcheck); the derivative
    # of det is the cofactor matrix at any rank (docs/differences.md)
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])   # rank 2
    x = cygrad.tensor(a, requires_grad=True)
    cygrad.det(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), _cofactors(a), atol=1e-12)
    assert np.abs(_cofactors(a)).max() > 1
    assert gradcheck(cygrad.det, [cygrad.tensor(a, requires_grad=True)])
    b = np.zeros((2, 2))
    assert_same(lambda m, t: m.linalg.det(t), b)       # rank 0: adj is 0
    c = r(3, 3)
    assert_same(lambda m, t: m.det(t), c)               # regular: A^-T det A


def test_beta_zero_ignores_nan_input():
    x = cygrad.full((2, 2), float("nan"))
    a, b = cygrad.ones(2, 3), cygrad.ones(3, 2)
    np.testing.assert_array_equal(cygrad.addmm(x, a, b, beta=0).numpy(),
                                  np.full((2, 2), 3.0))


def test_svd_full_matrices_and_reconstruction():
    a = r(5, 3)
    U, S, Vh = cygrad.linalg.svd(cygrad.tensor(a))
    assert U.shape == (5, 5) and S.shape == (3,) and Vh.shape == (3, 3)
    U, S, Vh = cygrad.linalg.svd(cygrad.tensor(a), full_matrices=False)
    np.testing.assert_allclose((U * S.unsqueeze(0)).matmul(Vh).numpy(), a, atol=1e-12)
    out = cygrad.linalg.svd(cygrad.tensor(a))
    assert out.U is out[0] and out.S is out[1] and out.Vh is out[2]


def test_svd_reconstruction_gradient_is_identity():
    a = cygrad.tensor(r(4, 3), requires_grad=True)

    def rebuild(x):
        U, S, Vh = cygrad.linalg.svd(x, full_matrices=False)
        return (U * S.unsqueeze(0)).matmul(Vh)

    assert gradcheck(rebuild, [a]) and gradgradcheck(rebuild, [a])


def test_eigh_and_qr_and_slogdet_results():
    s = r(4, 4)
    s = s + s.T
    w, V = cygrad.linalg.eigh(cygrad.tensor(s))
    np.testing.assert_allclose(w.numpy(), np.linalg.eigvalsh(s), atol=1e-12)
    np.testing.assert_allclose((V * w.unsqueeze(0)).matmul(V.t()).numpy(), s,
                               atol=1e-12)
    out = cygrad.linalg.eigh(cygrad.tensor(s), UPLO="U")
    assert out.eigenvalues is out[0] and out.eigenvectors is out[1]
    Q, R = cygrad.linalg.qr(cygrad.tensor(r(5, 3)), mode="complete")
    assert Q.shape == (5, 5) and R.shape == (5, 3)
    Q, R = cygrad.linalg.qr(cygrad.tensor(r(5, 3)), mode="r")
    assert Q.numel() == 0 and R.shape == (3, 3)
    sign, logabs = cygrad.linalg.slogdet(cygrad.tensor(-np.eye(3)))
    assert sign.item() == -1.0 and logabs.item() == 0.0


def test_eigh_and_cholesky_gradients_match_torch():
    a = r(4, 4)

    def sym(m, t):
        return (t + t.transpose(-1, -2)) / 2

    assert_same(lambda m, t: m.linalg.eigh(sym(m, t))[1] ** 2 + 0, a)
    spd = a @ a.T + 4 * np.eye(4)
    assert_same(lambda m, t: m.linalg.cholesky(sym(m, t)), spd)


def test_old_svd_returns_v_and_old_qr():
    a = r(4, 3)
    U, _S, V = cygrad.svd(cygrad.tensor(a))
    tU, _tS, tV = torch.svd(torch.tensor(a))
    assert V.shape == tuple(tV.shape) and U.shape == tuple(tU.shape)
    np.testing.assert_allclose(np.abs(V.numpy()), np.abs(tV.numpy()), atol=1e-12)
    with pytest.warns(UserWarning):
        tQ, tR = torch.qr(torch.tensor(a), some=False)
    Q, R = cygrad.qr(cygrad.tensor(a), some=False)
    assert Q.shape == tuple(tQ.shape) and R.shape == tuple(tR.shape)


# --- einsum over many equations --------------------------------------------------

EQUATIONS = [
    ("ij->ji", [(2, 3)]), ("ij->", [(2, 3)]), ("ii->", [(3, 3)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 2)]), ("i,i->", [(4,), (4,)]),
    ("i,j->ij", [(2,), (3,)]), ("ij,j->i", [(2, 3), (3,)]),
    ("...i,...i->...", [(2, 3, 4), (3, 4)]), ("bhqd,bhkd->bhqk", [(1, 2, 3, 4),
                                                                  (1, 2, 5, 4)]),
    ("iij,jk->ik", [(2, 2, 3), (3, 2)]), ("ijk->kji", [(2, 3, 4)]),
    ("ab,bc,cd,de->ae", [(2, 3), (3, 2), (2, 4), (4, 2)]), ("i...->...", [(3, 2, 2)]),
    ("Ab,bC", [(2, 3), (3, 4)]), ("ij,kj", [(2, 3), (4, 3)]),
    ("ij,jk->ik", [(2, 1), (3, 4)]),
]


@pytest.mark.parametrize("eq,shapes", EQUATIONS, ids=[e for e, _ in EQUATIONS])
def test_einsum_matches_torch_values_and_gradients(eq, shapes):
    arrays = [r(*s) for s in shapes]
    assert_same(lambda m, *ts: m.einsum(eq, *ts), *arrays)
    ts = [cygrad.tensor(a, requires_grad=True) for a in arrays]
    assert gradgradcheck(lambda *xs: cygrad.einsum(eq, *xs), ts)


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_einsum_random_contractions(data):
    letters = "abcd"
    sizes = {c: data.draw(st.integers(1, 3)) for c in letters}
    n_ops = data.draw(st.integers(1, 3))
    subs = [data.draw(st.text(letters, min_size=0, max_size=3)) for _ in range(n_ops)]
    used = sorted(set("".join(subs)))
    out = "".join(c for c in used if data.draw(st.booleans()))
    eq = ",".join(subs) + "->" + out
    arrays = [rng.standard_normal([sizes[c] for c in s]) for s in subs]
    assert_same(lambda m, *ts: m.einsum(eq, *ts), *arrays)


def test_einsum_sublist_form():
    a, b = r(2, 3), r(3)
    assert_same(lambda m, x, y: m.einsum(x, [0, 1], y, [1], [0]), a, b)


# --- norms and the module ---------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda m, t: m.linalg.norm(t, "fro"),
    lambda m, t: m.linalg.norm(t, "nuc"),
    lambda m, t: m.linalg.norm(t, -2),
    lambda m, t: m.linalg.norm(t, dim=(0, 1), ord=1),
    lambda m, t: m.linalg.norm(t.reshape(-1), 0.5),
    lambda m, t: m.norm(t, p="nuc"),
    lambda m, t: m.norm(t, 3, dim=0, keepdim=True),
    lambda m, t: m.linalg.vector_norm(t, 2, dim=(0, 1), keepdim=True),
    lambda m, t: m.linalg.matrix_norm(t, float("inf"), dim=(1, 0)),
])
def test_norm_variants_match_torch(call):
    assert_same(call, r(3, 4))


def test_vector_norm_dtype_argument():
    x = cygrad.tensor([3.0, 4.0])
    n = cygrad.linalg.vector_norm(x, dtype=cygrad.float64)
    assert n.dtype == cygrad.float64 and n.item() == 5.0


def test_linalg_module_imports_both_ways():
    import cygrad.linalg as L1
    from cygrad import linalg as L2
    assert L1 is L2 is cygrad.linalg
    for name in ("inv", "det", "slogdet", "cholesky", "solve", "svd", "svdvals", "qr",
                 "eigh", "eigvalsh", "norm", "vector_norm", "matrix_norm",
                 "matrix_power", "pinv", "cross", "multi_dot", "vecdot",
                 "LinAlgError", "matmul"):
        assert hasattr(torch.linalg, name), name
        assert hasattr(cygrad.linalg, name), name


def test_multi_dot_and_vecdot_match_torch():
    assert_same(lambda m, a, b, c: m.linalg.multi_dot([a, b, c]), r(3), r(3, 5), r(5))
    assert_same(lambda m, a, b, c, d: m.linalg.multi_dot([a, b, c, d]),
                r(4, 2), r(2, 6), r(6, 3), r(3, 2))
    assert_same(lambda m, a, b: m.linalg.vecdot(a, b), r(3, 4), r(4))


def test_pinv_of_rank_deficient_matrix():
    a = np.outer(r(4), r(3))
    got = cygrad.linalg.pinv(cygrad.tensor(a)).numpy()
    np.testing.assert_allclose(got, np.linalg.pinv(a), atol=1e-10)
    np.testing.assert_allclose(torch.linalg.pinv(torch.tensor(a)).numpy(), got,
                               atol=1e-10)


def test_matrix_power_zero_is_identity_batch():
    a = cygrad.tensor(r(2, 3, 3))
    np.testing.assert_array_equal(cygrad.matrix_power(a, 0).numpy(),
                                  np.broadcast_to(np.eye(3), (2, 3, 3)))


def test_dot_with_integers_and_tensor_method():
    a = cygrad.tensor([1, 2, 3])
    assert a.dot(a).item() == 14 and a.dot(a).dtype == cygrad.int64


@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist_if_necessary",
                                  "use_mm_for_euclid_dist",
                                  "donot_use_mm_for_euclid_dist"])
def test_cdist_matmul_path_matches_torch(mode):
    # more than 25 points: torch (and cygrad) switch to |a|^2 - 2ab + |b|^2
    a, b = r(2, 30, 4), r(27, 4)
    assert_same(lambda m, x, y: m.cdist(x, y, compute_mode=mode), a, b,
                rtol=1e-7, atol=1e-9)
    x = cygrad.tensor(a, requires_grad=True)
    y = cygrad.tensor(b, requires_grad=True)
    assert gradcheck(lambda s, t: cygrad.cdist(s, t, compute_mode=mode), [x, y])


def test_cdist_bad_compute_mode():
    with pytest.raises(ValueError, match="compute_mode"):
        cygrad.cdist(cygrad.zeros(2, 2), cygrad.zeros(2, 2), compute_mode="fast")


@pytest.mark.parametrize("sx,sy", [((2, 3, 4), (4, 5)), ((2, 2, 3, 4), (4, 1)),
                                   ((1, 3, 4), (4, 5)), ((2, 0, 4), (4, 3))])
def test_stack_times_matrix_folds_into_one_product(sx, sy):
    # matmul and F.linear of a stack by a matrix run one GEMM each way; the
    # values and gradients stay torch's, and the double backward holds
    rng = np.random.default_rng(1)
    a, b, w = (rng.standard_normal(s) for s in (sx, sy, (3, sx[-1])))
    for fn, other in ((lambda m, x, y: x @ y, b),
                      (lambda m, x, y: m.nn.functional.linear(x, y), w)):
        (cv, cg), (tv, tg) = both(fn, a, other)
        np.testing.assert_allclose(cv, tv, rtol=1e-12, atol=1e-12)
        for got, want in zip(cg, tg, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        if 0 not in sx:
            ts = [cygrad.tensor(v, requires_grad=True) for v in (a, other)]
            assert gradgradcheck(lambda x, y, f=fn: f(cygrad, x, y), ts)
