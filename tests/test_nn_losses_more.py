"""The remaining losses and layers of issue 18 against torch 2.13: CTC,
RReLU, the multi-label margin and distance-triplet losses, the adaptive
log-softmax, and the small names (buffers, fusions, deprecated aliases)."""

import warnings

import numpy as np
import pytest

import cygrad
import cygrad.nn as nn
import cygrad.nn.functional as F

torch = pytest.importorskip("torch")

from torch_pairs import TOL
from torch_pairs import check as _check
from torch_pairs import close as _close
from torch_pairs import pair as _pair
from torch_pairs import rand as _rand


def _raises(fc, ft, exc=None):
    """Both raise the same exception type with the same message."""
    with pytest.raises(Exception) as et:
        ft()
    with pytest.raises(type(et.value) if exc is None else exc) as ec:
        fc()
    assert str(ec.value) == str(et.value)


# ---------------------------------------------------------------------------
# CTC


def _ctc_case(rng):
    t_max, n, c, s = (int(rng.integers(1, 9)), int(rng.integers(1, 4)),
                      int(rng.integers(2, 6)), int(rng.integers(0, 5)))
    blank = int(rng.integers(0, c))
    tl = rng.integers(0, s + 1, n)
    il = rng.integers(0, t_max + 1, n)
    # few classes: repeated labels are common
    tg = rng.integers(0, c - 1, (n, max(s, 1)))
    tg = np.where(tg >= blank, tg + 1, tg)
    return rng.standard_normal((t_max, n, c)), tg, il, tl, blank


def _ctc_both(x, tg, il, tl, blank, reduction, zero_inf, dtype=np.float64,
              concat=False, as_tuple=False, seed=0):
    lpt = torch.tensor(x.astype(dtype)).log_softmax(-1).detach().requires_grad_()
    lpc = cygrad.tensor(lpt.detach().numpy(), requires_grad=True)
    if concat:
        tg = np.concatenate([tg[i, :tl[i]] for i in range(len(tl))]).astype(np.int64)
    lens = (tuple(int(v) for v in il), tuple(int(v) for v in tl)) if as_tuple else None
    ilt, tlt = lens if as_tuple else (torch.tensor(il), torch.tensor(tl))
    ilc, tlc = lens if as_tuple else (cygrad.tensor(il), cygrad.tensor(tl))
    lt = torch.nn.functional.ctc_loss(lpt, torch.tensor(tg), ilt, tlt, blank,
                                      reduction, zero_inf)
    lc = F.ctc_loss(lpc, cygrad.tensor(tg), ilc, tlc, blank, reduction, zero_inf)
    tol = TOL[dtype]
    _close(lc, lt, tol, nan=True)
    g = np.random.default_rng(seed).standard_normal(tuple(lt.shape)).astype(dtype)
    lt.backward(torch.tensor(g))
    lc.backward(cygrad.tensor(g))
    _close(lpc.grad, lpt.grad, tol, nan=True)
    return lc, lt


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("zero_inf", [False, True])
def test_ctc_random_cases_match_torch(reduction, zero_inf):
    # includes repeated labels, zero-length targets and inputs, and targets too
    # long for their input (infinite loss, NaN gradient or 0 with zero_infinity)
    rng = np.random.default_rng(1)
    for _ in range(60):
        _ctc_both(*_ctc_case(rng), reduction, zero_inf)


def test_ctc_infeasible_alignment_and_zero_infinity():
    x = _rand(3, 2, 4)
    tg = np.array([[1, 1, 2], [3, 1, 0]])          # 1, 1, 2 needs 4 steps
    il, tl = np.array([3, 3]), np.array([3, 0])
    lc, _ = _ctc_both(x, tg, il, tl, 0, "none", False)
    assert np.isinf(lc.detach().numpy()[0])
    lc, _ = _ctc_both(x, tg, il, tl, 0, "none", True)
    assert lc.detach().numpy()[0] == 0
    _ctc_both(x, tg, il, tl, 0, "mean", True)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_ctc_concatenated_targets_tuples_and_float32(dtype):
    rng = np.random.default_rng(2)
    for _ in range(10):
        x, tg, il, tl, blank = _ctc_case(rng)
        _ctc_both(x, tg, il, tl, blank, "mean", True, dtype, concat=True)
        _ctc_both(x, tg, il, tl, blank, "sum", True, dtype, as_tuple=True)


def test_ctc_unbatched():
    x = _rand(5, 4)
    for reduction in ("none", "mean", "sum"):
        lpt = torch.tensor(x).log_softmax(-1).requires_grad_()
        lpc = cygrad.tensor(lpt.detach().numpy(), requires_grad=True)
        lt = torch.nn.functional.ctc_loss(lpt, torch.tensor([1, 2, 2]),
                                          torch.tensor(5), torch.tensor(3),
                                          reduction=reduction)
        lc = F.ctc_loss(lpc, cygrad.tensor([1, 2, 2]), cygrad.tensor(5),
                        cygrad.tensor(3), reduction=reduction)
        assert tuple(lc.shape) == tuple(lt.shape) == ()
        _close(lc, lt, 1e-10)
        lt.backward()
        lc.backward()
        _close(lpc.grad, lpt.grad, 1e-10)


def test_ctc_module_and_gradcheck():
    m, mt = nn.CTCLoss(blank=2, zero_infinity=True), torch.nn.CTCLoss(blank=2,
                                                                     zero_infinity=True)
    assert repr(m) == repr(mt) == "CTCLoss()"
    assert (m.blank, m.reduction, m.zero_infinity) == (2, "mean", True)
    x = _rand(6, 2, 4)
    tg = np.array([[1, 1, 3], [0, 3, 0]])
    il, tl = np.array([6, 5]), np.array([3, 2])
    lt = mt(torch.tensor(x).log_softmax(2), torch.tensor(tg), torch.tensor(il),
            torch.tensor(tl))
    lc = m(F.log_softmax(cygrad.tensor(x), 2), cygrad.tensor(tg), cygrad.tensor(il),
           cygrad.tensor(tl))
    _close(lc, lt, 1e-10)
    # through log_softmax torch's gradient is the exact one
    xc = cygrad.tensor(x, requires_grad=True)
    assert cygrad.autograd.gradcheck(
        lambda a: F.ctc_loss(F.log_softmax(a, 2), cygrad.tensor(tg), cygrad.tensor(il),
                             cygrad.tensor(tl), reduction="none"), (xc,))


def test_ctc_bad_input():
    lp = np.log(np.full((3, 2, 4), 0.25))
    tg = np.array([[1, 1, 2], [3, 1, 0]])
    cases = [
        dict(il=[4, 3], tl=[3, 0]), dict(il=[3, 3], tl=[4, 0]),
        dict(il=[3, 3], tl=[3, 0], blank=4), dict(il=[3, 3, 3], tl=[3, 0]),
        dict(il=[3, 3], tl=[3, 0, 1]), dict(il=[3, 3], tl=[3, 0], reduction="foo"),
        dict(il=[3, -1], tl=[3, 0]), dict(il=[3, 3], tl=[3, -1]),
        dict(il=[3, 3], tl=[3, 1], tg=np.array([1, 2, 3])),
        dict(il=[3, 3], tl=[3, 0], tg=tg[:, :1]),
        dict(il=[3.0, 3.0], tl=[3, 0]),
        dict(il=[3, 3], tl=[3, 0], lp=lp[0, 0]),
    ]
    for case in cases:
        x = case.get("lp", lp)
        t = case.get("tg", tg)
        kw = dict(blank=case.get("blank", 0), reduction=case.get("reduction", "mean"))
        _raises(lambda: F.ctc_loss(cygrad.tensor(x), cygrad.tensor(t),
                                   cygrad.tensor(case["il"]),
                                   cygrad.tensor(case["tl"]), **kw),
                lambda: torch.nn.functional.ctc_loss(
                    torch.tensor(x), torch.tensor(t), torch.tensor(case["il"]),
                    torch.tensor(case["tl"]), **kw))
    # torch reads out-of-range labels out of bounds; cygrad refuses them
    with pytest.raises(RuntimeError, match="target label 4 is out of range for 4"):
        F.ctc_loss(cygrad.tensor(lp), cygrad.tensor([[1, 4, 2], [3, 1, 0]]), (3, 3),
                   (3, 2))
    _raises(lambda: F.ctc_loss(cygrad.tensor(tg), cygrad.tensor(tg), (3, 3), (3, 0)),
            lambda: torch.nn.functional.ctc_loss(torch.tensor(tg), torch.tensor(tg),
                                                 (3, 3), (3, 0)))


# ---------------------------------------------------------------------------
# RReLU


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_rrelu_eval_is_the_mean_slope(dtype):
    x = _rand(4, 5)
    x[0, 0] = 0.0
    _check(lambda a: F.rrelu(a), lambda a: torch.nn.functional.rrelu(a), [x], dtype)
    _check(lambda a: F.rrelu(a, 0.1, 0.5), lambda a: torch.nn.functional.rrelu(
        a, 0.1, 0.5), [x], dtype)
    _check(lambda a: nn.RReLU(0.2, 0.4).eval()(a),
           lambda a: torch.nn.RReLU(0.2, 0.4).eval()(a), [x], dtype)


def test_rrelu_training_draws_slopes_in_range_with_matching_gradient():
    x = np.concatenate([-np.abs(_rand(20000)), np.abs(_rand(100)), [0.0]])
    cygrad.manual_seed(0)
    xc = cygrad.tensor(x, requires_grad=True)
    y = F.rrelu(xc, 0.1, 0.3, training=True)
    y.backward(cygrad.ones_like(y))
    out, g = y.detach().numpy(), xc.grad.numpy()
    neg = x <= 0
    np.testing.assert_array_equal(out[~neg], x[~neg])
    np.testing.assert_array_equal(g[~neg], 1.0)
    slope = out[x < 0] / x[x < 0]
    np.testing.assert_allclose(slope, g[x < 0], rtol=1e-12)   # grad is the slope
    assert 0.1 <= slope.min() and slope.max() <= 0.3
    assert abs(slope.mean() - 0.2) < 3e-3                       # U(0.1, 0.3)
    assert abs(slope.var() - 0.2 ** 2 / 12) < 2e-4
    assert 0.1 <= g[-1] <= 0.3                                  # x = 0 draws too
    cygrad.manual_seed(0)
    again = F.rrelu(cygrad.tensor(x), 0.1, 0.3, training=True)
    np.testing.assert_array_equal(again.numpy(), out)
    m = nn.RReLU(0.1, 0.3)
    assert m.training and repr(m) == repr(torch.nn.RReLU(0.1, 0.3))
    assert repr(nn.RReLU(inplace=True)) == repr(torch.nn.RReLU(inplace=True))


def test_rrelu_inplace_and_errors():
    x = cygrad.tensor(_rand(6))
    ref = F.rrelu(x)
    y = F.rrelu_(x)
    assert y is x
    np.testing.assert_array_equal(x.numpy(), ref.numpy())
    _raises(lambda: F.rrelu(cygrad.randn(3), 0.5, 0.2),
            lambda: torch.nn.functional.rrelu(torch.randn(3), 0.5, 0.2))
    _raises(lambda: F.rrelu(cygrad.tensor([1, 2]), training=True),
            lambda: torch.nn.functional.rrelu(torch.tensor([1, 2]), training=True))


# ---------------------------------------------------------------------------
# multi-label margin and triplet with a distance


def _mlm_target(rng, n, c):
    t = np.full((n, c), -1, np.int64)
    for i in range(n):
        k = int(rng.integers(0, c + 1))
        t[i, :k] = rng.choice(c, k, replace=False)
        if k < c and rng.random() < 0.5:          # labels after the -1 are ignored
            t[i, k + 1:] = rng.integers(0, c, c - k - 1)
    return t


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_multilabel_margin_loss(dtype, reduction):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 6)) * 0.5
    t = _mlm_target(rng, 5, 6)
    t[0, :3] = [2, 2, -1]                          # a repeated label counts twice
    _check(lambda a: F.multilabel_margin_loss(a, cygrad.tensor(t), reduction=reduction),
           lambda a: torch.nn.functional.multilabel_margin_loss(
               a, torch.tensor(t), reduction=reduction), [x], dtype)
    _check(lambda a: nn.MultiLabelMarginLoss(reduction=reduction)(
               a, cygrad.tensor(t[1])),
           lambda a: torch.nn.MultiLabelMarginLoss(reduction=reduction)(
               a, torch.tensor(t[1])), [x[1]], dtype)


def test_multilabel_margin_gradcheck_and_errors():
    rng = np.random.default_rng(4)
    t = cygrad.tensor(_mlm_target(rng, 3, 5))
    x = cygrad.tensor(rng.standard_normal((3, 5)), requires_grad=True)
    assert cygrad.autograd.gradcheck(lambda a: F.multilabel_margin_loss(a, t), (x,))
    assert repr(nn.MultiLabelMarginLoss()) == "MultiLabelMarginLoss()"
    x, y = _rand(2, 4), np.array([[3, 0, -1, 1], [1, 2, 3, 0]])
    for xa, ya in [(x, y[:, :3]), (x, y[0]), (x, y.astype(np.float32)),
                   (x, np.array([[4, 0, -1, 1], [1, 2, 3, 0]])),
                   (_rand(2, 3, 4), np.zeros((2, 3, 4), np.int64))]:
        _raises(lambda: F.multilabel_margin_loss(cygrad.tensor(xa), cygrad.tensor(ya)),
                lambda: torch.nn.functional.multilabel_margin_loss(torch.tensor(xa),
                                                                   torch.tensor(ya)))


@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_triplet_margin_with_distance_loss(swap, reduction):
    a, p, n = _rand(6, 4, seed=1), _rand(6, 4, seed=2), _rand(6, 4, seed=3)
    _check(lambda x, y, z: F.triplet_margin_with_distance_loss(
               x, y, z, swap=swap, reduction=reduction, margin=1.5),
           lambda x, y, z: torch.nn.functional.triplet_margin_with_distance_loss(
               x, y, z, swap=swap, reduction=reduction, margin=1.5), [a, p, n])

    def cos_c(x, y):
        return 1.0 - F.cosine_similarity(x, y)

    def cos_t(x, y):
        return 1.0 - torch.nn.functional.cosine_similarity(x, y)
    mc = nn.TripletMarginWithDistanceLoss(distance_function=cos_c, swap=swap,
                                          reduction=reduction, margin=0.5)
    mt = torch.nn.TripletMarginWithDistanceLoss(distance_function=cos_t, swap=swap,
                                                reduction=reduction, margin=0.5)
    _check(mc, mt, [a, p, n])
    xs = [cygrad.tensor(v, requires_grad=True) for v in (a, p, n)]
    assert cygrad.autograd.gradcheck(
        lambda x, y, z: F.triplet_margin_with_distance_loss(x, y, z, swap=swap), xs)


def test_triplet_margin_with_distance_repr_and_errors():
    assert repr(nn.TripletMarginWithDistanceLoss()) == repr(
        torch.nn.TripletMarginWithDistanceLoss())
    m = nn.TripletMarginWithDistanceLoss()
    assert isinstance(m.distance_function, nn.PairwiseDistance)
    _raises(lambda: nn.TripletMarginWithDistanceLoss(margin=0),
            lambda: torch.nn.TripletMarginWithDistanceLoss(margin=0))
    a = _rand(3, 4)
    for kw in (dict(margin=-1.0), dict(reduction="avg")):
        _raises(lambda: F.triplet_margin_with_distance_loss(
                    cygrad.tensor(a), cygrad.tensor(a), cygrad.tensor(a), **kw),
                lambda: torch.nn.functional.triplet_margin_with_distance_loss(
                    torch.tensor(a), torch.tensor(a), torch.tensor(a), **kw))
    _raises(lambda: F.triplet_margin_with_distance_loss(
                cygrad.tensor(a), cygrad.tensor(a[0]), cygrad.tensor(a)),
            lambda: torch.nn.functional.triplet_margin_with_distance_loss(
                torch.tensor(a), torch.tensor(a[0]), torch.tensor(a)))


# ---------------------------------------------------------------------------
# adaptive log-softmax


def _asm_pair(dtype=torch.float64, **kw):
    args = dict(in_features=8, n_classes=10, cutoffs=[3, 6], div_value=2.0)
    args.update(kw)
    torch.manual_seed(0)
    mt = torch.nn.AdaptiveLogSoftmaxWithLoss(**args).to(dtype)
    mc = nn.AdaptiveLogSoftmaxWithLoss(**args).to(
        cygrad.float64 if dtype == torch.float64 else cygrad.float32)
    assert list(mc.state_dict()) == list(mt.state_dict())
    mc.load_state_dict({k: cygrad.tensor(v.detach().numpy())
                        for k, v in mt.state_dict().items()})
    return mc, mt


@pytest.mark.parametrize("head_bias", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_adaptive_log_softmax_forward_and_gradients(head_bias, dtype):
    tdt = torch.float64 if dtype == np.float64 else torch.float32
    mc, mt = _asm_pair(tdt, head_bias=head_bias)
    assert repr(mc) == repr(mt)
    tol = TOL[dtype]
    x = _rand(7, 8)
    target = np.array([0, 4, 9, 2, 6, 5, 9])       # shortlist and both clusters
    xc, xt = _pair(x, dtype)
    oc = mc(xc, cygrad.tensor(target))
    ot = mt(xt, torch.tensor(target))
    assert type(oc).__name__ == "_ASMoutput" and oc._fields == ("output", "loss")
    _close(oc.output, ot.output, tol)
    _close(oc.loss, ot.loss, tol)
    (oc.loss + oc.output.sum() * 0.3).backward()
    (ot.loss + ot.output.sum() * 0.3).backward()
    _close(xc.grad, xt.grad, tol)
    for (name, pc), (_, pt) in zip(mc.named_parameters(), mt.named_parameters()):
        _close(pc.grad, pt.grad, tol)
    _close(mc.log_prob(cygrad.tensor(x.astype(dtype))),
           mt.log_prob(torch.tensor(x.astype(dtype))), tol)
    # unbatched
    u = mc(cygrad.tensor(x[0].astype(dtype)), cygrad.tensor(7))
    v = mt(torch.tensor(x[0].astype(dtype)), torch.tensor(7))
    assert tuple(u.output.shape) == tuple(v.output.shape) == ()
    _close(u.output, v.output, tol)
    # torch's log_prob fails on an unbatched input (its log_softmax uses dim 1);
    # cygrad's gives the batched row
    _close(mc.log_prob(cygrad.tensor(x[0].astype(dtype))),
           mt.log_prob(torch.tensor(x[:1].astype(dtype)))[0], tol)


def test_adaptive_log_softmax_predict_and_gradcheck():
    mc, mt = _asm_pair(cutoffs=[2, 4, 7], div_value=1.5, head_bias=True)
    x = _rand(40, 8, seed=5) * 3
    np.testing.assert_array_equal(mc.predict(cygrad.tensor(x)).numpy(),
                                  mt.predict(torch.tensor(x)).numpy())
    # torch's predict needs a batch; cygrad's also takes one row
    assert int(mc.predict(cygrad.tensor(x[3]))) == int(mt.predict(torch.tensor(x[3:4])))
    total = mc.log_prob(cygrad.tensor(x)).exp().sum(1).detach().numpy()
    np.testing.assert_allclose(total, 1.0, rtol=1e-12)
    t = cygrad.tensor(np.array([0, 3, 5, 8, 9]))
    xc = cygrad.tensor(_rand(5, 8, seed=6), requires_grad=True)
    assert cygrad.autograd.gradcheck(lambda a: mc(a, t).loss, (xc,))


def test_adaptive_log_softmax_errors():
    for cutoffs in ([], [3, 3], [0, 3], [3, 10], [5, 3], [2.5]):
        _raises(lambda: nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs),
                lambda: torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs))
    mc, mt = _asm_pair()
    cases = [(_rand(3), [1, 2, 3]), (_rand(3, 8), 1), (_rand(3, 8), [[1], [1], [1]]),
             (_rand(2, 8), [1, 2, 3]), (_rand(2, 8), [1, 12])]
    for x, t in cases:
        _raises(lambda: mc(cygrad.tensor(x), cygrad.tensor(t)),
                lambda: mt(torch.tensor(x), torch.tensor(t)))


# ---------------------------------------------------------------------------
# small names: legacy layers, Buffer, SyncBatchNorm, fusion, skip_init, init


@pytest.mark.parametrize("size", [2, 3, 4, 5, 7])
@pytest.mark.parametrize("channels", [1, 2, 3, 6])
def test_cross_map_lrn2d_matches_torch(size, channels):
    x = _rand(2, channels, 3, 3)
    args = (size, 0.3, 0.7, 1.5)
    _check(nn.CrossMapLRN2d(*args), torch.nn.CrossMapLRN2d(*args), [x])
    _check(nn.CrossMapLRN2d(size), torch.nn.CrossMapLRN2d(size), [x], np.float32)


def test_cross_map_lrn2d_repr_and_errors():
    for args in ((3,), (4, 1e-3, 0.5, 2)):
        assert repr(nn.CrossMapLRN2d(*args)) == repr(torch.nn.CrossMapLRN2d(*args))
    _raises(lambda: nn.CrossMapLRN2d(3)(cygrad.randn(2, 3, 4)),
            lambda: torch.nn.CrossMapLRN2d(3)(torch.randn(2, 3, 4)))


def test_container_and_nllloss2d_are_deprecated_aliases():
    with pytest.warns(FutureWarning, match="`nn.Container` is deprecated"):
        c = nn.Container(a=nn.Linear(2, 2), b=nn.ReLU())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ct = torch.nn.Container(a=torch.nn.Linear(2, 2), b=torch.nn.ReLU())
    assert repr(c) == repr(ct)
    assert [n for n, _ in c.named_children()] == ["a", "b"]
    with pytest.warns(FutureWarning, match="`NLLLoss2d` has been deprecated"):
        m = nn.NLLLoss2d(ignore_index=1)
    assert isinstance(m, nn.NLLLoss) and repr(m) == "NLLLoss2d()"
    x = F.log_softmax(cygrad.tensor(_rand(2, 3, 4, 4)), 1)
    t = cygrad.tensor(np.random.default_rng(0).integers(0, 3, (2, 4, 4)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mt = torch.nn.NLLLoss2d(ignore_index=1)
    _close(m(x, t), mt(torch.tensor(x.numpy()), torch.tensor(t.numpy())), 1e-12)


def test_buffer_registers_on_assignment():
    for lib in (cygrad, torch):
        m = lib.nn.Module()
        m.a = lib.nn.Buffer(lib.ones(2))
        m.b = lib.nn.Buffer(lib.zeros(3), persistent=False)
        assert [n for n, _ in m.named_buffers()] == ["a", "b"]
        assert list(m.state_dict()) == ["a"]
        assert isinstance(m.a, lib.nn.Buffer) and not isinstance(lib.ones(1),
                                                                 lib.nn.Buffer)
        assert tuple(lib.nn.Buffer().shape) == (0,)
        assert lib.nn.Buffer(lib.ones(2, requires_grad=True)).requires_grad
        m.b = lib.nn.Buffer(lib.ones(3))           # now persistent
        assert list(m.state_dict()) == ["a", "b"]
    src = cygrad.ones(2)
    b = nn.Buffer(src)
    b.add_(1)
    assert src.tolist() == [2.0, 2.0]              # shares storage


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 2, 2), (2, 3, 2, 1, 2)])
def test_sync_batch_norm_on_one_process_is_batch_norm(shape):
    x = _rand(*shape)
    torch.manual_seed(0)
    mt = torch.nn.SyncBatchNorm(3, momentum=0.3).double()
    mc = nn.SyncBatchNorm(3, momentum=0.3).double()
    assert repr(mc) == repr(mt)
    with torch.no_grad():
        mt.weight.copy_(torch.tensor([0.5, 2.0, -1.0]))
        mt.bias.copy_(torch.tensor([0.1, 0.2, 0.3]))
    mc.load_state_dict({k: cygrad.tensor(v.numpy())
                        for k, v in mt.state_dict().items()})
    for train in (True, False):
        mt.train(train)
        mc.train(train)
        _check(mc, mt, [x])
        for name in ("running_mean", "running_var", "num_batches_tracked"):
            np.testing.assert_allclose(getattr(mc, name).numpy(),
                                       getattr(mt, name).numpy(), rtol=1e-12)


def test_sync_batch_norm_errors_and_conversion():
    for x in (torch.randn(3), torch.randn(2, 0, 4)):
        c = x.shape[1] if x.ndim > 1 else 3
        _raises(lambda: nn.SyncBatchNorm(c)(cygrad.tensor(x.numpy())),
                lambda: torch.nn.SyncBatchNorm(c)(x))
    net = nn.Sequential(nn.Conv1d(2, 3, 1), nn.BatchNorm1d(3),
                        nn.Sequential(nn.BatchNorm2d(3, affine=False)))
    net[1].eval()
    weight, running = net[1].weight, net[1].running_mean
    out = nn.SyncBatchNorm.convert_sync_batchnorm(net)
    assert type(out[1]) is nn.SyncBatchNorm and type(out[2][0]) is nn.SyncBatchNorm
    assert out[1].weight is weight and out[1].running_mean is running
    assert not out[1].training and out[2][0].training and out[2][0].weight is None
    assert type(out[0]) is nn.Conv1d
    nt = torch.nn.Sequential(torch.nn.Conv1d(2, 3, 1), torch.nn.BatchNorm1d(3),
                             torch.nn.Sequential(torch.nn.BatchNorm2d(3, affine=False)))
    assert repr(out) == repr(torch.nn.SyncBatchNorm.convert_sync_batchnorm(nt))


def test_sync_batch_norm_across_two_processes():
    import sys
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    from dist_scripts import harness
    harness.require_mpi()
    res = harness.run_ranks(2, "syncbn.py")
    harness.check_ok(res, 2)


def _bn_eval(torch_bn, cls, **kw):
    torch_bn.eval()
    with torch.no_grad():
        n = torch_bn.num_features
        torch_bn.running_mean.copy_(torch.tensor(_rand(n, seed=11)))
        torch_bn.running_var.copy_(torch.tensor(np.abs(_rand(n, seed=12)) + 0.5))
        if torch_bn.affine:
            torch_bn.weight.copy_(torch.tensor(_rand(n, seed=13)))
            torch_bn.bias.copy_(torch.tensor(_rand(n, seed=14)))
    mc = cls(n, **kw).double().eval()
    mc.load_state_dict({k: cygrad.tensor(v.numpy()) for k, v in
                        torch_bn.state_dict().items()})
    return mc


def _copy(mc, mt):
    mc.load_state_dict({k: cygrad.tensor(v.detach().numpy())
                        for k, v in mt.state_dict().items()})
    return mc


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_fuse_conv_and_linear_with_batch_norm(bias, affine):
    from cygrad.nn import utils as U
    torch.manual_seed(0)
    ct = torch.nn.Conv2d(3, 4, 3, bias=bias).double().eval()
    cc = _copy(nn.Conv2d(3, 4, 3, bias=bias).double().eval(), ct)
    bt = torch.nn.BatchNorm2d(4, affine=affine).double()
    bc = _bn_eval(bt, nn.BatchNorm2d, affine=affine)
    x = _rand(2, 3, 5, 5)
    ft = torch.nn.utils.fuse_conv_bn_eval(ct, bt)
    fc = U.fuse_conv_bn_eval(cc, bc)
    assert fc is not cc and isinstance(fc.weight, nn.Parameter)
    _close(fc(cygrad.tensor(x)), ft(torch.tensor(x)), 1e-10)
    _close(fc(cygrad.tensor(x)), bc(cc(cygrad.tensor(x))), 1e-10)
    lt = torch.nn.Linear(5, 4, bias=bias).double().eval()
    lc = _copy(nn.Linear(5, 4, bias=bias).double().eval(), lt)
    bt = torch.nn.BatchNorm1d(4).double()
    bc = _bn_eval(bt, nn.BatchNorm1d)
    x = _rand(3, 5)
    _close(U.fuse_linear_bn_eval(lc, bc)(cygrad.tensor(x)),
           torch.nn.utils.fuse_linear_bn_eval(lt, bt)(torch.tensor(x)), 1e-10)
    w, b = U.fuse_linear_bn_weights(lc.weight, lc.bias, bc.running_mean,
                                    bc.running_var, bc.eps, bc.weight, bc.bias)
    wt, bt2 = torch.nn.utils.fuse_linear_bn_weights(
        lt.weight, lt.bias, bt.running_mean, bt.running_var, bt.eps, bt.weight, bt.bias)
    _close(w, wt, 1e-12)
    _close(b, bt2, 1e-12)
    assert w.requires_grad and w.is_leaf


def test_fuse_transposed_conv_and_training_refused():
    from cygrad.nn import utils as U
    torch.manual_seed(0)
    ct = torch.nn.ConvTranspose2d(3, 4, 2).double().eval()
    cc = _copy(nn.ConvTranspose2d(3, 4, 2).double().eval(), ct)
    bt = torch.nn.BatchNorm2d(4).double()
    bc = _bn_eval(bt, nn.BatchNorm2d)
    x = _rand(2, 3, 4, 4)
    _close(U.fuse_conv_bn_eval(cc, bc, transpose=True)(cygrad.tensor(x)),
           torch.nn.utils.fuse_conv_bn_eval(ct, bt, transpose=True)(torch.tensor(x)),
           1e-10)
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        U.fuse_conv_bn_eval(cc.train(), bc)
    with pytest.raises(AssertionError, match="linear.out_features == bn.num_features"):
        U.fuse_linear_bn_eval(nn.Linear(2, 3).eval(), nn.BatchNorm1d(4).eval())


def test_skip_init_draws_no_random_numbers():
    from cygrad.nn import utils as U
    cygrad.manual_seed(5)
    m = U.skip_init(nn.Linear, 6, 3, bias=False, dtype=cygrad.float64)
    assert tuple(m.weight.shape) == (3, 6) and m.weight.dtype == cygrad.float64
    after = cygrad.rand(4).numpy()
    cygrad.manual_seed(5)
    np.testing.assert_array_equal(after, cygrad.rand(4).numpy())

    class NoDevice(nn.Module):
        def __init__(self, n):
            super().__init__()

    for cls in (NoDevice, int):
        _raises(lambda: U.skip_init(cls, 2),
                lambda: torch.nn.utils.skip_init(cls, 2) if cls is int
                else torch.nn.utils.skip_init(type("NoDevice", (torch.nn.Module,), {
                    "__init__": lambda self, n: torch.nn.Module.__init__(self)}), 2))


@pytest.mark.parametrize("name, args", [
    ("normal", (0.5, 2.0)), ("uniform", (-1.0, 3.0)), ("constant", (0.25,)),
    ("xavier_uniform", ()), ("xavier_normal", ()), ("kaiming_uniform", ()),
    ("kaiming_normal", ()), ("orthogonal", ()), ("sparse", (0.5,)), ("eye", ()),
    ("dirac", ())])
def test_deprecated_init_aliases_warn_as_torch(name, args):
    shape = (4, 4, 3) if name == "dirac" else (4, 6)
    for lib in (cygrad, torch):
        w = lib.empty(*shape)
        with pytest.warns(FutureWarning) as rec:
            out = getattr(lib.nn.init, name)(w, *args)
        assert str(rec[0].message) == (f"`nn.init.{name}` is now deprecated in favor "
                                       f"of `nn.init.{name}_`.")
        assert rec[0].filename == __file__
        assert out is w
    if name in ("constant", "eye", "dirac"):
        assert np.array_equal(out.numpy(), getattr(cygrad.nn.init, name + "_")(
            cygrad.empty(*shape), *args).numpy())
