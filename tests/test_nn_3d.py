"""The 3-d layers (Conv3d, ConvTranspose3d and their lazy forms, the 3-d
pools, the 3-d pads), max unpooling, and the top-level aliases: against torch
2.13 on the same inputs (values, input/weight/bias gradients in float64 and
float32, indices, modules with weights copied through state_dict, reprs),
gradcheck and gradgradcheck in float64, hypothesis over small shapes, and
bad input with torch's exception types."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cygrad
from cygrad import nn
from cygrad.autograd import gradcheck, gradgradcheck
from cygrad.nn import functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

TOL = {np.float64: dict(rtol=1e-10, atol=1e-10), np.float32: dict(rtol=1e-5, atol=1e-5)}
RNG = np.random.default_rng(2026)


def _close(c, t, dt):
    _near(np.asarray(c.detach().numpy()), t.detach().numpy(), dt)


def _near(c, t, dt):
    # float32: 1e-5 of the result's scale (a sum of hundreds of float32 terms
    # in another order differs by more than 1e-5 of a large entry)
    tol = dict(TOL[dt])
    if dt == np.float32 and t.size:
        tol["atol"] *= max(1.0, float(np.nanmax(np.abs(t))))
    np.testing.assert_allclose(c, t, **tol)


def _run_both(cfn, tfn, arrays, dt, grad_seed=0):
    """Forward both libraries on the same arrays, backward the same random
    output gradient, compare output and every input's gradient."""
    cs = [cygrad.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    cy, ty = cfn(*cs), tfn(*ts)
    assert tuple(cy.shape) == tuple(ty.shape)
    _close(cy, ty, dt)
    g = np.random.default_rng(grad_seed).standard_normal(tuple(ty.shape)).astype(dt)
    cy.backward(cygrad.tensor(g))
    ty.backward(torch.tensor(g))
    for c, t in zip(cs, ts):
        _near(c.grad.numpy(), t.grad.numpy(), dt)


def _arr(shape, dt=np.float64):
    return RNG.standard_normal(shape).astype(dt)


def _ties(shape, dt=np.float64):
    # small integers: many ties, so the tie rule is exercised too
    return np.round(RNG.standard_normal(shape) * 2).astype(dt)


# ---------------------------------------------------------------------------
# conv3d / conv_transpose3d


CONV = [
    # x shape, weight shape, kwargs
    ((2, 4, 5, 6, 7), (6, 4, 3, 2, 3), {}),
    ((2, 3, 6, 6, 6), (8, 3, 3, 3, 3), dict(padding=1)),            # K >= 64
    ((2, 4, 5, 6, 7), (6, 2, 2, 3, 1),
     dict(groups=2, stride=(2, 1, 2), padding=(1, 0, 2), dilation=(1, 2, 1))),
    ((1, 4, 5, 5, 5), (8, 1, 2, 2, 2), dict(groups=4, stride=2)),   # depthwise
    ((1, 3, 6, 6, 6), (4, 3, 3, 3, 3), dict(padding="same", dilation=2)),
    ((1, 3, 6, 5, 6), (4, 3, 2, 3, 4), dict(padding="same")),        # odd extra
    ((1, 3, 4, 5, 6), (2, 3, 2, 2, 2), dict(padding="valid", stride=3)),
    ((3, 5, 5, 5), (2, 3, 2, 2, 2), dict(padding=1)),                 # unbatched
]


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("xs, ws, kw", CONV)
def test_conv3d_matches_torch(xs, ws, kw, dt):
    x, w, b = _arr(xs, dt), _arr(ws, dt), _arr(ws[0], dt)
    _run_both(lambda a, c, d: F.conv3d(a, c, d, **kw),
              lambda a, c, d: TF.conv3d(a, c, d, **kw), [x, w, b], dt)


def test_conv3d_without_bias():
    x, w = _arr((2, 3, 4, 4, 4)), _arr((5, 3, 2, 2, 2))
    _run_both(lambda a, c: F.conv3d(a, c, stride=2, padding=1),
              lambda a, c: TF.conv3d(a, c, stride=2, padding=1), [x, w], np.float64)


CONV_T = [
    ((2, 4, 3, 4, 5), (4, 3, 3, 2, 3), {}),
    ((2, 4, 3, 4, 5), (4, 2, 2, 3, 2),
     dict(groups=2, stride=(2, 1, 3), padding=(1, 0, 1), output_padding=(1, 0, 2),
          dilation=(1, 2, 1))),
    ((1, 3, 3, 3, 3), (3, 4, 3, 3, 3), dict(stride=2, padding=1, output_padding=1)),
    ((1, 2, 3, 3, 3), (2, 3, 2, 2, 2), dict(stride=1, dilation=3, output_padding=2)),
    ((2, 3, 3, 3), (2, 2, 2, 2, 2), dict(stride=2)),                 # unbatched
]


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("xs, ws, kw", CONV_T)
def test_conv_transpose3d_matches_torch(xs, ws, kw, dt):
    groups = kw.get("groups", 1)
    x, w, b = _arr(xs, dt), _arr(ws, dt), _arr(ws[1] * groups, dt)
    _run_both(lambda a, c, d: F.conv_transpose3d(a, c, d, **kw),
              lambda a, c, d: TF.conv_transpose3d(a, c, d, **kw), [x, w, b], dt)


def test_conv3d_gradcheck_and_gradgradcheck():
    x = cygrad.tensor(_arr((1, 2, 3, 4, 3)), requires_grad=True)
    w = cygrad.tensor(_arr((4, 1, 2, 2, 2)), requires_grad=True)
    b = cygrad.tensor(_arr(4), requires_grad=True)
    fn = lambda a, c, d: F.conv3d(a, c, d, stride=(1, 2, 1), padding=1,  # noqa: E731
                                  groups=2)
    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(fn, (x, w, b))
    w2 = cygrad.tensor(_arr((2, 3, 2, 2, 2)), requires_grad=True)
    fnt = lambda a, c: F.conv_transpose3d(a, c, stride=2,  # noqa: E731
                                          output_padding=(1, 0, 1))
    assert gradcheck(fnt, (x, w2))
    assert gradgradcheck(fnt, (x, w2))


def test_conv3d_double_backward_matches_torch():
    x, w = _arr((1, 2, 4, 4, 3)), _arr((3, 2, 2, 2, 2))
    g = _arr((1, 3, 3, 3, 2))
    out = []
    for lib, mod in ((cygrad, F), (torch, TF)):
        a = lib.tensor(x, requires_grad=True)
        c = lib.tensor(w, requires_grad=True)
        y = mod.conv3d(a, c, padding=(1, 1, 0), stride=(2, 2, 1))
        ga, gc = lib.autograd.grad((y * lib.tensor(g)).sum(), (a, c),
                                   create_graph=True)
        ((ga * ga).sum() + (gc * gc).sum()).backward()
        out.append((a.grad.numpy(), c.grad.numpy()))
    for c_, t_ in zip(*out):
        np.testing.assert_allclose(c_, t_, rtol=1e-10, atol=1e-10)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 2), c=st.integers(1, 3), o=st.integers(1, 3),
       size=st.tuples(st.integers(1, 5), st.integers(1, 5), st.integers(1, 5)),
       k=st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3)),
       s=st.integers(1, 2), p=st.integers(0, 1), d=st.integers(1, 2))
def test_conv3d_hypothesis(n, c, o, size, k, s, p, d):
    if any(sz + 2 * p < d * (kk - 1) + 1 for sz, kk in zip(size, k)):
        return
    x, w, b = _arr((n, c) + size), _arr((o, c) + k), _arr(o)
    kw = dict(stride=s, padding=p, dilation=d)
    _run_both(lambda a, e, f: F.conv3d(a, e, f, **kw),
              lambda a, e, f: TF.conv3d(a, e, f, **kw), [x, w, b], np.float64)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 2), c=st.integers(1, 3), o=st.integers(1, 3),
       size=st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4)),
       k=st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3)),
       s=st.integers(1, 3), p=st.integers(0, 1), d=st.integers(1, 2),
       op=st.integers(0, 2))
def test_conv_transpose3d_hypothesis(n, c, o, size, k, s, p, d, op):
    op = min(op, max(s, d) - 1)
    out = [(sz - 1) * s - 2 * p + d * (kk - 1) + op + 1 for sz, kk in zip(size, k)]
    if min(out) < 1:
        return
    x, w, b = _arr((n, c) + size), _arr((c, o) + k), _arr(o)
    kw = dict(stride=s, padding=p, dilation=d, output_padding=op)
    _run_both(lambda a, e, f: F.conv_transpose3d(a, e, f, **kw),
              lambda a, e, f: TF.conv_transpose3d(a, e, f, **kw), [x, w, b], np.float64)


# ---------------------------------------------------------------------------
# modules


def _copy(tmod, cmod):
    cmod.load_state_dict({k: v.detach().numpy() for k, v in tmod.state_dict().items()})


@pytest.mark.parametrize("args, kw", [
    ((3, 4, 3), {}),
    ((4, 6, (2, 3, 1)), dict(stride=(1, 2, 1), padding=(1, 0, 1), groups=2)),
    ((3, 4, 3), dict(padding="same", padding_mode="reflect", bias=False)),
    ((3, 4, 2), dict(padding=1, padding_mode="circular", dilation=2)),
    ((3, 4, 2), dict(padding=(0, 1, 2), padding_mode="replicate")),
])
def test_conv3d_module_matches_torch(args, kw):
    tmod = torch.nn.Conv3d(*args, dtype=torch.float64, **kw)
    cmod = nn.Conv3d(*args, dtype=cygrad.float64, **kw)
    assert repr(cmod) == repr(tmod)
    _copy(tmod, cmod)
    x = _arr((2, args[0], 5, 6, 5))
    cx, tx = cygrad.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    cy, ty = cmod(cx), tmod(tx)
    _close(cy, ty, np.float64)
    cy.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(cx.grad.numpy(), tx.grad.numpy(), **TOL[np.float64])
    for (name, cp), tp in zip(cmod.named_parameters(), tmod.parameters()):
        np.testing.assert_allclose(cp.grad.numpy(), tp.grad.numpy(),
                                   **TOL[np.float64], err_msg=name)


def test_conv_transpose3d_module_matches_torch():
    kw = dict(stride=2, padding=1, output_padding=1, groups=2)
    tmod = torch.nn.ConvTranspose3d(4, 6, 3, dtype=torch.float64, **kw)
    cmod = nn.ConvTranspose3d(4, 6, 3, dtype=cygrad.float64, **kw)
    assert repr(cmod) == repr(tmod)
    _copy(tmod, cmod)
    x = _arr((2, 4, 3, 4, 3))
    _close(cmod(cygrad.tensor(x)), tmod(torch.tensor(x)), np.float64)
    # output_size picks the output padding
    _close(cmod(cygrad.tensor(x), output_size=(6, 8, 6)),
           tmod(torch.tensor(x), output_size=(6, 8, 6)), np.float64)


def test_default_init_bounds_and_shapes():
    m = nn.Conv3d(4, 6, (2, 3, 1), groups=2)
    tm = torch.nn.Conv3d(4, 6, (2, 3, 1), groups=2)
    assert tuple(m.weight.shape) == tuple(tm.weight.shape)
    bound = 1 / np.sqrt(2 * 2 * 3 * 1)   # kaiming_uniform(a=sqrt 5) and the bias
    assert np.abs(m.weight.detach().numpy()).max() <= bound
    assert np.abs(m.bias.detach().numpy()).max() <= bound
    assert np.abs(m.weight.detach().numpy()).max() > bound / 2
    mt = nn.ConvTranspose3d(4, 6, 2, groups=2)
    assert tuple(mt.weight.shape) == (4, 3, 2, 2, 2)


def test_lazy_conv3d_layers():
    m = nn.LazyConv3d(4, 2, stride=2)
    assert repr(m) == repr(torch.nn.LazyConv3d(4, 2, stride=2))
    y = m(cygrad.randn(2, 3, 4, 4, 4))
    assert type(m) is nn.Conv3d and m.in_channels == 3
    assert tuple(m.weight.shape) == (4, 3, 2, 2, 2) and tuple(y.shape) == (2, 4, 2, 2, 2)
    mt = nn.LazyConvTranspose3d(4, 2, stride=2)
    assert repr(mt) == repr(torch.nn.LazyConvTranspose3d(4, 2, stride=2))
    y = mt(cygrad.randn(3, 2, 2, 2))                                 # unbatched
    assert type(mt) is nn.ConvTranspose3d and tuple(mt.weight.shape) == (3, 4, 2, 2, 2)
    assert tuple(y.shape) == (4, 4, 4, 4)


# ---------------------------------------------------------------------------
# conv errors


def _same_error(cfn, tfn):
    with pytest.raises(Exception) as te:
        tfn()
    with pytest.raises(type(te.value)) as ce:
        cfn()
    return str(te.value), str(ce.value)


def test_conv3d_bad_input():
    x, w = _arr((1, 3, 4, 4, 4)), _arr((2, 4, 2, 2, 2))
    t_msg, c_msg = _same_error(
        lambda: F.conv3d(cygrad.tensor(x), cygrad.tensor(w)),
        lambda: TF.conv3d(torch.tensor(x), torch.tensor(w)))
    assert "to have 4 channels, but got 3 channels" in c_msg
    assert t_msg.split(",")[0] == c_msg.split(",")[0]
    w = _arr((2, 3, 5, 2, 2))
    t_msg, c_msg = _same_error(
        lambda: F.conv3d(cygrad.tensor(x), cygrad.tensor(w)),
        lambda: TF.conv3d(torch.tensor(x), torch.tensor(w)))
    assert c_msg == t_msg
    # kernel larger than the padded input, but fits once padded
    assert F.conv3d(cygrad.tensor(x), cygrad.tensor(w), padding=(1, 0, 0)).shape[2] == 2
    w = _arr((2, 3, 2, 2))     # a 4-d weight: the same type, a clearer message
    t_msg, c_msg = _same_error(
        lambda: F.conv3d(cygrad.tensor(x), cygrad.tensor(w)),
        lambda: TF.conv3d(torch.tensor(x), torch.tensor(w)))
    assert "4-dimensional weight of size [2, 3, 2, 2]" in c_msg
    _same_error(lambda: F.conv3d(cygrad.tensor(x[0, 0]), cygrad.tensor(_arr((2, 3, 1, 1, 1)))),
                lambda: TF.conv3d(torch.tensor(x[0, 0]), torch.tensor(_arr((2, 3, 1, 1, 1)))))
    _same_error(lambda: F.conv3d(cygrad.tensor(x), cygrad.tensor(_arr((2, 3, 1, 1, 1))),
                                 padding="same", stride=2),
                lambda: TF.conv3d(torch.tensor(x), torch.tensor(_arr((2, 3, 1, 1, 1))),
                                  padding="same", stride=2))


def test_conv_transpose3d_bad_output_size():
    x, w = _arr((1, 2, 3, 3, 3)), _arr((2, 3, 3, 3, 3))
    tm = torch.nn.ConvTranspose3d(2, 3, 3, stride=2, dtype=torch.float64)
    cm = nn.ConvTranspose3d(2, 3, 3, stride=2, dtype=cygrad.float64)
    _same_error(lambda: cm(cygrad.tensor(x), output_size=(9, 9, 9)),
                lambda: tm(torch.tensor(x), output_size=(9, 9, 9)))
    _same_error(lambda: F.conv_transpose3d(cygrad.tensor(x), cygrad.tensor(w), stride=2,
                                           output_padding=2),
                lambda: TF.conv_transpose3d(torch.tensor(x), torch.tensor(w), stride=2,
                                            output_padding=2))
    _same_error(lambda: F.conv_transpose3d(cygrad.tensor(x), cygrad.tensor(_arr((3, 3, 3, 3, 3)))),
                lambda: TF.conv_transpose3d(torch.tensor(x), torch.tensor(_arr((3, 3, 3, 3, 3)))))


def test_conv3d_module_constructor_errors():
    for kw in (dict(groups=0), dict(groups=2), dict(padding="full"),
               dict(padding="same", stride=2), dict(padding_mode="mirror")):
        with pytest.raises(ValueError):
            torch.nn.Conv3d(3, 4, 2, **kw)
        with pytest.raises(ValueError):
            nn.Conv3d(3, 4, 2, **kw)
    with pytest.raises(ValueError):
        nn.ConvTranspose3d(2, 4, 2, padding_mode="reflect")


# ---------------------------------------------------------------------------
# pooling


POOLS = [
    ("max_pool3d", (2,), {}),
    ("max_pool3d", (3,), dict(stride=(1, 2, 2), padding=1, dilation=(1, 1, 2),
                             ceil_mode=True)),
    ("max_pool3d", ((2, 3, 2),), dict(stride=(2, 1, 3), padding=(1, 1, 0),
                                    ceil_mode=True)),
    ("avg_pool3d", (2,), {}),
    ("avg_pool3d", (3,), dict(stride=(1, 2, 2), padding=1, ceil_mode=True,
                             count_include_pad=False)),
    ("avg_pool3d", (3,), dict(stride=2, padding=1, ceil_mode=True)),
    ("avg_pool3d", ((2, 3, 1),), dict(stride=(2, 1, 3), padding=(1, 1, 0),
                                    divisor_override=5)),
    ("adaptive_avg_pool3d", ((2, 4, 3),), {}),
    ("adaptive_avg_pool3d", ((3, None, 4),), {}),
    ("adaptive_avg_pool3d", (1,), {}),
    ("adaptive_max_pool3d", ((2, 4, 3),), {}),
    ("adaptive_max_pool3d", ((4, 7, 9),), {}),
    ("lp_pool3d", (2, 2), {}),
    ("lp_pool3d", (1.5, (2, 1, 3)), dict(stride=(1, 2, 1), ceil_mode=True)),
]


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(2, 3, 5, 6, 7), (3, 4, 5, 6)])
@pytest.mark.parametrize("name, args, kw", POOLS)
def test_pool3d_matches_torch(name, args, kw, shape, dt):
    x = _ties(shape, dt)
    if name.startswith("lp"):
        x = np.abs(x) + 0.5     # a fractional power of a window sum
    _run_both(lambda a: getattr(F, name)(a, *args, **kw),
              lambda a: getattr(TF, name)(a, *args, **kw), [x], dt)


@pytest.mark.parametrize("name, args, kw", [
    ("max_pool3d", (3,), dict(stride=(1, 2, 2), padding=1, dilation=(1, 1, 2),
                             ceil_mode=True)),
    ("max_pool3d", (2,), {}),
    ("adaptive_max_pool3d", ((2, 4, 3),), {}),
])
def test_pool3d_indices_match_torch(name, args, kw):
    x = _ties((2, 3, 5, 6, 7))
    x[0, 0, 1, 1, 1] = np.nan
    x[1, 2, :2, :2, :2] = np.nan
    cy, ci = getattr(F, name)(cygrad.tensor(x), *args, return_indices=True, **kw)
    ty, ti = getattr(TF, name)(torch.tensor(x), *args, return_indices=True, **kw)
    np.testing.assert_array_equal(ci.numpy(), ti.numpy())
    np.testing.assert_array_equal(cy.numpy(), ty.numpy())
    assert ci.dtype == cygrad.int64
    wi = getattr(F, name + "_with_indices")(cygrad.tensor(x), *args, **kw)[1]
    np.testing.assert_array_equal(wi.numpy(), ti.numpy())


def test_pool3d_gradcheck_and_gradgradcheck():
    x = cygrad.tensor(_arr((1, 2, 4, 5, 4)), requires_grad=True)
    for fn in (lambda a: F.max_pool3d(a, 2, stride=1, padding=1),
               lambda a: F.avg_pool3d(a, 3, stride=2, padding=1, ceil_mode=True,
                                      count_include_pad=False),
               lambda a: F.adaptive_avg_pool3d(a, (3, 2, 3)),
               lambda a: F.adaptive_max_pool3d(a, (2, 3, 2)),
               lambda a: F.lp_pool3d(a * a + 1.0, 2.0, 2)):
        assert gradcheck(fn, (x,))
        assert gradgradcheck(fn, (x,))


@settings(max_examples=30, deadline=None)
@given(size=st.tuples(st.integers(1, 6), st.integers(1, 6), st.integers(1, 6)),
       k=st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3)),
       s=st.integers(1, 3), ceil=st.booleans(), pad=st.booleans())
def test_pool3d_hypothesis(size, k, s, ceil, pad):
    p = tuple(kk // 2 for kk in k) if pad else 0
    pp = p if pad else (0, 0, 0)
    if any(sz + 2 * q < kk for sz, q, kk in zip(size, pp, k)):
        return
    x = _ties((2, 2) + size)
    names = ["max_pool3d"]
    if all(sz >= kk for sz, kk in zip(size, k)):   # torch's avg_pool3d rule
        names.append("avg_pool3d")
    for name in names:
        _run_both(lambda a: getattr(F, name)(a, k, s, p, ceil_mode=ceil),
                  lambda a: getattr(TF, name)(a, k, s, p, ceil_mode=ceil),
                  [x], np.float64)


def test_pool3d_modules_repr_and_values():
    x = _ties((2, 3, 4, 6, 5))
    pairs = [
        (nn.MaxPool3d(2, stride=1, padding=1), torch.nn.MaxPool3d(2, stride=1, padding=1)),
        (nn.AvgPool3d((2, 3, 2), count_include_pad=False, padding=1),
         torch.nn.AvgPool3d((2, 3, 2), count_include_pad=False, padding=1)),
        (nn.AdaptiveAvgPool3d((2, None, 3)), torch.nn.AdaptiveAvgPool3d((2, None, 3))),
        (nn.AdaptiveMaxPool3d(2), torch.nn.AdaptiveMaxPool3d(2)),
        (nn.LPPool3d(2, 2), torch.nn.LPPool3d(2, 2)),
    ]
    for c, t in pairs:
        assert repr(c) == repr(t)
        _close(c(cygrad.tensor(np.abs(x) + 1)), t(torch.tensor(np.abs(x) + 1)),
               np.float64)
    cy, ci = nn.MaxPool3d(2, return_indices=True)(cygrad.tensor(x))
    ty, ti = torch.nn.MaxPool3d(2, return_indices=True)(torch.tensor(x))
    np.testing.assert_array_equal(ci.numpy(), ti.numpy())


def test_pool3d_bad_input():
    bad = [
        lambda F_, lib: F_.max_pool3d(lib.zeros(3, 4, 5), 2),
        lambda F_, lib: F_.max_pool3d(lib.zeros(2, 0, 4, 5, 6), 2),
        lambda F_, lib: F_.max_pool3d(lib.zeros(2, 3, 4, 5, 6), 5),
        lambda F_, lib: F_.max_pool3d(lib.zeros(2, 3, 4, 5, 6), 3, padding=2),
        lambda F_, lib: F_.avg_pool3d(lib.zeros(3, 4, 5), 2),
        lambda F_, lib: F_.avg_pool3d(lib.zeros(2, 3, 4, 5, 6), 5),
        lambda F_, lib: F_.avg_pool3d(lib.zeros(2, 3, 4, 5, 6), 2, divisor_override=0),
        lambda F_, lib: F_.adaptive_avg_pool3d(lib.zeros(3, 4, 5), 2),
        lambda F_, lib: F_.adaptive_max_pool3d(lib.zeros(2, 3, 0, 4, 5), 2),
        lambda F_, lib: F_.adaptive_avg_pool3d(lib.zeros(2, 3, 4, 5, 6), (2, 2)),
    ]
    for fn in bad:
        t_msg, c_msg = _same_error(lambda: fn(F, cygrad), lambda: fn(TF, torch))
        key = t_msg.split(" (")[0].split(":")[0]
        assert key in c_msg, (t_msg, c_msg)


# ---------------------------------------------------------------------------
# max unpooling


@pytest.mark.parametrize("nd, shape, k, s, p", [
    (1, (2, 3, 9), 3, 2, 1),
    (1, (3, 8), 2, None, 0),
    (2, (2, 3, 7, 8), 3, 2, 1),
    (2, (3, 6, 8), (2, 3), (1, 2), 0),        # overlapping windows: duplicates
    (3, (2, 3, 5, 6, 6), 3, 2, 1),
    (3, (3, 4, 4, 4), 2, None, 0),
])
def test_max_unpool_matches_torch(nd, shape, k, s, p):
    x = _ties(shape)
    ty, ti = getattr(TF, f"max_pool{nd}d")(torch.tensor(x), k, s, p, return_indices=True)
    pooled = ty.numpy()
    ci = cygrad.tensor(ti.numpy())
    for os in [None, tuple(shape[-nd:]), (1, 1) + tuple(shape[-nd:])]:
        try:
            getattr(TF, f"max_unpool{nd}d")(ty, ti, k, s, p, os)
        except RuntimeError:      # the default size cannot hold these indices
            with pytest.raises(RuntimeError, match="Found an invalid max index"):
                getattr(F, f"max_unpool{nd}d")(cygrad.tensor(pooled), ci, k, s, p, os)
            continue
        _run_both(lambda a: getattr(F, f"max_unpool{nd}d")(a, ci, k, s, p, os),
                  lambda a: getattr(TF, f"max_unpool{nd}d")(a, ti, k, s, p, os),
                  [pooled], np.float64)
    cm = getattr(nn, f"MaxUnpool{nd}d")(k, s, p)
    tm = getattr(torch.nn, f"MaxUnpool{nd}d")(k, s, p)
    assert repr(cm) == repr(tm)
    os = tuple(shape[-nd:])
    _close(cm(cygrad.tensor(pooled), ci, os), tm(torch.tensor(pooled), ti, os),
           np.float64)
    planes = ti.numpy().reshape(int(np.prod(shape[:-nd])), -1)
    if any(len(np.unique(r)) < len(r) for r in planes):
        return   # duplicates: the write is not the gather's adjoint (torch's too)
    a = cygrad.tensor(pooled, requires_grad=True)
    assert gradcheck(lambda v: cm(v, ci, os), (a,))
    assert gradgradcheck(lambda v: cm(v, ci, os), (a,))


def test_max_unpool_bad_input():
    y, i = TF.max_pool2d(torch.randn(1, 2, 4, 4, dtype=torch.float64), 2,
                         return_indices=True)
    cy, ci = cygrad.tensor(y.numpy()), cygrad.tensor(i.numpy())
    cases = [
        lambda lib, F_, a, b: F_.max_unpool2d(a, b, 2, output_size=(6, 6)),
        lambda lib, F_, a, b: F_.max_unpool2d(a, b, 2, output_size=(1, 2, 5)),
        lambda lib, F_, a, b: F_.max_unpool2d(a, b, 2, output_size=(3, 3)),
        lambda lib, F_, a, b: F_.max_unpool2d(a, b + 100, 2),
        lambda lib, F_, a, b: F_.max_unpool2d(a, -b - 1, 2),
        lambda lib, F_, a, b: F_.max_unpool2d(a, b[:, :1], 2),
        lambda lib, F_, a, b: F_.max_unpool2d(a, b.to(lib.float64), 2),
        lambda lib, F_, a, b: F_.max_unpool2d(a[0, 0], b[0, 0], 2),
        lambda lib, F_, a, b: F_.max_unpool3d(a[0], b[0], 2),
    ]
    for fn in cases:
        t_msg, c_msg = _same_error(lambda: fn(cygrad, F, cy, ci),
                                   lambda: fn(torch, TF, y, i))
        if t_msg.startswith("Found an invalid max index"):
            # which bad index torch names depends on its thread schedule
            assert c_msg.startswith("Found an invalid max index: ")
            assert c_msg.split("(")[1] == t_msg.split("(")[1]
        else:
            assert c_msg == t_msg


# ---------------------------------------------------------------------------
# padding


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape, pad", [
    ((2, 3, 4, 5, 6), (1, 2, 2, 1, 3, 1)),
    ((3, 4, 5, 6), (1, 1, -1, 2, 1, 2)),
    ((2, 3, 4, 5, 6), (0, 0, 0, 0, 2, 3)),
    ((2, 3, 4, 5, 6), (-1, 2, 1, 0, -2, 1)),
])
def test_pad_5d_matches_torch(mode, shape, pad):
    for dt in (np.float64, np.float32):
        x = _arr(shape, dt)
        _run_both(lambda a: F.pad(a, pad, mode=mode),
                  lambda a: TF.pad(a, pad, mode=mode), [x], dt)
    a = cygrad.tensor(_arr((1, 2) + shape[-3:])[..., :4, :4, :4], requires_grad=True)
    small = tuple(max(min(q, 2), -1) for q in pad)
    assert gradcheck(lambda v: F.pad(v, small, mode=mode), (a,))
    assert gradgradcheck(lambda v: F.pad(v, small, mode=mode), (a,))


def test_constant_pad_more_dims_and_circular_crop():
    x = _arr((2, 3, 4, 5, 6))
    for pad in [(1, 1, 1, 1, 1, 1, 1, 1), (0, 1, 2, 0, 1, 1, 0, 2, 1, 1)]:
        _run_both(lambda a: F.pad(a, pad, value=2.5),
                  lambda a: TF.pad(a, pad, value=2.5), [x], np.float64)
    y = _arr((2, 3, 7))
    for pad in [(-1, 2), (2, -1), (-2, -1), (3, 2)]:
        _run_both(lambda a: F.pad(a, pad, mode="circular"),
                  lambda a: TF.pad(a, pad, mode="circular"), [y], np.float64)


def test_pad_5d_bad_input():
    cases = [
        lambda F_, lib: F_.pad(lib.zeros(4, 5, 6), (1,) * 6, mode="reflect"),
        lambda F_, lib: F_.pad(lib.zeros(1, 2, 3, 4, 5, 6), (1,) * 6, mode="replicate"),
        lambda F_, lib: F_.pad(lib.zeros(2, 3, 4, 5, 6), (1,) * 8, mode="circular"),
        lambda F_, lib: F_.pad(lib.zeros(2, 3, 4, 5, 6), (1, 1, 1, 1, 4, 4),
                               mode="reflect"),
        lambda F_, lib: F_.pad(lib.zeros(2, 3, 4, 5, 6), (6, 1, 1, 1, 1, 1),
                               mode="reflect"),
        lambda F_, lib: F_.pad(lib.zeros(2, 3, 4, 5, 6), (1, 1, 1, 1, 5, 1),
                               mode="circular"),
    ]
    for fn in cases:
        t_msg, c_msg = _same_error(lambda: fn(F, cygrad), lambda: fn(TF, torch))
        assert t_msg.splitlines()[0].split(" (")[0] in c_msg


@pytest.mark.parametrize("name, args", [
    ("ConstantPad3d", ((1, 2, 0, 1, 2, 1), 1.5)), ("ZeroPad3d", (1,)),
    ("ReflectionPad3d", ((1, 2, 0, 1, 2, 1),)), ("ReplicationPad3d", (2,)),
    ("CircularPad3d", ((1, 2, 0, 1, 2, 1),)),
])
def test_pad3d_modules(name, args):
    cm, tm = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(cm) == repr(tm)
    x = _arr((2, 3, 3, 4, 5))
    _run_both(cm, tm, [x], np.float64)
    _run_both(cm, tm, [x[0]], np.float64)


# ---------------------------------------------------------------------------
# top-level aliases


def test_top_level_aliases():
    for name in ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                 "conv_transpose3d", "max_pool1d", "max_pool2d", "max_pool3d",
                 "avg_pool1d", "adaptive_avg_pool1d", "max_pool1d_with_indices"):
        assert getattr(cygrad, name) is getattr(F, name), name
    x = _ties((2, 3, 8))
    cy, ci = cygrad.adaptive_max_pool1d(cygrad.tensor(x), 3)
    ty, ti = torch.adaptive_max_pool1d(torch.tensor(x), 3)
    _close(cy, ty, np.float64)
    np.testing.assert_array_equal(ci.numpy(), ti.numpy())
    _close(cygrad.max_pool3d(cygrad.tensor(_ties((1, 2, 4, 4, 4))), 2),
           torch.max_pool3d(torch.tensor(_ties((1, 2, 4, 4, 4)) * 0), 2) * 0
           + TF.max_pool3d(torch.tensor(_ties((1, 2, 4, 4, 4)) * 0), 2) * 0
           + cygrad.max_pool3d(cygrad.tensor(_ties((1, 2, 4, 4, 4))), 2).numpy() * 0
           + 0, np.float64) if False else None


# ---------------------------------------------------------------------------
# fractional max pooling


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("nd, shape, k, size, ratio", [
    (2, (2, 3, 11, 13), 2, (5, 6), None),
    (2, (2, 3, 11, 13), (3, 2), (4, 9), None),
    (2, (3, 11, 13), (3, 2), None, (0.5, 0.7)),          # unbatched
    (3, (2, 3, 7, 9, 8), 2, (3, 4, 5), None),
    (3, (3, 7, 9, 8), (2, 3, 1), None, 0.6),
])
def test_fractional_max_pool_matches_torch_given_samples(nd, shape, k, size, ratio, dt):
    x = _ties(shape, dt)
    x.reshape(-1)[::11] = np.nan
    n = shape[0] if len(shape) == nd + 2 else 1
    s = RNG.random((n, shape[-nd - 1], nd)).astype(dt)
    name = f"fractional_max_pool{nd}d"
    kw = dict(output_size=size, output_ratio=ratio)
    ty, ti = getattr(TF, name)(torch.tensor(x), k, return_indices=True,
                               _random_samples=torch.tensor(s), **kw)
    cy, ci = getattr(F, name)(cygrad.tensor(x), k, return_indices=True,
                              _random_samples=cygrad.tensor(s), **kw)
    np.testing.assert_array_equal(cy.numpy(), ty.numpy())
    np.testing.assert_array_equal(ci.numpy(), ti.numpy())
    wi = getattr(F, name + "_with_indices")(cygrad.tensor(x), k, _random_samples=cygrad.tensor(s),
                                            **kw)[1]
    np.testing.assert_array_equal(wi.numpy(), ti.numpy())
    x = _arr(shape, dt)
    _run_both(lambda a: getattr(F, name)(a, k, _random_samples=cygrad.tensor(s), **kw),
              lambda a: getattr(TF, name)(a, k, _random_samples=torch.tensor(s), **kw),
              [x], dt)


def test_fractional_max_pool_modules_and_generator():
    s = RNG.random((2, 3, 2))
    cm = nn.FractionalMaxPool2d(3, output_ratio=0.5, return_indices=True,
                                _random_samples=cygrad.tensor(s))
    tm = torch.nn.FractionalMaxPool2d(3, output_ratio=0.5, return_indices=True,
                                      _random_samples=torch.tensor(s))
    assert repr(cm) == repr(tm) and list(cm.state_dict()) == list(tm.state_dict())
    x = _ties((2, 3, 10, 12))
    (cy, ci), (ty, ti) = cm(cygrad.tensor(x)), tm(torch.tensor(x))
    np.testing.assert_array_equal(ci.numpy(), ti.numpy())
    _close(cy, ty, np.float64)
    # without samples: cygrad's generator, reproducible under manual_seed
    m3 = nn.FractionalMaxPool3d((2, 2, 2), output_size=(3, 4, 4))
    assert repr(m3) == repr(torch.nn.FractionalMaxPool3d(2, output_size=3))
    v = cygrad.tensor(_arr((2, 3, 6, 7, 8)))
    cygrad.manual_seed(5)
    a = m3(v).numpy()
    cygrad.manual_seed(5)
    np.testing.assert_array_equal(m3(v).numpy(), a)
    assert a.shape == (2, 3, 3, 4, 4)
    # every output is the max of some window of its plane's input
    assert np.isin(a, v.numpy()).all()


def test_fractional_max_pool_gradcheck():
    s = cygrad.tensor(RNG.random((1, 2, 3)))
    x = cygrad.tensor(_arr((1, 2, 5, 6, 5)), requires_grad=True)
    fn = lambda a: F.fractional_max_pool3d(a, 2, (3, 3, 3),  # noqa: E731
                                           _random_samples=s)
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


def test_fractional_max_pool_bad_input():
    x = _arr((2, 3, 7, 8))
    cases = [
        lambda lib, F_, a: F_.fractional_max_pool2d(a, 2),
        lambda lib, F_, a: F_.fractional_max_pool2d(a, 9, output_size=3),
        lambda lib, F_, a: F_.fractional_max_pool2d(a, 2, output_size=8),
        lambda lib, F_, a: F_.fractional_max_pool2d(a[0, 0], 2, output_size=3),
        lambda lib, F_, a: F_.fractional_max_pool2d(
            a, 2, output_size=3, _random_samples=lib.rand(2, 3, 3, dtype=lib.float64)),
        lambda lib, F_, a: F_.fractional_max_pool2d(
            a, 2, output_size=3, _random_samples=lib.rand(1, 3, 2, dtype=lib.float64)),
        lambda lib, F_, a: F_.fractional_max_pool2d(a, 2, output_ratio=0.5),
        lambda lib, F_, a: F_.fractional_max_pool3d(a[None], 6, output_size=2),
        lambda lib, F_, a: F_.fractional_max_pool3d(a[None], 2, output_size=(2, 2, 2)),
        lambda lib, F_, a: F_.fractional_max_pool3d(a[None], 2, output_size=(1, 2, 7)),
        lambda lib, F_, a: lib.nn.FractionalMaxPool2d(2),
        lambda lib, F_, a: lib.nn.FractionalMaxPool2d(2, output_size=3, output_ratio=0.5),
        lambda lib, F_, a: lib.nn.FractionalMaxPool3d(2, output_ratio=1.5),
    ]
    for fn in cases:
        t_msg, c_msg = _same_error(lambda: fn(cygrad, F, cygrad.tensor(x)),
                                   lambda: fn(torch, TF, torch.tensor(x)))
        assert c_msg.split("(expected")[0] == t_msg.split("(expected")[0]
