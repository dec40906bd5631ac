"""Gradient clipping (cygrad.nn.utils) against torch on the same gradients."""

import math

import numpy as np
import pytest

import cygrad
from cygrad.nn import utils

NAN, INF = math.nan, math.inf
ORDERS = [2.0, 1.0, 3.0, 0.5, 0.0, INF, -INF]
DTYPES = [np.float64, np.float32]


def grads_for(dtype, seed=0, shapes=((3, 4), (5,), (2, 3, 2))):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def make_cygrad(arrays, no_grad_at=()):
    ps = []
    for i, g in enumerate(arrays):
        p = cygrad.zeros(*g.shape, dtype=g.dtype, requires_grad=True)
        if i not in no_grad_at:
            p.grad = cygrad.from_numpy(g.copy())
        ps.append(p)
    return ps


def make_torch(torch, arrays, no_grad_at=()):
    ps = []
    for i, g in enumerate(arrays):
        p = torch.nn.Parameter(torch.zeros(g.shape, dtype=torch.from_numpy(g).dtype))
        if i not in no_grad_at:
            p.grad = torch.from_numpy(g.copy())
        ps.append(p)
    return ps


def cy_grads(ps):
    return [None if p.grad is None else p.grad.numpy().copy() for p in ps]


def torch_grads(ps):
    return [None if p.grad is None else p.grad.numpy().copy() for p in ps]


def assert_grads_equal(ours, theirs, rtol):
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        if b is None:
            assert a is None
            continue
        assert a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=rtol, atol=0, equal_nan=True)


# --------------------------------------------------------------------------
# the silent wrong result: a NaN that is not in the first gradient


@pytest.mark.parametrize("norm_type", [INF, 2.0, 1.0, -INF, 3.0])
@pytest.mark.parametrize("where", [0, 1, 2])
def test_nan_in_any_gradient_makes_the_total_nan(norm_type, where):
    arrays = grads_for(np.float64)
    arrays[where].flat[1] = NAN
    ps = make_cygrad(arrays)
    total = utils.clip_grad_norm_(ps, 1.0, norm_type=norm_type)
    assert math.isnan(total.item())
    # the NaN coefficient reaches every gradient, as torch's multiply does
    for p in ps:
        assert np.isnan(p.grad.numpy()).all()


@pytest.mark.parametrize("where", [0, 1, 2])
def test_nan_with_error_if_nonfinite_raises_and_changes_nothing(where):
    arrays = grads_for(np.float32)
    arrays[where].flat[0] = NAN
    ps = make_cygrad(arrays)
    before = cy_grads(ps)
    versions = [p.grad._version for p in ps]
    with pytest.raises(RuntimeError, match="non-finite, so it cannot be clipped"):
        utils.clip_grad_norm_(ps, 1.0, norm_type=INF, error_if_nonfinite=True)
    for p, b, v in zip(ps, before, versions):
        np.testing.assert_array_equal(p.grad.numpy(), b)
        assert p.grad._version == v


@pytest.mark.parametrize("norm_type", [INF, 2.0])
@pytest.mark.parametrize("where", [0, 2])
def test_nan_matches_torch(norm_type, where):
    torch = pytest.importorskip("torch")
    arrays = grads_for(np.float64)
    arrays[where].flat[3] = NAN
    ps, tps = make_cygrad(arrays), make_torch(torch, arrays)
    ours = utils.clip_grad_norm_(ps, 1.0, norm_type=norm_type)
    theirs = torch.nn.utils.clip_grad_norm_(tps, 1.0, norm_type=norm_type)
    assert math.isnan(ours.item()) and math.isnan(theirs.item())
    assert_grads_equal(cy_grads(ps), torch_grads(tps), 0)
    with pytest.raises(RuntimeError) as ours_err:
        utils.clip_grad_norm_(ps, 1.0, norm_type, error_if_nonfinite=True)
    with pytest.raises(RuntimeError) as theirs_err:
        torch.nn.utils.clip_grad_norm_(tps, 1.0, norm_type, error_if_nonfinite=True)
    assert str(ours_err.value) == str(theirs_err.value)


def test_infinite_gradient():
    torch = pytest.importorskip("torch")
    arrays = grads_for(np.float64)
    arrays[1].flat[0] = -INF
    for norm_type in ORDERS:
        ps, tps = make_cygrad(arrays), make_torch(torch, arrays)
        ours = utils.clip_grad_norm_(ps, 1.0, norm_type=norm_type)
        theirs = torch.nn.utils.clip_grad_norm_(tps, 1.0, norm_type=norm_type)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        assert_grads_equal(cy_grads(ps), torch_grads(tps), 0)


# --------------------------------------------------------------------------
# every order, both dtypes, against torch


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("norm_type", ORDERS)
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm_matches_torch(norm_type, dtype, max_norm):
    torch = pytest.importorskip("torch")
    arrays = grads_for(dtype, seed=3)
    arrays[1][2] = 0.0  # the 0-norm counts non-zeros
    ps = make_cygrad(arrays, no_grad_at=(2,))
    tps = make_torch(torch, arrays, no_grad_at=(2,))
    ours = utils.clip_grad_norm_(ps, max_norm, norm_type=norm_type)
    theirs = torch.nn.utils.clip_grad_norm_(tps, max_norm, norm_type=norm_type)
    rtol = 1e-14 if dtype == np.float64 else 1e-6
    assert ours.dtype == cygrad.float64 if dtype == np.float64 else cygrad.float32
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=rtol)
    assert_grads_equal(cy_grads(ps), torch_grads(tps), rtol)


def test_zero_norm_counts_tensors_with_a_non_zero_norm_as_torch():
    # per-tensor 0-norms are [1, 0, 2]; the 0-norm of those is 2, not 3
    arrays = [np.array([1.0, 0, 0]), np.zeros(3), np.array([2.0, 3.0, 0])]
    total = utils.get_total_norm([cygrad.from_numpy(a) for a in arrays], 0)
    assert total.item() == 2.0


def test_get_total_norm_and_clip_grads_with_norm_match_torch():
    torch = pytest.importorskip("torch")
    arrays = grads_for(np.float32, seed=5)
    for norm_type in ORDERS:
        ours = utils.get_total_norm([cygrad.from_numpy(a) for a in arrays], norm_type)
        theirs = torch.nn.utils.get_total_norm(
            [torch.from_numpy(a) for a in arrays], norm_type
        )
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    ps, tps = make_cygrad(arrays), make_torch(torch, arrays)
    utils.clip_grads_with_norm_(ps, 0.3, cygrad.tensor(7.0))
    torch.nn.utils.clip_grads_with_norm_(tps, 0.3, torch.tensor(7.0))
    assert_grads_equal(cy_grads(ps), torch_grads(tps), 0)


def test_mixed_dtypes_give_a_float64_total():
    torch = pytest.importorskip("torch")
    arrays = [grads_for(np.float64)[0], grads_for(np.float32)[1]]
    ps, tps = make_cygrad(arrays), make_torch(torch, arrays)
    ours = utils.clip_grad_norm_(ps, 0.1)
    theirs = torch.nn.utils.clip_grad_norm_(tps, 0.1)
    assert ours.dtype == cygrad.float64
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-7)
    assert_grads_equal(cy_grads(ps), torch_grads(tps), 1e-7)


def test_nothing_to_clip():
    p = cygrad.zeros(3, requires_grad=True)
    total = utils.clip_grad_norm_([p], 1.0)
    assert total.item() == 0.0 and total.dtype == cygrad.float32
    assert utils.get_total_norm([]).item() == 0.0
    utils.clip_grads_with_norm_([p], 1.0, cygrad.tensor(3.0))
    utils.clip_grad_value_([p], 1.0)
    assert p.grad is None


def test_single_tensor_and_generator_arguments():
    arrays = grads_for(np.float64)
    ps = make_cygrad(arrays)
    total = utils.clip_grad_norm_((p for p in ps), 1e-3)
    expected = math.sqrt(sum(float((a * a).sum()) for a in arrays))
    assert total.item() == pytest.approx(expected, rel=1e-14)
    after = math.sqrt(sum(float((p.grad.numpy() ** 2).sum()) for p in ps))
    assert after == pytest.approx(1e-3, rel=1e-5)
    one = make_cygrad(arrays[:1])[0]
    total = utils.clip_grad_norm_(one, 1e3, norm_type=INF)
    assert total.item() == np.abs(arrays[0]).max()


def test_deprecated_alias_warns():
    ps = make_cygrad(grads_for(np.float64))
    with pytest.warns(FutureWarning, match="deprecated"):
        utils.clip_grad_norm(ps, 1.0)


# --------------------------------------------------------------------------
# clip_grad_value_


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
def test_clip_grad_value_matches_torch(dtype):
    torch = pytest.importorskip("torch")
    arrays = grads_for(dtype, seed=2)
    arrays[0].flat[0] = NAN
    arrays[1].flat[1] = INF
    arrays[2].flat[2] = -INF
    ps = make_cygrad(arrays, no_grad_at=(1,))
    tps = make_torch(torch, arrays, no_grad_at=(1,))
    utils.clip_grad_value_(ps, 0.7)
    torch.nn.utils.clip_grad_value_(tps, 0.7)
    assert_grads_equal(cy_grads(ps), torch_grads(tps), 0)
    assert np.isnan(ps[0].grad.numpy().flat[0])


def test_clip_grad_value_on_a_strided_gradient():
    base = np.arange(-12.0, 12.0).reshape(4, 6)
    base[0, 0] = NAN
    p = cygrad.zeros(6, 4, dtype=cygrad.float64, requires_grad=True)
    p.grad = cygrad.from_numpy(base).t()  # a transposed view
    assert not p.grad._arr.flags.c_contiguous
    v = p.grad._version
    utils.clip_grad_value_([p], 2.5)
    expected = np.clip(base, -2.5, 2.5).T
    np.testing.assert_array_equal(p.grad.numpy(), expected)
    assert p.grad._version > v


def test_clip_grad_norm_on_a_strided_gradient():
    base = np.arange(1.0, 25.0).reshape(4, 6)
    p = cygrad.zeros(6, 4, dtype=cygrad.float64, requires_grad=True)
    p.grad = cygrad.from_numpy(base.copy()).t()
    total = utils.clip_grad_norm_([p], 1.0)
    assert total.item() == pytest.approx(np.linalg.norm(base), rel=1e-14)
    np.testing.assert_allclose(
        p.grad.numpy(), base.T / (np.linalg.norm(base) + 1e-6), rtol=1e-14
    )


def test_total_norm_over_random_shapes_matches_torch():
    torch = pytest.importorskip("torch")
    from hypothesis import given
    from hypothesis import strategies as st
    from hypothesis.extra.numpy import array_shapes, arrays

    finite = st.floats(-1e3, 1e3, width=32)
    tensors = st.lists(arrays(np.float64, array_shapes(max_dims=3, max_side=6),
                              elements=finite), min_size=1, max_size=5)

    @given(tensors, st.sampled_from(ORDERS), st.floats(1e-3, 10.0))
    def check(arrays_, norm_type, max_norm):
        ps, tps = make_cygrad(arrays_), make_torch(torch, arrays_)
        ours = utils.clip_grad_norm_(ps, max_norm, norm_type=norm_type)
        theirs = torch.nn.utils.clip_grad_norm_(tps, max_norm, norm_type=norm_type)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
        assert_grads_equal(cy_grads(ps), torch_grads(tps), 1e-12)

    check()
