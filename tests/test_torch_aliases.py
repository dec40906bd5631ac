"""cygrad.<name> forms of nn functions against torch.<name> (torch's native
signatures: positional ``train``, integer reductions, weight-first
``embedding``, the ``native_*`` tuples): values, gradients, errors."""

import numpy as np
import pytest

import cygrad

torch = pytest.importorskip("torch")

TOL = {np.float64: 1e-10, np.float32: 1e-5}


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _outputs(y):
    return list(y) if isinstance(y, (tuple, list)) else [y]


def _run(lib, fn, arrays, consts, dtype):
    ts = [lib.tensor(np.asarray(a, dtype=dtype), requires_grad=True) for a in arrays]
    cs = [None if c is None else lib.tensor(c if np.asarray(c).dtype.kind in "iub"
                                            else np.asarray(c, dtype=dtype))
          for c in consts]
    return ts, cs, fn(lib, *ts, *cs)


def check(fn, arrays, consts=(), dtype=np.float64, grad=True):
    """fn(lib, *grad_tensors, *const_tensors) agrees for lib = cygrad, torch."""
    tol = TOL[dtype]
    tc, _, yc = _run(cygrad, fn, arrays, consts, dtype)
    tt, _, yt = _run(torch, fn, arrays, consts, dtype)
    oc, ot = _outputs(yc), _outputs(yt)
    assert len(oc) == len(ot)
    for c, t in zip(oc, ot):
        assert tuple(c.shape) == tuple(t.shape)
        assert str(c.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_allclose(c.detach().numpy(), t.detach().numpy(), rtol=tol,
                                   atol=tol)
    if not grad:
        return
    g = np.random.default_rng(7).standard_normal(tuple(ot[0].shape)).astype(dtype)
    (oc[0] * cygrad.tensor(g)).sum().backward()
    (ot[0] * torch.tensor(g)).sum().backward()
    for c, t in zip(tc, tt):
        if t.grad is None:
            assert c.grad is None or not np.any(c.grad.numpy())
            continue
        np.testing.assert_allclose(c.grad.numpy(), t.grad.numpy(), rtol=tol, atol=tol)


X = _rand(4, 6)
X3 = _rand(2, 3, 5, seed=1)
X4 = _rand(2, 4, 3, 3, seed=2)
POS = np.abs(_rand(4, 6, seed=3)) + 0.1
SIGN = np.where(_rand(4, seed=4) > 0, 1.0, -1.0)
PROB = np.random.default_rng(5).random((4, 6))

CASES = {
    "dropout_eval": (lambda T, x: T.dropout(x, 0.5, False), [X], []),
    "dropout_p0": (lambda T, x: T.dropout(x, 0.0, True), [X], []),
    "alpha_dropout_eval": (lambda T, x: T.alpha_dropout(x, 0.3, False), [X], []),
    "feature_dropout_eval": (lambda T, x: T.feature_dropout(x, 0.3, False), [X3], []),
    "feature_alpha_dropout_eval": (
        lambda T, x: T.feature_alpha_dropout(x, 0.3, False), [X3], []),
    "batch_norm_train": (
        lambda T, x, w, b, rm, rv: T.batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5,
                                                True),
        [X3, _rand(3, seed=6), _rand(3, seed=7)], [np.zeros(3), np.ones(3)]),
    "batch_norm_eval": (
        lambda T, x, rm, rv: T.batch_norm(x, None, None, rm, rv, False, 0.1, 1e-5,
                                          False),
        [X3], [_rand(3, seed=8), POS[0, :3]]),
    "instance_norm": (
        lambda T, x, w, b: T.instance_norm(x, w, b, None, None, True, 0.1, 1e-5, True),
        [X3, _rand(3, seed=6), _rand(3, seed=7)], []),
    "layer_norm": (lambda T, x, w, b: T.layer_norm(x, (5,), w, b, 1e-5, True),
                   [X3, _rand(5, seed=6), _rand(5, seed=7)], []),
    "layer_norm_default": (lambda T, x: T.layer_norm(x, [3, 5]), [X3], []),
    "group_norm": (lambda T, x, w, b: T.group_norm(x, 2, w, b),
                   [X4, _rand(4, seed=6), _rand(4, seed=7)], []),
    "rms_norm": (lambda T, x, w: T.rms_norm(x, (5,), w, 1e-6),
                 [X3, _rand(5, seed=6)], []),
    "embedding": (lambda T, w, i: T.embedding(w, i), [X],
                  [np.array([[0, 2], [3, 3]])]),
    "embedding_padding": (lambda T, w, i: T.embedding(w, i, 2), [X],
                          [np.array([[0, 2], [3, 2]])]),
    "embedding_bag_sum": (lambda T, w, i, o: T.embedding_bag(w, i, o), [X],
                          [np.array([1, 2, 3, 3, 0, 1]), np.array([0, 2, 2, 5])]),
    "embedding_bag_mean": (
        lambda T, w, i, o: T.embedding_bag(w, i, o, False, 1), [X],
        [np.array([1, 2, 3, 3, 0, 1]), np.array([0, 2, 2, 5])]),
    "embedding_bag_max": (
        lambda T, w, i, o: T.embedding_bag(w, i, o, False, 2), [X],
        [np.array([1, 2, 3, 3, 0, 1]), np.array([0, 2, 2, 5])]),
    "embedding_bag_padding": (
        lambda T, w, i, o: T.embedding_bag(w, i, o, False, 2, False, None, False, 3),
        [X], [np.array([1, 2, 3, 3, 0, 1]), np.array([0, 2, 2, 5])]),
    "embedding_bag_mean_padding": (
        lambda T, w, i, o: T.embedding_bag(w, i, o, False, 1, False, None, True, 3),
        [X], [np.array([1, 2, 3, 3, 0, 1]), np.array([0, 2, 2, 6])]),
    "embedding_bag_weights": (
        lambda T, w, i, o, p: T.embedding_bag(w, i, o, False, 0, False, p), [X],
        [np.array([1, 2, 3, 3, 0, 1]), np.array([0, 2, 2, 5]), PROB[0]]),
    "bilinear": (lambda T, a, b, w, c: T.bilinear(a, b, w, c),
                 [_rand(3, 4), _rand(3, 5, seed=1), _rand(2, 4, 5, seed=2),
                  _rand(2, seed=3)], []),
    "celu": (lambda T, x: T.celu(x, 0.5), [X], []),  # 1/alpha exact in float32
    "prelu": (lambda T, x, w: T.prelu(x, w), [X3, np.array([0.1, 0.2, 0.3])], []),
    "rrelu_eval": (lambda T, x: T.rrelu(x, 0.1, 0.4), [X], []),
    "threshold": (lambda T, x: T.threshold(x, 0.2, -1.0), [X], []),
    "hardshrink": (lambda T, x: T.hardshrink(x, 0.4), [X], []),
    "hardshrink_default": (lambda T, x: T.hardshrink(x), [X], []),
    "pixel_shuffle": (lambda T, x: T.pixel_shuffle(x, 2), [X4], []),
    "pixel_unshuffle": (lambda T, x: T.pixel_unshuffle(x, 3), [X4], []),
    "channel_shuffle": (lambda T, x: T.channel_shuffle(x, 2), [X4], []),
    "native_channel_shuffle": (lambda T, x: T.native_channel_shuffle(x, 2), [X4], []),
    "pdist": (lambda T, x: T.pdist(x), [X], []),
    "pdist_p1": (lambda T, x: T.pdist(x, 1.0), [X], []),
    "pairwise_distance": (lambda T, a, b: T.pairwise_distance(a, b, 3.0, 1e-6, True),
                          [X, _rand(4, 6, seed=9)], []),
    "cosine_similarity": (lambda T, a, b: T.cosine_similarity(a, b, 0),
                          [X, _rand(4, 6, seed=9)], []),
    "cosine_embedding_loss": (
        lambda T, a, b, y: T.cosine_embedding_loss(a, b, y, 0.1, 1),
        [X, _rand(4, 6, seed=9)], [SIGN]),
    "cosine_embedding_loss_default": (
        lambda T, a, b, y: T.cosine_embedding_loss(a, b, y), [X, _rand(4, 6, seed=9)],
        [SIGN]),
    "margin_ranking_loss": (
        lambda T, a, b, y: T.margin_ranking_loss(a, b, y, 0.2, 2),
        [X[:, 0], X[:, 1]], [SIGN]),
    "margin_ranking_loss_default": (
        lambda T, a, b, y: T.margin_ranking_loss(a, b, y), [X[:, 0], X[:, 1]], [SIGN]),
    "hinge_embedding_loss": (
        lambda T, x, y: T.hinge_embedding_loss(x, y, 0.5, 1), [X[:, 0]], [SIGN]),
    "kl_div_mean": (lambda T, x, y: T.kl_div(x, y, 1), [X], [PROB]),
    "kl_div_default": (lambda T, x, y: T.kl_div(x, y), [X], [PROB]),
    "kl_div_log_target": (lambda T, x, y: T.kl_div(x, y, 2, log_target=True),
                          [X, _rand(4, 6, seed=9)], []),
    "poisson_nll_loss": (lambda T, x, y: T.poisson_nll_loss(x, y, True, True, 1e-8, 1),
                         [X], [POS * 3]),
    "poisson_nll_loss_rate": (
        lambda T, x, y: T.poisson_nll_loss(x, y, False, False, 1e-8, 0), [POS],
        [POS * 3]),
    "triplet_margin_loss": (
        lambda T, a, p, n: T.triplet_margin_loss(a, p, n, 0.5, 1.5, 1e-6, True, 1),
        [X, _rand(4, 6, seed=9), _rand(4, 6, seed=10)], []),
    "triplet_margin_loss_default": (
        lambda T, a, p, n: T.triplet_margin_loss(a, p, n),
        [X, _rand(4, 6, seed=9), _rand(4, 6, seed=10)], []),
    "bce_with_logits": (
        lambda T, x, y, w, pw: T.binary_cross_entropy_with_logits(x, y, w, pw, 1),
        [X], [PROB, POS, POS[0]]),
    "bce_with_logits_default": (
        lambda T, x, y: T.binary_cross_entropy_with_logits(x, y), [X], [PROB]),
    "constant_pad_nd": (lambda T, x: T.constant_pad_nd(x, [1, 2, 0, 1], 0.5),
                        [X3], []),
    "constant_pad_nd_default": (lambda T, x: T.constant_pad_nd(x, (2, 1)), [X], []),
    "native_layer_norm": (
        lambda T, x, w, b: T.native_layer_norm(x, [5], w, b, 1e-5),
        [X3, _rand(5, seed=6), _rand(5, seed=7)], []),
    "native_layer_norm_2d": (lambda T, x: T.native_layer_norm(x, (3, 5), None, None,
                                                              1e-3), [X3], []),
    "native_batch_norm_train": (
        lambda T, x, w, b, rm, rv: T.native_batch_norm(x, w, b, rm, rv, True, 0.2,
                                                       1e-5),
        [X3, _rand(3, seed=6), _rand(3, seed=7)], [np.zeros(3), np.ones(3)]),
    "native_batch_norm_stats_only": (
        lambda T, x: T.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5),
        [X4], []),
    "native_batch_norm_eval": (
        lambda T, x, rm, rv: T.native_batch_norm(x, None, None, rm, rv, False, 0.1,
                                                 1e-5),
        [X3], [_rand(3, seed=8), POS[0, :3]]),
    "native_group_norm": (
        lambda T, x, w, b: T.native_group_norm(x, w, b, 2, 4, 9, 2, 1e-5),
        [X4, _rand(4, seed=6), _rand(4, seed=7)], []),
    "native_dropout_eval": (lambda T, x: T.native_dropout(x, 0.5, False), [X], []),
    "ctc_loss": (
        lambda T, lp, tg, il, tl: T.ctc_loss(lp.log_softmax(2), tg, il, tl, 0, 1),
        [_rand(5, 2, 4)], [np.array([[1, 2], [3, 3]]), np.array([5, 4]),
                           np.array([2, 2])]),
    "ctc_loss_default": (
        lambda T, lp, tg, il, tl: T.ctc_loss(lp.log_softmax(2), tg, il, tl),
        [_rand(5, 2, 4)], [np.array([[1, 2], [3, 3]]), np.array([5, 4]),
                           np.array([2, 1])]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_alias_matches_torch(name):
    fn, arrays, consts = CASES[name]
    # torch has no derivative for native_channel_shuffle (cygrad has)
    check(fn, arrays, consts, grad=name != "native_channel_shuffle")


@pytest.mark.parametrize("name", ["layer_norm", "group_norm", "native_layer_norm",
                                  "embedding_bag_sum", "embedding_bag_max",
                                  "kl_div_mean", "triplet_margin_loss", "celu"])
def test_alias_matches_torch_float32(name):
    fn, arrays, consts = CASES[name]
    check(fn, arrays, consts, np.float32)


def test_running_statistics_are_updated_in_place():
    for lib in (cygrad, torch):
        rm, rv = lib.zeros(3, dtype=lib.float64), lib.ones(3, dtype=lib.float64)
        lib.native_batch_norm(lib.tensor(X3), None, None, rm, rv, True, 0.2, 1e-5)
        lib.batch_norm(lib.tensor(X3), None, None, rm, rv, True, 0.2, 1e-5, False)
        if lib is cygrad:
            got = (rm.numpy().copy(), rv.numpy().copy())
        else:
            np.testing.assert_allclose(got[0], rm.numpy(), rtol=1e-12)
            np.testing.assert_allclose(got[1], rv.numpy(), rtol=1e-12)


def test_training_dropouts_keep_torch_scaling_and_masks():
    x = cygrad.ones(200, 50, dtype=cygrad.float64)
    y, mask = cygrad.native_dropout(x, 0.25, True)
    assert mask.dtype == cygrad.bool
    np.testing.assert_allclose(y.numpy(), mask.numpy() / 0.75)
    assert abs(mask.numpy().mean() - 0.75) < 0.02
    y = cygrad.dropout(x, 0.25, True).numpy()
    assert set(np.unique(y)) <= {0.0, 1 / 0.75}
    f = cygrad.feature_dropout(cygrad.ones(40, 30, 7), 0.5, True).numpy()
    assert (f == f[:, :, :1]).all()                  # whole channels
    z = cygrad.ones(3, 4)
    assert cygrad.dropout_(z, 1.0, True) is z and not z.numpy().any()
    g = cygrad.Generator().manual_seed(3)
    a = cygrad.rrelu(-cygrad.ones(50), training=True, generator=g)
    g.manual_seed(3)
    b = cygrad.rrelu(-cygrad.ones(50), training=True, generator=g)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert ((a.numpy() <= -0.125) & (a.numpy() >= -1 / 3)).all()
    for lib in (cygrad, torch):
        x = lib.tensor([-1.0, 2.0])
        assert lib.relu_(x) is x and x.tolist() == [0.0, 2.0]
        assert lib.selu_(x) is x


def test_alias_errors_match_torch():
    def both(fn):
        with pytest.raises(Exception) as et:
            fn(torch)
        with pytest.raises(type(et.value)) as ec:
            fn(cygrad)
        assert str(ec.value) == str(et.value)

    both(lambda T: T.feature_dropout(T.ones(5), 0.5, True))
    both(lambda T: T.feature_alpha_dropout(T.ones(5), 0.5, True))
    for name in ("dropout", "alpha_dropout", "feature_dropout", "dropout_",
                 "feature_alpha_dropout", "native_dropout"):
        both(lambda T: getattr(T, name)(T.ones(5, 2), 1.5, True))
        if name != "native_dropout":                 # checked only when training
            both(lambda T: getattr(T, name)(T.ones(5, 2), -0.5, False))
    with pytest.raises(TypeError):
        cygrad.dropout(cygrad.ones(3), 0.5)            # train is required
    with pytest.raises(TypeError):
        torch.dropout(torch.ones(3), 0.5)
