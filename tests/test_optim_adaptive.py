"""NAdam, RAdam, Adamax, Adadelta, Rprop, ASGD, Adafactor (and the first five:
SGD, Adam, AdamW, RMSprop, Adagrad) against torch.

Every combination of options runs 100 steps of a nonconvex loss on several
parameter shapes in both libraries; float64 trajectories agree to 1e-10 and
float32 to 1e-5 (relative to each parameter's scale).  Without torch, the
by-hand tests check the first steps from the formulas.
"""

import itertools
import math

import numpy as np
import pytest
from optim_torch import (
    assert_same_trajectory,
    cygrad_params,
    problem,
    run_cygrad,
    run_torch,
    state_from_torch,
    torch_params,
)

import cygrad
from cygrad import optim

TOL = {np.float64: 1e-10, np.float32: 1e-5}
DTYPES = [np.float64, np.float32]
SKIP = (1,)  # the (6,) parameter never has a gradient

# name -> (base options, {option: values}); every combination is run
GRIDS = {
    "NAdam": (
        {"lr": 1e-3},
        {
            "weight_decay": [0, 0.1],
            "decoupled_weight_decay": [False, True],
            "maximize": [False, True],
            "momentum_decay": [4e-3, 0.1],
            "betas": [(0.9, 0.999), (0.3, 0.8)],
        },
    ),
    "RAdam": (
        {"lr": 1e-3},
        {
            "weight_decay": [0, 0.1],
            "decoupled_weight_decay": [False, True],
            "maximize": [False, True],
            "betas": [(0.9, 0.999), (0.3, 0.8)],
            "eps": [1e-8, 1e-3],
        },
    ),
    "Adamax": (
        {"lr": 1e-3},
        {
            "weight_decay": [0, 0.1],
            "maximize": [False, True],
            "betas": [(0.9, 0.999), (0.45, 0.99)],
            "eps": [1e-8, 1e-2],
        },
    ),
    "Adadelta": (
        {},
        {
            "lr": [0.5, 0.05],
            "rho": [0.9, 0.3],
            "weight_decay": [0, 0.1],
            "maximize": [False, True],
            "eps": [1e-6, 1e-3],
        },
    ),
    "Rprop": (
        {},
        {
            "lr": [0.01, 0.1],
            "etas": [(0.5, 1.2), (0.3, 1.5)],
            "step_sizes": [(1e-6, 50), (1e-3, 0.05)],
            "maximize": [False, True],
        },
    ),
    "ASGD": (
        {"lr": 0.01},
        {
            "lambd": [1e-4, 0.1],
            "alpha": [0.75, 0.3],
            "t0": [1e6, 20, 0],
            "weight_decay": [0, 0.1],
            "maximize": [False, True],
        },
    ),
    "Adafactor": (
        {"lr": 1e-2},
        {
            "weight_decay": [0, 0.1],
            "maximize": [False, True],
            "eps": [(None, 1e-3), (1e-6, 1e-2)],
            "d": [1.0, 2.0],
            "beta2_decay": [-0.8, -0.5],
        },
    ),
    # the five that came first: their options, on the same harness
    "SGD": (
        {"lr": 0.02},
        {
            "momentum": [0, 0.9],
            "dampening": [0, 0.5],
            "nesterov": [False, True],
            "weight_decay": [0, 0.1],
            "maximize": [False, True],
        },
    ),
    "Adam": (
        {"lr": 1e-3},
        {
            "weight_decay": [0, 0.1],
            "amsgrad": [False, True],
            "maximize": [False, True],
            "decoupled_weight_decay": [False, True],
        },
    ),
    "AdamW": (
        {"lr": 1e-3},
        {"weight_decay": [0.01, 0.1], "amsgrad": [False, True], "maximize": [False, True]},
    ),
    "RMSprop": (
        {"lr": 1e-3},
        {
            "centered": [False, True],
            "momentum": [0, 0.5],
            "weight_decay": [0, 0.1],
            "maximize": [False, True],
        },
    ),
    "Adagrad": (
        {"lr": 0.05},
        {
            "lr_decay": [0, 0.01],
            "weight_decay": [0, 0.1],
            "initial_accumulator_value": [0, 0.5],
            "maximize": [False, True],
        },
    ),
}
# torch-only options each accepts (Adafactor takes neither capturable nor
# differentiable; SGD and Adagrad no capturable)
TORCH_ONLY = {
    "Adafactor": {"foreach": True},
    "SGD": {"foreach": True, "fused": None, "differentiable": False},
    "Adagrad": {"foreach": True, "fused": None, "differentiable": False},
}
# kernels of optim.pyx (every SIMD level's bits: test_optim_dispatch.py)
FIRST_FIVE = ("SGD", "Adam", "AdamW", "RMSprop", "Adagrad")


def combos(name):
    base, grid = GRIDS[name]
    keys = sorted(grid)
    for values in itertools.product(*(grid[k] for k in keys)):
        kw = dict(base)
        kw.update(zip(keys, values))
        if kw.get("nesterov") and (kw["momentum"] == 0 or kw["dampening"] != 0):
            continue  # not a valid SGD
        yield kw


CASES = [(name, kw) for name in GRIDS for kw in combos(name)]
IDS = [f"{n}-" + "-".join(f"{k}={v}" for k, v in kw.items()) for n, kw in CASES]


def trajectories(torch, name, kw, dtype, steps=100):
    p0, mats = problem(dtype)
    cp = cygrad_params(p0)
    tp = torch_params(torch, p0)
    copt = getattr(optim, name)(cp, **kw)
    topt = getattr(torch.optim, name)(tp, **kw)
    ours = run_cygrad(copt, cp, mats, steps, skip=SKIP)
    theirs = run_torch(torch, topt, tp, mats, steps, skip=SKIP)
    return ours, theirs, copt, cp


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize(("name", "kw"), CASES, ids=IDS)
def test_trajectory_matches_torch(name, kw, dtype):
    torch = pytest.importorskip("torch")
    ours, theirs, copt, cp = trajectories(torch, name, kw, dtype)
    assert_same_trajectory(ours, theirs, TOL[dtype])
    # the parameter without a gradient: untouched and without state (Adagrad
    # makes its state at construction, as torch's: its step stays 0)
    if name == "Adagrad":
        assert copt.state[cp[1]]["step"].item() == 0
    else:
        assert cp[1] not in copt.state
    np.testing.assert_array_equal(ours[-1][1], problem(dtype)[0][1])


@pytest.mark.parametrize("name", list(GRIDS))
def test_state_keys_and_dtypes_match_torch(name):
    torch = pytest.importorskip("torch")
    kw = next(combos(name))
    p0, mats = problem(np.float64)
    cp, tp = cygrad_params(p0), torch_params(torch, p0)
    copt = getattr(optim, name)(cp, **kw)
    topt = getattr(torch.optim, name)(tp, **kw)
    run_cygrad(copt, cp, mats, 3, skip=SKIP)
    run_torch(torch, topt, tp, mats, 3, skip=SKIP)
    ours = copt.state_dict()["state"]
    theirs = topt.state_dict()["state"]
    assert sorted(ours) == sorted(theirs)
    for i in theirs:
        assert sorted(ours[i]) == sorted(theirs[i])
        for key, value in theirs[i].items():
            mine = ours[i][key]
            assert str(mine.dtype).split(".")[-1] == str(value.dtype).split(".")[-1]
            assert tuple(mine.shape) == tuple(value.shape)
            np.testing.assert_allclose(mine.numpy(), value.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", ["NAdam", "ASGD", "RAdam"])
def test_float64_default_dtype_matches_torch(name):
    """Scalar state (mu_product, eta, mu, step) follows the default dtype."""
    torch = pytest.importorskip("torch")
    old_c, old_t = cygrad.get_default_dtype(), torch.get_default_dtype()
    cygrad.set_default_dtype(cygrad.float64)
    torch.set_default_dtype(torch.float64)
    try:
        kw = dict(GRIDS[name][0], **({"t0": 10} if name == "ASGD" else {}))
        for dtype in DTYPES:
            ours, theirs, copt, _ = trajectories(torch, name, kw, dtype)
            assert_same_trajectory(ours, theirs, TOL[dtype])
            for st in copt.state.values():
                assert st["step"].dtype == cygrad.float64
    finally:
        cygrad.set_default_dtype(old_c)
        torch.set_default_dtype(old_t)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("name", list(GRIDS))
def test_torch_state_dict_loads_and_continues(name, dtype):
    torch = pytest.importorskip("torch")
    kw = list(combos(name))[-1]  # the last combination: every option on
    if name == "ASGD":
        kw = dict(kw, t0=10)  # averaging on within the run
    p0, mats = problem(dtype)
    tp = torch_params(torch, p0)
    topt = getattr(torch.optim, name)(tp, **kw)
    run_torch(torch, topt, tp, mats, 40, skip=SKIP)
    saved = topt.state_dict()
    # cygrad picks up torch's parameters and optimizer state half-way; torch
    # reloads its own state too, since loading casts scalar state (ASGD's eta
    # and mu, NAdam's mu_product) to the parameter's dtype
    cp = cygrad_params([p.detach().numpy() for p in tp])
    copt = getattr(optim, name)(cp, **kw)
    copt.load_state_dict(state_from_torch(saved))
    topt = getattr(torch.optim, name)(tp, **kw)
    topt.load_state_dict(saved)
    ours = run_cygrad(copt, cp, mats, 60, skip=SKIP)
    theirs = run_torch(torch, topt, tp, mats, 60, skip=SKIP)
    assert_same_trajectory(ours, theirs, TOL[dtype])


@pytest.mark.parametrize("name", list(GRIDS))
def test_load_state_dict_then_continue_equals_never_stopping(name):
    kw = list(combos(name))[-1]
    p0, mats = problem(np.float32)
    cp = cygrad_params(p0)
    opt = getattr(optim, name)(cp, **kw)
    straight = run_cygrad(opt, cp, mats, 30, skip=SKIP)
    cp2 = cygrad_params(p0)
    opt2 = getattr(optim, name)(cp2, **kw)
    run_cygrad(opt2, cp2, mats, 12, skip=SKIP)
    saved = opt2.state_dict()
    cp3 = cygrad_params([p._arr for p in cp2])
    opt3 = getattr(optim, name)(cp3, **kw)
    opt3.load_state_dict(saved)
    resumed = run_cygrad(opt3, cp3, mats, 18, skip=SKIP)
    for a, b in zip(straight[12:], resumed):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


# --------------------------------------------------------------------------
# bad hyperparameters: torch's ValueError and message


BAD = [
    ("NAdam", {"lr": -1.0}),
    ("NAdam", {"eps": -1e-3}),
    ("NAdam", {"betas": (1.0, 0.9)}),
    ("NAdam", {"betas": (0.9, -0.1)}),
    ("NAdam", {"weight_decay": -1}),
    ("NAdam", {"momentum_decay": -0.5}),
    ("RAdam", {"lr": -0.1}),
    ("RAdam", {"eps": -1.0}),
    ("RAdam", {"betas": (0.5, 1.5)}),
    ("RAdam", {"weight_decay": -0.1}),
    ("Adamax", {"lr": -0.1}),
    ("Adamax", {"eps": -0.1}),
    ("Adamax", {"betas": (-0.5, 0.5)}),
    ("Adamax", {"weight_decay": -2}),
    ("Adadelta", {"lr": -1}),
    ("Adadelta", {"rho": 1.5}),
    ("Adadelta", {"rho": -0.5}),
    ("Adadelta", {"eps": -1}),
    ("Adadelta", {"weight_decay": -1}),
    ("Rprop", {"lr": -1}),
    ("Rprop", {"etas": (1.5, 2.0)}),
    ("Rprop", {"etas": (0.5, 0.9)}),
    ("Rprop", {"etas": (0.0, 1.2)}),
    ("ASGD", {"lr": -1}),
    ("ASGD", {"weight_decay": -1}),
    ("Adafactor", {"lr": -1}),
    ("Adafactor", {"beta2_decay": 0.5}),
    ("Adafactor", {"eps": (-1e-3, 1e-3)}),
    ("Adafactor", {"eps": (None, -1.0)}),
    ("Adafactor", {"d": 0.5}),
    ("Adafactor", {"weight_decay": -0.1}),
]


@pytest.mark.parametrize(("name", "kw"), BAD, ids=[f"{n}-{k}" for n, k in BAD])
def test_bad_hyperparameters_raise_torchs_value_error(name, kw):
    p = cygrad.zeros(3, requires_grad=True)
    with pytest.raises(ValueError) as ours:
        getattr(optim, name)([p], **kw)
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError) as theirs:
        getattr(torch.optim, name)([torch.nn.Parameter(torch.zeros(3))], **kw)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("name", list(GRIDS))
def test_defaults_match_torch(name):
    torch = pytest.importorskip("torch")
    ours = getattr(optim, name)([cygrad.zeros(2, requires_grad=True)]).defaults
    theirs = getattr(torch.optim, name)([torch.nn.Parameter(torch.zeros(2))]).defaults
    assert ours == theirs  # every key, torch-only options included


@pytest.mark.parametrize("name", list(GRIDS))
def test_torch_only_options_accepted_off(name):
    p = cygrad.zeros(2, requires_grad=True)
    if name in TORCH_ONLY:
        getattr(optim, name)([p], **TORCH_ONLY[name])
        return
    getattr(optim, name)([p], foreach=True, differentiable=False, capturable=False)
    with pytest.raises(NotImplementedError):
        getattr(optim, name)([p], differentiable=True)


@pytest.mark.parametrize("name", list(GRIDS))
def test_add_param_group_and_group_options(name):
    torch = pytest.importorskip("torch")
    kw = next(combos(name))
    p0, mats = problem(np.float64)
    cp, tp = cygrad_params(p0), torch_params(torch, p0)
    copt = getattr(optim, name)(cp[:2], **kw)
    topt = getattr(torch.optim, name)(tp[:2], **kw)
    copt.add_param_group({"params": cp[2:], "lr": 0.003})
    topt.add_param_group({"params": tp[2:], "lr": 0.003})
    ours = run_cygrad(copt, cp, mats, 50)
    theirs = run_torch(torch, topt, tp, mats, 50)
    assert_same_trajectory(ours, theirs, 1e-10)


# --------------------------------------------------------------------------
# without torch: the first steps from the formulas


def one(value=1.0):
    return cygrad.tensor([value], dtype=cygrad.float64, requires_grad=True)


def step_with(opt, p, g):
    p.grad = cygrad.tensor([g], dtype=cygrad.float64)
    opt.step()
    return p.item()


def test_adamax_first_step_by_hand():
    p = one()
    opt = optim.Adamax([p], lr=0.1, eps=0.0)
    # m = 0.1 * 2, u = 2, clr = 0.1 / 0.1: p = 1 - 1 * 0.2 / 2
    assert step_with(opt, p, 2.0) == pytest.approx(0.9, rel=1e-15)
    assert opt.state[p]["exp_inf"].item() == 2.0


def test_adadelta_first_step_by_hand():
    p = one()
    opt = optim.Adadelta([p], lr=1.0, rho=0.5, eps=1e-2)
    # v = 0.5 * 4 = 2; delta = sqrt(0.01) / sqrt(2.01) * 2; a = 0.5 * delta**2
    delta = math.sqrt(0.01) / math.sqrt(2.01) * 2
    assert step_with(opt, p, 2.0) == pytest.approx(1 - delta, rel=1e-15)
    assert opt.state[p]["acc_delta"].item() == pytest.approx(0.5 * delta**2)


def test_rprop_steps_by_hand():
    p = one()
    opt = optim.Rprop([p], lr=0.1, etas=(0.5, 2.0), step_sizes=(0.01, 0.3))
    assert step_with(opt, p, 3.0) == pytest.approx(0.9)  # prev 0: factor 1
    assert step_with(opt, p, 1.0) == pytest.approx(0.7)  # same sign: 0.2
    assert step_with(opt, p, 1.0) == pytest.approx(0.4)  # 0.4, clamped to 0.3
    # sign change: the step size halves to 0.15, no move, prev = 0
    assert step_with(opt, p, -1.0) == pytest.approx(0.4)
    assert opt.state[p]["prev"].item() == 0.0
    assert opt.state[p]["step_size"].item() == pytest.approx(0.15)
    assert step_with(opt, p, -1.0) == pytest.approx(0.55)


def test_asgd_averages_from_t0():
    p = one()
    opt = optim.ASGD([p], lr=0.1, lambd=0.0, t0=2)
    values = [step_with(opt, p, 1.0) for _ in range(6)]
    assert values == pytest.approx([0.9, 0.8, 0.7, 0.6, 0.5, 0.4], rel=1e-6)
    # a step uses the mu set by the one before: 1 up to step 4 (ax copies p),
    # then 1 / (t - t0): ax is the mean of steps 4 to 6
    assert opt.state[p]["ax"].item() == pytest.approx(0.5, rel=1e-6)
    assert opt.state[p]["mu"].item() == pytest.approx(1 / 4)
    assert opt.state[p]["eta"].dtype == cygrad.float32


def test_nadam_first_step_by_hand():
    p = one()
    opt = optim.NAdam([p], lr=0.1, betas=(0.9, 0.999), eps=0.0, momentum_decay=0.0)
    # momentum_decay 0: mu = mu_next = 0.45, mu_product = 0.45 (float32)
    mu = 0.45
    mp = float(np.float32(mu))
    m, denom = 0.1 * 2.0, 2.0
    expected = 1 - 0.1 * (1 - mu) / (1 - mp) * 2.0 / denom
    expected -= 0.1 * mu / (1 - mp * mu) * m / denom
    assert step_with(opt, p, 2.0) == pytest.approx(expected, rel=1e-12)
    assert opt.state[p]["mu_product"].dtype == cygrad.float32


def test_radam_is_momentum_sgd_until_rho_exceeds_5():
    p = one()
    opt = optim.RAdam([p], lr=0.1)
    # step 1: rho_t = 1 <= 5, p = 1 - m / bc1 * lr = 1 - 2 * 0.1
    assert step_with(opt, p, 2.0) == pytest.approx(0.8, rel=1e-14)


def test_adafactor_state_shapes_factor_the_last_two_dims():
    p = cygrad.zeros(2, 3, 4, dtype=cygrad.float64, requires_grad=True)
    v = cygrad.zeros(5, dtype=cygrad.float64, requires_grad=True)
    opt = optim.Adafactor([p, v])
    p.grad = cygrad.ones(2, 3, 4, dtype=cygrad.float64)
    v.grad = cygrad.ones(5, dtype=cygrad.float64)
    opt.step()
    assert tuple(opt.state[p]["row_var"].shape) == (2, 3, 1)
    assert tuple(opt.state[p]["col_var"].shape) == (2, 1, 4)
    assert sorted(opt.state[v]) == ["step", "variance"]
    # step 1: beta2_t = 0, so the moments are the squares' means: 1 and 1
    np.testing.assert_array_equal(opt.state[p]["row_var"].numpy(), 1.0)


def test_sparse_adam_refuses_to_step_and_changes_nothing():
    p = cygrad.ones(3, requires_grad=True)
    opt = optim.SparseAdam([p], lr=0.1)
    p.grad = cygrad.ones(3)
    with pytest.raises(RuntimeError, match="does not support dense gradients"):
        opt.step()
    assert len(opt.state) == 0
    np.testing.assert_array_equal(p.detach().numpy(), 1.0)
    with pytest.raises(ValueError, match="Invalid learning rate: 0"):
        optim.SparseAdam([p], lr=0)
    with pytest.raises(ValueError, match="Invalid epsilon value: 0"):
        optim.SparseAdam([p], eps=0)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1"):
        optim.SparseAdam([p], betas=(0.9, 1.0))
    optim.SparseAdam([cygrad.ones(2, requires_grad=True)]).step()  # no gradient


def test_sparse_adam_defaults_match_torch():
    torch = pytest.importorskip("torch")
    ours = optim.SparseAdam([cygrad.zeros(2, requires_grad=True)]).defaults
    theirs = torch.optim.SparseAdam([torch.nn.Parameter(torch.zeros(2))]).defaults
    assert ours == {k: v for k, v in theirs.items()}
