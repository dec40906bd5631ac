"""The layers of issue 18 against torch: values, gradients, reprs, errors."""

import functools
import warnings

import numpy as np
import pytest

import cygrad
import cygrad.nn as nn
import cygrad.nn.functional as F

torch = pytest.importorskip("torch")

from torch_pairs import check, close
from torch_pairs import rand as _rand

# these cases count NaN where torch has NaN as equal
_close = functools.partial(close, nan=True)
_check = functools.partial(check, nan=True)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_channel_shuffle(dtype):
    x = _rand(2, 6, 3, 2)
    for g in (1, 2, 3, 6):
        _check(lambda a: F.channel_shuffle(a, g),
               lambda a: torch.nn.functional.channel_shuffle(a, g), [x], dtype)
        _check(lambda a: nn.ChannelShuffle(g)(a),
               lambda a: torch.nn.ChannelShuffle(g)(a), [x], dtype)
    # torch's native form has no derivative: values only
    _close(F.native_channel_shuffle(cygrad.tensor(x), 2),
           torch.nn.functional.native_channel_shuffle(torch.tensor(x), 2), 0)
    assert repr(nn.ChannelShuffle(3)) == repr(torch.nn.ChannelShuffle(3))


def test_channel_shuffle_errors():
    x = cygrad.randn(2, 5, 3)
    with pytest.raises(RuntimeError, match="divisible by groups"):
        F.channel_shuffle(x, 2)
    with pytest.raises(RuntimeError, match="must be positive"):
        F.channel_shuffle(x, 0)


def test_pool_with_indices():
    x = _rand(2, 3, 7, 6)
    for fn, args in [("max_pool2d_with_indices", (3, 2, 1)),
                     ("adaptive_max_pool2d_with_indices", ((3, 2),))]:
        yc, ic = getattr(F, fn)(cygrad.tensor(x), *args)
        yt, it = getattr(torch.nn.functional, fn)(torch.tensor(x), *args)
        _close(yc, yt, 1e-12)
        np.testing.assert_array_equal(ic.numpy(), it.numpy())
    x1 = _rand(2, 3, 9)
    for fn, args in [("max_pool1d_with_indices", (3, 2, 1)),
                     ("adaptive_max_pool1d_with_indices", (4,))]:
        yc, ic = getattr(F, fn)(cygrad.tensor(x1), *args)
        yt, it = getattr(torch.nn.functional, fn)(torch.tensor(x1), *args)
        _close(yc, yt, 1e-12)
        np.testing.assert_array_equal(ic.numpy(), it.numpy())
    _check(lambda a: F.max_pool2d_with_indices(a, 2)[0],
           lambda a: torch.nn.functional.max_pool2d_with_indices(a, 2)[0], [x])


def test_upsample_aliases():
    x = _rand(1, 2, 3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _check(lambda a: F.upsample(a, scale_factor=2),
               lambda a: torch.nn.functional.upsample(a, scale_factor=2), [x])
        _check(lambda a: F.upsample(a, size=(5, 7), mode="bilinear", align_corners=False),
               lambda a: torch.nn.functional.upsample(a, size=(5, 7), mode="bilinear",
                                                      align_corners=False), [x])
        _check(lambda a: F.upsample_nearest(a, size=(6, 5)),
               lambda a: torch.nn.functional.upsample_nearest(a, size=(6, 5)), [x])
        _check(lambda a: F.upsample_bilinear(a, scale_factor=2),
               lambda a: torch.nn.functional.upsample_bilinear(a, scale_factor=2), [x])
    with pytest.warns(UserWarning, match="deprecated"):
        F.upsample_nearest(cygrad.tensor(x), scale_factor=2)


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, 0.5])
def test_pdist(p):
    x = _rand(5, 4)
    _check(lambda a: F.pdist(a, p), lambda a: torch.nn.functional.pdist(a, p), [x])
    _check(lambda a: F.pdist(a, p), lambda a: torch.nn.functional.pdist(a, p), [x],
           np.float32)


def test_pdist_edge_and_errors():
    assert tuple(F.pdist(cygrad.randn(1, 3)).shape) == (0,)
    with pytest.raises(RuntimeError, match="2D"):
        F.pdist(cygrad.randn(2, 3, 4))
    with pytest.raises(RuntimeError, match="non-negative"):
        F.pdist(cygrad.randn(3, 4), -1)


def test_pdist_gradcheck():
    x = cygrad.tensor(_rand(4, 3), requires_grad=True)
    assert cygrad.autograd.gradcheck(lambda a: F.pdist(a), (x,))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fold_unfold_modules(dtype):
    x = _rand(2, 3, 5, 6)
    _check(lambda a: nn.Unfold((2, 3), 1, 1, 2)(a),
           lambda a: torch.nn.Unfold((2, 3), 1, 1, 2)(a), [x], dtype)
    cols = _rand(2, 12, 12)
    _check(lambda a: nn.Fold((4, 5), 2, 1, 0, 1)(a),
           lambda a: torch.nn.Fold((4, 5), 2, 1, 0, 1)(a), [cols], dtype)
    assert repr(nn.Fold((4, 5), 2)) == repr(torch.nn.Fold((4, 5), 2))
    assert repr(nn.Unfold(2, padding=1)) == repr(torch.nn.Unfold(2, padding=1))


def test_distance_modules():
    a, b = _rand(4, 5), _rand(4, 5, seed=1)
    _check(lambda x, y: nn.PairwiseDistance(3.0, 1e-3, True)(x, y),
           lambda x, y: torch.nn.PairwiseDistance(3.0, 1e-3, True)(x, y), [a, b])
    _check(lambda x, y: nn.CosineSimilarity(0)(x, y),
           lambda x, y: torch.nn.CosineSimilarity(0)(x, y), [a, b])
    m = nn.PairwiseDistance()
    assert (m.norm, m.eps, m.keepdim) == (2.0, 1e-6, False)
    assert repr(m) == repr(torch.nn.PairwiseDistance())
    assert repr(nn.CosineSimilarity()) == repr(torch.nn.CosineSimilarity())


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0])
def test_lp_pool(p):
    x = np.abs(_rand(2, 3, 7, 8)) + 0.1
    _check(lambda a: F.lp_pool2d(a, p, (2, 3), 2),
           lambda a: torch.nn.functional.lp_pool2d(a, p, (2, 3), 2), [x])
    _check(lambda a: nn.LPPool2d(p, 3, ceil_mode=True)(a),
           lambda a: torch.nn.LPPool2d(p, 3, ceil_mode=True)(a), [x])
    x1 = np.abs(_rand(2, 3, 9)) + 0.1
    _check(lambda a: F.lp_pool1d(a, p, 3),
           lambda a: torch.nn.functional.lp_pool1d(a, p, 3), [x1])
    _check(lambda a: nn.LPPool1d(p, 2, 1)(a), lambda a: torch.nn.LPPool1d(p, 2, 1)(a),
           [x1], np.float32)
    assert repr(nn.LPPool1d(p, 2, 1)) == repr(torch.nn.LPPool1d(p, 2, 1))


def test_lp_pool_signed_input():
    # odd p on signed input: torch's sign/relu form, values only
    x = _rand(2, 2, 6, 6)
    yc = F.lp_pool2d(cygrad.tensor(x), 3.0, 2)
    yt = torch.nn.functional.lp_pool2d(torch.tensor(x), 3.0, 2)
    _close(yc, yt, 1e-10)


@pytest.mark.parametrize("shape", [(2, 7, 5), (2, 6, 3, 4), (1, 5, 2, 3, 2)])
@pytest.mark.parametrize("size", [1, 2, 3, 4])
def test_local_response_norm(shape, size):
    x = _rand(*shape)
    _check(lambda a: F.local_response_norm(a, size, 0.1, 0.6, 2.0),
           lambda a: torch.nn.functional.local_response_norm(a, size, 0.1, 0.6, 2.0),
           [x])
    _check(lambda a: nn.LocalResponseNorm(size)(a),
           lambda a: torch.nn.LocalResponseNorm(size)(a), [x], np.float32)


def test_local_response_norm_errors_repr():
    with pytest.raises(ValueError, match="3D or higher"):
        F.local_response_norm(cygrad.randn(2, 3), 2)
    assert repr(nn.LocalResponseNorm(3, k=2.0)) == repr(torch.nn.LocalResponseNorm(3, k=2.0))


def test_lrn_gradcheck():
    x = cygrad.tensor(_rand(2, 5, 3), requires_grad=True)
    assert cygrad.autograd.gradcheck(lambda a: F.local_response_norm(a, 3, 0.5), (x,))


def _copy_params(mc, mt):
    for (nc, pc), (nt, pt) in zip(mc.named_parameters(), mt.named_parameters()):
        assert nc == nt
        pc.data = cygrad.tensor(pt.detach().numpy().copy())


@pytest.mark.parametrize("nd", [1, 2])
def test_lazy_conv_transpose(nd):
    cls_c = getattr(nn, f"LazyConvTranspose{nd}d")
    cls_t = getattr(torch.nn, f"LazyConvTranspose{nd}d")
    kw = dict(stride=2, padding=1, output_padding=1, groups=2, dilation=1)
    mc, mt = cls_c(4, 3, **kw).double(), cls_t(4, 3, **kw).double()
    assert repr(mc) == repr(mt)
    x = _rand(*((2, 6) + (5,) * nd))
    mc(cygrad.tensor(x))
    mt(torch.tensor(x))
    assert type(mc).__name__ == type(mt).__name__ == f"ConvTranspose{nd}d"
    assert tuple(mc.weight.shape) == tuple(mt.weight.shape)
    assert repr(mc) == repr(mt)
    _copy_params(mc, mt)
    _check(mc, mt, [x])


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("affine,track", [(True, True), (False, False)])
def test_lazy_instance_norm(nd, affine, track):
    cls_c = getattr(nn, f"LazyInstanceNorm{nd}d")
    cls_t = getattr(torch.nn, f"LazyInstanceNorm{nd}d")
    mc = cls_c(affine=affine, track_running_stats=track).double()
    mt = cls_t(affine=affine, track_running_stats=track).double()
    x = _rand(*((2, 3) + (4,) * nd))
    _check(mc, mt, [x])
    assert type(mc).__name__ == type(mt).__name__ == f"InstanceNorm{nd}d"
    assert repr(mc) == repr(mt)
    assert [n for n, _ in mc.named_parameters()] == [n for n, _ in mt.named_parameters()]
    assert list(mc.state_dict()) == list(mt.state_dict())
    if track:
        _close(mc.running_mean, mt.running_mean, 1e-12)
        _close(mc.running_var, mt.running_var, 1e-12)


def test_lazy_instance_norm_unbatched():
    # torch reads dimension 1 even of unbatched input, then rejects it
    x = _rand(3, 6)
    with pytest.raises(ValueError) as et:
        torch.nn.LazyInstanceNorm1d()(torch.tensor(x))
    with pytest.raises(ValueError) as ec:
        nn.LazyInstanceNorm1d()(cygrad.tensor(x))
    assert "num_features (6)" in str(et.value) and "num_features (6)" in str(ec.value)


def test_lazy_batch_norm3d():
    mc, mt = nn.LazyBatchNorm3d().double(), torch.nn.LazyBatchNorm3d().double()
    x = _rand(2, 3, 2, 3, 2)
    _check(mc, mt, [x])
    assert type(mc).__name__ == "BatchNorm3d"
    assert repr(mc) == repr(mt)
    _close(mc.running_var, mt.running_var, 1e-12)
    with pytest.raises(ValueError, match="5D"):
        nn.LazyBatchNorm3d()(cygrad.randn(2, 3, 4))
