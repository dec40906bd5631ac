"""x ** k for a Python number k outside torch's special exponents: the
pow_scalar row (cg_pow.h's vectorized pow), against NumPy's (libm's) pow in
ulps and against torch on the special values of C99's pow."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import cygrad
from cygrad._kernels.optable import POWER_EXPONENTS

MAX_ULP = {np.float64: 2.0, np.float32: 1.0}


def _ulps(got, want):
    """Largest |got - want| in ulps of want where want is finite and
    nonzero; elsewhere (0, inf, NaN) got must be want, signs included."""
    got = np.asarray(got)
    want = np.asarray(want)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    plain = np.isfinite(want) & (want != 0)
    special = ~plain & ~nan
    np.testing.assert_array_equal(got[special], want[special])
    np.testing.assert_array_equal(np.signbit(got[special]), np.signbit(want[special]))
    if not plain.any():
        return 0.0
    spacing = np.spacing(np.abs(want[plain]))
    err = np.abs(got[plain].astype(np.float64) - want[plain].astype(np.float64))
    return float(np.max(err / spacing))


def _want(x, k, dtype):
    """The reference: libm's pow in float64, rounded once to float32."""
    with np.errstate(all="ignore"):
        if dtype == np.float32:
            kk = float(np.float32(k))
            return np.power(x.astype(np.float64), kk).astype(np.float32)
        return np.power(x, k)


def _got(x, k):
    return (cygrad.tensor(x) ** k).numpy()


exponents = st.one_of(
    st.floats(-60, 60, allow_nan=False).filter(lambda k: k not in POWER_EXPONENTS),
    st.integers(-40, 40).filter(lambda k: k not in POWER_EXPONENTS),
    st.sampled_from([2.5, 4, -3, 1.7, 1e-9, -1e-9, 700.5, -700.5, 1e5, 2 ** 60]))


def _values(dtype):
    width = 32 if dtype == np.float32 else 64
    return st.one_of(
        st.floats(-4, 4, width=width),
        st.floats(allow_nan=True, allow_infinity=True, width=width),
        # the values just beside 1, rounded to the dtype (hypothesis refuses
        # a sampled value that the array's dtype cannot hold exactly)
        st.sampled_from([float(dtype(v)) for v in
                         (0.0, -0.0, 1.0, -1.0, 0.999999, 1.000001)]))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@settings(max_examples=150, deadline=None)
@given(data=st.data(), k=exponents)
def test_matches_libm_pow_in_ulps(dtype, data, k):
    x = data.draw(hnp.arrays(dtype, st.integers(1, 40), elements=_values(dtype)))
    assert _ulps(_got(x, k), _want(x, k, dtype)) <= MAX_ULP[dtype]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", [2.5, 4, -3, 1.7, -0.7, 37, 123.25])
def test_many_values_in_ulps(dtype, k):
    # Every magnitude (log-uniform, subnormal x included) and sign.
    rng = np.random.default_rng(7)
    tiny = np.finfo(dtype).smallest_subnormal
    mag = np.exp(rng.uniform(np.log(tiny), np.log(np.finfo(dtype).max), 20000))
    x = (mag * rng.choice([-1.0, 1.0], mag.size)).astype(dtype)
    x = np.concatenate([x, rng.uniform(0.5, 2.0, 20000).astype(dtype)])
    assert _ulps(_got(x, k), _want(x, k, dtype)) <= MAX_ULP[dtype]


SPECIAL_X = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 0.5, -0.5, 2.0, -2.0,
             3.0, -3.0, 1e-310, -1e-310, 5e-324, 1e308, -1e308, 1e-30, 0.9999999]
SPECIAL_K = [2.5, -2.5, 4, -3, 3, 5.0, -5.0, 1.7, 7, -7, 1e-300, 1e300, -1e300,
             np.inf, -np.inf, np.nan, 1100.0, -1100.0, 0.25, 2 ** 53 + 2.0,
             -(2 ** 53) - 2.0, 1025, -1075]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_special_values_as_torch(dtype):
    torch = pytest.importorskip("torch")
    with np.errstate(over="ignore"):
        x = np.array(SPECIAL_X, dtype=dtype)
    for k in SPECIAL_K:
        # cygrad rounds the exponent to float32 for a float32 tensor (torch
        # keeps it in double): compare at the exponent both then compute with.
        with np.errstate(over="ignore"):
            kk = float(np.float32(k)) if dtype == "float32" else k
        want = (torch.tensor(x) ** kk).numpy()
        got = _got(x, kk)
        assert _ulps(got, want) <= 2.0, k


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_gradient_as_torch(dtype):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(3).uniform(-2, 2, 50).astype(dtype)
    for k in (2.5, 4, -3, 1.7):
        t = torch.tensor(x, requires_grad=True)
        c = cygrad.tensor(x, requires_grad=True)
        (t ** k).sum().backward()
        y = c ** k
        assert y.grad_fn.name() == "PowBackward0"
        y.sum().backward()
        np.testing.assert_allclose(c.grad.numpy(), t.grad.numpy(), equal_nan=True,
                                   rtol=1e-5 if dtype == "float32" else 1e-12)


def test_gradcheck():
    x = cygrad.tensor(np.random.default_rng(4).uniform(0.3, 2.0, 8),
                      dtype=cygrad.float64, requires_grad=True)
    for k in (2.5, 4, -3, 1.7):
        assert cygrad.autograd.gradcheck(lambda t: t ** k, (x,))
        assert cygrad.autograd.gradgradcheck(lambda t: t ** k, (x,))


def test_strided_and_tensor_exponent():
    x = np.random.default_rng(5).uniform(0.1, 3.0, (6, 5))
    c = cygrad.tensor(x)
    np.testing.assert_allclose((c.t() ** 2.5).numpy(), x.T ** 2.5, rtol=1e-15)
    np.testing.assert_allclose((c ** cygrad.tensor(2.5)).numpy(), x ** 2.5, rtol=1e-15)
    np.testing.assert_allclose(cygrad.pow(c, 1.7).numpy(), x ** 1.7, rtol=1e-15)
