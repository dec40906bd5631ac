"""topk's compiled path (select.topk_rows, small k over float rows) against
torch: values, indices, NaN as the largest value, gradients, other dims."""

import numpy as np
import pytest

import cygrad
from cygrad._kernels import select as _S

torch = pytest.importorskip("torch")

SHAPES = [((64, 1000), 5), ((1, 50000), 10), ((1, 65), 10), ((8, 16), 3),
          ((3, 4, 7), 7), ((5, 1), 1), ((2, 33), 32)]


def both(x, k, **kw):
    got = cygrad.topk(cygrad.tensor(x), k, **kw)
    want = torch.topk(torch.tensor(x), k, **kw)
    return got, want


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,k", SHAPES)
@pytest.mark.parametrize("largest", [True, False])
def test_distinct_values_equal_torch(shape, k, dtype, largest):
    x = np.random.default_rng(1).standard_normal(shape).astype(dtype)
    got, want = both(x, k, largest=largest)
    np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
    np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
    assert got.values.dtype == cygrad.tensor(x).dtype


@pytest.mark.parametrize("dim", [0, 1, -3])
def test_other_dims(dim):
    x = np.random.default_rng(2).standard_normal((6, 9, 5)).astype(np.float32)
    got, want = both(x, 4, dim=dim)
    np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
    np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())


@pytest.mark.parametrize("largest", [True, False])
def test_nan_inf_signed_zero(largest):
    x = np.array([[1.0, np.nan, -np.inf, 3.0, np.nan, np.inf, -0.0, 2.0, 5e-324],
                  [np.nan] * 9], np.float64)
    for k in (1, 3, 6, 9):
        got, want = both(x, k, largest=largest)
        np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
        if k < 9:  # torch's order among equal values (here the NaNs of row 1)
            np.testing.assert_array_equal(got.indices.numpy()[0],
                                          want.indices.numpy()[0])


def test_ties_stable_order_and_torch_values():
    x = np.array([[1.0, 2, 1, 2, 1, 2, 1], [0, 0, 0, 0, 0, 0, 0]], np.float32)
    got, want = both(x, 3)
    np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
    # of equal values the first in index order (a stable sort's choice)
    np.testing.assert_array_equal(got.indices.numpy(), [[1, 3, 5], [0, 1, 2]])
    # every index torch picks among ties holds an equal value
    np.testing.assert_array_equal(np.take_along_axis(x, got.indices.numpy(), 1),
                                  np.take_along_axis(x, want.indices.numpy(), 1))


def test_matches_partition_path():
    # the same answer as the partition path (k above the kernel's limit)
    x = np.random.default_rng(3).integers(0, 5, (40, 300)).astype(np.float32)
    t = cygrad.tensor(x)
    fast = cygrad.topk(t, 20)
    order = np.lexsort((np.arange(300)[None].repeat(40, 0), -x), axis=1)[:, :20]
    np.testing.assert_array_equal(fast.indices.numpy(), order)


@pytest.mark.parametrize("largest", [True, False])
def test_gradient_equals_torch(largest):
    x = np.random.default_rng(4).standard_normal((7, 50))
    g = np.random.default_rng(5).standard_normal((7, 6))
    c = cygrad.tensor(x, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    y = cygrad.topk(c, 6, largest=largest).values
    assert y.grad_fn.name() == "TopkBackward0"
    y.backward(cygrad.tensor(g))
    torch.topk(t, 6, largest=largest).values.backward(torch.tensor(g))
    np.testing.assert_array_equal(c.grad.numpy(), t.grad.numpy())


def test_no_grad_has_no_node():
    c = cygrad.tensor(np.arange(10.0), requires_grad=True)
    with cygrad.no_grad():
        y = cygrad.topk(c, 2).values
    assert y.grad_fn is None and not y.requires_grad
    np.testing.assert_array_equal(y.numpy(), [9.0, 8.0])


def test_kernel_rejects_bad_shapes():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(ValueError):
        _S.topk_rows(x, np.empty((2, 4), np.float32), np.empty((2, 4), np.int64), True)
    _S.topk_rows(np.zeros((0, 3), np.float32), np.empty((0, 2), np.float32),
                 np.empty((0, 2), np.int64), True)
