"""The engine's compiled softmax and log_softmax node (over the last dim of a
contiguous float tensor): the same bits as the Python Function it stands in
for, torch's values, gradients and node names, double backward, the saved
output's version check, and the calls that must take the Function."""

import numpy as np
import pytest

import cygrad
from cygrad.ops import reductions as R

SHAPES = [(7,), (32, 27), (2, 3, 40), (5, 1)]
FNS = {"softmax": (R._softmax, False), "log_softmax": (R._log_softmax, True)}


def _leaf(a):
    return cygrad.tensor(a, requires_grad=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", list(FNS))
def test_same_bits_as_the_function_path(name, shape, dtype):
    rng = np.random.default_rng(1)
    a = (rng.standard_normal(shape) * 3).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    slow, _ = FNS[name]
    x, xs = _leaf(a), _leaf(a)
    y = getattr(cygrad, name)(x, -1)
    ys = slow(xs, -1)
    assert type(y.grad_fn).__name__ == "SoftmaxNode"
    assert type(ys.grad_fn).__name__ != "SoftmaxNode"
    np.testing.assert_array_equal(y.detach().numpy(), ys.detach().numpy())
    y.backward(cygrad.tensor(g))
    ys.backward(cygrad.tensor(g))
    np.testing.assert_array_equal(x.grad.numpy(), xs.grad.numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(FNS))
def test_matches_torch(name, dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    a = (rng.standard_normal((4, 6, 33)) * 4).astype(dtype)
    g = rng.standard_normal(a.shape).astype(dtype)
    x, tx = _leaf(a), torch.tensor(a, requires_grad=True)
    y, ty = getattr(x, name)(dim=2), getattr(tx, name)(dim=2)
    assert y.grad_fn.name() == ty.grad_fn.name()
    tol = 1e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=tol, atol=tol)
    y.backward(cygrad.tensor(g))
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=10 * tol, atol=10 * tol)


@pytest.mark.parametrize("name", list(FNS))
def test_twice_differentiable(name):
    a = np.random.default_rng(3).standard_normal((3, 5))
    fn = getattr(cygrad, name)
    x = _leaf(a)
    assert cygrad.autograd.gradcheck(lambda t: fn(t, -1), (x,))
    assert cygrad.autograd.gradgradcheck(lambda t: fn(t, -1), (x,))
    y = fn(x, 1)
    (gx,) = cygrad.autograd.grad((y * y).sum(), x, create_graph=True)
    xs = _leaf(a)
    ys = FNS[name][0](xs, 1)
    (gxs,) = cygrad.autograd.grad((ys * ys).sum(), xs, create_graph=True)
    np.testing.assert_allclose(gx.detach().numpy(), gxs.detach().numpy(), rtol=1e-13)
    gx.sum().backward()
    gxs.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xs.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_output_changed_in_place_is_refused():
    x = _leaf(np.arange(6.0).reshape(2, 3))
    y = x.softmax(-1)
    y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    assert x.grad is None


def test_graph_freed_after_backward_and_kept_with_retain_graph():
    x = _leaf(np.arange(6.0).reshape(2, 3))
    y = x.log_softmax(-1)
    y.sum().backward(retain_graph=True)
    first = x.grad.numpy().copy()
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * first)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.sum().backward()


def test_gradient_that_is_a_broadcast_view():
    # a large input's full sum sends back a stride-0 view of its gradient
    x = _leaf(np.random.default_rng(4).standard_normal((300, 700)).astype(np.float32))
    x.softmax(-1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 0.0, atol=1e-6)
    x.grad = None
    (x.log_softmax(-1) * 2).sum().backward()
    xs = _leaf(x.detach().numpy())
    (R._log_softmax(xs, -1) * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), xs.grad.numpy())


def test_other_calls_take_the_function():
    x = _leaf(np.arange(12.0).reshape(3, 4))
    for y in (x.softmax(0), x.t().softmax(-1), x.softmax(-1, dtype=cygrad.float32),
              cygrad.softmax(cygrad.tensor(3.0, requires_grad=True), 0)):
        assert y.grad_fn.name() == "SoftmaxBackward0"
        assert type(y.grad_fn).__name__ != "SoftmaxNode"
    with pytest.raises(IndexError):
        x.softmax(2)
    with pytest.raises(NotImplementedError):
        cygrad.tensor([1, 2, 3]).softmax(0)
    with cygrad.no_grad():
        assert x.softmax(-1).grad_fn is None
    assert x.detach().softmax(-1).requires_grad is False
