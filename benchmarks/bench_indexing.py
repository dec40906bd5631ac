"""Indexing ops of training loops, forward + backward, float32.

``masked_fill`` with a causal (T, T) mask under a (B, H, T, T) score tensor
(GPT attention: ``att.masked_fill(mask[:T, :T] == 0, -inf)``) and on a
(32, 65) logit matrix; ``gather`` along the last dim with one index per row
(cross-entropy's picks) and with a full-size index; ``x[idx]`` row lookups
(``C[Xb]`` in makemore).  cygrad, the hand-written NumPy equivalent and
torch share one group per case.  ``test_agree`` checks the three agree.
"""

import numpy as np
import pytest

from benchmarks import LIBS, libs_agree, need, pick, run, tag

F32 = np.float32
SCORES = pick((16, 4, 32, 32), (2, 2, 4, 4))
LOGITS = pick((32, 65), (4, 5))
CASES = ["masked_fill_scores", "masked_fill_logits", "gather_pick_scores",
         "gather_pick_logits", "gather_full_scores", "rows_lookup"]


def _inputs(op):
    rng = np.random.default_rng(3)
    if op == "rows_lookup":
        x = rng.standard_normal(pick((1000, 64), (10, 4))).astype(F32)
        idx = rng.integers(0, x.shape[0], pick((64, 64), (3, 2)))
        return x, idx, rng.standard_normal(idx.shape + x.shape[1:]).astype(F32)
    shape = SCORES if op.endswith("scores") else LOGITS
    x = rng.standard_normal(shape).astype(F32)
    if op.startswith("masked_fill"):
        t = shape[-1]
        aux = (np.tril(np.ones((t, t), bool)) == 0) if op.endswith("scores") else \
            rng.random(shape) > 0.5
        gshape = shape
    else:
        k = 1 if "pick" in op else shape[-1]
        aux = rng.integers(0, shape[-1], shape[:-1] + (k,))
        gshape = aux.shape
    return x, aux, rng.standard_normal(gshape).astype(F32)


def _numpy_step(op, x, aux, g):
    if op.startswith("masked_fill"):
        def step():
            return np.where(aux, F32(-1e9), x), np.where(aux, F32(0), g)
    elif op == "rows_lookup":
        def step():
            gx = np.zeros_like(x)
            np.add.at(gx, aux.reshape(-1), g.reshape(-1, x.shape[1]))
            return x[aux], gx
    else:
        def step():
            y = np.take_along_axis(x, aux, -1)
            gx = np.zeros_like(x)
            if aux.shape[-1] == 1:
                np.put_along_axis(gx, aux, g, -1)
            else:
                rows = x.reshape(-1, x.shape[-1])
                flat = aux.reshape(rows.shape[0], -1)
                gflat = gx.reshape(rows.shape)
                for r in range(rows.shape[0]):   # repeats add: no put_along_axis
                    np.add.at(gflat[r], flat[r], g.reshape(flat.shape)[r])
            return y, gx
    return step


def case(lib, op):
    x0, aux0, g0 = _inputs(op)
    if lib == "numpy":
        return _numpy_step(op, x0, aux0, g0)
    T = need(lib, "gather")
    x = T.tensor(x0, requires_grad=True)
    aux = T.tensor(aux0)
    g = T.tensor(g0)

    def step():
        if op.startswith("masked_fill"):
            y = x.masked_fill(aux, -1e9)
        elif op == "rows_lookup":
            y = x[aux]
        else:
            y = x.gather(-1, aux)
        y.backward(g)
        gx = x.grad
        x.grad = None
        return y, gx

    return step


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("op", CASES)
def test_indexing_fwd_bwd(benchmark, op, lib):
    step = case(lib, op)
    tag(benchmark, f"indexing-{op}", lib, target="cygrad <= 1.0x torch")
    run(benchmark, step)


@pytest.mark.parametrize("op", CASES)
def test_agree(op):
    libs_agree(case, op, rtol=1e-5, atol=1e-5)
