"""Scaling curves: time per call against size, and backward time against depth.

Ops (float32, 1-D of ``n`` elements; matmul on square ``s x s`` with
``s*s ~ n``), each in two modes:

- ``fwd``: the op on inputs that do not require grad (pure op cost);
- ``fwdbwd``: the op on inputs that require grad, then ``backward(g)`` and the
  grads reset (what a training step pays per op).

Sizes are log-spaced from 1 to 10^7 elements (10^6 for matmul), so the curves
show the per-op overhead floor at the left and the bandwidth / BLAS ceiling at
the right; they are what a threading threshold is chosen from.  Graphs: the
backward of an n-op chain on a 0-d tensor, n = 10 .. 10^6.

Every benchmark records ``series``, ``family`` and ``n`` in ``extra_info``;
``python -m benchmarks.report`` draws one curve per library and series.
The fast mode keeps only the tiny sizes.
"""

import numpy as np
import pytest

from benchmarks import LIBS, log_sizes, need, pick, run, tag
from benchmarks.bench_core import chain_backward

F32 = np.float32
PER_DECADE = 2
SIZES = pick(log_sizes(1, 10**7, PER_DECADE), [1, 10])
MATMUL_SIZES = pick(log_sizes(1, 10**6, PER_DECADE), [1, 16])
GRAPH_LENGTHS = pick(log_sizes(10, 10**6, 1), [10, 100])


def _np_op(op, xs, g):
    """Hand-written forward and (when ``g`` is given) backward, NumPy."""
    if op == "mul":
        a, b = xs
        y = a * b
        return (y,) if g is None else (y, g * b, g * a)
    if op == "tanh":
        (a,) = xs
        y = np.tanh(a)
        return (y,) if g is None else (y, g * (1 - y * y))
    if op == "sum":
        (a,) = xs
        y = a.sum()  # float32, pairwise: what a NumPy user writes
        return (y,) if g is None else (y, np.full_like(a, g))
    if op == "matmul":
        a, b = xs
        y = a @ b
        return (y,) if g is None else (y, g @ b.T, a.T @ g)
    raise ValueError(op)


def _inputs(op, n, rng):
    if op == "matmul":
        s = max(1, round(np.sqrt(n)))
        return [rng.standard_normal((s, s)).astype(F32) for _ in range(2)], (s, s)
    k = 2 if op == "mul" else 1
    xs = [rng.standard_normal(n).astype(F32) for _ in range(k)]
    return xs, (() if op == "sum" else (n,))


def op_case(lib, op, n, mode):
    rng = np.random.default_rng(7)
    xs0, out_shape = _inputs(op, n, rng)
    g0 = rng.standard_normal(out_shape).astype(F32) if mode == "fwdbwd" else None
    if lib == "numpy":
        return lambda: _np_op(op, xs0, g0)
    T = need(lib)
    grad = mode == "fwdbwd"
    xs = [T.tensor(x, requires_grad=grad) for x in xs0]
    if op in ("mul", "matmul"):
        f = (lambda a, b: a * b) if op == "mul" else (lambda a, b: a @ b)
    else:
        f = getattr(T, op)
    if not grad:
        return lambda: (f(*xs),)
    g = T.tensor(g0)

    def step():
        y = f(*xs)
        y.backward(g)
        grads = [x.grad for x in xs]
        for x in xs:
            x.grad = None
        return (y, *grads)

    return step


FAMILIES = {
    "mul": "elementwise",
    "tanh": "elementwise",
    "sum": "reduction",
    "matmul": "matmul",
}
CASES = [
    (op, n, mode)
    for op in ("mul", "tanh", "sum", "matmul")
    for n in (MATMUL_SIZES if op == "matmul" else SIZES)
    for mode in ("fwd", "fwdbwd")
]


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize(
    "op,n,mode", CASES, ids=[f"{op}-{mode}-{n}" for op, n, mode in CASES]
)
def test_op_scaling(benchmark, op, n, mode, lib):
    step = op_case(lib, op, n, mode)
    info = {"series": f"{op}-{mode}", "family": FAMILIES[op], "n": n}
    if op == "matmul":
        info["n"] = max(1, round(np.sqrt(n))) ** 2
        info["side"] = max(1, round(np.sqrt(n)))
    tag(benchmark, f"scale-{op}-{mode}-n={info['n']}", lib, **info)
    run(benchmark, step)


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("n", GRAPH_LENGTHS)
def test_graph_scaling(benchmark, n, lib):
    step, setup = chain_backward(lib, n)
    tag(
        benchmark,
        f"scale-graph-backward-n={n}",
        lib,
        series="chain-backward",
        family="graph",
        n=n,
        ops=n,
    )
    # rounds: enough for a stable median, few for the 10^6 graph
    run(benchmark, step, setup=setup, rounds=int(min(100, max(3, 3e5 / n))))
