"""Elementwise math against torch where the op table's cases cannot say it:
integer dtypes of // and %, the signs of remainder and fmod, div's rounding
modes, bool results, nan_to_num's defaults, special values, the in-place
forms and x ** k's special exponents (values bitwise, gradients)."""

import numpy as np
import pytest

import cygrad

torch = pytest.importorskip("torch")

INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8"]
NEG = np.array([-7, -6, -5, -1, 0, 1, 5, 6, 7])
DIVISORS = np.array([3, -3, 2, -2, 4, -4, 5, -5, 3])


def both(fn, *arrays, **tensor_kw):
    """fn over cygrad and over torch, on the same arrays: two numpy results."""
    out = []
    for m in (cygrad, torch):
        res = fn(m, *[m.tensor(a, **tensor_kw) for a in arrays])
        out.append(res)
    return out


def same(got, want):
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], (
        got.dtype, want.dtype)
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())


# --- integer division and remainders --------------------------------------------------

@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("fn", [
    lambda m, a, b: a // b,
    lambda m, a, b: a % b,
    lambda m, a, b: m.floor_divide(a, b),
    lambda m, a, b: m.remainder(a, b),
    lambda m, a, b: m.fmod(a, b),
    lambda m, a, b: m.div(a, b, rounding_mode="floor"),
    lambda m, a, b: m.div(a, b, rounding_mode="trunc"),
    lambda m, a, b: m.div(a, b),
], ids=["//", "%", "floor_divide", "remainder", "fmod", "div-floor", "div-trunc",
        "div"])
def test_integer_division_keeps_torch_dtypes_and_signs(fn, dtype):
    a, b = NEG.astype(dtype), DIVISORS.astype(dtype)
    same(*both(fn, a, b))


@pytest.mark.parametrize("fn", [
    lambda m, a: a // 2, lambda m, a: a % 2, lambda m, a: 7 // a, lambda m, a: 7 % a,
    lambda m, a: a // 2.5, lambda m, a: a % -2.5, lambda m, a: m.fmod(a, -2),
    lambda m, a: m.div(a, 2, rounding_mode="trunc"),
    lambda m, a: m.div(a, -2, rounding_mode="floor"),
])
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_integer_with_python_numbers(fn, dtype):
    a = np.array([1, 2, 3, 5, 7, 9], dtype)
    same(*both(fn, a))


@pytest.mark.parametrize("fn", [
    lambda m, a: a + 300, lambda m, a: a * -2, lambda m, a: a - 300, lambda m, a: 3 - a,
    lambda m, a: a // -2, lambda m, a: a % 300, lambda m, a: a < 300,
    lambda m, a: a == 257, lambda m, a: a >= -1, lambda m, a: a & -2,
    lambda m, a: 300 | a, lambda m, a: a ^ 2 ** 40, lambda m, a: a * 2 ** 33,
])
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_python_int_outside_the_dtype_wraps_as_torch(fn, dtype):
    # torch casts the Python int to the tensor's dtype (modulo 2**bits)
    a = np.array([0, 1, 5, 100], dtype)
    same(*both(fn, a))


@pytest.mark.parametrize("fn", [
    lambda m, a: a ** -1, lambda m, a: a ** 300, lambda m, a: a ** 2 ** 40,
    lambda m, a: a ** 2 ** 70, lambda m, a: a + 2 ** 70,
])
@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32", "int64"])
def test_integer_scalar_refusals_as_torch(fn, dtype):
    torch = pytest.importorskip("torch")
    a = np.array([1, 2], dtype)
    try:
        fn(torch, torch.tensor(a))
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        with pytest.raises(type(e)):
            fn(cygrad, cygrad.tensor(a))
    else:
        same(*both(fn, a))


@pytest.mark.parametrize("fn", [
    lambda m, a: a // 2, lambda m, a: a % 2, lambda m, a: a & 3, lambda m, a: a | 300,
    lambda m, a: m.fmod(a, 2), lambda m, a: a // m.tensor(2),
])
def test_bool_tensor_with_an_int_promotes_to_int64(fn):
    same(*both(fn, np.array([True, False, True])))
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        cygrad.tensor([True, False]) // True


def test_mixed_integer_dtypes_promote_as_torch():
    a = np.array([5, 200], np.uint8)
    b = np.array([2, -3], np.int8)
    same(*both(lambda m, x, y: m.floor_divide(x, y), a, b))
    same(*both(lambda m, x, y: x % y, a, b))


@pytest.mark.parametrize("op", [
    lambda m, a, b: a // b, lambda m, a, b: a % b, lambda m, a, b: m.fmod(a, b),
    lambda m, a, b: m.div(a, b, rounding_mode="trunc")])
def test_integer_division_by_zero_raises(op):
    a = cygrad.tensor([5, -5])
    b = cygrad.tensor([1, 0])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        op(cygrad, a, b)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        op(torch, torch.tensor([5, -5]), torch.tensor([1, 0]))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn", [
    lambda m, a, b: a // b, lambda m, a, b: a % b, lambda m, a, b: m.fmod(a, b),
    lambda m, a, b: m.div(a, b, rounding_mode="trunc"),
    lambda m, a, b: m.div(a, b, rounding_mode="floor")],
    ids=["//", "%", "fmod", "trunc", "floor"])
def test_float_division_special_values(fn, dtype):
    inf, nan = float("inf"), float("nan")
    a = np.array([5.5, -5.5, 5.5, -5.5, 0.0, -0.0, 7.0, -7.0, inf, nan, 1e30, 3.0,
                  -1e-30, 6.0], dtype)
    b = np.array([2.0, 2.0, -2.0, -2.0, 3.0, 3.0, 0.0, 0.0, 2.0, 2.0, 1e-10, inf,
                  7.0, 0.1], dtype)
    got, want = both(fn, a, b)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    # The sign of zero too (remainder takes the divisor's, fmod the dividend's).
    ok = ~np.isnan(want.numpy())
    np.testing.assert_array_equal(np.signbit(got.numpy()[ok]),
                                  np.signbit(want.numpy()[ok]))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_remainder_and_fmod_gradients_match_torch(dtype):
    rng = np.random.default_rng(0)
    a = rng.uniform(-5, 5, 12).astype(dtype)
    b = np.where(rng.random(12) < 0.5, -1, 1) * rng.uniform(0.5, 2, 12).astype(dtype)
    for fn in (lambda m, x, y: m.remainder(x, y), lambda m, x, y: m.fmod(x, y),
               lambda m, x, y: x % y,
               lambda m, x, y: m.div(x, y, rounding_mode="floor") * y,
               lambda m, x, y: m.div(x, y, rounding_mode="trunc") * y):
        grads = []
        for m in (cygrad, torch):
            x = m.tensor(a, requires_grad=True)
            y = m.tensor(b, requires_grad=True)
            out = fn(m, x, y)
            out.backward(m.ones_like(out))
            grads.append((out.detach().numpy(), x.grad.numpy(), y.grad.numpy()))
        for got, want in zip(*grads):
            np.testing.assert_allclose(got, want, rtol=1e-6)


def test_rounded_division_gradient_is_zero_even_by_zero():
    for mode in ("trunc", "floor"):
        x = cygrad.tensor([5.0, -5.0, 1.0], requires_grad=True)
        y = cygrad.tensor([2.0, 0.0, 0.0], requires_grad=True)
        out = cygrad.div(x, y, rounding_mode=mode)
        assert out.requires_grad
        out.sum().backward()
        assert x.grad.tolist() == [0.0] * 3 and y.grad.tolist() == [0.0] * 3


def test_floor_divide_has_zero_gradient_where_torch_has_none():
    x = cygrad.tensor([5.0, -5.0], requires_grad=True)
    (x // 2).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]


def test_div_rejects_an_unknown_rounding_mode():
    with pytest.raises(RuntimeError, match="rounding_mode"):
        cygrad.div(cygrad.ones(2), 2, rounding_mode="round")


@pytest.mark.parametrize("fn", [lambda m, a: a % a, lambda m, a: a // a,
                                lambda m, a: m.floor(a), lambda m, a: m.round(a),
                                lambda m, a: m.trunc(a), lambda m, a: m.ceil(a)])
def test_bool_rounding_and_remainders_raise_as_torch(fn):
    with pytest.raises(NotImplementedError):
        fn(torch, torch.tensor([True, False]))
    with pytest.raises(NotImplementedError, match="Bool"):
        fn(cygrad, cygrad.tensor([True, False]))


def test_inplace_remainder_and_floor_divide_operators():
    for m in (cygrad, torch):
        a = m.tensor([5.5, -5.5])
        a %= 2
        b = m.tensor([7, -7])
        b //= 2
        c = m.tensor([7.0, -7.0])
        c.div_(2, rounding_mode="trunc")
        if m is cygrad:
            got = (a.tolist(), b.tolist(), str(b.dtype), c.tolist())
        else:
            want = (a.tolist(), b.tolist(), str(b.dtype), c.tolist())
    assert got[:2] == want[:2] and got[3] == want[3]
    assert got[2].split(".")[-1] == want[2].split(".")[-1]


# --- rounding, sign, unary math on special values -------------------------------------

SPECIAL = [float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 0.5, 1.5, 2.5, -0.5,
           -1.5, -2.5, 1e-300, 0.9999999, 3.7, -3.7, 1e30]
UNARY = ["sign", "floor", "ceil", "round", "trunc", "fix", "reciprocal", "sinh",
         "cosh", "tan", "asin", "acos", "atan", "asinh", "acosh", "atanh", "erf",
         "erfc", "erfinv", "exp2", "arcsin", "arccos", "arctan", "arcsinh", "arccosh",
         "arctanh"]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", UNARY)
def test_unary_on_special_values(name, dtype):
    a = np.array(SPECIAL, dtype)
    got, want = both(lambda m, x: getattr(m, name)(x), a)
    exact = name in ("sign", "floor", "ceil", "round", "trunc", "fix", "reciprocal")
    if exact:
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    else:
        np.testing.assert_allclose(got.numpy(), want.numpy(),
                                   rtol=2e-6 if dtype == "float32" else 1e-13)


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
@pytest.mark.parametrize("name", ["sign", "floor", "ceil", "round", "trunc",
                                  "reciprocal", "exp2", "erf", "sinh", "atan"])
def test_unary_integer_and_bool_dtypes(name, dtype):
    a = np.array([0, 1, 2, 5], dtype) if dtype != "bool" else np.array([True, False])
    try:
        want = getattr(torch, name)(torch.tensor(a))
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            getattr(cygrad, name)(cygrad.tensor(a))
        return
    got = getattr(cygrad, name)(cygrad.tensor(a))
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(got.numpy().astype(float), want.numpy().astype(float),
                               rtol=1e-6)


@pytest.mark.parametrize("decimals", [0, 1, 2, 3, -1, -2])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_round_decimals(decimals, dtype):
    a = np.random.default_rng(3).uniform(-500, 500, 40).astype(dtype)
    a[:4] = [0.125, 2.5, -1234.5, 0.0049]
    got, want = both(lambda m, x: m.round(x, decimals=decimals), a)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    x = cygrad.tensor(a, requires_grad=True)
    x.round(decimals=decimals).sum().backward()
    assert not x.grad.numpy().any()


def test_round_decimals_refuses_integers():
    with pytest.raises(NotImplementedError):
        cygrad.round(cygrad.tensor([1234]), decimals=-2)


@pytest.mark.parametrize("name", ["sign", "floor", "ceil", "round", "trunc"])
def test_piecewise_constant_ops_have_zero_gradient_even_for_inf(name):
    x = cygrad.tensor([1.5, -2.5, 0.0], requires_grad=True)
    y = getattr(cygrad, name)(x)
    y.backward(cygrad.tensor([float("inf"), float("nan"), 1.0]))
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


# --- bool results: isnan, isinf, isfinite, logical, bitwise ---------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
@pytest.mark.parametrize("name", ["isnan", "isinf", "isfinite"])
def test_classification(name, dtype):
    vals = [float("nan"), float("inf"), -float("inf"), 0.0, 1.0]
    a = np.array(vals, dtype) if dtype.startswith("float") else np.array(
        [0, 1, 1, 0, 1], dtype)
    got, want = both(lambda m, x: getattr(m, name)(x), a)
    same(got, want)
    assert getattr(cygrad.tensor(a), name)().dtype == cygrad.bool


@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor"])
def test_logical_ops_take_any_dtype(name):
    a = np.array([0.0, 1.5, -2.0, 0.0])
    b = np.array([0, 0, 3, 4])
    same(*both(lambda m, x, y: getattr(m, name)(x, y), a, b))
    same(*both(lambda m, x, y: getattr(x, name)(y), b, a))
    for m in (cygrad, torch):
        with pytest.raises(TypeError):
            getattr(m, name)(m.tensor(a), 3)


@pytest.mark.parametrize("name,op", [("bitwise_and", lambda a, b: a & b),
                                     ("bitwise_or", lambda a, b: a | b),
                                     ("bitwise_xor", lambda a, b: a ^ b)])
def test_bitwise_ops(name, op):
    a = np.array([0b1100, 0b1010, -1, 7])
    b = np.array([0b1010, 0b0110, 5, 0])
    same(*both(lambda m, x, y: getattr(m, name)(x, y), a, b))
    same(*both(lambda m, x, y: op(x, y), a, b))
    same(*both(lambda m, x, y: op(x > 0, y > 0), a, b))
    same(*both(lambda m, x: op(x > 0, True), a))
    same(*both(lambda m, x: op(x, 3), a))
    for m in (cygrad, torch):
        with pytest.raises(NotImplementedError):
            getattr(m, name)(m.tensor([1.0]), m.tensor([1.0]))


def test_logical_and_bitwise_inplace():
    for name in ("logical_and_", "logical_or_", "logical_xor_"):
        got, want = both(lambda m, x, y: getattr(x, name)(y),
                         np.array([0.0, 1.0, 2.0]), np.array([1.0, 0.0, 3.0]))
        same(got, want)
    got, want = both(lambda m, x, y: x.bitwise_xor_(y), np.array([5, 6]),
                     np.array([3, 3]))
    same(got, want)


# --- nan_to_num -----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("kw", [{}, {"nan": 2.0}, {"posinf": 1.0, "neginf": -1.0},
                                {"nan": -1.0, "posinf": 9.0}])
def test_nan_to_num_defaults_per_dtype(dtype, kw):
    vals = [float("nan"), float("inf"), -float("inf"), 1.5, -0.0]
    a = np.array(vals, dtype) if dtype != "int64" else np.array([1, 2, 3])
    same(*both(lambda m, x: m.nan_to_num(x, **kw), a))
    same(*both(lambda m, x: x.nan_to_num(**kw), a))


def test_nan_to_num_gradient_and_inplace():
    vals = np.array([float("nan"), float("inf"), -float("inf"), 1.5])
    for m in (cygrad, torch):
        x = m.tensor(vals, requires_grad=True)
        m.nan_to_num(x, nan=3.0).backward(m.tensor([1.0, 2.0, 3.0, 4.0],
                                                  dtype=m.float64))
        y = m.tensor(vals)
        y.nan_to_num_(posinf=5.0)
        if m is cygrad:
            got = (x.grad.tolist(), y.tolist())
        else:
            want = (x.grad.tolist(), y.tolist())
    assert got == want


# --- lerp, addcmul, addcdiv ---------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("weight", [0.0, 0.25, 0.5, 0.75, 1.0, -0.3, 1.7, "tensor"])
def test_lerp(weight, dtype):
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(3, 4)).astype(dtype), rng.normal(size=(4,)).astype(dtype)
    w = rng.uniform(-0.5, 1.5, (3, 1)).astype(dtype)
    res = []
    for m in (cygrad, torch):
        ta = m.tensor(a, requires_grad=True)
        tb = m.tensor(b, requires_grad=True)
        tw = m.tensor(w, requires_grad=True) if weight == "tensor" else weight
        out = m.lerp(ta, tb, tw)
        out.backward(m.ones_like(out))
        res.append([out, ta.grad, tb.grad] + ([tw.grad] if weight == "tensor" else []))
    tol = {"rtol": 1e-6, "atol": 1e-6} if dtype == "float32" else {"rtol": 1e-13}
    for g, t in zip(*res):
        np.testing.assert_allclose(g.detach().numpy(), t.detach().numpy(), **tol)
    if weight == 1.0:  # exact end at weight 1
        np.testing.assert_array_equal(res[0][0].detach().numpy(),
                                      np.broadcast_to(b, (3, 4)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("weight", [0.3, -0.49, 0.5, 0.7, 1.0, 2.5, "tensor"])
def test_lerp_of_equal_shapes_has_torchs_bits(weight, dtype):
    """Same-shape tensors and a number weight take torch's kernel: one fma
    per element, so values and gradients equal torch's bit for bit (ends,
    infinities and NaN included), and torch's node."""
    rng = np.random.default_rng(3)
    a, b, g = (rng.normal(size=(40, 37)).astype(dtype) for _ in range(3))
    a[0, :4] = [np.inf, -np.inf, np.nan, -0.0]
    w = rng.uniform(-1.0, 2.0, (40, 37)).astype(dtype)
    w[1, :4] = [0.5, -0.5, 1.0, 0.0]
    res = []
    for m in (cygrad, torch):
        ta, tb = m.tensor(a, requires_grad=True), m.tensor(b, requires_grad=True)
        tw = m.tensor(w, requires_grad=True) if weight == "tensor" else weight
        out = m.lerp(ta, tb, tw)
        out.backward(m.tensor(g))
        res.append((out.grad_fn.name(), out.detach().numpy(), ta.grad.numpy(),
                    tb.grad.numpy()) + ((tw.grad.numpy(),) if weight == "tensor" else ()))
    assert res[0][0] == res[1][0]
    for got, want in zip(res[0][1:], res[1][1:]):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("value", [1, 0.5, -0.3, 3])
@pytest.mark.parametrize("name", ["addcmul", "addcdiv"])
def test_addcmul_addcdiv_of_equal_shapes_have_torchs_bits(name, value, dtype):
    """torch's kernels: fma(value * t1, t2, self) and self + (value * t1) / t2;
    values, the three gradients and the node equal torch's bit for bit."""
    rng = np.random.default_rng(4)
    a, b, c, g = (rng.normal(size=(30, 41)).astype(dtype) for _ in range(4))
    if name == "addcdiv":
        c = np.abs(c) + 0.5
    a[0, :3] = [np.inf, np.nan, -0.0]
    res = []
    for m in (cygrad, torch):
        ts = [m.tensor(z, requires_grad=True) for z in (a, b, c)]
        out = getattr(m, name)(*ts, value=value)
        out.backward(m.tensor(g))
        res.append([out.grad_fn.name(), out.detach().numpy()] + [t.grad.numpy() for t in ts])
    assert res[0][0] == res[1][0]
    for got, want in zip(res[0][1:], res[1][1:]):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["add", "sub"])
def test_add_sub_with_alpha_have_torchs_bits(name, dtype):
    """alpha != 1 on two float tensors of one shape: torch's single rounding
    fma(other, alpha, self), with and without gradients, in place (``p.add_(g,
    alpha=-lr)``, other aliasing self too), and torch's node and gradients.
    (Broadcast operands keep the composed ops: torch itself rounds them as
    its vectorized loop or its scalar one, depending on the strides.)"""
    rng = np.random.default_rng(5)
    a, b, g = (rng.normal(size=(30, 41)).astype(dtype) for _ in range(3))
    for alpha in (0.3, -0.01, 2):
        res = []
        for m in (cygrad, torch):
            x, y = m.tensor(a, requires_grad=True), m.tensor(b, requires_grad=True)
            out = getattr(m, name)(x, y, alpha=alpha)
            out.backward(m.tensor(g))
            with m.no_grad():
                plain = getattr(m, name)(x, y, alpha=alpha)
            c, d = m.tensor(a), m.tensor(a)
            getattr(c, name + "_")(m.tensor(b), alpha=alpha)
            getattr(d, name + "_")(d, alpha=alpha)
            res.append((out.grad_fn.name(), out.detach().numpy(), x.grad.numpy(),
                        y.grad.numpy(), plain.numpy(), c.numpy(), d.numpy()))
        assert res[0][0] == res[1][0]
        for got, want in zip(res[0][1:], res[1][1:]):
            np.testing.assert_array_equal(got, want)


def test_ternary_inplace_forms_and_refusals():
    rng = np.random.default_rng(2)
    a, b, c = (rng.normal(size=(2, 3)) for _ in range(3))
    c = np.abs(c) + 0.5
    for name, kw in (("lerp_", None), ("addcmul_", {"value": 0.5}),
                     ("addcdiv_", {"value": -2.0})):
        got, want = [], []
        for m, out in ((cygrad, got), (torch, want)):
            x = m.tensor(a)
            if kw is None:
                getattr(x, name)(m.tensor(b), 0.3)
            else:
                getattr(x, name)(m.tensor(b), m.tensor(c), **kw)
            out.append(x.numpy())
        np.testing.assert_allclose(got[0], want[0], rtol=1e-13)
    with pytest.raises(NotImplementedError):
        cygrad.lerp(cygrad.tensor([1]), cygrad.tensor([3]), 0.5)
    with pytest.raises(RuntimeError, match="Integer division with addcdiv"):
        cygrad.addcdiv(cygrad.tensor([1]), cygrad.tensor([3]), cygrad.tensor([2]))
    same(*both(lambda m, x, y, z: m.addcmul(x, y, z, value=2), np.array([1]),
               np.array([3]), np.array([2])))
    with pytest.raises(RuntimeError, match="broadcast shape"):
        cygrad.ones(3).addcmul_(cygrad.ones(2, 3), cygrad.ones(3))


# --- the in-place unary forms ---------------------------------------------------------

INPLACE = ["neg", "exp", "log", "sqrt", "abs", "sin", "cos", "tanh", "sigmoid",
           "relu", "square", "rsqrt", "sign", "floor", "ceil", "round", "trunc",
           "reciprocal", "erf", "exp2", "sinh", "atan", "erfc", "log1p"]


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_unary_matches_torch_values_and_gradients(name):
    a = np.random.default_rng(4).uniform(0.2, 0.9, (3, 4))
    res = []
    for m in (cygrad, torch):
        leaf = m.tensor(a, requires_grad=True)
        x = leaf * 1.0
        y = getattr(x, name + "_")()
        assert y is x
        x.backward(m.ones_like(x))
        res.append((x.detach().numpy(), leaf.grad.numpy()))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-13)
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-12, atol=1e-14)


def test_inplace_float_result_into_an_integer_tensor_raises():
    for m in (cygrad, torch):
        with pytest.raises(RuntimeError, match="can't be cast"):
            m.tensor([1, 4]).sqrt_()
    same(*both(lambda m, x: x.floor_(), np.array([1, 4])))


def test_inplace_on_a_leaf_that_requires_grad_raises():
    x = cygrad.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError):
        x.exp_()


def test_clip_is_clamp():
    assert cygrad.clip is cygrad.clamp
    same(*both(lambda m, x: m.clip(x, -0.5, 0.5), np.linspace(-1, 1, 7)))


# --- x ** k: torch's special exponents, bitwise ---------------------------------------

EXPONENTS = [0, 1, 2, 3, -1, -2, 0.5, -0.5, 0.0, 1.0, 2.0, 3.0, -1.0, -2.0, 4, -3,
             1.5, 2.5, 0.25]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("k", EXPONENTS)
def test_scalar_power_values_and_gradients(k, dtype):
    a = np.random.default_rng(5).uniform(-2, 2, 50).astype(dtype)
    a[:6] = [0.0, -0.0, float("nan"), float("inf"), -float("inf"), -1.0]
    res = []
    for m in (cygrad, torch):
        x = m.tensor(a, requires_grad=True)
        y = x ** k
        assert type(y.grad_fn).__name__ == "PowBackward0" if m is torch else \
            y.grad_fn.name() == "PowBackward0"
        y.backward(m.ones_like(y))
        res.append((y.detach().numpy(), x.grad.numpy()))
    (got, got_g), (want, want_g) = res
    special = k in (0, 1, 2, 3, -1, -2, 0.5, -0.5)
    if special:   # the same formula as torch: bitwise the same
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == "float32"
                                   else 1e-15)
    if not special:   # pow's gradient at -inf differs (inf, torch NaN)
        got_g, want_g = got_g[5:], want_g[5:]
    np.testing.assert_allclose(got_g, want_g, rtol=2e-6 if dtype == "float32"
                               else 1e-14)
    np.testing.assert_array_equal(np.isnan(got_g), np.isnan(want_g))


@pytest.mark.parametrize("k", [0, 1, 2, 3, -1, -2, 0.5, -0.5])
def test_scalar_power_second_derivative(k):
    from cygrad.autograd import gradgradcheck
    x = cygrad.tensor(np.linspace(0.3, 2.0, 6), requires_grad=True)
    assert gradgradcheck(lambda t: t ** k, (x,))
    xt = torch.tensor(np.linspace(0.3, 2.0, 6), requires_grad=True)
    (gt,) = torch.autograd.grad((xt ** k).sum(), xt, create_graph=True)
    (ggt,) = torch.autograd.grad(gt.sum(), xt, allow_unused=True) if gt.requires_grad \
        else (torch.zeros(6, dtype=torch.float64),)
    (g,) = cygrad.autograd.grad((x ** k).sum(), x, create_graph=True)
    if g.requires_grad:
        (gg,) = cygrad.autograd.grad(g.sum(), x, allow_unused=True)
        gg = cygrad.zeros(6, dtype=cygrad.float64) if gg is None else gg
    else:
        gg = cygrad.zeros(6, dtype=cygrad.float64)
    ggt = torch.zeros(6, dtype=torch.float64) if ggt is None else ggt
    np.testing.assert_allclose(gg.numpy(), ggt.numpy(), rtol=1e-12)


def test_integer_tensor_powers_stay_integer():
    for k in (0, 1, 2, 3):
        same(*both(lambda m, x: x ** k, np.array([-3, -1, 0, 2, 5])))
    same(*both(lambda m, x: x ** -1.0, np.array([1, 2, 4])))
    same(*both(lambda m, x: x ** 0.5, np.array([1, 4, 9])))


@pytest.mark.parametrize("k", [2, 3, -1, -2, 0.5, -0.5, 0, 1, 2.5])
def test_inplace_pow_takes_the_special_exponents(k):
    a = np.random.default_rng(6).uniform(0.1, 3, 64).astype(np.float32)
    res = []
    for m in (cygrad, torch):
        x = m.tensor(a)
        x.pow_(k)
        y = m.tensor(a)
        y **= k
        res.append((x.numpy(), y.numpy()))
    if k in (2.5, 0.5):
        # torch's in-place x ** 0.5 is powf's (1 ulp from its own x ** 0.5,
        # which is sqrt, as cygrad's both are).
        np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-6)
    else:
        np.testing.assert_array_equal(res[0][0], res[1][0])
    np.testing.assert_array_equal(res[0][0], res[0][1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_clamp_bounds_values_gradients_and_node_names(dtype):
    """One number bound runs the table's compiled clamp_min/clamp_max, two
    the fused Clamp; tensor bounds compose.  torch's values, gradients at
    the bounds and at NaN, min > max, and node names, for each."""
    a = np.array([-1.0, 0.0, 0.5, 1.0, np.nan, 2.0], dtype)
    calls = [lambda L, x: x.clamp(0), lambda L, x: x.clamp(max=1),
             lambda L, x: x.clamp(min=L.tensor(0.5, dtype=x.dtype)),
             lambda L, x: x.clamp(0.5, 0.2), lambda L, x: L.clamp(x, min=0.5, max=1),
             lambda L, x: L.clip(x, max=L.tensor([0.0, 1, 1, 0, 0, 1], dtype=x.dtype))]
    for call in calls:
        got = []
        for L in (cygrad, torch):
            x = L.tensor(a, requires_grad=True)
            y = call(L, x)
            y.sum().backward()
            got.append((y.grad_fn.name(), y.detach().numpy(), x.grad.numpy()))
        (n0, y0, g0), (n1, y1, g1) = got
        assert n0 == n1 or dtype == np.float16    # (float16: a rounding node last)
        np.testing.assert_array_equal(y0, y1)
        np.testing.assert_array_equal(g0, g1)
