"""Torch names that real scripts use, against torch: memory formats, the
``cpu`` device module, ``set_default_tensor_type``, the anomaly switches,
``is_inference``, the function forms of in-place methods (``torch.exp_``),
``torch.gradient`` and ``torch.testing.make_tensor``."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cygrad
from cygrad.autograd import gradcheck

torch = pytest.importorskip("torch")

TOL = dict(rtol=1e-10, atol=1e-10)
RNG = np.random.default_rng(0)


# --- memory formats -------------------------------------------------------------------

FORMATS = ["contiguous_format", "channels_last", "channels_last_3d", "preserve_format"]


def test_memory_format_names():
    for name in FORMATS:
        fmt = getattr(cygrad, name)
        assert isinstance(fmt, cygrad.memory_format)
        assert repr(fmt) == f"cygrad.{name}"


@pytest.mark.parametrize("name", FORMATS)
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 3, 1, 4, 2), (3, 4)], ids=str)
@pytest.mark.parametrize("layout", ["plain", "transposed"])
def test_layouts_match_torch(name, shape, layout):
    a = RNG.standard_normal(shape)
    res = []
    for m in (cygrad, torch):
        x = m.tensor(a)
        if layout == "transposed":
            x = x.transpose(0, -1)
        fmt = getattr(m, name)
        out = {}
        for what, fn in [
                ("contiguous", lambda: x.contiguous(memory_format=fmt)),
                ("clone", lambda: x.clone(memory_format=fmt)),
                ("to", lambda: x.to(memory_format=fmt)),
                ("to64", lambda: x.to(m.float32, memory_format=fmt)),
                ("empty_like", lambda: m.empty_like(x, memory_format=fmt)),
                ("zeros_like", lambda: m.zeros_like(x, memory_format=fmt)),
                ("ones_like", lambda: m.ones_like(x, memory_format=fmt)),
                ("full_like", lambda: m.full_like(x, 2.0, memory_format=fmt)),
                ("rand_like", lambda: m.rand_like(x, memory_format=fmt))]:
            try:
                y = fn()
            except RuntimeError as e:
                out[what] = str(e)
                continue
            vals = None if what in ("empty_like", "rand_like") else \
                y.detach().numpy().copy()
            out[what] = (tuple(y.shape), y.stride(), vals)
        for f in FORMATS:
            out["is_" + f] = x.is_contiguous(memory_format=getattr(m, f))
        res.append(out)
    assert res[0].keys() == res[1].keys()
    for k in res[0]:
        a_, b_ = res[0][k], res[1][k]
        if isinstance(a_, tuple):
            assert a_[:2] == b_[:2], (k, a_[:2], b_[:2])
            if a_[2] is not None:
                np.testing.assert_allclose(a_[2], b_[2], rtol=1e-6)
        else:
            assert a_ == b_, (k, a_, b_)


def test_channels_last_values_flow_and_gradients():
    a, w = RNG.standard_normal((2, 3, 5, 5)), RNG.standard_normal((4, 3, 3, 3))
    outs = []
    for m in (cygrad, torch):
        x = m.tensor(a, requires_grad=True)
        y = x.contiguous(memory_format=m.channels_last)
        z = m.nn.functional.conv2d(y, m.tensor(w)).relu().sum()
        z.backward()
        outs.append((z.item(), x.grad.numpy()))
    assert outs[0][0] == pytest.approx(outs[1][0], rel=1e-12)
    np.testing.assert_allclose(outs[0][1], outs[1][1], **TOL)


def test_memory_format_type_errors():
    with pytest.raises(TypeError):
        cygrad.ones(2, 2).contiguous(memory_format="channels_last")


# --- cpu module -----------------------------------------------------------------------

def test_cpu_module():
    for name in ("is_available", "device_count", "current_device", "is_initialized"):
        assert getattr(cygrad.cpu, name)() == getattr(torch.cpu, name)()
    assert cygrad.cpu.synchronize() is None and cygrad.cpu.set_device("cpu") is None
    s = cygrad.cpu.Stream()
    with cygrad.cpu.stream(s):
        pass
    assert cygrad.cpu.current_stream() is cygrad.cpu.current_stream()
    e = s.record_event()
    assert e.query() and e.synchronize() is None
    with pytest.warns(FutureWarning, match=r"torch.cpu.amp.autocast\(args...\)"):
        ctx = cygrad.cpu.amp.autocast(enabled=False)
    with ctx:
        pass
    with pytest.warns(FutureWarning):
        scaler = cygrad.cpu.amp.GradScaler()
    assert scaler.get_scale() == 2.0 ** 16
    missing = [n for n in dir(torch.cpu) if not n.startswith("_") and n[0].islower()
               and callable(getattr(torch.cpu, n)) and not hasattr(cygrad.cpu, n)
               and n not in ("lru_cache",)]
    assert not missing, missing


# --- set_default_tensor_type, anomaly, is_inference -----------------------------------

def test_set_default_tensor_type():
    try:
        for m in (cygrad, torch):
            with pytest.warns(UserWarning, match="set_default_tensor_type\\(\\) is "
                              "deprecated"):
                m.set_default_tensor_type(m.DoubleTensor)
            assert str(m.get_default_dtype()).endswith("float64")
            assert str(m.ones(1).dtype).endswith("float64")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m.set_default_tensor_type("torch.FloatTensor")
                assert str(m.get_default_dtype()).endswith("float32")
                with pytest.raises(TypeError, match="only floating-point types"):
                    m.set_default_tensor_type(m.LongTensor)
    finally:
        cygrad.set_default_dtype(cygrad.float32)
        torch.set_default_dtype(torch.float32)


def test_anomaly_switches():
    try:
        for m in (cygrad, torch):
            assert not m.is_anomaly_enabled()
            m.set_anomaly_enabled(True)
            assert m.is_anomaly_enabled() and m.is_anomaly_check_nan_enabled()
            x = m.tensor([-1.0], requires_grad=True)
            with pytest.raises(RuntimeError, match="returned nan values in its 0th "
                               "output"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m.sqrt(x).sum().backward()
            m.set_anomaly_enabled(True, check_nan=False)
            assert m.is_anomaly_enabled() and not m.is_anomaly_check_nan_enabled()
            m.set_anomaly_enabled(False)
            assert not m.is_anomaly_enabled()
    finally:
        cygrad.set_anomaly_enabled(False)
        torch.set_anomaly_enabled(False)


def test_is_inference():
    # cygrad has no inference tensors (see autograd.grad_mode.inference_mode):
    # what inference mode makes is an ordinary tensor, so is_inference is
    # False where torch says True
    for m in (cygrad, torch):
        assert not m.is_inference(m.ones(1))
        with m.inference_mode():
            y = m.ones(1)
        assert m.is_inference(y) == (m is torch)


# --- in-place function forms ----------------------------------------------------------

UNARY = ["abs_", "acos_", "asin_", "atan_", "ceil_", "cos_", "cosh_", "deg2rad_",
         "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fix_", "floor_", "frac_", "i0_",
         "log10_", "log1p_", "log2_", "log_", "logit_", "nan_to_num_", "neg_",
         "negative_", "rad2deg_", "reciprocal_", "relu_", "round_", "rsqrt_",
         "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_", "tanh_",
         "trunc_", "zero_", "arccos_", "arcsin_", "arctan_", "selu_", "celu_"]


@pytest.mark.parametrize("name", UNARY)
def test_inplace_function_forms(name):
    a = RNG.uniform(0.1, 0.9, (2, 3))
    res = []
    for m in (cygrad, torch):
        x = m.tensor(a)
        out = getattr(m, name)(x)
        assert out is x
        res.append(x.numpy())
    np.testing.assert_allclose(res[0], res[1], rtol=1e-12, atol=1e-12)


def test_inplace_function_forms_with_arguments():
    a = RNG.standard_normal((2, 3))
    for call in (lambda m, x: m.clamp_(x, min=-0.5, max=0.5),
                 lambda m, x: m.clamp_min_(x, 0.1), lambda m, x: m.clamp_max_(x, 0.1),
                 lambda m, x: m.clip_(x, -0.2, 0.3), lambda m, x: m.fill_(x, 2.5),
                 lambda m, x: m.xlogy_(x.abs(), 2.0),
                 lambda m, x: m.ldexp_(x, m.tensor([1.0, 2.0, 3.0], dtype=x.dtype)),
                 lambda m, x: m.threshold_(x, 0.1, 20.0)):
        outs = [call(m, m.tensor(a)).numpy() for m in (cygrad, torch)]
        np.testing.assert_allclose(outs[0], outs[1], **TOL)
    ints = [m.gcd_(m.tensor([12, 18]), m.tensor([8, 27])).tolist()
            for m in (cygrad, torch)]
    assert ints[0] == ints[1]
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        cygrad.exp_(cygrad.ones(2, requires_grad=True))


def test_inplace_function_forms_cover_torch():
    names = [n for n in dir(torch) if n.endswith("_") and not n.startswith("_")
             and callable(getattr(torch, n))]
    methods_we_have = [n for n in names if hasattr(cygrad.Tensor, n)]
    assert all(hasattr(cygrad, n) for n in methods_we_have)


# --- torch.gradient -------------------------------------------------------------------

def run_gradient(a, **kw):
    outs = []
    for m in (cygrad, torch):
        kwargs = dict(kw)
        if isinstance(kwargs.get("spacing"), list) and kwargs["spacing"] and \
                isinstance(kwargs["spacing"][0], np.ndarray):
            kwargs["spacing"] = [m.tensor(s) for s in kwargs["spacing"]]
        x = m.tensor(a, requires_grad=np.asarray(a).dtype.kind == "f")
        res = m.gradient(x, **kwargs)
        grads = None
        if x.requires_grad and res:
            w = np.random.default_rng(1).standard_normal((len(res),) + x.shape)
            sum(r.mul(m.tensor(wi)).sum() for r, wi in zip(res, w)).backward()
            grads = x.grad.numpy()
        outs.append(([r.detach().numpy() for r in res], grads))
    (ra, ga), (rb, gb) = outs
    assert len(ra) == len(rb)
    for u, v in zip(ra, rb):
        assert u.dtype == v.dtype and u.shape == v.shape
        np.testing.assert_allclose(u, v, **TOL)
    if ga is not None:
        np.testing.assert_allclose(ga, gb, **TOL)


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient(edge_order):
    a = RNG.standard_normal((4, 5))
    run_gradient(a, edge_order=edge_order)
    run_gradient(a, spacing=2.0, dim=1, edge_order=edge_order)
    run_gradient(a, spacing=[0.5, 3.0], edge_order=edge_order)
    run_gradient(a, spacing=[np.array([0.0, 0.5, 2.0, 2.2, 4.0])], dim=-1,
                 edge_order=edge_order)
    run_gradient(a, spacing=[np.array([0.0, 1, 3, 4]), np.array([0.0, 1, 3, 4, 9])],
                 dim=(0, 1), edge_order=edge_order)
    run_gradient(np.array([1, 2, 4, 7]), spacing=2, edge_order=edge_order)
    run_gradient(np.array(1.0))


def test_gradient_gradcheck():
    x = cygrad.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    assert gradcheck(lambda t: cygrad.gradient(t, edge_order=2), (x,))
    coords = cygrad.tensor([0.0, 0.3, 1.0, 2.5], dtype=cygrad.float64)
    assert gradcheck(lambda t: cygrad.gradient(t, spacing=(coords,), dim=1), (x,))


@pytest.mark.parametrize("call", [
    lambda m, x: m.gradient(x, edge_order=3),
    lambda m, x: m.gradient(x[:2], edge_order=2),
    lambda m, x: m.gradient(x, spacing=[1.0, 2.0], dim=0),
    lambda m, x: m.gradient(x, dim=(0, 0)),
    lambda m, x: m.gradient(x, spacing=[m.tensor(2.0)], dim=0),
], ids=["order", "size", "spacing-length", "dims", "spacing-0d"])
def test_gradient_errors(call):
    errs = []
    for m in (cygrad, torch):
        with pytest.raises(RuntimeError) as info:
            call(m, m.tensor(RNG.standard_normal((4, 3))))
        errs.append(str(info.value))
    assert errs[0] == errs[1]


@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(3, 5), min_size=1, max_size=3),
       edge_order=st.sampled_from([1, 2]), data=st.data())
def test_gradient_any_shape(shape, edge_order, data):
    a = np.random.default_rng(len(shape)).standard_normal(shape)
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    spacing = data.draw(st.floats(0.1, 10))
    run_gradient(a, spacing=spacing, dim=dim, edge_order=edge_order)


# --- make_tensor ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int8", "uint8",
                                   "bool"])
def test_make_tensor(dtype):
    from cygrad.testing import make_tensor
    d = getattr(cygrad, dtype)
    t = make_tensor(3, 4, dtype=d, device="cpu")
    assert tuple(t.shape) == (3, 4) and t.dtype == d
    if dtype != "bool":
        arr = t.numpy().astype(float)
        lo = 0 if dtype == "uint8" else -9
        assert arr.min() >= lo and arr.max() < 10
        t = make_tensor((5,), dtype=d, device="cpu", low=2, high=4)
        assert ((t.numpy() >= 2) & (t.numpy() < 4)).all()
        t = make_tensor(50, dtype=d, device="cpu", low=0, high=2, exclude_zero=True)
        assert (t.numpy() != 0).all()
    t = make_tensor(2, 3, dtype=d, device="cpu", noncontiguous=True)
    assert not t.is_contiguous() and tuple(t.shape) == (2, 3)
    t = make_tensor(2, 3, 4, 5, dtype=d, device="cpu",
                    memory_format=cygrad.channels_last)
    assert t.is_contiguous(memory_format=cygrad.channels_last)


@pytest.mark.parametrize("kw", [dict(low=2, high=1), dict(low=float("nan")),
                                dict(dtype="int64", requires_grad=True)],
                         ids=["order", "nan", "int-grad"])
def test_make_tensor_errors(kw):
    kw = dict(kw)
    name = kw.pop("dtype", "float32")
    msgs = []
    for m in (cygrad, torch):
        with pytest.raises(ValueError) as info:
            m.testing.make_tensor(3, dtype=getattr(m, name), device="cpu", **kw)
        msgs.append(str(info.value).replace("cygrad.", "torch."))
    assert msgs[0] == msgs[1]


def test_make_tensor_requires_grad_and_device():
    from cygrad.testing import make_tensor
    t = make_tensor(3, dtype=cygrad.float64, device="cpu", requires_grad=True)
    assert t.requires_grad and t.is_leaf
    with pytest.raises(TypeError):
        make_tensor(3, dtype=cygrad.float32)
    assert not math.isnan(make_tensor(1, dtype=cygrad.float32, device="cpu").item())


def test_empty_memory_format():
    for shape, name in [((2, 3, 4, 5), "channels_last"),
                        ((2, 3, 4, 5, 6), "channels_last_3d"),
                        ((2, 3), "contiguous_format")]:
        strides = [m.empty(*shape, memory_format=getattr(m, name)).stride()
                   for m in (cygrad, torch)]
        assert strides[0] == strides[1]
    for name in ("channels_last", "preserve_format"):
        msgs = []
        for m in (cygrad, torch):
            with pytest.raises(RuntimeError) as info:
                m.empty(2, 3, memory_format=getattr(m, name))
            msgs.append(str(info.value))
        assert msgs[0] == msgs[1]


@pytest.mark.parametrize("shape", [(2, 1, 4, 5), (1, 3, 4, 5), (2, 3, 1, 1),
                                   (0, 3, 4, 5), (2, 3, 0, 5)], ids=str)
def test_channels_last_edge_shapes(shape):
    a = np.zeros(shape)
    res = []
    for m in (cygrad, torch):
        x, fmt = m.tensor(a), m.channels_last
        res.append((x.is_contiguous(memory_format=fmt),
                    x.contiguous(memory_format=fmt).stride(),
                    x.transpose(1, 2).is_contiguous(memory_format=fmt),
                    m.empty_like(x, memory_format=fmt).stride(),
                    m.empty(*shape, memory_format=fmt).stride()))
    assert res[0] == res[1]
