"""Max/average/adaptive pooling and Flatten: NumPy closed forms, torch
module-to-module, gradcheck/gradgradcheck in float64, hypothesis over
geometry, bad input."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cygrad
from cygrad import nn
from cygrad.autograd import gradcheck, gradgradcheck
from cygrad.nn import functional as F

TOL64 = dict(rtol=1e-10, atol=1e-12)


def _t(a, requires_grad=False):
    return cygrad.tensor(np.asarray(a), requires_grad=requires_grad)


# ---------------------------------------------------------------------------
# closed forms (no torch needed)


def test_max_pool_2x2_is_a_block_maximum():
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 8))
    y, idx = F.max_pool2d(_t(x), 2, return_indices=True)
    blocks = x.reshape(2, 3, 3, 2, 4, 2)
    np.testing.assert_array_equal(y.numpy(), blocks.max(axis=(3, 5)))
    flat = x.reshape(2, 3, -1)
    np.testing.assert_array_equal(
        np.take_along_axis(flat, idx.numpy().reshape(2, 3, -1), axis=2),
        y.numpy().reshape(2, 3, -1))
    assert idx.dtype == cygrad.int64


def test_max_pool_gradient_goes_to_the_first_maximum():
    x = _t(np.ones((1, 1, 2, 2)), True)
    F.max_pool2d(x, 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[[[1.0, 0.0], [0.0, 0.0]]]])


def test_avg_pool_2x2_is_a_block_mean_and_gradient_is_uniform():
    x = _t(np.random.default_rng(1).standard_normal((2, 3, 4, 6)), True)
    y = F.avg_pool2d(x, 2)
    np.testing.assert_allclose(y.detach().numpy(),
                               x.detach().numpy().reshape(2, 3, 2, 2, 3, 2)
                               .mean(axis=(3, 5)), **TOL64)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full((2, 3, 4, 6), 0.25))


def test_adaptive_avg_pool_to_one_is_the_spatial_mean():
    x = np.random.default_rng(2).standard_normal((2, 3, 5, 7))
    y = F.adaptive_avg_pool2d(_t(x), 1)
    np.testing.assert_allclose(y.numpy(), x.mean(axis=(2, 3), keepdims=True), **TOL64)
    y = F.adaptive_max_pool2d(_t(x), (1, 1))
    np.testing.assert_array_equal(y.numpy(), x.max(axis=(2, 3), keepdims=True))


POOLS = [
    lambda x: F.max_pool2d(x, 3, 2, 1),
    lambda x: F.max_pool2d(x, (2, 3), (1, 2), (1, 1), dilation=(2, 1), ceil_mode=True),
    lambda x: F.avg_pool2d(x, 3, 2, 1),
    lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
    lambda x: F.avg_pool2d(x, 2, 1, divisor_override=3),
    lambda x: F.adaptive_avg_pool2d(x, (3, 4)),
    lambda x: F.adaptive_max_pool2d(x, (4, 3)),
    lambda x: F.max_pool1d(x[0], 3, 2, 1),
    lambda x: F.avg_pool1d(x[0], 3, 2, 1, ceil_mode=True),
    lambda x: F.adaptive_avg_pool1d(x[0], 4),
    lambda x: F.adaptive_max_pool1d(x[0], 3),
]


@pytest.mark.parametrize("i", range(len(POOLS)))
def test_pool_gradcheck_and_gradgradcheck(i):
    # distinct values, so the maxima are isolated and finite differences valid
    vals = np.random.default_rng(3).permutation(2 * 3 * 7 * 6) / 17.0
    x = _t(vals.reshape(2, 3, 7, 6), True)
    assert gradcheck(POOLS[i], [x])
    assert gradgradcheck(POOLS[i], [x])


def test_flatten_and_unflatten():
    x = _t(np.arange(24.0).reshape(2, 3, 4), True)
    y = nn.Flatten()(x)
    assert tuple(y.shape) == (2, 12)
    assert tuple(nn.Flatten(0, 1)(x).shape) == (6, 4)
    z = nn.Unflatten(1, (3, -1))(y)
    np.testing.assert_array_equal(z.detach().numpy(), x.detach().numpy())
    z.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((2, 3, 4)))
    with pytest.raises(RuntimeError, match="don't multiply up to the size of dim 1"):
        nn.Unflatten(1, (5, 3))(y)
    with pytest.raises(TypeError, match="unflattened_size must be tuple of ints"):
        nn.Unflatten(1, 12)


# ---------------------------------------------------------------------------
# against torch


def _vs_torch(torch, cmod, tmod, x, dtype=np.float64):
    tol = TOL64 if dtype == np.float64 else dict(rtol=1e-5, atol=1e-6)
    x = x.astype(dtype)
    tx = torch.tensor(x, requires_grad=True)
    cx = cygrad.tensor(x, requires_grad=True)
    ty, cy = tmod(tx), cmod(cx)
    if isinstance(ty, tuple):
        np.testing.assert_array_equal(cy[1].numpy(), ty[1].numpy())
        ty, cy = ty[0], cy[0]
    assert tuple(cy.shape) == tuple(ty.shape)
    np.testing.assert_allclose(cy.detach().numpy(), ty.detach().numpy(), **tol)
    g = np.random.default_rng(5).standard_normal(tuple(ty.shape)).astype(dtype)
    ty.backward(torch.tensor(g))
    cy.backward(cygrad.tensor(g))
    np.testing.assert_allclose(cx.grad.numpy(), tx.grad.numpy(), **tol)


MODULES = [
    ("MaxPool2d", dict(kernel_size=2)),
    ("MaxPool2d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                       return_indices=True)),
    ("MaxPool2d", dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1),
                       dilation=(2, 1))),
    ("MaxPool1d", dict(kernel_size=3, stride=2, padding=1, return_indices=True)),
    ("MaxPool1d", dict(kernel_size=2, dilation=2, ceil_mode=True)),
    ("AvgPool2d", dict(kernel_size=3, stride=2, padding=1)),
    ("AvgPool2d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                       count_include_pad=False)),
    ("AvgPool2d", dict(kernel_size=(2, 3), divisor_override=4)),
    ("AvgPool1d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("AvgPool1d", dict(kernel_size=4, count_include_pad=False, padding=2)),
    ("AdaptiveAvgPool2d", dict(output_size=(3, 4))),
    ("AdaptiveAvgPool2d", dict(output_size=(None, 2))),
    ("AdaptiveAvgPool1d", dict(output_size=5)),
    ("AdaptiveMaxPool2d", dict(output_size=(4, 3), return_indices=True)),
    ("AdaptiveMaxPool1d", dict(output_size=4)),
]


@pytest.mark.parametrize("cls,kw", MODULES, ids=lambda v: str(v))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_pool_modules_match_torch(cls, kw, dtype):
    torch = pytest.importorskip("torch")
    cmod, tmod = getattr(nn, cls)(**kw), getattr(torch.nn, cls)(**kw)
    assert repr(cmod) == repr(tmod)
    rng = np.random.default_rng(4)
    shape = (2, 3, 9, 10) if cls.endswith("2d") else (2, 3, 11)
    _vs_torch(torch, cmod, tmod, rng.standard_normal(shape), dtype)
    _vs_torch(torch, cmod, tmod, rng.standard_normal(shape[1:]), dtype)  # unbatched
    # ties: rounded values repeat, the first maximum must win as in torch
    _vs_torch(torch, cmod, tmod, np.round(rng.standard_normal(shape)), dtype)


def test_max_pool_nan_and_inf_like_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(6).standard_normal((1, 2, 6, 6))
    x[0, 0, 1, 1] = np.nan
    x[0, 0, 1, 3] = np.nan
    x[0, 1, :3, :3] = -np.inf
    for kw in (dict(kernel_size=2), dict(kernel_size=3, stride=1, padding=1)):
        cy, ci = F.max_pool2d(_t(x), return_indices=True, **kw)
        ty, ti = torch.nn.functional.max_pool2d(torch.tensor(x), return_indices=True,
                                                **kw)
        np.testing.assert_array_equal(cy.numpy(), ty.numpy())
        np.testing.assert_array_equal(ci.numpy(), ti.numpy())


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_hypothesis_pool_geometry_vs_torch(data):
    torch = pytest.importorskip("torch")
    kind = data.draw(st.sampled_from(["max", "avg"]))
    kh, kw = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))
    sh, sw = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    ph, pw = data.draw(st.integers(0, kh // 2)), data.draw(st.integers(0, kw // 2))
    dil = (data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2))) \
        if kind == "max" else (1, 1)
    ceil = data.draw(st.booleans())
    h = data.draw(st.integers(max(1, dil[0] * (kh - 1) + 1 - 2 * ph), 9))
    w = data.draw(st.integers(max(1, dil[1] * (kw - 1) + 1 - 2 * pw), 9))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    x = rng.standard_normal((2, 2, h, w))
    if kind == "max":
        kwargs = dict(kernel_size=(kh, kw), stride=(sh, sw), padding=(ph, pw),
                      dilation=dil, ceil_mode=ceil)
        cfn, tfn = F.max_pool2d, torch.nn.functional.max_pool2d
    else:
        kwargs = dict(kernel_size=(kh, kw), stride=(sh, sw), padding=(ph, pw),
                      ceil_mode=ceil, count_include_pad=data.draw(st.booleans()))
        cfn, tfn = F.avg_pool2d, torch.nn.functional.avg_pool2d
    _vs_torch(torch, lambda t: cfn(t, **kwargs), lambda t: tfn(t, **kwargs), x)


@settings(max_examples=30, deadline=None)
@given(h=st.integers(1, 12), w=st.integers(1, 12), oh=st.integers(1, 6),
       ow=st.integers(1, 6))
def test_hypothesis_adaptive_vs_torch(h, w, oh, ow):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(h * 100 + w).standard_normal((1, 2, h, w))
    for cfn, tfn in ((F.adaptive_avg_pool2d, torch.nn.functional.adaptive_avg_pool2d),
                     (F.adaptive_max_pool2d, torch.nn.functional.adaptive_max_pool2d)):
        _vs_torch(torch, lambda t: cfn(t, (oh, ow)), lambda t: tfn(t, (oh, ow)), x)


def test_flatten_module_matches_torch():
    torch = pytest.importorskip("torch")
    for kw in (dict(), dict(start_dim=0, end_dim=1), dict(start_dim=2)):
        assert repr(nn.Flatten(**kw)) == repr(torch.nn.Flatten(**kw))
    assert repr(nn.Unflatten(1, (2, 3))) == repr(torch.nn.Unflatten(1, (2, 3)))


# ---------------------------------------------------------------------------
# bad input


def test_pool_bad_input():
    with pytest.raises(RuntimeError, match=r"Given input size: \(3x1x1\). Calculated "
                                           r"output size: \(3x0x0\). Output size is "
                                           r"too small"):
        nn.MaxPool2d(2)(cygrad.randn(2, 3, 1, 1))
    with pytest.raises(RuntimeError, match="pad should be at most half of effective "
                                           "kernel size, but got pad=2, kernel_size=3"):
        nn.AvgPool2d(3, padding=2)(cygrad.randn(2, 3, 5, 5))
    with pytest.raises(RuntimeError, match=r"non-empty 3D or 4D \(batch mode\) tensor "
                                           r"expected for input"):
        nn.MaxPool2d(2)(cygrad.randn(3, 5))
    with pytest.raises(RuntimeError, match=r"adaptive_avg_pool2d\(\): Expected 3D or "
                                           r"4D tensor, but got \[2, 4\]"):
        nn.AdaptiveAvgPool2d(3)(cygrad.randn(2, 4))
    with pytest.raises(RuntimeError, match="divisor must be not zero"):
        F.avg_pool2d(cygrad.randn(1, 1, 4, 4), 2, divisor_override=0)


def test_pool_error_types_match_torch():
    torch = pytest.importorskip("torch")
    cases = [
        lambda M: M.nn.MaxPool2d(2)(M.randn(2, 3, 1, 1)),
        lambda M: M.nn.MaxPool2d(3, padding=2)(M.randn(2, 3, 5, 5)),
        lambda M: M.nn.MaxPool1d(2)(M.randn(2, 3, 1)),
        lambda M: M.nn.AvgPool2d(2)(M.randn(3, 5)),
        lambda M: M.nn.AdaptiveMaxPool2d(2)(M.randn(4)),
    ]
    for case in cases:
        with pytest.raises(Exception) as te:
            case(torch)
        with pytest.raises(Exception) as ce:
            case(cygrad)
        assert type(ce.value) is type(te.value), (ce.value, te.value)


def test_window_wholly_in_padding_is_minus_inf_with_no_gradient():
    """kernel 2, dilation 2, padding 1 on one row: the only output row's taps
    are rows -1 and 1, both padding.  cygrad gives -inf and index -1 (the
    gradient skips it); torch 2.13 reports an index outside the plane there
    and its backward writes out of bounds, so this is not compared."""
    x = _t(np.arange(6.0).reshape(1, 1, 1, 6), True)
    y, idx = F.max_pool2d(x, (2, 1), 1, (1, 0), dilation=(2, 1), return_indices=True)
    assert tuple(y.shape) == (1, 1, 1, 6)
    assert np.all(np.isneginf(y.detach().numpy()))
    assert np.all(idx.numpy() == -1)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((1, 1, 1, 6)))
