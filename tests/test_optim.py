"""cygrad.optim: update rules, parity with torch, state dicts, errors, clipping.

Trajectories use a deterministic loss whose gradient NumPy computes, assigned
as ``.grad``, so they test the optimizers alone: ``grad(x) = tanh(x @ A) + x/10``.
"""

import math

import numpy as np
import pytest
from optim_reference import STEPS

import cygrad
import cygrad.nn.utils
from cygrad import optim
from cygrad._kernels import optim as kernels

DTYPES = [np.float64, np.float32]
# "Same to tol at every step": |ours - theirs| <= tol * max|theirs| per step.
TORCH_TOL = {np.float64: 1e-12, np.float32: 1e-6}

CASES = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "weight_decay": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.9}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.5, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.5, "maximize": True}),
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.01, "amsgrad": True}),
    ("Adam", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.1, "maximize": True}),
    ("Adam", {"lr": 0.01, "betas": (0.3, 0.8), "eps": 1e-3}),  # lerp's other branch
    ("Adam", {"lr": 0.01, "decoupled_weight_decay": True, "weight_decay": 0.1}),
    ("AdamW", {"lr": 0.01}),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.5, "amsgrad": True}),
    ("AdamW", {"lr": 0.01, "maximize": True}),
    ("RMSprop", {"lr": 0.01}),
    ("RMSprop", {"lr": 0.01, "weight_decay": 0.1, "maximize": True}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.5}),
    ("RMSprop", {"lr": 0.01, "centered": True}),
    ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.5, "weight_decay": 0.1}),
    ("Adagrad", {"lr": 0.1}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.01, "weight_decay": 0.1}),
    ("Adagrad", {"lr": 0.1, "initial_accumulator_value": 0.5, "maximize": True}),
    ("Adagrad", {"lr": 0.1, "eps": 1e-3}),
]
# Short-memory RMSprop (alpha < 0.5: the lerp's other branch) is ill-conditioned:
# sqrt(v - ga*ga) with v ~ ga*ga, or sqrt(v) of a v that forgets in a few steps,
# turns torch's 1-ulp differences (it fuses multiply-adds; its vector sqrt is
# not correctly rounded) into visible ones.  These run against the NumPy
# reference only, which must agree bit for bit.
REFERENCE_ONLY = [
    ("RMSprop", {"lr": 0.001, "alpha": 0.4, "eps": 1e-2, "centered": True}),
    ("RMSprop", {"lr": 0.01, "alpha": 0.4, "momentum": 0.3}),
]


def _ids(cases):
    return [f"{n}-" + "-".join(f"{k}={v}" for k, v in kw.items()) for n, kw in cases]


CASE_IDS = _ids(CASES)


def problem(dtype, shape=(7, 5), seed=0):
    rng = np.random.default_rng(seed)
    p0 = rng.standard_normal(shape).astype(dtype)
    a = (rng.standard_normal((shape[-1], shape[-1])) / 2).astype(dtype)
    return p0, a


def numpy_grad(x, a):
    return (np.tanh(x @ a) + x / 10).astype(x.dtype)


def cygrad_trajectory(name, kw, dtype, steps=100, p0=None):
    if p0 is None:
        p0, a = problem(dtype)
    else:
        a = problem(dtype)[1]
    p = cygrad.tensor(p0.copy(), requires_grad=True)
    opt = getattr(optim, name)([p], **kw)
    out = []
    for _ in range(steps):
        p.grad = cygrad.from_numpy(numpy_grad(p._arr.copy(), a))
        opt.step()
        out.append(p._arr.copy())
    return np.array(out)


def reference_trajectory(name, kw, dtype, steps=100):
    p, a = problem(dtype)
    state = {}
    out = []
    for t in range(1, steps + 1):
        p = STEPS[name](p, numpy_grad(p, a), state, t, **kw)
        out.append(p.copy())
    return np.array(out)


def torch_trajectory(torch, name, kw, dtype, steps=100):
    p0, a = problem(dtype)
    p = torch.nn.Parameter(torch.from_numpy(p0.copy()))
    opt = getattr(torch.optim, name)([p], **kw)
    out = []
    for _ in range(steps):
        p.grad = torch.from_numpy(numpy_grad(p.detach().numpy().copy(), a))
        opt.step()
        out.append(p.detach().numpy().copy())
    return np.array(out)


def assert_same_trajectory(ours, theirs, tol):
    scale = np.max(np.abs(theirs), axis=tuple(range(1, theirs.ndim)), keepdims=True)
    err = np.abs(ours - theirs) / scale
    worst = np.unravel_index(np.argmax(err), err.shape)
    assert err.max() <= tol, (
        f"step {worst[0] + 1}: {ours[worst]!r} vs {theirs[worst]!r} "
        f"(relative to the step's scale: {err.max():.3g} > {tol})"
    )


# --------------------------------------------------------------------------
# update rules


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize(
    ("name", "kw"), CASES + REFERENCE_ONLY, ids=_ids(CASES + REFERENCE_ONLY)
)
def test_matches_numpy_reference_bitwise(name, kw, dtype):
    ours = cygrad_trajectory(name, kw, dtype)
    ref = reference_trajectory(name, kw, dtype)
    assert ours.dtype == dtype
    np.testing.assert_array_equal(ours, ref)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize(("name", "kw"), CASES, ids=CASE_IDS)
def test_matches_torch(name, kw, dtype):
    torch = pytest.importorskip("torch")
    ours = cygrad_trajectory(name, kw, dtype)
    theirs = torch_trajectory(torch, name, kw, dtype)
    assert_same_trajectory(ours, theirs, TORCH_TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize(("name", "kw"), CASES, ids=CASE_IDS)
def test_each_step_matches_torch_in_lockstep(name, kw, dtype):
    """Before every step, copy torch's parameter and state into ours; the steps
    must then agree to a few ulps, however the trajectory is conditioned."""
    torch = pytest.importorskip("torch")
    p0, a = problem(dtype)
    tp = torch.nn.Parameter(torch.from_numpy(p0.copy()))
    topt = getattr(torch.optim, name)([tp], **kw)
    cp = cygrad.tensor(p0.copy(), requires_grad=True)
    copt = getattr(optim, name)([cp], **kw)
    ours, theirs = [], []
    for _ in range(30):
        cp._arr[...] = tp.detach().numpy()
        for key, value in topt.state[tp].items():
            if key in copt.state[cp]:
                copt.state[cp][key]._arr[...] = value.numpy()
        g = numpy_grad(tp.detach().numpy().copy(), a)
        tp.grad = torch.from_numpy(g.copy())
        cp.grad = cygrad.from_numpy(g.copy())
        topt.step()
        copt.step()
        ours.append(cp._arr.copy())
        theirs.append(tp.detach().numpy().copy())
    tol = {np.float64: 1e-14, np.float32: 1e-6}[dtype]
    assert_same_trajectory(np.array(ours), np.array(theirs), tol)


def test_first_steps_by_hand():
    """Without torch: values worked out from the formulas for one element."""
    p = cygrad.tensor([1.0], dtype=cygrad.float64, requires_grad=True)
    opt = optim.SGD([p], lr=0.1, momentum=0.9, dampening=0.5)
    for _ in range(2):
        p.grad = cygrad.tensor([2.0], dtype=cygrad.float64)
        opt.step()
    # buf1 = 2 (a copy, no dampening), p = 1 - 0.2 = 0.8
    # buf2 = 0.9 * 2 + 0.5 * 2 = 2.8, p = 0.8 - 0.28 = 0.52
    assert p.item() == pytest.approx(0.52, rel=1e-15)
    assert opt.state[p]["momentum_buffer"].item() == pytest.approx(2.8, rel=1e-15)

    p = cygrad.tensor([1.0], dtype=cygrad.float64, requires_grad=True)
    opt = optim.Adam([p], lr=0.1)
    p.grad = cygrad.tensor([3.0], dtype=cygrad.float64)
    opt.step()
    # m = 0.3, v = 0.009, bias-corrected: 3 / (3 + 1e-8)
    expected = 1 - 0.1 * 0.3 / 0.1 / (math.sqrt(0.009) / math.sqrt(0.001) + 1e-8)
    assert p.item() == pytest.approx(expected, rel=1e-14)
    assert opt.state[p]["step"].item() == 1.0

    p = cygrad.tensor([1.0], dtype=cygrad.float64, requires_grad=True)
    opt = optim.Adagrad([p], lr=0.5, lr_decay=1.0, eps=0.0)
    for _ in range(2):
        p.grad = cygrad.tensor([2.0], dtype=cygrad.float64)
        opt.step()
    # step 1: s = 4, p = 1 - 0.5 * 2 / 2 = 0.5; step 2: clr = 0.25, s = 8
    assert p.item() == pytest.approx(0.5 - 0.25 * 2 / math.sqrt(8), rel=1e-15)

    p = cygrad.tensor([1.0], dtype=cygrad.float64, requires_grad=True)
    opt = optim.RMSprop([p], lr=0.1, alpha=0.5, eps=0.0)
    p.grad = cygrad.tensor([2.0], dtype=cygrad.float64)
    opt.step()
    # v = 0.5 * 4 = 2, p = 1 - 0.1 * 2 / sqrt(2)
    assert p.item() == pytest.approx(1 - 0.2 / math.sqrt(2), rel=1e-15)


def test_adamw_decays_weights_not_gradients():
    p = cygrad.tensor([2.0], dtype=cygrad.float64, requires_grad=True)
    opt = optim.AdamW([p], lr=0.1, weight_decay=0.5)
    assert opt.defaults["weight_decay"] == 0.5
    assert optim.AdamW([cygrad.zeros(1, requires_grad=True)]).defaults[
        "weight_decay"
    ] == pytest.approx(1e-2)
    p.grad = cygrad.tensor([0.0], dtype=cygrad.float64)
    opt.step()  # m = v = 0: only the decay moves p
    assert p.item() == pytest.approx(2.0 * (1 - 0.1 * 0.5), rel=1e-15)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"])
def test_update_in_place_keeps_leaf_and_bumps_version(name):
    p = cygrad.randn(4, 3, requires_grad=True)
    arr = p._arr
    version = p._version
    opt = getattr(optim, name)([p], lr=0.1)
    p.grad = cygrad.ones(4, 3)
    opt.step()
    assert p._arr is arr  # the same memory, updated in place
    assert p.is_leaf and p.requires_grad and p.grad_fn is None
    assert p._version > version
    assert not np.array_equal(arr, np.zeros_like(arr))


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop"])
def test_parameters_without_grad_are_skipped(name):
    kw = {"lr": 0.1, "weight_decay": 0.1}
    if name == "SGD":
        kw["momentum"] = 0.9
    a = cygrad.randn(3, requires_grad=True)
    b = cygrad.randn(3, requires_grad=True)
    b_before = b._arr.copy()
    opt = getattr(optim, name)([a, b], **kw)
    a.grad = cygrad.ones(3)
    opt.step()
    np.testing.assert_array_equal(b._arr, b_before)  # no weight decay either
    assert b not in opt.state or len(opt.state[b]) == 0
    assert len(opt.state[a]) > 0


def test_adagrad_state_from_construction_step_only_with_grad():
    a = cygrad.randn(3, requires_grad=True)
    b = cygrad.randn(3, requires_grad=True)
    opt = optim.Adagrad([a, b], initial_accumulator_value=0.25)
    for p in (a, b):
        assert opt.state[p]["step"].item() == 0.0
        np.testing.assert_array_equal(opt.state[p]["sum"]._arr, np.full(3, 0.25))
    a.grad = cygrad.ones(3)
    opt.step()
    assert opt.state[a]["step"].item() == 1.0
    assert opt.state[b]["step"].item() == 0.0


def test_state_keys_and_step_dtype():
    p = cygrad.randn(2, requires_grad=True)
    opt = optim.Adam([p], amsgrad=True)
    p.grad = cygrad.ones(2)
    opt.step()
    st = opt.state[p]
    assert set(st) == {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}
    assert st["step"].shape == () and st["step"].dtype == np.float32
    assert st["exp_avg"].dtype == p.dtype and st["exp_avg"].shape == p.shape
    opt = optim.RMSprop([p], momentum=0.5, centered=True)
    opt.step()
    assert set(opt.state[p]) == {"step", "square_avg", "momentum_buffer", "grad_avg"}
    opt = optim.SGD([p], momentum=0.5)
    opt.step()
    assert set(opt.state[p]) == {"momentum_buffer"}


# --------------------------------------------------------------------------
# the Optimizer API


def test_zero_grad_to_none_and_to_zeros():
    p = cygrad.randn(3, requires_grad=True)
    opt = optim.SGD([p], lr=0.1)
    p.grad = cygrad.ones(3)
    opt.zero_grad()
    assert p.grad is None
    p.grad = cygrad.ones(3)
    grad = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is grad
    np.testing.assert_array_equal(p.grad._arr, np.zeros(3, np.float32))
    opt.zero_grad(set_to_none=False)  # no gradient at all: nothing to do
    q = cygrad.randn(3, requires_grad=True)
    optim.SGD([q]).zero_grad(set_to_none=False)
    assert q.grad is None


def test_param_groups_with_their_own_lr():
    a = cygrad.tensor([1.0], dtype=cygrad.float64, requires_grad=True)
    b = cygrad.tensor([1.0], dtype=cygrad.float64, requires_grad=True)
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.1, momentum=0.0)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert opt.param_groups[1]["momentum"] == 0.0
    a.grad = cygrad.tensor([1.0], dtype=cygrad.float64)
    b.grad = cygrad.tensor([1.0], dtype=cygrad.float64)
    opt.step()
    assert a.item() == pytest.approx(0.9) and b.item() == pytest.approx(0.5)
    c = cygrad.tensor([1.0], dtype=cygrad.float64, requires_grad=True)
    opt.add_param_group({"params": [c], "lr": 0.25})
    c.grad = cygrad.tensor([1.0], dtype=cygrad.float64)
    opt.step()
    assert c.item() == pytest.approx(0.75)
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})
    assert len(opt.param_groups) == 3


def test_param_groups_match_torch():
    torch = pytest.importorskip("torch")
    p0, a = problem(np.float64, seed=1)
    q0 = p0[:2].copy()

    def run(lib, make, wrap, arr):
        p, q = wrap(p0.copy()), wrap(q0.copy())
        opt = make([{"params": [p]}, {"params": [q], "lr": 0.003, "betas": (0.5, 0.9)}])
        for _ in range(20):
            for t in (p, q):
                t.grad = lib.from_numpy(numpy_grad(arr(t).copy(), a))
            opt.step()
        return arr(p).copy(), arr(q).copy()

    ours = run(
        cygrad,
        lambda g: optim.Adam(g, lr=0.01),
        lambda x: cygrad.tensor(x, requires_grad=True),
        lambda t: t._arr,
    )
    theirs = run(
        torch,
        lambda g: torch.optim.Adam(g, lr=0.01),
        lambda x: torch.nn.Parameter(torch.from_numpy(x)),
        lambda t: t.detach().numpy(),
    )
    for x, y in zip(ours, theirs):
        assert_same_trajectory(x[None], y[None], 1e-12)


def test_named_parameters_keep_their_names():
    a = cygrad.zeros(2, requires_grad=True)
    b = cygrad.zeros(3, requires_grad=True)
    opt = optim.SGD([("w", a), ("b", b)], lr=0.1)
    group = opt.param_groups[0]
    assert group["params"][0] is a and group["params"][1] is b
    assert opt.param_groups[0]["param_names"] == ["w", "b"]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["w", "b"]
    with pytest.raises(ValueError, match="with/without names"):
        optim.SGD([("w", a), b], lr=0.1)


def test_step_with_closure_runs_with_grad_and_returns_loss():
    p = cygrad.tensor([3.0], dtype=cygrad.float64, requires_grad=True)
    opt = optim.SGD([p], lr=0.25)
    seen = []

    def closure():
        opt.zero_grad()
        seen.append(cygrad.is_grad_enabled())
        loss = (p * p).sum()
        loss.backward()
        return loss

    with cygrad.no_grad():
        loss = opt.step(closure)
    assert seen == [True]
    assert loss.item() == 9.0
    assert p.item() == pytest.approx(3.0 - 0.25 * 6.0)
    assert opt.step() is None


def test_linear_regression_like_the_hand_written_loop():
    """The tutorial's no_grad update loop and optim.SGD give the same numbers."""
    rng = np.random.default_rng(3)
    x = cygrad.tensor(rng.standard_normal((20, 3)).astype(np.float32))
    y = cygrad.tensor(rng.standard_normal((20, 1)).astype(np.float32))

    def train(use_optim):
        w = cygrad.zeros(3, 1, requires_grad=True)
        b = cygrad.zeros(1, requires_grad=True)
        opt = optim.SGD([w, b], lr=0.1) if use_optim else None
        losses = []
        for _ in range(30):
            loss = ((x @ w + b - y) ** 2).mean()
            losses.append(loss.item())
            if use_optim:
                opt.zero_grad()
                loss.backward()
                opt.step()
            else:
                loss.backward()
                with cygrad.no_grad():
                    w -= 0.1 * w.grad
                    b -= 0.1 * b.grad
                w.grad = None
                b.grad = None
        return losses, w._arr.copy(), b._arr.copy()

    manual, with_optim = train(False), train(True)
    np.testing.assert_array_equal(manual[1], with_optim[1])
    np.testing.assert_array_equal(manual[2], with_optim[2])
    assert manual[0] == with_optim[0]
    assert with_optim[0][-1] < with_optim[0][0]


# --------------------------------------------------------------------------
# state dicts


@pytest.mark.parametrize(
    ("name", "kw"),
    [
        ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True}),
        ("Adam", {"lr": 0.01, "amsgrad": True}),
        ("AdamW", {"lr": 0.01}),
        ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.5}),
        ("Adagrad", {"lr": 0.1, "lr_decay": 0.01}),
    ],
)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
def test_state_dict_round_trip_is_bitwise(name, kw, dtype):
    uninterrupted = cygrad_trajectory(name, kw, dtype, steps=100)[-1]

    p0, a = problem(dtype)
    p = cygrad.tensor(p0.copy(), requires_grad=True)
    opt = getattr(optim, name)([p], **kw)

    def run(o, n):
        for _ in range(n):
            p.grad = cygrad.from_numpy(numpy_grad(p._arr.copy(), a))
            o.step()

    run(opt, 50)
    saved = opt.state_dict()
    fresh = getattr(optim, name)([p], **kw)
    fresh.load_state_dict(saved)
    run(fresh, 50)
    np.testing.assert_array_equal(p._arr, uninterrupted)


def test_state_dict_layout_and_deep_copies():
    a = cygrad.randn(2, requires_grad=True)
    b = cygrad.randn(3, requires_grad=True)
    c = cygrad.randn(4, requires_grad=True)
    opt = optim.Adam([{"params": [a, b]}, {"params": [c], "lr": 0.5}])
    for t in (a, c):
        t.grad = cygrad.ones(*t.shape)
    opt.step()
    sd = opt.state_dict()
    assert sorted(sd["state"]) == [0, 2]
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2]]
    assert sd["param_groups"][1]["lr"] == 0.5
    assert set(sd["state"][0]) == {"step", "exp_avg", "exp_avg_sq"}
    # a snapshot: later steps do not change it, changing it does not change us
    before = sd["state"][0]["exp_avg"]._arr.copy()
    opt.step()
    np.testing.assert_array_equal(sd["state"][0]["exp_avg"]._arr, before)
    sd["state"][0]["exp_avg"]._arr[...] = 123.0
    sd["param_groups"][0]["lr"] = 99.0
    assert not np.any(opt.state[a]["exp_avg"]._arr == 123.0)
    assert opt.param_groups[0]["lr"] == 1e-3
    # loading copies too
    opt2 = optim.Adam([{"params": [a, b]}, {"params": [c]}])
    opt2.load_state_dict(sd)
    sd["state"][0]["exp_avg"]._arr[...] = 7.0
    assert opt2.state[a]["exp_avg"]._arr[0] == 123.0
    assert opt2.param_groups[0]["lr"] == 99.0
    assert opt2.param_groups[0]["params"][0] is a


def test_load_state_dict_casts_floating_state_but_not_step():
    p64 = cygrad.randn(3, dtype=cygrad.float64, requires_grad=True)
    opt = optim.Adam([p64])
    p64.grad = cygrad.ones(3, dtype=cygrad.float64)
    opt.step()
    sd = opt.state_dict()
    p32 = cygrad.randn(3, requires_grad=True)
    opt32 = optim.Adam([p32])
    opt32.load_state_dict(sd)
    assert opt32.state[p32]["exp_avg"].dtype == np.float32
    assert opt32.state[p32]["step"].dtype == sd["state"][0]["step"].dtype
    p32.grad = cygrad.ones(3)
    opt32.step()
    assert opt32.state[p32]["step"].item() == 2.0


def _snapshot(opt):
    groups = [{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups]
    state = {
        id(p): {k: v._arr.copy() for k, v in s.items()} for p, s in opt.state.items()
    }
    return groups, state


@pytest.mark.parametrize(
    "corrupt",
    [
        "group_count",
        "group_size",
        "unknown_index",
        "state_shape",
        "bad_lr",
        "not_a_dict",
    ],
)
def test_mismatched_state_dict_refused_with_nothing_changed(corrupt):
    a = cygrad.randn(2, requires_grad=True)
    b = cygrad.randn(3, requires_grad=True)
    opt = optim.Adam([a, b], lr=0.01)
    for t in (a, b):
        t.grad = cygrad.ones(*t.shape)
    opt.step()
    sd = opt.state_dict()
    messages = {
        "group_count": "different number of parameter groups",
        "group_size": "doesn't match the size of optimizer's group",
        "unknown_index": "not in any of its parameter groups",
        "state_shape": "of shape",
        "bad_lr": "Invalid learning rate",
        "not_a_dict": "must be a dict",
    }
    if corrupt == "group_count":
        sd["param_groups"].append(dict(sd["param_groups"][0], params=[]))
    elif corrupt == "group_size":
        sd["param_groups"][0]["params"] = [0]
    elif corrupt == "unknown_index":
        sd["state"][5] = sd["state"][0]
    elif corrupt == "state_shape":
        sd["state"][1]["exp_avg"] = cygrad.zeros(7)
    elif corrupt == "bad_lr":
        sd["param_groups"][0]["lr"] = -1.0
    else:
        sd = [sd]
    other = optim.Adam([a, b], lr=0.5)
    other.step()  # some state of its own that must survive
    before = _snapshot(other)
    with pytest.raises(ValueError, match=messages[corrupt]):
        other.load_state_dict(sd)
    after = _snapshot(other)
    assert after[0] == before[0]
    assert before[1].keys() == after[1].keys()
    for k in before[1]:
        for key in before[1][k]:
            np.testing.assert_array_equal(after[1][k][key], before[1][k][key])


# --------------------------------------------------------------------------
# errors


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: optim.SGD(p, lr=-0.1), "Invalid learning rate: -0.1"),
        (lambda p: optim.SGD(p, momentum=-1), "Invalid momentum value: -1"),
        (lambda p: optim.SGD(p, weight_decay=-1), "Invalid weight_decay value: -1"),
        (
            lambda p: optim.SGD(p, nesterov=True),
            "Nesterov momentum requires a momentum",
        ),
        (
            lambda p: optim.SGD(p, momentum=0.9, dampening=0.1, nesterov=True),
            "Nesterov momentum requires a momentum and zero dampening",
        ),
        (lambda p: optim.Adam(p, lr=-1e-3), "Invalid learning rate"),
        (
            lambda p: optim.Adam(p, betas=(1.0, 0.9)),
            "Invalid beta parameter at index 0",
        ),
        (
            lambda p: optim.Adam(p, betas=(0.9, -0.1)),
            "Invalid beta parameter at index 1",
        ),
        (lambda p: optim.Adam(p, eps=-1e-8), "Invalid epsilon value"),
        (lambda p: optim.Adam(p, weight_decay=-1), "Invalid weight_decay value"),
        (
            lambda p: optim.AdamW(p, betas=(0.9, 1.5)),
            "Invalid beta parameter at index 1",
        ),
        (lambda p: optim.RMSprop(p, alpha=-0.1), "Invalid alpha value"),
        (lambda p: optim.RMSprop(p, momentum=-0.1), "Invalid momentum value"),
        (lambda p: optim.RMSprop(p, eps=-1.0), "Invalid epsilon value"),
        (lambda p: optim.Adagrad(p, lr_decay=-1), "Invalid lr_decay value"),
        (
            lambda p: optim.Adagrad(p, initial_accumulator_value=-1),
            "Invalid initial_accumulator_value value",
        ),
        (
            lambda p: optim.SGD([{"params": p, "lr": -2.0}], lr=0.1),
            "Invalid learning rate: -2.0",
        ),
    ],
)
def test_bad_hyperparameters_refused(make, message):
    with pytest.raises(ValueError, match=message):
        make([cygrad.randn(2, requires_grad=True)])


def test_bad_hyperparameter_in_added_group_changes_nothing():
    opt = optim.SGD([cygrad.randn(2, requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError, match="Invalid learning rate"):
        opt.add_param_group({"params": [cygrad.randn(2, requires_grad=True)], "lr": -1})
    assert len(opt.param_groups) == 1


def test_bad_params_refused():
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        optim.SGD([], lr=0.1)
    x = cygrad.randn(3, requires_grad=True)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([x * 2], lr=0.1)
    with pytest.raises(TypeError, match="iterable of Tensors or dicts"):
        optim.SGD(x, lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        optim.SGD([{"params": {x}}], lr=0.1)
    with pytest.raises(TypeError, match="can only optimize Tensors"):
        optim.SGD([np.zeros(3)], lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        optim.SGD([{"params": [x]}, {"params": [x]}], lr=0.1)
    with pytest.warns(UserWarning, match="duplicate parameters"):
        optim.SGD([x, x], lr=0.1)


def test_torch_only_options_accepted_off_refused_on():
    x = cygrad.randn(2, requires_grad=True)
    optim.SGD([x], lr=0.1, foreach=False, fused=None, differentiable=False)
    optim.Adam([x], foreach=True, fused=True, capturable=False, differentiable=False)
    optim.RMSprop([x], foreach=None, capturable=False, differentiable=False)
    with pytest.raises(NotImplementedError, match="differentiable=True"):
        optim.AdamW([x], differentiable=True)
    with pytest.raises(NotImplementedError, match="capturable=True"):
        optim.Adam([x], capturable=True)
    with pytest.raises(NotImplementedError, match="differentiable=True"):
        optim.Adagrad([x], differentiable=True)


def test_layouts_the_kernels_cannot_take_raise_before_any_kernel():
    with pytest.raises(TypeError, match="float32 or float64"):
        optim.SGD([cygrad.tensor([1, 2, 3])], lr=0.1)
    # a non-contiguous leaf (a view made outside autograd)
    p = cygrad.from_numpy(np.zeros((4, 3)).T)
    p.requires_grad_(True)
    with pytest.raises(ValueError, match="C-contiguous"):
        optim.Adam([p])
    # the array replaced after construction: caught at step, nothing updated
    q = cygrad.randn(3, requires_grad=True)
    opt = optim.Adam([q])
    q.grad = cygrad.ones(3)
    q._arr = np.zeros((3, 2))[:, 0]
    with pytest.raises(ValueError, match="C-contiguous"):
        opt.step()
    assert len(opt.state[q]) == 0
    # a gradient of another dtype
    r = cygrad.randn(3, requires_grad=True)
    opt = optim.SGD([r], lr=0.1)
    r.grad = cygrad.ones(3)
    r.grad._arr = np.ones(3)
    with pytest.raises(TypeError, match="gradient of dtype float64"):
        opt.step()


def test_non_contiguous_gradient_is_read_correctly():
    p = cygrad.tensor(np.ones(3), requires_grad=True)
    opt = optim.SGD([p], lr=0.5)
    p.grad = cygrad.ones(3, dtype=cygrad.float64)
    p.grad._arr = np.arange(6.0)[::2]
    opt.step()
    np.testing.assert_array_equal(p._arr, 1 - 0.5 * np.array([0.0, 2.0, 4.0]))


def test_kernels_refuse_mismatched_arrays():
    p = np.zeros(4)
    with pytest.raises(ValueError, match="grad has 3 elements"):
        kernels.sgd(p, np.zeros(3), None, 0.1, 0, 0, 0, False, False, False)
    with pytest.raises(ValueError, match="needs a momentum_buffer"):
        kernels.sgd(p, np.zeros(4), None, 0.1, 0, 0.9, 0, False, False, False)
    with pytest.raises(ValueError, match="shares memory"):
        kernels.adam(
            p, np.zeros(4), p, np.zeros(4), None, 1, 0.1, 0.9, 0.9, 0, 0, False, False
        )
    with pytest.raises((TypeError, ValueError)):
        kernels.adagrad(
            np.zeros(4, np.float32), np.zeros(4), np.zeros(4), 0.1, 0, 0, False
        )
    kernels.adam(
        np.zeros(0),
        np.zeros(0),
        np.zeros(0),
        np.zeros(0),
        None,
        1,
        0.1,
        0.9,
        0.9,
        0,
        0,
        False,
        False,
    )  # empty: nothing to do


# --------------------------------------------------------------------------
# clip_grad_norm_


def _params_with_grads(dtype, grads):
    ps = []
    for g in grads:
        p = cygrad.zeros(*np.shape(g), dtype=dtype, requires_grad=True)
        if g is not None:
            p.grad = cygrad.tensor(np.asarray(g, dtype=dtype))
        ps.append(p)
    return ps


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
def test_clip_grad_norm_two_norm(dtype):
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal(s) for s in [(3, 4), (5,), (2, 2, 2)]]
    ps = _params_with_grads(dtype, grads)
    total = math.sqrt(
        sum(float(np.sum(np.asarray(g, dtype).astype(np.float64) ** 2)) for g in grads)
    )
    norm = cygrad.nn.utils.clip_grad_norm_(ps, max_norm=1.0)
    assert norm.dtype == dtype and norm.shape == ()
    assert norm.item() == pytest.approx(total, rel=1e-7)
    coef = 1.0 / (total + 1e-6)
    for p, g in zip(ps, grads):
        np.testing.assert_allclose(p.grad._arr, np.asarray(g, dtype) * coef, rtol=1e-6)
    clipped = math.sqrt(
        sum(float(np.sum(p.grad._arr.astype(np.float64) ** 2)) for p in ps)
    )
    assert clipped == pytest.approx(1.0, rel=1e-5)


def test_clip_grad_norm_below_max_leaves_grads_and_skips_missing():
    ps = _params_with_grads(np.float64, [[3.0, 4.0], None])
    ps[1].grad = None
    norm = cygrad.nn.utils.clip_grad_norm_(ps, max_norm=10.0)
    assert norm.item() == 5.0
    np.testing.assert_array_equal(ps[0].grad._arr, [3.0, 4.0])
    assert ps[1].grad is None
    empty = cygrad.nn.utils.clip_grad_norm_([cygrad.zeros(2, requires_grad=True)], 1.0)
    assert empty.item() == 0.0


def test_clip_grad_norm_inf_and_other_orders():
    ps = _params_with_grads(np.float64, [[1.0, -6.0], [2.0, 3.0]])
    norm = cygrad.nn.utils.clip_grad_norm_(ps, max_norm=3.0, norm_type=math.inf)
    assert norm.item() == 6.0
    np.testing.assert_allclose(ps[0].grad._arr, np.array([1.0, -6.0]) * 3 / (6 + 1e-6))
    ps = _params_with_grads(np.float64, [[1.0, -6.0], [2.0, 3.0]])
    norm = cygrad.nn.utils.clip_grad_norm_(ps, max_norm=100.0, norm_type=1)
    assert norm.item() == 12.0
    ps = _params_with_grads(np.float64, [[1.0, -6.0], [2.0, 3.0]])
    norm = cygrad.nn.utils.clip_grad_norm_(ps[0], max_norm=100.0, norm_type=3)
    assert norm.item() == pytest.approx((1 + 216) ** (1 / 3))


def test_clip_grad_norm_nonfinite():
    ps = _params_with_grads(np.float32, [[1.0, np.inf], [np.nan, 0.0]])
    with pytest.raises(RuntimeError, match="non-finite, so it cannot be clipped"):
        cygrad.nn.utils.clip_grad_norm_(ps, 1.0, error_if_nonfinite=True)
    np.testing.assert_array_equal(ps[0].grad._arr, np.array([1.0, np.inf], np.float32))
    norm = cygrad.nn.utils.clip_grad_norm_(ps, 1.0)
    assert math.isnan(norm.item())
    ps = _params_with_grads(np.float32, [[1.0, -np.inf]])
    with pytest.raises(RuntimeError, match="order inf"):
        cygrad.nn.utils.clip_grad_norm_(
            ps, 1.0, norm_type="inf", error_if_nonfinite=True
        )


@pytest.mark.parametrize("norm_type", [2.0, math.inf, 1.0])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
def test_clip_grad_norm_matches_torch(norm_type, dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    grads = [rng.standard_normal(s).astype(dtype) * 3 for s in [(30, 4), (50,)]]
    ps = _params_with_grads(dtype, grads)
    tps = [
        torch.zeros(
            g.shape, dtype=getattr(torch, np.dtype(dtype).name), requires_grad=True
        )
        for g in grads
    ]
    for t, g in zip(tps, grads):
        t.grad = torch.from_numpy(g.copy())
    ours = cygrad.nn.utils.clip_grad_norm_(ps, 2.0, norm_type=norm_type)
    theirs = torch.nn.utils.clip_grad_norm_(tps, 2.0, norm_type=norm_type)
    tol = 1e-12 if dtype == np.float64 else 1e-6
    assert ours.item() == pytest.approx(theirs.item(), rel=tol)
    for p, t in zip(ps, tps):
        np.testing.assert_allclose(p.grad._arr, t.grad.numpy(), rtol=tol, atol=0)
