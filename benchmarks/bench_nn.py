"""CNN training steps and the convolution/pooling/normalisation layers:
cygrad vs torch, one group per case, one thread each.

Groups:
``cnn_step-small``  one training step (zero_grad, forward, cross-entropy,
                    backward, Adam) of Conv2d(1,8,3,padding=1)-ReLU-
                    MaxPool2d(2)-Flatten-Linear(128,10), batch 64, 8x8 inputs
                    (issue 18: <= 0.8x torch)
``cnn_step-mnist``  Conv2d(1,16,3,p=1)-ReLU-MaxPool2d(2)-Conv2d(16,32,3,p=1)-
                    ReLU-MaxPool2d(2)-Flatten-Linear(1568,10), batch 128,
                    28x28 inputs (issue 18: <= 1.2x torch)
``layer-<name>``    forward + backward of one layer at a large size (issue
                    18: within 1.5x of torch), float32
``embed_ln_drop``   Embedding(1000, 64) -> LayerNorm(64) -> Dropout(0.1),
                    forward + backward on (32, 64) indices (issue 18:
                    <= 0.3x torch)

There is no hand-written NumPy column here: a NumPy CNN step is a second
implementation of the whole lowering, not a baseline of autograd overhead.
Every library starts from the same weights and inputs; ``test_agree_*``
checks that the CNN steps and the layers give the same numbers in both.

    pytest benchmarks/bench_nn.py --benchmark-only        # timings
    pytest benchmarks/bench_nn.py --benchmark-disable     # fast check
    python -m benchmarks.bench_nn    # cygrad and torch alternating, round by
                                     # round: median ratios on a busy machine
"""

import importlib

import numpy as np
import pytest

from benchmarks import need, pick, round_robin, run, tag, to_numpy

F32 = np.float32
LIBS = ("cygrad", "torch")
LR = 1e-3

CNNS = {
    "small": dict(batch=pick(64, 8), side=8, target=0.8),
    "mnist": dict(batch=pick(128, 4), side=28, target=1.2),
}


def _model(nn, name):
    if name == "small":
        return nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
            nn.Linear(128, 10),
        )
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(1568, 10),
    )


def _weights(name):
    """Seeded torch-default-like weights of the model (U(-1/sqrt(fan_in), ..)
    for each weight and the bias after it), as NumPy arrays."""
    rng = np.random.default_rng(0)
    weights = {
        "small": [(8, 1, 3, 3), (10, 128)],
        "mnist": [(16, 1, 3, 3), (32, 16, 3, 3), (10, 1568)],
    }[name]
    arrays = []
    for shape in weights:
        bound = 1 / np.sqrt(np.prod(shape[1:]))
        arrays.append(rng.uniform(-bound, bound, shape).astype(F32))
        arrays.append(rng.uniform(-bound, bound, shape[:1]).astype(F32))
    return arrays


def cnn_step(lib, name):
    cfg = CNNS[name]
    T = need(lib, "nn.Conv2d", "nn.MaxPool2d", "nn.Flatten", "optim.Adam")
    nn = importlib.import_module(f"{lib}.nn")
    optim = importlib.import_module(f"{lib}.optim")
    model = _model(nn, name)
    with T.no_grad():
        for p, arr in zip(model.parameters(), _weights(name), strict=True):
            p.copy_(T.tensor(arr))
    rng = np.random.default_rng(1)
    x = T.tensor(rng.standard_normal((cfg["batch"], 1, cfg["side"], cfg["side"]))
                 .astype(F32))
    t = T.tensor(rng.integers(0, 10, cfg["batch"]).astype(np.int64))
    opt = optim.Adam(model.parameters(), lr=LR)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), t)
        loss.backward()
        opt.step()
        return [loss, *model.parameters()]

    return step


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("name", list(CNNS))
def test_cnn_step(benchmark, lib, name):
    step = cnn_step(lib, name)
    step()  # warm up: Adam state exists before timing
    cfg = CNNS[name]
    tag(benchmark, f"cnn_step-{name}", lib, batch=cfg["batch"], side=cfg["side"],
        target={"torch": cfg["target"]}, target_source="#18")
    run(benchmark, step)


@pytest.mark.parametrize("name", list(CNNS))
def test_agree_cnn_step(name):
    outs = {}
    for lib in LIBS:
        step = cnn_step(lib, name)
        for _ in range(3):
            result = step()
        outs[lib] = [to_numpy(r) for r in result]
    for i, (got, want) in enumerate(zip(outs["cygrad"], outs["torch"], strict=True)):
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   rtol=1e-3, atol=1e-5,
                                   err_msg=f"cnn {name}: output {i} differs")


# ---------------------------------------------------------------------------
# single layers at large sizes: forward + backward (input and parameters)


# name -> (module factory taking the library's nn, input shape)
LAYERS = {
    "conv2d-16x32x32x32-k3": (lambda nn: nn.Conv2d(32, 32, 3, padding=1),
                              pick((16, 32, 32, 32), (2, 32, 6, 6))),
    "conv2d-depthwise-16x64x32x32": (
        lambda nn: nn.Conv2d(64, 64, 3, padding=1, groups=64),
        pick((16, 64, 32, 32), (2, 64, 6, 6))),
    "conv1d-32x64x512-k5": (lambda nn: nn.Conv1d(64, 64, 5, padding=2),
                            pick((32, 64, 512), (2, 64, 16))),
    "conv_transpose2d-16x32x16x16-s2": (
        lambda nn: nn.ConvTranspose2d(32, 16, 4, stride=2, padding=1),
        pick((16, 32, 16, 16), (2, 32, 4, 4))),
    "max_pool2d-32x64x56x56": (lambda nn: nn.MaxPool2d(2),
                               pick((32, 64, 56, 56), (2, 4, 8, 8))),
    "max_pool2d-k3s2p1-32x64x56x56": (lambda nn: nn.MaxPool2d(3, 2, 1),
                                      pick((32, 64, 56, 56), (2, 4, 8, 8))),
    "avg_pool2d-32x64x56x56": (lambda nn: nn.AvgPool2d(2),
                               pick((32, 64, 56, 56), (2, 4, 8, 8))),
    "adaptive_avg_pool2d-32x256x14x14": (lambda nn: nn.AdaptiveAvgPool2d(1),
                                         pick((32, 256, 14, 14), (2, 8, 4, 4))),
    "batch_norm2d-32x64x56x56": (lambda nn: nn.BatchNorm2d(64),
                                 pick((32, 64, 56, 56), (2, 64, 4, 4))),
    "layer_norm-4096x1024": (lambda nn: nn.LayerNorm(1024),
                             pick((4096, 1024), (8, 1024))),
    "group_norm-32x64x28x28": (lambda nn: nn.GroupNorm(8, 64),
                               pick((32, 64, 28, 28), (2, 64, 4, 4))),
    "rms_norm-4096x1024": (lambda nn: nn.RMSNorm(1024),
                           pick((4096, 1024), (8, 1024))),
    "upsample_bilinear-16x32x32x32": (
        lambda nn: nn.Upsample(scale_factor=2, mode="bilinear"),
        pick((16, 32, 32, 32), (2, 4, 4, 4))),
    "conv3d-4x16x16x16x16-k3": (lambda nn: nn.Conv3d(16, 32, 3, padding=1),
                                pick((4, 16, 16, 16, 16), (1, 16, 4, 4, 4))),
    "conv_transpose3d-4x32x8x8x8-s2": (
        lambda nn: nn.ConvTranspose3d(32, 16, 4, stride=2, padding=1),
        pick((4, 32, 8, 8, 8), (1, 32, 2, 2, 2))),
    "max_pool3d-8x32x32x32x32": (lambda nn: nn.MaxPool3d(2),
                                 pick((8, 32, 32, 32, 32), (1, 4, 4, 4, 4))),
    "max_pool3d-k3s2p1-8x32x32x32x32": (lambda nn: nn.MaxPool3d(3, 2, 1),
                                        pick((8, 32, 32, 32, 32), (1, 4, 4, 4, 4))),
    "avg_pool3d-8x32x32x32x32": (lambda nn: nn.AvgPool3d(2),
                                 pick((8, 32, 32, 32, 32), (1, 4, 4, 4, 4))),
}
LAYER_NAMES = list(LAYERS)


def layer_step(lib, name):
    T = need(lib, "nn.Conv2d", "nn.BatchNorm2d", "nn.LayerNorm")
    nn = importlib.import_module(f"{lib}.nn")
    factory, shape = LAYERS[name]
    T.manual_seed(0)
    layer = factory(nn)
    params = list(layer.parameters())
    rng = np.random.default_rng(0)
    with T.no_grad():
        for p in params:
            p.copy_(T.tensor(rng.uniform(-0.3, 0.3, tuple(p.shape)).astype(F32)))
    x = T.tensor(rng.standard_normal(shape).astype(F32), requires_grad=True)
    y0 = layer(x)
    g = T.tensor(rng.standard_normal(tuple(y0.shape)).astype(F32))

    def step():
        x.grad = None
        for p in params:
            p.grad = None
        y = layer(x)
        y.backward(g)
        return [y, x.grad, *[p.grad for p in params]]

    return step


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("name", LAYER_NAMES)
def test_layer(benchmark, lib, name):
    step = layer_step(lib, name)
    step()
    tag(benchmark, f"layer-{name}", lib, target={"torch": 1.5},
        target_source="#18 (large sizes)")
    run(benchmark, step)


@pytest.mark.parametrize("name", LAYER_NAMES)
def test_agree_layer(name):
    outs = {lib: [to_numpy(r) for r in layer_step(lib, name)()] for lib in LIBS}
    for i, (got, want) in enumerate(zip(outs["cygrad"], outs["torch"], strict=True)):
        scale = max(1.0, float(np.abs(want).max()))
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4 * scale,
                                   err_msg=f"layer {name}: output {i} differs")


EMBED_SHAPE = pick((32, 64), (4, 8))


def embed_step(lib, train=True):
    """Embedding -> LayerNorm -> Dropout, forward and backward (``train=False``:
    dropout off, so that both libraries give the same numbers)."""
    T = need(lib, "nn.Embedding", "nn.LayerNorm", "nn.Dropout")
    nn = importlib.import_module(f"{lib}.nn")
    T.manual_seed(0)
    rng = np.random.default_rng(0)
    model = nn.Sequential(nn.Embedding(1000, 64), nn.LayerNorm(64), nn.Dropout(0.1))
    with T.no_grad():
        model[0].weight.copy_(T.tensor(rng.standard_normal((1000, 64)).astype(F32)))
    model.train(train)
    idx = T.tensor(rng.integers(0, 1000, EMBED_SHAPE))
    g = T.tensor(rng.standard_normal(EMBED_SHAPE + (64,)).astype(F32))
    params = list(model.parameters())

    def step():
        for p in params:
            p.grad = None
        y = model(idx)
        y.backward(g)
        return [y, *[p.grad for p in params]]

    return step


@pytest.mark.parametrize("lib", LIBS)
def test_embed_ln_drop(benchmark, lib):
    step = embed_step(lib)
    step()
    tag(benchmark, "embed_ln_drop", lib, shape=EMBED_SHAPE, target={"torch": 0.3},
        target_source="#18")
    run(benchmark, step)


def test_agree_embed_ln_drop():
    outs = {lib: [to_numpy(r) for r in embed_step(lib, train=False)()] for lib in LIBS}
    for i, (got, want) in enumerate(zip(outs["cygrad"], outs["torch"], strict=True)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4,
                                   err_msg=f"embed_ln_drop: output {i} differs")


def _interleaved(rounds=9):
    """Every case, cygrad and torch in alternation round after round; print
    the median per-round ratio (robust when other work shares the cores,
    where the minimum of separate runs favours whichever hit a quiet moment)."""
    import time

    cases = [(f"cnn_step-{n}", lambda lib, n=n: cnn_step(lib, n)) for n in CNNS]
    cases += [(f"layer-{n}", lambda lib, n=n: layer_step(lib, n)) for n in LAYER_NAMES]
    cases += [("embed_ln_drop", embed_step)]
    print(f"{'case':44s} {'cygrad':>10s} {'torch':>10s} {'ratio':>7s}")
    for name, make in cases:
        round_robin(name, {lib: make(lib) for lib in LIBS}, rounds, "ms", 44,
                    time.perf_counter)


if __name__ == "__main__":
    import benchmarks.conftest as _conf  # the same thread policy as the suite

    _conf._apply_threads(__import__("benchmarks").requested_threads())
    _interleaved()
