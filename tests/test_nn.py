"""cygrad.nn: registration, traversal, state dicts, Linear, init, repr."""

import math

import numpy as np
import pytest

import cygrad
from cygrad import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.act = nn.Tanh()
        self.scale = nn.Parameter(cygrad.ones(4))
        self.register_buffer("count", cygrad.zeros(1))
        self.register_buffer("scratch", cygrad.zeros(2), persistent=False)
        self.not_a_param = cygrad.zeros(2)  # plain tensor attribute

    def forward(self, x):
        return self.act(self.fc(x)) * self.scale


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.head = nn.Sequential(nn.ReLU(), nn.Linear(4, 2))

    def forward(self, x):
        return self.head(self.block(x))


def test_parameter_is_a_leaf_that_requires_grad():
    p = nn.Parameter(cygrad.zeros(2, 3))
    assert isinstance(p, cygrad.Tensor)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    assert tuple(p.shape) == (2, 3)
    q = nn.Parameter(cygrad.zeros(2), requires_grad=False)
    assert not q.requires_grad
    assert "Parameter containing" in repr(p)


def test_registration_and_dotted_names():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == [
        "block.scale",
        "block.fc.weight",
        "block.fc.bias",
        "head.1.weight",
        "head.1.bias",
    ] or names == [
        "block.fc.weight",
        "block.fc.bias",
        "block.scale",
        "head.1.weight",
        "head.1.bias",
    ]
    assert len(list(net.parameters())) == 5
    assert [n for n, _ in net.named_children()] == ["block", "head"]
    assert [n for n, _ in net.named_modules()] == [
        "",
        "block",
        "block.fc",
        "block.act",
        "head",
        "head.0",
        "head.1",
    ]
    assert [n for n, _ in net.named_buffers()] == ["block.count", "block.scratch"]
    assert all(p.requires_grad for p in net.parameters())


def test_registration_order_follows_assignment():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.b = nn.Parameter(cygrad.zeros(1))
            self.a = nn.Parameter(cygrad.zeros(1))

    assert [n for n, _ in M().named_parameters()] == ["b", "a"]


def test_shared_parameter_listed_once():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, nn.ReLU(), lin)
    assert len(list(seq.parameters())) == 2


def test_reassign_and_errors():
    m = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="cannot assign"):
        m.weight = cygrad.zeros(2, 2)
    m.bias = None
    assert m.bias is None and len(list(m.parameters())) == 1
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = m.nope
    with pytest.raises(AttributeError, match="before Module.__init__"):

        class Bad(nn.Module):
            def __init__(self):
                self.w = nn.Parameter(cygrad.zeros(1))

        Bad()
    del m.weight
    assert list(m.parameters()) == []


def test_forward_backward_and_zero_grad():
    net = Net()
    out = net(cygrad.randn(5, 3))
    assert tuple(out.shape) == (5, 2)
    out.sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad(set_to_none=False)
    assert all(float(np.abs(p.grad.numpy()).max()) == 0 for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_train_eval():
    net = Net()
    assert net.training and net.block.fc.training
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())


def test_state_dict_roundtrip():
    cygrad.manual_seed(0)
    a, b = Net(), Net()
    sd = a.state_dict()
    assert list(sd) == [n for n, _ in a.named_parameters()][:0] + list(sd)
    assert "block.count" in sd and "block.scratch" not in sd
    assert all(not v.requires_grad for v in sd.values())
    result = b.load_state_dict(sd)
    assert result.missing_keys == [] and result.unexpected_keys == []
    x = cygrad.randn(4, 3)
    np.testing.assert_array_equal(a(x).detach().numpy(), b(x).detach().numpy())
    # the state dict shares storage with the parameters, as torch
    with cygrad.no_grad():
        a.block.fc.weight.fill_(3.0)
    assert float(sd["block.fc.weight"].numpy()[0, 0]) == 3.0
    # loading keeps parameter identity
    w = b.block.fc.weight
    b.load_state_dict(a.state_dict())
    assert b.block.fc.weight is w and float(w.detach().numpy()[0, 0]) == 3.0


def test_load_state_dict_strict_errors():
    net = Net()
    sd = net.state_dict()
    del sd["head.1.bias"]
    sd["extra"] = cygrad.zeros(1)
    with pytest.raises(RuntimeError) as err:
        net.load_state_dict(sd)
    msg = str(err.value)
    assert msg.startswith("Error(s) in loading state_dict for Net")
    assert 'Missing key(s) in state_dict: "head.1.bias"' in msg
    assert 'Unexpected key(s) in state_dict: "extra"' in msg
    result = net.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["head.1.bias"]
    assert result.unexpected_keys == ["extra"]


def test_load_state_dict_shape_mismatch_even_when_not_strict():
    net = nn.Linear(3, 2)
    before = net.weight.detach().numpy().copy()
    sd = {"weight": cygrad.zeros(2, 4), "bias": cygrad.zeros(2)}
    for strict in (True, False):
        with pytest.raises(RuntimeError, match="size mismatch for weight"):
            net.load_state_dict(sd, strict=strict)
    # nothing was copied
    np.testing.assert_array_equal(net.weight.detach().numpy(), before)
    assert np.abs(net.bias.detach().numpy()).max() > 0


def test_load_state_dict_casts_dtype():
    net = nn.Linear(2, 1)
    sd = {
        "weight": cygrad.tensor([[1.0, 2.0]], dtype=cygrad.float64),
        "bias": cygrad.tensor([0.5], dtype=cygrad.float64),
    }
    net.load_state_dict(sd)
    assert net.weight.dtype == np.float32
    np.testing.assert_array_equal(net.weight.detach().numpy(), [[1.0, 2.0]])


def test_linear_default_init_and_dtype():
    cygrad.manual_seed(0)
    lin = nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)
    w = lin.weight.detach().numpy()
    b = lin.bias.detach().numpy()
    assert lin.weight.dtype == np.float32 and tuple(w.shape) == (300, 400)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    # kaiming_uniform(a=sqrt(5)) gives U(-1/sqrt(fan_in), 1/sqrt(fan_in)): std b/sqrt(3)
    assert abs(w.std() - bound / math.sqrt(3)) < 0.02 * bound
    assert abs(w.mean()) < 0.01 * bound
    lin64 = nn.Linear(3, 2, bias=False, dtype=cygrad.float64)
    assert lin64.weight.dtype == np.float64 and lin64.bias is None
    cygrad.manual_seed(1)
    w1 = nn.Linear(5, 5).weight.detach().numpy()
    cygrad.manual_seed(1)
    np.testing.assert_array_equal(nn.Linear(5, 5).weight.detach().numpy(), w1)


def test_linear_matches_formula_and_grads():
    torch = pytest.importorskip("torch")
    lin = nn.Linear(4, 3, dtype=cygrad.float64)
    ref = torch.nn.Linear(4, 3, dtype=torch.float64)
    with torch.no_grad():
        ref.weight.copy_(torch.tensor(lin.weight.detach().numpy()))
        ref.bias.copy_(torch.tensor(lin.bias.detach().numpy()))
    x = np.random.default_rng(0).standard_normal((2, 5, 4))
    xc = cygrad.tensor(x, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    out_c, out_t = lin(xc), ref(xt)
    np.testing.assert_allclose(
        out_c.detach().numpy(), out_t.detach().numpy(), rtol=1e-12
    )
    (out_c**2).sum().backward()
    (out_t**2).sum().backward()
    for a, b in [(xc, xt), (lin.weight, ref.weight), (lin.bias, ref.bias)]:
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10)


def test_linear_errors():
    lin = nn.Linear(3, 2)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        lin(cygrad.zeros(4, 5))
    with pytest.raises(RuntimeError, match="same dtype"):
        lin(cygrad.zeros(4, 3, dtype=cygrad.float64))


@pytest.mark.parametrize("shape,xdt,bias,bdt", [
    ((2, 3), "uint8", True, None), ((5, 2, 3), "float64", True, None),
    ((3,), "uint8", True, None), ((2, 3), "uint8", False, None),
    ((5, 2, 3), "float64", False, None), ((2, 3), "int64", False, None),
    ((2, 3), "int32", False, None), ((2, 3), "bool", False, None),
    ((2, 3), "float32", True, "float64"), ((2, 3), "float64", True, "float64")])
def test_linear_dtype_mismatch_messages_are_torchs(shape, xdt, bias, bdt):
    """mrdbourke's 'most common errors' notebook feeds a uint8 image batch to
    nn.Linear: torch names the dtypes as its scalar types ("Byte and Float")
    with a bias, as C types ("unsigned char != float") without."""
    torch = pytest.importorskip("torch")
    msgs = []
    for m in (cygrad, torch):
        lin = m.nn.Linear(3, 4, bias=bias)
        if bdt:
            lin.bias.data = lin.bias.data.to(getattr(m, bdt))
        with pytest.raises(RuntimeError) as e:
            lin(m.ones(*shape, dtype=getattr(m, xdt)))
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


def test_linear_double_backward():
    lin = nn.Linear(3, 1, dtype=cygrad.float64)
    x = cygrad.randn(4, 3, dtype=cygrad.float64, requires_grad=True)
    y = (lin(x).tanh() ** 2).sum()
    (g,) = cygrad.autograd.grad(y, [x], create_graph=True)
    g.sum().backward()
    assert lin.weight.grad is not None and tuple(x.grad.shape) == (4, 3)


def test_sequential_indexing_and_repr():
    seq = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1), nn.Sigmoid())
    assert len(seq) == 4 and isinstance(seq[0], nn.Linear)
    assert isinstance(seq[-1], nn.Sigmoid)
    assert len(seq[1:3]) == 2
    with pytest.raises(IndexError):
        seq[4]
    assert repr(seq) == (
        "Sequential(\n"
        "  (0): Linear(in_features=2, out_features=8, bias=True)\n"
        "  (1): ReLU()\n"
        "  (2): Linear(in_features=8, out_features=1, bias=True)\n"
        "  (3): Sigmoid()\n"
        ")"
    )
    assert (
        repr(nn.CrossEntropyLoss(reduction="sum")) == "CrossEntropyLoss()"  # torch's
    )
    out = seq(cygrad.randn(5, 2))
    assert tuple(out.shape) == (5, 1)
    assert (out.detach().numpy() > 0).all() and (out.detach().numpy() < 1).all()


def test_nested_repr():
    text = repr(Net())
    assert text.startswith("Net(\n  (block): Block(\n    (fc): Linear(")
    assert "    (act): Tanh()\n  )\n  (head): Sequential(" in text


def test_activations_match_numpy():
    x = np.linspace(-3, 3, 13).astype(np.float32)
    t = cygrad.tensor(x)
    np.testing.assert_allclose(nn.ReLU()(t).numpy(), np.maximum(x, 0))
    np.testing.assert_allclose(nn.Tanh()(t).numpy(), np.tanh(x), rtol=1e-6)
    np.testing.assert_allclose(nn.Sigmoid()(t).numpy(), 1 / (1 + np.exp(-x)), rtol=1e-6)


def test_init_functions_in_place_under_no_grad():
    init = nn.init
    p = nn.Parameter(cygrad.empty(30, 20))
    for fn, args in [
        (init.zeros_, ()),
        (init.ones_, ()),
        (init.constant_, (0.5,)),
        (init.uniform_, (-2.0, 3.0)),
        (init.normal_, (1.0, 0.1)),
        (init.xavier_uniform_, ()),
        (init.kaiming_uniform_, ()),
        (init.xavier_normal_, ()),
        (init.kaiming_normal_, ()),
    ]:
        assert fn(p, *args) is p
        assert p.is_leaf and p.requires_grad and p.grad_fn is None
    arr = lambda: p.detach().numpy()
    init.zeros_(p)
    assert (arr() == 0).all()
    init.ones_(p)
    assert (arr() == 1).all()
    init.uniform_(p, -2.0, 3.0)
    assert arr().min() >= -2 and arr().max() <= 3 and arr().std() > 1
    init.normal_(p, 1.0, 0.1)
    assert abs(arr().mean() - 1) < 0.05 and abs(arr().std() - 0.1) < 0.02
    init.xavier_uniform_(p)
    assert np.abs(arr()).max() <= math.sqrt(6 / 50)
    init.kaiming_uniform_(p, a=0, nonlinearity="relu")
    assert np.abs(arr()).max() <= math.sqrt(2) * math.sqrt(3 / 20)
    assert init.calculate_gain("tanh") == pytest.approx(5 / 3)
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(cygrad.empty(3))
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        init.calculate_gain("swish")


def test_init_advances_version_so_stale_graphs_fail():
    p = nn.Parameter(cygrad.ones(3))
    y = (p * p).sum()
    nn.init.zeros_(p)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_module_to_dtype_keeps_identity():
    lin = nn.Linear(2, 2)
    w = lin.weight
    lin.double()
    assert lin.weight is w and w.dtype == np.float64
    assert tuple(lin(cygrad.zeros(1, 2, dtype=cygrad.float64)).shape) == (1, 2)


def test_training_loop_decreases_loss():
    cygrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 1))
    xa = np.random.default_rng(0).standard_normal((64, 2)).astype(np.float32)
    x = cygrad.from_numpy(xa)
    y = cygrad.from_numpy(xa[:, :1] * xa[:, 1:])
    loss_fn = nn.MSELoss()
    first = None
    for _ in range(100):
        loss = loss_fn(model(x), y)
        first = loss.item() if first is None else first
        model.zero_grad()
        loss.backward()
        with cygrad.no_grad():
            for p in model.parameters():
                p -= 0.1 * p.grad
    assert loss.item() < 0.5 * first


def test_grad_fn_names():
    lin = nn.Linear(3, 2)
    out = lin(cygrad.randn(4, 3))
    assert type(out.grad_fn).__name__ == "AddmmBackward0"
    loss = nn.CrossEntropyLoss()(out, cygrad.tensor([0, 1, 1, 0]))
    assert loss.grad_fn.name() == "NllLossBackward0"   # (a compiled node)
    assert type(nn.MSELoss()(out, out.detach()).grad_fn).__name__ == "MseLossBackward0"


def test_load_state_dict_result_prints_as_torch():
    """``print(model.load_state_dict(sd))`` says ``<All keys matched
    successfully>``; a norm layer's num_batches_tracked absent from a state
    dict without version metadata is not missing (torch keeps the count)."""
    torch = pytest.importorskip("torch")
    for m in (cygrad, torch):
        net = m.nn.Sequential(m.nn.Linear(2, 3), m.nn.BatchNorm1d(3))
        net[1].num_batches_tracked += 4
        sd = net.state_dict()
        assert str(net.load_state_dict(sd)) == "<All keys matched successfully>"
        del sd["1.num_batches_tracked"]   # its _metadata says version 2
        with pytest.raises(RuntimeError, match='Missing key.*"1.num_batches_tracked"'):
            net.load_state_dict(sd)
        sd = dict(sd)                       # a plain dict: an old checkpoint
        res = net.load_state_dict(sd)
        assert repr(res) == "<All keys matched successfully>"
        assert int(net[1].num_batches_tracked) == 4
        del sd["0.bias"]
        res = net.load_state_dict(sd, strict=False)
        assert repr(res) == ("_IncompatibleKeys(missing_keys=['0.bias'], "
                             "unexpected_keys=[])")
        assert res.missing_keys == ["0.bias"] and not res.unexpected_keys
