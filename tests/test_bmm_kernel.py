"""``_kernels.bmm.matmul``: stacks of small float matrices in one compiled
loop (cg_bmm.h), everything else handed to NumPy.  Its results must be
np.matmul's to rounding for every shape, stride and batch broadcast, and
what it hands on must behave exactly as NumPy (errors included)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import cygrad
from cygrad._kernels import bmm

TOL = {np.float32: 2e-6, np.float64: 1e-13}


def _close(got, want, dtype):
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.abs(got - want).max(initial=0.0) <= TOL[dtype] * scale * 8


def _view(arr, how):
    """The same values as ``arr`` laid out another way."""
    if how == "t":              # a transposed view of a contiguous copy
        return np.swapaxes(np.ascontiguousarray(np.swapaxes(arr, -1, -2)), -1, -2)
    if how == "heads":          # (b, t, h, d) viewed as (b, h, t, d), as attention does
        return np.swapaxes(np.ascontiguousarray(np.swapaxes(arr, -3, -2)), -3, -2)
    if how == "flip":           # negative strides
        return np.flip(np.flip(arr, -1).copy(), -1)
    return arr


@given(batch=st.lists(st.integers(1, 4), min_size=1, max_size=3),
       m=st.integers(1, 40), k=st.integers(1, 40), n=st.integers(1, 40),
       dtype=st.sampled_from([np.float32, np.float64]),
       how_a=st.sampled_from(["c", "t", "heads", "flip"]),
       how_b=st.sampled_from(["c", "t", "heads", "flip"]),
       bcast=st.sampled_from(["none", "a", "b", "lead"]),
       seed=st.integers(0, 2**16))
def test_matches_numpy_for_any_layout(batch, m, k, n, dtype, how_a, how_b, bcast, seed):
    rng = np.random.default_rng(seed)
    batch_a, batch_b = list(batch), list(batch)
    if bcast == "a":
        batch_a[0] = 1
    elif bcast == "b":
        batch_b[-1] = 1
    elif bcast == "lead":
        batch_b = batch_b[1:]
    a = rng.standard_normal(batch_a + [m, k]).astype(dtype)
    b = rng.standard_normal(batch_b + [k, n]).astype(dtype)
    a, b = _view(a, how_a if a.ndim > 2 or how_a != "heads" else "c"), \
        _view(b, how_b if b.ndim > 2 or how_b != "heads" else "c")
    _close(bmm.matmul(a, b), np.matmul(a, b), dtype)


@pytest.mark.parametrize("shapes", [((16, 4, 32, 16), (16, 4, 16, 32)),
                                    ((64, 8, 8), (64, 8, 8)),
                                    ((3, 5, 7), (7, 3)),
                                    ((2, 1, 31, 9), (1, 3, 9, 33))])
def test_attention_shapes_and_broadcasts(shapes):
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(s).astype(np.float32) for s in shapes)
    _close(bmm.matmul(a, b), np.matmul(a, b), np.float32)


def test_what_it_hands_to_numpy_behaves_as_numpy():
    rng = np.random.default_rng(1)
    big = rng.standard_normal((2, 200, 200))
    np.testing.assert_array_equal(bmm.matmul(big, big), np.matmul(big, big))
    ints = np.arange(24).reshape(2, 3, 4)
    np.testing.assert_array_equal(bmm.matmul(ints, ints.swapaxes(1, 2)),
                                  np.matmul(ints, ints.swapaxes(1, 2)))
    mixed = (rng.standard_normal((2, 3, 4)).astype(np.float32), rng.standard_normal((2, 4, 5)))
    np.testing.assert_array_equal(bmm.matmul(*mixed), np.matmul(*mixed))
    two_d = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    np.testing.assert_array_equal(bmm.matmul(*two_d), np.matmul(*two_d))
    swapped = rng.standard_normal((2, 3, 4)).astype(">f8"), rng.standard_normal((2, 4, 5))
    np.testing.assert_array_equal(bmm.matmul(*swapped), np.matmul(*swapped))
    empty = np.zeros((2, 0, 3)), np.zeros((2, 3, 4))
    assert bmm.matmul(*empty).shape == (2, 0, 4)
    for bad in [(np.zeros((2, 3, 4)), np.zeros((2, 5, 6))),     # inner sizes differ
                (np.zeros((2, 3, 4)), np.zeros((3, 4, 6)))]:    # batches do not broadcast
        with pytest.raises(ValueError):
            np.matmul(*bad)
        with pytest.raises(ValueError):
            bmm.matmul(*bad)


def test_batched_matmul_gradients_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    qn = rng.standard_normal((4, 2, 8, 5)).astype(np.float32)
    kn = rng.standard_normal((4, 2, 8, 5)).astype(np.float32)
    g = rng.standard_normal((4, 2, 8, 8)).astype(np.float32)
    q, k = (cygrad.tensor(x, requires_grad=True) for x in (qn, kn))
    (q @ k.transpose(-2, -1)).backward(cygrad.tensor(g))
    qt, kt = (torch.tensor(x, requires_grad=True) for x in (qn, kn))
    (qt @ kt.transpose(-2, -1)).backward(torch.tensor(g))
    np.testing.assert_allclose(q.grad.numpy(), qt.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(k.grad.numpy(), kt.grad.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n", [1, 2, 7])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_narrow_products_match_torch(n, dtype):
    # batched dot products and matrix-vector stacks (B narrower than one
    # vector), as the benchmark recipe's bmm(x.unsqueeze(1), x.unsqueeze(-1))
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(n)
    x = rng.standard_normal((300, 64)).astype(dtype)
    a = rng.standard_normal((5, 9, 64)).astype(dtype)
    b = rng.standard_normal((5, n, 64)).astype(dtype)     # used transposed
    res = []
    for lib in (cygrad, torch):
        tx = lib.tensor(x)
        ta, tb = lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True)
        dots = lib.bmm(tx.unsqueeze(1), tx.unsqueeze(-1))
        mv = lib.bmm(ta, tb.transpose(1, 2))
        (mv * mv).sum().backward()
        res.append([v.detach().numpy() for v in (dots, mv, ta.grad, tb.grad)])
    for got, want in zip(*res):
        assert got.shape == want.shape
        _close(got, want, dtype)
