"""One training step of an MLP: cygrad vs hand-written NumPy vs torch.

A step is ``zero_grad``, forward (Linear-ReLU-Linear), cross-entropy with
class indices (mean), backward and one Adam update (lr 1e-3), in float32,
batch 128.  Two models, one pytest-benchmark group each:

``mlp_step-64-128-10``   the digits-sized MLP (issue 7's first case)
``mlp_step-784-256-10``  the MNIST-sized MLP (torch takes ~3.4 ms per step)

Every library starts from the same seeded weights; ``test_agree_mlp_*``
checks that three steps give the same parameters in all of them.

    pytest benchmarks/bench_mlp.py --benchmark-only            # timings
    pytest benchmarks/bench_mlp.py --benchmark-disable         # fast check
"""

import importlib
import math

import numpy as np
import pytest

from benchmarks import LIBS, need, pick, run, tag, to_numpy

F32 = np.float32
BATCH = 128
MODELS = {
    "64-128-10": pick((64, 128, 10), (64, 16, 10)),
    "784-256-10": pick((784, 256, 10), (32, 16, 10)),
}
LR = 1e-3
BETAS = (0.9, 0.999)
EPS = 1e-8


def _init(dims, seed=0):
    """Torch-default-like weights (U(-1/sqrt(fan_in), ..)) and one batch."""
    n_in, n_hidden, n_out = dims
    rng = np.random.default_rng(seed)

    def uniform(shape, fan_in):
        bound = 1 / math.sqrt(fan_in)
        return rng.uniform(-bound, bound, shape).astype(F32)

    params = [
        uniform((n_hidden, n_in), n_in),
        uniform((n_hidden,), n_in),
        uniform((n_out, n_hidden), n_hidden),
        uniform((n_out,), n_hidden),
    ]
    x = rng.standard_normal((BATCH, n_in)).astype(F32)
    t = rng.integers(0, n_out, BATCH).astype(np.int64)
    return params, x, t


def mlp_step(lib, dims):
    params0, x0, t0 = _init(dims)
    if lib == "numpy":
        return _numpy_step(params0, x0, t0)
    T = need(lib, "nn.Linear", "nn.CrossEntropyLoss", "optim.Adam")
    nn = importlib.import_module(f"{lib}.nn")
    optim = importlib.import_module(f"{lib}.optim")
    n_in, n_hidden, n_out = dims
    model = nn.Sequential(
        nn.Linear(n_in, n_hidden), nn.ReLU(), nn.Linear(n_hidden, n_out)
    )
    with T.no_grad():
        for p, arr in zip(model.parameters(), params0, strict=True):
            p.copy_(T.tensor(arr))
    opt = optim.Adam(model.parameters(), lr=LR, betas=BETAS, eps=EPS)
    loss_fn = nn.CrossEntropyLoss()
    x = T.tensor(x0)
    t = T.tensor(t0)

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), t)
        loss.backward()
        opt.step()
        return [loss, *model.parameters()]

    return step


def _numpy_step(params0, x, t):
    """Forward, backward and Adam written out by hand: no autograd at all."""
    params = [p.copy() for p in params0]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    state = {"t": 0}
    rows = np.arange(len(t))
    b1, b2 = BETAS

    def step():
        w1, c1, w2, c2 = params
        h = x @ w1.T + c1
        a = np.maximum(h, 0)
        z = a @ w2.T + c2
        zmax = z.max(axis=1, keepdims=True)
        e = np.exp(z - zmax)
        s = e.sum(axis=1, keepdims=True)
        loss = (np.log(s[:, 0]) + zmax[:, 0] - z[rows, t]).mean(dtype=np.float64)
        gz = e / s
        gz[rows, t] -= 1
        gz *= F32(1 / len(t))
        grads = [None, None, gz.T @ a, gz.sum(axis=0)]
        ga = gz @ w2
        ga *= h > 0
        grads[0] = ga.T @ x
        grads[1] = ga.sum(axis=0)
        state["t"] += 1
        k = state["t"]
        bc1, bc2 = 1 - b1**k, 1 - b2**k
        for p, g, mi, vi in zip(params, grads, m, v, strict=True):
            mi += (1 - b1) * (g - mi)
            vi *= b2
            vi += (1 - b2) * g * g
            p -= (LR / bc1) * mi / (np.sqrt(vi) / math.sqrt(bc2) + EPS)
        return [F32(loss), *params]

    return step


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("model", list(MODELS))
def test_mlp_step(benchmark, lib, model):
    step = mlp_step(lib, MODELS[model])
    step()  # warm up: Adam state exists in every library before timing
    tag(benchmark, f"mlp_step-{model}", lib, batch=BATCH, dims=MODELS[model])
    run(benchmark, step)


@pytest.mark.parametrize("model", list(MODELS))
def test_agree_mlp(model):
    outs = {}
    for lib in LIBS:
        try:
            step = mlp_step(lib, MODELS[model])
        except pytest.skip.Exception:
            continue
        for _ in range(3):
            result = step()
        outs[lib] = [to_numpy(r) for r in result]
    if "numpy" not in outs or len(outs) < 2:
        pytest.skip(f"nothing to compare with: ran only {sorted(outs)}")
    for lib, values in outs.items():
        for i, (got, want) in enumerate(zip(values, outs["numpy"], strict=True)):
            np.testing.assert_allclose(
                got.astype(np.float64),
                want.astype(np.float64),
                rtol=1e-3,
                atol=1e-5,
                err_msg=f"{lib} output {i} differs from NumPy",
            )
