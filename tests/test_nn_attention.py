"""scaled_dot_product_attention and MultiheadAttention against torch (same
inputs, weights copied through state_dict both ways): outputs, returned
weights and every gradient; gradcheck / gradgradcheck in float64 of the
fused node; bad masks get torch's exception type."""

import itertools

import numpy as np
import pytest

import cygrad
from cygrad import nn
from cygrad.autograd import gradcheck, gradgradcheck
from cygrad.nn import functional as F

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask")

TOL = {np.float64: dict(rtol=1e-10, atol=1e-10), np.float32: dict(rtol=1e-5, atol=1e-5)}
TDT = {np.float64: torch.float64, np.float32: torch.float32}
CDT = {np.float64: cygrad.float64, np.float32: cygrad.float32}


def _c(a, requires_grad=False):
    return cygrad.tensor(np.asarray(a), requires_grad=requires_grad)


def _tt(a, requires_grad=False):
    return torch.tensor(np.asarray(a), requires_grad=requires_grad)


def _close(a, b, dt):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), **TOL[dt])


def _mask(kind, shape, rng, dt):
    if kind is None:
        return None
    if kind == "bool":
        m = rng.random(shape) > 0.3
        m[..., 0] = True  # no fully masked row
        return m
    return rng.standard_normal(shape).astype(dt)


@pytest.mark.parametrize("mask,causal,scale", [
    (None, False, None), ("bool", False, None), ("float", False, 0.3),
    (None, True, None), ("bool-bcast", False, None), (None, False, 2.0),
])
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_sdpa_matches_torch(mask, causal, scale, dt):
    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, 3, 4, 8)).astype(dt)
    k = rng.standard_normal((2, 3, 5, 8)).astype(dt)
    v = rng.standard_normal((2, 3, 5, 6)).astype(dt)
    if causal:
        k, v = k[:, :, :4], v[:, :, :4]
    m = None
    if mask == "bool-bcast":
        m = _mask("bool", (1, 3, 1, 5), rng, dt)
    elif mask is not None:
        m = _mask(mask, (4, 5), rng, dt)
    ins_t = [_tt(a, True) for a in (q, k, v)]
    ins_c = [_c(a, True) for a in (q, k, v)]
    mt = None if m is None else _tt(m)
    mc = None if m is None else _c(m)
    ot = torch.nn.functional.scaled_dot_product_attention(
        *ins_t, attn_mask=mt, is_causal=causal, scale=scale)
    oc = F.scaled_dot_product_attention(*ins_c, attn_mask=mc, is_causal=causal,
                                        scale=scale)
    _close(oc.detach().numpy(), ot.detach().numpy(), dt)
    w = rng.standard_normal(ot.shape).astype(dt)
    (ot * _tt(w)).sum().backward()
    (oc * _c(w)).sum().backward()
    for a, b in zip(ins_c, ins_t):
        _close(a.grad.numpy(), b.grad.numpy(), dt)


def test_sdpa_float_mask_gradient_broadcast_heads_and_gqa():
    rng = np.random.default_rng(1)
    q = rng.standard_normal((2, 4, 3, 5))
    k = rng.standard_normal((2, 2, 6, 5))
    v = rng.standard_normal((2, 2, 6, 3))
    m = rng.standard_normal((1, 1, 3, 6))
    tin = [_tt(a, True) for a in (q, k, v, m)]
    cin = [_c(a, True) for a in (q, k, v, m)]
    ot = torch.nn.functional.scaled_dot_product_attention(
        tin[0], tin[1], tin[2], attn_mask=tin[3], enable_gqa=True)
    oc = F.scaled_dot_product_attention(cin[0], cin[1], cin[2], attn_mask=cin[3],
                                        enable_gqa=True)
    _close(oc.detach().numpy(), ot.detach().numpy(), np.float64)
    (ot ** 2).sum().backward()
    (oc ** 2).sum().backward()
    for a, b in zip(cin, tin):
        _close(a.grad.numpy(), b.grad.numpy(), np.float64)
    # a key shared by every head broadcasts (no gqa flag needed)
    k1 = rng.standard_normal((2, 1, 6, 5))
    v1 = rng.standard_normal((2, 1, 6, 3))
    kt, kc = _tt(k1, True), _c(k1, True)
    ot = torch.nn.functional.scaled_dot_product_attention(_tt(q), kt, _tt(v1))
    oc = F.scaled_dot_product_attention(_c(q), kc, _c(v1))
    _close(oc.detach().numpy(), ot.detach().numpy(), np.float64)
    ot.sum().backward()
    oc.sum().backward()
    _close(kc.grad.numpy(), kt.grad.numpy(), np.float64)


def test_sdpa_fully_masked_row_is_zero_like_torch():
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal(s) for s in ((1, 3, 4), (1, 5, 4), (1, 5, 2)))
    m = np.ones((3, 5), bool)
    m[1] = False
    qt, qc = _tt(q, True), _c(q, True)
    ot = torch.nn.functional.scaled_dot_product_attention(qt, _tt(k), _tt(v),
                                                          attn_mask=_tt(m))
    oc = F.scaled_dot_product_attention(qc, _c(k), _c(v), attn_mask=_c(m))
    _close(oc.detach().numpy(), ot.detach().numpy(), np.float64)
    ot.sum().backward()
    oc.sum().backward()
    _close(qc.grad.numpy(), qt.grad.numpy(), np.float64)


def test_sdpa_dropout_is_inverted_and_seeded():
    q = cygrad.randn(2, 6, 4, dtype=cygrad.float64)
    k = cygrad.randn(2, 7, 4, dtype=cygrad.float64)
    v = cygrad.randn(2, 7, 3, dtype=cygrad.float64)
    cygrad.manual_seed(5)
    a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    cygrad.manual_seed(5)
    b = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    full = F.scaled_dot_product_attention(q, k, v)
    assert not np.allclose(a.numpy(), full.numpy())
    zero = F.scaled_dot_product_attention(q, k, v, dropout_p=1.0)
    np.testing.assert_array_equal(zero.numpy(), np.zeros((2, 6, 3)))


def test_sdpa_gradcheck_and_gradgradcheck():
    rng = np.random.default_rng(3)
    q = _c(rng.standard_normal((2, 3, 4)), True)
    k = _c(rng.standard_normal((2, 5, 4)), True)
    v = _c(rng.standard_normal((2, 5, 3)), True)
    m = _c(rng.standard_normal((3, 5)), True)

    def f(q, k, v, m):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m)
    assert gradcheck(f, (q, k, v, m))
    assert gradgradcheck(f, (q, k, v, m))

    def g(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.7)
    assert gradcheck(g, (q, k[:, :3], v[:, :3]))


def test_sdpa_bad_input_matches_torch():
    rng = np.random.default_rng(4)
    q = rng.standard_normal((2, 3, 4, 8)).astype(np.float32)
    k = rng.standard_normal((2, 3, 5, 8)).astype(np.float32)
    v = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    cases = [
        dict(attn_mask=np.zeros((4, 6), bool)),
        dict(attn_mask=np.zeros((4, 5), np.int64)),
        dict(attn_mask=np.zeros((4, 5), np.float64)),
        dict(attn_mask=np.zeros((4, 5), np.float32), is_causal=True),
    ]
    for kw in cases:
        kt = {a: (_tt(b) if isinstance(b, np.ndarray) else b) for a, b in kw.items()}
        kc = {a: (_c(b) if isinstance(b, np.ndarray) else b) for a, b in kw.items()}
        with pytest.raises(RuntimeError):
            torch.nn.functional.scaled_dot_product_attention(_tt(q), _tt(k), _tt(v), **kt)
        with pytest.raises(RuntimeError) as e:
            F.scaled_dot_product_attention(_c(q), _c(k), _c(v), **kc)
        if "attn_mask" in kw and kw["attn_mask"].shape == (4, 6):
            assert "[4, 6]" in str(e.value) and "[2, 3, 4, 5]" in str(e.value)
    for args in [(q, k[..., :7], v), (q, k, v[:, :, :4]), (q.astype(np.float64), k, v),
                 (q[0, 0, 0], k[0, 0, 0], v[0, 0, 0])]:
        with pytest.raises(RuntimeError):
            torch.nn.functional.scaled_dot_product_attention(*map(_tt, args))
        with pytest.raises(RuntimeError):
            F.scaled_dot_product_attention(*map(_c, args))


# ---------------------------------------------------------------------------
# MultiheadAttention


def _copy(tm, cm):
    cm.load_state_dict({k: _c(v.detach().numpy()) for k, v in tm.state_dict().items()})


def _mha_pair(dt, **kw):
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(8, 2, **kw).to(TDT[dt])
    cm = nn.MultiheadAttention(8, 2, dtype=CDT[dt], **kw)
    assert list(cm.state_dict()) == list(tm.state_dict())
    _copy(tm, cm)
    return tm, cm


MHA_FLAGS = list(itertools.product([True, False], [False, True], [False, True],
                                   [False, True]))


@pytest.mark.parametrize("bias,add_bias_kv,add_zero_attn,kvdim", MHA_FLAGS)
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_mha_matches_torch(bias, add_bias_kv, add_zero_attn, kvdim, batch_first, dt):
    kw = dict(bias=bias, add_bias_kv=add_bias_kv, add_zero_attn=add_zero_attn,
              batch_first=batch_first)
    if kvdim:
        kw.update(kdim=5, vdim=3)
    tm, cm = _mha_pair(dt, **kw)
    tm.eval()  # torch's fast path is off for these flags or gives the same numbers
    cm.eval()
    rng = np.random.default_rng(1)
    L, S, N = 4, 6, 3
    shp = (lambda a, b: (N, a, b)) if batch_first else (lambda a, b: (a, N, b))
    q = rng.standard_normal(shp(L, 8)).astype(dt)
    k = rng.standard_normal(shp(S, 5 if kvdim else 8)).astype(dt)
    v = rng.standard_normal(shp(S, 3 if kvdim else 8)).astype(dt)
    kpm = np.zeros((N, S), bool)
    kpm[0, -2:] = True
    am = rng.standard_normal((L, S)).astype(dt)
    combos = [(True, True, False, False), (True, False, True, True),
              (False, True, True, False), (False, True, False, True),
              (True, True, True, True)]
    for need, avg, use_kpm, use_am in combos:
        tin = [_tt(a, True) for a in (q, k, v)]
        cin = [_c(a, True) for a in (q, k, v)]
        kt = dict(need_weights=need, average_attn_weights=avg,
                  key_padding_mask=_tt(kpm) if use_kpm else None,
                  attn_mask=_tt(am) if use_am else None)
        kc = dict(need_weights=need, average_attn_weights=avg,
                  key_padding_mask=_c(kpm) if use_kpm else None,
                  attn_mask=_c(am) if use_am else None)
        ot, wt = tm(*tin, **kt)
        oc, wc = cm(*cin, **kc)
        _close(oc.detach().numpy(), ot.detach().numpy(), dt)
        if need:
            _close(wc.detach().numpy(), wt.detach().numpy(), dt)
        else:
            assert wc is None and wt is None
        loss_t = (ot ** 2).sum() + ((wt ** 2).sum() if need else 0)
        loss_c = (oc ** 2).sum() + ((wc ** 2).sum() if need else 0)
        tm.zero_grad()
        cm.zero_grad()
        loss_t.backward()
        loss_c.backward()
        for a, b in zip(cin, tin):
            _close(a.grad.numpy(), b.grad.numpy(), dt)
        for (n1, p1), (n2, p2) in zip(tm.named_parameters(), cm.named_parameters()):
            assert n1 == n2
            _close(p2.grad.numpy(), p1.grad.numpy(), dt)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_mha_batch_first_self_attention_matches_torch(bias, dt):
    """query, key and value one batch-first tensor: the packed path (one
    in_proj product, heads as views) against torch, with every mask kind."""
    tm, cm = _mha_pair(dt, bias=bias, batch_first=True)
    tm.eval()
    cm.eval()
    rng = np.random.default_rng(5)
    N, L = 3, 5
    x = rng.standard_normal((N, L, 8)).astype(dt)
    kpm = np.zeros((N, L), bool)
    kpm[1, -2:] = True
    causal = np.triu(np.full((L, L), -np.inf, dt), 1)
    m3 = rng.standard_normal((N * 2, L, L)).astype(dt)
    cases = [(True, True, None, None), (False, True, causal, None),
             (True, False, causal, kpm), (True, True, m3, None),
             (False, True, None, kpm)]
    for need, avg, am, pm in cases:
        xt, xc = _tt(x, True), _c(x, True)
        kt = {"need_weights": need, "average_attn_weights": avg,
              "attn_mask": None if am is None else _tt(am),
              "key_padding_mask": None if pm is None else _tt(pm)}
        kc = {"need_weights": need, "average_attn_weights": avg,
              "attn_mask": None if am is None else _c(am),
              "key_padding_mask": None if pm is None else _c(pm)}
        ot, wt = tm(xt, xt, xt, **kt)
        oc, wc = cm(xc, xc, xc, **kc)
        _close(oc.detach().numpy(), ot.detach().numpy(), dt)
        if need:
            _close(wc.detach().numpy(), wt.detach().numpy(), dt)
        else:
            assert wc is None and wt is None
        tm.zero_grad()
        cm.zero_grad()
        ((ot ** 2).sum() + ((wt ** 2).sum() if need else 0)).backward()
        ((oc ** 2).sum() + ((wc ** 2).sum() if need else 0)).backward()
        _close(xc.grad.numpy(), xt.grad.numpy(), dt)
        for (n1, p1), (n2, p2) in zip(tm.named_parameters(), cm.named_parameters()):
            assert n1 == n2
            _close(p2.grad.numpy(), p1.grad.numpy(), dt)


def test_mha_unbatched_bool_3d_mask_and_state_dict_back():
    dt = np.float64
    tm, cm = _mha_pair(dt)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((5, 8))
    m = rng.random((2, 5, 5)) > 0.6
    m[..., 0] = False
    ot, wt = tm(_tt(x), _tt(x), _tt(x), attn_mask=_tt(m), average_attn_weights=False)
    oc, wc = cm(_c(x), _c(x), _c(x), attn_mask=_c(m), average_attn_weights=False)
    assert tuple(oc.shape) == (5, 8) and tuple(wc.shape) == (2, 5, 5)
    _close(oc.detach().numpy(), ot.detach().numpy(), dt)
    _close(wc.detach().numpy(), wt.detach().numpy(), dt)
    causal = torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64)
    ot, _ = tm(_tt(x), _tt(x), _tt(x), attn_mask=causal, is_causal=True,
               need_weights=False)
    oc, _ = cm(_c(x), _c(x), _c(x), attn_mask=_c(causal.numpy()), is_causal=True,
               need_weights=False)
    _close(oc.detach().numpy(), ot.detach().numpy(), dt)
    # cygrad -> torch
    c2 = nn.MultiheadAttention(8, 2, dtype=cygrad.float64)
    t2 = torch.nn.MultiheadAttention(8, 2).double()
    t2.load_state_dict({k: torch.tensor(v.numpy()) for k, v in c2.state_dict().items()})
    _close(c2(_c(x), _c(x), _c(x))[0].detach().numpy(),
           t2(_tt(x), _tt(x), _tt(x))[0].detach().numpy(), dt)
    assert repr(c2) == repr(t2)
    assert isinstance(c2.out_proj, nn.Linear)


def test_mha_initialisation_follows_torch():
    cygrad.manual_seed(0)
    m = nn.MultiheadAttention(16, 4, add_bias_kv=True)
    w = m.in_proj_weight.detach().numpy()
    bound = np.sqrt(6.0 / (16 + 48))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    np.testing.assert_array_equal(m.in_proj_bias.detach().numpy(), np.zeros(48))
    np.testing.assert_array_equal(m.out_proj.bias.detach().numpy(), np.zeros(16))
    assert m.bias_k.shape == (1, 1, 16)


def test_mha_dropout_only_in_training():
    m = nn.MultiheadAttention(8, 2, dropout=0.5, dtype=cygrad.float64)
    x = cygrad.randn(4, 2, 8, dtype=cygrad.float64)
    m.eval()
    a = m(x, x, x)[0].detach().numpy()
    np.testing.assert_array_equal(a, m(x, x, x)[0].detach().numpy())
    m.train()
    assert not np.allclose(a, m(x, x, x)[0].detach().numpy())


def test_mha_bad_input_matches_torch():
    tm, cm = _mha_pair(np.float32)
    r = np.random.default_rng(3)
    x = r.standard_normal((4, 3, 8)).astype(np.float32)
    cases = [
        dict(key_padding_mask=np.zeros((3, 5), bool)),
        dict(attn_mask=np.zeros((4, 5), bool)),
        dict(attn_mask=np.zeros((4, 4), np.int64)),
        dict(attn_mask=np.zeros((7, 4, 4), np.float32)),
        dict(is_causal=True),
    ]
    for kw in cases:
        kt = {a: (_tt(b) if isinstance(b, np.ndarray) else b) for a, b in kw.items()}
        kc = {a: (_c(b) if isinstance(b, np.ndarray) else b) for a, b in kw.items()}
        with pytest.raises(Exception) as te:
            tm(_tt(x), _tt(x), _tt(x), **kt)
        with pytest.raises(type(te.value)) as ce:
            cm(_c(x), _c(x), _c(x), **kc)
        for s in ("(4, 4)", "(6, 4, 4)"):
            if s in str(te.value):
                assert s in str(ce.value)
    with pytest.raises(AssertionError, match="embedding dimension of 8, but got 7"):
        y = _c(r.standard_normal((4, 3, 7)).astype(np.float32))
        cm(y, _c(x), _c(x))
    with pytest.raises(AssertionError, match="divisible"):
        nn.MultiheadAttention(8, 3)
