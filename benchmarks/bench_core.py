"""Core workloads: cygrad vs hand-written NumPy vs torch, one group per case.

Each case is a builder ``case(lib)`` that prepares the inputs (the same seeded
arrays for every library) and returns the function to time (``step``) and,
for cases that need fresh state each round, a ``setup``.  A step returns the
values it computed (gradients, parameters), which the ``test_agree_*`` tests
compare across libraries: the hand-written NumPy backward is checked against
torch, and cygrad against both.

Groups (see the issues for their targets):
``scalar_chain-forward`` / ``scalar_chain-backward``  (per-op time in report)
``small_tensors``  ``linear_regression-200``  ``large_elementwise``
``deep_chain-backward``  ``softmax-*`` / ``log_softmax-*`` / ``logsumexp-*``
``cross_entropy-*``  ``matmul_chain-*``
"""

import gc
import os
import subprocess
import sys

import numpy as np
import pytest

from benchmarks import LIBS, fast_mode, need, pick, run, tag, to_numpy

F32 = np.float32
RTOL = 2e-4


def _tensor(T, arr, requires_grad=False):
    """The same array as a cygrad or torch tensor (a copy)."""
    return T.tensor(np.array(arr), requires_grad=requires_grad)


def _agree(case, *args, rtol=RTOL, atol=1e-5):
    """Run ``case`` once for each importable library; compare the outputs."""
    outs = {}
    for lib in LIBS:
        try:
            built = case(lib, *args)
        except pytest.skip.Exception:
            continue
        step, setup = built if isinstance(built, tuple) else (built, None)
        result = step(*setup()) if setup else step()
        outs[lib] = [to_numpy(r) for r in result]
    if "numpy" not in outs or len(outs) < 2:
        pytest.skip(f"nothing to compare with: ran only {sorted(outs)}")
    ref = outs["numpy"]
    for lib, values in outs.items():
        for i, (got, want) in enumerate(zip(values, ref, strict=True)):
            np.testing.assert_allclose(
                got.astype(np.float64),
                want.astype(np.float64),
                rtol=rtol,
                atol=atol,
                err_msg=f"{lib} output {i} differs from the NumPy reference",
            )


# --------------------------------------------------------------------------
# scalar chain: x = tanh(x * w + b), 0-d float32, then backward

CHAIN_STEPS = pick(5000, 50)
OPS_PER_STEP = 3  # mul, add, tanh


def scalar_chain(lib, part):
    """``part`` is "forward" (build the graph) or "backward" (on a built one)."""
    n = CHAIN_STEPS
    x0, w0, b0 = F32(0.5), F32(0.8), F32(0.1)
    if lib == "numpy":

        def forward():
            w, b = w0, b0
            xs = [x0]
            x = x0
            for _ in range(n):
                x = np.tanh(x * w + b)
                xs.append(x)
            return xs, w, b

        def backward(xs, w, b):
            g, gw, gb = F32(1.0), F32(0.0), F32(0.0)
            for k in range(n, 0, -1):
                g = g * (1 - xs[k] * xs[k])  # through tanh
                gw = gw + g * xs[k - 1]
                gb = gb + g
                g = g * w
            return xs[-1], gw, gb

    else:
        T = need(lib)
        x = _tensor(T, x0)
        w = _tensor(T, w0, requires_grad=True)
        b = _tensor(T, b0, requires_grad=True)

        def forward():
            w.grad = None
            b.grad = None
            y = x
            for _ in range(n):
                y = T.tanh(y * w + b)
            return y, w, b

        def backward(y, w, b):
            y.backward()
            return y, w.grad, b.grad

    if part == "forward":
        return forward, tuple
    return backward, forward


@pytest.mark.parametrize("lib", LIBS)
def test_scalar_chain_forward(benchmark, lib):
    step, setup = scalar_chain(lib, "forward")
    tag(benchmark, "scalar_chain-forward", lib, ops=OPS_PER_STEP * CHAIN_STEPS)
    run(benchmark, step, setup=setup, rounds=20)


@pytest.mark.parametrize("lib", LIBS)
def test_scalar_chain_backward(benchmark, lib):
    step, setup = scalar_chain(lib, "backward")
    tag(benchmark, "scalar_chain-backward", lib, ops=OPS_PER_STEP * CHAIN_STEPS)
    run(benchmark, step, setup=setup, rounds=20)


def test_agree_scalar_chain():
    _agree(lambda lib: scalar_chain(lib, "backward"), rtol=1e-3)


# --------------------------------------------------------------------------
# small tensors: shape (16,), ((a * b + a).relu() * 2.0).sum(), backward, reset


def small_tensors(lib):
    rng = np.random.default_rng(1)
    a0 = rng.standard_normal(16).astype(F32)
    b0 = rng.standard_normal(16).astype(F32)
    if lib == "numpy":

        def step():
            a, b = a0, b0
            t = a * b + a
            r = np.maximum(t, 0)
            out = (r * F32(2.0)).sum()
            g = np.full_like(r, 2.0)  # d out / d r
            g = g * (t > 0)  # relu'(0) = 0
            ga = g * b + g
            gb = g * a
            return out, ga, gb

        return step
    T = need(lib)
    a = _tensor(T, a0, requires_grad=True)
    b = _tensor(T, b0, requires_grad=True)

    def step():
        out = ((a * b + a).relu() * 2.0).sum()
        out.backward()
        ga, gb = a.grad, b.grad
        a.grad = None
        b.grad = None
        return out, ga, gb

    return step


@pytest.mark.parametrize("lib", LIBS)
def test_small_tensors(benchmark, lib):
    step = small_tensors(lib)
    tag(benchmark, "small_tensors", lib)
    run(benchmark, step)


def test_agree_small_tensors():
    _agree(small_tensors)


# --------------------------------------------------------------------------
# the tutorial's linear regression (autograd-basics), plain autograd + no_grad

EPOCHS = pick(200, 3)


def linear_regression(lib):
    rng = np.random.default_rng(42)
    X0 = (rng.random((100, 1)) * 10).astype(F32)
    y0 = (2 * X0 + 1 + rng.standard_normal((100, 1))).astype(F32)
    lr = 0.01
    if lib == "numpy":

        def step():
            w = np.zeros(1, F32)
            b = np.zeros(1, F32)
            losses = []
            for _ in range(EPOCHS):
                r = w * X0 + b - y0
                loss = (r**2).mean()
                losses.append(loss.item())
                g = (2 / r.size) * r  # d loss / d y_pred
                gw = (g * X0).sum(axis=0)
                gb = g.sum(axis=0)
                w -= lr * gw
                b -= lr * gb
            return w, b, np.array(losses)

        return step
    T = need(lib)
    X = _tensor(T, X0)
    y = _tensor(T, y0)

    def step():
        w = T.tensor([0.0], requires_grad=True)
        b = T.tensor([0.0], requires_grad=True)
        losses = []
        for _ in range(EPOCHS):
            y_pred = w * X + b
            loss = ((y_pred - y) ** 2).mean()
            losses.append(loss.item())
            loss.backward()
            with T.no_grad():
                w -= lr * w.grad
                b -= lr * b.grad
                w.grad.zero_()
                b.grad.zero_()
        return w, b, np.array(losses)

    return step


@pytest.mark.parametrize("lib", LIBS)
def test_linear_regression(benchmark, lib):
    step = linear_regression(lib)
    tag(benchmark, "linear_regression-200", lib, epochs=EPOCHS)
    run(benchmark, step)


def test_agree_linear_regression():
    _agree(linear_regression, rtol=1e-3)


# --------------------------------------------------------------------------
# large elementwise: 4,000,000 float32, (a * b + c).sum().backward()

LARGE_N = pick(4_000_000, 1000)


def large_elementwise(lib):
    rng = np.random.default_rng(2)
    a0, b0, c0 = (rng.standard_normal(LARGE_N).astype(F32) for _ in range(3))
    if lib == "numpy":

        def step():
            a, b, c = a0, b0, c0
            t = a * b
            s = t + c
            out = s.sum()  # NumPy sums float32 pairwise, as a user writes it
            g = F32(1.0)  # d out / d s, broadcast: never materialised
            ga = b * g
            gb = a * g
            gc = np.full_like(c, g)
            return out, ga, gb, gc

        return step
    T = need(lib)
    a, b, c = (_tensor(T, v, requires_grad=True) for v in (a0, b0, c0))

    def step():
        out = (a * b + c).sum()
        out.backward()
        grads = a.grad, b.grad, c.grad
        a.grad = b.grad = c.grad = None
        return (out, *grads)

    return step


@pytest.mark.parametrize("lib", LIBS)
def test_large_elementwise(benchmark, lib):
    step = large_elementwise(lib)
    tag(benchmark, "large_elementwise", lib, n=LARGE_N)
    run(benchmark, step)


def test_agree_large_elementwise():
    _agree(large_elementwise, rtol=1e-3, atol=1e-2)


# --------------------------------------------------------------------------
# deep chain: 10^5 ops on a 0-d tensor, backward timed; memory per node

DEEP_N = pick(100_000, 100)


def build_chain(lib, n):
    """``setup`` that builds an n-op chain (alternating * 1.0001, - 0.0001)."""
    if lib == "numpy":

        def setup():
            x = F32(1.0)
            ys = [x]
            for k in range(n):
                x = x * F32(1.0001) if k % 2 == 0 else x - F32(0.0001)
                ys.append(x)
            return (ys,)

        return setup
    T = need(lib)

    def setup():
        x = _tensor(T, F32(1.0), requires_grad=True)
        y = x
        for k in range(n):
            y = y * 1.0001 if k % 2 == 0 else y - 0.0001
        return y, x

    return setup


def chain_backward(lib, n):
    if lib == "numpy":

        def step(ys):
            g = F32(1.0)
            for k in range(n - 1, -1, -1):
                if k % 2 == 0:
                    g = g * F32(1.0001)
            return (g,)

    else:

        def step(y, x):
            y.backward()
            return (x.grad,)

    return step, build_chain(lib, n)


def chain_bytes_per_node(lib, n):
    """RSS growth per node while an n-op graph is alive, in a fresh process."""
    code = (
        "import gc, sys; import benchmarks as B; from benchmarks import bench_core"
        " as C\n"
        f"setup = C.build_chain({lib!r}, 1000); a = setup(); del a; gc.collect()\n"
        f"setup = C.build_chain({lib!r}, {n}); r0 = B.rss_bytes()\n"
        f"g = setup(); r1 = B.rss_bytes(); print((r1 - r0) / {n})\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(
        os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", "")
    )
    try:
        out = subprocess.run(
            [sys.executable, "-c", code],
            cwd=root,
            env=env,
            capture_output=True,
            check=False,
            text=True,
            timeout=600,
        )
        return float(out.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


@pytest.mark.parametrize("lib", LIBS)
def test_deep_chain_backward(benchmark, lib):
    step, setup = chain_backward(lib, DEEP_N)
    info = {"ops": DEEP_N, "nodes": DEEP_N}
    if not fast_mode():
        info["bytes_per_node"] = chain_bytes_per_node(lib, DEEP_N)
    tag(benchmark, "deep_chain-backward", lib, **info)
    gc.collect()
    run(benchmark, step, setup=setup, rounds=5)


def test_agree_deep_chain():
    _agree(lambda lib: chain_backward(lib, DEEP_N), rtol=1e-3)


# --------------------------------------------------------------------------
# softmax / log_softmax / logsumexp forward + backward, (1024, 1000) float32

SOFTMAX_SHAPE = pick((1024, 1000), (4, 10))


def softmax_family(lib, op):
    rng = np.random.default_rng(3)
    x0 = (3 * rng.standard_normal(SOFTMAX_SHAPE)).astype(F32)
    g_shape = SOFTMAX_SHAPE[:1] if op == "logsumexp" else SOFTMAX_SHAPE
    g0 = rng.standard_normal(g_shape).astype(F32)
    if lib == "numpy":

        def step():
            x, g = x0, g0
            m = x.max(axis=1, keepdims=True)
            if op == "softmax":
                e = np.exp(x - m)
                y = e / e.sum(axis=1, keepdims=True)
                gx = y * (g - (g * y).sum(axis=1, keepdims=True))
            elif op == "log_softmax":
                z = x - m
                y = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
                gx = g - np.exp(y) * g.sum(axis=1, keepdims=True)
            else:
                lse = m + np.log(np.exp(x - m).sum(axis=1, keepdims=True))
                y = lse[:, 0]
                gx = g[:, None] * np.exp(x - lse)
            return y, gx

        return step
    T = need(lib, op)
    x = _tensor(T, x0, requires_grad=True)
    g = _tensor(T, g0)
    fn = getattr(T, op)

    def step():
        y = fn(x, dim=1)
        y.backward(g)
        gx = x.grad
        x.grad = None
        return y, gx

    return step


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("op", ["softmax", "log_softmax", "logsumexp"])
def test_softmax_family(benchmark, op, lib):
    step = softmax_family(lib, op)
    shape = "x".join(map(str, SOFTMAX_SHAPE))
    tag(benchmark, f"{op}-{shape}", lib, shape=list(SOFTMAX_SHAPE))
    run(benchmark, step)


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "logsumexp"])
def test_agree_softmax_family(op):
    _agree(lambda lib: softmax_family(lib, op))


# --------------------------------------------------------------------------
# softmax + cross-entropy (mean over the batch), logits require grad

CE_SHAPES = pick([(128, 10), (1024, 1000)], [(4, 10)])


def cross_entropy(lib, shape):
    rng = np.random.default_rng(4)
    x0 = (2 * rng.standard_normal(shape)).astype(F32)
    t0 = rng.integers(0, shape[1], size=shape[0]).astype(np.int64)
    if lib == "numpy":

        def step():
            x, t = x0, t0
            m = x.max(axis=1, keepdims=True)
            z = x - m
            e = np.exp(z)
            s = e.sum(axis=1, keepdims=True)
            logp = z - np.log(s)
            rows = np.arange(shape[0])
            loss = -logp[rows, t].mean()
            gx = e / s
            gx[rows, t] -= 1
            gx *= F32(1 / shape[0])
            return loss, gx

        return step
    T = need(lib, "nn.functional.cross_entropy")
    import importlib

    F = importlib.import_module(f"{lib}.nn.functional")
    x = _tensor(T, x0, requires_grad=True)
    t = _tensor(T, t0)

    def step():
        loss = F.cross_entropy(x, t)
        loss.backward()
        gx = x.grad
        x.grad = None
        return loss, gx

    return step


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("shape", CE_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_cross_entropy(benchmark, shape, lib):
    step = cross_entropy(lib, shape)
    tag(benchmark, "cross_entropy-" + "x".join(map(str, shape)), lib)
    run(benchmark, step)


@pytest.mark.parametrize("shape", CE_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_agree_cross_entropy(shape):
    _agree(lambda lib: cross_entropy(lib, shape))


# --------------------------------------------------------------------------
# matmul chains: ((x @ W1) @ W2 @ W3).sum().backward(), weights require grad

# (batch, width, out): a small one (overhead) and a BLAS-bound one
MATMUL_CHAINS = pick([(8, 16, 4), (128, 256, 10), (512, 1024, 10)], [(2, 3, 2)])


def matmul_chain(lib, dims):
    batch, width, out = dims
    rng = np.random.default_rng(5)
    scale = F32(1 / np.sqrt(width))
    x0 = rng.standard_normal((batch, width)).astype(F32)
    ws0 = [
        (rng.standard_normal((width, width)) * scale).astype(F32),
        (rng.standard_normal((width, width)) * scale).astype(F32),
        (rng.standard_normal((width, out)) * scale).astype(F32),
    ]
    if lib == "numpy":

        def step():
            w1, w2, w3 = ws0
            h1 = x0 @ w1
            h2 = h1 @ w2
            y = h2 @ w3
            loss = y.sum()
            gy = np.ones_like(y)
            g3 = h2.T @ gy
            gh2 = gy @ w3.T
            g2 = h1.T @ gh2
            gh1 = gh2 @ w2.T
            g1 = x0.T @ gh1
            return loss, g1, g2, g3

        return step
    T = need(lib)
    x = _tensor(T, x0)
    ws = [_tensor(T, w, requires_grad=True) for w in ws0]

    def step():
        w1, w2, w3 = ws
        loss = (x @ w1 @ w2 @ w3).sum()
        loss.backward()
        grads = [w.grad for w in ws]
        for w in ws:
            w.grad = None
        return (loss, *grads)

    return step


def _dims_id(dims):
    return "{}x{}-{}".format(*dims)


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("dims", MATMUL_CHAINS, ids=_dims_id)
def test_matmul_chain(benchmark, dims, lib):
    step = matmul_chain(lib, dims)
    tag(benchmark, "matmul_chain-" + _dims_id(dims), lib, dims=list(dims))
    run(benchmark, step)


@pytest.mark.parametrize("dims", MATMUL_CHAINS, ids=_dims_id)
def test_agree_matmul_chain(dims):
    _agree(lambda lib: matmul_chain(lib, dims), rtol=1e-3, atol=1e-3)
