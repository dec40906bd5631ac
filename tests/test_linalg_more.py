"""torch.linalg's long tail against torch on the same inputs: triangular
solves, LU (factor, solve, unpack, the deprecated torch.lu/lu_solve/
triangular_solve), lstsq with each driver, matrix_rank, cond, the ``_ex``
forms, vander, tensorinv/tensorsolve, householder_product, matrix_exp;
values and gradients (float64 1e-10, float32 1e-5), gradcheck, errors."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cygrad
from cygrad.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")

TOL = {np.float64: 1e-10, np.float32: 1e-5}


def run(fn, arrays, dtype=np.float64, grad=True, seed=0):
    """fn(module, *tensors) in both; (outputs, input grads) as NumPy."""
    res = []
    for m in (cygrad, torch):
        ts = [m.tensor(np.asarray(a, dtype), requires_grad=grad) for a in arrays]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(m, *ts)
        outs = out if isinstance(out, tuple) else (out,)
        gs = None
        if grad:
            rng = np.random.default_rng(seed)
            total = 0
            for o in outs:
                if o.is_floating_point() and o.requires_grad:
                    w = m.tensor(rng.standard_normal(tuple(o.shape)).astype(dtype))
                    total = total + (o * w).sum()
            total.backward()
            gs = [None if t.grad is None else t.grad.numpy() for t in ts]
        res.append(([o.detach().numpy() for o in outs], gs))
    return res


def same(fn, *arrays, dtype=np.float64, grad=True):
    tol = TOL[dtype]
    (a, ga), (b, gb) = run(fn, arrays, dtype, grad)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.shape == y.shape and x.dtype == y.dtype, (x.shape, y.shape, x.dtype,
                                                           y.dtype)
        np.testing.assert_allclose(x, y, rtol=tol, atol=tol)
    if grad:
        for x, y in zip(ga, gb):
            assert (x is None) == (y is None)
            if x is not None:
                np.testing.assert_allclose(x, y, rtol=tol, atol=tol)


def raises_like(fn, *arrays, dtype=np.float64):
    errs = []
    for m in (cygrad, torch):
        with pytest.raises(Exception) as info, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(m, *[m.tensor(np.asarray(a, dtype)) for a in arrays])
        errs.append(info.value)
    assert isinstance(errs[0], RuntimeError) == isinstance(errs[1], RuntimeError)
    assert type(errs[0]).__name__.strip("_") == type(errs[1]).__name__.strip("_"), errs
    assert str(errs[0]) == str(errs[1]), errs


RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.standard_normal(shape)


def well(*shape):
    """Well-conditioned square matrices (diagonally dominant)."""
    n = shape[-1]
    return rand(*shape) + 3 * n ** 0.5 * np.eye(n)


# --- solve_triangular, triangular_solve -----------------------------------------------

@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [True, False])
def test_solve_triangular(dtype, upper, left, unit):
    A = well(2, 4, 4)
    B = rand(2, 4, 3) if left else rand(2, 3, 4)
    same(lambda m, a, b: m.linalg.solve_triangular(a, b, upper=upper, left=left,
                                                   unitriangular=unit),
         A, B, dtype=dtype)


def test_solve_triangular_broadcast_big_and_singular():
    same(lambda m, a, b: m.linalg.solve_triangular(a, b, upper=True), well(2, 1, 5, 5),
         rand(3, 5, 2))
    # more rows than one block of the substitution
    same(lambda m, a, b: m.linalg.solve_triangular(a, b, upper=False), well(70, 70),
         rand(70, 3))
    same(lambda m, a, b: m.linalg.solve_triangular(a, b, upper=True),
         np.zeros((2, 2)), np.ones((2, 1)), grad=False)


def test_solve_triangular_gradcheck():
    A = cygrad.tensor(well(3, 3), requires_grad=True)
    B = cygrad.tensor(rand(3, 2), requires_grad=True)
    for upper in (True, False):
        f = (lambda a, b: cygrad.linalg.solve_triangular(a, b, upper=upper))
        assert gradcheck(f, (A, B)) and gradgradcheck(f, (A, B))


@pytest.mark.parametrize("call", [
    lambda m, a, b: m.linalg.solve_triangular(a, b[:2], upper=True),
    lambda m, a, b: m.linalg.solve_triangular(a[:, :2], b, upper=True),
    lambda m, a, b: m.linalg.solve_triangular(a, b[:, 0], upper=True),
], ids=["rows", "square", "vector"])
def test_solve_triangular_errors(call):
    raises_like(call, well(3, 3), rand(3, 1))


@pytest.mark.parametrize("upper,transpose,unit", [(True, False, False),
                                                 (False, True, False),
                                                 (True, True, True)])
def test_triangular_solve_deprecated(upper, transpose, unit):
    same(lambda m, b, a: m.triangular_solve(b, a, upper, transpose, unit),
         rand(3, 2), well(3, 3))
    with pytest.warns(UserWarning, match="torch.triangular_solve is deprecated"):
        cygrad.triangular_solve(cygrad.ones(2, 1), cygrad.eye(2))
    same(lambda m, b, a: b.triangular_solve(a, upper=False), rand(2, 3, 2), well(3, 3))


# --- LU -------------------------------------------------------------------------------

SHAPES = [(3, 3), (2, 4, 4), (5, 3), (3, 5), (2, 1, 4, 2)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_lu_factor_and_lu(shape, dtype):
    a = rand(*shape)
    same(lambda m, x: tuple(m.linalg.lu_factor(x)), a, dtype=dtype)
    same(lambda m, x: tuple(m.linalg.lu_factor_ex(x)), a, dtype=dtype)
    same(lambda m, x: tuple(m.linalg.lu(x)), a, dtype=dtype)
    same(lambda m, x: tuple(m.lu_unpack(*m.linalg.lu_factor(x))), a, dtype=dtype)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_lu_gradcheck(shape):
    x = cygrad.tensor(rand(*shape), requires_grad=True)
    assert gradcheck(lambda x: cygrad.linalg.lu_factor(x).LU, (x,))
    assert gradcheck(lambda x: tuple(cygrad.linalg.lu(x))[1:], (x,))


def test_lu_of_singular_matrices():
    same(lambda m, x: tuple(m.linalg.lu_factor_ex(x)), np.zeros((3, 3)), grad=False)
    same(lambda m, x: tuple(m.linalg.lu_factor_ex(x)), [[1.0, 2], [2, 4]], grad=False)
    same(lambda m, x: tuple(m.linalg.lu(x)), [[1.0, 2], [2, 4]], grad=False)
    raises_like(lambda m, x: m.linalg.lu_factor(x), np.zeros((3, 3)))
    raises_like(lambda m, x: m.linalg.lu_factor(x), np.zeros((2, 3, 3)))
    raises_like(lambda m, x: m.linalg.lu_factor_ex(x, check_errors=True),
                np.zeros((3, 3)))
    raises_like(lambda m, x: m.linalg.lu_factor(x, pivot=False), rand(3, 3))
    raises_like(lambda m, x: m.linalg.lu_factor(x), rand(3))


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [True, False])
def test_lu_solve(left, adjoint):
    a, b = well(2, 4, 4), (rand(2, 4, 3) if left else rand(2, 3, 4))

    def f(m, x, y):
        LU, piv = m.linalg.lu_factor(x)
        return m.linalg.lu_solve(LU, piv, y, left=left, adjoint=adjoint)
    same(f, a, b)
    LU, piv = cygrad.linalg.lu_factor(cygrad.tensor(a))
    LU.requires_grad_(True)
    B = cygrad.tensor(b, requires_grad=True)
    assert gradcheck(lambda L, y: cygrad.linalg.lu_solve(L, piv, y, left=left,
                                                         adjoint=adjoint), (LU, B))


def test_torch_lu_and_lu_solve_deprecated():
    same(lambda m, x, b: m.lu_solve(b, *m.lu(x)), well(3, 3), rand(3, 2))
    same(lambda m, x: tuple(x.lu(get_infos=True)), rand(2, 3, 3))
    with pytest.warns(UserWarning, match="torch.lu is deprecated"):
        cygrad.lu(cygrad.eye(2))
    same(lambda m, x: tuple(m.lu_unpack(*m.linalg.lu_factor(x), unpack_data=False)),
         rand(3, 3), grad=False)


# --- lstsq, matrix_rank, cond ---------------------------------------------------------

@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("shape", [(5, 3), (3, 3), (2, 6, 4)], ids=str)
def test_lstsq(driver, shape):
    b_shape = shape[:-1] + (2,)
    a, b = rand(*shape), rand(*b_shape)
    same(lambda m, x, y: tuple(m.linalg.lstsq(x, y, driver=driver)), a, b, grad=False)
    # gradients through the solution and the residuals (torch gives none
    # through the singular values)
    same(lambda m, x, y: tuple(m.linalg.lstsq(x, y, driver=driver))[:2], a, b)
    same(lambda m, a, b: m.linalg.lstsq(a, b, driver=driver).solution,
         rand(*shape), rand(*shape[:-1]), dtype=np.float32)


def test_lstsq_rank_deficient_and_gradcheck():
    a = np.ones((5, 3))
    (x, _), (y, _) = run(lambda m, a, b: tuple(m.linalg.lstsq(a, b))[:3],
                         [a, rand(5, 2)], grad=False)
    for u, v in zip(x, y):
        np.testing.assert_allclose(u, v, rtol=1e-10, atol=1e-10)
    A = cygrad.tensor(rand(5, 3), requires_grad=True)
    B = cygrad.tensor(rand(5, 2), requires_grad=True)
    assert gradcheck(lambda a, b: cygrad.linalg.lstsq(a, b).solution, (A, B))


@pytest.mark.parametrize("call", [
    lambda m, a, b: m.linalg.lstsq(a, b[:4]),
    lambda m, a, b: m.linalg.lstsq(a, b, driver="foo"),
    lambda m, a, b: m.linalg.lstsq(a, b.float()),
], ids=["rows", "driver", "dtype"])
def test_lstsq_errors(call):
    raises_like(call, rand(5, 3), rand(5, 2))


def test_matrix_rank():
    for fn in (lambda m, x: m.linalg.matrix_rank(x),
               lambda m, x: m.linalg.matrix_rank(x, hermitian=True),
               lambda m, x: m.linalg.matrix_rank(x, atol=0.5),
               lambda m, x: m.linalg.matrix_rank(x, rtol=0.05),
               lambda m, x: m.linalg.matrix_rank(x, atol=0.1, rtol=0.2),
               lambda m, x: m.linalg.matrix_rank(x, tol=0.5)):
        for a in (np.diag([1.0, 0.1, 0.01]), np.ones((3, 3)), rand(2, 4, 3),
                  np.zeros((2, 2))):
            if "hermitian" in fn.__code__.co_names or a.shape[-1] != a.shape[-2]:
                a = a @ np.swapaxes(a, -1, -2)
            same(fn, a, grad=False)
    raises_like(lambda m, x: m.linalg.matrix_rank(x), rand(3))


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", math.inf, -math.inf, 1, -1])
def test_cond(p):
    # torch's own backward fails for the p that go through inv_ex (it
    # modifies a saved tensor), so gradients are compared for p = 2, -2 only
    # and gradchecked for the others
    same(lambda m, a: m.linalg.cond(a, p), well(2, 3, 3), grad=p in (None, 2, -2))
    A = cygrad.tensor(well(3, 3), requires_grad=True)
    assert gradcheck(lambda a: cygrad.linalg.cond(a, p), (A,))
    same(lambda m, a: m.linalg.cond(a, p), np.zeros((2, 2)), grad=False)
    if p in (None, 2, -2):
        same(lambda m, a: m.linalg.cond(a, p), rand(2, 3))
    else:
        raises_like(lambda m, a: m.linalg.cond(a, p), rand(2, 3))


# --- the _ex forms --------------------------------------------------------------------

def test_inv_ex_solve_ex_cholesky_ex():
    same(lambda m, a: tuple(m.linalg.inv_ex(a)), well(2, 3, 3))
    same(lambda m, a: tuple(m.linalg.inv_ex(a)),
         np.stack([np.eye(2), np.zeros((2, 2))]), grad=False)
    same(lambda m, a, b: tuple(m.linalg.solve_ex(a, b)), well(3, 3), rand(3))
    same(lambda m, a, b: tuple(m.linalg.solve_ex(a, b, left=False)), well(3, 3),
         rand(2, 3))
    same(lambda m, a, b: tuple(m.linalg.solve_ex(a, b)), np.zeros((2, 2)),
         np.ones(2), grad=False)
    spd = well(2, 3, 3)
    spd = spd @ np.swapaxes(spd, -1, -2)
    same(lambda m, a: tuple(m.linalg.cholesky_ex(a)), spd)
    same(lambda m, a: tuple(m.linalg.cholesky_ex(a, upper=True)), spd)
    same(lambda m, a: tuple(m.linalg.cholesky_ex(a)), -np.eye(2), grad=False)
    raises_like(lambda m, a: m.linalg.inv_ex(a, check_errors=True), np.zeros((2, 2)))
    raises_like(lambda m, a: m.linalg.cholesky_ex(a, check_errors=True), -np.eye(2))
    raises_like(lambda m, a: m.linalg.solve_ex(a, a[0], check_errors=True),
                np.zeros((2, 2)))


def test_linalg_errors_are_linalg_errors():
    with pytest.raises(cygrad.linalg.LinAlgError):
        cygrad.linalg.inv_ex(cygrad.zeros(2, 2), check_errors=True)
    assert issubclass(cygrad.linalg.LinAlgError, RuntimeError)


# --- vander, diagonal, tensorinv, tensorsolve, householder_product, matrix_exp --------

def test_vander_and_diagonal():
    same(lambda m, x: m.linalg.vander(x), rand(4))
    same(lambda m, x: m.linalg.vander(x, N=6), [0.0, 1.5, -2.0])
    same(lambda m, x: m.linalg.vander(x, N=2), rand(2, 3))
    (a, _), (b, _) = run(lambda m, x: m.linalg.vander(x.long()), [[1.0, 2, 3]],
                         grad=False)
    assert a[0].dtype == b[0].dtype == np.int64
    np.testing.assert_array_equal(a[0], b[0])
    for n in (1, 0):
        raises_like(lambda m, x: m.linalg.vander(x, N=n), [1.0, 2.0])
    raises_like(lambda m, x: m.linalg.vander(x), 1.0)
    same(lambda m, x: m.linalg.diagonal(x), rand(2, 3, 4))
    same(lambda m, x: m.linalg.diagonal(x, offset=1, dim1=0, dim2=2), rand(2, 3, 4))


def test_tensorinv_and_tensorsolve():
    same(lambda m, a: m.linalg.tensorinv(a), well(24, 24).reshape(4, 6, 8, 3))
    same(lambda m, a: m.linalg.tensorinv(a, ind=1), well(6, 6).reshape(6, 2, 3))
    same(lambda m, a, b: m.linalg.tensorsolve(a, b), well(6, 6).reshape(2, 3, 6),
         rand(2, 3))
    same(lambda m, a, b: m.linalg.tensorsolve(a, b, dims=(0, 2)),
         np.moveaxis(well(24, 24).reshape(4, 3, 2, 6, 4), (3, 4), (0, 2)),
         rand(4, 3, 2))
    raises_like(lambda m, a: m.linalg.tensorinv(a, ind=1), rand(2, 3, 4))
    raises_like(lambda m, a: m.linalg.tensorinv(a, ind=0), rand(2, 2))
    raises_like(lambda m, a: m.linalg.tensorinv(a), rand(4, 2, 2))


@pytest.mark.parametrize("shape,k", [((4, 3), 2), ((4, 3), 3), ((2, 5, 5), 5)])
def test_householder_product(shape, k):
    same(lambda m, a, t: m.linalg.householder_product(a, t), rand(*shape),
         rand(*shape[:-2], k))
    A = cygrad.tensor(rand(*shape), requires_grad=True)
    tau = cygrad.tensor(rand(*shape[:-2], k), requires_grad=True)
    assert gradcheck(cygrad.linalg.householder_product, (A, tau))


def test_householder_product_errors():
    raises_like(lambda m, a, t: m.linalg.householder_product(a.mT, t), rand(4, 3),
                rand(2))
    raises_like(lambda m, a, t: m.linalg.householder_product(a, t), rand(4, 3),
                rand(4))


def test_matrix_exp():
    same(lambda m, a: m.linalg.matrix_exp(a), rand(2, 4, 4))
    same(lambda m, a: m.matrix_exp(a), 5 * rand(3, 3))
    same(lambda m, a: m.linalg.matrix_exp(a), rand(3, 3), dtype=np.float32)


# --- hypothesis over shapes -----------------------------------------------------------

@settings(max_examples=20, deadline=None)
@given(batch=st.lists(st.integers(1, 2), max_size=2), m=st.integers(1, 5),
       n=st.integers(1, 5))
def test_lu_any_shape(batch, m, n):
    a = np.random.default_rng(m * 7 + n).standard_normal(tuple(batch) + (m, n))
    same(lambda mod, x: tuple(mod.linalg.lu(x)), a)


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 6), k=st.integers(1, 3), upper=st.booleans(),
       left=st.booleans())
def test_solve_triangular_any_shape(n, k, upper, left):
    rng = np.random.default_rng(n * 10 + k)
    a = rng.standard_normal((n, n)) + 3 * n * np.eye(n)
    b = rng.standard_normal((n, k) if left else (k, n))
    same(lambda m, x, y: m.linalg.solve_triangular(x, y, upper=upper, left=left), a, b)


# --- ldl_factor, ldl_solve ----------------------------------------------------------

def _sym(rng, shape, small_diag):
    a = rng.standard_normal(shape)
    a = a + np.swapaxes(a, -1, -2)
    if small_diag:          # forces 2x2 pivots and interchanges
        n = shape[-1]
        a[..., np.arange(n), np.arange(n)] *= 1e-2
    return a


@settings(max_examples=30, deadline=None)
@given(batch=st.lists(st.integers(1, 2), max_size=2), n=st.integers(1, 9),
       small_diag=st.booleans(), seed=st.integers(0, 1000))
def test_ldl_factor_and_solve(batch, n, small_diag, seed):
    rng = np.random.default_rng(seed)
    a = _sym(rng, tuple(batch) + (n, n), small_diag)
    b = rng.standard_normal(tuple(batch) + (n, 2))
    same(lambda m, x: tuple(m.linalg.ldl_factor_ex(x)), a, grad=False)

    def solve(m, x, y):
        LD, piv = m.linalg.ldl_factor(x)
        return m.linalg.ldl_solve(LD, piv, y)
    same(solve, a, b, grad=False)
    if n < 4:
        same(solve, a, b, grad=False, dtype=np.float32)


def test_ldl_broadcast_info_and_errors():
    rng = np.random.default_rng(3)
    a, b = _sym(rng, (4, 4), True), rng.standard_normal((3, 4, 1))

    def solve(m, x, y):
        return m.linalg.ldl_solve(*m.linalg.ldl_factor(x), y)
    same(solve, a, b, grad=False)
    same(lambda m, x: tuple(m.linalg.ldl_factor_ex(x)), np.zeros((2, 2)), grad=False)
    raises_like(lambda m, x: m.linalg.ldl_factor(x), rand(3, 2))
    raises_like(lambda m, x, y: solve(m, x, y[..., :3, :]), a, b)
    # torch's own message for a singular D is an internal assert; cygrad's
    # is a LinAlgError that says what failed
    with pytest.raises(cygrad.linalg.LinAlgError, match="D is singular"):
        cygrad.linalg.ldl_factor(cygrad.zeros(2, 2))
    for m in (cygrad, torch):
        x = m.tensor(a, requires_grad=True)
        with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_"
                           "factor_ex is not implemented"):
            m.linalg.ldl_factor(x).LD.sum().backward()
