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


# --- view and reshape: the size arguments read in C -------------------------------

SIZE_CALLS = [((-1,), None), ((6, 4), None), (((2, -1, 3),), None), (([4, 6],), None),
              ((1, 24, 1), None), ((np.int64(4), 6), None), ((4.0, 6), TypeError),
              ((-1, -1), RuntimeError), ((5, -1), RuntimeError), ((7, 4), RuntimeError),
              ((-2, 12), RuntimeError), ((0, -1), RuntimeError), ((2 ** 70, 1), TypeError),
              ((True, 24), TypeError)]


@pytest.mark.parametrize("method", ["view", "reshape"])
@pytest.mark.parametrize("args, exc", SIZE_CALLS)
def test_view_and_reshape_sizes_match_torch(method, args, exc):
    torch = pytest.importorskip("torch")
    a = np.arange(24.0).reshape(2, 3, 4)
    x, tx = _both(torch, a)
    try:
        want = getattr(tx, method)(*args)
    except Exception as e:  # noqa: BLE001 - the type torch raises is the check
        with pytest.raises(type(e)):
            getattr(x, method)(*args)
        assert exc is None or isinstance(e, exc)
        return
    got = getattr(x, method)(*args)
    assert tuple(got.shape) == tuple(want.shape)
    assert got.grad_fn.name() == want.grad_fn.name()
    assert got._base is x
    (got * cygrad.tensor(np.arange(24.0).reshape(want.shape))).sum().backward()
    (want * torch.tensor(np.arange(24.0).reshape(want.shape))).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


def test_copying_reshape_and_refused_view_take_the_python_op():
    torch = pytest.importorskip("torch")
    a = np.arange(12.0).reshape(3, 4)
    x, tx = _both(torch, a)
    y, ty = x.t().reshape(-1), tx.t().reshape(-1)     # needs a copy
    np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy())
    assert y.grad_fn.name() == ty.grad_fn.name()
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        x.t().view(12)
    assert x.view(cygrad.float64) is not None and x.view(dtype=cygrad.float64).shape == (3, 4)
    e = cygrad.zeros(0, 3)
    assert e.view(-1, 3).shape == (0, 3) and e.reshape(3, 0).shape == (3, 0)
    assert cygrad.reshape(x, (4, 3)).shape == (4, 3)
    assert cygrad.reshape(x, shape=(2, 6)).shape == (2, 6)


@pytest.mark.parametrize("dtype", ["int32", "float32", "float64", "uint8", "int8",
                                   "float16", "bool", "int64", "int16"])
def test_view_as_another_dtype_reinterprets_the_bytes_as_torch(dtype):
    torch = pytest.importorskip("torch")
    a = np.array([[1.5, -2.0, 3.25, 0.0], [7.0, 1e-3, -0.5, 2.0]], np.float32)
    x, tx = cygrad.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, ty = x.view(getattr(cygrad, dtype)), tx.view(getattr(torch, dtype))
    assert tuple(y.shape) == tuple(ty.shape) and not y.requires_grad
    np.testing.assert_array_equal(y.numpy(), ty.numpy())
    z = x.detach().view(dtype=getattr(cygrad, dtype))
    z.zero_()                     # a view: the write reaches x
    assert not x.detach().numpy().any()


@pytest.mark.parametrize("make, dtype", [
    (lambda L: L.arange(6.0).reshape(2, 3).t(), "float64"),
    (lambda L: L.arange(3.0), "float64"),
    (lambda L: L.tensor(1.0), "float16"),
])
def test_view_as_another_element_size_refuses_as_torch(make, dtype):
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as want:
        make(torch).view(getattr(torch, dtype))
    with pytest.raises(RuntimeError) as got:
        make(cygrad).view(getattr(cygrad, dtype))
    assert str(got.value) == str(want.value)


def test_sizes_by_keyword():
    x = cygrad.arange(12.0)
    assert x.view(size=(3, 4)).shape == (3, 4)
    assert cygrad.reshape(x, shape=[2, -1]).shape == (2, 6)
    with pytest.raises(TypeError, match="unexpected keyword argument 'shape'"):
        x.view(shape=(3, 4))
    with pytest.raises(TypeError, match="unexpected keyword argument 'shape'"):
        x.reshape(3, shape=(3, 4))
