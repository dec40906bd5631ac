"""Indexing: ``__getitem__`` and ``__setitem__`` against torch and NumPy.

Values, gradients (repeated integer indices accumulate), views versus copies,
versions, the leaf rule, and errors that name the index and the size."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import index_for

import cygrad

torch = pytest.importorskip("torch")

GETS = [
    lambda m, x: x[1],
    lambda m, x: x[-1, 2],
    lambda m, x: x[:, 1:4:2],
    lambda m, x: x[::2, ::3],
    lambda m, x: x[None, ..., 1],
    lambda m, x: x[..., None],
    lambda m, x: x[1:1],
    lambda m, x: x[[0, 2, 0, 0]],
    lambda m, x: x[m.tensor([2, 2, 1])],
    lambda m, x: x[m.tensor([[0, 1], [1, 1]])],
    lambda m, x: x[:, [1, 1, 4]],
    lambda m, x: x[[0, 2], [1, 1]],
    lambda m, x: x[[-1, 0], 2:],
    lambda m, x: x[x > 0],
    lambda m, x: x[m.tensor([True, False, True])],
    lambda m, x: x[m.tensor([True, False, True]), 1:3],
    lambda m, x: x[m.tensor(1)],
    lambda m, x: x[m.tensor([], dtype=m.int64)],
    lambda m, x: x[1][2:4][::-1 if False else 1],
]


@pytest.mark.parametrize("i", range(len(GETS)))
def test_getitem_values_and_gradients_match_torch(i):
    arr = np.random.default_rng(i).uniform(-1, 1, (3, 5))
    res = []
    for m in (torch, cygrad):
        x = m.tensor(arr, requires_grad=True)
        y = GETS[i](m, x)
        w = m.tensor(np.random.default_rng(99).uniform(-1, 1, tuple(y.shape)))
        (y * w).sum().backward()
        res.append((y.detach().numpy(), x.grad.numpy()))
    assert res[1][0].shape == res[0][0].shape
    np.testing.assert_array_equal(res[1][0], res[0][0])
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-12, atol=0)


def test_repeated_indices_accumulate_gradients():
    x = cygrad.zeros(4, requires_grad=True)
    x[cygrad.tensor([1, 1, 3, 1])].sum().backward()
    assert x.grad.tolist() == [0.0, 3.0, 0.0, 1.0]


def test_basic_index_is_a_view_advanced_is_a_copy():
    x = cygrad.arange(12.0).reshape(3, 4)
    assert np.shares_memory(x[1].numpy(), x.numpy())
    assert np.shares_memory(x[:, ::2].numpy(), x.numpy())
    assert x[1, 2].shape == () and np.shares_memory(x[1, 2].numpy(), x.numpy())
    assert not np.shares_memory(x[[1]].numpy(), x.numpy())
    assert not np.shares_memory(x[x > 3].numpy(), x.numpy())


@settings(max_examples=60, deadline=None)
@given(data=st.data(), shape=st.sampled_from([(4,), (3, 4), (2, 3, 4), (0, 3)]))
def test_getitem_matches_numpy_hypothesis(data, shape):
    idx = data.draw(index_for(shape))
    arr = np.arange(float(np.prod(shape))).reshape(shape)
    x = cygrad.tensor(arr, requires_grad=True)
    np_idx = tuple(np.asarray(k) if isinstance(k, list) else k for k in idx)
    want = arr[np_idx]
    y = x[idx]
    np.testing.assert_array_equal(y.detach().numpy(), want)
    y.sum().backward()
    grad = np.zeros_like(arr)
    np.add.at(grad, np_idx, 1.0)
    np.testing.assert_array_equal(x.grad.numpy(), grad)


SETS = [
    lambda m, x, v: x.__setitem__(1, 7.0),
    lambda m, x, v: x.__setitem__((slice(None), 2), v[:3]),
    lambda m, x, v: x.__setitem__((slice(None, None, 2), slice(1, 4)), v[:3]),
    lambda m, x, v: x.__setitem__([0, 2], v[:5]),
    lambda m, x, v: x.__setitem__(x > 0.3, 0.0),
    lambda m, x, v: x.__setitem__(x < 0, v[:1]),
    lambda m, x, v: x.__setitem__((Ellipsis, -1), v[0]),
    lambda m, x, v: x.__setitem__((None, 1), v[:5]),
    lambda m, x, v: x.__setitem__(m.tensor([2, 0]), v[:5]),
]


@pytest.mark.parametrize("i", range(len(SETS)))
def test_setitem_values_and_gradients_match_torch(i):
    rng = np.random.default_rng(i)
    arr, varr = rng.uniform(-1, 1, (3, 5)), rng.uniform(-1, 1, (5,))
    res = []
    for m in (torch, cygrad):
        a = m.tensor(arr, requires_grad=True)
        v = m.tensor(varr, requires_grad=True)
        x = a * 2
        SETS[i](m, x, v)
        (x * x * a).sum().backward()
        res.append((x.detach().numpy(), a.grad.numpy(),
                    None if v.grad is None else v.grad.numpy()))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-12)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-10, atol=1e-12)
    if res[0][2] is None:
        assert res[1][2] is None or not res[1][2].any()
    else:
        np.testing.assert_allclose(res[1][2], res[0][2], rtol=1e-10, atol=1e-12)


def test_setitem_without_grad_casts_and_counts_versions():
    x = cygrad.zeros(2, 3, dtype=cygrad.int64)
    v = x._version
    x[0] = cygrad.tensor([1.7, 2.2, -3.9])
    x[1, 1:] = 5
    assert x.tolist() == [[1, 2, -3], [0, 5, 5]] and x._version == v + 2
    m = cygrad.tensor([True, False])
    m[1] = True
    assert m.tolist() == [True, True]


def test_setitem_on_a_leaf_requiring_grad_is_refused_under_grad_mode():
    w = cygrad.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is "
                                           "being used in an in-place operation"):
        w[0] = 2.0
    assert w.tolist() == [1.0, 1.0, 1.0] and w._version == 0
    with cygrad.no_grad():
        w[0] = 2.0
    assert w.tolist() == [2.0, 1.0, 1.0] and w.is_leaf and w._version == 1


def test_setitem_makes_a_plain_tensor_require_grad():
    w = cygrad.tensor([3.0], requires_grad=True)
    z = cygrad.zeros(3)
    z[1] = w * 2
    assert z.requires_grad and not z.is_leaf
    z.sum().backward()
    assert w.grad.tolist() == [2.0]


@pytest.mark.parametrize("bad,msg", [
    (lambda x: x[3], r"index 3 is out of bounds for dimension 0 with size 3"),
    (lambda x: x[0, -6], r"index -6 is out of bounds for dimension \d with size 5"),
    (lambda x: x[[0, 7]], r"index 7 is out of bounds .* size 3"),
    (lambda x: x[cygrad.tensor([0, 9])], r"index 9 is out of bounds .* size 3"),
    (lambda x: x[0, 0, 0], r"too many indices"),
    (lambda x: x[cygrad.tensor([0.5])], r"tensors used as indices must be long"),
    (lambda x: x["a"], r"only integers, slices"),
])
def test_index_errors_name_index_and_size(bad, msg):
    x = cygrad.zeros(3, 5)
    with pytest.raises(IndexError, match=msg):
        bad(x)


def test_negative_step_is_refused_as_torch():
    x = cygrad.zeros(4)
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]


def test_failed_setitem_changes_nothing():
    x = cygrad.arange(6.0).reshape(2, 3)
    for bad in (lambda: x.__setitem__((0, 5), 1.0),
                lambda: x.__setitem__(0, cygrad.ones(4)),
                lambda: x.__setitem__(cygrad.tensor([1, 4]), 0.0)):
        with pytest.raises((IndexError, RuntimeError)):
            bad()
    assert x.tolist() == [[0, 1, 2], [3, 4, 5]] and x._version == 0


def test_setitem_shape_mismatch_names_both_shapes():
    x = cygrad.zeros(2, 3)
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape "
                                           r"\[4\] cannot be broadcast to indexing "
                                           r"result of shape \[3\]"):
        x[0] = cygrad.ones(4)
