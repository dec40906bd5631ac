"""``F.multi_head_attention_forward``, ``F.linear_cross_entropy`` /
``nn.LinearCrossEntropyLoss``, ``F.conv_tbc``, ``nn.grad`` and
``nn.utils.stateless.functional_call``: torch function to function and
module to module (weights through ``state_dict``), gradcheck and
gradgradcheck in float64, bad input."""

import warnings

import numpy as np
import pytest

import cygrad
from cygrad import nn
from cygrad.autograd import gradcheck, gradgradcheck
from cygrad.nn import functional as F

TOL = {np.float64: {"rtol": 1e-10, "atol": 1e-10},
       np.float32: {"rtol": 1e-5, "atol": 1e-5}}


def _t(a, requires_grad=False):
    return cygrad.tensor(np.asarray(a), requires_grad=requires_grad)


def _close(got, want, dtype=np.float64):
    for g, w in zip(got, want):
        if w is None:
            assert g is None
            continue
        np.testing.assert_allclose(g, w, **TOL[dtype])


# ---------------------------------------------------------------------------
# multi_head_attention_forward

L, S, N, E, H = 4, 5, 3, 8, 2


def _mha_inputs(dtype, separate=False, kdim=E):
    rng = np.random.default_rng(0)
    d = {
        "q": rng.standard_normal((L, N, E)), "k": rng.standard_normal((S, N, kdim)),
        "v": rng.standard_normal((S, N, kdim)),
        "ipw": rng.standard_normal((3 * E, E)), "ipb": rng.standard_normal(3 * E),
        "opw": rng.standard_normal((E, E)), "opb": rng.standard_normal(E),
        "bk": rng.standard_normal((1, 1, E)), "bv": rng.standard_normal((1, 1, E)),
        "qw": rng.standard_normal((E, E)), "kw": rng.standard_normal((E, kdim)),
        "vw": rng.standard_normal((E, kdim)),
        "sk": rng.standard_normal((N * H, S, E // H)),
        "sv": rng.standard_normal((N * H, S, E // H)),
        "am": rng.random((L, S)) > 0.7, "am3": rng.standard_normal((N * H, L, S)),
        "kpm": rng.random((N, S)) > 0.7,
    }
    for key in ("ipw", "opw", "qw", "kw", "vw"):
        d[key] = d[key] / np.sqrt(E)
    return {k: (v.astype(dtype) if v.dtype != bool else v) for k, v in d.items()}


MHA_CASES = {
    "plain": {},
    "bias_kv": {"bias_kv": True},
    "zero_attn": {"add_zero_attn": True},
    "masks": {"attn_mask": "am", "key_padding_mask": "kpm"},
    "float 3d mask": {"attn_mask": "am3"},
    "no weights": {"need_weights": False},
    "per head": {"average_attn_weights": False},
    "separate": {"separate": True},
    "static kv": {"static": True},
    "unbatched": {"unbatched": True},
    "no biases": {"no_bias": True},
    "causal hint": {"attn_mask": "causal", "is_causal": True},
}


def _run_mha(lib, fn, d, case):
    grads = {}

    def T(key, rg=True):
        t = lib.tensor(d[key], requires_grad=rg and d[key].dtype != bool)
        if t.requires_grad:
            grads[key] = t
        return t

    kw = {}
    q, k, v = T("q"), T("k"), T("v")
    if case.get("unbatched"):
        q, k, v = q[:, 0], k[:, 0], v[:, 0]
    ipw = None if case.get("separate") else T("ipw")
    ipb = None if case.get("no_bias") else T("ipb")
    opb = None if case.get("no_bias") else T("opb")
    bk = T("bk") if case.get("bias_kv") else None
    bv = T("bv") if case.get("bias_kv") else None
    if case.get("separate"):
        kw.update(use_separate_proj_weight=True, q_proj_weight=T("qw"),
                  k_proj_weight=T("kw"), v_proj_weight=T("vw"))
    if case.get("static"):
        kw.update(static_k=T("sk"), static_v=T("sv"))
    for name in ("attn_mask", "key_padding_mask"):
        if name in case:
            if case[name] == "causal":
                kw[name] = lib.tensor(np.triu(np.ones((L, S), bool), 1))
            else:
                kw[name] = T(case[name])
    for name in ("need_weights", "average_attn_weights", "is_causal"):
        if name in case:
            kw[name] = case[name]
    out, w = fn(q, k, v, E, H, ipw, ipb, bk, bv, case.get("add_zero_attn", False),
                0.0, T("opw"), opb, **kw)
    loss = (out * out).sum() + (0 if w is None else (w * w).sum())
    loss.backward()
    return ([out.detach().numpy(), None if w is None else w.detach().numpy()]
            + [None if grads[key].grad is None else grads[key].grad.numpy()
               for key in sorted(grads)])


@pytest.mark.parametrize("case", list(MHA_CASES))
@pytest.mark.parametrize("dtype", (np.float64, np.float32))
def test_multi_head_attention_forward_matches_torch(case, dtype):
    torch = pytest.importorskip("torch")
    d = _mha_inputs(dtype)
    want = _run_mha(torch, torch.nn.functional.multi_head_attention_forward, d,
                    MHA_CASES[case])
    got = _run_mha(cygrad, F.multi_head_attention_forward, d, MHA_CASES[case])
    assert len(got) == len(want)
    if dtype == np.float64:
        _close(got, want, dtype)
        return
    # float32: some gradients are exactly zero in exact arithmetic (a key
    # bias does not move a softmax); both sides then hold rounding noise, so
    # absolute errors are judged against each array's scale
    for g, w in zip(got, want):
        if w is not None:
            np.testing.assert_allclose(g, w, rtol=1e-5,
                                       atol=1e-5 * max(1.0, float(np.abs(w).max())))


def test_multi_head_attention_forward_gradcheck():
    d = _mha_inputs(np.float64)
    q, k, v = (_t(d[n][:2, :2], True) for n in ("q", "k", "v"))
    ipw, opw = _t(d["ipw"], True), _t(d["opw"], True)

    def f(q, k, v, ipw, opw):
        out, w = F.multi_head_attention_forward(q, k, v, E, H, ipw, None, None, None,
                                                False, 0.0, opw, None)
        return out, w

    assert gradcheck(f, (q, k, v, ipw, opw))
    assert gradgradcheck(f, (q, k, v, ipw, opw))


def test_module_runs_the_function():
    """MultiheadAttention and the function agree (the module passes its
    parameters to the same helper), batch-first packed path included."""
    m = nn.MultiheadAttention(E, H, batch_first=True, dtype=cygrad.float64)
    x = cygrad.randn(N, L, E, dtype=cygrad.float64)
    a, wa = m(x, x, x)
    xt = x.transpose(0, 1)
    b, wb = F.multi_head_attention_forward(
        xt, xt, xt, E, H, m.in_proj_weight, m.in_proj_bias, None, None, False, 0.0,
        m.out_proj.weight, m.out_proj.bias)
    np.testing.assert_allclose(a.detach().numpy(),
                               b.transpose(0, 1).detach().numpy(), rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(wa.detach().numpy(), wb.detach().numpy(), rtol=1e-12,
                               atol=1e-12)


MHA_BAD = [
    ({"q": (L, N, E + 1)}, AssertionError, "was expecting embedding dimension of 8"),
    ({"k": (S, N, E), "v": (S + 1, N, E)}, AssertionError,
     "key shape .* does not match value shape"),
    ({"q": (L, N, E, 1)}, AssertionError,
     "query should be unbatched 2D or batched 3D tensor"),
    ({"k": (S, E)}, AssertionError, "expected `key` and `value` to be 3-D"),
    ({"attn_mask": (L + 1, S)}, RuntimeError, "The shape of the 2D attn_mask is"),
    ({"attn_mask": (2, L, S)}, RuntimeError, "The shape of the 3D attn_mask is"),
    ({"key_padding_mask": (N, S + 1)}, AssertionError,
     r"Expected key_padded_mask.shape\[1\] to be 5"),
    ({"is_causal": True}, RuntimeError, "Need attn_mask if specifying the is_causal"),
    ({"no_in_proj": True}, AssertionError,
     "use_separate_proj_weight is False but in_proj_weight is None"),
]


@pytest.mark.parametrize("i", range(len(MHA_BAD)))
def test_multi_head_attention_forward_bad_input(i):
    spec, exc, phrase = MHA_BAD[i]
    libs = [(cygrad, F)]
    try:
        import torch
        libs.append((torch, torch.nn.functional))
    except ImportError:
        pass
    for lib, fn in libs:
        shapes = {"q": (L, N, E), "k": (S, N, E), "v": (S, N, E)}
        shapes.update({k: v for k, v in spec.items() if k in shapes})
        q, k, v = (lib.zeros(*shapes[n], dtype=lib.float64) for n in "qkv")
        kw = {}
        for name in ("attn_mask", "key_padding_mask"):
            if name in spec:
                kw[name] = lib.zeros(*spec[name], dtype=lib.bool)
        if "is_causal" in spec:
            kw["is_causal"] = True
        ipw = None if spec.get("no_in_proj") else lib.zeros(3 * E, E,
                                                             dtype=lib.float64)
        with pytest.raises(exc, match=phrase):
            fn.multi_head_attention_forward(q, k, v, E, H, ipw, None, None, None,
                                            False, 0.0, lib.zeros(E, E,
                                                                  dtype=lib.float64),
                                            None, **kw)


# ---------------------------------------------------------------------------
# linear_cross_entropy

LCE_CASES = {
    "plain": ({}, (5, 4), "idx"),
    "sum + smoothing": ({"reduction": "sum", "label_smoothing": 0.1}, (5, 4), "idx"),
    "ignore + none": ({"ignore_index": 2, "reduction": "none"}, (5, 4), "idx"),
    "class weights": ({"weight": "w"}, (5, 4), "idx"),
    "K-dim": ({}, (5, 2, 4), "idx"),
    "probabilities": ({}, (5, 4), "prob"),
    "unbatched": ({}, (5, 4), "idx1"),
    "options": ({"options": True}, (5, 4), "idx"),
}


def _run_lce(lib, case, dtype):
    kw, wshape, kind = LCE_CASES[case]
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 4)).astype(dtype)
    w = rng.standard_normal(wshape).astype(dtype)
    b = rng.standard_normal(wshape[:-1]).astype(dtype)
    if kind == "prob":
        target = lib.tensor(rng.dirichlet(np.ones(5), 3).astype(dtype))
    elif kind == "idx1":
        x = x[0]
        target = lib.tensor(np.int64(2))
    else:
        target = lib.tensor(rng.integers(0, 5, (3,) + wshape[1:-1]))
    X, W, B = (lib.tensor(a, requires_grad=True) for a in (x, w, b))
    kw = dict(kw)
    if kw.get("weight") == "w":
        kw["weight"] = lib.tensor(rng.random(5).astype(dtype))
    if kw.get("options"):
        kw["options"] = lib.nn.LinearCrossEntropyOptions(batch_chunk_size=2)
    loss = lib.nn.functional.linear_cross_entropy(X, W, target, linear_bias=B, **kw)
    loss.sum().backward()
    return [loss.detach().numpy(), X.grad.numpy(), W.grad.numpy(), B.grad.numpy()]


@pytest.mark.parametrize("case", list(LCE_CASES))
@pytest.mark.parametrize("dtype", (np.float64, np.float32))
def test_linear_cross_entropy_matches_torch(case, dtype):
    torch = pytest.importorskip("torch")
    _close(_run_lce(cygrad, case, dtype), _run_lce(torch, case, dtype), dtype)


def test_linear_cross_entropy_gradgradcheck():
    rng = np.random.default_rng(2)
    x = _t(rng.standard_normal((3, 4)), True)
    w = _t(rng.standard_normal((5, 4)), True)
    target = _t(rng.integers(0, 5, 3))

    def f(x, w):
        return F.linear_cross_entropy(x, w, target, label_smoothing=0.2)

    assert gradcheck(f, (x, w))
    assert gradgradcheck(f, (x, w))


@pytest.mark.parametrize("bias", (False, True))
def test_linear_cross_entropy_loss_module_matches_torch(bias):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tm = torch.nn.LinearCrossEntropyLoss(4, 5, out_features=(2,), bias=bias,
                                         label_smoothing=0.05).double()
    cm = nn.LinearCrossEntropyLoss(4, 5, out_features=(2,), bias=bias,
                                   label_smoothing=0.05, dtype=cygrad.float64)
    assert list(cm.state_dict()) == list(tm.state_dict())
    cm.load_state_dict({k: cygrad.tensor(v.numpy()) for k, v in
                        tm.state_dict().items()})
    rng = np.random.default_rng(3)
    x, tg = rng.standard_normal((3, 4)), rng.integers(0, 5, (3, 2))
    tl = tm(torch.tensor(x), torch.tensor(tg))
    cl = cm(cygrad.tensor(x), cygrad.tensor(tg))
    tl.backward()
    cl.backward()
    np.testing.assert_allclose(cl.item(), tl.item(), **TOL[np.float64])
    np.testing.assert_allclose(cm.linear.weight.grad.numpy(),
                               tm.linear.weight.grad.numpy(), **TOL[np.float64])
    assert repr(cm).splitlines()[1] == repr(tm).splitlines()[1]


LCE_BAD = [
    (lambda m: m.nn.functional.linear_cross_entropy(
        m.zeros(2, 3, 4), m.zeros(5, 4), m.zeros(2, dtype=m.int64)),
     RuntimeError, "expected input with dimensionality 1 or 2"),
    (lambda m: m.nn.functional.linear_cross_entropy(
        m.zeros(2, 3), m.zeros(5, 4), m.zeros(2, dtype=m.int64)),
     RuntimeError, "expected equal input and linear_weight last dimensions"),
    (lambda m: m.nn.functional.linear_cross_entropy(
        m.zeros(2, 4), m.zeros(5, 4), m.zeros(2, dtype=m.int64),
        linear_bias=m.zeros(4)),
     RuntimeError, "expected linear_bias shape"),
    (lambda m: m.nn.functional.linear_cross_entropy(
        m.zeros(4), m.zeros(5, 2, 4), m.zeros(2, dtype=m.int64)),
     RuntimeError, "K-dimensional loss defined by linear_weight shape"),
    (lambda m: m.nn.functional.linear_cross_entropy(
        m.zeros(2, 4), m.zeros(5, 4), m.zeros(2, 5), ignore_index=1),
     RuntimeError, "ignore_index cannot be specified when target contains"),
    (lambda m: m.nn.LinearCrossEntropyLoss(4, 5, label_smoothing=1.5),
     RuntimeError, "expected label_smoothing to be in range"),
    (lambda m: m.nn.LinearCrossEntropyOptions(acc_policy="fast"),
     ValueError, "invalid acc_policy"),
    (lambda m: m.nn.LinearCrossEntropyOptions(chunking_method="rows"),
     ValueError, "invalid chunking_method"),
    (lambda m: m.nn.LinearCrossEntropyOptions(batch_chunk_size=0),
     ValueError, "batch_chunk_size must be positive int or None"),
]


@pytest.mark.parametrize("i", range(len(LCE_BAD)))
def test_linear_cross_entropy_bad_input(i):
    fn, exc, phrase = LCE_BAD[i]
    with pytest.raises(exc, match=phrase):
        fn(cygrad)
    torch = pytest.importorskip("torch")
    with pytest.raises(exc, match=phrase):
        fn(torch)


# ---------------------------------------------------------------------------
# conv_tbc and nn.grad


@pytest.mark.parametrize("pad", (0, 1, 2, -1))
def test_conv_tbc_matches_torch(pad):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    x, w, b = (rng.standard_normal(s) for s in ((6, 2, 3), (3, 3, 4), (4,)))
    res = []
    for lib in (torch, cygrad):
        ts = [lib.tensor(a, requires_grad=True) for a in (x, w, b)]
        y = lib.nn.functional.conv_tbc(*ts, pad)
        (y * y).sum().backward()
        res.append([y.detach().numpy()] + [t.grad.numpy() for t in ts])
    _close(res[1], res[0])


def test_conv_tbc_gradgradcheck_and_bad_input():
    rng = np.random.default_rng(5)
    ts = [_t(rng.standard_normal(s), True) for s in ((5, 2, 3), (2, 3, 4), (4,))]
    assert gradgradcheck(lambda x, w, b: F.conv_tbc(x, w, b, 1), ts)
    x, w, b = ts
    cases = [((x[0], w, b), "Input must have 3 dims"),
             ((x, w[0], b), "Weight tensor must have 3 dims"),
             ((x, w, b[None]), "Bias must be 1-D"),
             ((x, cygrad.zeros(2, 5, 4), b), "Input dim 2 \\(input channels\\)"),
             ((x, w, cygrad.zeros(5)), "Bias size must equal dim 2")]
    for args, phrase in cases:
        with pytest.raises(RuntimeError, match=phrase):
            F.conv_tbc(*args)
    with pytest.raises(TypeError, match="argument 'bias'"):
        F.conv_tbc(x, w, None)


GRAD_GEOS = [{}, {"stride": 2, "padding": 1}, {"dilation": 2, "groups": 2,
                                                "padding": 2}]


@pytest.mark.parametrize("nd", (1, 2, 3))
@pytest.mark.parametrize("geo", range(len(GRAD_GEOS)))
def test_nn_grad_matches_torch(nd, geo):
    torch = pytest.importorskip("torch")
    kw = GRAD_GEOS[geo]
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 4) + (7, 6, 5)[:nd])
    w = rng.standard_normal((6, 4 // kw.get("groups", 1)) + (3,) * nd)
    y = getattr(torch.nn.functional, f"conv{nd}d")(torch.tensor(x), torch.tensor(w),
                                                   **kw)
    g = rng.standard_normal(tuple(y.shape))
    res = []
    for lib in (torch, cygrad):
        gi = getattr(lib.nn.grad, f"conv{nd}d_input")(x.shape, lib.tensor(w),
                                                      lib.tensor(g), **kw)
        gw = getattr(lib.nn.grad, f"conv{nd}d_weight")(lib.tensor(x), w.shape,
                                                       lib.tensor(g), **kw)
        res.append([gi.numpy(), gw.numpy()])
    _close(res[1], res[0])


def test_nn_grad_is_conv_backward_and_differentiates_again():
    rng = np.random.default_rng(7)
    x = _t(rng.standard_normal((2, 3, 6, 5)), True)
    w = _t(rng.standard_normal((4, 3, 3, 3)), True)
    y = F.conv2d(x, w, stride=2, padding=1)
    g = _t(rng.standard_normal(tuple(y.shape)), True)
    gx, gw = cygrad.autograd.grad(y, (x, w), g)
    np.testing.assert_array_equal(
        nn.grad.conv2d_input(x.shape, w, g, stride=2, padding=1).detach().numpy(),
        gx.numpy())
    np.testing.assert_array_equal(
        nn.grad.conv2d_weight(x, w.shape, g, stride=2, padding=1).detach().numpy(),
        gw.numpy())
    assert gradcheck(lambda w, g: nn.grad.conv2d_input(x.shape, w, g, 2, 1), (w, g))
    assert gradgradcheck(lambda x, g: nn.grad.conv2d_weight(x, w.shape, g, 2, 1),
                         (x, g))
    assert F.grad is nn.grad
    with pytest.raises(RuntimeError, match=r"grad_output of size \[2, 4, 2, 2\]"):
        nn.grad.conv2d_input(x.shape, w, cygrad.zeros(2, 4, 2, 2), stride=2,
                             padding=1)


# ---------------------------------------------------------------------------
# nn.utils.stateless.functional_call


def test_functional_call_substitutes_and_restores():
    from cygrad.nn.utils.stateless import functional_call
    m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)).double()
    m.train()
    x = cygrad.randn(5, 3, dtype=cygrad.float64)
    w = cygrad.zeros(4, 3, dtype=cygrad.float64, requires_grad=True)
    before = {k: m.state_dict()[k].clone() for k in ("0.weight", "1.running_mean")}
    values = {"0.weight": w, "1.running_mean": cygrad.ones(4, dtype=cygrad.float64)}
    with pytest.warns(FutureWarning, match="torch.func.functional_call"):
        y = functional_call(m, values, x)
    np.testing.assert_allclose(y.detach().numpy(), 0.0, atol=1e-6)
    y.pow(2).sum().backward()
    assert w.grad is not None
    for k, v in before.items():
        np.testing.assert_array_equal(m.state_dict()[k].numpy(), v.numpy())
    assert isinstance(m[0].weight, nn.Parameter)
    # the buffer the call updated is handed back in the dict, as torch does
    assert not np.array_equal(values["1.running_mean"].numpy(), np.ones(4))


def test_functional_call_tied_strict_and_errors():
    from cygrad.nn.utils.stateless import functional_call

    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(2, 2, bias=False)
            self.b = nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    m = Tied()
    x = cygrad.randn(1, 2)
    eye = cygrad.eye(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        np.testing.assert_allclose(functional_call(m, {"a.weight": eye}, (x,)).numpy(),
                                   x.numpy())
        with pytest.raises(ValueError, match="which are tied"):
            functional_call(m, {"a.weight": eye, "b.weight": 2 * eye}, (x,))
        with pytest.raises(RuntimeError, match="Unexpected key\\(s\\): 'c'.*\n.*"
                                               "Missing key\\(s\\)"):
            functional_call(m, {"c": eye}, (x,), strict=True)

    class Raises(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)

        def forward(self, x):
            raise KeyError("inside")

    r = Raises()
    with pytest.raises(KeyError), warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        functional_call(r, {"lin.weight": eye}, (x,))
    assert isinstance(r.lin.weight, nn.Parameter)
    assert isinstance(m.a.weight, nn.Parameter) and m.b.weight is m.a.weight


def test_functional_call_matches_torch():
    torch = pytest.importorskip("torch")
    from torch.nn.utils.stateless import functional_call as tcall

    from cygrad.nn.utils.stateless import functional_call as ccall
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(),
                             torch.nn.Linear(4, 2)).double()
    cm = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double()
    cm.load_state_dict({k: cygrad.tensor(v.numpy()) for k, v in
                        tm.state_dict().items()})
    rng = np.random.default_rng(8)
    x, w = rng.standard_normal((5, 3)), rng.standard_normal((4, 3))
    res = []
    for lib, call, m in ((torch, tcall, tm), (cygrad, ccall, cm)):
        W = lib.tensor(w, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            y = call(m, {"0.weight": W}, args=lib.tensor(x))
        y.sum().backward()
        res.append([y.detach().numpy(), W.grad.numpy(), m[2].weight.grad.numpy()])
    _close(res[1], res[0])
