"""copy.copy, copy.deepcopy and pickle of tensors, Parameters, modules,
state dicts and optimizers, with torch's rules (issue 17, item 6); and
cygrad.load still refusing pickles from files."""

import collections
import copy
import io
import multiprocessing
import pickle

import numpy as np
import pytest

import cygrad
import cygrad.nn as nn

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")
PROTOCOLS = list(range(pickle.HIGHEST_PROTOCOL + 1))


def roundtrip(obj, proto=pickle.DEFAULT_PROTOCOL):
    return pickle.loads(pickle.dumps(obj, proto))


# --- copy.copy ----------------------------------------------------------------------


def test_copy_is_a_leaf_sharing_storage():
    a = cygrad.tensor([1.0, 2.0], requires_grad=True)
    a.grad = cygrad.tensor([3.0, 4.0])
    c = copy.copy(a)
    assert c is not a and c.is_leaf and c.requires_grad and c.grad is None
    with cygrad.no_grad():
        c.add_(1)
    assert a.tolist() == [2.0, 3.0]                      # shared, as torch
    b = a * 2
    d = copy.copy(b)
    assert d.is_leaf and d.requires_grad and d.grad_fn is None


# --- copy.deepcopy -------------------------------------------------------------------


def test_deepcopy_of_a_leaf():
    a = cygrad.tensor([1.0, 2.0], requires_grad=True)
    a.grad = cygrad.tensor([3.0, 4.0])
    a.note = {"k": [1]}
    c = copy.deepcopy(a)
    assert c.is_leaf and c.requires_grad and c.tolist() == [1.0, 2.0]
    assert c.grad.tolist() == [3.0, 4.0] and c.grad is not a.grad
    assert c.note == {"k": [1]} and c.note is not a.note
    with cygrad.no_grad():
        c.add_(1)
    assert a.tolist() == [1.0, 2.0]
    (c * c).sum().backward()                             # a working leaf
    assert c.grad.tolist() == [7.0, 10.0]


def test_deepcopy_of_a_non_leaf_raises_as_torch():
    a = cygrad.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Only Tensors created explicitly by the "
                                           "user \\(graph leaves\\) support the "
                                           "deepcopy protocol"):
        copy.deepcopy(a * 2)
    assert copy.deepcopy((a * 2).detach()).requires_grad is False


def test_deepcopy_keeps_views_of_one_storage_together():
    base = cygrad.arange(6.0)
    parts = [base[1:3], base, base.view(2, 3).t()]
    new = copy.deepcopy(parts)
    new[1][1] = 100.0
    assert new[0].tolist() == [100.0, 2.0]
    assert new[2].tolist() == [[0.0, 3.0], [100.0, 4.0], [2.0, 5.0]]
    assert new[2].stride() == (1, 3)
    assert base.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert copy.deepcopy(cygrad.arange(10.0)[::3]).stride() == (3,)


def test_deepcopy_of_a_parameter_is_torchs():
    p = nn.Parameter(cygrad.ones(2))
    p.grad = cygrad.ones(2)
    p.extra = 1
    q = copy.deepcopy(p)
    assert type(q) is nn.Parameter and q.requires_grad and q.grad is None
    assert not hasattr(q, "extra")                       # torch drops both
    assert copy.deepcopy(nn.Parameter(cygrad.ones(2), requires_grad=False)) \
        .requires_grad is False


# --- pickle ------------------------------------------------------------------------


@pytest.mark.parametrize("proto", PROTOCOLS)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int64", "int32",
                                   "int8", "uint8", "bool"])
def test_pickle_values_and_dtype_exact(proto, dtype):
    rng = np.random.default_rng(0)
    arr = (rng.standard_normal((3, 4)) * 10).astype(dtype)
    t = cygrad.from_numpy(arr.copy())
    u = roundtrip(t, proto)
    assert u.dtype == t.dtype and tuple(u.shape) == (3, 4)
    np.testing.assert_array_equal(u.numpy(), arr)
    assert u.numpy().tobytes() == arr.tobytes()


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_pickle_requires_grad_not_grad_nor_graph(proto):
    a = cygrad.tensor([1.0, 2.0], requires_grad=True)
    a.grad = cygrad.ones(2)
    a.tag = "w"
    u = roundtrip(a, proto)
    assert u.requires_grad and u.is_leaf and u.grad is None and u.tag == "w"
    b = roundtrip(a * 2, proto)
    assert b.requires_grad and b.is_leaf and b.tolist() == [2.0, 4.0]
    assert roundtrip(cygrad.tensor(3.5), proto).item() == 3.5
    assert tuple(roundtrip(cygrad.ones(0, 3), proto).shape) == (0, 3)


@pytest.mark.parametrize("make,stride", [
    (lambda: cygrad.arange(6.0).reshape(2, 3).t(), (1, 3)),
    (lambda: cygrad.arange(10.0)[::3], (3,)),
    (lambda: cygrad.ones(3)[:, None].expand(3, 2), (1, 0)),
    (lambda: cygrad.arange(24.0).reshape(2, 3, 4).permute(2, 0, 1)[1:, :, ::2],
     (1, 12, 8)),
])
def test_pickle_keeps_strides(make, stride):
    t = make()
    u = roundtrip(t)
    assert u.stride() == stride
    assert u.tolist() == t.tolist()


@needs_torch
@pytest.mark.parametrize("expr", [
    "lib.arange(6.).reshape(2, 3).t()",
    "lib.arange(10.)[::3]",
    "lib.ones(3)[:, None].expand(3, 2)",
    "lib.arange(24.).reshape(2, 3, 4).permute(2, 0, 1)[1:, :, ::2]",
    "lib.arange(12.).reshape(3, 4)[1:, 1:]",
])
def test_pickle_strides_match_torch(expr):
    got = [roundtrip(eval(expr, {"lib": lib})) for lib in (cygrad, torch)]
    assert tuple(got[0].stride()) == tuple(got[1].stride())
    np.testing.assert_array_equal(got[0].numpy(), got[1].numpy())


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_pickle_parameter(proto):
    p = nn.Parameter(cygrad.ones(2))
    p.extra = 3
    q = roundtrip(p, proto)
    assert type(q) is nn.Parameter and q.requires_grad and q.extra == 3
    assert roundtrip(nn.Parameter(cygrad.ones(2), requires_grad=False),
                     proto).requires_grad is False


# --- modules, state dicts, optimizers -----------------------------------------------


def _tied():
    cygrad.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 4, bias=False))
    m[2].weight = m[0].weight
    m.register_buffer("steps", cygrad.tensor([7]))
    return m


@pytest.mark.parametrize("how", ["deepcopy"] + [f"pickle{p}" for p in PROTOCOLS])
def test_module_copies(how):
    m = _tied()
    m.eval()
    new = copy.deepcopy(m) if how == "deepcopy" else roundtrip(m, int(how[6:]))
    assert type(new) is nn.Sequential and not new.training
    assert [n for n, _ in new.named_parameters()] == [
        n for n, _ in m.named_parameters()]
    assert all(type(p) is nn.Parameter for p in new.parameters())
    assert new[0].weight is new[2].weight                # tied stays tied
    assert new[0].weight is not m[0].weight
    assert new.steps.tolist() == [7]
    x = cygrad.randn(5, 4)
    np.testing.assert_array_equal(new(x).detach().numpy(), m(x).detach().numpy())
    new(x).sum().backward()
    assert m[0].weight.grad is None and new[0].weight.grad is not None


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_state_dict_pickles(proto):
    m = _tied()
    sd = roundtrip(m.state_dict(), proto)
    assert type(sd) is collections.OrderedDict
    assert list(sd) == list(m.state_dict())
    other = _tied()
    with cygrad.no_grad():
        for p in other.parameters():
            p.zero_()
    other.load_state_dict(sd)
    for a, b in zip(other.state_dict().values(), m.state_dict().values()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_optimizer_copies_follow_the_params(how):
    m = _tied()
    opt = cygrad.optim.Adam(m.parameters(), lr=0.1)
    m(cygrad.randn(2, 4)).sum().backward()
    opt.step()
    pair = copy.deepcopy((m, opt)) if how == "deepcopy" else roundtrip((m, opt))
    m2, opt2 = pair
    p0 = opt2.param_groups[0]["params"][0]
    assert p0 is m2[0].weight and p0 is not m[0].weight
    st, st0 = opt2.state[p0], opt.state[m[0].weight]
    assert sorted(st) == sorted(st0)
    np.testing.assert_array_equal(st["exp_avg"].numpy(), st0["exp_avg"].numpy())
    assert st["exp_avg"] is not st0["exp_avg"]
    # both go on identically from the copied state
    x = cygrad.randn(2, 4)
    for model, o in ((m, opt), (m2, opt2)):
        o.zero_grad()
        model(x).sum().backward()
        o.step()
    np.testing.assert_array_equal(m2[0].weight.detach().numpy(),
                                  m[0].weight.detach().numpy())


# --- processes ----------------------------------------------------------------------


def _double(t):
    return t * 2, t.requires_grad, str(t.dtype)


def test_multiprocessing_pool_sends_tensors():
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        out, rg, dt = pool.apply(_double, (cygrad.tensor([1.0, 2.0],
                                                         dtype=cygrad.float64),))
    assert out.tolist() == [2.0, 4.0] and rg is False and dt == "float64"


# --- files stay pickle-free ---------------------------------------------------------


def test_load_still_refuses_a_pickle_file(tmp_path):
    path = tmp_path / "model.pkl"
    path.write_bytes(pickle.dumps(cygrad.ones(2)))
    with pytest.raises(ValueError, match="pickle"):
        cygrad.load(path)
    buf = io.BytesIO(pickle.dumps({"w": cygrad.ones(2)}))
    with pytest.raises(ValueError, match="pickle"):
        cygrad.load(buf)
