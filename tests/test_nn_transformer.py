"""Transformer layers against torch, weights copied through state_dict both
ways: outputs and every gradient for norm_first, activation relu/gelu/a
callable, batch_first, bias, masks and padding masks; the stacks copy their
template layer; generate_square_subsequent_mask; bad input."""

import itertools
import warnings

import numpy as np
import pytest

import cygrad
from cygrad import nn
from cygrad.nn import functional as F

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

TOL = {np.float64: dict(rtol=1e-10, atol=1e-10), np.float32: dict(rtol=1e-5, atol=1e-5)}
TDT = {np.float64: torch.float64, np.float32: torch.float32}
CDT = {np.float64: cygrad.float64, np.float32: cygrad.float32}


def _c(a, requires_grad=False):
    return cygrad.tensor(np.asarray(a), requires_grad=requires_grad)


def _tt(a, requires_grad=False):
    return torch.tensor(np.asarray(a), requires_grad=requires_grad)


def _close(a, b, dt):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), **TOL[dt])


def _copy(tm, cm):
    assert list(cm.state_dict()) == list(tm.state_dict())
    cm.load_state_dict({k: _c(v.detach().numpy()) for k, v in tm.state_dict().items()})


def _grads_match(tm, cm, dt):
    for (n1, p1), (n2, p2) in zip(tm.named_parameters(), cm.named_parameters()):
        assert n1 == n2
        if p1.grad is None:
            assert p2.grad is None
            continue
        _close(p2.grad.numpy(), p1.grad.numpy(), dt)


def _acts(name):
    if name == "callable":
        return torch.nn.functional.silu, F.silu
    return name, name


ENC = list(itertools.product([False, True], ["relu", "gelu", "callable"], [False, True],
                             [True, False]))


@pytest.mark.parametrize("norm_first,act,batch_first,bias", ENC)
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_encoder_layer_and_stack_match_torch(norm_first, act, batch_first, bias, dt):
    ta, ca = _acts(act)
    kw = dict(dim_feedforward=16, dropout=0.0, norm_first=norm_first,
              batch_first=batch_first, bias=bias)
    torch.manual_seed(0)
    tl = torch.nn.TransformerEncoderLayer(8, 2, activation=ta, **kw).to(TDT[dt])
    cl = nn.TransformerEncoderLayer(8, 2, activation=ca, dtype=CDT[dt], **kw)
    _copy(tl, cl)
    tm = torch.nn.TransformerEncoder(tl, 2, norm=torch.nn.LayerNorm(8).to(TDT[dt]),
                                     enable_nested_tensor=False)
    cm = nn.TransformerEncoder(cl, 2, norm=nn.LayerNorm(8, dtype=CDT[dt]))
    # make the two copies differ, then copy the stack
    with torch.no_grad():
        tm.layers[1].linear1.weight.mul_(0.5)
    _copy(tm, cm)
    rng = np.random.default_rng(1)
    shape = (3, 5, 8) if batch_first else (5, 3, 8)
    x = rng.standard_normal(shape).astype(dt)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=TDT[dt])
    kpm = np.zeros((3, 5), bool)
    kpm[1, -2:] = True
    for use_mask, use_kpm in [(False, False), (True, False), (True, True)]:
        xt, xc = _tt(x, True), _c(x, True)
        kt = dict(mask=mask if use_mask else None,
                  src_key_padding_mask=_tt(kpm) if use_kpm else None)
        kc = dict(mask=_c(mask.numpy()) if use_mask else None,
                  src_key_padding_mask=_c(kpm) if use_kpm else None)
        ot = tm(xt, **kt)
        oc = cm(xc, **kc)
        _close(oc.detach().numpy(), ot.detach().numpy(), dt)
        w = rng.standard_normal(shape).astype(dt)
        tm.zero_grad()
        cm.zero_grad()
        (ot * _tt(w)).sum().backward()
        (oc * _c(w)).sum().backward()
        _close(xc.grad.numpy(), xt.grad.numpy(), dt)
        _grads_match(tm, cm, dt)


@pytest.mark.parametrize("norm_first,batch_first", list(itertools.product(
    [False, True], [False, True])))
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_transformer_matches_torch(norm_first, batch_first, dt):
    torch.manual_seed(2)
    kw = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2,
              dim_feedforward=12, dropout=0.0, norm_first=norm_first,
              batch_first=batch_first, activation="gelu")
    tm = torch.nn.Transformer(**kw).to(TDT[dt])
    cm = nn.Transformer(dtype=CDT[dt], **kw)
    _copy(tm, cm)
    rng = np.random.default_rng(3)
    src = rng.standard_normal((2, 6, 8) if batch_first else (6, 2, 8)).astype(dt)
    tgt = rng.standard_normal((2, 4, 8) if batch_first else (4, 2, 8)).astype(dt)
    tmask = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=TDT[dt])
    cmask = nn.Transformer.generate_square_subsequent_mask(4, dtype=CDT[dt])
    np.testing.assert_array_equal(cmask.numpy(), tmask.numpy())
    mkpm = np.zeros((2, 6), bool)
    mkpm[0, -1] = True
    st, sc = _tt(src, True), _c(src, True)
    gt, gc = _tt(tgt, True), _c(tgt, True)
    ot = tm(st, gt, tgt_mask=tmask, memory_key_padding_mask=_tt(mkpm),
            src_key_padding_mask=_tt(mkpm), tgt_is_causal=True)
    oc = cm(sc, gc, tgt_mask=cmask, memory_key_padding_mask=_c(mkpm),
            src_key_padding_mask=_c(mkpm), tgt_is_causal=True)
    _close(oc.detach().numpy(), ot.detach().numpy(), dt)
    (ot ** 2).sum().backward()
    (oc ** 2).sum().backward()
    _close(sc.grad.numpy(), st.grad.numpy(), dt)
    _close(gc.grad.numpy(), gt.grad.numpy(), dt)
    _grads_match(tm, cm, dt)


def test_decoder_layer_unbatched_and_state_dict_to_torch():
    dt = np.float64
    cl = nn.TransformerDecoderLayer(8, 2, dim_feedforward=10, dropout=0.0,
                                    dtype=cygrad.float64)
    tl = torch.nn.TransformerDecoderLayer(8, 2, dim_feedforward=10, dropout=0.0).double()
    tl.load_state_dict({k: torch.tensor(v.numpy()) for k, v in cl.state_dict().items()})
    rng = np.random.default_rng(4)
    x, mem = rng.standard_normal((3, 8)), rng.standard_normal((5, 8))
    _close(cl(_c(x), _c(mem)).detach().numpy(),
           tl(_tt(x), _tt(mem)).detach().numpy(), dt)


def test_stack_layers_are_independent_copies():
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=8, dropout=0.0)
    enc = nn.TransformerEncoder(layer, 3)
    ps = [dict(m.named_parameters()) for m in enc.layers]
    for name in ps[0]:
        assert ps[0][name] is not ps[1][name]
        np.testing.assert_array_equal(ps[0][name].detach().numpy(),
                                      ps[1][name].detach().numpy())
    with cygrad.no_grad():
        ps[0]["linear1.weight"].mul_(2.0)
    assert not np.allclose(ps[0]["linear1.weight"].detach().numpy(),
                           ps[1]["linear1.weight"].detach().numpy())
    assert len(list(enc.parameters())) == 3 * len(ps[0])


def test_dropout_trains_and_eval_is_deterministic():
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=8, dropout=0.5,
                                       dtype=cygrad.float64)
    x = cygrad.randn(4, 2, 8, dtype=cygrad.float64)
    layer.eval()
    a = layer(x).detach().numpy()
    np.testing.assert_array_equal(a, layer(x).detach().numpy())
    layer.train()
    assert not np.allclose(a, layer(x).detach().numpy())


def test_transformer_bad_input_matches_torch():
    tm = torch.nn.Transformer(8, 2, 1, 1, 8, dropout=0.0)
    cm = nn.Transformer(8, 2, 1, 1, 8, dropout=0.0)
    for s, t in [((5, 2, 8), (4, 3, 8)), ((5, 2, 7), (4, 2, 7))]:
        with pytest.raises(RuntimeError) as te:
            tm(torch.zeros(s), torch.zeros(t))
        with pytest.raises(RuntimeError) as ce:
            cm(cygrad.zeros(*s), cygrad.zeros(*t))
        assert str(te.value) == str(ce.value)
    with pytest.raises(RuntimeError, match="relu/gelu"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")


@pytest.mark.parametrize("kw", [dict(), dict(batch_first=True),
                                dict(batch_first=True, norm_first=True),
                                dict(batch_first=True, nhead=1),
                                dict(batch_first=True, activation="gelu"),
                                dict(batch_first=True, bias=False),
                                dict(batch_first=True, activation=lambda x: x)])
@pytest.mark.parametrize("nested", [True, False])
def test_encoder_warns_about_nested_tensors_as_torch(kw, nested):
    """torch warns at construction why its nested-tensor path is off (the
    models tutorial's nn.Transformer shows it); cygrad has no such path and
    gives the same warning and ``use_nested_tensor``."""
    torch = pytest.importorskip("torch")
    seen = []
    for m in (cygrad, torch):
        args = dict(d_model=8, nhead=2, dim_feedforward=16) | kw
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            enc = m.nn.TransformerEncoder(m.nn.TransformerEncoderLayer(**args), 1,
                                          enable_nested_tensor=nested)
        seen.append(([str(x.message) for x in w], enc.use_nested_tensor,
                     enc.layers[0].activation_relu_or_gelu))
    assert seen[0] == seen[1]
