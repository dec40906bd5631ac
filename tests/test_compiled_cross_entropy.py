"""The engine's compiled cross-entropy node (F.cross_entropy on (N, C)
logits and (N,) int64 targets, no weight, no smoothing, 'mean' or 'sum'):
the same bits as the Python Function it stands in for, torch's values,
gradients and node name, ignore_index, double backward, the saved inputs'
version checks, and the calls that must take the Python op."""

import numpy as np
import pytest

import cygrad
from cygrad.nn import functional as F


def _batch(dtype, n=32, c=27, seed=0, scale=3.0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, c)) * scale).astype(dtype), rng.integers(0, c, n)


def _leaf(a):
    return cygrad.tensor(a, requires_grad=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_same_bits_as_the_function_path(reduction, dtype):
    a, t = _batch(dtype)
    t[3] = 5
    target = cygrad.tensor(t)
    x, xs = _leaf(a), _leaf(a)
    y = F.cross_entropy(x, target, ignore_index=5, reduction=reduction)
    ys = F._CrossEntropy.apply(xs, target, None, 5, reduction)
    assert type(y.grad_fn).__name__ == "CrossEntropyNode"
    assert type(ys.grad_fn).__name__ != "CrossEntropyNode"
    assert y.dtype == ys.dtype and y.shape == ys.shape == ()
    np.testing.assert_array_equal(y.detach().numpy(), ys.detach().numpy())
    g = cygrad.tensor(np.array(0.7, dtype))
    y.backward(g)
    ys.backward(g)
    np.testing.assert_array_equal(x.grad.numpy(), xs.grad.numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("ignore", [-100, 4])
def test_matches_torch(reduction, ignore, dtype):
    torch = pytest.importorskip("torch")
    a, t = _batch(dtype, n=50, c=9, seed=1, scale=6.0)
    t[::4] = 4
    x, tx = _leaf(a), torch.tensor(a, requires_grad=True)
    y = F.cross_entropy(x, cygrad.tensor(t), ignore_index=ignore, reduction=reduction)
    ty = torch.nn.functional.cross_entropy(tx, torch.tensor(t), ignore_index=ignore,
                                           reduction=reduction)
    assert y.grad_fn.name() == ty.grad_fn.name()
    tol = 2e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(y.item(), ty.item(), rtol=tol)
    y.backward()
    ty.backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=tol, atol=tol)


def test_every_row_ignored_gives_nan_and_zero_gradients():
    torch = pytest.importorskip("torch")
    a, _ = _batch(np.float32, n=4, c=3)
    t = np.full(4, -100)
    x, tx = _leaf(a), torch.tensor(a, requires_grad=True)
    y = F.cross_entropy(x, cygrad.tensor(t))
    ty = torch.nn.functional.cross_entropy(tx, torch.tensor(t))
    assert np.isnan(y.item()) and np.isnan(ty.item())
    y.backward()
    ty.backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


def test_module_and_tensor_subclasses_take_the_node():
    a, t = _batch(np.float64)
    x = cygrad.nn.Parameter(cygrad.tensor(a))
    loss = cygrad.nn.CrossEntropyLoss(reduction="sum")(x, cygrad.tensor(t))
    assert type(loss.grad_fn).__name__ == "CrossEntropyNode"
    loss.backward()
    assert x.grad.shape == x.shape


def test_twice_differentiable():
    a, t = _batch(np.float64, n=5, c=4)
    t[1] = -100
    target = cygrad.tensor(t)
    x = _leaf(a)
    for red in ("mean", "sum"):
        assert cygrad.autograd.gradcheck(
            lambda v: F.cross_entropy(v, target, reduction=red), (x,))
        assert cygrad.autograd.gradgradcheck(
            lambda v: F.cross_entropy(v, target, reduction=red), (x,))
    (gx,) = cygrad.autograd.grad(F.cross_entropy(x, target), x, create_graph=True)
    xs = _leaf(a)
    (gxs,) = cygrad.autograd.grad(F._CrossEntropy.apply(xs, target, None, -100, "mean"),
                                  xs, create_graph=True)
    np.testing.assert_allclose(gx.detach().numpy(), gxs.detach().numpy(), rtol=1e-13)
    (gx * gx).sum().backward()
    (gxs * gxs).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xs.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_inputs_changed_in_place_are_refused():
    a, t = _batch(np.float32, n=3, c=4)
    x = _leaf(a)
    h = x * 1
    target = cygrad.tensor(t)
    loss = F.cross_entropy(h, target)
    h.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
    loss = F.cross_entropy(x, target)
    target.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
    assert x.grad is None


def test_second_backward_needs_retain_graph():
    a, t = _batch(np.float32, n=3, c=4)
    x = _leaf(a)
    loss = F.cross_entropy(x, cygrad.tensor(t))
    loss.backward(retain_graph=True)
    first = x.grad.clone()
    loss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2 * first.numpy())
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()


def test_bad_targets_raise_torchs_errors_before_any_work():
    a, _ = _batch(np.float32, n=3, c=4)
    x = _leaf(a)
    with pytest.raises(IndexError, match="Target 4 is out of bounds"):
        F.cross_entropy(x, cygrad.tensor([0, 4, 1]))
    with pytest.raises(IndexError, match="Target -1 is out of bounds"):
        F.cross_entropy(x, cygrad.tensor([0, -1, 1]))
    with pytest.raises(ValueError, match="Expected input batch_size"):
        F.cross_entropy(x, cygrad.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="expected target dtype to be Long"):
        F.cross_entropy(x, cygrad.tensor([0, 1, 2], dtype=cygrad.int32))
    with pytest.raises(ValueError, match="is not a valid value for reduction"):
        F.cross_entropy(x, cygrad.tensor([0, 1, 2]), reduction="avg")
    assert x.grad is None


def test_other_calls_take_the_python_op_and_match_torch():
    torch = pytest.importorskip("torch")
    a, t = _batch(np.float32, n=6, c=5, seed=3)
    w = np.linspace(0.5, 2.0, 5).astype(np.float32)
    calls = [
        dict(weight=w), dict(label_smoothing=0.1), dict(reduction="none"),
    ]
    for kw in calls:
        x, tx = _leaf(a), torch.tensor(a, requires_grad=True)
        ckw = {k: cygrad.tensor(v) if k == "weight" else v for k, v in kw.items()}
        tkw = {k: torch.tensor(v) if k == "weight" else v for k, v in kw.items()}
        y = F.cross_entropy(x, cygrad.tensor(t), **ckw)
        ty = torch.nn.functional.cross_entropy(tx, torch.tensor(t), **tkw)
        assert type(y.grad_fn).__name__ != "CrossEntropyNode"
        np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=2e-6)
        y.sum().backward()
        ty.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=2e-6, atol=1e-7)
    # a transposed (non-contiguous) input and a strided target
    x, tx = _leaf(a.T.copy()), torch.tensor(a.T.copy(), requires_grad=True)
    y = F.cross_entropy(x.t(), cygrad.tensor(t))
    assert type(y.grad_fn).__name__ != "CrossEntropyNode"
    ty = torch.nn.functional.cross_entropy(tx.t(), torch.tensor(t))
    np.testing.assert_allclose(y.item(), ty.item(), rtol=2e-6)
    st = cygrad.tensor(np.repeat(t, 2))[::2]
    y2 = F.cross_entropy(_leaf(a), st)
    assert type(y2.grad_fn).__name__ != "CrossEntropyNode"
    np.testing.assert_allclose(y2.item(), ty.item(), rtol=2e-6)


def test_no_grad_records_nothing():
    a, t = _batch(np.float32)
    x = _leaf(a)
    with cygrad.no_grad():
        y = F.cross_entropy(x, cygrad.tensor(t))
    assert y.grad_fn is None and not y.requires_grad
    z = F.cross_entropy(cygrad.tensor(a), cygrad.tensor(t))
    assert z.grad_fn is None
    np.testing.assert_array_equal(y.numpy(), z.numpy())
