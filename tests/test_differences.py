"""Behaviours where cygrad used to differ from torch (issue 17, item 7),
each checked against torch on the same inputs, or against torch's observed
result where torch is not installed."""

import warnings

import numpy as np
import pytest

import cygrad
import cygrad.nn as nn
import cygrad.nn.functional as F

try:
    import torch
except ImportError:  # the closed forms below still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


# --- F.linear ---------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(3,), (2, 3), (4, 2, 3)])
def test_linear_1d_weight_is_matmul(shape):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(shape), rng.standard_normal(3)
    xt = cygrad.tensor(x, requires_grad=True)
    wt = cygrad.tensor(w, requires_grad=True)
    out = F.linear(xt, wt)
    assert tuple(out.shape) == shape[:-1]
    np.testing.assert_allclose(_np(out), x @ w, rtol=1e-12)
    out.sum().backward()
    np.testing.assert_allclose(_np(wt.grad), x.reshape(-1, 3).sum(0), rtol=1e-12)


def test_linear_1d_weight_with_bias():
    out = F.linear(cygrad.tensor([1.0, 2.0, 3.0]), cygrad.tensor([1.0, 0.0, 2.0]),
                   cygrad.tensor(1.0))
    assert out.item() == 8.0
    with pytest.raises(RuntimeError, match="mat2 must be a matrix"):
        F.linear(cygrad.ones(2, 3), cygrad.ones(3), cygrad.ones(2))


@needs_torch
def test_linear_node_names_follow_torch():
    x = cygrad.ones(2, 3, requires_grad=True)
    w = cygrad.ones(4, 3)
    assert type(F.linear(x, w).grad_fn).__name__ == "MmBackward0"
    assert type(F.linear(x, w, cygrad.ones(4)).grad_fn).__name__ == "AddmmBackward0"


LINEAR_INPUTS = {
    "1d": lambda m: m.ones(3, requires_grad=True),
    "2d": lambda m: m.ones(2, 3, requires_grad=True) * 1,
    "3d": lambda m: m.ones(4, 2, 3, requires_grad=True),
    "4d": lambda m: m.ones(5, 4, 2, 3),
    "3d_strided": lambda m: m.ones(2, 4, 3).transpose(0, 1),
}


@needs_torch
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", sorted(LINEAR_INPUTS))
def test_linear_result_node_prints_as_torch(case, bias):
    """print(model(x)) shows torch's grad_fn: ViewBackward0 for an n-d input
    (UnsafeViewBackward0 without a bias), and a 2-D addmm lists the bias's
    node first (``loss.grad_fn.next_functions[0][0]`` walks)."""
    seen = []
    for m in (cygrad, torch):
        w = m.ones(4, 3, requires_grad=True)
        b = m.ones(4, requires_grad=True) if bias else None
        out = m.nn.functional.linear(LINEAR_INPUTS[case](m), w, b)
        first = out.grad_fn.next_functions[0][0]
        seen.append((out.grad_fn.name(), str(out).split("grad_fn=")[1],
                     repr(first).split(" object")[0] if case == "2d" else None))
    assert seen[0] == seen[1]


# --- cross_entropy ----------------------------------------------------------------


@pytest.mark.parametrize("dtype,name", [("int32", "Int"), ("int16", "Short"),
                                        ("int8", "Char"), ("bool", "Bool")])
def test_cross_entropy_refuses_other_integer_targets(dtype, name):
    x = cygrad.randn(2, 3)
    t = cygrad.from_numpy(np.array([0, 1]).astype(dtype))
    msg = f"expected target dtype to be Long or Byte, but got {name}"
    with pytest.raises(RuntimeError, match=msg):
        F.cross_entropy(x, t)


def test_cross_entropy_uint8_target_and_list_target():
    x = cygrad.tensor([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]])
    a = F.cross_entropy(x, cygrad.tensor([0, 2]))
    b = F.cross_entropy(x, cygrad.from_numpy(np.array([0, 2], np.uint8)))
    assert a.item() == b.item()
    with pytest.raises(TypeError, match="must be Tensor, not list"):
        F.cross_entropy(x, [0, 2])


CE_CASES = [
    dict(label_smoothing=0.1),
    dict(label_smoothing=0.1, weight=[1.0, 2.0, 3.0]),
    dict(label_smoothing=0.1, reduction="none"),
    dict(label_smoothing=0.3, reduction="sum", weight=[1.0, 2.0, 3.0], ignore=True),
    dict(label_smoothing=0.3, weight=[1.0, 2.0, 3.0], ignore=True),
    dict(label_smoothing=0.2, ignore=True),
    dict(label_smoothing=0.2, probs=True),
    dict(label_smoothing=0.2, probs=True, weight=[0.5, 1.0, 2.0]),
    dict(size_average=False),
    dict(reduce=False),
    dict(size_average=True, reduce=True),
]


@needs_torch
@pytest.mark.parametrize("case", CE_CASES, ids=str)
def test_cross_entropy_options_match_torch(case):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 3))
    tgt = np.array([0, 2, 1, 1, 0])
    if case.get("ignore"):
        tgt[1] = -100
    probs = np.exp(rng.standard_normal((5, 3)))
    probs /= probs.sum(1, keepdims=True)
    kw = {k: v for k, v in case.items() if k not in ("ignore", "probs", "weight")}
    outs, grads = [], []
    for lib in (cygrad, torch):
        xt = lib.tensor(x, requires_grad=True)
        target = lib.tensor(probs if case.get("probs") else tgt)
        if "weight" in case:
            kw["weight"] = lib.tensor(case["weight"], dtype=lib.float64)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = lib.nn.functional.cross_entropy(xt, target, **kw)
        out.sum().backward()
        outs.append(_np(out))
        grads.append(_np(xt.grad))
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-14)


def test_cross_entropy_label_smoothing_closed_form():
    x = np.array([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]])
    eps = 0.1
    logp = x - np.log(np.exp(x).sum(1, keepdims=True))
    t = np.array([0, 2])
    want = ((1 - eps) * -logp[[0, 1], t] + eps / 3 * -logp.sum(1)).mean()
    got = F.cross_entropy(cygrad.tensor(x), cygrad.tensor(t), label_smoothing=eps)
    np.testing.assert_allclose(got.item(), want, rtol=1e-12)
    with pytest.raises(RuntimeError, match="label_smoothing must be between"):
        F.cross_entropy(cygrad.tensor(x), cygrad.tensor(t), label_smoothing=1.5)


def test_cross_entropy_loss_module_options():
    x = cygrad.tensor([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]])
    t = cygrad.tensor([0, 2])
    m = nn.CrossEntropyLoss(cygrad.tensor([1.0, 2.0, 3.0]))     # weight positional
    assert list(dict(m.named_buffers())) == ["weight"]
    with pytest.warns(UserWarning, match="size_average and reduce"):
        m = nn.CrossEntropyLoss(size_average=False)
    assert m.reduction == "sum"
    np.testing.assert_allclose(m(x, t).item(), 13.446130, rtol=1e-6)   # torch's value
    assert repr(nn.CrossEntropyLoss(reduction="sum")) == "CrossEntropyLoss()"
    np.testing.assert_allclose(
        nn.CrossEntropyLoss(label_smoothing=0.1)(x, t).item(), 6.3897, rtol=1e-4)


# --- relu / softmax ---------------------------------------------------------------


def test_relu_inplace():
    x = cygrad.tensor([[1.0, -2.0], [-3.0, 4.0]])
    y = F.relu(x, inplace=True)
    assert y is x and x.tolist() == [[1.0, 0.0], [0.0, 4.0]]
    x = cygrad.tensor([-1.0, 2.0])
    assert F.relu_(x) is x and x.tolist() == [0.0, 2.0]
    m = nn.ReLU(inplace=True)
    assert repr(m) == "ReLU(inplace=True)" and repr(nn.ReLU()) == "ReLU()"
    a = cygrad.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    h = a * 1
    out = m(h)
    assert out is h
    out.sum().backward()
    assert a.grad.tolist() == [0.0, 0.0, 1.0]       # relu'(0) = 0
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        F.relu(cygrad.ones(2, requires_grad=True), inplace=True)


@pytest.mark.parametrize("shape,dim", [((3,), 0), ((2, 3), 1), ((2, 2, 2), 0),
                                       ((2, 2, 2, 2), 1)])
def test_softmax_implicit_dim_as_torch(shape, dim):
    x = cygrad.randn(*shape)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        got = F.softmax(x)
    np.testing.assert_array_equal(_np(got), _np(F.softmax(x, dim)))
    with pytest.warns(UserWarning, match="Implicit dimension choice for log_softmax"):
        got = F.log_softmax(x)
    np.testing.assert_array_equal(_np(got), _np(F.log_softmax(x, dim)))


def test_softmax_signature_and_integer_input():
    x = cygrad.randn(2, 3)
    # torch's third positional parameter is _stacklevel, the fourth dtype
    np.testing.assert_array_equal(_np(F.softmax(x, 1, 3)), _np(F.softmax(x, 1)))
    assert F.softmax(x, 1, 3, cygrad.float64).dtype == cygrad.float64
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        F.softmax(cygrad.tensor([1, 2]), 0)
    assert F.softmax(cygrad.tensor([1, 2]), 0, dtype=cygrad.float32).dtype == \
        cygrad.float32


# --- seeds, grad modes, requires_grad ---------------------------------------------


@pytest.mark.parametrize("seed", [-1, -2 ** 63, 2 ** 64 - 1, 0, 7, 1.5, "3", True])
def test_manual_seed_accepts_torch_range(seed):
    cygrad.manual_seed(seed)
    assert cygrad.initial_seed() == int(seed) % 2 ** 64
    cygrad.rand(2)


def test_manual_seed_negative_is_modulo_2_64():
    cygrad.manual_seed(-1)
    a = cygrad.rand(3).tolist()
    cygrad.manual_seed(2 ** 64 - 1)
    assert cygrad.rand(3).tolist() == a
    for bad in (2 ** 64, -(2 ** 63) - 1):
        with pytest.raises(ValueError, match="Overflow"):
            cygrad.manual_seed(bad)
    with pytest.raises(TypeError):
        cygrad.manual_seed(None)


def test_inference_mode_flag():
    with cygrad.inference_mode():
        assert not cygrad.is_grad_enabled() and cygrad.is_inference_mode_enabled()
        with cygrad.inference_mode(False):
            assert cygrad.is_grad_enabled()
            assert not cygrad.is_inference_mode_enabled()
        with cygrad.inference_mode(mode=False):
            assert cygrad.is_grad_enabled()
    with cygrad.no_grad():
        with cygrad.inference_mode(False):    # torch turns grad mode on here
            assert cygrad.is_grad_enabled()
        assert not cygrad.is_grad_enabled()
    assert cygrad.is_grad_enabled() and not cygrad.is_inference_mode_enabled()

    @cygrad.inference_mode
    def f():
        return cygrad.is_grad_enabled()

    @cygrad.inference_mode(False)
    def g():
        return cygrad.is_grad_enabled()

    assert f() is False and g() is True


def test_requires_grad_attribute_on_non_leaf_raises_both_ways():
    a = cygrad.ones(2, requires_grad=True)
    b = a * 2
    with pytest.raises(RuntimeError) as e:
        b.requires_grad = True
    assert str(e.value) == "you can only change requires_grad flags of leaf variables."
    with pytest.raises(RuntimeError, match="var_no_grad = var.detach()"):
        b.requires_grad = False
    assert b.requires_grad_(True) is b            # the method stays a no-op
    with pytest.raises(RuntimeError, match="leaf variables"):
        b.requires_grad_(False)
    c = cygrad.ones(2) * 2                        # a leaf made by an op
    c.requires_grad = True
    assert c.requires_grad and c.is_leaf


# --- RMSprop ----------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize("kw", [
    {"lr": 0.01, "alpha": 0.9, "eps": 1e-6},
    {"lr": 0.01, "alpha": 0.9, "eps": 1e-6, "centered": True},
], ids=str)
def test_rmsprop_short_memory_follows_torch(kw):
    rng = np.random.default_rng(0)
    p0 = rng.standard_normal((7, 5))
    a = rng.standard_normal((5, 5)) / 2

    def grad(x):
        return np.tanh(x @ a) + x / 10

    out = []
    for lib in (cygrad, torch):
        p = lib.tensor(p0.copy(), requires_grad=True)
        opt = lib.optim.RMSprop([p], **kw)
        traj = []
        for _ in range(100):
            p.grad = lib.tensor(grad(_np(p).copy()))
            opt.step()
            traj.append(_np(p).copy())
        out.append(np.array(traj))
    scale = np.abs(out[1]).max()
    assert np.abs(out[0] - out[1]).max() / scale <= 1e-12


# --- grad_fn names ----------------------------------------------------------------

NODE_CASES = {
    "mean": lambda y, lib: y.mean(),
    "mean_dim": lambda y, lib: y.mean(0),
    "sum": lambda y, lib: y.sum(),
    "sum_dim": lambda y, lib: y.sum(1),
    "select": lambda y, lib: y[0],
    "select_last": lambda y, lib: y[1:, 0],
    "slice": lambda y, lib: y[:, 1:],
    "slice_all": lambda y, lib: y[:],
    "none": lambda y, lib: y[None],
    "ellipsis": lambda y, lib: y[...],
    "add": lambda y, lib: y + y,
    "mul": lambda y, lib: y * 2,
    "sub": lambda y, lib: y - y,
    "div": lambda y, lib: y / y,
    "mm": lambda y, lib: y @ y,
    "view": lambda y, lib: y.view(4),
    "reshape": lambda y, lib: y.reshape(4),
    "flatten": lambda y, lib: y.flatten(),
    "t": lambda y, lib: y.t(),
    "T": lambda y, lib: y.T,
    "transpose": lambda y, lib: y.transpose(0, 1),
    "permute": lambda y, lib: y.permute(1, 0),
    "unsqueeze": lambda y, lib: y.unsqueeze(0),
    "squeeze_dim": lambda y, lib: y.unsqueeze(0).squeeze(0),
    "squeeze": lambda y, lib: y.unsqueeze(0).squeeze(),
    "cat": lambda y, lib: lib.cat([y, y]),
    "stack": lambda y, lib: lib.stack([y, y]),
    "exp": lambda y, lib: y.exp(),
    "tanh": lambda y, lib: y.tanh(),
    "relu": lambda y, lib: lib.nn.functional.relu(y),
    "sigmoid": lambda y, lib: y.sigmoid(),
    "softmax": lambda y, lib: lib.softmax(y, 1),
    "log_softmax": lambda y, lib: lib.log_softmax(y, 1),
    "cross_entropy": lambda y, lib: lib.nn.functional.cross_entropy(
        y, lib.tensor([0, 1])),
    "mse": lambda y, lib: lib.nn.functional.mse_loss(y, y.detach() + 1),
    "std": lambda y, lib: y.std(),
    "var": lambda y, lib: y.var(),
    "max": lambda y, lib: y.max(),
    "max_dim": lambda y, lib: y.max(0)[0],
    "where": lambda y, lib: lib.where(y > 2, y, y * 0),
    "clone": lambda y, lib: y.clone(),
    "expand": lambda y, lib: y[:, :1].expand(2, 3),
    "index": lambda y, lib: y[[0, 1]],
    "linear": lambda y, lib: lib.nn.functional.linear(y, y),
    "linear_bias": lambda y, lib: lib.nn.functional.linear(y, y, y[0]),
    "neg": lambda y, lib: -y,
    "pow": lambda y, lib: y ** 2,
    "rsub": lambda y, lib: 1 - y,
    "rdiv": lambda y, lib: 2 / y,
    "rpow": lambda y, lib: 2 ** y,
    "pow_tensor": lambda y, lib: y ** y,
    "pow_general": lambda y, lib: y ** 2.5,
    "sub": lambda y, lib: y - 1,
}


@needs_torch
@pytest.mark.parametrize("case", sorted(NODE_CASES))
def test_grad_fn_prints_as_torch(case):
    names = []
    for lib in (cygrad, torch):
        y = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        out = NODE_CASES[case](y, lib)
        names.append((out.grad_fn.name(), repr(out.grad_fn).split(" object")[0]))
    assert names[0] == names[1]


REFLECTED = {
    "rmul": lambda y: 2 * y, "radd": lambda y: 2 + y, "rsub": lambda y: 1 - y,
    "rpow": lambda y: 2 ** y, "mul": lambda y: y * 2, "sub": lambda y: y - 1,
    "tensors": lambda y: y * y.exp(),
}


@needs_torch
@pytest.mark.parametrize("case", sorted(REFLECTED))
def test_next_functions_list_the_tensor_first_as_torch(case):
    """``(2 * b).grad_fn.next_functions`` is ((b's node, 0), (None, 0)), and
    only (b's node, 0) for ``1 - b`` and ``2 ** b``: the autograd tutorial
    walks ``next_functions[0][0]`` down to the leaf."""
    seen = []
    for lib in (cygrad, torch):
        y = lib.tensor([1.0, 2.0], requires_grad=True).sin()
        nf = REFLECTED[case](y).grad_fn.next_functions
        seen.append([(None if f is None else f.name(), nr) for f, nr in nf])
    assert seen[0] == seen[1]


@needs_torch
@pytest.mark.parametrize("loss", ["nll_loss", "cross_entropy"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [(4,), (3, 4), (2, 4, 3), (2, 4, 3, 2)])
def test_class_loss_node_prints_as_torch(loss, reduction, shape):
    """``print(loss)`` shows NllLossBackward0 (NllLoss2DBackward0 for
    spatial inputs) although nll_loss is composed of tensor ops."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    t = rng.integers(0, 4, (shape[0],) + shape[2:] if len(shape) > 1 else ())
    names = []
    for lib in (cygrad, torch):
        xin = lib.tensor(x, requires_grad=True).log_softmax(0 if len(shape) == 1 else 1)
        out = getattr(lib.nn.functional, loss)(xin, lib.tensor(t), reduction=reduction)
        names.append(out.grad_fn.name())
    assert names[0] == names[1]


def test_grad_fn_repr_of_a_loss():
    y = cygrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    assert str(y.mean()) == "tensor(2.5000, grad_fn=<MeanBackward0>)"
    out = y[0]
    assert out.grad_fn.name() == "SelectBackward0"
    assert repr(out.grad_fn).startswith("<SelectBackward0 object at ")


# --- nn: default dtype, to(), parameter order --------------------------------------


def test_linear_follows_default_dtype():
    old = cygrad.get_default_dtype()
    try:
        cygrad.set_default_dtype(cygrad.float64)
        lin = nn.Linear(2, 3)
        assert lin.weight.dtype == cygrad.float64 and lin.bias.dtype == cygrad.float64
        assert lin(cygrad.ones(1, 2)).dtype == cygrad.float64
    finally:
        cygrad.set_default_dtype(old)
    assert nn.Linear(2, 3).weight.dtype == cygrad.float32
    assert nn.Linear(2, 3, dtype=cygrad.float64).weight.dtype == cygrad.float64
    assert nn.Linear(2, 3, device=cygrad.device("cpu")).weight.dtype == cygrad.float32


def test_module_to_cpu_keeps_parameters():
    lin = nn.Linear(2, 2)
    w = lin.weight
    assert lin.to("cpu") is lin and lin.weight is w
    assert lin.to(cygrad.device("cpu")) is lin
    assert lin.to("cpu", cygrad.float64).weight.dtype == cygrad.float64
    assert lin.weight is w


def test_reassigned_parameter_keeps_its_place():
    lin = nn.Linear(2, 3)
    lin.weight = nn.Parameter(cygrad.zeros(3, 2))
    assert [n for n, _ in lin.named_parameters()] == ["weight", "bias"]
    assert list(lin.state_dict()) == ["weight", "bias"]
    assert lin.weight.sum().item() == 0.0


def test_tied_weights_keep_order():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Linear(3, 4, bias=False)
            self.mid = nn.Linear(4, 4)
            self.out = nn.Linear(4, 3, bias=False)
            self.out.weight = nn.Parameter(cygrad.zeros(3, 4))
            self.mid = nn.Linear(4, 4)           # reassigning a module too

    m = Tied()
    assert [n for n, _ in m.named_parameters()] == [
        "emb.weight", "mid.weight", "mid.bias", "out.weight"]
    m.register_buffer("b", cygrad.ones(1))
    m.register_buffer("c", cygrad.ones(1))
    m.b = cygrad.zeros(1)
    m.register_buffer("b", cygrad.ones(2))
    assert [n for n, _ in m.named_buffers()] == ["b", "c"]


@needs_torch
def test_parameter_order_matches_torch():
    def build(lib):
        lin = lib.nn.Linear(2, 3)
        lin.weight = lib.nn.Parameter(lib.zeros(3, 2))
        seq = lib.nn.Sequential(lin, lib.nn.ReLU(), lib.nn.Linear(3, 1))
        seq[0] = lib.nn.Linear(2, 3)
        return [n for n, _ in seq.named_parameters()], list(lin.state_dict())

    assert build(cygrad) == build(torch)


# --- where -----------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize("args", [
    (1, 0), (1.0, 0), ("i", 0.5), ("i32", 5), ("x64", 1.0), (True, False),
    ("i", True), ("x", "x64"), ("x", "i"), ("i32", "i"), (2, "x"),
], ids=str)
def test_where_result_dtype_as_torch(args):
    def make(lib, a):
        if not isinstance(a, str):
            return a
        return {"x": lambda: lib.tensor([1.0, -2.0]),
                "x64": lambda: lib.tensor([1.0, -2.0], dtype=lib.float64),
                "i": lambda: lib.tensor([1, 2]),
                "i32": lambda: lib.tensor([1, 2], dtype=lib.int32)}[a]()

    outs = []
    for lib in (cygrad, torch):
        res = lib.where(lib.tensor([True, False]), *[make(lib, a) for a in args])
        outs.append((str(res.dtype).split(".")[-1], _np(res).tolist()))
    assert outs[0] == outs[1]


def test_where_condition_must_be_bool():
    x = cygrad.ones(3)
    with pytest.raises(RuntimeError, match="boolean tensor, but got a tensor with "
                                           "dtype Long"):
        cygrad.where(cygrad.tensor([1, 0, 1]), x, x)
    out = cygrad.where(cygrad.from_numpy(np.array([1, 0, 1], np.uint8)), x, 0.0)
    assert out.tolist() == [1.0, 0.0, 1.0]


# --- torch.Tensor, save/load arguments ----------------------------------------------


def test_legacy_tensor_constructor_cases():
    t = cygrad.tensor([1, 2])
    a = cygrad.Tensor(t)                       # an alias with t's dtype, as torch
    assert a.dtype == cygrad.int64 and np.shares_memory(a.numpy(), t.numpy())
    assert cygrad.Tensor([[1, 2]]).dtype == cygrad.float32
    assert tuple(cygrad.Tensor(2, 3).shape) == (2, 3)
    assert tuple(cygrad.Tensor().shape) == (0,)
    for bad in (2.5, True, np.float64(2.0)):
        with pytest.raises(TypeError, match="data must be a sequence"):
            cygrad.Tensor(bad)


def test_save_load_accept_torch_arguments(tmp_path):
    path = tmp_path / "x.pt"
    cygrad.save({"w": cygrad.ones(2)}, path, pickle_protocol=4,
                _use_new_zipfile_serialization=True)
    for loc in (None, "cpu", cygrad.device("cpu"), {"cuda:0": "cpu"}):
        out = cygrad.load(path, map_location=loc, weights_only=True)
        assert out["w"].tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="map_location"):
        cygrad.load(path, map_location="cuda")


def test_linear_bias_of_the_wrong_size_raises_runtime_error():
    with pytest.raises(RuntimeError, match="The expanded size of the tensor"):
        F.linear(cygrad.ones(2, 3), cygrad.ones(2, 3), cygrad.ones(3))
    assert tuple(F.linear(cygrad.ones(2, 3), cygrad.ones(2, 3),
                          cygrad.ones(2, 2)).shape) == (2, 2)
