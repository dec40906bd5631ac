"""Containers and Module structure: ModuleDict, ParameterList/Dict, hooks
(forward, pre, full backward), lookups, buffers, lazy layers, Bilinear,
PixelShuffle, DataParallel, whole-module save/load, reprs as torch's, and
the module paths scripts import from."""

import collections
import io
import pickle

import numpy as np
import pytest

import cygrad
import cygrad.nn.functional as F
from cygrad import nn

torch = pytest.importorskip("torch")


def _copy(tm, cm):
    cm.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})


# -- reprs --------------------------------------------------------------------

REPRS = [
    "Linear(3, 4)", "Linear(3, 4, bias=False)", "Bilinear(2, 3, 4)", "Identity(3, a=1)",
    "Flatten()", "Unflatten(1, (2, 3))", "PixelShuffle(2)", "PixelUnshuffle(3)",
    "LazyLinear(5)", "Conv2d(1, 8, 3, padding=1)", "Conv1d(2, 4, 3, stride=2, bias=False)",
    "ConvTranspose2d(2, 3, 3, stride=2, output_padding=1)", "MaxPool2d(2)",
    "AvgPool2d(3, stride=1, padding=1)", "AdaptiveAvgPool2d((1, 1))", "BatchNorm1d(4)",
    "BatchNorm2d(3, momentum=None, affine=False)", "LayerNorm((4, 5))", "GroupNorm(2, 4)",
    "RMSNorm(4)", "Dropout(0.1)", "Embedding(10, 3, padding_idx=0)", "Upsample(scale_factor=2)",
    "EmbeddingBag(5, 2, mode='max')", "MSELoss()", "CrossEntropyLoss()",
    "BCEWithLogitsLoss()", "NLLLoss()", "LazyConv2d(4, 3)", "LazyBatchNorm1d()",
    "ModuleDict({'a': nn.ReLU(), 'b': nn.Linear(1, 2)})",
    "ModuleList([nn.Linear(2, 2), nn.Linear(2, 2), nn.Tanh()])",
    "Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), "
    "nn.Linear(8, 2))",
    "DataParallel(nn.Linear(2, 2))",
]


@pytest.mark.parametrize("expr", REPRS)
def test_repr_is_torchs(expr):
    want = eval("nn." + expr, {"nn": torch.nn})
    got = eval("nn." + expr, {"nn": nn})
    assert repr(got) == repr(want)


def test_parameter_container_reprs():
    assert repr(nn.ParameterList([nn.Parameter(cygrad.ones(3, 4))])) == repr(
        torch.nn.ParameterList([torch.nn.Parameter(torch.ones(3, 4))]))
    assert repr(nn.ParameterDict({"x": cygrad.ones(3)})) == repr(
        torch.nn.ParameterDict({"x": torch.ones(3)}))


def test_nested_repr_matches_torch():
    def build(nn):
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(4, 4), nn.GELU())
                                             for _ in range(3)])
                self.heads = nn.ModuleDict({"cls": nn.Linear(4, 2)})
                self.drop = nn.Dropout(0.1)
        return Net()
    assert repr(build(nn)) == repr(build(torch.nn))


# -- containers ---------------------------------------------------------------

def test_module_dict():
    d = nn.ModuleDict({"a": nn.Linear(2, 3)})
    d["b"] = nn.ReLU()
    d.update([("c", nn.Tanh())])
    assert list(d) == ["a", "b", "c"] and "b" in d and len(d) == 3
    assert [k for k, _ in d.named_parameters()] == ["a.weight", "a.bias"]
    assert isinstance(d.pop("b"), nn.ReLU) and list(d.keys()) == ["a", "c"]
    with pytest.raises(TypeError):
        d.update(3)


def test_parameter_list_and_dict():
    pl = nn.ParameterList([cygrad.ones(2), nn.Parameter(cygrad.zeros(3))])
    assert isinstance(pl[0], nn.Parameter) and pl[0].requires_grad
    pl.append(cygrad.ones(1))
    assert [k for k, _ in pl.named_parameters()] == ["0", "1", "2"] and len(pl) == 3
    pd = nn.ParameterDict({"y": cygrad.ones(2)})
    pd["z"] = nn.Parameter(cygrad.ones(1))
    assert list(pd.keys()) == ["y", "z"]
    assert [k for k, _ in pd.named_parameters()] == ["y", "z"]
    del pd["y"]
    assert list(pd) == ["z"] and list(dict(pd.named_parameters())) == ["z"]


def test_sequential_edits_as_torch():
    for lib in (nn, torch.nn):
        s = lib.Sequential(lib.ReLU(), lib.Tanh(), lib.Sigmoid())
        del s[1]
        s.insert(0, lib.Identity())
        s.append(lib.ReLU())
        names = [type(m).__name__ for m in s]
        keys = [k for k, _ in s.named_children()]
        if lib is nn:
            mine = (names, keys)
        else:
            assert mine == (names, keys)


# -- structure ----------------------------------------------------------------

def _net(lib):
    m = lib.Sequential(collections.OrderedDict(
        [("conv", lib.Conv2d(1, 2, 3)), ("bn", lib.BatchNorm2d(2)),
         ("head", lib.Sequential(lib.Flatten(), lib.Linear(8, 3)))]))
    return m


def test_lookups_named_modules_buffers():
    m, t = _net(nn), _net(torch.nn)
    assert [n for n, _ in m.named_modules()] == [n for n, _ in t.named_modules()]
    assert [n for n, _ in m.named_modules(prefix="root")] == [
        n for n, _ in t.named_modules(prefix="root")]
    assert [n for n, _ in m.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert m.get_submodule("head.1") is m.head[1]
    assert m.get_parameter("head.1.bias") is m.head[1].bias
    assert m.get_buffer("bn.running_mean") is m.bn.running_mean
    with pytest.raises(AttributeError, match="has no attribute `nope`"):
        m.get_submodule("head.nope")
    with pytest.raises(AttributeError, match="is not an nn.Parameter"):
        m.get_parameter("bn.running_mean")
    shared = nn.Linear(2, 2)
    s = nn.Sequential(shared, shared)
    assert len(list(s.named_modules())) == 2
    assert len(list(s.named_modules(remove_duplicate=False))) == 3


def test_buffers_persistent_and_zero_grad_and_apply_and_to_empty():
    m = nn.Linear(2, 2)
    m.register_buffer("keep", cygrad.ones(2))
    m.register_buffer("scratch", cygrad.ones(2), persistent=False)
    assert list(m.state_dict()) == ["weight", "bias", "keep"]
    assert [n for n, _ in m.named_buffers()] == ["keep", "scratch"]
    m(cygrad.ones(1, 2)).sum().backward()
    m.zero_grad(set_to_none=False)
    assert np.all(m.weight.grad.numpy() == 0)
    m.zero_grad()
    assert m.weight.grad is None
    seen = []
    _net(nn).apply(lambda mod: seen.append(type(mod).__name__))
    assert seen[-1] == "Sequential" and seen[0] == "Conv2d"
    w = m.weight
    m.to_empty(device="cpu")
    assert m.weight is w and m.weight.shape == (2, 2)
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())


# -- hooks --------------------------------------------------------------------

def _hook_run(lib):
    tensor = torch.tensor if lib is torch.nn else cygrad.tensor
    m = lib.Linear(3, 2)
    with (torch.no_grad() if lib is torch.nn else cygrad.no_grad()):
        m.weight.copy_(tensor(np.arange(6.0).reshape(2, 3) / 10))
        m.bias.fill_(0.5)
    log = []
    h1 = m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
    m.register_forward_pre_hook(lambda mod, args, kw: log.append(("pre-kw", kw))
                                or None, with_kwargs=True)
    m.register_forward_hook(lambda mod, args, out: out + 1)
    m.register_forward_hook(lambda mod, args, out: log.append("first"), prepend=True)
    m.register_full_backward_pre_hook(lambda mod, go: (go[0] * 3,))
    m.register_full_backward_hook(
        lambda mod, gi, go: log.append(("bw", [None if g is None else
                                               g.detach().numpy().round(6).tolist()
                                               for g in gi + go])) or None)
    x = (torch if lib is torch.nn else cygrad).ones(1, 3, requires_grad=True)
    out = m(x)
    out.sum().backward()
    h1.remove()
    out2 = m(x)
    return (out.detach().numpy().round(6).tolist(), x.grad.numpy().round(6).tolist(),
            out2.detach().numpy().round(6).tolist(), log)


def test_hooks_as_torch():
    mine, theirs = _hook_run(nn), _hook_run(torch.nn)
    assert mine == theirs


def test_backward_hook_replaces_grad_input_and_no_input_grad():
    for lib, mk in ((nn, cygrad.ones), (torch.nn, torch.ones)):
        m = lib.Linear(2, 2)
        m.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 0,))
        x = mk(1, 2, requires_grad=True)
        m(x).sum().backward()
        assert np.all(x.grad.numpy() == 0)
        calls = []
        m2 = lib.Linear(2, 2)
        m2.register_full_backward_hook(lambda mod, gi, go: calls.append(gi))
        with pytest.warns(UserWarning, match="Full backward hook is firing"):
            m2(mk(1, 2)).sum().backward()
        assert calls == [(None,)]


# -- layers -------------------------------------------------------------------

@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-10), (np.float32, 1e-5)])
def test_bilinear_matches_torch(dtype, tol):
    tdt = getattr(torch, np.dtype(dtype).name)
    tm, cm = torch.nn.Bilinear(3, 4, 5, dtype=tdt), nn.Bilinear(3, 4, 5, dtype=dtype)
    _copy(tm, cm)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 6, 3)).astype(dtype), rng.standard_normal(
        (2, 6, 4)).astype(dtype)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    ca, cb = cygrad.tensor(a, requires_grad=True), cygrad.tensor(b, requires_grad=True)
    to, co = tm(ta, tb), cm(ca, cb)
    np.testing.assert_allclose(co.detach().numpy(), to.detach().numpy(), atol=tol,
                               rtol=tol)
    (to ** 2).sum().backward()
    (co ** 2).sum().backward()
    for c, t in ((ca, ta), (cb, tb), (cm.weight, tm.weight), (cm.bias, tm.bias)):
        np.testing.assert_allclose(c.grad.numpy(), t.grad.numpy(), atol=tol * 10,
                                   rtol=tol)
    w = nn.Bilinear(100, 4, 5).weight.detach().numpy()
    assert abs(w).max() <= 0.1 and abs(w).max() > 0.09     # U(-1/sqrt(in1), ..)


def test_pixel_shuffle_roundtrip_and_torch():
    x = np.arange(2 * 8 * 3 * 2, dtype=np.float64).reshape(2, 8, 3, 2)
    np.testing.assert_array_equal(
        F.pixel_shuffle(cygrad.tensor(x), 2).numpy(),
        torch.nn.functional.pixel_shuffle(torch.tensor(x), 2).numpy())
    y = np.arange(1 * 2 * 6 * 4, dtype=np.float64).reshape(1, 2, 6, 4)
    np.testing.assert_array_equal(
        nn.PixelUnshuffle(2)(cygrad.tensor(y)).numpy(),
        torch.nn.PixelUnshuffle(2)(torch.tensor(y)).numpy())
    c = cygrad.tensor(x, requires_grad=True)
    F.pixel_unshuffle(F.pixel_shuffle(c, 2), 2).sum().backward()
    assert np.all(c.grad.numpy() == 1)
    with pytest.raises(RuntimeError, match="divisible by the square"):
        F.pixel_shuffle(cygrad.ones(1, 3, 2, 2), 2)
    with pytest.raises(RuntimeError, match="at least 3 dimensions"):
        F.pixel_shuffle(cygrad.ones(3, 2), 2)


def test_lazy_layers_materialise_like_torch():
    for lazy, args, x in (("LazyLinear", (3,), np.ones((2, 5))),
                          ("LazyConv2d", (4, 3), np.ones((2, 5, 6, 6))),
                          ("LazyBatchNorm2d", (), np.ones((2, 5, 6, 6))),
                          ("LazyBatchNorm1d", (), np.ones((2, 5)))):
        tm, cm = getattr(torch.nn, lazy)(*args), getattr(nn, lazy)(*args)
        tm(torch.tensor(x, dtype=torch.float32))
        cm(cygrad.tensor(x, dtype=cygrad.float32))
        assert type(cm).__name__ == type(tm).__name__ and repr(cm) == repr(tm)
        assert {k: tuple(v.shape) for k, v in cm.state_dict().items()} == {
            k: tuple(v.shape) for k, v in tm.state_dict().items()}


LAZIES = [("LazyLinear", (3,), (2, 5)), ("LazyConv2d", (4, 3), (2, 5, 6, 6)),
          ("LazyConvTranspose1d", (4, 3), (2, 5, 6)), ("LazyBatchNorm1d", (), (2, 5)),
          ("LazyInstanceNorm2d", (), (2, 5, 6, 6))]


@pytest.mark.parametrize("lazy, args, shape", LAZIES)
def test_lazy_layers_hold_uninitialized_tensors_until_their_first_call(
        lazy, args, shape):
    tm, cm = getattr(torch.nn, lazy)(*args), getattr(nn, lazy)(*args)
    kinds = {k: type(v).__name__ for k, v in cm.state_dict(keep_vars=True).items()}
    assert kinds == {k: type(v).__name__
                     for k, v in tm.state_dict(keep_vars=True).items()}
    assert cm.has_uninitialized_params() == tm.has_uninitialized_params()
    for name, p in cm.named_parameters():
        assert nn.parameter.is_lazy(p) and repr(p) == "<UninitializedParameter>"
        assert isinstance(p, nn.Parameter) and p.requires_grad and p.dtype == cygrad.float32
        with pytest.raises(RuntimeError, match="Can't access the shape of an "
                           "uninitialized parameter"):
            p.shape
        with pytest.raises(ValueError, match="uninitialized parameter in sum"):
            p.sum()
        with pytest.raises(ValueError, match="uninitialized parameter in __add__"):
            p + 1
    params = list(cm.parameters())
    opt = cygrad.optim.SGD(params, lr=0.1)         # before the shapes are known
    cm.double()
    cm(cygrad.ones(*shape, dtype=cygrad.float64)).sum().backward()
    opt.step()
    assert [p is q for p, q in zip(params, cm.parameters())] == [True] * len(params)
    tm.double()(torch.ones(*shape, dtype=torch.float64))
    assert type(cm).__name__ == type(tm).__name__
    for (k, v), (tk, tv) in zip(cm.state_dict(keep_vars=True).items(),
                                tm.state_dict(keep_vars=True).items()):
        assert k == tk and type(v).__name__ == type(tv).__name__
        assert tuple(v.shape) == tuple(tv.shape) and str(v.dtype) == str(tv.dtype)[6:]


def test_a_lazy_layer_loads_a_state_dict_before_its_first_call():
    src = nn.Linear(5, 3)
    lazy = nn.LazyLinear(3)
    lazy.load_state_dict(src.state_dict())
    assert type(lazy).__name__ == "LazyLinear" and not lazy.has_uninitialized_params()
    x = cygrad.randn(2, 5)
    np.testing.assert_array_equal(lazy(x).detach().numpy(), src(x).detach().numpy())
    assert type(lazy) is nn.Linear
    bn = nn.LazyBatchNorm1d()
    bn.load_state_dict(nn.BatchNorm1d(4).state_dict())
    assert type(bn.running_mean) is cygrad.Tensor and bn.running_mean.shape == (4,)
    with pytest.raises(RuntimeError, match="size mismatch for weight"):
        nn.Linear(2, 3).load_state_dict(nn.LazyLinear(3).state_dict())


def test_uninitialized_tensors_materialize_in_place():
    p = nn.parameter.UninitializedParameter(requires_grad=False, dtype=cygrad.float64)
    p.materialize((2, 3))
    assert type(p) is nn.Parameter and p.shape == (2, 3) and not p.requires_grad
    assert p.dtype == cygrad.float64 and not nn.parameter.is_lazy(p)
    b = nn.parameter.UninitializedBuffer()
    assert repr(b) == "<UninitializedBuffer>" and not b.requires_grad
    b.materialize(4)
    assert isinstance(b, cygrad.Tensor) and b.shape == (4,)


def test_data_parallel_passes_through():
    inner = nn.Linear(2, 3)
    dp = nn.DataParallel(inner)
    assert dp.module is inner
    x = cygrad.ones(4, 2)
    np.testing.assert_array_equal(dp(x).detach().numpy(), inner(x).detach().numpy())
    assert list(dp.state_dict()) == ["module.weight", "module.bias"]
    with pytest.raises(AssertionError):
        nn.DataParallel(inner, device_ids=[0])


# -- whole-module save / load --------------------------------------------------

class UserNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.GELU())
        self.emb = nn.Embedding(5, 2, padding_idx=0)
        self.fc = nn.Linear(2, 3)
        self.fc2 = self.fc                       # shared: one module when loaded
        self.register_buffer("scratch", cygrad.ones(1), persistent=False)

    def forward(self, x):
        return self.fc(self.body(x).mean((2, 3)))


def test_save_and_load_whole_module():
    m = UserNet()
    m.eval()
    buf = io.BytesIO()
    cygrad.save(m, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="UserNet.*add_safe_globals"):
        cygrad.load(buf)
    buf.seek(0)
    with cygrad.serialization.safe_globals([UserNet]):
        m2 = cygrad.load(buf)
    assert type(m2) is UserNet and m2.fc2 is m2.fc and not m2.training
    x = cygrad.randn(2, 1, 5, 5)
    np.testing.assert_array_equal(m2(x).detach().numpy(), m(x).detach().numpy())
    assert list(m2.state_dict()) == list(m.state_dict())
    assert m2.emb.padding_idx == 0 and isinstance(m2.fc.weight, nn.Parameter)
    buf.seek(0)
    assert type(cygrad.load(buf, weights_only=False)) is UserNet
    plain = io.BytesIO()
    cygrad.save(nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.2)), plain)
    plain.seek(0)
    assert repr(cygrad.load(plain)) == repr(nn.Sequential(nn.Linear(2, 2),
                                                          nn.Dropout(0.2)))
    h = m.register_forward_hook(lambda *a: None)
    with pytest.raises(TypeError, match="hooks"):
        cygrad.save(m, io.BytesIO())
    h.remove()
    cygrad.save(m, io.BytesIO())


def _double(x):
    return 2 * x


class Holder(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def test_whole_modules_keep_the_functions_their_layers_hold():
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=F.gelu,
                                       batch_first=True)
    buf = io.BytesIO()
    cygrad.save(layer, buf)
    buf.seek(0)
    back = cygrad.load(buf)
    assert back.activation is F.gelu
    x = cygrad.randn(2, 3, 8)
    np.testing.assert_array_equal(back(x).detach().numpy(), layer(x).detach().numpy())
    for fn in (cygrad.tanh, F.relu):                 # compiled and Python functions
        buf = io.BytesIO()
        cygrad.save(Holder(fn), buf)
        buf.seek(0)
        with cygrad.serialization.safe_globals([Holder]):
            assert cygrad.load(buf).fn is fn
    buf = io.BytesIO()
    cygrad.save(Holder(_double), buf)
    buf.seek(0)
    with cygrad.serialization.safe_globals([Holder]), pytest.raises(
            pickle.UnpicklingError, match="_double"):
        cygrad.load(buf)
    buf.seek(0)
    with cygrad.serialization.safe_globals([Holder, _double]):
        assert cygrad.load(buf).fn is _double
    buf.seek(0)
    assert cygrad.load(buf, weights_only=False).fn is _double
    with pytest.raises(TypeError, match="lambdas or nested functions"):
        cygrad.save(Holder(lambda x: x), io.BytesIO())


def test_module_paths_scripts_import():
    from cygrad.nn.modules.activation import GELU, ReLU
    from cygrad.nn.modules.container import ModuleDict, Sequential
    from cygrad.nn.modules.conv import Conv2d, LazyConv2d
    from cygrad.nn.modules.dropout import Dropout
    from cygrad.nn.modules.linear import Linear, NonDynamicallyQuantizableLinear
    from cygrad.nn.modules.loss import CrossEntropyLoss
    from cygrad.nn.modules.normalization import LayerNorm
    from cygrad.nn.modules.pooling import MaxPool2d
    from cygrad.nn.modules.sparse import Embedding
    from cygrad.utils.hooks import RemovableHandle
    assert issubclass(NonDynamicallyQuantizableLinear, Linear)
    assert nn.Linear is Linear


@pytest.mark.parametrize("path", [
    "nn.modules.batchnorm._BatchNorm", "nn.modules.batchnorm._NormBase",
    "nn.modules.batchnorm.BatchNorm2d", "nn.modules.batchnorm.SyncBatchNorm",
    "nn.modules.utils._pair", "nn.modules.utils._triple", "nn.modules.utils._ntuple",
    "nn.modules.module.Module", "nn.modules.activation.MultiheadAttention",
    "nn.modules.activation.NonDynamicallyQuantizableLinear",
    "nn.modules.distance.PairwiseDistance", "nn.modules.channelshuffle.ChannelShuffle",
    "nn.common_types._size_2_t", "nn.parameter.UninitializedParameter",
])
def test_torch_module_paths_exist_after_import(path):
    for root in (torch, cygrad):
        obj = root
        for part in path.split("."):
            obj = getattr(obj, part)


def test_norm_base_classes_tell_batch_from_instance_norm_as_torch():
    for name in ("BatchNorm1d", "BatchNorm2d", "InstanceNorm1d", "InstanceNorm2d",
                 "SyncBatchNorm", "LazyBatchNorm2d", "LazyInstanceNorm2d"):
        args = () if name.startswith("Lazy") else (3,)
        t, c = getattr(torch.nn, name)(*args), getattr(nn, name)(*args)
        for base in ("_BatchNorm", "_NormBase"):
            assert isinstance(c, getattr(nn.modules.batchnorm, base)) == isinstance(
                t, getattr(torch.nn.modules.batchnorm, base)), (name, base)
    seq = nn.Sequential(nn.InstanceNorm2d(2, track_running_stats=True), nn.BatchNorm2d(2))
    out = nn.SyncBatchNorm.convert_sync_batchnorm(seq)
    assert [type(m).__name__ for m in out] == ["InstanceNorm2d", "SyncBatchNorm"]


@pytest.mark.parametrize("fn, args", [
    ("_pair", (3,)), ("_pair", ((1, 2),)), ("_single", ([4],)), ("_triple", (2,)),
    ("_quadruple", (0,)), ("_reverse_repeat_tuple", ((1, 2, 3), 2)),
    ("_list_with_default", ((None, 7), [1, 2, 3, 4])), ("_list_with_default", (5, [1])),
])
def test_layer_argument_helpers_match_torch(fn, args):
    ours = getattr(nn.modules.utils, fn)(*args)
    assert ours == getattr(torch.nn.modules.utils, fn)(*args)
