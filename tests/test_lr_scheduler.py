"""cygrad.optim.lr_scheduler: lr sequences vs closed forms and vs torch."""

import math

import numpy as np
import pytest

import cygrad
from cygrad import optim
from cygrad.optim import lr_scheduler

EPOCHS = 50


def _identity(epoch):
    return 0.95**epoch


SCHEDULERS = [
    ("StepLR", {"step_size": 7, "gamma": 0.5}),
    ("MultiStepLR", {"milestones": [5, 12, 12, 30], "gamma": 0.3}),
    ("ExponentialLR", {"gamma": 0.9}),
    ("CosineAnnealingLR", {"T_max": 20}),
    ("CosineAnnealingLR", {"T_max": 15, "eta_min": 0.01}),
    ("LambdaLR", {"lr_lambda": _identity}),
]
IDS = [f"{n}-{i}" for i, (n, _) in enumerate(SCHEDULERS)]


def closed_form(name, kw, base, epoch):
    if name == "StepLR":
        return base * kw["gamma"] ** (epoch // kw["step_size"])
    if name == "MultiStepLR":
        return base * kw["gamma"] ** sum(m <= epoch for m in kw["milestones"])
    if name == "ExponentialLR":
        return base * kw["gamma"] ** epoch
    if name == "CosineAnnealingLR":
        eta_min = kw.get("eta_min", 0.0)
        return (
            eta_min
            + (base - eta_min) * (1 + math.cos(math.pi * epoch / kw["T_max"])) / 2
        )
    return base * kw["lr_lambda"](epoch)


def lr_sequence(lib_optim, lib_sched, param, name, kw, base=0.1, epochs=EPOCHS):
    opt = lib_optim.SGD([param], lr=base, momentum=0.9)
    sched = getattr(lib_sched, name)(opt, **kw)
    seq = [opt.param_groups[0]["lr"]]
    assert sched.get_last_lr() == [seq[0]]
    for _ in range(epochs):
        opt.step()
        sched.step()
        seq.append(opt.param_groups[0]["lr"])
        assert sched.get_last_lr() == [seq[-1]]
    return seq


@pytest.mark.parametrize(("name", "kw"), SCHEDULERS, ids=IDS)
def test_sequence_follows_closed_form(name, kw):
    seq = lr_sequence(
        optim, lr_scheduler, cygrad.zeros(2, requires_grad=True), name, kw
    )
    expected = [closed_form(name, kw, 0.1, e) for e in range(EPOCHS + 1)]
    np.testing.assert_allclose(seq, expected, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize(("name", "kw"), SCHEDULERS, ids=IDS)
def test_sequence_equals_torch(name, kw):
    torch = pytest.importorskip("torch")
    ours = lr_sequence(
        optim, lr_scheduler, cygrad.zeros(2, requires_grad=True), name, kw
    )
    theirs = lr_sequence(
        torch.optim,
        torch.optim.lr_scheduler,
        torch.nn.Parameter(torch.zeros(2)),
        name,
        kw,
    )
    assert ours == theirs  # the same float operations, so the same bits


def test_cosine_goes_back_up_past_t_max_like_torch():
    seq = lr_sequence(
        optim,
        lr_scheduler,
        cygrad.zeros(2, requires_grad=True),
        "CosineAnnealingLR",
        {"T_max": 10},
        epochs=30,
    )
    assert seq[10] == pytest.approx(0.0, abs=1e-15)
    assert seq[20] == pytest.approx(0.1, rel=1e-12)
    assert seq[15] == pytest.approx(0.05, rel=1e-12)


def test_per_group_lambdas_and_base_lrs():
    a = cygrad.zeros(1, requires_grad=True)
    b = cygrad.zeros(1, requires_grad=True)
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 1.0}], lr=0.5)
    sched = lr_scheduler.LambdaLR(opt, [lambda e: 1.0 / (e + 1), lambda e: e])
    assert sched.base_lrs == [0.5, 1.0]
    assert sched.get_last_lr() == [0.5, 0.0]
    opt.step()
    sched.step()
    assert sched.get_last_lr() == [0.25, 1.0]
    assert [g["initial_lr"] for g in opt.param_groups] == [0.5, 1.0]
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        lr_scheduler.LambdaLR(opt, [lambda e: 1.0])


def test_state_dict_round_trip():
    p = cygrad.zeros(1, requires_grad=True)
    opt = optim.SGD([p], lr=0.1)
    sched = lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
    for _ in range(4):
        opt.step()
        sched.step()
    sd = sched.state_dict()
    assert "optimizer" not in sd and sd["last_epoch"] == 4
    opt2 = optim.SGD([p], lr=0.1)
    opt2.load_state_dict(opt.state_dict())
    sched2 = lr_scheduler.StepLR(opt2, step_size=100, gamma=0.9)
    sched2.load_state_dict(sd)
    for _ in range(5):
        for o, s in ((opt, sched), (opt2, sched2)):
            o.step()
            s.step()
    assert sched2.get_last_lr() == sched.get_last_lr()
    assert sched2.last_epoch == 9


def test_step_with_epoch_uses_closed_form_and_warns():
    opt = optim.SGD([cygrad.zeros(1, requires_grad=True)], lr=1.0)
    sched = lr_scheduler.ExponentialLR(opt, gamma=0.5)
    opt.step()  # else the order warning comes too
    with pytest.warns(UserWarning, match="deprecated"):
        sched.step(3)
    assert sched.get_last_lr() == [0.125]


def test_resuming_needs_initial_lr_and_an_optimizer():
    opt = optim.SGD([cygrad.zeros(1, requires_grad=True)], lr=1.0)
    with pytest.raises(KeyError, match="initial_lr"):
        lr_scheduler.StepLR(opt, step_size=2, last_epoch=3)
    with pytest.raises(TypeError, match="is not an Optimizer"):
        lr_scheduler.StepLR(object(), step_size=2)
