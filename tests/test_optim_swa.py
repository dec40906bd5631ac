"""cygrad.optim.swa_utils against torch: averaged weights, SWALR, update_bn."""

import numpy as np
import pytest

import cygrad
from cygrad import nn, optim
from cygrad.optim import swa_utils


def cy_linear(w, b):
    m = nn.Linear(w.shape[1], w.shape[0], dtype=cygrad.from_numpy(w).dtype)
    m.load_state_dict({"weight": cygrad.from_numpy(w.copy()),
                       "bias": cygrad.from_numpy(b.copy())})
    return m


def torch_linear(torch, w, b):
    m = torch.nn.Linear(w.shape[1], w.shape[0]).to(torch.from_numpy(w).dtype)
    with torch.no_grad():
        m.weight.copy_(torch.from_numpy(w))
        m.bias.copy_(torch.from_numpy(b))
    return m


def perturb(models, rng, dtype):
    """The same random change to each library's model."""
    deltas = None
    for lib_model in models:
        params = list(lib_model.parameters())
        if deltas is None:
            deltas = [rng.standard_normal(tuple(p.shape)).astype(dtype) for p in params]
        for p, d in zip(params, deltas):
            arr = p.detach().numpy()
            if hasattr(p, "_arr"):
                p._arr[...] = arr + d
            else:
                import torch

                with torch.no_grad():
                    p.copy_(torch.from_numpy(arr + d))


AVERAGES = {
    "swa": ({}, {}),
    "ema-multi": ({"multi_avg_fn": "ema_multi"}, {}),
    "ema": ({"avg_fn": "ema"}, {}),
    "swa-multi": ({"multi_avg_fn": "swa_multi"}, {}),
}


def make_fn(lib, what):
    mod = lib.optim.swa_utils
    return {
        "ema_multi": lambda: mod.get_ema_multi_avg_fn(0.9),
        "swa_multi": lambda: mod.get_swa_multi_avg_fn(),
        "ema": lambda: mod.get_ema_avg_fn(0.8),
    }[what]()


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=lambda d: d.__name__)
@pytest.mark.parametrize("kind", list(AVERAGES))
def test_averaged_model_matches_torch(kind, dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 4)).astype(dtype)
    b = rng.standard_normal(3).astype(dtype)
    cm, tm = cy_linear(w, b), torch_linear(torch, w, b)
    kw, _ = AVERAGES[kind]
    ckw = {k: make_fn(cygrad, v) for k, v in kw.items()}
    tkw = {k: make_fn(torch, v) for k, v in kw.items()}
    ca = swa_utils.AveragedModel(cm, **ckw)
    ta = torch.optim.swa_utils.AveragedModel(tm, **tkw)
    tol = 1e-12 if dtype == np.float64 else 1e-6
    for _ in range(12):
        ca.update_parameters(cm)
        ta.update_parameters(tm)
        for p, q in zip(ca.parameters(), ta.parameters()):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(),
                                       rtol=tol, atol=tol)
        perturb([cm, tm], rng, dtype)
    assert int(ca.n_averaged.item()) == int(ta.n_averaged.item()) == 12
    x = rng.standard_normal((2, 4)).astype(dtype)
    np.testing.assert_allclose(ca(cygrad.from_numpy(x)).detach().numpy(),
                               ta(torch.from_numpy(x)).detach().numpy(), rtol=tol * 10)


def test_running_mean_by_hand_and_copy_is_independent():
    m = nn.Linear(2, 1)
    avg = swa_utils.AveragedModel(m)
    values = [1.0, 2.0, 6.0]
    for v in values:
        m.weight._arr[...] = v
        avg.update_parameters(m)
    np.testing.assert_allclose(avg.module.weight.detach().numpy(), 3.0)
    assert avg.module.weight is not m.weight
    assert not np.shares_memory(avg.module.weight._arr, m.weight._arr)
    assert avg.n_averaged.dtype == cygrad.int64


class WithBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.register_buffer("scale", cygrad.ones(2))

    def forward(self, x):
        return self.lin(x) * self.scale


@pytest.mark.parametrize("use_buffers", [False, True])
def test_buffers_copied_or_averaged(use_buffers):
    m = WithBuffer()
    avg = swa_utils.AveragedModel(m, use_buffers=use_buffers)
    for v in [2.0, 4.0]:
        m.scale._arr[...] = v
        avg.update_parameters(m)
    expected = 3.0 if use_buffers else 4.0
    np.testing.assert_array_equal(avg.module.scale.numpy(), expected)


def test_bad_arguments():
    with pytest.raises(ValueError, match="Invalid decay value 1.5"):
        swa_utils.get_ema_multi_avg_fn(1.5)
    with pytest.raises(ValueError, match="Invalid decay value -1"):
        swa_utils.get_ema_avg_fn(-1)
    m = nn.Linear(2, 1)
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        swa_utils.AveragedModel(m, avg_fn=swa_utils.get_swa_avg_fn(),
                                multi_avg_fn=swa_utils.get_swa_multi_avg_fn())
    opt = optim.SGD(m.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="anneal_strategy must be one of"):
        swa_utils.SWALR(opt, 0.05, anneal_strategy="exp")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater"):
        swa_utils.SWALR(opt, 0.05, anneal_epochs=-1)


# --------------------------------------------------------------------------
# SWALR


SWALR_CASES = [
    {"swa_lr": 0.05},
    {"swa_lr": 0.05, "anneal_epochs": 25, "anneal_strategy": "linear"},
    {"swa_lr": [0.01, 0.2], "anneal_epochs": 7},
    {"swa_lr": 0.3, "anneal_epochs": 0},
]


@pytest.mark.parametrize("kw", SWALR_CASES, ids=lambda kw: "-".join(map(str, kw.values())))
def test_swalr_sequence_equals_torch(kw):
    torch = pytest.importorskip("torch")
    seqs = []
    for lib in (cygrad, torch):
        ps = [lib.zeros(2, requires_grad=True) if lib is cygrad
              else torch.nn.Parameter(torch.zeros(2)) for _ in range(2)]
        opt = lib.optim.SGD([{"params": [ps[0]]}, {"params": [ps[1]], "lr": 0.5}],
                            lr=0.1)
        sched = lib.optim.swa_utils.SWALR(opt, **kw)
        seq = [sched.get_last_lr()]
        for _ in range(200):
            opt.step()
            sched.step()
            seq.append(sched.get_last_lr())
        seqs.append(seq)
    assert seqs[0] == seqs[1]


# --------------------------------------------------------------------------
# update_bn, over the batch norms (torch's _BatchNorm layers)


def test_update_bn_matches_torch_batch_norm():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    w = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    batches = [rng.standard_normal((8, 4)).astype(np.float32) for _ in range(5)]
    cm = nn.Sequential(cy_linear(w, b), nn.BatchNorm1d(3, momentum=0.3))
    tm = torch.nn.Sequential(torch_linear(torch, w, b),
                             torch.nn.BatchNorm1d(3, momentum=0.3))
    cm.eval()
    tm.eval()
    cygrad_loader = [(cygrad.from_numpy(x), 0) for x in batches]
    swa_utils.update_bn(cygrad_loader, cm)
    torch.optim.swa_utils.update_bn([(torch.from_numpy(x), 0) for x in batches], tm)
    np.testing.assert_allclose(cm[1].running_mean.numpy(),
                               tm[1].running_mean.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(cm[1].running_var.numpy(),
                               tm[1].running_var.numpy(), rtol=1e-5, atol=1e-6)
    assert cm[1].momentum == tm[1].momentum == 0.3
    assert not cm.training and not tm.training
    assert int(cm[1].num_batches_tracked.item()) == 5


def test_update_bn_is_the_plain_mean_over_batches():
    layer = nn.BatchNorm1d(2)
    batches = [cygrad.tensor([[1.0, 2.0], [3.0, 6.0]]),
               cygrad.tensor([[5.0, 0.0], [7.0, 0.0]])]
    swa_utils.update_bn(batches, layer)
    # momentum None: the cumulative average of the batch means, (2 + 6) / 2 and
    # (4 + 0) / 2
    np.testing.assert_allclose(layer.running_mean.numpy(), [4.0, 2.0])
    assert layer.momentum == 0.1 and layer.training


def test_update_bn_leaves_instance_norms_alone_as_torch():
    inorm = nn.InstanceNorm1d(2, track_running_stats=True)
    swa_utils.update_bn([cygrad.ones(3, 2, 4)], nn.Sequential(inorm))
    np.testing.assert_array_equal(inorm.running_mean.numpy(), [0.0, 0.0])


def test_update_bn_without_norm_layers_does_nothing():
    m = nn.Linear(2, 2)
    calls = []
    swa_utils.update_bn(iter(calls), m)  # the loader is not even iterated
