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

Threads (family ``threads``): cygrad alone at 1 and at 2 threads
(``cygrad.set_num_threads``) on ``mul``, ``exp`` and ``sum`` forward, 10^3 ..
10^7 elements: below the kernels' threshold both lines coincide (kernels stay
serial), above it the 2-thread line sits below while the other core is free;
``extra_info["thread_stats"]`` counts the parallel regions that ran, those
slower than serial (which start a serial back-off) and those skipped.

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
THREAD_SIZES = pick(log_sizes(10**3, 10**7, 1), [10**3])
THREAD_COUNTS = (1, 2)


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


THREAD_CASES = [
    (op, n, t)
    for op in ("mul", "exp", "sum")
    for n in THREAD_SIZES
    for t in THREAD_COUNTS
]


@pytest.mark.parametrize(
    "op,n,threads_", THREAD_CASES, ids=[f"{op}-{n}-t{t}" for op, n, t in THREAD_CASES]
)
def test_thread_scaling(benchmark, op, n, threads_):
    cg = need("cygrad", "set_num_threads", "get_num_threads")
    rng = np.random.default_rng(7)
    a, b = (cg.tensor(rng.standard_normal(n).astype(F32)) for _ in range(2))
    step = {"mul": lambda: a * b, "exp": lambda: a.exp(), "sum": lambda: a.sum()}[op]
    label = f"cygrad {threads_} thread" + ("s" if threads_ > 1 else "")
    tag(
        benchmark,
        f"threads-{op}-n={n}",
        label,
        series=f"{op}-fwd",
        family="threads",
        n=n,
        threads=threads_,
    )
    stats = getattr(getattr(cg, "_kernels", None), "threads", None)
    stats = getattr(stats, "thread_stats", None)
    before = cg.get_num_threads()
    cg.set_num_threads(threads_)
    if stats:
        stats(reset=True)
    try:
        out = run(benchmark, step)
    finally:
        cg.set_num_threads(before)
    if stats:
        # parallel regions run / too slow (then a serial back-off) / skipped
        benchmark.extra_info["thread_stats"] = stats(reset=True)
    want = {
        "mul": lambda: a.numpy() * b.numpy(),
        "exp": lambda: np.exp(a.numpy()),
        "sum": lambda: a.numpy().astype(np.float64).sum(),
    }[op]()
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-5)
