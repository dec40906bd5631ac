"""The engine's compiled ``x[idx]`` for one int64 index tensor (an
embedding-style lookup, ``C[Xb]``) or several of one shape on the leading
dims (``logits[arange(n), y]``): torch's values, gradients (repeats summed,
negative indices wrapped), node name and errors; double backward; the index
tensors' version checks; and the indices that must take the Python op (bool
masks, 0-d, other dtypes, broadcast shapes, slices and ints)."""

import numpy as np
import pytest

import cygrad

torch = pytest.importorskip("torch")


def _run(lib, table, index, dtype):
    x = lib.tensor(table.astype(dtype), requires_grad=dtype != np.int64)
    y = x[lib.tensor(index)]
    if dtype == np.int64:
        return y.numpy(), None, None
    w = lib.tensor(np.arange(y.numel(), dtype=dtype).reshape(tuple(y.shape)) % 7)
    (y * w).sum().backward()
    return y.detach().numpy(), x.grad.numpy(), y.grad_fn.name()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64])
@pytest.mark.parametrize("table_shape, index", [
    ((27, 10), np.array([[3, 3, 26], [0, -1, -27]])),
    ((5,), np.array([4, 0, 4, -2])),
    ((4, 2, 3), np.array([[[1]], [[3]]])),
])
def test_matches_torch(table_shape, index, dtype):
    table = np.random.default_rng(0).standard_normal(table_shape) * 4
    got, want = _run(cygrad, table, index, dtype), _run(torch, table, index, dtype)
    for g, w in zip(got, want):
        if isinstance(g, np.ndarray):
            np.testing.assert_array_equal(g, w)
        else:
            assert g == w


def test_takes_the_compiled_node_and_is_twice_differentiable():
    idx = cygrad.tensor([[1, 0], [2, 1]])
    x = cygrad.tensor(np.random.default_rng(1).standard_normal((3, 4)), requires_grad=True)
    assert type(x[idx].grad_fn).__name__ == "IndexRowsNode"
    assert cygrad.autograd.gradcheck(lambda t: t[idx] ** 2, (x,))
    assert cygrad.autograd.gradgradcheck(lambda t: t[idx] ** 2, (x,))


def test_out_of_range_raises_torchs_error_and_records_nothing():
    x = cygrad.ones(3, 2, requires_grad=True)
    for bad in ([0, 3], [-4, 1]):
        with pytest.raises(IndexError, match=f"index {bad[0] if bad[0] < 0 else 3} is "
                                             "out of bounds for dimension 0 with size 3"):
            x[cygrad.tensor(bad)]
    assert x.grad is None


def test_index_changed_in_place_and_second_backward_are_refused():
    x = cygrad.ones(3, 2, requires_grad=True)
    idx = cygrad.tensor([0, 2])
    y = x[idx].sum()
    idx.add_(0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()
    y = x[cygrad.tensor([1, 1])].sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0], [2, 2], [0, 0]])


@pytest.mark.parametrize("make", [
    lambda L: L.tensor([True, False, True]),
    lambda L: L.tensor(2),
    lambda L: L.tensor([2, 0], dtype=L.int32),
    lambda L: (L.tensor([[0], [2]]), L.tensor([1, 0])),      # broadcast shapes
    lambda L: (slice(None), L.tensor([1, 1])),
    lambda L: (L.tensor([0, 2]), 1),
])
def test_other_indices_take_the_python_op(make):
    a = np.arange(6.0).reshape(3, 2)
    outs = []
    for L in (cygrad, torch):
        x = L.tensor(a, requires_grad=True)
        y = x[make(L)]
        y.sum().backward()
        outs.append((y.detach().numpy(), x.grad.numpy(), y.grad_fn.name()))
        assert type(y.grad_fn).__name__ != "IndexRowsNode"
    for g, w in zip(*outs):
        if isinstance(g, np.ndarray):
            np.testing.assert_array_equal(g, w)
        else:
            assert g == w


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("table_shape, index", [
    ((32, 27), (np.arange(32), np.random.default_rng(2).integers(-27, 27, 32))),
    ((4, 5, 3), (np.array([[0, 3], [3, -1]]), np.array([[4, 4], [0, -5]]))),
    ((2, 3, 4), (np.array([1, 0, 1]), np.array([2, 2, 0]), np.array([3, -4, 1]))),
])
def test_several_index_tensors_match_torch(table_shape, index, dtype):
    table = np.random.default_rng(3).standard_normal(table_shape) * 2
    outs = []
    for L in (cygrad, torch):
        x = L.tensor(table.astype(dtype), requires_grad=True)
        y = x[tuple(L.tensor(i) for i in index)]
        w = L.tensor(np.arange(y.numel(), dtype=dtype).reshape(tuple(y.shape)) % 5)
        (y * w).sum().backward()
        outs.append((y.detach().numpy(), x.grad.numpy(), y.grad_fn.name()))
        if L is cygrad:
            assert type(y.grad_fn).__name__ == "IndexRowsNode"
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    np.testing.assert_array_equal(outs[0][1], outs[1][1])
    assert outs[0][2] == outs[1][2]


def test_several_index_tensors_twice_differentiable_and_version_checked():
    i, j = cygrad.tensor([0, 2, 2]), cygrad.tensor([1, 0, 1])
    x = cygrad.tensor(np.random.default_rng(4).standard_normal((3, 2)), requires_grad=True)
    assert cygrad.autograd.gradcheck(lambda t: t[i, j] ** 2, (x,))
    assert cygrad.autograd.gradgradcheck(lambda t: t[i, j] ** 2, (x,))
    y = x[i, j].sum()
    j.add_(0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()
    with pytest.raises(IndexError, match="index 2 is out of bounds for dimension 1"):
        x[i, cygrad.tensor([0, 2, 1])]
