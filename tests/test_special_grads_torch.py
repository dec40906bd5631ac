"""Gradients and shapes of the special functions and Cholesky-based solves
where they used to part from torch: xlogy/xlog1py at x == 0, the special
functions on 0-d tensors, and the factor's gradient of cholesky_solve and
cholesky_inverse (torch differentiates L L^T as if every entry of L counted,
although only its triangle is read)."""

import numpy as np
import pytest

import cygrad

torch = pytest.importorskip("torch")

X = [0.0, 0.0, 1.0, 0.0, 0.0, 2.0, 0.0, 3.0]
Y = [2.0, 0.0, 3.0, float("nan"), -1.0, -1.0, -2.0, 0.0]
G = [2.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0]


@pytest.mark.parametrize("name", ["xlogy", "special.xlog1py"])
def test_xlogy_gradients_at_zero(name):
    def run(m):
        fn = m.xlogy if name == "xlogy" else m.special.xlog1py
        x = m.tensor(X, dtype=m.float64, requires_grad=True)
        y = m.tensor(Y, dtype=m.float64, requires_grad=True)
        out = fn(x, y)
        out.backward(m.tensor(G, dtype=m.float64))
        return out.detach().numpy(), x.grad.numpy(), y.grad.numpy()
    for got, want in zip(run(cygrad), run(torch), strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["ndtri", "log_ndtr", "erfcx", "ndtr", "i0e", "i1",
                                  "i1e", "entr", "sinc", "digamma", "gammaln"])
def test_special_functions_take_0d_tensors(name):
    def run(m):
        x = m.tensor(0.3, dtype=m.float64, requires_grad=True)
        out = getattr(m.special, name)(x)
        out.backward()
        return tuple(out.shape), out.item(), x.grad.item()
    got, want = run(cygrad), run(torch)
    assert got[0] == want[0]
    np.testing.assert_allclose(got[1:], want[1:], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("fname", ["cholesky_solve", "cholesky_inverse"])
def test_cholesky_factor_gradient_covers_every_entry(fname, upper):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 4))
    factor = np.linalg.cholesky(a @ a.T + 4 * np.eye(4))
    factor = factor.T.copy() if upper else factor
    b = rng.standard_normal((4, 3))

    def run(m):
        f = m.tensor(factor, requires_grad=True)
        rhs = m.tensor(b, requires_grad=True)
        out = m.cholesky_solve(rhs, f, upper=upper) if fname == "cholesky_solve" \
            else m.cholesky_inverse(f, upper=upper)
        out.backward(m.ones_like(out))
        return out.detach().numpy(), f.grad.numpy()
    for got, want in zip(run(cygrad), run(torch), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
