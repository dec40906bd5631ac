"""Muon against torch: bfloat16 rounding, Newton-Schulz, trajectories, errors."""

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
from cygrad._kernels import optim_muon as km
from cygrad.optim.muon import zeropower_via_newtonschulz

SHAPES = [(8, 5), (5, 8), (3, 3), (6, 4)]
COEFS = (3.4445, -4.7750, 2.0315)
# Muon's update is bfloat16: a rounding that flips where BLAS and torch sum a
# product in another order moves one element by 2**-8 of the update, i.e. the
# parameter by ~lr * 2**-8 * |O| ~ 1e-6; a few such flips in 100 steps give
# up to ~2e-5 (float64 parameters too: the update is bfloat16 for both).
TOL = 5e-5


def test_bf16_rounding_equals_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x32 = np.concatenate([
        rng.standard_normal(5000).astype(np.float32) * 10.0 ** rng.integers(-30, 30, 5000),
        np.array([1.0, -1.0, 0.0, -0.0, 1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + 2**-20,
                  3.4e38, -3.4e38, 1e-40, np.inf, -np.inf], np.float32),
    ]).astype(np.float32)
    out = np.empty_like(x32)
    km.to_bf16(x32, out)
    np.testing.assert_array_equal(out, torch.from_numpy(x32).bfloat16().float().numpy())
    x64 = rng.standard_normal(5000) * (1 + 2.0**-9 + 2.0**-30)
    out = np.empty(x64.shape, np.float32)
    km.to_bf16(x64, out)
    np.testing.assert_array_equal(out, torch.from_numpy(x64).bfloat16().float().numpy())


@pytest.mark.parametrize("shape", [(8, 5), (5, 8), (16, 12), (4, 4)])
def test_newton_schulz_equals_torch(shape):
    torch = pytest.importorskip("torch")
    from torch.optim._muon import _zeropower_via_newtonschulz

    g = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    ours = zeropower_via_newtonschulz(g, COEFS, 5, 1e-7)
    theirs = _zeropower_via_newtonschulz(torch.from_numpy(g), COEFS, 5, 1e-7)
    np.testing.assert_array_equal(ours, theirs.float().numpy())


def test_newton_schulz_orthogonalises():
    g = np.random.default_rng(1).standard_normal((6, 10))
    o = zeropower_via_newtonschulz(g, COEFS, 5, 1e-7).astype(np.float64)
    s = np.linalg.svd(o, compute_uv=False)
    assert 0.6 < s.min() and s.max() < 1.25  # singular values pushed toward 1


GRID = [
    {},
    {"nesterov": False},
    {"weight_decay": 0.0, "adjust_lr_fn": "match_rms_adamw"},
    {"momentum": 0.5, "ns_steps": 3, "adjust_lr_fn": "original"},
    {"lr": 5e-4, "ns_coefficients": (2.0, -1.5, 0.5), "eps": 1e-5},
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=lambda d: d.__name__)
@pytest.mark.parametrize("kw", GRID, ids=lambda kw: "-".join(map(str, kw)) or "defaults")
def test_trajectory_matches_torch(kw, dtype):
    torch = pytest.importorskip("torch")
    p0, mats = problem(dtype, shapes=SHAPES)
    cp, tp = cygrad_params(p0), torch_params(torch, p0)
    ours = run_cygrad(optim.Muon(cp, **kw), cp, mats, 100, skip=(2,))
    theirs = run_torch(torch, torch.optim.Muon(tp, **kw), tp, mats, 100, skip=(2,))
    assert_same_trajectory(ours, theirs, TOL)
    np.testing.assert_array_equal(ours[-1][2], p0[2])  # no grad: untouched


def test_torch_state_dict_loads_and_continues():
    torch = pytest.importorskip("torch")
    p0, mats = problem(np.float32, shapes=SHAPES)
    tp = torch_params(torch, p0)
    topt = torch.optim.Muon(tp, nesterov=False)
    run_torch(torch, topt, tp, mats, 30)
    cp = cygrad_params([p.detach().numpy() for p in tp])
    copt = optim.Muon(cp, nesterov=False)
    copt.load_state_dict(state_from_torch(topt.state_dict()))
    ours = run_cygrad(copt, cp, mats, 40)
    theirs = run_torch(torch, topt, tp, mats, 40)
    assert_same_trajectory(ours, theirs, TOL)


BAD = [
    {"lr": -1.0},
    {"momentum": -0.1},
    {"weight_decay": -1.0},
    {"adjust_lr_fn": "sqrt"},
]


@pytest.mark.parametrize("kw", BAD, ids=lambda kw: next(iter(kw)))
def test_bad_hyperparameters_raise_torchs_value_error(kw):
    p = cygrad.zeros(3, 2, requires_grad=True)
    with pytest.raises(ValueError) as ours:
        optim.Muon([p], **kw)
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError) as theirs:
        torch.optim.Muon([torch.nn.Parameter(torch.zeros(3, 2))], **kw)
    assert str(ours.value) == str(theirs.value)


def test_only_2d_parameters():
    with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
        optim.Muon([cygrad.zeros(4, requires_grad=True)])


@pytest.mark.parametrize("kw", [{"ns_steps": 100}, {"ns_coefficients": (1.0, 2.0)}])
def test_bad_iteration_settings_raise_at_step_and_change_nothing(kw):
    p = cygrad.ones(3, 2, requires_grad=True)
    opt = optim.Muon([p], **kw)
    p.grad = cygrad.ones(3, 2)
    with pytest.raises(ValueError):
        opt.step()
    assert len(opt.state) == 0
    np.testing.assert_array_equal(p.detach().numpy(), 1.0)


def test_defaults_match_torch():
    torch = pytest.importorskip("torch")
    ours = optim.Muon([cygrad.zeros(2, 2, requires_grad=True)]).defaults
    theirs = torch.optim.Muon([torch.nn.Parameter(torch.zeros(2, 2))]).defaults
    assert ours == theirs
