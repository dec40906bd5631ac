"""Loss kernels against NumPy, and the nn losses against torch (when installed)."""

import numpy as np
import pytest

from cygrad._kernels import loss as K

DTYPES = [np.float32, np.float64]
TOL = {
    np.float32: {"rtol": 2e-5, "atol": 2e-5},
    np.float64: {"rtol": 1e-12, "atol": 1e-12},
}


# ---------------------------------------------------------------------------
# NumPy references (float64)


def ref_ce_rows(x, t, w=None, ignore_index=-100):
    x = x.astype(np.float64)
    m = x.max(axis=1, keepdims=True)
    lse = m[:, 0] + np.log(np.exp(x - m).sum(axis=1))
    keep = t != ignore_index
    ts = np.where(keep, t, 0)
    wr = np.ones(len(t)) if w is None else w.astype(np.float64)[ts]
    wr = np.where(keep, wr, 0.0)
    loss = wr * (lse - x[np.arange(len(t)), ts])
    p = np.exp(x - lse[:, None])
    onehot = np.zeros_like(x)
    onehot[np.arange(len(t)), ts] = 1
    grad = wr[:, None] * (p - onehot)
    return loss, lse, grad, wr.sum()


def ref_bce(x, y):
    x, y = x.astype(np.float64), y.astype(np.float64)
    loss = np.maximum(x, 0) - x * y + np.log1p(np.exp(-np.abs(x)))
    return loss, 0.5 * (1 + np.tanh(x / 2)) - y


# ---------------------------------------------------------------------------
# kernels


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scale", [1.0, 1e4])
def test_cross_entropy_kernel(dtype, scale):
    rng = np.random.default_rng(0)
    x = (scale * rng.standard_normal((7, 5))).astype(dtype)
    t = rng.integers(0, 5, 7)
    t[3] = -100
    w = rng.uniform(0.5, 2, 5).astype(dtype)
    for weight in (None, w):
        karg = np.empty(0, dtype) if weight is None else weight
        out = np.empty(7, dtype)
        lse = np.empty(7, dtype)
        total, wsum = K.cross_entropy_fwd(x, t, karg, -100, out, lse)
        loss, _lse_ref, grad_ref, wsum_ref = ref_ce_rows(x, t, weight)
        tol = TOL[dtype] if scale == 1.0 else {"rtol": 1e-6, "atol": 0}
        np.testing.assert_allclose(out, loss, **tol)
        np.testing.assert_allclose(total, loss.sum(), **tol)
        np.testing.assert_allclose(wsum, wsum_ref, **TOL[dtype])
        assert np.isfinite(out).all() and np.isfinite(lse).all()
        g = np.empty_like(x)
        K.cross_entropy_bwd(x, t, karg, -100, lse, np.array([0.5], dtype), g)
        np.testing.assert_allclose(g, 0.5 * grad_ref, **TOL[dtype])
        rowg = rng.standard_normal(7).astype(dtype)
        K.cross_entropy_bwd(x, t, karg, -100, lse, rowg, g)
        np.testing.assert_allclose(g, rowg[:, None] * grad_ref, **TOL[dtype])


def test_cross_entropy_kernel_read_only_and_out_in_place():
    x = np.arange(12.0).reshape(3, 4)
    x.flags.writeable = False
    t = np.array([0, 1, 3])
    t.flags.writeable = False
    out = np.empty(3)
    lse = np.empty(3)
    keep = out
    K.cross_entropy_fwd(x, t, np.empty(0), -100, out, lse)
    assert np.shares_memory(keep, out)
    np.testing.assert_allclose(out, ref_ce_rows(x, t)[0])


def test_cross_entropy_kernel_empty_batch():
    out = np.empty(0)
    assert K.cross_entropy_fwd(
        np.empty((0, 3)), np.empty(0, np.int64), np.empty(0), -100, out, np.empty(0)
    ) == (0.0, 0.0)


@pytest.mark.parametrize("bad", [5, -1, 1 << 40])
def test_cross_entropy_kernel_label_out_of_range(bad):
    x = np.zeros((3, 5))
    t = np.array([0, bad, 1])
    with pytest.raises(IndexError, match=f"Target {bad} is out of bounds"):
        K.cross_entropy_fwd(x, t, np.empty(0), -100, np.empty(3), np.empty(3))
    with pytest.raises(IndexError, match="position 1"):
        K.cross_entropy_bwd(
            x, t, np.empty(0), -100, np.zeros(3), np.ones(1), np.empty((3, 5))
        )


def test_cross_entropy_kernel_shape_errors():
    x = np.zeros((3, 5))
    with pytest.raises(ValueError, match="batch_size"):
        K.cross_entropy_fwd(
            x, np.zeros(2, np.int64), np.empty(0), -100, np.empty(3), np.empty(3)
        )
    with pytest.raises(ValueError, match="weight"):
        K.cross_entropy_fwd(
            x, np.zeros(3, np.int64), np.ones(4), -100, np.empty(3), np.empty(3)
        )
    with pytest.raises(ValueError, match="grad has length"):
        K.cross_entropy_bwd(
            x,
            np.zeros(3, np.int64),
            np.empty(0),
            -100,
            np.zeros(3),
            np.ones(2),
            np.empty((3, 5)),
        )
    with pytest.raises(ValueError):  # mixed dtypes never reach the kernel
        K.cross_entropy_fwd(
            x.astype(np.float32),
            np.zeros(3, np.int64),
            np.empty(0),
            -100,
            np.empty(3),
            np.empty(3),
        )


@pytest.mark.parametrize("dtype", DTYPES)
def test_bce_logits_kernel(dtype):
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.standard_normal(20) * 3, [1e4, -1e4, 0.0, 88.0, -88.0]])
    x = x.astype(dtype)
    y = rng.uniform(0, 1, x.size).astype(dtype)
    out = np.empty_like(x)
    total = K.bce_logits_fwd(x, y, out)
    loss, grad = ref_bce(x, y)
    np.testing.assert_allclose(out, loss, **TOL[dtype])
    np.testing.assert_allclose(total, loss.sum(), **TOL[dtype])
    g = np.empty_like(x)
    K.bce_logits_bwd(x, y, np.array([2.0], dtype), g)
    np.testing.assert_allclose(g, 2 * grad, **TOL[dtype])
    assert np.isfinite(out).all() and np.isfinite(g).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_mse_kernel(dtype):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(30).astype(dtype)
    y = rng.standard_normal(30).astype(dtype)
    out = np.empty_like(x)
    total = K.mse_fwd(x, y, out)
    d = x.astype(np.float64) - y
    np.testing.assert_allclose(out, d * d, **TOL[dtype])
    np.testing.assert_allclose(total, (d * d).sum(), **TOL[dtype])
    g = np.empty_like(x)
    gs = rng.standard_normal(30).astype(dtype)
    K.mse_bwd(x, y, gs, g)
    np.testing.assert_allclose(g, 2 * gs * d, **TOL[dtype])
    with pytest.raises(ValueError, match="lengths differ"):
        K.mse_fwd(x, y[:3], out)


def test_float32_sums_accumulate_in_double():
    x = np.full(1 << 20, 1e-3, np.float32)
    y = np.zeros_like(x)
    total = K.mse_fwd(x, y, np.empty_like(x))
    np.testing.assert_allclose(
        total, (1 << 20) * float(np.float32(1e-3)) ** 2, rtol=1e-6
    )


# ---------------------------------------------------------------------------
# nn losses: values and gradients against torch

try:
    import cygrad
    import cygrad.nn
except ImportError as exc:  # the kernel tests above still run
    cygrad = None
    NN_MISSING = f"cygrad.nn cannot be imported: {exc}"
else:
    NN_MISSING = ""
needs_nn = pytest.mark.skipif(bool(NN_MISSING), reason=NN_MISSING)


def _both(arr, requires_grad=False):
    torch = pytest.importorskip("torch")
    return (
        cygrad.tensor(np.array(arr), requires_grad=requires_grad),
        torch.tensor(np.array(arr), requires_grad=requires_grad),
    )


def _check(fn_c, fn_t, inputs, dtype, grad_of=(0,)):
    """Run fn on cygrad and torch copies; compare value and input grads."""
    pytest.importorskip("torch")
    pairs = [_both(a, requires_grad=i in grad_of) for i, a in enumerate(inputs)]
    out_c = fn_c(*[p[0] for p in pairs])
    out_t = fn_t(*[p[1] for p in pairs])
    tol = (
        {"rtol": 1e-5, "atol": 1e-6}
        if dtype == np.float32
        else {"rtol": 1e-10, "atol": 1e-12}
    )
    np.testing.assert_allclose(out_c.detach().numpy(), out_t.detach().numpy(), **tol)
    assert out_c.dtype == np.dtype(dtype)
    seed = np.random.default_rng(9).standard_normal(tuple(out_t.shape)).astype(dtype)
    out_c.backward(cygrad.tensor(seed))
    out_t.backward(pytest.importorskip("torch").tensor(seed))
    for i in grad_of:
        np.testing.assert_allclose(
            pairs[i][0].grad.numpy(), pairs[i][1].grad.numpy(), **tol
        )


REDUCTIONS = ["mean", "sum", "none"]


@needs_nn
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("scale", [1.0, 1e4])
def test_cross_entropy_vs_torch(dtype, reduction, scale):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x = (scale * rng.standard_normal((6, 4))).astype(dtype)
    t = rng.integers(0, 4, 6)
    _check(
        lambda a, b: cygrad.nn.functional.cross_entropy(a, b, reduction=reduction),
        lambda a, b: torch.nn.functional.cross_entropy(a, b, reduction=reduction),
        [x, t],
        dtype,
    )


@needs_nn
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_weight_ignore_index_vs_torch(reduction):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    x = rng.standard_normal((8, 3))
    t = rng.integers(0, 3, 8)
    t[[1, 5]] = 2
    w = np.array([0.2, 1.0, 3.0])
    _check(
        lambda a, b, c: cygrad.nn.functional.cross_entropy(
            a, b, weight=c, ignore_index=2, reduction=reduction
        ),
        lambda a, b, c: torch.nn.functional.cross_entropy(
            a, b, weight=c, ignore_index=2, reduction=reduction
        ),
        [x, t, w],
        np.float64,
    )


@needs_nn
@pytest.mark.parametrize("shape", [(5,), (2, 3, 4), (2, 3, 2, 2)])
def test_cross_entropy_other_ranks_vs_torch(shape):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    x = rng.standard_normal(shape)
    c = shape[0] if len(shape) == 1 else shape[1]
    tshape = () if len(shape) == 1 else shape[:1] + shape[2:]
    t = rng.integers(0, c, tshape)
    for reduction in REDUCTIONS:
        _check(
            lambda a, b, r=reduction: cygrad.nn.functional.cross_entropy(
                a, b, reduction=r
            ),
            lambda a, b, r=reduction: torch.nn.functional.cross_entropy(
                a, b, reduction=r
            ),
            [x, t],
            np.float64,
        )


@needs_nn
def test_cross_entropy_probability_targets_vs_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 3))
    p = rng.dirichlet(np.ones(3), 4)
    _check(
        cygrad.nn.functional.cross_entropy,
        torch.nn.functional.cross_entropy,
        [x, p],
        np.float64,
        grad_of=(0, 1),
    )


@needs_nn
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_bce_with_logits_vs_torch(dtype, reduction):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    x = np.concatenate([3 * rng.standard_normal(9), [1e4, -1e4, 0.0]]).astype(dtype)
    y = rng.uniform(0, 1, 12).astype(dtype)
    _check(
        lambda a, b: cygrad.nn.functional.binary_cross_entropy_with_logits(
            a, b, reduction=reduction
        ),
        lambda a, b: torch.nn.functional.binary_cross_entropy_with_logits(
            a, b, reduction=reduction
        ),
        [x, y],
        dtype,
        grad_of=(0, 1),
    )


@needs_nn
def test_bce_with_logits_weights_vs_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(8)
    x = 3 * rng.standard_normal((5, 3))
    y = (rng.uniform(0, 1, (5, 3)) > 0.5).astype(np.float64)
    w = rng.uniform(0.5, 2, 3)
    pw = np.array([1.0, 2.0, 0.5])
    _check(
        lambda a, b, c, d: cygrad.nn.BCEWithLogitsLoss(weight=c, pos_weight=d)(a, b),
        lambda a, b, c, d: torch.nn.BCEWithLogitsLoss(weight=c, pos_weight=d)(a, b),
        [x, y, w, pw],
        np.float64,
    )


@needs_nn
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_mse_vs_torch(dtype, reduction):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(9)
    x = rng.standard_normal((4, 3)).astype(dtype)
    y = rng.standard_normal((4, 3)).astype(dtype)
    _check(
        lambda a, b: cygrad.nn.MSELoss(reduction=reduction)(a, b),
        lambda a, b: torch.nn.MSELoss(reduction=reduction)(a, b),
        [x, y],
        dtype,
        grad_of=(0, 1),
    )


@needs_nn
def test_mse_broadcast_warns():
    a = cygrad.zeros(3, 1, requires_grad=True)
    with pytest.warns(UserWarning, match="different to the input size"):
        loss = cygrad.nn.functional.mse_loss(a, cygrad.ones(3))
    loss.backward()
    assert a.grad.shape == (3, 1)


@needs_nn
def test_loss_errors():
    F = cygrad.nn.functional
    x = cygrad.zeros(3, 4)
    with pytest.raises(IndexError, match="Target 4 is out of bounds"):
        F.cross_entropy(x, cygrad.tensor([0, 4, 1]))
    with pytest.raises(ValueError, match="batch_size"):
        F.cross_entropy(x, cygrad.tensor([0, 1]))
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        F.mse_loss(x, x, reduction="avg")
    with pytest.raises(ValueError, match="must be the same as input size"):
        F.binary_cross_entropy_with_logits(x, cygrad.zeros(4))
    with pytest.raises(NotImplementedError, match="no kernel for dtype"):
        F.mse_loss(cygrad.tensor([1, 2]), cygrad.tensor([1, 2]))


def _double_backward(F_c, F_t, inputs, torch):
    """d/dx of sum(grad_x(loss)**2): exercises the differentiable backward."""
    xc = cygrad.tensor(inputs[0], requires_grad=True)
    xt = torch.tensor(inputs[0], requires_grad=True)
    rest_c = [cygrad.tensor(a) for a in inputs[1:]]
    rest_t = [torch.tensor(a) for a in inputs[1:]]
    (gc,) = cygrad.autograd.grad(F_c(xc, *rest_c), [xc], create_graph=True)
    (gt,) = torch.autograd.grad(F_t(xt, *rest_t), [xt], create_graph=True)
    (gc * gc).sum().backward()
    (gt * gt).sum().backward()
    np.testing.assert_allclose(gc.detach().numpy(), gt.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(xc.grad.numpy(), xt.grad.numpy(), rtol=1e-8, atol=1e-12)


@needs_nn
@pytest.mark.parametrize(
    "name", ["cross_entropy", "mse_loss", "binary_cross_entropy_with_logits"]
)
def test_double_backward_vs_torch(name):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(10)
    x = rng.standard_normal((5, 3))
    if name == "cross_entropy":
        other = rng.integers(0, 3, 5)
    else:
        other = rng.uniform(0, 1, (5, 3))
    _double_backward(
        getattr(cygrad.nn.functional, name),
        getattr(torch.nn.functional, name),
        [x, other],
        torch,
    )


@needs_nn
def test_mixed_dtypes_promote_as_torch():
    torch = pytest.importorskip("torch")
    x = np.linspace(-1, 1, 6).astype(np.float32)
    y = np.linspace(0, 1, 6)
    for name in ("mse_loss", "binary_cross_entropy_with_logits"):
        xc = cygrad.tensor(x, requires_grad=True)
        xt = torch.tensor(x, requires_grad=True)
        out_c = getattr(cygrad.nn.functional, name)(xc, cygrad.tensor(y))
        out_t = getattr(torch.nn.functional, name)(xt, torch.tensor(y))
        assert str(out_c.dtype) == str(out_t.dtype).replace("torch.", "")
        np.testing.assert_allclose(out_c.item(), out_t.item(), rtol=1e-6)
        out_c.backward()
        out_t.backward()
        assert xc.grad.dtype == np.float32
        np.testing.assert_allclose(xc.grad.numpy(), xt.grad.numpy(), rtol=1e-5)
