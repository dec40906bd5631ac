"""Every scheduler's rate (and momentum) sequence equals torch's over 200 steps."""

import math
import warnings

import pytest

import cygrad
from cygrad import optim
from cygrad.optim import lr_scheduler

STEPS = 200


def _mult(epoch):
    return 0.97 if epoch % 3 else 1.01


# (optimizer, optimizer options, scheduler, scheduler options); "SUB:" entries
# of a composite are (name, options) built on the same optimizer
CASES = [
    ("SGD", {"lr": 0.1}, "MultiplicativeLR", {"lr_lambda": _mult}),
    ("SGD", {"lr": 0.1}, "ConstantLR", {}),
    ("SGD", {"lr": 0.1}, "ConstantLR", {"factor": 0.5, "total_iters": 7}),
    ("SGD", {"lr": 0.1}, "LinearLR", {}),
    ("SGD", {"lr": 0.1}, "LinearLR", {"start_factor": 0.2, "total_iters": 30}),
    ("SGD", {"lr": 0.1}, "LinearLR",
     {"start_factor": 1.0, "end_factor": 0.05, "total_iters": 120}),
    ("SGD", {"lr": 0.1}, "PolynomialLR", {"total_iters": 150, "power": 2.0}),
    ("SGD", {"lr": 0.1}, "PolynomialLR", {}),
    ("SGD", {"lr": 0.1}, "CosineAnnealingWarmRestarts", {"T_0": 10}),
    ("SGD", {"lr": 0.1}, "CosineAnnealingWarmRestarts",
     {"T_0": 7, "T_mult": 2, "eta_min": 1e-3}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}, "CyclicLR",
     {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 15}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}, "CyclicLR",
     {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 10, "step_size_down": 25,
      "mode": "triangular2"}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}, "CyclicLR",
     {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 12, "mode": "exp_range",
      "gamma": 0.99}),
    ("Adam", {"lr": 0.1}, "CyclicLR",
     {"base_lr": 0.001, "max_lr": 0.01, "step_size_up": 20, "base_momentum": 0.85,
      "max_momentum": 0.95}),
    ("SGD", {"lr": 0.1}, "CyclicLR",
     {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 9, "cycle_momentum": False,
      "scale_fn": _mult, "scale_mode": "iterations"}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}, "OneCycleLR",
     {"max_lr": 0.5, "total_steps": STEPS}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}, "OneCycleLR",
     {"max_lr": 0.5, "total_steps": STEPS, "anneal_strategy": "linear",
      "pct_start": 0.25}),
    ("Adam", {"lr": 0.1}, "OneCycleLR",
     {"max_lr": 0.02, "epochs": 10, "steps_per_epoch": 20, "three_phase": True}),
    ("AdamW", {"lr": 0.1}, "OneCycleLR",
     {"max_lr": [0.02], "total_steps": STEPS, "cycle_momentum": False,
      "div_factor": 10.0, "final_div_factor": 100.0}),
    ("SGD", {"lr": 0.1}, "SequentialLR",
     {"SUB:schedulers": [("LinearLR", {"start_factor": 0.1, "total_iters": 10}),
                         ("CosineAnnealingLR", {"T_max": 100})],
      "milestones": [10]}),
    ("SGD", {"lr": 0.1}, "SequentialLR",
     {"SUB:schedulers": [("ConstantLR", {"factor": 0.3, "total_iters": 5}),
                         ("ExponentialLR", {"gamma": 0.98}),
                         ("StepLR", {"step_size": 20, "gamma": 0.5})],
      "milestones": [8, 90]}),
    ("SGD", {"lr": 0.1}, "ChainedScheduler",
     {"SUB:schedulers": [("ConstantLR", {"factor": 0.5, "total_iters": 4}),
                         ("ExponentialLR", {"gamma": 0.99})]}),
    ("SGD", {"lr": 0.1}, "ChainedScheduler",
     {"SUB:schedulers": [("LinearLR", {"start_factor": 0.25, "total_iters": 12}),
                         ("MultiStepLR", {"milestones": [30, 60, 60], "gamma": 0.5}),
                         ("PolynomialLR", {"total_iters": 180, "power": 1.5})]}),
]
IDS = [f"{i}-{c[2]}" for i, c in enumerate(CASES)]


def build(lib, params, case):
    opt_name, opt_kw, name, kw = case
    opt = getattr(lib.optim, opt_name)(params, **opt_kw)
    kw = dict(kw)
    subs = kw.pop("SUB:schedulers", None)
    sched_mod = lib.optim.lr_scheduler
    if subs is not None:
        scheds = [getattr(sched_mod, n)(opt, **k) for n, k in subs]
        if name == "ChainedScheduler":
            return opt, sched_mod.ChainedScheduler(scheds)
        return opt, getattr(sched_mod, name)(opt, scheds, **kw)
    return opt, getattr(sched_mod, name)(opt, **kw)


def momentum_of(group):
    if "betas" in group:
        return group["betas"][0]
    return group.get("momentum")


def sequence(lib, case, steps=STEPS, groups=1):
    params = [
        {"params": [_param(lib)], "lr": 0.1 * (g + 1)} if groups > 1 else _param(lib)
        for g in range(groups)
    ]
    opt, sched = build(lib, params, case)
    out = [(sched.get_last_lr(), [momentum_of(g) for g in opt.param_groups])]
    for _ in range(steps):
        opt.step()
        sched.step()
        lrs = [g["lr"] for g in opt.param_groups]
        assert sched.get_last_lr() == lrs
        out.append((lrs, [momentum_of(g) for g in opt.param_groups]))
    return out


def _param(lib):
    if lib is cygrad:
        return cygrad.zeros(2, requires_grad=True)
    return lib.nn.Parameter(lib.zeros(2))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_sequence_equals_torch(case):
    torch = pytest.importorskip("torch")
    assert sequence(cygrad, case) == sequence(torch, case)  # same bits


@pytest.mark.parametrize(
    "case", [c for c in CASES if not c[3].get("SUB:schedulers")], ids=lambda c: c[2]
)
def test_per_group_sequences_equal_torch(case):
    torch = pytest.importorskip("torch")
    if isinstance(case[3].get("max_lr"), list):
        pytest.skip("one max_lr for one group")
    assert sequence(cygrad, case, 60, groups=2) == sequence(torch, case, 60, groups=2)


def test_warm_restarts_with_fractional_epochs_equal_torch():
    torch = pytest.importorskip("torch")
    out = []
    for lib in (cygrad, torch):
        opt = lib.optim.SGD([_param(lib)], lr=0.1)
        sched = lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(
            opt, T_0=3, T_mult=2, eta_min=0.001
        )
        seq = []
        iters = 7
        for epoch in range(12):
            for i in range(iters):
                opt.step()
                sched.step(epoch + i / iters)
                seq.append((opt.param_groups[0]["lr"], sched.T_i, sched.T_cur))
        out.append(seq)
    assert out[0] == out[1]


METRICS = [1.0 / (1 + 0.1 * i) if i < 40 else 0.2 + 0.001 * math.sin(i)
           for i in range(STEPS)]
PLATEAU = [
    {},
    {"patience": 3, "factor": 0.5},
    {"mode": "max", "patience": 2, "threshold": 0.01, "threshold_mode": "abs"},
    {"patience": 1, "cooldown": 4, "min_lr": 0.003, "factor": 0.3},
    {"patience": 0, "eps": 0.05, "threshold_mode": "abs", "threshold": 0.0},
]


@pytest.mark.parametrize("kw", PLATEAU, ids=lambda kw: "-".join(map(str, kw)))
def test_reduce_on_plateau_equals_torch(kw):
    torch = pytest.importorskip("torch")
    out = []
    for lib in (cygrad, torch):
        opt = lib.optim.SGD(
            [{"params": [_param(lib)]}, {"params": [_param(lib)], "lr": 0.05}], lr=0.1
        )
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, **kw)
        seq = []
        for m in METRICS:
            opt.step()
            sched.step(m)
            seq.append((sched.get_last_lr(), sched.num_bad_epochs,
                        sched.cooldown_counter, sched.best))
        out.append(seq)
    assert out[0] == out[1]


def test_reduce_on_plateau_by_hand():
    opt = optim.SGD([cygrad.zeros(1, requires_grad=True)], lr=1.0)
    sched = lr_scheduler.ReduceLROnPlateau(opt, patience=2, factor=0.5)
    lrs = []
    for m in [5, 4, 4, 4, 4, 4, 4, 3, 3, 3, 3]:
        sched.step(m)
        lrs.append(sched.get_last_lr()[0])
    # 4 is better than 5; then bad epochs 1, 2, 3 (> patience: cut, reset),
    # 1, 2; 3 is better; then 1, 2, 3: cut again
    assert lrs == [1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.25]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_state_dict_resume_equals_never_stopping(case):
    straight = sequence(cygrad, case, steps=120)
    opt, sched = build(cygrad, [_param(cygrad)], case)
    for _ in range(50):
        opt.step()
        sched.step()
    saved_opt, saved = opt.state_dict(), sched.state_dict()
    opt2, sched2 = build(cygrad, [_param(cygrad)], case)
    opt2.load_state_dict(saved_opt)
    sched2.load_state_dict(saved)
    rest = []
    for _ in range(70):
        opt2.step()
        sched2.step()
        rest.append(([g["lr"] for g in opt2.param_groups],
                     [momentum_of(g) for g in opt2.param_groups]))
    assert rest == straight[51:]


# --------------------------------------------------------------------------
# warnings and bad input, as torch's


def test_scheduler_step_before_optimizer_step_warns():
    opt = optim.SGD([cygrad.zeros(1, requires_grad=True)], lr=1.0)
    sched = lr_scheduler.StepLR(opt, 3)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    opt2 = optim.SGD([cygrad.zeros(1, requires_grad=True)], lr=1.0)
    sched2 = lr_scheduler.LinearLR(opt2)
    opt2.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched2.step()
        sched2.step()


def test_overridden_optimizer_step_warns():
    opt = optim.SGD([cygrad.zeros(1, requires_grad=True)], lr=1.0)
    sched = lr_scheduler.ExponentialLR(opt, 0.5)
    opt.step = lambda closure=None: None
    opt.step()
    with pytest.warns(UserWarning, match="has been overridden"):
        sched.step()


def test_get_lr_outside_step_warns():
    opt = optim.SGD([cygrad.zeros(1, requires_grad=True)], lr=1.0)
    sched = lr_scheduler.PolynomialLR(opt)
    with pytest.warns(UserWarning, match="use `get_last_lr\\(\\)`"):
        sched.get_lr()


BAD = [
    ("ConstantLR", {"factor": 1.5}, ValueError),
    ("LinearLR", {"start_factor": 0.0}, ValueError),
    ("LinearLR", {"end_factor": 2.0}, ValueError),
    ("CosineAnnealingWarmRestarts", {"T_0": 0}, ValueError),
    ("CosineAnnealingWarmRestarts", {"T_0": 5, "T_mult": 0}, ValueError),
    ("CosineAnnealingWarmRestarts", {"T_0": 5, "eta_min": "x"}, ValueError),
    ("CyclicLR", {"base_lr": 0.1, "max_lr": 1.0, "mode": "square"}, ValueError),
    ("CyclicLR", {"base_lr": [0.1, 0.2], "max_lr": 1.0}, ValueError),
    ("OneCycleLR", {"max_lr": 1.0}, ValueError),
    ("OneCycleLR", {"max_lr": 1.0, "total_steps": 0}, ValueError),
    ("OneCycleLR", {"max_lr": 1.0, "total_steps": 10, "pct_start": 1}, ValueError),
    ("OneCycleLR", {"max_lr": 1.0, "total_steps": 10, "anneal_strategy": "exp"},
     ValueError),
    ("OneCycleLR", {"max_lr": 1.0, "epochs": 2, "steps_per_epoch": 0}, ValueError),
    ("ReduceLROnPlateau", {"factor": 1.0}, ValueError),
    ("ReduceLROnPlateau", {"mode": "avg"}, ValueError),
    ("ReduceLROnPlateau", {"threshold_mode": "pct"}, ValueError),
    ("ReduceLROnPlateau", {"min_lr": [0.1, 0.2]}, ValueError),
    ("MultiplicativeLR", {"lr_lambda": 3}, TypeError),
]


@pytest.mark.parametrize(("name", "kw", "exc"), BAD, ids=[b[0] for b in BAD])
def test_bad_arguments_raise_like_torch(name, kw, exc):
    opt = optim.SGD([cygrad.zeros(1, requires_grad=True)], lr=1.0, momentum=0.9)
    with pytest.raises(exc) as ours:
        getattr(lr_scheduler, name)(opt, **kw)
    torch = pytest.importorskip("torch")
    topt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0, momentum=0.9)
    with pytest.raises(exc) as theirs:
        getattr(torch.optim.lr_scheduler, name)(topt, **kw)
    assert str(ours.value) == str(theirs.value)


def test_cyclic_momentum_needs_a_momentum():
    opt = optim.Adagrad([cygrad.zeros(1, requires_grad=True)])
    with pytest.raises(ValueError, match="must support momentum or beta1"):
        lr_scheduler.CyclicLR(opt, 0.01, 0.1)
    with pytest.raises(ValueError, match="must support momentum or beta1"):
        lr_scheduler.OneCycleLR(opt, 0.1, total_steps=10)


def test_one_cycle_past_total_steps_raises():
    opt = optim.SGD([cygrad.zeros(1, requires_grad=True)], lr=1.0, momentum=0.9)
    sched = lr_scheduler.OneCycleLR(opt, 0.1, total_steps=3)
    for _ in range(3):
        opt.step()
        sched.step()
    with pytest.raises(ValueError, match="Tried to step 4 times"):
        sched.step()


def test_composites_check_their_schedulers():
    opt = optim.SGD([cygrad.zeros(1, requires_grad=True)], lr=1.0)
    other = optim.SGD([cygrad.zeros(1, requires_grad=True)], lr=1.0)
    a = lr_scheduler.StepLR(opt, 2)
    b = lr_scheduler.StepLR(other, 2)
    plateau = lr_scheduler.ReduceLROnPlateau(opt)
    with pytest.raises(ValueError, match="at least one scheduler"):
        lr_scheduler.SequentialLR(opt, [], [])
    with pytest.raises(ValueError, match="belong to the same optimizer"):
        lr_scheduler.SequentialLR(opt, [a, b], [3])
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        lr_scheduler.ChainedScheduler([a, plateau])
    with pytest.raises(ValueError, match="one more than the number of milestone"):
        lr_scheduler.SequentialLR(opt, [a], [3])
