"""Convolutions, unfold/fold, pad, interpolate: against a NumPy reference,
against torch module-to-module (weights through state_dict), gradcheck and
gradgradcheck in float64, hypothesis over geometry, and bad input."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cygrad
from cygrad import nn
from cygrad.autograd import gradcheck, gradgradcheck
from cygrad.nn import functional as F

TOL = {np.float64: dict(rtol=1e-10, atol=1e-10), np.float32: dict(rtol=1e-5, atol=1e-5)}


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def ref_conv2d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """Direct convolution (sum over kernel taps of shifted input slices)."""
    (sh, sw), (ph, pw), (dh, dw) = _pair(stride), _pair(padding), _pair(dilation)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh,
                           j * dw:j * dw + sw * (ow - 1) + 1:sw]
                out[:, g * og:(g + 1) * og] += np.einsum(
                    "nchw,oc->nohw", patch, w[g * og:(g + 1) * og, :, i, j])
    if b is not None:
        out += b.reshape(1, -1, 1, 1)
    return out


def _t(a, requires_grad=False):
    return cygrad.tensor(np.asarray(a), requires_grad=requires_grad)


# ---------------------------------------------------------------------------
# NumPy reference (no torch needed)


CASES = [
    # (N, C, H, W, O, kernel, stride, padding, dilation, groups)
    (2, 3, 7, 6, 4, 3, 1, 1, 1, 1),
    (2, 4, 9, 8, 6, (3, 2), (2, 1), (1, 0), (1, 2), 2),
    (1, 4, 5, 5, 4, 3, 1, 0, 1, 4),          # depthwise (direct kernels)
    (2, 3, 7, 8, 6, (3, 2), 2, (1, 2), (2, 1), 3),  # depthwise, multiplier 2
    (3, 16, 6, 6, 8, 3, 1, 1, 1, 1),          # K = 144: the patch-rows path
    (2, 8, 10, 9, 4, (3, 3), 2, 2, 2, 1),     # K = 72, strided and dilated
    (2, 2, 4, 4, 3, 1, 1, 0, 1, 1),           # 1x1
]


@pytest.mark.parametrize("case", CASES)
def test_conv2d_matches_reference_and_gradcheck(case):
    n, c, h, w, o, k, s, p, d, g = case
    rng = np.random.default_rng(0)
    ks = _pair(k)
    x = rng.standard_normal((n, c, h, w))
    wt = rng.standard_normal((o, c // g, *ks))
    b = rng.standard_normal(o)
    y = F.conv2d(_t(x), _t(wt), _t(b), s, p, d, g)
    np.testing.assert_allclose(y.numpy(), ref_conv2d(x, wt, b, s, p, d, g),
                               **TOL[np.float64])
    xs = [_t(x, True), _t(wt, True), _t(b, True)]

    def f(x, w, b):
        return F.conv2d(x, w, b, s, p, d, g)

    assert gradcheck(f, xs)
    assert gradgradcheck(f, xs)


def test_conv1d_is_conv2d_of_height_one():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 4, 11))
    w = rng.standard_normal((6, 2, 3))
    b = rng.standard_normal(6)
    y = F.conv1d(_t(x), _t(w), _t(b), stride=2, padding=2, dilation=2, groups=2)
    want = ref_conv2d(x[:, :, None], w[:, :, None], b, (1, 2), (0, 2), (1, 2), 2)
    np.testing.assert_allclose(y.numpy(), want[:, :, 0], **TOL[np.float64])
    xs = [_t(x, True), _t(w, True), _t(b, True)]

    def f(x, w, b):
        return F.conv1d(x, w, b, stride=2, padding=2, dilation=2, groups=2)

    assert gradcheck(f, xs)
    assert gradgradcheck(f, xs)


@pytest.mark.parametrize("stride,padding,output_padding,groups,dilation", [
    (1, 0, 0, 1, 1), (2, 1, 1, 1, 1), (3, 2, 1, 2, 2), (2, 0, 1, 3, 1),
])
def test_conv_transpose2d_is_the_adjoint_of_conv2d(stride, padding, output_padding,
                                                   groups, dilation):
    """<conv_transpose(g, w), x> == <g, conv(x, w)> for the matching shapes."""
    rng = np.random.default_rng(2)
    cin, cout = 2 * groups, 3 * groups
    g = rng.standard_normal((2, cin, 4, 3))
    w = rng.standard_normal((cin, cout // groups, 3, 2))
    z = F.conv_transpose2d(_t(g), _t(w), None, stride, padding, output_padding,
                           groups, dilation)
    x = rng.standard_normal(tuple(z.shape))
    y = ref_conv2d(x, w, None, stride, padding, dilation, groups)
    assert y.shape == g.shape
    np.testing.assert_allclose(np.sum(z.numpy() * x), np.sum(g * y), rtol=1e-10)
    xs = [_t(g, True), _t(w, True), _t(rng.standard_normal(cout), True)]

    def f(g, w, b):
        return F.conv_transpose2d(g, w, b, stride, padding, output_padding, groups,
                                  dilation)

    assert gradcheck(f, xs)
    assert gradgradcheck(f, xs)


def test_conv_transpose1d_gradgradcheck():
    rng = np.random.default_rng(3)
    xs = [_t(rng.standard_normal((2, 4, 5)), True),
          _t(rng.standard_normal((4, 3, 3)), True),
          _t(rng.standard_normal(3), True)]

    def f(x, w, b):
        return F.conv_transpose1d(x, w, b, stride=2, padding=1, output_padding=1)

    assert tuple(f(*xs).shape) == (2, 3, 10)
    assert gradcheck(f, xs)
    assert gradgradcheck(f, xs)


def test_padding_same_and_valid():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 2, 6, 7))
    w = rng.standard_normal((3, 2, 4, 3))   # even kernel: the odd pad unit right
    y = F.conv2d(_t(x), _t(w), padding="same", dilation=(1, 2))
    assert tuple(y.shape) == (1, 3, 6, 7)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 2), (2, 2)))
    np.testing.assert_allclose(y.numpy(), ref_conv2d(xp, w, None, 1, 0, (1, 2)),
                               **TOL[np.float64])
    v = F.conv2d(_t(x), _t(w), padding="valid")
    np.testing.assert_allclose(v.numpy(), ref_conv2d(x, w), **TOL[np.float64])
    xs = [_t(x, True), _t(w, True)]
    assert gradcheck(lambda x, w: F.conv2d(x, w, padding="same"), xs)


def test_unbatched_input_and_float32():
    rng = np.random.default_rng(5)
    conv = nn.Conv2d(3, 4, 3, padding=1)
    x = rng.standard_normal((3, 5, 5)).astype(np.float32)
    y = conv(_t(x))
    assert tuple(y.shape) == (4, 5, 5) and y.dtype == cygrad.float32
    want = ref_conv2d(x[None].astype(np.float64), conv.weight.detach().numpy()
                      .astype(np.float64), conv.bias.detach().numpy(), 1, 1)[0]
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-5, atol=1e-5)


def test_default_init_and_parameter_shapes():
    cygrad.manual_seed(0)
    conv = nn.Conv2d(6, 8, (3, 2), groups=2)
    assert tuple(conv.weight.shape) == (8, 3, 3, 2)
    assert tuple(conv.bias.shape) == (8,)
    bound = 1 / math.sqrt(3 * 3 * 2)  # kaiming_uniform(a=sqrt(5)) == 1/sqrt(fan_in)
    wv, bv = conv.weight.detach().numpy(), conv.bias.detach().numpy()
    assert np.abs(wv).max() <= bound and np.abs(wv).max() > 0.8 * bound
    assert np.abs(bv).max() <= bound
    t = nn.ConvTranspose2d(4, 6, 3, groups=2)
    assert tuple(t.weight.shape) == (4, 3, 3, 3)
    assert nn.Conv1d(2, 3, 5, bias=False).bias is None
    assert [n for n, _ in conv.named_parameters()] == ["weight", "bias"]


def test_padding_modes_equal_explicit_pad():
    rng = np.random.default_rng(6)
    x = _t(rng.standard_normal((2, 3, 5, 6)), True)
    for mode in ("reflect", "replicate", "circular"):
        conv = nn.Conv2d(3, 2, 3, padding=(1, 2), padding_mode=mode).double()
        y = conv(x)
        z = F.conv2d(F.pad(x, (2, 2, 1, 1), mode=mode), conv.weight, conv.bias)
        np.testing.assert_allclose(y.detach().numpy(), z.detach().numpy(),
                                   **TOL[np.float64])
        assert gradcheck(lambda x: conv(x), [x])


# ---------------------------------------------------------------------------
# against torch, module to module


torch_cases = [
    dict(in_channels=3, out_channels=4, kernel_size=3),
    dict(in_channels=4, out_channels=6, kernel_size=(3, 2), stride=(2, 1),
         padding=(1, 0), dilation=(1, 2), groups=2),
    dict(in_channels=4, out_channels=4, kernel_size=3, padding=1, groups=4,
         bias=False),
    dict(in_channels=16, out_channels=8, kernel_size=3, padding="same"),
    dict(in_channels=3, out_channels=2, kernel_size=4, padding="same", dilation=2),
    dict(in_channels=3, out_channels=5, kernel_size=3, padding="valid"),
    dict(in_channels=2, out_channels=3, kernel_size=3, padding=2,
         padding_mode="reflect"),
    dict(in_channels=2, out_channels=3, kernel_size=3, padding=(1, 2),
         padding_mode="replicate"),
    dict(in_channels=2, out_channels=3, kernel_size=3, padding=1,
         padding_mode="circular"),
]


def _sd_to_cygrad(tmod, cmod):
    cmod.load_state_dict({k: v.detach().numpy() for k, v in tmod.state_dict().items()})


def _compare_modules(torch, tmod, cmod, x, dtype, *, train=True):
    tol = TOL[dtype]
    tx = torch.tensor(x, requires_grad=True)
    cx = cygrad.tensor(x, requires_grad=True)
    ty, cy = tmod(tx), cmod(cx)
    np.testing.assert_allclose(cy.detach().numpy(), ty.detach().numpy(), **tol)
    g = np.random.default_rng(9).standard_normal(tuple(ty.shape)).astype(dtype)
    ty.backward(torch.tensor(g))
    cy.backward(cygrad.tensor(g))
    np.testing.assert_allclose(cx.grad.numpy(), tx.grad.numpy(), **tol)
    tparams = dict(tmod.named_parameters())
    for name, p in cmod.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tparams[name].grad.numpy(), **tol,
                                   err_msg=name)


@pytest.mark.parametrize("kw", torch_cases, ids=lambda kw: str(sorted(kw.items())))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_conv2d_module_matches_torch(kw, dtype):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tmod = torch.nn.Conv2d(**kw).to(torch.float64 if dtype == np.float64 else
                                    torch.float32)
    cmod = nn.Conv2d(**kw).to(dtype)
    _sd_to_cygrad(tmod, cmod)
    assert repr(cmod) == repr(tmod)
    x = np.random.default_rng(1).standard_normal((2, kw["in_channels"], 7, 8))
    _compare_modules(torch, tmod, cmod, x.astype(dtype), dtype)


@pytest.mark.parametrize("kw", [
    dict(in_channels=3, out_channels=4, kernel_size=3),
    dict(in_channels=4, out_channels=6, kernel_size=5, stride=2, padding=2,
         dilation=2, groups=2),
    dict(in_channels=2, out_channels=3, kernel_size=3, padding="same",
         padding_mode="reflect"),
    dict(in_channels=2, out_channels=3, kernel_size=2, padding="same"),
])
@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel")
def test_conv1d_module_matches_torch(kw):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tmod = torch.nn.Conv1d(**kw).double()
    cmod = nn.Conv1d(**kw).double()
    _sd_to_cygrad(tmod, cmod)
    assert repr(cmod) == repr(tmod)
    x = np.random.default_rng(2).standard_normal((3, kw["in_channels"], 13))
    _compare_modules(torch, tmod, cmod, x, np.float64)
    _compare_modules(torch, tmod, cmod, x[0], np.float64)  # unbatched


@pytest.mark.parametrize("cls,kw,shape,output_size", [
    ("ConvTranspose2d", dict(in_channels=4, out_channels=6, kernel_size=3, stride=2,
                             padding=1, output_padding=1, groups=2), (2, 4, 5, 4),
     None),
    ("ConvTranspose2d", dict(in_channels=3, out_channels=2, kernel_size=(2, 3),
                             dilation=(2, 1), bias=False), (2, 3, 4, 4), None),
    ("ConvTranspose2d", dict(in_channels=3, out_channels=2, kernel_size=3, stride=2),
     (1, 3, 4, 4), (10, 9)),
    ("ConvTranspose1d", dict(in_channels=3, out_channels=4, kernel_size=4, stride=3,
                             padding=1, output_padding=2), (2, 3, 6), None),
])
def test_conv_transpose_module_matches_torch(cls, kw, shape, output_size):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tmod = getattr(torch.nn, cls)(**kw).double()
    cmod = getattr(nn, cls)(**kw).double()
    _sd_to_cygrad(tmod, cmod)
    assert repr(cmod) == repr(tmod)
    x = np.random.default_rng(3).standard_normal(shape)
    if output_size is None:
        _compare_modules(torch, tmod, cmod, x, np.float64)
    else:
        ty = tmod(torch.tensor(x), output_size=output_size)
        cy = cmod(cygrad.tensor(x), output_size=output_size)
        np.testing.assert_allclose(cy.detach().numpy(), ty.detach().numpy(),
                                   **TOL[np.float64])


def test_state_dict_round_trip_with_torch():
    torch = pytest.importorskip("torch")
    cmod = nn.Conv2d(3, 4, 3, groups=1)
    tmod = torch.nn.Conv2d(3, 4, 3)
    tmod.load_state_dict({k: torch.tensor(v.numpy()) for k, v in
                          cmod.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((1, 3, 5, 5)).astype(np.float32)
    np.testing.assert_allclose(cmod(cygrad.tensor(x)).detach().numpy(),
                               tmod(torch.tensor(x)).detach().numpy(), rtol=1e-5,
                               atol=1e-5)
    assert list(cmod.state_dict()) == list(tmod.state_dict())


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_hypothesis_conv2d_geometry_vs_torch(data):
    torch = pytest.importorskip("torch")
    groups = data.draw(st.sampled_from([1, 2, 3]))
    cg = data.draw(st.integers(1, 3))
    og = data.draw(st.integers(1, 3))
    kh, kw = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))
    sh, sw = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    dh, dw = data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2))
    ph, pw = data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2))
    h = data.draw(st.integers(max(1, dh * (kh - 1) + 1 - 2 * ph), 9))
    w = data.draw(st.integers(max(1, dw * (kw - 1) + 1 - 2 * pw), 9))
    n = data.draw(st.integers(1, 3))
    bias = data.draw(st.booleans())
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    x = rng.standard_normal((n, cg * groups, h, w))
    wt = rng.standard_normal((og * groups, cg, kh, kw))
    b = rng.standard_normal(og * groups) if bias else None
    args = dict(stride=(sh, sw), padding=(ph, pw), dilation=(dh, dw), groups=groups)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(wt, requires_grad=True)
    tb = torch.tensor(b, requires_grad=True) if bias else None
    ty = torch.nn.functional.conv2d(tx, tw, tb, **args)
    cx, cw = _t(x, True), _t(wt, True)
    cb = _t(b, True) if bias else None
    cy = F.conv2d(cx, cw, cb, **args)
    np.testing.assert_allclose(cy.detach().numpy(), ty.detach().numpy(),
                               **TOL[np.float64])
    g = rng.standard_normal(tuple(ty.shape))
    ty.backward(torch.tensor(g))
    cy.backward(cygrad.tensor(g))
    np.testing.assert_allclose(cx.grad.numpy(), tx.grad.numpy(), **TOL[np.float64])
    np.testing.assert_allclose(cw.grad.numpy(), tw.grad.numpy(), **TOL[np.float64])
    if bias:
        np.testing.assert_allclose(cb.grad.numpy(), tb.grad.numpy(), **TOL[np.float64])


# ---------------------------------------------------------------------------
# unfold / fold / pad / interpolate against torch


def _vs_torch(torch, cfn, tfn, x, grad=True):
    tx = torch.tensor(x, requires_grad=True)
    cx = cygrad.tensor(x, requires_grad=True)
    ty, cy = tfn(tx), cfn(cx)
    assert tuple(cy.shape) == tuple(ty.shape)
    np.testing.assert_allclose(cy.detach().numpy(), ty.detach().numpy(),
                               **TOL[np.float64])
    if grad:
        g = np.random.default_rng(7).standard_normal(tuple(ty.shape))
        ty.backward(torch.tensor(g))
        cy.backward(cygrad.tensor(g))
        np.testing.assert_allclose(cx.grad.numpy(), tx.grad.numpy(), **TOL[np.float64])


def test_unfold_fold_match_torch_and_gradgradcheck():
    torch = pytest.importorskip("torch")
    TF = torch.nn.functional
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 7))
    kw = dict(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=(2, 1))
    _vs_torch(torch, lambda t: F.unfold(t, **kw), lambda t: TF.unfold(t, **kw), x)
    _vs_torch(torch, lambda t: F.unfold(t, 2), lambda t: TF.unfold(t, 2), x[0])
    cols = TF.unfold(torch.tensor(x), **kw).numpy()
    _vs_torch(torch, lambda t: F.fold(t, (6, 7), **kw),
              lambda t: TF.fold(t, (6, 7), **kw), cols)
    xs = [_t(x, True)]
    assert gradgradcheck(lambda t: F.unfold(t, **kw), xs)
    assert gradgradcheck(lambda t: F.fold(t, (6, 7), **kw), [_t(cols, True)])


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("spec,shape", [
    ((1, 2), (2, 3, 5)), ((2, 1, 1, 3), (2, 3, 4, 5)), ((0, 3, 2, 0), (3, 4, 5)),
    ((1, 1), (3, 4)),
])
def test_pad_matches_torch(mode, spec, shape):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(1).standard_normal(shape)
    _vs_torch(torch, lambda t: F.pad(t, spec, mode=mode),
              lambda t: torch.nn.functional.pad(t, spec, mode=mode), x)
    assert gradgradcheck(lambda t: F.pad(t, spec, mode=mode), [_t(x, True)])


def test_pad_constant_value_and_negative():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(2).standard_normal((2, 3, 4, 5))
    for spec in ((-1, 2, 0, 1), (1,) * 4, (2, -2)):
        _vs_torch(torch, lambda t: F.pad(t, spec, value=2.5),
                  lambda t: torch.nn.functional.pad(t, spec, value=2.5), x)


@pytest.mark.parametrize("kw,shape", [
    (dict(scale_factor=2), (2, 3, 4, 5)),
    (dict(size=(7, 3)), (2, 3, 4, 5)),
    (dict(size=(7, 3), mode="nearest-exact"), (2, 3, 4, 5)),
    (dict(size=(7, 3), mode="bilinear", align_corners=False), (2, 3, 4, 5)),
    (dict(size=(7, 3), mode="bilinear", align_corners=True), (2, 3, 4, 5)),
    (dict(scale_factor=1.7, mode="bilinear"), (1, 2, 5, 4)),
    (dict(scale_factor=2.5, mode="linear", align_corners=True), (2, 3, 4)),
    (dict(size=9, mode="linear"), (2, 3, 4)),
    (dict(scale_factor=3), (2, 3, 4)),
])
def test_interpolate_matches_torch(kw, shape):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(3).standard_normal(shape)
    _vs_torch(torch, lambda t: F.interpolate(t, **kw),
              lambda t: torch.nn.functional.interpolate(t, **kw), x)
    assert gradgradcheck(lambda t: F.interpolate(t, **kw), [_t(x, True)])


def test_upsample_and_pad_modules_match_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(4).standard_normal((1, 2, 3, 4))
    pairs = [
        (nn.Upsample(scale_factor=2, mode="bilinear"),
         torch.nn.Upsample(scale_factor=2, mode="bilinear")),
        (nn.UpsamplingNearest2d(size=(5, 5)),
         torch.nn.UpsamplingNearest2d(size=(5, 5))),
        (nn.UpsamplingBilinear2d(scale_factor=2),
         torch.nn.UpsamplingBilinear2d(scale_factor=2)),
        (nn.ReflectionPad2d((1, 2, 2, 1)), torch.nn.ReflectionPad2d((1, 2, 2, 1))),
        (nn.ReplicationPad1d(2), torch.nn.ReplicationPad1d(2)),
        (nn.ZeroPad2d(1), torch.nn.ZeroPad2d(1)),
        (nn.ConstantPad1d((1, 2), 3.0), torch.nn.ConstantPad1d((1, 2), 3.0)),
        (nn.CircularPad2d(1), torch.nn.CircularPad2d(1)),
    ]
    for cmod, tmod in pairs:
        xi = x if "1d" not in type(cmod).__name__ else x[0]
        _vs_torch(torch, cmod, tmod, xi)
        assert repr(cmod) == repr(tmod)


# ---------------------------------------------------------------------------
# bad input: torch's exception type, a message naming the shapes, raised
# before any kernel runs (nothing changes)


@pytest.mark.parametrize("make,shape", [
    ("Conv2d(3, 4, 3)", (1, 3, 8, 8)), ("Conv2d(3, 4, 3, bias=False)", (1, 3, 8, 8)),
    ("Conv1d(3, 4, 3)", (1, 3, 8)), ("Conv2d(3, 4, 3)", (3, 8, 8)),
    ("ConvTranspose2d(3, 4, 3)", (1, 3, 8, 8)), ("Conv3d(3, 4, 3)", (1, 3, 6, 6, 6))])
@pytest.mark.parametrize("dtype", ["uint8", "float64", "int64"])
def test_conv_input_dtype_messages_are_torchs(make, shape, dtype):
    """mrdbourke's custom-datasets notebook feeds a uint8 image to its TinyVGG:
    torch compares the input with the bias first ("Input type (unsigned char)
    and bias type (float) should be the same"), then with the weight."""
    torch = pytest.importorskip("torch")
    if make.startswith("ConvTranspose") and dtype == "uint8":
        pytest.skip("torch has no integer transposed-conv kernel (NotImplementedError)")
    msgs = []
    for m in (cygrad, torch):
        m.manual_seed(0)
        mod = eval(f"m.nn.{make}")
        with pytest.raises(RuntimeError) as e:
            mod(m.ones(*shape, dtype=getattr(m, dtype)))
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


def test_conv_bad_input():
    conv = nn.Conv2d(3, 8, 3)
    w_before = conv.weight.detach().numpy().copy()
    with pytest.raises(RuntimeError, match=r"expected input\[2, 4, 8, 8\] to have 3 "
                                           r"channels, but got 4 channels instead"):
        conv(cygrad.randn(2, 4, 8, 8))
    with pytest.raises(RuntimeError, match=r"expected input\[1, 4, 8, 8\] to have 3 "
                                           r"channels"):
        conv(cygrad.randn(4, 8, 8))   # 3-D input with the wrong channel count
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D "
                                           r"\(batched\) input to conv2d, but got "
                                           r"input of size: \[8, 8\]"):
        conv(cygrad.randn(8, 8))
    with pytest.raises(RuntimeError, match=r"Calculated padded input size per channel: "
                                           r"\(2 x 2\). Kernel size: \(3 x 3\). Kernel "
                                           r"size can't be greater than actual input "
                                           r"size"):
        conv(cygrad.randn(1, 3, 2, 2))
    with pytest.raises(RuntimeError, match=r"Calculated padded input size per channel: "
                                           r"\(2\). Kernel size: \(3\)"):
        nn.Conv1d(3, 8, 3)(cygrad.randn(2, 3, 2))
    with pytest.raises(RuntimeError, match=r"Input type \(double\) and bias type "
                                           r"\(float\) should be the same"):
        conv(cygrad.randn(1, 3, 5, 5, dtype=cygrad.float64))
    with pytest.raises(RuntimeError, match=r"expected bias to be 1-dimensional with 8 "
                                           r"elements, but got bias of size \[7\]"):
        F.conv2d(cygrad.randn(1, 3, 5, 5), conv.weight, cygrad.randn(7))
    with pytest.raises(RuntimeError, match="non-positive stride is not supported"):
        F.conv2d(cygrad.randn(1, 3, 5, 5), conv.weight, stride=0)
    with pytest.raises(RuntimeError, match="negative padding is not supported"):
        F.conv2d(cygrad.randn(1, 3, 5, 5), conv.weight, padding=-1)
    with pytest.raises(RuntimeError, match=r"Given transposed=1, weight of size "
                                           r"\[3, 8, 3, 3\], expected input"
                                           r"\[2, 4, 8, 8\] to have 3 channels"):
        nn.ConvTranspose2d(3, 8, 3)(cygrad.randn(2, 4, 8, 8))
    with pytest.raises(RuntimeError, match="output padding must be smaller"):
        nn.ConvTranspose2d(3, 8, 3, stride=2, output_padding=2)(
            cygrad.randn(1, 3, 4, 4))
    assert np.array_equal(conv.weight.detach().numpy(), w_before)
    assert conv.weight.grad is None


def test_conv_bad_construction():
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 8, 3, groups=2)
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        nn.Conv2d(4, 6, 3, groups=4)
    with pytest.raises(ValueError, match="groups must be a positive integer"):
        nn.Conv2d(4, 6, 3, groups=0)
    with pytest.raises(ValueError, match="padding='same' is not supported for strided"):
        nn.Conv2d(4, 8, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="Invalid padding string 'foo'"):
        nn.Conv2d(4, 8, 3, padding="foo")
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(4, 8, 3, padding_mode="foo")
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported'):
        nn.ConvTranspose2d(4, 8, 3, padding_mode="reflect")


def test_pad_bad_input():
    x = cygrad.randn(2, 3, 4)
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        F.pad(x, (1, 2, 3))
    with pytest.raises(RuntimeError, match="Padding size should be less than the "
                                           "corresponding input dimension"):
        F.pad(x, (4, 0), mode="reflect")
    with pytest.raises(NotImplementedError, match="Padding size 2 is not supported for "
                                                  "1D input"):
        F.pad(cygrad.randn(4), (1, 1), mode="reflect")


def test_same_torch_error_types_as_torch():
    torch = pytest.importorskip("torch")
    cases = [
        lambda M, T: M.nn.Conv2d(3, 8, 3)(T.randn(2, 4, 8, 8)),
        lambda M, T: M.nn.Conv2d(3, 8, 3)(T.randn(1, 3, 2, 2)),
        lambda M, T: M.nn.Conv2d(3, 8, 3)(T.randn(8, 8)),
        lambda M, T: M.nn.Conv2d(3, 8, 3, groups=2),
        lambda M, T: M.nn.functional.unfold(T.randn(1, 2, 2, 2), 3),
        lambda M, T: M.nn.functional.pad(T.randn(2, 3), (1, 2, 3)),
    ]
    for case in cases:
        with pytest.raises(Exception) as te:
            case(torch, torch)
        with pytest.raises(Exception) as ce:
            case(cygrad, cygrad)
        assert type(ce.value) is type(te.value), (ce.value, te.value)


def test_recycled_patch_buffers_never_leak_between_graphs():
    """Two live graphs of the same shape, retain_graph, then a second
    backward: the scratch buffers of one never show up in the other."""
    rng = np.random.default_rng(8)
    w = _t(rng.standard_normal((8, 16, 3, 3)), True)   # K = 144: patch rows
    x1, x2 = (rng.standard_normal((2, 16, 6, 6)) for _ in range(2))
    y1 = F.conv2d(_t(x1), w, padding=1)
    y2 = F.conv2d(_t(x2), w, padding=1)
    g = rng.standard_normal(tuple(y1.shape))
    y1.backward(_t(g), retain_graph=True)
    first = w.grad.numpy().copy()
    w.grad = None
    y2.backward(_t(g))
    w.grad = None
    y1.backward(_t(g))   # cols of y1 were recycled: recomputed from x1
    np.testing.assert_allclose(w.grad.numpy(), first, **TOL[np.float64])
    gx = np.einsum("nohw,nchw->oc", g, x1)  # centre tap of a padded 3x3
    np.testing.assert_allclose(first[:, :, 1, 1], gx, **TOL[np.float64])


def test_functional_names_and_import_layers():
    """The functional forms are re-exported, and the new files import the
    layers below them only (never the top-level cygrad package)."""
    import ast
    import os

    for name in ("conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d",
                 "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d",
                 "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool2d",
                 "unfold", "fold", "pad", "interpolate", "batch_norm", "layer_norm",
                 "group_norm", "rms_norm"):
        assert callable(getattr(F, name)) and name in F.__all__, name
    root = os.path.dirname(cygrad.__file__)
    files = [os.path.join(root, "nn", f) for f in (
        "_functional_conv.py", "_functional_pool.py", "_functional_norm.py")]
    files += [os.path.join(root, "nn", "modules", f) for f in os.listdir(
        os.path.join(root, "nn", "modules")) if f.endswith(".py")]
    for path in files:
        with open(path) as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                assert all(a.name != "cygrad" for a in node.names), path
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                assert node.module != "cygrad", path
                upward = ("cygrad.nn", "cygrad.optim")
                assert not (node.module or "").startswith(upward), path


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_hypothesis_conv_transpose2d_vs_torch(data):
    torch = pytest.importorskip("torch")
    groups = data.draw(st.sampled_from([1, 2]))
    cin, cout = groups * data.draw(st.integers(1, 3)), groups * data.draw(
        st.integers(1, 3))
    kh, kw = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    sh, sw = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    dh, dw = data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2))
    ph, pw = data.draw(st.integers(0, 1)), data.draw(st.integers(0, 1))
    oph = data.draw(st.integers(0, max(sh, dh) - 1))
    opw = data.draw(st.integers(0, max(sw, dw) - 1))
    h, w = data.draw(st.integers(1, 5)), data.draw(st.integers(1, 5))
    out_h = (h - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1
    out_w = (w - 1) * sw - 2 * pw + dw * (kw - 1) + opw + 1
    if min(out_h, out_w) < 1:
        return
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    x = rng.standard_normal((2, cin, h, w))
    wt = rng.standard_normal((cin, cout // groups, kh, kw))
    b = rng.standard_normal(cout)
    args = dict(stride=(sh, sw), padding=(ph, pw), output_padding=(oph, opw),
                groups=groups, dilation=(dh, dw))
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, wt, b))
    ty = torch.nn.functional.conv_transpose2d(tx, tw, tb, **args)
    cx, cw, cb = _t(x, True), _t(wt, True), _t(b, True)
    cy = F.conv_transpose2d(cx, cw, cb, **args)
    np.testing.assert_allclose(cy.detach().numpy(), ty.detach().numpy(),
                               **TOL[np.float64])
    g = rng.standard_normal(tuple(ty.shape))
    ty.backward(torch.tensor(g))
    cy.backward(cygrad.tensor(g))
    for c, t in ((cx, tx), (cw, tw), (cb, tb)):
        np.testing.assert_allclose(c.grad.numpy(), t.grad.numpy(), **TOL[np.float64])


def test_conv_transpose_output_padding_beyond_stride():
    """output_padding >= stride (allowed below the dilation): the transposed
    convolution is the adjoint of a cropped convolution."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(10)
    x = rng.standard_normal((2, 2, 3, 2))
    w = rng.standard_normal((2, 3, 2, 2))
    kw = dict(stride=1, dilation=(1, 3), output_padding=(0, 2))
    _vs_torch(torch, lambda t: F.conv_transpose2d(t, _t(w), **kw),
              lambda t: torch.nn.functional.conv_transpose2d(t, torch.tensor(w), **kw),
              x)
    xs = [_t(x, True), _t(w, True)]
    assert gradgradcheck(lambda x, w: F.conv_transpose2d(x, w, **kw), xs)


def test_pad_to_an_empty_dimension_like_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(11).standard_normal((2, 3, 1, 5))
    for spec in ((1, -1, -1, 0), (-5, 0)):
        _vs_torch(torch, lambda t: F.pad(t, spec), lambda t: torch.nn.functional.pad(
            t, spec), x)
