"""Dropout layers: eval is the identity, training zeroes at rate p with the
1/(1-p) scale, masks per element or per channel, gradients through the mask,
inplace writes, and torch's errors and reprs."""

import numpy as np
import pytest

import cygrad
import cygrad.nn.functional as F
from cygrad import nn

torch = pytest.importorskip("torch")

CASES = [(nn.Dropout, (200, 300), None), (nn.Dropout1d, (40, 50, 30), (2,)),
         (nn.Dropout2d, (40, 50, 3, 4), (2, 3)), (nn.Dropout3d, (20, 50, 2, 3, 4),
                                                  (2, 3, 4))]


@pytest.mark.parametrize("cls,shape,shared", CASES)
def test_train_rate_scale_mask_and_grad(cls, shape, shared):
    cygrad.manual_seed(0)
    m = cls(0.3)
    x = cygrad.tensor(np.random.default_rng(0).uniform(1, 2, shape), requires_grad=True)
    y = m(x)
    out = y.detach().numpy()
    keep = out != 0
    draws = keep.size / np.prod([shape[d] for d in shared or ()])
    assert abs(keep.mean() - 0.7) < 4 * np.sqrt(0.21 / draws)   # 4 sigma
    np.testing.assert_allclose(out[keep], x.detach().numpy()[keep] / 0.7, rtol=1e-12)
    if shared:
        assert np.all(keep == keep.take([0], axis=shared[0]))  # one draw per channel
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), keep / 0.7, rtol=1e-12)
    m.eval()
    assert m(x) is x


def test_seeded_and_eval_and_edges():
    x = cygrad.randn(50, 60)
    cygrad.manual_seed(3)
    a = F.dropout(x, 0.5)
    cygrad.manual_seed(3)
    b = F.dropout(x, 0.5)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert F.dropout(x, 0.5, training=False) is x
    assert np.all(F.dropout(x, 1.0).numpy() == 0)
    assert F.dropout(x, 0.0) is x


def test_inplace_keeps_autograd_right():
    x = cygrad.tensor(np.ones((100, 100)), requires_grad=True)
    h = x * 2
    out = nn.Dropout(0.4, inplace=True)(h)
    assert out is h
    out.sum().backward()
    keep = h.detach().numpy() != 0
    np.testing.assert_allclose(x.grad.numpy(), keep * 2 / 0.6)
    leaf = cygrad.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        F.dropout(leaf, 0.5, inplace=True)
    plain = cygrad.ones(1000)
    F.dropout(plain, 0.5, inplace=True)
    assert set(np.unique(plain.numpy())) <= {0.0, 2.0}


def test_alpha_dropout_moments_and_eval():
    cygrad.manual_seed(1)
    x = cygrad.randn(400, 500, dtype=cygrad.float64)
    for fn in (F.alpha_dropout, F.feature_alpha_dropout):
        y = fn(x, 0.2, training=True).numpy()
        assert abs(y.mean()) < 0.02 and abs(y.std() - 1) < 0.02
        assert fn(x, 0.2) is x      # training defaults to False
    y = nn.AlphaDropout(0.5)(x).numpy()
    a = (0.5 * (1 + 0.5 * 1.7580993408473766 ** 2)) ** -0.5
    dropped = np.isclose(y, a * -1.7580993408473766 + a * 1.7580993408473766 * 0.5)
    assert abs(dropped.mean() - 0.5) < 0.01
    assert np.all(F.alpha_dropout(x, 1.0, True).numpy() == 0)


def test_errors_warnings_repr_match_torch():
    for cls in ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
                "FeatureAlphaDropout"):
        assert repr(getattr(nn, cls)(0.25, True)) == repr(getattr(torch.nn, cls)(0.25,
                                                                             True))
        with pytest.raises(ValueError, match="between 0 and 1, but got 1.5"):
            getattr(nn, cls)(1.5)
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input"):
        F.dropout1d(cygrad.ones(3))
    with pytest.warns(UserWarning, match="3D input to dropout2d"):
        F.dropout2d(cygrad.ones(2, 3, 4))
    with pytest.warns(UserWarning, match="2-D input to dropout2d"):
        F.dropout2d(cygrad.ones(2, 3))
    with pytest.warns(UserWarning):
        y = F.dropout2d(cygrad.ones(2, 30, 4), 0.5).numpy()   # (N, C, L) channels
    assert np.all(y == y[:, :, :1])
    z = F.dropout3d(cygrad.ones(30, 2, 3, 4), 0.5).numpy()   # unbatched (C, D, H, W)
    assert np.all(z == z[:, :1, :1, :1])


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
@pytest.mark.parametrize("fn", ["dropout", "dropout2d", "alpha_dropout",
                                "feature_alpha_dropout"])
def test_masks_are_torchs_after_the_same_seed(fn, p):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal((6, 5, 7)).astype(np.float32)
    cygrad.manual_seed(5)
    torch.manual_seed(5)
    ours = getattr(F, fn)(cygrad.tensor(x), p, True).numpy()
    theirs = getattr(torch.nn.functional, fn)(torch.tensor(x), p, True).numpy()
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(cygrad.get_rng_state().numpy(),
                                  torch.get_rng_state().numpy())


def test_masks_of_different_draws_are_uncorrelated():
    # consecutive calls draw their seeds from one generator: their masks must
    # agree no more often than independent coin flips would
    cygrad.manual_seed(0)
    x = cygrad.ones(200_000)
    a = F.dropout(x, 0.5).numpy() != 0
    b = F.dropout(x, 0.5).numpy() != 0
    assert abs((a == b).mean() - 0.5) < 4 * np.sqrt(0.25 / a.size)
    assert abs(np.corrcoef(a[:-1], a[1:])[0, 1]) < 4 / np.sqrt(a.size)
