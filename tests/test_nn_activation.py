"""Activation modules and their functional forms against torch: values and
input (and PReLU weight) gradients in float64 and float32, the kinks at
every boundary, in-place forms, gradcheck/gradgradcheck, errors, reprs."""

import numpy as np
import pytest

import cygrad
import cygrad.nn.functional as F
from cygrad import nn
from cygrad.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")

# (class name, constructor args); every one also runs in place when it can
MODULES = [
    ("ReLU", ()), ("ReLU6", ()), ("SiLU", ()), ("Mish", ()), ("GELU", ()),
    ("GELU", ("tanh",)), ("SELU", ()), ("CELU", ()), ("CELU", (0.5,)), ("ELU", ()),
    ("ELU", (0.5,)), ("LeakyReLU", ()), ("LeakyReLU", (0.2,)), ("Softplus", ()),
    ("Softplus", (2.0, 1.0)), ("Softsign", ()), ("Hardtanh", ()),
    ("Hardtanh", (-2.0, 3.0)), ("Hardsigmoid", ()), ("Hardswish", ()),
    ("LogSigmoid", ()), ("Tanhshrink", ()), ("Softshrink", ()), ("Hardshrink", (0.3,)),
    ("Threshold", (0.1, -2.0)), ("Tanh", ()), ("Sigmoid", ()), ("Softmin", (1,)),
    ("Softmax", (0,)), ("LogSoftmax", (1,)), ("GLU", ()), ("GLU", (1,)),
    ("PReLU", ()), ("PReLU", (4, 0.1)), ("Softmax2d", ()),
]
INPLACE = {"ReLU", "ReLU6", "SiLU", "Mish", "SELU", "CELU", "ELU", "LeakyReLU",
           "Hardtanh", "Hardsigmoid", "Hardswish", "Threshold"}
# CELU's alpha is a power of two: torch's float64 CELU gradient carries a
# float32 rounding of 1 / alpha (relative 1e-8 for alpha = 0.7).
# every kink of the table: 0, +-0.5 (shrinks), +-3 (hard*), 6 (relu6), the
# thresholds, and +-1, -2, 3 (hardtanh's bounds), 1 (softplus's threshold / 2)
KINKS = [0.0, 0.5, -0.5, 3.0, -3.0, 6.0, 0.1, 0.3, -0.3, 1.0, -1.0, -2.0, 20.0, 25.0]


def _x(dtype, shape=(3, 4, 2, 2)):
    rng = np.random.default_rng(0)
    x = rng.uniform(-7, 7, shape)
    x.reshape(-1)[:len(KINKS)] = KINKS
    return x.astype(dtype)


def _pair(name, args, dtype):
    tm = getattr(torch.nn, name)(*args)
    cm = getattr(nn, name)(*args)
    if name == "PReLU":
        tm = tm.to(getattr(torch, np.dtype(dtype).name))
        with torch.no_grad():
            tm.weight.uniform_(-0.5, 0.5)
        cm = cm.to(dtype)
        cm.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    return tm, cm


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-10), (np.float32, 1e-5)])
@pytest.mark.parametrize("name,args", MODULES, ids=str)
def test_module_matches_torch(name, args, dtype, tol):
    tm, cm = _pair(name, args, dtype)
    assert repr(cm) == repr(tm)
    x = _x(dtype)
    tx, cx = torch.tensor(x, requires_grad=True), cygrad.tensor(x, requires_grad=True)
    a, b = tm(tx), cm(cx)
    np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=tol,
                               atol=tol)
    g = np.random.default_rng(1).standard_normal(a.shape).astype(dtype)
    a.backward(torch.tensor(g))
    b.backward(cygrad.tensor(g))
    np.testing.assert_allclose(cx.grad.numpy(), tx.grad.numpy(), rtol=tol, atol=tol)
    if name == "PReLU":
        np.testing.assert_allclose(cm.weight.grad.numpy(), tm.weight.grad.numpy(),
                                   rtol=tol, atol=tol)


@pytest.mark.parametrize("name,args", [m for m in MODULES if m[0] in INPLACE], ids=str)
def test_inplace_module_matches_torch(name, args):
    x = _x(np.float64)
    tx, cx = torch.tensor(x, requires_grad=True), cygrad.tensor(x, requires_grad=True)
    th, ch = tx * 1.5, cx * 1.5
    tout = getattr(torch.nn, name)(*args, inplace=True)(th)
    cm = getattr(nn, name)(*args, inplace=True)
    assert repr(cm) == repr(getattr(torch.nn, name)(*args, inplace=True))
    cout = cm(ch)
    assert cout is ch
    np.testing.assert_allclose(ch.detach().numpy(), th.detach().numpy(), atol=1e-12)
    (tout * tout).sum().backward()
    (cout * cout).sum().backward()
    np.testing.assert_allclose(cx.grad.numpy(), tx.grad.numpy(), atol=1e-10)
    leaf = cygrad.tensor(x, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        cm(leaf)
    plain = cygrad.tensor(x)
    assert cm(plain) is plain
    np.testing.assert_allclose(plain.numpy(), getattr(torch.nn, name)(*args)(
        torch.tensor(x)).numpy(), atol=1e-12)


def test_functional_inplace_names():
    x = _x(np.float64)
    for name, kw in (("relu_", {}), ("elu_", {"alpha": 0.5}), ("selu_", {}),
                     ("celu_", {}), ("leaky_relu_", {"negative_slope": 0.3}),
                     ("hardtanh_", {"min_val": -0.5, "max_val": 2.0}),
                     ("threshold_", {"threshold": 0.2, "value": 9.0})):
        c = cygrad.tensor(x)
        t = torch.tensor(x)
        tfn = getattr(torch.nn.functional, name, None) or getattr(torch, name)
        assert getattr(F, name)(c, **kw) is c
        tfn(t, **kw)
        np.testing.assert_allclose(c.numpy(), t.numpy(), atol=1e-12, err_msg=name)


FUNCS = [("gelu", {}), ("gelu", {"approximate": "tanh"}), ("silu", {}), ("mish", {}),
         ("selu", {}), ("elu", {"alpha": 0.7}), ("celu", {"alpha": 1.3}),
         ("softplus", {"beta": 1.5}), ("logsigmoid", {}), ("softsign", {}),
         ("tanhshrink", {}), ("leaky_relu", {}), ("hardswish", {}),
         ("glu", {"dim": 0}), ("softmin", {"dim": 1})]


@pytest.mark.parametrize("name,kw", FUNCS, ids=str)
def test_gradcheck_and_gradgradcheck(name, kw):
    rng = np.random.default_rng(2)
    x = cygrad.tensor(rng.uniform(-2.5, 2.5, (4, 3)), requires_grad=True)
    fn = getattr(F, name)
    assert gradcheck(lambda x: fn(x, **kw), (x,))
    assert gradgradcheck(lambda x: fn(x, **kw), (x,))


def test_prelu_gradcheck_weight():
    rng = np.random.default_rng(3)
    x = cygrad.tensor(rng.uniform(-2, 2, (2, 3, 4)), requires_grad=True)
    w = cygrad.tensor(rng.uniform(0, 1, 3), requires_grad=True)
    assert gradcheck(F.prelu, (x, w))


def test_large_inputs_do_not_overflow():
    x = np.array([-1000.0, -50.0, 0.0, 50.0, 1000.0])
    for name in ("softplus", "logsigmoid", "mish", "silu", "elu", "selu", "celu",
                 "gelu"):
        c = cygrad.tensor(x, requires_grad=True)
        t = torch.tensor(x, requires_grad=True)
        getattr(F, name)(c).sum().backward()
        getattr(torch.nn.functional, name)(t).sum().backward()
        np.testing.assert_allclose(c.grad.numpy(), t.grad.numpy(), atol=1e-12,
                                   err_msg=name)
        assert np.all(np.isfinite(c.grad.numpy()))


def test_errors_as_torch():
    x = cygrad.ones(2, 5)
    with pytest.raises(RuntimeError, match="approximate argument must be either"):
        F.gelu(x, approximate="erf")
    with pytest.raises(RuntimeError, match="Halving dimension must be even, but "
                       "dimension 1 is size 5"):
        F.glu(x)
    with pytest.raises(RuntimeError, match="glu does not support scalars"):
        F.glu(cygrad.tensor(1.0))
    with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D"):
        nn.Softmax2d()(x)
    with pytest.raises(RuntimeError, match="parameter numbers = 2 and channel size "
                       "= 5"):
        F.prelu(x, cygrad.ones(2))
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        F.hardtanh(x, 2.0, 1.0)
    with pytest.raises(RuntimeError, match="lambda must be in range"):
        F.softshrink(x, -1.0)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmin"):
        y = F.softmin(x)
    np.testing.assert_allclose(y.sum(1).numpy(), [1.0, 1.0])


def test_grad_fn_names_as_torch():
    x = cygrad.ones(3, requires_grad=True)
    for fn, want in ((F.gelu, "GeluBackward0"), (F.silu, "SiluBackward0"),
                     (F.leaky_relu, "LeakyReluBackward0"),
                     (F.hardtanh, "HardtanhBackward0"), (F.relu6, "HardtanhBackward0")):
        assert fn(x).grad_fn.name() == want


# --- float32 gelu keeps Phi and phi for its backward (cygrad/_kernels/cg_act.h)


def _gelu_inputs(n, seed=0):
    """Values across the range, with the fast guards' edges and the
    non-finite values placed in some 256-element blocks and not others."""
    x = (4 * np.random.default_rng(seed).standard_normal(n)).astype(np.float32)
    edges = np.array([-13, -13.0001, -12.9999, -20, 13, 13.0001, 12.9999, 20,
                      np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -1e-30], np.float32)
    for at in range(0, n, 700):
        x[at:at + len(edges)] = edges[: n - at]
    return x


@pytest.mark.parametrize("n", [1, 7, 255, 256, 257, 1000, 4097])
def test_gelu_kept_path_gives_the_table_bits_both_ways(n):
    x = _gelu_inputs(n)
    g = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    kept = cygrad.tensor(x, requires_grad=True)
    y = F.gelu(kept)
    assert y.grad_fn.name() == "GeluBackward0"
    y.backward(cygrad.tensor(g))
    table = cygrad.tensor(x, requires_grad=True)
    y_table = cygrad.ops.gelu(table)
    y_table.backward(cygrad.tensor(g))
    np.testing.assert_array_equal(y.detach().numpy(), y_table.detach().numpy())
    np.testing.assert_array_equal(kept.grad.numpy(), table.grad.numpy())
    with cygrad.no_grad():
        np.testing.assert_array_equal(F.gelu(cygrad.tensor(x)).numpy(),
                                      y_table.detach().numpy())


def test_gelu_kept_path_on_a_non_contiguous_input_and_a_broadcast_gradient():
    base = _gelu_inputs(600).reshape(20, 30)
    x = cygrad.tensor(base, requires_grad=True)
    view = x.t()                                   # not contiguous
    (F.gelu(view) * 2.0).sum().backward()
    ref = cygrad.tensor(base, requires_grad=True)
    (cygrad.ops.gelu(ref.t()) * 2.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), ref.grad.numpy())


def test_gelu_kept_path_double_backward_matches_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(3).standard_normal((3, 5)).astype(np.float32) * 3
    a = cygrad.tensor(x, requires_grad=True)
    (ga,) = cygrad.autograd.grad(F.gelu(a).sum(), a, create_graph=True)
    (gga,) = cygrad.autograd.grad((ga * ga).sum(), a)
    t = torch.tensor(x, requires_grad=True)
    (gt,) = torch.autograd.grad(torch.nn.functional.gelu(t).sum(), t, create_graph=True)
    (ggt,) = torch.autograd.grad((gt * gt).sum(), t)
    np.testing.assert_allclose(ga.detach().numpy(), gt.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gga.numpy(), ggt.numpy(), rtol=1e-5, atol=1e-6)


def test_gelu_kept_kernels_check_their_lengths():
    from cygrad._kernels import act

    x = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match="d has length 3, expected 4"):
        act.gelu_keep(x, x.copy(), np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="out has length 5, expected 4"):
        act.gelu_bwd_kept(x, x, x, np.zeros(5, np.float32))
