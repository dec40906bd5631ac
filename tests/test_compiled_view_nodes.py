"""The engine's compiled nodes for a sum over one dim (SumDimNode) and for
basic indexing (BasicIndexNode): values, gradients, double backward and node
names against torch; and the list of weak references that notes views on
their root (in-place writes to the root reach every live view)."""

import gc

import numpy as np
import pytest

import cygrad

SHAPES = [(5,), (3, 4), (2, 3, 4)]


def _both(torch, a):
    return (cygrad.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("keepdim", [False, True])
def test_sum_over_one_dim_matches_torch(shape, keepdim, dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape).astype(dtype)
    for dim in range(-len(shape), len(shape)):
        x, tx = _both(torch, a)
        y, ty = x.sum(dim, keepdim=keepdim), tx.sum(dim, keepdim=keepdim)
        np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-6)
        assert tuple(y.shape) == tuple(ty.shape)
        assert y.grad_fn.name() == ty.grad_fn.name() == "SumBackward1"
        g = rng.standard_normal(tuple(ty.shape)).astype(dtype)
        y.backward(cygrad.tensor(g))
        ty.backward(torch.tensor(g))
        np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
        m, tm = x.mean(dim, keepdim=keepdim), tx.mean(dim, keepdim=keepdim)
        np.testing.assert_allclose(m.detach().numpy(), tm.detach().numpy(), rtol=1e-6)


def test_sum_over_one_dim_twice_differentiable():
    x = cygrad.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
    gy = cygrad.tensor(np.ones(4), requires_grad=True)
    (gx,) = cygrad.autograd.grad(x.sum(0), x, gy, create_graph=True)
    (gx * gx).sum().backward()
    np.testing.assert_array_equal(gy.grad.numpy(), np.full(4, 6.0))


def test_sum_over_one_dim_takes_the_other_paths_where_it_must():
    x = cygrad.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
    assert x.t().sum(0).tolist() == [6.0, 22.0, 38.0]        # not contiguous
    assert x.sum((0, 1)).item() == 66.0                     # two dims
    assert cygrad.tensor([1, 2, 3]).sum(0).item() == 6      # integers
    with pytest.raises(IndexError):
        x.sum(2)


INDICES = [3, (1,), (slice(None), 0), (slice(1, 3), slice(None), 2), (None, 1),
           (Ellipsis, 1), (1, Ellipsis, slice(0, 4, 2)), (slice(None),), Ellipsis]


@pytest.mark.parametrize("index", INDICES, ids=repr)
def test_basic_index_matches_torch(index):
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(1).standard_normal((4, 5, 6))
    x, tx = _both(torch, a)
    y, ty = x[index], tx[index]
    np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy())
    assert y.grad_fn.name() == ty.grad_fn.name()
    assert y.data_ptr() == x.data_ptr() + (ty.data_ptr() - tx.data_ptr())
    g = np.random.default_rng(2).standard_normal(tuple(ty.shape))
    (y * cygrad.tensor(g)).sum().backward()
    (ty * torch.tensor(g)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


def test_basic_index_twice_differentiable():
    torch = pytest.importorskip("torch")
    a = np.arange(12.0).reshape(3, 4)
    grads = []
    for lib in (cygrad, torch):
        x = lib.tensor(a, requires_grad=True)
        (g,) = lib.autograd.grad((x[1, 1:] ** 3).sum(), x, create_graph=True)
        g[1, 1:].sum().backward()
        grads.append((g.detach().numpy(), x.grad.numpy()))
    for ours, theirs in zip(*grads):
        np.testing.assert_array_equal(ours, theirs)


def test_in_place_write_reaches_live_views_among_many_dead_ones():
    w = cygrad.tensor(np.ones((3, 4)), requires_grad=True)
    root = w * 1.0
    for _ in range(300):          # views made and dropped, as in a loop
        root[0]
    gc.collect()
    row = root[1]
    assert len(root.__dict__["_views"]) <= 300
    root.mul_(3.0)
    row.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy()[1], np.full(4, 3.0))
    assert w.grad.numpy()[0].sum() == 0


@pytest.mark.parametrize("index", [
    (slice(None),), (slice(None), slice(None)), (slice(0, 4),), (Ellipsis, slice(None)),
    (slice(None), 0), (0, slice(None)), (slice(None), None), (slice(1, None),),
    (slice(None), slice(0, 5, 2)), (None, Ellipsis, 0), (slice(0, 99), 1, slice(None)),
    slice(None), slice(0, 4), slice(1, None), 2, Ellipsis, None,
], ids=repr)
def test_basic_index_node_names(index):
    """A full slice in a tuple does nothing (AliasBackward0 when nothing
    else does), a bare slice slices, as torch names them."""
    torch = pytest.importorskip("torch")
    x, tx = _both(torch, np.ones((4, 5, 6)))
    assert x[index].grad_fn.name() == tx[index].grad_fn.name()
