"""Every loss module and the distance functions against torch: values and
gradients of every differentiable input in float64 (1e-10) and float32
(1e-5), each reduction; gradcheck; torch's errors."""

import numpy as np
import pytest

import cygrad
import cygrad.nn.functional as F
from cygrad import nn
from cygrad.autograd import gradcheck

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)


def _u(*shape, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, shape)


def _sign(*shape):
    return np.where(RNG.uniform(size=shape) > 0.5, 1.0, -1.0)


# name, ctor kwargs, inputs (arrays; ints stay integer), which get gradients
CASES = [
    ("L1Loss", {}, lambda: [_u(4, 3), _u(4, 3)], (0, 1)),
    ("MSELoss", {}, lambda: [_u(4, 3), _u(4, 3)], (0, 1)),
    ("SmoothL1Loss", {}, lambda: [_u(4, 3), _u(4, 3)], (0, 1)),
    ("SmoothL1Loss", {"beta": 0.5}, lambda: [_u(4, 3), _u(4, 3)], (0, 1)),
    ("SmoothL1Loss", {"beta": 0.0}, lambda: [_u(4, 3), _u(4, 3)], (0, 1)),
    ("HuberLoss", {"delta": 0.7}, lambda: [_u(4, 3), _u(4, 3)], (0, 1)),
    ("BCELoss", {}, lambda: [_u(4, 3, lo=0.05, hi=0.95), _u(4, 3, lo=0, hi=1)], (0, 1)),
    ("BCELoss", {"weight": "w3"}, lambda: [_u(4, 3, lo=0.05, hi=0.95),
                                           _u(4, 3, lo=0, hi=1)], (0, 1)),
    ("BCEWithLogitsLoss", {"pos_weight": "w3"}, lambda: [_u(4, 3), _u(4, 3, lo=0, hi=1)],
     (0, 1)),
    ("KLDivLoss", {"reduction": "batchmean"},
     lambda: [np.log(_u(4, 3, lo=0.1, hi=1)), _u(4, 3, lo=0, hi=1)], (0, 1)),
    ("KLDivLoss", {"reduction": "sum", "log_target": True},
     lambda: [_u(4, 3), _u(4, 3)], (0, 1)),
    ("CrossEntropyLoss", {"label_smoothing": 0.2},
     lambda: [_u(5, 4), RNG.integers(0, 4, 5)], (0,)),
    ("CrossEntropyLoss", {"label_smoothing": 0.1, "weight": "w4", "ignore_index": 1},
     lambda: [_u(5, 4, 2, 3), RNG.integers(0, 4, (5, 2, 3))], (0,)),
    ("CrossEntropyLoss", {"weight": "w4", "ignore_index": 2},
     lambda: [_u(5, 4, 3), RNG.integers(0, 4, (5, 3))], (0,)),
    ("CrossEntropyLoss", {"label_smoothing": 0.3, "weight": "w4"},
     lambda: [_u(5, 4), _u(5, 4, lo=0, hi=1)], (0, 1)),
    ("NLLLoss", {"weight": "w4", "ignore_index": 0},
     lambda: [_u(5, 4, 2, 2), RNG.integers(0, 4, (5, 2, 2))], (0,)),
    ("MarginRankingLoss", {"margin": 0.3}, lambda: [_u(6), _u(6), _sign(6)], (0, 1)),
    ("CosineEmbeddingLoss", {"margin": 0.2}, lambda: [_u(6, 4), _u(6, 4), _sign(6)],
     (0, 1)),
    ("TripletMarginLoss", {}, lambda: [_u(6, 4), _u(6, 4), _u(6, 4)], (0, 1, 2)),
    ("TripletMarginLoss", {"p": 1.0, "swap": True, "margin": 2.0},
     lambda: [_u(6, 4), _u(6, 4), _u(6, 4)], (0, 1, 2)),
    ("PoissonNLLLoss", {}, lambda: [_u(4, 3), _u(4, 3, lo=0, hi=3)], (0, 1)),
    ("PoissonNLLLoss", {"log_input": False, "full": True},
     lambda: [_u(4, 3, lo=0.1, hi=3), _u(4, 3, lo=0, hi=3)], (0,)),
    ("GaussianNLLLoss", {}, lambda: [_u(4, 3), _u(4, 3), _u(4, 3, lo=0.1, hi=2)],
     (0, 1, 2)),
    ("GaussianNLLLoss", {"full": True, "eps": 0.5},
     lambda: [_u(4, 3), _u(4, 3), _u(4, lo=0.1, hi=2)], (0, 1, 2)),
    ("SoftMarginLoss", {}, lambda: [_u(4, 3), _sign(4, 3)], (0,)),
    ("MultiLabelSoftMarginLoss", {"weight": "w3"},
     lambda: [_u(4, 3), _u(4, 3, lo=0, hi=1).round()], (0,)),
    ("MultiMarginLoss", {}, lambda: [_u(5, 4), RNG.integers(0, 4, 5)], (0,)),
    ("MultiMarginLoss", {"p": 2, "margin": 0.5, "weight": "w4"},
     lambda: [_u(5, 4), RNG.integers(0, 4, 5)], (0,)),
    ("HingeEmbeddingLoss", {"margin": 0.5}, lambda: [_u(4, 3), _sign(4, 3)], (0,)),
]
WEIGHTS = {"w3": np.array([0.5, 2.0, 1.0]), "w4": np.array([0.3, 1.0, 2.0, 0.7])}


def _lib_kwargs(kw, lib, dtype):
    out = {}
    for k, v in kw.items():
        if isinstance(v, str) and v in WEIGHTS:
            arr = WEIGHTS[v].astype(dtype)
            v = torch.tensor(arr) if lib is torch else cygrad.tensor(arr)
        out[k] = v
    return out


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-10), (np.float32, 1e-5)])
@pytest.mark.parametrize("name,kw,make,grads", CASES, ids=lambda c: str(c)[:40])
def test_loss_matches_torch(name, kw, make, grads, dtype, tol, reduction):
    kw = dict(kw)
    if "reduction" not in kw:
        kw["reduction"] = reduction
    elif reduction != "mean":
        pytest.skip("case fixes its reduction")
    arrays = [a.astype(dtype) if a.dtype.kind == "f" else a for a in make()]
    tm = getattr(torch.nn, name)(**_lib_kwargs(kw, torch, dtype))
    cm = getattr(nn, name)(**_lib_kwargs(kw, cygrad, dtype))
    tin = [torch.tensor(a, requires_grad=i in grads) for i, a in enumerate(arrays)]
    cin = [cygrad.tensor(a, requires_grad=i in grads) for i, a in enumerate(arrays)]
    a, b = tm(*tin), cm(*cin)
    np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=tol,
                               atol=tol)
    g = RNG.standard_normal(a.shape).astype(dtype)
    a.backward(torch.tensor(g))
    b.backward(cygrad.tensor(g))
    for i in grads:
        np.testing.assert_allclose(cin[i].grad.numpy(), tin[i].grad.numpy(), rtol=tol,
                                   atol=tol, err_msg=f"input {i}")


def test_distance_functions_match_torch():
    x1, x2 = _u(5, 4), _u(5, 4)
    x2[0] = 0.0                                  # a zero vector: no NaN
    for fn, kw in (("cosine_similarity", {}), ("cosine_similarity", {"dim": 0}),
                   ("pairwise_distance", {}), ("pairwise_distance", {"p": 1.0}),
                   ("pairwise_distance", {"p": 3.0, "keepdim": True}),
                   ("pairwise_distance", {"p": float("inf")})):
        ta, tb = torch.tensor(x1, requires_grad=True), torch.tensor(x2,
                                                                    requires_grad=True)
        ca, cb = cygrad.tensor(x1, requires_grad=True), cygrad.tensor(
            x2, requires_grad=True)
        a, b = getattr(torch.nn.functional, fn)(ta, tb, **kw), getattr(F, fn)(ca, cb,
                                                                             **kw)
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), atol=1e-12)
        (a * a).sum().backward()
        (b * b).sum().backward()
        np.testing.assert_allclose(ca.grad.numpy(), ta.grad.numpy(), atol=1e-10,
                                   err_msg=f"{fn} {kw}")
        np.testing.assert_allclose(cb.grad.numpy(), tb.grad.numpy(), atol=1e-10)
    for kw in ({}, {"p": 1.0, "dim": 0}, {"p": 3.0}):
        t = torch.tensor(x2, requires_grad=True)
        c = cygrad.tensor(x2, requires_grad=True)
        a, b = torch.nn.functional.normalize(t, **kw), F.normalize(c, **kw)
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), atol=1e-12)
        (a ** 3).sum().backward()
        (b ** 3).sum().backward()
        np.testing.assert_allclose(c.grad.numpy(), t.grad.numpy(), atol=1e-10)


def test_gradcheck_losses():
    x = cygrad.tensor(_u(4, 3), requires_grad=True)
    y = cygrad.tensor(_u(4, 3), requires_grad=True)
    p = cygrad.tensor(_u(4, 3, lo=0.1, hi=0.9), requires_grad=True)
    assert gradcheck(lambda x, y: F.smooth_l1_loss(x, y, beta=0.5), (x, y))
    assert gradcheck(lambda x, y: F.huber_loss(x, y), (x, y))
    assert gradcheck(lambda p, y: F.binary_cross_entropy(p, y.sigmoid()), (p, y))
    assert gradcheck(lambda x, y: F.kl_div(x, y, reduction="sum", log_target=True),
                     (x, y))
    assert gradcheck(lambda x, y: F.cosine_similarity(x, y), (x, y))
    assert gradcheck(lambda x, y: F.pairwise_distance(x, y, p=3.0), (x, y))
    assert gradcheck(lambda x: F.normalize(x), (x,))
    t = cygrad.tensor(RNG.integers(0, 3, 4))
    assert gradcheck(lambda x: F.cross_entropy(x, t, label_smoothing=0.2), (x,))


def test_gumbel_softmax():
    cygrad.manual_seed(0)
    logits = cygrad.tensor(np.log([[0.7, 0.2, 0.1]] * 4000), requires_grad=True)
    y = F.gumbel_softmax(logits, tau=0.5, hard=True)
    counts = y.detach().numpy().sum(0) / 4000
    np.testing.assert_allclose(counts, [0.7, 0.2, 0.1], atol=0.03)
    assert set(np.unique(y.detach().numpy())) == {0.0, 1.0}
    y.sum().backward()                   # straight-through: the soft gradient
    assert logits.grad is not None and np.isfinite(logits.grad.numpy()).all()
    soft = F.gumbel_softmax(logits, tau=2.0)
    np.testing.assert_allclose(soft.detach().numpy().sum(1), 1.0)


def test_errors_and_legacy_arguments_as_torch():
    x = cygrad.tensor(_u(3, 2, lo=0, hi=1))
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(x * 2, x)
    with pytest.raises(ValueError, match="different to the input size"):
        F.binary_cross_entropy(x, x[:, :1])
    with pytest.warns(UserWarning, match="batchmean"):
        F.kl_div(x.log(), x)
    with pytest.warns(UserWarning, match="likely lead to incorrect results"):
        F.l1_loss(x, x[:1])
    with pytest.raises(ValueError, match="var has negative"):
        F.gaussian_nll_loss(x, x, -x)
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(x, x, cygrad.ones(2))
    with pytest.raises(RuntimeError, match="target out of range"):
        F.multi_margin_loss(x, cygrad.tensor([0, 1, 5]))
    with pytest.raises(RuntimeError, match="label_smoothing must be between"):
        F.cross_entropy(x, cygrad.tensor([0, 1, 1]), label_smoothing=1.5)
    with pytest.raises(ValueError, match="expected margin to be greater than 0"):
        nn.TripletMarginLoss(margin=0.0)
    with pytest.warns(UserWarning, match="reduction='sum'"):
        m = nn.MSELoss(size_average=False)
    assert m.reduction == "sum"
    with pytest.warns(UserWarning):
        assert F.cross_entropy(cygrad.ones(2, 3), cygrad.tensor([0, 1]),
                               reduce=False).shape == (2,)
