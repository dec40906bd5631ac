"""RNN / LSTM / GRU and their cells: module-to-module against torch with the
weights copied through state_dict (both ways), outputs, final states and
every gradient, over the flag combinations; PackedSequence with unequal
lengths; gradcheck in float64 (also through the Tensor-op reference that
double backward uses); bad input gets torch's exception type."""

import itertools

import numpy as np
import pytest

import cygrad
from cygrad import nn
from cygrad.autograd import gradcheck
from cygrad.nn.utils import rnn as R
from cygrad.ops.sorting import _introsort_order

torch = pytest.importorskip("torch")

TOL = {np.float64: dict(rtol=1e-10, atol=1e-10), np.float32: dict(rtol=1e-5, atol=1e-5)}
TDT = {np.float64: torch.float64, np.float32: torch.float32}
CDT = {np.float64: cygrad.float64, np.float32: cygrad.float32}


def _c(a, requires_grad=False):
    return cygrad.tensor(np.asarray(a), requires_grad=requires_grad)


def _tt(a, requires_grad=False):
    return torch.tensor(np.asarray(a), requires_grad=requires_grad)


def _copy_to_cygrad(tm, cm):
    cm.load_state_dict({k: _c(v.detach().numpy()) for k, v in tm.state_dict().items()})


def _close(a, b, dt):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), **TOL[dt])


def _states(s):
    return s if isinstance(s, tuple) else (s,)


def _run_both(tm, cm, x, hx, dt):
    """Forward both, backward a loss using every output; compare everything."""
    xt = _tt(x, True)
    xc = _c(x, True)
    if hx is None:
        ot, st = tm(xt)
        oc, sc = cm(xc)
    else:
        hts = tuple(_tt(h, True) for h in hx)
        hcs = tuple(_c(h, True) for h in hx)
        ot, st = tm(xt, hts if len(hx) == 2 else hts[0])
        oc, sc = cm(xc, hcs if len(hx) == 2 else hcs[0])
    _close(oc.detach().numpy(), ot.detach().numpy(), dt)
    st, sc = _states(st), _states(sc)
    assert len(st) == len(sc)
    for a, b in zip(sc, st):
        assert tuple(a.shape) == tuple(b.shape)
        _close(a.detach().numpy(), b.detach().numpy(), dt)
    rng = np.random.default_rng(5)
    wo = rng.standard_normal(tuple(ot.shape)).astype(dt)
    ws = [rng.standard_normal(tuple(s.shape)).astype(dt) for s in st]
    lt = (ot * _tt(wo)).sum() + sum((s * _tt(w)).sum() for s, w in zip(st, ws))
    lc = (oc * _c(wo)).sum() + sum((s * _c(w)).sum() for s, w in zip(sc, ws))
    lt.backward()
    lc.backward()
    _close(xc.grad.numpy(), xt.grad.numpy(), dt)
    if hx is not None:
        for a, b in zip(hcs, hts):
            _close(a.grad.numpy(), b.grad.numpy(), dt)
    tp = dict(tm.named_parameters())
    cp = dict(cm.named_parameters())
    assert list(tp) == list(cp)
    for name in tp:
        _close(cp[name].grad.numpy(), tp[name].grad.numpy(), dt)


FLAGS = list(itertools.product([1, 2], [True, False], [False, True], [False, True]))


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH", "RNN_RELU"])
@pytest.mark.parametrize("layers,bias,batch_first,bidir", FLAGS)
@pytest.mark.parametrize("with_h0", [False, True])
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_layer_matches_torch(mode, layers, bias, batch_first, bidir, with_h0, dt):
    kw = dict(num_layers=layers, bias=bias, batch_first=batch_first,
              bidirectional=bidir)
    if mode.startswith("RNN"):
        kw["nonlinearity"] = "tanh" if mode == "RNN_TANH" else "relu"
        tcls, ccls = torch.nn.RNN, nn.RNN
    else:
        tcls, ccls = getattr(torch.nn, mode), getattr(nn, mode)
    torch.manual_seed(layers * 7 + bias)
    tm = tcls(3, 5, **kw).to(TDT[dt])
    cm = ccls(3, 5, dtype=CDT[dt], **kw)
    _copy_to_cygrad(tm, cm)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 4, 3) if batch_first else (4, 2, 3)).astype(dt)
    hx = None
    if with_h0:
        d = 2 if bidir else 1
        hx = (rng.standard_normal((layers * d, 2, 5)).astype(dt),)
        if mode == "LSTM":
            hx = hx + (rng.standard_normal((layers * d, 2, 5)).astype(dt),)
    _run_both(tm, cm, x, hx, dt)


@pytest.mark.parametrize("layers,bidir,with_h0,batch_first",
                         list(itertools.product([1, 2], [False, True], [False, True],
                                                [False, True])))
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_lstm_proj_size_matches_torch(layers, bidir, with_h0, batch_first, dt):
    torch.manual_seed(3)
    kw = dict(num_layers=layers, bidirectional=bidir, proj_size=2,
              batch_first=batch_first)
    tm = torch.nn.LSTM(3, 5, **kw).to(TDT[dt])
    cm = nn.LSTM(3, 5, dtype=CDT[dt], **kw)
    _copy_to_cygrad(tm, cm)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 4, 3) if batch_first else (4, 3, 3)).astype(dt)
    d = 2 if bidir else 1
    hx = None
    if with_h0:
        hx = (rng.standard_normal((layers * d, 3, 2)).astype(dt),
              rng.standard_normal((layers * d, 3, 5)).astype(dt))
    _run_both(tm, cm, x, hx, dt)


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("with_h0", [False, True])
def test_unbatched_input_matches_torch(mode, with_h0):
    dt = np.float64
    torch.manual_seed(4)
    tm = getattr(torch.nn, mode)(3, 4, num_layers=2, bidirectional=True).double()
    cm = getattr(nn, mode)(3, 4, num_layers=2, bidirectional=True, dtype=cygrad.float64)
    _copy_to_cygrad(tm, cm)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 3))
    hx = None
    if with_h0:
        hx = (rng.standard_normal((4, 4)),)
        if mode == "LSTM":
            hx = hx + (rng.standard_normal((4, 4)),)
    _run_both(tm, cm, x, hx, dt)


def test_state_dict_loads_both_ways_and_names_match():
    cm = nn.LSTM(3, 6, num_layers=2, bidirectional=True, proj_size=2)
    tm = torch.nn.LSTM(3, 6, num_layers=2, bidirectional=True, proj_size=2)
    assert list(cm.state_dict()) == list(tm.state_dict())
    for k, v in cm.state_dict().items():
        assert tuple(v.shape) == tuple(tm.state_dict()[k].shape)
    tm.load_state_dict({k: torch.tensor(v.numpy()) for k, v in cm.state_dict().items()})
    for k, v in tm.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), cm.state_dict()[k].numpy())
    assert repr(cm) == repr(tm)
    for mode in ("GRU", "RNN"):
        c = getattr(nn, mode)(4, 3, bias=False, batch_first=True, num_layers=3,
                              dropout=0.2)
        t = getattr(torch.nn, mode)(4, 3, bias=False, batch_first=True, num_layers=3,
                                    dropout=0.2)
        assert list(c.state_dict()) == list(t.state_dict())
        assert repr(c) == repr(t)
    cm.flatten_parameters()
    assert len(cm.all_weights) == 4 and len(cm.all_weights[0]) == 5


def test_initialisation_is_uniform_in_torch_bound():
    cygrad.manual_seed(0)
    m = nn.GRU(10, 64, num_layers=2)
    bound = 1 / np.sqrt(64)
    allw = np.concatenate([p.detach().numpy().ravel() for p in m.parameters()])
    assert np.abs(allw).max() <= bound
    assert np.abs(allw).max() > 0.95 * bound
    assert abs(allw.mean()) < 0.01 * bound * 10


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("enforce_sorted", [True, False])
@pytest.mark.parametrize("bidir", [False, True])
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_packed_sequence_matches_torch(mode, enforce_sorted, bidir, dt):
    torch.manual_seed(6)
    tm = getattr(torch.nn, mode)(3, 4, num_layers=2, bidirectional=bidir).to(TDT[dt])
    cm = getattr(nn, mode)(3, 4, num_layers=2, bidirectional=bidir, dtype=CDT[dt])
    _copy_to_cygrad(tm, cm)
    lengths = [5, 3, 3, 1] if enforce_sorted else [2, 5, 1, 4]
    rng = np.random.default_rng(7)
    x = rng.standard_normal((5, 4, 3)).astype(dt)
    d = 2 if bidir else 1
    h0 = rng.standard_normal((2 * d, 4, 4)).astype(dt)
    c0 = rng.standard_normal((2 * d, 4, 4)).astype(dt)
    xt, xc = _tt(x, True), _c(x, True)
    h0t, h0c = _tt(h0, True), _c(h0, True)
    c0t, c0c = _tt(c0, True), _c(c0, True)
    pt = torch.nn.utils.rnn.pack_padded_sequence(xt, lengths,
                                                 enforce_sorted=enforce_sorted)
    pc = R.pack_padded_sequence(xc, lengths, enforce_sorted=enforce_sorted)
    _close(pc.data.detach().numpy(), pt.data.detach().numpy(), dt)
    np.testing.assert_array_equal(pc.batch_sizes.numpy(), pt.batch_sizes.numpy())
    if enforce_sorted:
        assert pc.sorted_indices is None and pt.sorted_indices is None
    else:
        np.testing.assert_array_equal(pc.sorted_indices.numpy(),
                                      pt.sorted_indices.numpy())
        np.testing.assert_array_equal(pc.unsorted_indices.numpy(),
                                      pt.unsorted_indices.numpy())
    hxt = (h0t, c0t) if mode == "LSTM" else h0t
    hxc = (h0c, c0c) if mode == "LSTM" else h0c
    ot, st = tm(pt, hxt)
    oc, sc = cm(pc, hxc)
    assert isinstance(oc, R.PackedSequence)
    yt, lt = torch.nn.utils.rnn.pad_packed_sequence(ot, padding_value=-1.0)
    yc, lc = R.pad_packed_sequence(oc, padding_value=-1.0)
    np.testing.assert_array_equal(lc.numpy(), lt.numpy())
    _close(yc.detach().numpy(), yt.detach().numpy(), dt)
    st, sc = _states(st), _states(sc)
    for a, b in zip(sc, st):
        _close(a.detach().numpy(), b.detach().numpy(), dt)
    w = rng.standard_normal(tuple(yt.shape)).astype(dt)
    losst = (yt * _tt(w)).sum() + sum((s ** 2).sum() for s in st)
    lossc = (yc * _c(w)).sum() + sum((s ** 2).sum() for s in sc)
    losst.backward()
    lossc.backward()
    _close(xc.grad.numpy(), xt.grad.numpy(), dt)
    _close(h0c.grad.numpy(), h0t.grad.numpy(), dt)
    if mode == "LSTM":
        _close(c0c.grad.numpy(), c0t.grad.numpy(), dt)
    tp, cp = dict(tm.named_parameters()), dict(cm.named_parameters())
    for name in tp:
        _close(cp[name].grad.numpy(), tp[name].grad.numpy(), dt)


def test_pad_and_pack_utilities_match_torch():
    rng = np.random.default_rng(8)
    seqs = [rng.standard_normal((n, 2)) for n in (3, 1, 4)]
    for bf, side in itertools.product([False, True], ["right", "left"]):
        pt = torch.nn.utils.rnn.pad_sequence([_tt(s) for s in seqs], batch_first=bf,
                                             padding_value=9.0, padding_side=side)
        pc = R.pad_sequence([_c(s) for s in seqs], batch_first=bf, padding_value=9.0,
                            padding_side=side)
        np.testing.assert_array_equal(pc.numpy(), pt.numpy())
    pt = torch.nn.utils.rnn.pack_sequence([_tt(s) for s in seqs], enforce_sorted=False)
    sc = [_c(s, True) for s in seqs]
    pc = R.pack_sequence(sc, enforce_sorted=False)
    np.testing.assert_array_equal(pc.data.detach().numpy(), pt.data.numpy())
    for bf in (False, True):
        yt, lt = torch.nn.utils.rnn.pad_packed_sequence(pt, batch_first=bf,
                                                        total_length=6)
        yc, lc = R.pad_packed_sequence(pc, batch_first=bf, total_length=6)
        np.testing.assert_array_equal(yc.detach().numpy(), yt.numpy())
        np.testing.assert_array_equal(lc.numpy(), lt.numpy())
    back = R.unpack_sequence(pc)
    for a, s in zip(back, seqs):
        np.testing.assert_array_equal(a.detach().numpy(), s)
    (pc.data * 2).sum().backward()
    for s in sc:
        np.testing.assert_array_equal(s.grad.numpy(), np.full(s.shape, 2.0))
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        R.pack_sequence([_c(s) for s in seqs])
    with pytest.raises(ValueError, match="total_length=2"):
        R.pad_packed_sequence(pc, total_length=2)
    with pytest.raises(RuntimeError, match="padding_side"):
        R.pad_sequence([_c(s) for s in seqs], padding_side="up")
    with pytest.raises(RuntimeError, match="batch_size"):
        R.pack_padded_sequence(_c(np.zeros((4, 3, 2))), [4, 3])
    with pytest.raises(RuntimeError, match="greater than 0"):
        R.pack_padded_sequence(_c(np.zeros((4, 3, 2))), [4, 0, 2],
                               enforce_sorted=False)
    with pytest.raises(RuntimeError, match="empty list"):
        R.pad_sequence([])


# ---------------------------------------------------------------------------
# cells


@pytest.mark.parametrize("kind", ["LSTMCell", "GRUCell", "RNNCell", "RNNCell-relu"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("with_h", [True, False])
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_cells_match_torch(kind, bias, with_h, batched, dt):
    name, _, nl = kind.partition("-")
    kw = {"nonlinearity": nl} if nl else {}
    torch.manual_seed(9)
    tm = getattr(torch.nn, name)(3, 4, bias=bias, **kw).to(TDT[dt])
    cm = getattr(nn, name)(3, 4, bias=bias, dtype=CDT[dt], **kw)
    _copy_to_cygrad(tm, cm)
    assert repr(cm) == repr(tm)
    rng = np.random.default_rng(10)
    shape = (2,) if batched else ()
    x = rng.standard_normal(shape + (3,)).astype(dt)
    states = [rng.standard_normal(shape + (4,)).astype(dt)
              for _ in range(2 if name == "LSTMCell" else 1)]
    xt, xc = _tt(x, True), _c(x, True)
    st = [_tt(s, True) for s in states]
    sc = [_c(s, True) for s in states]
    if name == "LSTMCell":
        ot = tm(xt, tuple(st) if with_h else None)
        oc = cm(xc, tuple(sc) if with_h else None)
    else:
        ot = (tm(xt, st[0] if with_h else None),)
        oc = (cm(xc, sc[0] if with_h else None),)
    for a, b in zip(oc, ot):
        assert tuple(a.shape) == tuple(b.shape)
        _close(a.detach().numpy(), b.detach().numpy(), dt)
    sum(((o * (k + 1.5)) ** 2).sum() for k, o in enumerate(ot)).backward()
    sum(((o * (k + 1.5)) ** 2).sum() for k, o in enumerate(oc)).backward()
    _close(xc.grad.numpy(), xt.grad.numpy(), dt)
    if with_h:
        for a, b in zip(sc, st):
            _close(a.grad.numpy(), b.grad.numpy(), dt)
    for (n1, p1), (n2, p2) in zip(tm.named_parameters(), cm.named_parameters()):
        assert n1 == n2
        _close(p2.grad.numpy(), p1.grad.numpy(), dt)


def test_lstm_cell_loop_equals_lstm_layer():
    cygrad.manual_seed(1)
    layer = nn.LSTM(3, 4, dtype=cygrad.float64)
    cell = nn.LSTMCell(3, 4, dtype=cygrad.float64)
    cell.load_state_dict({k[:-3]: v for k, v in layer.state_dict().items()})
    x = cygrad.randn(6, 2, 3, dtype=cygrad.float64)
    out, (hn, cn) = layer(x)
    h = c = cygrad.zeros(2, 4, dtype=cygrad.float64)
    for t in range(6):
        h, c = cell(x[t], (h, c))
        np.testing.assert_allclose(h.detach().numpy(), out[t].detach().numpy(),
                                   **TOL[np.float64])
    np.testing.assert_allclose(c.detach().numpy(), cn[0].detach().numpy(),
                               **TOL[np.float64])


# ---------------------------------------------------------------------------
# gradcheck, double backward, dropout, no_grad


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH"])
def test_gradcheck_float64(mode):
    cygrad.manual_seed(2)
    kw = dict(num_layers=2, bidirectional=True, dtype=cygrad.float64)
    if mode == "LSTM":
        m = nn.LSTM(2, 3, proj_size=2, **kw)
    elif mode == "GRU":
        m = nn.GRU(2, 3, **kw)
    else:
        m = nn.RNN(2, 3, **kw)
    params = list(m.parameters())
    x = cygrad.randn(3, 2, 2, dtype=cygrad.float64, requires_grad=True)
    hout = 2 if mode == "LSTM" else 3
    h0 = cygrad.randn(4, 2, hout, dtype=cygrad.float64, requires_grad=True)
    c0 = cygrad.randn(4, 2, 3, dtype=cygrad.float64, requires_grad=True)

    def g(x, h0, c0):
        hx = (h0, c0) if mode == "LSTM" else h0
        out, s = m(x, hx)
        return out, *_states(s)

    assert gradcheck(g, (x, h0, c0))
    # weights: central differences of a loss w.r.t. each entry of a few of them
    for p in (params[0], params[1], params[2], params[-1]):
        _fd_check_param(m, p, x.detach(), h0.detach(), c0.detach(), mode)


def _fd_check_param(m, p, x, h0, c0, mode, eps=1e-6):
    def loss():
        hx = (h0, c0) if mode == "LSTM" else h0
        out, s = m(x, hx)
        return (out * out).sum() + sum((t * t * 0.5).sum() for t in _states(s))
    m.zero_grad()
    loss().backward()
    g = p.grad.numpy().copy()
    arr = p._arr
    num = np.zeros_like(arr)
    with cygrad.no_grad():
        for idx in np.ndindex(arr.shape):
            old = arr[idx]
            arr[idx] = old + eps
            lp = loss().item()
            arr[idx] = old - eps
            lm = loss().item()
            arr[idx] = old
            num[idx] = (lp - lm) / (2 * eps)
    np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-6)


@pytest.fixture(params=["blas", "portable"])
def products(request):
    """The time loops' products through NumPy's BLAS, then through the
    portable loops that serve when no BLAS entry point is found."""
    from cygrad._kernels import _blas
    from cygrad._kernels import rnn as K

    found = _blas.gemm_addresses()
    if request.param == "blas":
        if found is None:
            pytest.skip("no BLAS entry point found in this process")
        yield request.param
        return
    K.set_gemm(0, 0)
    try:
        assert not K.has_gemm()
        yield request.param
    finally:
        if found is not None:
            K.set_gemm(*found)


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_RELU"])
def test_compiled_layer_equals_tensor_op_reference(mode, products):
    from cygrad.nn import _functional_rnn as FR
    rng = np.random.default_rng(11)
    spec = FR._Spec(mode, 3, 0, 2, True, [4, 3, 1])
    g = FR._GATES[mode] * 3
    ws = []
    for d in range(2):
        ws += [_c(rng.standard_normal((g, 2)) * 0.5, True),
               _c(rng.standard_normal((g, 3)) * 0.5, True),
               _c(rng.standard_normal(g) * 0.1, True),
               _c(rng.standard_normal(g) * 0.1, True)]
    x = _c(rng.standard_normal((8, 2)), True)
    h0 = _c(rng.standard_normal((2, 4, 3)), True)
    c0 = _c(rng.standard_normal((2, 4, 3)), True) if mode == "LSTM" else None
    ins = [t for t in [x, h0, c0] + ws if t is not None]
    a = FR._RNNLayer.apply(spec, x, h0, c0, *ws)
    b = _reference_layer(spec, x, h0, c0, *ws)
    for u, v in zip(a, b):
        _close(u.detach().numpy(), v.detach().numpy(), np.float64)
    wy = _c(rng.standard_normal(tuple(a[0].shape)))
    ga = cygrad.autograd.grad((a[0] * wy).sum() + (a[1] ** 2).sum(), ins)
    gb = cygrad.autograd.grad((b[0] * wy).sum() + (b[1] ** 2).sum(), ins)
    for u, v in zip(ga, gb):
        _close(u.numpy(), v.numpy(), np.float64)
    a = FR._RNNLayer.apply(spec, x, h0, c0, *ws)
    with pytest.raises(RuntimeError, match="double backward"):
        cygrad.autograd.grad(a[0].sum(), [x], create_graph=True)


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH"])
def test_time_loops_refuse_arrays_they_cannot_walk(mode):
    """The compiled loops check every array before the first step: a wrong
    size, dtype or layout is a ValueError naming it, never a bad read."""
    from cygrad._kernels import rnn as K

    g = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1}[mode]
    n, b, h = 6, 2, 3
    z = lambda *s: np.zeros(s)          # noqa: E731
    args = dict(gi=z(n, g * h), h=z(b, h), c=z(b, h) if mode == "LSTM" else None,
                w_hh=z(g * h, h), w_hr=None, bhh=None, hprev=z(n, h),
                gates=z(n, g * h) if g > 1 else None,
                cprev=z(n, h) if mode == "LSTM" else None,
                tc=z(n, h) if mode == "LSTM" else None,
                hraw=z(n, h) if mode == "LSTM" else None, out=z(n, h),
                hn_all=z(n, h) if mode == "GRU" else None)
    K.seq_fwd(mode, [2, 2, 2], [0, 2, 4, 6], False, **args)
    with pytest.raises(ValueError, match="hprev must be"):
        K.seq_fwd(mode, [2, 2, 2], [0, 2, 4, 6], False, **{**args, "hprev": z(n - 1, h)})
    with pytest.raises(ValueError, match="w_hh must be"):
        K.seq_fwd(mode, [2, 2, 2], [0, 2, 4, 6], False,
                  **{**args, "w_hh": z(g * h, h).astype(np.float32)})
    with pytest.raises(ValueError, match="gi must be an aligned, native-order"):
        K.seq_fwd(mode, [2, 2, 2], [0, 2, 4, 6], False,
                  **{**args, "gi": args["gi"].astype(">f8")})
    with pytest.raises(ValueError, match="out must be"):
        K.seq_fwd(mode, [2, 2, 2], [0, 2, 4, 6], False, **{**args, "out": z(h, n).T})
    with pytest.raises(ValueError, match="outside"):
        K.seq_fwd(mode, [2, 3, 2], [0, 2, 4, 6], False, **args)
    with pytest.raises(ValueError, match="offsets"):
        K.seq_fwd(mode, [2, 2, 2], [0, 2], False, **args)


def test_dropout_between_layers_only_in_training():
    cygrad.manual_seed(0)
    m = nn.LSTM(3, 4, num_layers=2, dropout=0.5, dtype=cygrad.float64)
    x = cygrad.randn(5, 2, 3, dtype=cygrad.float64)
    m.eval()
    a = m(x)[0].detach().numpy()
    b = m(x)[0].detach().numpy()
    np.testing.assert_array_equal(a, b)
    m.train()
    c = m(x)[0].detach().numpy()
    d = m(x)[0].detach().numpy()
    assert not np.allclose(c, a) and not np.allclose(c, d)
    m1 = nn.LSTM(3, 4, num_layers=2, dropout=1.0, dtype=cygrad.float64)
    m0 = nn.LSTM(4, 4, num_layers=1, dtype=cygrad.float64)
    # with p = 1 layer 2 sees zeros: its output is layer 2 run on a zero input
    sd = {k.replace("_l1", "_l0"): v for k, v in m1.state_dict().items() if "_l1" in k}
    m0.load_state_dict(sd)
    np.testing.assert_allclose(m1(x)[0].detach().numpy(),
                               m0(cygrad.zeros(5, 2, 4, dtype=cygrad.float64)
                                  )[0].detach().numpy(), **TOL[np.float64])


def test_no_grad_forward_builds_no_graph():
    m = nn.GRU(3, 4)
    with cygrad.no_grad():
        out, h = m(cygrad.randn(2, 1, 3))
    assert out.grad_fn is None and not out.requires_grad


# ---------------------------------------------------------------------------
# bad input: torch's exception types, shapes named, nothing changed


def _both_raise(tfn, cfn):
    with pytest.raises(Exception) as te:
        tfn()
    with pytest.raises(type(te.value)) as ce:
        cfn()
    return str(te.value), str(ce.value)


def test_bad_input_matches_torch_errors():
    tl, cl = torch.nn.LSTM(10, 20), nn.LSTM(10, 20)
    tg, cg = torch.nn.GRU(10, 20), nn.GRU(10, 20)
    r = np.random.default_rng(0)

    def arr(*s):
        return r.standard_normal(s).astype(np.float32)
    cases = [
        (lambda m, T: m(T(arr(5, 3, 7))), "Expected 10, got 7"),
        (lambda m, T: m(T(arr(5, 3, 10, 1))), "got 4D"),
        (lambda m, T: m(T(arr(5, 3, 10)), (T(arr(1, 2, 20)), T(arr(1, 3, 20)))),
         "(1, 3, 20), got [1, 2, 20]"),
        (lambda m, T: m(T(arr(5, 3, 10)), (T(arr(1, 3, 20)), T(arr(1, 3, 21)))),
         "hidden[1] size (1, 3, 20), got [1, 3, 21]"),
        (lambda m, T: m(T(arr(5, 3, 10)), (T(arr(3, 20)), T(arr(3, 20)))), "3-D"),
        (lambda m, T: m(T(arr(5, 10)), (T(arr(1, 3, 20)), T(arr(1, 3, 20)))), "2-D"),
    ]
    for fn, phrase in cases:
        tmsg, cmsg = _both_raise(lambda: fn(tl, torch.tensor), lambda: fn(cl, _c))
        assert phrase in tmsg and phrase in cmsg, (tmsg, cmsg)
    gcases = [
        (lambda m, T: m(T(arr(5, 3, 10)), T(arr(1, 2, 20))),
         "Expected hidden size (1, 3, 20), got [1, 2, 20]"),
        (lambda m, T: m(T(arr(5, 3, 10)), T(arr(3, 20))), "hx should also be 3-D"),
        (lambda m, T: m(T(arr(5, 3, 10).astype(np.float64))), "does not match weight"),
    ]
    for fn, phrase in gcases:
        tmsg, cmsg = _both_raise(lambda: fn(tg, torch.tensor), lambda: fn(cg, _c))
        assert phrase in tmsg and phrase in cmsg, (tmsg, cmsg)
    ccases = [
        (lambda M: M.LSTMCell(10, 20)(_any(M, arr(3, 7))), "input_size"),
        (lambda M: M.LSTMCell(10, 20)(_any(M, arr(3, 10)),
                                      (_any(M, arr(2, 20)), _any(M, arr(3, 20)))),
         "Input batch size 3 doesn't match hidden0 batch size 2"),
        (lambda M: M.GRUCell(10, 20)(_any(M, arr(3, 10)), _any(M, arr(3, 21))),
         "hidden0 has inconsistent hidden_size: got 21, expected 20"),
        (lambda M: M.RNNCell(10, 20)(_any(M, arr(3, 10, 1))), "got 3D"),
    ]
    for fn, phrase in ccases:
        tmsg, cmsg = _both_raise(lambda: fn(torch.nn), lambda: fn(nn))
        assert phrase in tmsg and phrase in cmsg, (tmsg, cmsg)
    ctor = [
        lambda M: M.LSTM(10, 20, proj_size=20),
        lambda M: M.GRU(10, 20, proj_size=5),
        lambda M: M.LSTM(10, 0),
        lambda M: M.LSTM(10, 20, num_layers=0),
        lambda M: M.LSTM(10, 20, dropout=1.5),
        lambda M: M.RNN(10, 20, nonlinearity="sig"),
        lambda M: M.LSTM(10, 20.0),
    ]
    for fn in ctor:
        tmsg, cmsg = _both_raise(lambda: fn(torch.nn), lambda: fn(nn))
        assert tmsg == cmsg
    with pytest.warns(UserWarning, match="num_layers greater than 1"):
        nn.LSTM(3, 4, dropout=0.5)


@pytest.mark.parametrize("case", ["c batch", "h hidden", "c hidden", "c float64",
                                  "h 3-D", "x size", "h list"])
def test_small_lstm_cell_refusals_match_torch(case):
    """A batched float32 LSTMCell step small enough for the one-call kernel
    is checked by the kernel alone; what it refuses gets the module's torch
    error, with nothing computed."""
    r = np.random.default_rng(1)
    x, h, c = (r.standard_normal((2, n)).astype(np.float32) for n in (6, 5, 5))
    ops = {"c batch": dict(c=c[:1]), "h hidden": dict(h=h[:, :4]),
           "c hidden": dict(c=np.hstack([c, c])), "c float64": dict(c=c.astype(np.float64)),
           "h 3-D": dict(h=h[None]), "x size": dict(x=x[:, :5]), "h list": {}}[case]
    x, h, c = (ops.get(k, v) for k, v in (("x", x), ("h", h), ("c", c)))

    tcell, ccell = torch.nn.LSTMCell(6, 5), nn.LSTMCell(6, 5)
    ccell.load_state_dict({k: _c(v.detach().numpy()) for k, v in tcell.state_dict().items()})

    def run(M, T):
        state = [T(h), T(c)] if case == "h list" else (T(h), T(c))
        return (tcell if M is torch.nn else ccell)(T(x), state)
    if case in ("h list", "c float64"):     # accepted by torch: the same values
        for a, b in zip(run(nn, _c), run(torch.nn, torch.tensor), strict=True):
            assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(),
                                       rtol=1e-6, atol=1e-7)
        return
    tmsg, cmsg = _both_raise(lambda: run(torch.nn, torch.tensor), lambda: run(nn, _c))
    assert tmsg.split(":")[-1].strip()[:20] in cmsg, (tmsg, cmsg)


def test_small_lstm_cell_takes_strided_operands():
    r = np.random.default_rng(2)
    xs, hs, cs = (r.standard_normal((n, 6)).astype(np.float32) for n in (6, 5, 5))
    tc, cc = torch.nn.LSTMCell(6, 5), nn.LSTMCell(6, 5)
    cc.load_state_dict({k: _c(v.detach().numpy()) for k, v in tc.state_dict().items()})
    t_out = tc(torch.tensor(xs).t()[:, :6], (torch.tensor(hs).t(), torch.tensor(cs).t()))
    c_out = cc(_c(xs).t()[:, :6], (_c(hs).t(), _c(cs).t()))
    for a, b in zip(c_out, t_out, strict=True):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


def _any(M, a):
    return torch.tensor(a) if M is torch.nn else _c(a)


def test_bad_hidden_leaves_parameters_unchanged():
    m = nn.LSTM(3, 4)
    before = {k: v.numpy().copy() for k, v in m.state_dict().items()}
    with pytest.raises(RuntimeError):
        m(cygrad.randn(2, 2, 3), (cygrad.randn(1, 3, 4), cygrad.randn(1, 2, 4)))
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k])


# ---------------------------------------------------------------------------
# the same layer from Tensor operations (the oracle for the compiled node)


def _cell_ref(mode, x, h, c, w_ih, w_hh, b_ih, b_hh, w_hr):
    gi = cygrad.matmul(x, w_ih.transpose(0, 1))
    gh = cygrad.matmul(h, w_hh.transpose(0, 1))
    if b_ih is not None:
        gi = gi + b_ih
        gh = gh + b_hh
    if mode == "LSTM":
        hid = w_hh.shape[0] // 4
        a = gi + gh
        i = cygrad.sigmoid(a[:, :hid])
        f = cygrad.sigmoid(a[:, hid:2 * hid])
        g = cygrad.tanh(a[:, 2 * hid:3 * hid])
        o = cygrad.sigmoid(a[:, 3 * hid:])
        c = f * c + i * g
        h = o * cygrad.tanh(c)
        if w_hr is not None:
            h = cygrad.matmul(h, w_hr.transpose(0, 1))
        return h, c
    if mode == "GRU":
        hid = w_hh.shape[0] // 3
        r = cygrad.sigmoid(gi[:, :hid] + gh[:, :hid])
        z = cygrad.sigmoid(gi[:, hid:2 * hid] + gh[:, hid:2 * hid])
        n = cygrad.tanh(gi[:, 2 * hid:] + r * gh[:, 2 * hid:])
        return (1 - z) * n + z * h, None
    a = gi + gh
    return (cygrad.relu(a) if mode == "RNN_RELU" else cygrad.tanh(a)), None


def _reference_layer(spec, x, h0, c0, *weights):
    """``_RNNLayer`` from Tensor operations: same outputs, slower."""
    bsz, offs = spec.batch_sizes, spec.offsets
    outs, hns, cns = [], [], []
    for d in range(spec.dirs):
        w = spec.weights_of(weights, d)
        h = h0[d]
        c = None if c0 is None else c0[d]
        rows = [None] * len(bsz)
        steps = range(len(bsz) - 1, -1, -1) if d == 1 else range(len(bsz))
        for t in steps:
            b = bsz[t]
            hb = h[:b]
            cb = None if c is None else c[:b]
            hn, cn = _cell_ref(spec.mode, x[offs[t]:offs[t] + b], hb, cb, *w)
            rows[t] = hn
            h = hn if b == h.shape[0] else cygrad.cat([hn, h[b:]], 0)
            if c is not None:
                c = cn if b == c.shape[0] else cygrad.cat([cn, c[b:]], 0)
        outs.append(cygrad.cat(rows, 0))
        hns.append(h)
        cns.append(c)
    y = outs[0] if spec.dirs == 1 else cygrad.cat(outs, 1)
    res = (y, cygrad.stack(hns, 0))
    if spec.mode == "LSTM":
        res += (cygrad.stack(cns, 0),)
    return res


def test_lstm_cell_small_step_with_non_contiguous_state_and_weight():
    """The one-call small-batch LSTMCell path takes views too (it copies
    them): a transposed c and a transposed weight_hh, against torch."""
    torch.manual_seed(0)
    tc_ = torch.nn.LSTMCell(8, 6)
    cc = nn.LSTMCell(8, 6)
    with cygrad.no_grad():
        for a, b in zip(tc_.parameters(), cc.parameters(), strict=True):
            b.copy_(_c(a.detach().numpy()))
    w = nn.Parameter(_c(np.ascontiguousarray(tc_.weight_hh.detach().numpy().T)).T)
    cc.weight_hh = w
    rng = np.random.default_rng(0)
    x, h = (rng.standard_normal((2, n)).astype(np.float32) for n in (8, 6))
    c = rng.standard_normal((6, 2)).astype(np.float32)
    c_view = _c(c).T
    assert not c_view._arr.flags.c_contiguous and not w._arr.flags.c_contiguous
    h1, c1 = cc(_c(x), (_c(h), c_view))
    th1, tc1 = tc_(_tt(x), (_tt(h), _tt(c).T))
    np.testing.assert_allclose(h1.detach().numpy(), th1.detach().numpy(), atol=1e-6)
    np.testing.assert_allclose(c1.detach().numpy(), tc1.detach().numpy(), atol=1e-6)
    (h1.sum() + c1.sum()).backward()
    (th1.sum() + tc1.sum()).backward()
    np.testing.assert_allclose(w.grad.numpy(), tc_.weight_hh.grad.numpy(), atol=1e-6)


# --- torch's (introsort) order of tied lengths --------------------------------------

def _killer(n):
    """McIlroy's adversary run against ``_introsort_order``: keys that drive
    its quicksort to the depth limit, so the heapsort fallback runs."""
    gas = n
    val, state = [gas] * n, {"solid": 0, "cand": None}

    def freeze(i):
        val[i] = state["solid"]
        state["solid"] += 1

    class Key:
        def __init__(self, i):
            self.i = i

        def __lt__(self, other):
            x, y = self.i, other.i
            if val[x] == gas and val[y] == gas:
                freeze(x if x == state["cand"] else y)
            if val[x] == gas:
                state["cand"] = x
            elif val[y] == gas:
                state["cand"] = y
            return val[x] < val[y]

    _introsort_order([Key(i) for i in range(n)])
    for i in range(n):
        if val[i] == gas:
            freeze(i)
    return val


@pytest.mark.parametrize("n", [5, 16, 17, 40, 130, 600])
@pytest.mark.parametrize("descending", [True, False])
def test_introsort_order_is_torch_default_sort_order(n, descending):
    rs = np.random.RandomState(n)
    cases = [rs.randint(0, k, n).tolist() for k in (2, 5, 50)]
    cases.append([v // 3 for v in _killer(n)])
    for keys in cases:
        want = torch.sort(torch.tensor(keys), descending=descending).indices
        got = _introsort_order(np.array(keys), descending)
        assert got.tolist() == want.tolist()


def test_pack_unsorted_batch_with_tied_lengths_and_dropout_matches_torch():
    """bentrevett's sentiment LSTM packs a shuffled batch (enforce_sorted=False)
    whose lengths tie: torch orders the ties by its introsort, and the
    dropout between layers meets the packed rows in that order."""
    rs = np.random.RandomState(0)
    lengths = rs.randint(2, 10, 20)
    lengths[0] = 9
    x = rs.randn(20, 9, 5).astype(np.float32)
    got = []
    for m in (cygrad, torch):
        m.manual_seed(0)
        lstm = m.nn.LSTM(5, 4, 2, dropout=0.5, batch_first=True, bidirectional=True)
        packed = m.nn.utils.rnn.pack_padded_sequence(
            m.tensor(x), m.tensor(lengths), batch_first=True, enforce_sorted=False)
        out, (h, c) = lstm(packed)
        padded, _ = m.nn.utils.rnn.pad_packed_sequence(out, batch_first=True)
        got.append((packed.sorted_indices.tolist(), packed.data.numpy(),
                    padded.detach().numpy(), h.detach().numpy()))
    assert got[0][0] == got[1][0]
    np.testing.assert_array_equal(got[0][1], got[1][1])
    for a, b in zip(got[0][2:], got[1][2:]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
