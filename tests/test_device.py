"""The device idiom of every script: torch.device objects, cuda/mps
queries, .to(device) on tensors and modules, legacy type names and
constructors; against torch where it is installed."""

import numpy as np
import pytest

import cygrad

try:
    import torch
except ImportError:  # pragma: no cover - torch is optional
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")

SPECS = ["cpu", "cpu:0", "cuda", "cuda:1", "mps", "meta"]


@needs_torch
@pytest.mark.parametrize("spec", SPECS)
def test_device_objects_print_compare_and_hash_as_torch(spec):
    a, b = cygrad.device(spec), torch.device(spec)
    assert (repr(a), str(a), a.type, a.index) == (repr(b), str(b), b.type, b.index)
    for other in SPECS:
        assert (a == cygrad.device(other)) == (b == torch.device(other))
    assert (a == spec) == (b == spec)          # a device never equals a string
    assert hash(a) == hash(cygrad.device(spec))


@needs_torch
def test_device_constructor_forms_and_errors():
    assert cygrad.device("cuda", 1) == cygrad.device("cuda:1")
    assert cygrad.device(cygrad.device("cpu")) == cygrad.device("cpu")
    for bad in ["foo", "cuda:x", "cpu:-1", 0]:
        with pytest.raises(RuntimeError) as want:
            torch.device(bad)
        with pytest.raises(RuntimeError) as got:
            cygrad.device(bad)
        assert str(got.value) == str(want.value)


def test_the_idiom_picks_the_cpu_and_runs():
    device = cygrad.device("cuda" if cygrad.cuda.is_available() else "cpu")
    assert device.type == "cpu" and cygrad.cuda.device_count() == 0
    assert not cygrad.backends.mps.is_available()
    cygrad.backends.cudnn.deterministic = True      # scripts set these flags
    cygrad.cuda.manual_seed_all(0)
    model = cygrad.nn.Linear(3, 2).to(device)
    x = cygrad.randn(4, 3, device=device).to(device)
    out = model(x)
    assert out.device == device and x.device == cygrad.device("cpu")
    assert x.cpu() is x and model.cpu() is model
    cygrad.set_default_device("cpu")
    assert cygrad.get_default_device() == cygrad.device("cpu")


def test_device_is_a_context_manager_for_the_cpu():
    torch = pytest.importorskip("torch")
    for lib in (cygrad, torch):
        with lib.device("cpu") as d:
            assert d == lib.device("cpu")
            m = lib.nn.Linear(2, 3)
            x = lib.zeros(2)
        assert m.weight.device == x.device == lib.device("cpu")
        assert lib.get_default_device() == lib.device("cpu")


@pytest.mark.parametrize("go", [
    lambda x, m: x.to("cuda"), lambda x, m: x.cuda(), lambda x, m: m.cuda(),
    lambda x, m: m.to("cuda:0"), lambda x, m: x.to(device=cygrad.device("cuda")),
    lambda x, m: cygrad.zeros(2, device="cuda"), lambda x, m: cygrad.cuda.synchronize(),
    lambda x, m: cygrad.set_default_device("cuda"),
    lambda x, m: cygrad.device("cuda").__enter__(),
    lambda x, m: cygrad.tensor([1.0], device="mps"),
])
def test_anything_but_the_cpu_is_one_clear_assertion_error(go):
    x, m = cygrad.ones(2), cygrad.nn.Linear(2, 2)
    w = m.weight.detach().numpy().copy()
    with pytest.raises(AssertionError, match="cygrad runs on the CPU only"):
        go(x, m)
    np.testing.assert_array_equal(m.weight.detach().numpy(), w)


def test_module_to_dtype_device_and_tensor_forms():
    m = cygrad.nn.Sequential(cygrad.nn.Linear(2, 3), cygrad.nn.Linear(3, 1))
    w = m[0].weight
    assert m.to(cygrad.float64) is m and w.dtype == cygrad.float64
    m.to("cpu", cygrad.float32)
    assert w.dtype == cygrad.float32 and m[0].weight is w    # identity kept
    m.to(device="cpu", dtype=cygrad.float64)
    assert m[1].bias.dtype == cygrad.float64
    m.to(cygrad.zeros(1))                                    # a tensor: its dtype
    assert w.dtype == cygrad.float32
    m.half()
    assert w.dtype == cygrad.float16
    m.float()
    m.type("torch.DoubleTensor")
    assert w.dtype == cygrad.float64
    with pytest.raises(TypeError, match="floating point"):
        m.to(cygrad.int64)
    with pytest.raises(TypeError, match="unexpected keyword"):
        m.to(devise="cpu")


def test_tensor_to_forms():
    x = cygrad.tensor([1.5, 2.5], requires_grad=True)
    assert x.to("cpu") is x and x.to(cygrad.device("cpu")) is x
    y = x.to("cpu", cygrad.float64)
    assert y.dtype == cygrad.float64 and y.requires_grad
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])
    assert x.to(cygrad.zeros(1, dtype=cygrad.int64)).dtype == cygrad.int64
    assert x.to(dtype=cygrad.float32, copy=True) is not x
    assert x.to(cygrad.float32, non_blocking=True) is x


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "int32",
                                   "int16", "int8", "uint8", "bool"])
def test_type_names_are_torchs(dtype):
    a = cygrad.zeros(2, dtype=getattr(cygrad, dtype))
    b = torch.zeros(2, dtype=getattr(torch, dtype))
    assert a.type() == b.type()
    assert a.type(b.type()).dtype == a.dtype
    assert a.float().type(cygrad.float64).type() == "torch.DoubleTensor"


@needs_torch
@pytest.mark.parametrize("name", ["Tensor", "FloatTensor", "DoubleTensor", "LongTensor",
                                  "IntTensor", "BoolTensor", "ByteTensor"])
@pytest.mark.parametrize("args", [(2, 3), ([[1, 0], [2, 5]],), (), (cygrad.Size([4]),)])
def test_legacy_constructors(name, args):
    targs = tuple(torch.Size(a) if isinstance(a, cygrad.Size) else a for a in args)
    a = getattr(cygrad, name)(*args)
    b = getattr(torch, name)(*targs)
    assert tuple(a.shape) == tuple(b.shape) and str(a.dtype) == str(b.dtype).split(".")[1]
    if args and not isinstance(args[0], (int, cygrad.Size)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    if name != "Tensor":
        assert isinstance(a, getattr(cygrad, name))
        assert not isinstance(a.to(cygrad.float16), getattr(cygrad, name))
