"""float32 elementwise kernels: the vectorized math of cg_math.h and float arithmetic.

float32 rows of log, sin, cos and pow compute in double with branch-free
polynomials (libm only for elements outside their domain, decided per block
of 256), and round once; they must give the float32 value of the float64
function (NumPy's, i.e. the platform libm's) to the last bit, up to a rare
1-ULP tie.  exp, tanh, sigmoid and silu compute in float lanes: a few ULPs
(IN_LANES).  Rows of exact operations (+ - * / sqrt, compares,
selects) compute in float: bit-equal to NumPy's float32 arithmetic.  The
unit-stride loops (AVX2 build) and the strided loops must agree bitwise.
"""

import numpy as np
import pytest

import cygrad
from cygrad._kernels import optable

F32 = np.float32
SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-38, -1e-38,
           3.4e38, -3.4e38, 1.0, -1.0, 0.5, 20.0, -20.0, 85.9, -85.9, 86.0, -86.0,
           88.7, -88.7, 89.0, -104.0, 524288.0, -524288.0, 524289.0, 1e30, -1e30]


def _inputs(seed=0, n=20_000):
    """Every magnitude from 1e-30 to 1e30, the special values, and each
    special value also alone in an otherwise ordinary block of 256."""
    rng = np.random.default_rng(seed)
    parts = [rng.standard_normal(n) * s for s in
             (1e-30, 1e-8, 1e-3, 0.1, 1.0, 3.0, 10.0, 100.0, 1e4, 1e6)]
    x = np.concatenate(parts + [SPECIAL]).astype(F32)
    mixed = rng.standard_normal(256 * len(SPECIAL)).astype(F32)
    mixed[::256] = SPECIAL
    return np.concatenate([x, mixed])


def _ulps(got, want):
    """ULP distance of two float32 arrays (0 where both are NaN)."""
    def ordered(a):
        i = a.astype(F32).view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    d = np.abs(ordered(got) - ordered(want))
    return np.where(np.isnan(got) & np.isnan(want), 0, d)


def _assert_float32_of_float64(got, want64, rare=True):
    """Within 1 ULP of the float32 rounding of want64; with ``rare``, equal
    to it but for ties (a value computed in double and rounded once)."""
    with np.errstate(all="ignore"):
        want = want64.astype(F32)
    u = _ulps(got, want)
    assert u.max() <= 1, (got[u > 1][:5], want[u > 1][:5])
    if rare:
        assert np.count_nonzero(u) <= max(2, u.size // 10_000)


# The rows whose float32 forward uses cg_math.h's fast functions.
UNARY = {r.name: r.ref for r in optable.UNARY if "fwd" in r.fast}
# Those computed in float lanes (elementwise.pyx.tp's LANES): within this many
# ULPs of the rounded float64 value, not rounded once (tests/test_f32_math.py
# sweeps them over every magnitude at every SIMD level).
IN_LANES = {"exp": 2, "sigmoid": 3, "tanh": 3, "silu": 4}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_forward_is_the_float64_function_rounded(name):
    x = _inputs()
    got = getattr(cygrad, name)(cygrad.tensor(x)).numpy()
    with np.errstate(all="ignore"):
        want = UNARY[name](x.astype(np.float64))
    if name in IN_LANES:
        with np.errstate(all="ignore"):
            assert _ulps(got, want.astype(F32)).max() <= IN_LANES[name]
    else:
        _assert_float32_of_float64(got, want)
    # signs of zeros and NaN as the reference (tanh(-0) = -0, sin(-0) = -0)
    special = got[len(x) - 256 * len(SPECIAL) - len(SPECIAL):][:len(SPECIAL)]
    with np.errstate(all="ignore"):
        ref = UNARY[name](np.array(SPECIAL, F32).astype(np.float64)).astype(F32)
    np.testing.assert_array_equal(np.isnan(special), np.isnan(ref))
    num = ~np.isnan(ref)          # (a NaN's sign bit means nothing)
    np.testing.assert_array_equal(np.signbit(special[num]), np.signbit(ref[num]))


@pytest.mark.parametrize("name", sorted(UNARY))
def test_strided_and_contiguous_agree_bitwise(name):
    x = _inputs(seed=1)
    both = np.stack([x, -x], axis=1)          # column 0 has stride 2
    f = getattr(cygrad, name)
    contiguous = f(cygrad.tensor(x)).numpy()
    strided = f(cygrad.tensor(both)[:, 0]).numpy()
    np.testing.assert_array_equal(strided.view(np.int32), contiguous.view(np.int32))


@pytest.mark.parametrize("name, deriv", [
    ("sin", np.cos), ("cos", lambda v: -np.sin(v)), ("exp", np.exp),
    ("tanh", lambda v: 1 - np.tanh(v) ** 2),
])
def test_unary_backward_in_the_fast_path(name, deriv):
    rng = np.random.default_rng(2)
    x0 = (rng.standard_normal(5000) * 4).astype(F32)
    x0[::700] = [1e7, -1e7, np.nan, 3e5, -0.0, 1e-30, 50.0, -50.0][:len(x0[::700])]
    g0 = rng.standard_normal(5000).astype(F32)
    x = cygrad.tensor(x0, requires_grad=True)
    out = getattr(cygrad, name)(x)
    out.backward(cygrad.tensor(g0))
    got = x.grad.numpy()
    x64, g64 = x0.astype(np.float64), g0.astype(np.float64)
    with np.errstate(all="ignore"):
        if name in ("exp", "tanh"):   # the kernels use the saved forward y
            y = out.detach().numpy().astype(np.float64)
            want = g64 * (y if name == "exp" else 1 - y * y)
        else:
            want = g64 * deriv(x64)
    _assert_float32_of_float64(got, want)


def _pow_inputs():
    rng = np.random.default_rng(3)
    a = np.abs(rng.standard_normal(20_000)).astype(F32) * F32(3)
    b = (rng.standard_normal(20_000) * 4).astype(F32)
    edge_a = [0, 0, 0, -2, -2, -2, np.inf, np.inf, np.nan, 1, 2, 1e-30, 1e30,
              -0.0, 2, 0.5, 1e-45, 3e38, 1, -8]
    edge_b = [0, -1, 2, 0.5, 2, 3, 1, -1, 2, np.nan, 200, 2, 3, -1, -200, 1e9,
              0.5, 1.5, np.inf, 1 / 3]
    mixed_a = np.abs(rng.standard_normal(256 * len(edge_a))).astype(F32) + F32(0.5)
    mixed_b = rng.standard_normal(256 * len(edge_a)).astype(F32)
    mixed_a[::256], mixed_b[::256] = edge_a, edge_b
    return (np.concatenate([a, np.array(edge_a, F32), mixed_a]),
            np.concatenate([b, np.array(edge_b, F32), mixed_b]))


def test_pow_forward_and_base_gradient():
    a0, b0 = _pow_inputs()
    a = cygrad.tensor(a0, requires_grad=True)
    y = cygrad.pow(a, cygrad.tensor(b0))
    a64, b64 = a0.astype(np.float64), b0.astype(np.float64)
    with np.errstate(all="ignore"):
        _assert_float32_of_float64(y.detach().numpy(), np.power(a64, b64))
        y.backward(cygrad.ones_like(y))
        want = np.where(b64 == 0, 0.0, b64 * np.power(a64, b64 - 1))
    # b * y / a with y rounded to float32: within 1 ULP, not always equal
    _assert_float32_of_float64(a.grad.numpy(), want, rare=False)


def test_pow_exponent_gradient():
    a0, b0 = _pow_inputs()
    b = cygrad.tensor(b0, requires_grad=True)
    y = cygrad.pow(cygrad.tensor(a0), b)
    y.backward(cygrad.ones_like(y))
    a64 = a0.astype(np.float64)
    y64 = y.detach().numpy().astype(np.float64)
    with np.errstate(all="ignore"):
        want = np.where((a64 == 0) & (b0 >= 0), 0.0, y64 * np.log(a64))
    _assert_float32_of_float64(b.grad.numpy(), want)


def test_pow_with_a_scalar_exponent_and_a_scalar_base():
    a0, _ = _pow_inputs()
    with np.errstate(all="ignore"):
        _assert_float32_of_float64((cygrad.tensor(a0) ** 2.5).numpy(),
                                   np.power(a0.astype(np.float64), 2.5))
        _assert_float32_of_float64((1.5 ** cygrad.tensor(a0)).numpy(),
                                   np.power(1.5, a0.astype(np.float64)))


EXACT = {
    "add": (lambda a, b: a + b, np.add), "sub": (lambda a, b: a - b, np.subtract),
    "mul": (lambda a, b: a * b, np.multiply), "div": (lambda a, b: a / b, np.divide),
    "maximum": (cygrad.maximum, np.maximum), "minimum": (cygrad.minimum, np.minimum),
}


@pytest.mark.parametrize("name", sorted(EXACT))
def test_exact_binary_rows_compute_in_float(name):
    # NumPy's float32 arithmetic is IEEE float: the kernels must equal it
    # bit for bit (computing in double and rounding would too for one
    # operation; the backward below tells the two apart).
    rng = np.random.default_rng(4)
    a0 = _inputs(seed=5)
    b0 = rng.permutation(a0)
    ours, ref = EXACT[name]
    with np.errstate(all="ignore"):
        want = ref(a0, b0)
    got = ours(cygrad.tensor(a0), cygrad.tensor(b0)).numpy()
    np.testing.assert_array_equal(got.view(np.int32)[~np.isnan(want)],
                                  want.view(np.int32)[~np.isnan(want)])
    assert np.array_equal(np.isnan(got), np.isnan(want))


def test_div_backward_is_float_arithmetic_as_torch():
    # torch: grad_b = -g * ((a / b) / b), each step rounded to float32.
    rng = np.random.default_rng(6)
    a0 = rng.standard_normal(10_000).astype(F32)
    b0 = (rng.standard_normal(10_000) + F32(3)).astype(F32)
    g0 = rng.standard_normal(10_000).astype(F32)
    a, b = cygrad.tensor(a0, requires_grad=True), cygrad.tensor(b0, requires_grad=True)
    (a / b).backward(cygrad.tensor(g0))
    np.testing.assert_array_equal(b.grad.numpy(), -g0 * ((a0 / b0) / b0))
    np.testing.assert_array_equal(a.grad.numpy(), g0 / b0)


def test_sqrt_is_float_sqrt():
    x0 = np.abs(_inputs(seed=7))
    np.testing.assert_array_equal(cygrad.sqrt(cygrad.tensor(x0)).numpy(), np.sqrt(x0))


def test_float32_fast_paths_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(8)
    x0 = (rng.standard_normal(4096) * 5).astype(F32)
    p0 = np.abs(x0) + F32(0.5)
    for name in sorted(UNARY):
        arg = p0 if name == "log" else x0
        got = getattr(cygrad, name)(cygrad.tensor(arg)).numpy()
        if name == "gelu_tanh":
            # torch's float32 0.5 x (1 + tanh(u)) cancels where tanh(u) ~ -1;
            # cygrad's sigmoid form does not: compare with torch's float64
            want = torch.nn.functional.gelu(torch.from_numpy(arg).double(),
                                            approximate="tanh").float().numpy()
        else:
            fn = torch.nn.functional.silu if name == "silu" else getattr(torch, name)
            want = fn(torch.from_numpy(arg)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7, err_msg=name)
    got = cygrad.pow(cygrad.tensor(p0), cygrad.tensor(x0 / 4)).numpy()
    want = torch.pow(torch.from_numpy(p0), torch.from_numpy(x0 / 4)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6)
