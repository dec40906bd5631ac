"""Issue 17's reductions, scans, sorting and shape ops on a (1000, 1000)
float32 input, forward + backward along the last dim.

Each case times cygrad, a hand-written NumPy forward and backward of the
same math, and torch, in one group.  ``test_agree`` checks that the three
give the same values and gradients.
"""

import numpy as np
import pytest

from benchmarks import LIBS, libs_agree, need, pick, run, tag

F32 = np.float32
SHAPE = pick((1000, 1000), (8, 16))
K = 5
OPS = ["sort", "topk", "cumsum", "cumprod", "amax", "median", "unbind",
       "repeat_interleave", "unfold"]


def _numpy_step(op, x, g):
    if op == "sort":
        def step():
            idx = np.argsort(x, axis=1, kind="stable")
            gx = np.zeros_like(x)
            np.put_along_axis(gx, idx, g, 1)
            return np.take_along_axis(x, idx, 1), gx
    elif op == "topk":
        def step():
            idx = np.argpartition(-x, K - 1, axis=1)[:, :K]
            vals = np.take_along_axis(x, idx, 1)
            order = np.argsort(-vals, axis=1, kind="stable")
            idx = np.take_along_axis(idx, order, 1)
            gx = np.zeros_like(x)
            np.put_along_axis(gx, idx, g, 1)
            return np.take_along_axis(x, idx, 1), gx
    elif op == "cumsum":
        def step():
            y = np.cumsum(x, 1, dtype=np.float64).astype(F32)
            return y, np.flip(np.cumsum(np.flip(g, 1), 1), 1)
    elif op == "cumprod":
        def step():
            y = np.cumprod(x, 1, dtype=np.float64).astype(F32)
            return y, np.flip(np.cumsum(np.flip(g * y, 1), 1), 1) / x
    elif op == "amax":
        def step():
            y = x.max(1, keepdims=True)
            m = x == y
            return y[:, 0], m * (g[:, None] / m.sum(1, keepdims=True))
    elif op == "median":
        def step():
            k = (x.shape[1] - 1) // 2
            idx = np.argpartition(x, k, axis=1)[:, k:k + 1]
            gx = np.zeros_like(x)
            np.put_along_axis(gx, idx, g[:, None], 1)
            return np.take_along_axis(x, idx, 1)[:, 0], gx
    elif op == "unbind":
        def step():
            parts = [x[i] for i in range(x.shape[0])]
            return np.stack(parts), np.stack([g[i] for i in range(x.shape[0])])
    elif op == "repeat_interleave":
        def step():
            return np.repeat(x, 2, 1), g.reshape(x.shape[0], x.shape[1], 2).sum(2)
    elif op == "unfold":
        def step():
            w = np.lib.stride_tricks.sliding_window_view(x, 8, 1)[:, ::4]
            gx = np.zeros_like(x)
            for j in range(8):
                gx[:, j:j + 4 * (w.shape[1] - 1) + 1:4] += g[..., j]
            return w, gx
    return step


def _call(T, op, x):
    if op == "sort":
        return T.sort(x, 1).values
    if op == "topk":
        return T.topk(x, K, 1).values
    if op == "cumsum":
        return T.cumsum(x, 1)
    if op == "cumprod":
        return T.cumprod(x, 1)
    if op == "amax":
        return T.amax(x, 1)
    if op == "median":
        return T.median(x, 1).values
    if op == "unbind":
        return T.stack(T.unbind(x, 0))
    if op == "repeat_interleave":
        return T.repeat_interleave(x, 2, 1)
    return x.unfold(1, 8, 4)


def _gshape(op):
    rows, n = SHAPE
    return {"sort": SHAPE, "topk": (rows, K), "cumsum": SHAPE, "cumprod": SHAPE,
            "amax": (rows,), "median": (rows,), "unbind": SHAPE,
            "repeat_interleave": (rows, 2 * n),
            "unfold": (rows, (n - 8) // 4 + 1, 8)}[op]


def case(lib, op):
    rng = np.random.default_rng(0)
    x0 = rng.uniform(0.9, 1.1, SHAPE).astype(F32)
    g0 = rng.standard_normal(_gshape(op)).astype(F32)
    if lib == "numpy":
        return _numpy_step(op, x0, g0)
    T = need(lib, "sort", "topk", "cumsum", "cumprod", "amax", "median", "unbind",
             "repeat_interleave")
    x = T.tensor(x0, requires_grad=True)
    g = T.tensor(g0)

    def step():
        y = _call(T, op, x)
        y.backward(g)
        gx = x.grad
        x.grad = None
        return y, gx

    return step


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("op", OPS)
def test_sorting_fwd_bwd(benchmark, op, lib):
    step = case(lib, op)
    tag(benchmark, f"sorting-{op}-{'x'.join(map(str, SHAPE))}", lib,
        shape=list(SHAPE))
    run(benchmark, step)


@pytest.mark.parametrize("op", OPS)
def test_agree(op):
    libs_agree(case, op, rtol=2e-4, atol=2e-5)
