"""Optimizer steps: cygrad vs hand-written NumPy vs torch, one group per case.

Groups:
``optim_adam``          one Adam step over 10 float32 parameters of 100,000
``optim_sgd_momentum``  one SGD step with momentum 0.9, same parameters
``copy_bandwidth``      ``np.copyto`` of one 64 MiB and one 16 MiB array

torch runs three ways: ``foreach=False`` (its per-parameter loop),
``foreach=True`` and ``fused=True``.  Every case records ``bytes`` in
``extra_info``: the memory one step must move (Adam reads p, g, m, v and writes
p, m, v: 28 bytes per float32 element; SGD with momentum reads p, g, buf and
writes p, buf: 20 bytes), so bytes / time can be set against the copy
bandwidth (``copy_bandwidth`` moves 2 bytes per byte copied).  The fast mode
(``--benchmark-disable``) shrinks the parameters to 100 elements.

``python -m benchmarks.bench_optim`` times every variant in turn, round after
round (robust on a busy machine), and prints the ratios and bytes / time.
"""

import numpy as np
import pytest

from benchmarks import need, pick, run, tag

F32 = np.float32
NPARAMS = 10
NUMEL = pick(100_000, 100)
# np.copyto of 64 MiB (past every cache: memory bandwidth) and of 16 MiB (the
# Adam case's working set, 4 arrays x 4 MB: what the caches give it)
COPY_SIZES = {"64MiB": pick(1 << 24, 1000), "16MiB": pick(1 << 22, 1000)}
LR, BETAS, EPS, MOMENTUM = 1e-3, (0.9, 0.999), 1e-8, 0.9
BYTES = {"optim_adam": 7 * 4, "optim_sgd_momentum": 5 * 4}  # per element
VARIANTS = [
    ("cygrad", {}),
    ("numpy", {}),
    ("torch", {"foreach": False}),
    ("torch", {"foreach": True}),
    ("torch", {"fused": True}),
]
VARIANT_IDS = [
    "cygrad",
    "numpy",
    "torch-foreach=False",
    "torch-foreach=True",
    "torch-fused=True",
]


def _arrays(seed=0):
    rng = np.random.default_rng(seed)
    params = [rng.standard_normal(NUMEL).astype(F32) for _ in range(NPARAMS)]
    grads = [rng.standard_normal(NUMEL).astype(F32) for _ in range(NPARAMS)]
    return params, grads


class _NumpyAdam:
    """Adam with NumPy ufuncs writing in place (no temporaries but one)."""

    def __init__(self, params, grads):
        self.params, self.grads = params, grads
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.tmp = np.empty_like(params[0])
        self.t = 0

    def step(self):
        self.t += 1
        b1, b2 = BETAS
        step_size = LR / (1 - b1**self.t)
        bc2_sqrt = (1 - b2**self.t) ** 0.5
        tmp = self.tmp
        for p, g, m, v in zip(self.params, self.grads, self.m, self.v):
            np.subtract(g, m, out=tmp)
            tmp *= F32(1 - b1)
            m += tmp
            v *= F32(b2)
            np.multiply(g, g, out=tmp)
            tmp *= F32(1 - b2)
            v += tmp
            np.sqrt(v, out=tmp)
            tmp /= F32(bc2_sqrt)
            tmp += F32(EPS)
            np.divide(m, tmp, out=tmp)
            tmp *= F32(-step_size)
            p += tmp


class _NumpySGD:
    """SGD with momentum, NumPy ufuncs in place."""

    def __init__(self, params, grads):
        self.params, self.grads = params, grads
        self.bufs = None

    def step(self):
        if self.bufs is None:
            self.bufs = [g.copy() for g in self.grads]
        else:
            for b, g in zip(self.bufs, self.grads):
                b *= F32(MOMENTUM)
                b += g
        for p, b in zip(self.params, self.bufs):
            p -= F32(LR) * b  # one temporary, as torch's add_(alpha=-lr) has none


def build(lib, options, case):
    """``(step, params_as_numpy)`` for one library and one group."""
    params, grads = _arrays()
    if lib == "numpy":
        opt = (_NumpyAdam if case == "optim_adam" else _NumpySGD)(params, grads)
        return opt.step, lambda: params
    T = need(lib, "optim.Adam", "optim.SGD")
    ps = []
    for p, g in zip(params, grads):
        if lib == "torch":
            t = T.nn.Parameter(T.from_numpy(p))
            t.grad = T.from_numpy(g)
        else:
            t = T.tensor(p, requires_grad=True)
            t.grad = T.tensor(g)
        ps.append(t)
    if case == "optim_adam":
        opt = T.optim.Adam(ps, lr=LR, betas=BETAS, eps=EPS, **options)
    else:
        opt = T.optim.SGD(ps, lr=LR, momentum=MOMENTUM, **options)
    return opt.step, lambda: [t.detach().numpy() for t in ps]


@pytest.mark.parametrize("case", ["optim_adam", "optim_sgd_momentum"])
@pytest.mark.parametrize(("lib", "options"), VARIANTS, ids=VARIANT_IDS)
def test_optimizer_step(benchmark, case, lib, options):
    step, _ = build(lib, options, case)
    step()  # state exists: every timed step is a steady-state step
    tag(
        benchmark,
        case,
        lib,
        options=options,
        numel=NPARAMS * NUMEL,
        bytes=BYTES[case] * NPARAMS * NUMEL,
    )
    run(benchmark, step)


@pytest.mark.parametrize("size", list(COPY_SIZES))
def test_copy_bandwidth(benchmark, size):
    src = np.ones(COPY_SIZES[size], F32)
    dst = np.empty_like(src)
    tag(benchmark, "copy_bandwidth", "numpy", bytes=2 * src.nbytes, size=size)
    run(benchmark, lambda: np.copyto(dst, src))


@pytest.mark.parametrize("case", ["optim_adam", "optim_sgd_momentum"])
def test_agree(case):
    """Three steps from the same start give the same parameters everywhere."""
    results = {}
    for lib, options in VARIANTS:
        try:
            step, values = build(lib, options, case)
        except pytest.skip.Exception:
            continue
        for _ in range(3):
            step()
        results[(lib, str(options))] = [v.copy() for v in values()]
    ref = results[("numpy", "{}")]
    for key, values in results.items():
        for got, want in zip(values, ref):
            np.testing.assert_allclose(
                got, want, rtol=1e-5, atol=1e-6, err_msg=f"{key} differs from NumPy"
            )


def _interleaved(reps=300):
    """Time every variant in turn, round after round, so that a busy machine
    slows them alike; print min and median per step, ratios to torch fused and
    bytes / time next to the copy bandwidth."""
    import functools
    import time

    def timed(fn):
        t = time.perf_counter()
        fn()
        return time.perf_counter() - t

    copies = {}
    for size, n in COPY_SIZES.items():
        src = np.ones(n, F32)
        dst = np.empty_like(src)
        copy = functools.partial(np.copyto, dst, src)
        ts = [timed(copy) for _ in range(max(reps // 10, 5))]
        copies[size] = 2 * src.nbytes / min(ts) / 1e9
    print(
        "copy bandwidth (np.copyto, best):",
        ", ".join(f"{size} {gbs:.1f} GB/s" for size, gbs in copies.items()),
    )
    for case in ("optim_adam", "optim_sgd_momentum"):
        steps = {}
        for (lib, options), name in zip(VARIANTS, VARIANT_IDS):
            try:
                steps[name] = build(lib, options, case)[0]
            except pytest.skip.Exception:
                continue
            steps[name]()
        times = {name: [] for name in steps}
        for _ in range(reps):
            for name, step in steps.items():
                times[name].append(timed(step))
        ref = times.get("torch-fused=True")
        print(f"{case} ({NPARAMS} x {NUMEL} float32, {reps} interleaved rounds)")
        for name, ts in times.items():
            lo, med = np.min(ts), np.median(ts)
            ratio = (
                f"  x{lo / np.min(ref):.2f} / x{med / np.median(ref):.2f} fused"
                if ref
                else ""
            )
            gbs = BYTES[case] * NPARAMS * NUMEL / lo / 1e9
            print(
                f"  {name:22s} min {lo * 1e3:7.3f} ms  median {med * 1e3:7.3f} ms"
                f"{ratio}  {gbs:5.1f} GB/s"
            )


# --------------------------------------------------------------------------
# the whole suite: every optimizer against torch's fastest CPU form

# torch's fastest CPU form of each (fused=True where torch has it on the CPU)
SUITE = {
    "Adam": ({"lr": 1e-3}, {"fused": True}),
    "AdamW": ({"lr": 1e-3}, {"fused": True}),
    "SGD": ({"lr": 1e-3, "momentum": 0.9}, {"fused": True}),
    "Adagrad": ({"lr": 1e-2}, {"fused": True}),
    "RMSprop": ({"lr": 1e-2}, {"foreach": True}),
    "NAdam": ({"lr": 2e-3}, {"foreach": True}),
    "RAdam": ({"lr": 1e-3}, {"foreach": True}),
    "Adamax": ({"lr": 2e-3}, {"foreach": True}),
    "Adadelta": ({"lr": 1.0}, {"foreach": True}),
    "Rprop": ({"lr": 1e-2}, {"foreach": True}),
    "ASGD": ({"lr": 1e-2}, {"foreach": True}),
    "Adafactor": ({"lr": 1e-2}, {"foreach": True}),
}
# 24 small tensors (per-step overhead dominates) and ten of 100k (bandwidth)
SHAPES = {
    "small": [(64, 64)] * 12 + [(64,)] * 12,
    "large": [(pick(100_000, 100),)] * NPARAMS,
}
LBFGS_N = pick(1000, 10)


def _suite_arrays(shapes, seed=0):
    rng = np.random.default_rng(seed)
    params = [rng.standard_normal(s).astype(F32) for s in shapes]
    grads = [rng.standard_normal(s).astype(F32) for s in shapes]
    return params, grads


def build_suite(lib, name, sizes):
    """One step of optimizer ``name`` (cygrad, or torch in its fastest form)."""
    T = need(lib, f"optim.{name}")
    options, fastest = SUITE[name]
    params, grads = _suite_arrays(SHAPES[sizes])
    ps = []
    for p, g in zip(params, grads):
        if lib == "torch":
            t = T.nn.Parameter(T.from_numpy(p))
            t.grad = T.from_numpy(g)
        else:
            t = T.tensor(p, requires_grad=True)
            t.grad = T.tensor(g)
        ps.append(t)
    kw = dict(options, **(fastest if lib == "torch" else {}))
    try:
        opt = getattr(T.optim, name)(ps, **kw)
    except (RuntimeError, TypeError, ValueError) as err:  # no fused form here
        if lib != "torch":
            raise
        pytest.skip(f"torch {name}({kw}): {err}")
    return opt.step


def _rosenbrock_closure(lib, x):
    """The n-D Rosenbrock function and its gradient, in NumPy, as a closure."""
    T = need(lib, "optim.LBFGS")

    def closure():
        a = x.detach().numpy()
        d = a[1:] - a[:-1] ** 2
        e = 1 - a[:-1]
        g = np.zeros_like(a)
        g[:-1] = -2 * e - 400 * a[:-1] * d
        g[1:] += 200 * d
        x.grad = T.from_numpy(g)
        return T.tensor(float((e * e).sum() + (100 * d * d).sum()))

    return closure


def build_lbfgs(lib, line_search_fn=None):
    """One L-BFGS step (20 iterations, history 10) on LBFGS_N parameters."""
    T = need(lib, "optim.LBFGS")
    x0 = np.random.default_rng(0).uniform(-1.5, 1.5, LBFGS_N)
    if lib == "torch":
        x = T.nn.Parameter(T.from_numpy(x0.copy()))
    else:
        x = T.tensor(x0.copy(), requires_grad=True)
    kw = {"history_size": 10, "max_iter": 20, "line_search_fn": line_search_fn}
    opt = T.optim.LBFGS([x], **kw)
    closure = _rosenbrock_closure(lib, x)

    def step():
        x._arr[...] = x0 if lib != "torch" else None
        opt.state.clear()
        opt.step(closure)

    def step_torch():
        with T.no_grad():
            x.copy_(T.from_numpy(x0))
        opt.state.clear()
        opt.step(closure)

    return step_torch if lib == "torch" else step


MUON_SHAPES = [(64, 64)] * 12 + [(pick(256, 8), pick(128, 4))] * 4


def build_muon(lib):
    """One Muon step over 12 matrices of 64x64 and 4 of 256x128 (torch has one
    form: its single-tensor loop)."""
    T = need(lib, "optim.Muon")
    params, grads = _suite_arrays(MUON_SHAPES)
    ps = []
    for p, g in zip(params, grads):
        if lib == "torch":
            t = T.nn.Parameter(T.from_numpy(p))
            t.grad = T.from_numpy(g)
        else:
            t = T.tensor(p, requires_grad=True)
            t.grad = T.tensor(g)
        ps.append(t)
    return T.optim.Muon(ps, lr=1e-3).step


@pytest.mark.parametrize("lib", ["cygrad", "torch"])
def test_muon_step(benchmark, lib):
    step = build_muon(lib)
    step()
    tag(benchmark, "optim_muon", lib)
    run(benchmark, step)


@pytest.mark.parametrize("sizes", list(SHAPES))
@pytest.mark.parametrize("name", list(SUITE))
@pytest.mark.parametrize("lib", ["cygrad", "torch"])
def test_suite_step(benchmark, lib, name, sizes):
    step = build_suite(lib, name, sizes)
    step()
    tag(benchmark, f"optim_suite_{sizes}_{name}", lib, optimizer=name, sizes=sizes)
    run(benchmark, step)


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
@pytest.mark.parametrize("lib", ["cygrad", "torch"])
def test_lbfgs_step(benchmark, lib, line_search_fn):
    step = build_lbfgs(lib, line_search_fn)
    step()
    tag(benchmark, f"optim_lbfgs_{line_search_fn}", lib, numel=LBFGS_N)
    run(benchmark, step)


def _suite_interleaved(reps=200):
    """Every optimizer, cygrad and torch's fastest form in turn, round after
    round; prints min and median per step and the ratio of medians."""
    import time

    def timed(fn):
        t = time.perf_counter()
        fn()
        return time.perf_counter() - t

    rows = []
    for sizes in SHAPES:
        for name in SUITE:
            steps = {lib: build_suite(lib, name, sizes) for lib in ("cygrad", "torch")}
            for fn in steps.values():
                fn()
            times = {lib: [] for lib in steps}
            for _ in range(reps):
                for lib, fn in steps.items():
                    times[lib].append(timed(fn))
            rows.append((sizes, name, times))
    steps = {lib: build_muon(lib) for lib in ("cygrad", "torch")}
    times = {lib: [] for lib in steps}
    for _ in range(max(reps // 10, 5)):
        for lib, fn in steps.items():
            times[lib].append(timed(fn))
    rows.append(("muon", "Muon", times))
    for ls in (None, "strong_wolfe"):
        steps = {lib: build_lbfgs(lib, ls) for lib in ("cygrad", "torch")}
        times = {lib: [] for lib in steps}
        for _ in range(max(reps // 10, 5)):
            for lib, fn in steps.items():
                times[lib].append(timed(fn))
        rows.append(("lbfgs", f"LBFGS({ls})", times))
    sums = {}
    print(f"{'case':8s} {'optimizer':20s} {'cygrad us':>10s} {'torch us':>10s} ratio")
    for sizes, name, times in rows:
        c, t = np.median(times["cygrad"]), np.median(times["torch"])
        fast = SUITE.get(name, ({}, {}))[1]
        form = ",".join(f"{k}={v}" for k, v in fast.items()) or "-"
        print(f"{sizes:8s} {name:20s} {c * 1e6:10.1f} {t * 1e6:10.1f} {c / t:5.2f}"
              f"  (torch {form})")
        if sizes == "small" and name not in ("Adafactor",):
            sums.setdefault("c", 0.0)
            sums["c"] = sums["c"] + c
            sums["t"] = sums.get("t", 0.0) + t
    print(f"sum of the eleven on small tensors: cygrad {sums['c'] * 1e6:.1f} us, "
          f"torch {sums['t'] * 1e6:.1f} us, ratio {sums['c'] / sums['t']:.2f}")


if __name__ == "__main__":
    import benchmarks.conftest as _conf  # the same thread policy as the suite

    _conf._apply_threads(__import__("benchmarks").requested_threads())
    import sys

    if "--suite" in sys.argv:
        _suite_interleaved()
    else:
        _interleaved()
