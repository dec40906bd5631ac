"""Data-parallel training step: DDP on N ranks against compute + one allreduce.

Groups:
``ddp_step_compute``  one training step of a 784-256-10 MLP (batch 128,
                      cross-entropy, Adam) in one process: cygrad and torch
``ddp_job``           the same step on 2 ranks under mpiexec (run once; the
                      figures it measures are printed and kept in extra_info)

The rank job (``python benchmarks/bench_distributed.py --worker`` under
``mpiexec -n N``) times, in interleaved rounds with a barrier before each
(so that every rank runs under the same load):

- ``compute``: the plain step on each rank at once, no communication;
- ``allreduce``: one raw ``mpi4py`` ``Allreduce`` of the gradients' bytes;
- ``serial``: the plain step followed by that allreduce, every step: the sum
  measured as one (it meets the other rank every step, as DDP does);
- ``ddp``: the step with ``DistributedDataParallel`` (default buckets), and
  ``ddp_view`` with ``gradient_as_bucket_view=True``, ``ddp_small`` with
  small buckets (so that the last layer's allreduce overlaps the first
  layer's backward);
- ``wait``: the part of the allreduce still running when backward ended
  (DDP's own measure); ``hidden = allreduce - wait``; ``hidden_bytes``: the
  bytes per step whose allreduce had finished before backward ended;
- per-round ratios (DDP and the sum from the same round), whose median and
  best are reported beside the ratios of the medians;
- a sweep of allreduce times over message sizes, for the model.

Step time model for N ranks (weak scaling, batch 128 per rank)::

    T(N) = C + O + max(A_N(M) - H, 0)
    A_N(m) = 2 ceil(log2 N) alpha + 2 (N - 1) / N * m / beta

with C the compute step, O DDP's own overhead (copies, hooks: ``ddp - compute
- wait``), H the hidden part, M the gradient bytes, and alpha, beta fitted to
the 2-rank sweep (A_2(m) = 2 alpha + m / beta, MPICH's recursive doubling /
Rabenseifner costs).  ``python -m benchmarks.bench_distributed`` runs the job
on 2 and 4 ranks, prints every figure, the prediction table for 2-64 ranks and
the 2- and 4-rank predictions against the measurement.
"""

import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benchmarks import fast_mode, need, run, tag

BATCH, D_IN, HIDDEN, D_OUT = 128, 784, 256, 10
SWEEP = [4 << (2 * k) for k in range(11)]          # 4 B .. 4 MiB


def _problem(T, seed):
    rng = np.random.default_rng(seed)
    x = T.tensor(rng.standard_normal((BATCH, D_IN)).astype(np.float32))
    y = T.tensor(rng.integers(0, D_OUT, BATCH).astype(np.int64))
    T.manual_seed(0)
    model = T.nn.Sequential(T.nn.Linear(D_IN, HIDDEN), T.nn.ReLU(),
                            T.nn.Linear(HIDDEN, D_OUT))
    return model, x, y


def _stepper(T, model, x, y):
    opt = T.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = T.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    return step


@pytest.mark.parametrize("lib", ["cygrad", "torch"])
def test_step_compute(benchmark, lib):
    T = need(lib, "optim.Adam")
    model, x, y = _problem(T, 0)
    step = _stepper(T, model, x, y)
    step()
    tag(benchmark, "ddp_step_compute", lib, batch=BATCH)
    run(benchmark, step)


def launch(n, steps, rounds, timeout=600):
    """Run the rank job on ``n`` ranks; returns rank 0's measurements."""
    pytest_like = "pytest" in sys.modules
    if importlib_missing("mpi4py"):
        if pytest_like:
            pytest.skip("mpi4py is not installed")
        raise SystemExit('mpi4py is not installed: pip install -e ".[distributed]"')
    from cygrad.distributed.run import find_mpiexec
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result.json")
        cmd = [find_mpiexec(), "-n", str(n), sys.executable, os.path.abspath(__file__),
               "--worker", str(steps), str(rounds), out]
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
        if any(f.startswith("engine") and f.endswith(".so") for f in
               os.listdir(os.path.join(ROOT, "cygrad", "_kernels"))):
            env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True,
                              timeout=timeout, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"rank job failed:\n{proc.stdout}\n{proc.stderr}")
        with open(out) as f:
            return json.load(f)


def importlib_missing(name):
    import importlib.util
    return importlib.util.find_spec(name) is None


def test_ddp_job(benchmark):
    """The 2-rank job runs and reports consistent figures (no timing check)."""
    fast = fast_mode()
    res = launch(2, 3 if fast else 50, 2 if fast else 15)
    for key in ("compute", "allreduce", "ddp", "ddp_view", "ddp_small", "wait"):
        assert res[key] > 0, key
    assert res["bytes"] == 4 * (D_IN * HIDDEN + HIDDEN + HIDDEN * D_OUT + D_OUT)
    assert len(res["sweep"]) == len(SWEEP)
    tag(benchmark, "ddp_job", "cygrad", ranks=2, **{k: res[k] for k in (
        "compute", "allreduce", "ddp", "ddp_view", "ddp_small", "wait",
        "wait_small")})
    benchmark.pedantic(lambda: None, rounds=1)
    print(report(res, None))


# --- rank job ------------------------------------------------------------------------

def _worker(steps, rounds, out_path):
    from mpi4py import MPI

    import cygrad
    import cygrad.distributed as dist
    from cygrad.nn.parallel import DistributedDataParallel as DDP

    cygrad.set_num_threads(1)
    dist.init_process_group()
    rank, n = dist.get_rank(), dist.get_world_size()
    comm = MPI.COMM_WORLD

    plain, x, y = _problem(cygrad, rank)
    nbytes = sum(p.numel() for p in plain.parameters()) * 4
    variants = {"compute": _stepper(cygrad, plain, x, y)}
    ddps = {}
    for name, kw in (("ddp", {}), ("ddp_view", {"gradient_as_bucket_view": True}),
                     ("ddp_small", {"bucket_cap_mb": 0.01})):
        model, _, _ = _problem(cygrad, rank)
        ddps[name] = DDP(model, **kw)
        variants[name] = _stepper(cygrad, ddps[name], x, y)
    buf = np.ones(nbytes // 4, np.float32)
    variants["allreduce"] = lambda: comm.Allreduce(MPI.IN_PLACE, buf)
    # the sum measured as one: the plain step, then the raw allreduce of the
    # same bytes, every step (so it meets the other rank every step, as DDP)
    plain2, _, _ = _problem(cygrad, rank)
    step2 = _stepper(cygrad, plain2, x, y)
    buf2 = np.ones(nbytes // 4, np.float32)

    def serial():
        step2()
        comm.Allreduce(MPI.IN_PLACE, buf2)
    variants["serial"] = serial
    variants.update(_torch_variants(comm, rank, n))

    def timed(fn, k):
        comm.Barrier()
        t0 = time.perf_counter()
        for _ in range(k):
            fn()
        # the job goes at its slowest rank
        return comm.allreduce((time.perf_counter() - t0) / k, op=MPI.MAX)

    for fn in variants.values():
        for _ in range(3):
            fn()
    samples = {name: [] for name in variants}
    waits = {name: [] for name in ddps}
    hidden = {name: [] for name in ddps}
    for _ in range(rounds):
        for name, fn in variants.items():
            if name in ddps:
                ddps[name]._st.wait_s, ddps[name]._st.n_syncs = 0.0, 0
                ddps[name]._st.hidden_bytes = 0
            samples[name].append(timed(fn, steps))
            if name in ddps:
                d = ddps[name]
                waits[name].append(comm.allreduce(d._st.wait_s / d._st.n_syncs,
                                                  op=MPI.MAX))
                hidden[name].append(comm.allreduce(d._st.hidden_bytes
                                                   / d._st.n_syncs, op=MPI.MIN))
    # medians, and the best round (the machine's other load left out)
    result = {name: float(np.median(v)) for name, v in samples.items()}
    result.update({f"{name}_best": float(np.min(v)) for name, v in samples.items()})
    result["wait"] = float(np.median(waits["ddp"]))
    result["wait_best"] = float(np.min(waits["ddp"]))
    result["wait_small"] = float(np.median(waits["ddp_small"]))
    result["buckets"] = len(ddps["ddp"]._buckets)
    result["buckets_small"] = len(ddps["ddp_small"]._buckets)
    # bytes per step whose allreduce had finished on every rank when backward
    # ended (mean over the steps of the median round)
    result["hidden_bytes"] = float(np.median(hidden["ddp"]))
    result["hidden_bytes_small"] = float(np.median(hidden["ddp_small"]))
    result["ratio_rounds"] = [float(d / (c + a)) for d, c, a in zip(
        samples["ddp"], samples["compute"], samples["allreduce"])]
    result["serial_ratio_rounds"] = [float(d / s) for d, s in zip(
        samples["ddp"], samples["serial"])]
    # bytes whose allreduce can start before backward's last gradient: every
    # bucket but the last one launched
    result["hideable_bytes_small"] = int(sum(b.flat.nbytes for b in
                                             ddps["ddp_small"]._buckets[:-1]))
    sweep = []
    for m in SWEEP:
        arr = np.ones(max(m // 4, 1), np.float32)
        reps = max(3, min(200, int(2e7 // max(m, 1))))
        ts = [timed(lambda arr=arr: comm.Allreduce(MPI.IN_PLACE, arr), reps)
              for _ in range(max(3, rounds // 3))]
        sweep.append((m, float(np.median(ts))))
    result.update(ranks=n, bytes=int(nbytes), sweep=sweep, steps=steps,
                  rounds=rounds)
    if rank == 0:
        with open(out_path, "w") as f:
            json.dump(result, f)
    dist.destroy_process_group()


def _torch_variants(comm, rank, n):
    """torch's plain step, DDP step (gloo) and gloo allreduce, same problem,
    same job: what the machine's load does to a reference implementation."""
    try:
        import torch
        import torch.distributed as tdist
        from torch.nn.parallel import DistributedDataParallel as TDDP
    except ImportError:
        return {}
    if not tdist.is_available() or not tdist.is_gloo_available():
        return {}
    torch.set_num_threads(1)
    port = None
    if rank == 0:
        import socket
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
    port = comm.bcast(port, root=0)
    tdist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                             rank=rank, world_size=n)
    plain, x, y = _problem(torch, rank)
    model, _, _ = _problem(torch, rank)
    ddp = TDDP(model)
    flat = torch.ones(sum(p.numel() for p in plain.parameters()))
    return {"torch_compute": _stepper(torch, plain, x, y),
            "torch_ddp": _stepper(torch, ddp, x, y),
            "torch_allreduce": lambda: tdist.all_reduce(flat)}


def _ratio(r, prefix="", suffix=""):
    step = r[f"{prefix}ddp{suffix}"]
    return step / (r[f"{prefix}compute{suffix}"] + r[f"{prefix}allreduce{suffix}"])


# --- model and report ----------------------------------------------------------------

def fit(sweep):
    """alpha, beta from a 2-rank sweep: A_2(m) = 2 alpha + m / beta."""
    m = np.array([s for s, _ in sweep], float)
    t = np.array([v for _, v in sweep], float)
    slope, intercept = np.polyfit(m, t, 1, w=1 / t)     # relative errors
    return max(intercept, 1e-9) / 2, 1 / max(slope, 1e-18)


def allreduce_model(n, m, alpha, beta):
    return 2 * math.ceil(math.log2(n)) * alpha + 2 * (n - 1) / n * m / beta


def predict(two, n, compute=None, alpha=None, beta=None):
    """Step time on n ranks from the 2-rank measurement (``compute`` may be
    the compute step measured at n ranks)."""
    if alpha is None:
        alpha, beta = fit(two["sweep"])
    c = two["compute"] if compute is None else compute
    overhead = max(two["ddp"] - two["compute"] - two["wait"], 0.0)
    hidden = max(two["allreduce"] - two["wait"], 0.0)
    return c + overhead + max(allreduce_model(n, two["bytes"], alpha, beta) - hidden,
                              0.0)


def report(two, four):
    ms = 1e3
    alpha, beta = fit(two["sweep"])
    lines = [
        (f"2 ranks, {two['bytes'] / 1e6:.3f} MB of gradients, medians of "
        f"{two['rounds']} rounds x {two['steps']} steps (slowest rank):"),
        f"  compute step (no DDP)      {two['compute'] * ms:8.3f} ms",
        f"  raw allreduce of the bytes {two['allreduce'] * ms:8.3f} ms",
        (f"  DDP step                   {two['ddp'] * ms:8.3f} ms  = "
        f"{two['ddp'] / (two['compute'] + two['allreduce']):.3f} x (compute + "
        f"allreduce)"),
        (f"  DDP, grads as bucket views {two['ddp_view'] * ms:8.3f} ms  = "
        f"{two['ddp_view'] / (two['compute'] + two['allreduce']):.3f} x"),
        (f"  DDP, {two['buckets_small']} small buckets     "
        f"{two['ddp_small'] * ms:8.3f} ms  = "
        f"{two['ddp_small'] / (two['compute'] + two['allreduce']):.3f} x"),
        (f"  best rounds: compute {two['compute_best'] * ms:.3f} ms, allreduce "
        f"{two['allreduce_best'] * ms:.3f} ms, DDP {two['ddp_best'] * ms:.3f} ms = "
        f"{two['ddp_best'] / (two['compute_best'] + two['allreduce_best']):.3f} x, "
        f"views {two['ddp_view_best'] * ms:.3f} ms = "
        f"{two['ddp_view_best'] / (two['compute_best'] + two['allreduce_best']):.3f}"
        f" x, small buckets {two['ddp_small_best'] * ms:.3f} ms"),
        *([(f"  torch (gloo), same job: compute {two['torch_compute'] * ms:.3f} ms, "
           f"allreduce {two['torch_allreduce'] * ms:.3f} ms, DDP "
           f"{two['torch_ddp'] * ms:.3f} ms = {_ratio(two, 'torch_'):.3f} x (best "
           f"rounds {two['torch_ddp_best'] * ms:.3f} ms = "
           f"{_ratio(two, 'torch_', '_best'):.3f} x)")] if "torch_ddp" in two else []),
        (f"  communication left after backward: {two['wait'] * ms:.3f} ms "
        f"(default buckets), {two['wait_small'] * ms:.3f} ms (small buckets); "
        f"hidden: {max(two['allreduce'] - two['wait'], 0) * ms:.3f} ms / "
        f"{max(two['allreduce'] - two['wait_small'], 0) * ms:.3f} ms of "
        f"{two['allreduce'] * ms:.3f}"),
        (f"  per-round ratio DDP / (compute + allreduce), same round: median "
        f"{np.median(two['ratio_rounds']):.3f}, best {min(two['ratio_rounds']):.3f}"
        f", worst {max(two['ratio_rounds']):.3f}"),
        (f"  step then raw allreduce, every step (no overlap) {two['serial'] * ms:.3f} ms;"
        f" DDP / that, same round: median "
        f"{np.median(two['serial_ratio_rounds']):.3f}, best "
        f"{min(two['serial_ratio_rounds']):.3f}"),
        (f"  reduced entirely during backward (finished before its end): "
        f"{two['hidden_bytes']:.0f} B per step ({two['buckets']} buckets), "
        f"{two['hidden_bytes_small']:.0f} B ({two['buckets_small']} small buckets)"),
        (f"  with small buckets {two['hideable_bytes_small']} of {two['bytes']} bytes "
        f"can be reduced while backward still runs (the first layer's gradient, "
        f"computed last, is the rest)"),
        f"  allreduce fit: alpha = {alpha * 1e6:.2f} us, beta = {beta / 1e9:.2f} GB/s",
        "",
        ("predicted step time (compute and alpha/beta as measured here; one core "
        "per rank):"),
        "  ranks  allreduce ms   step ms",
    ]
    for n in (2, 4, 8, 16, 32, 64):
        lines.append(f"  {n:5d}  {allreduce_model(n, two['bytes'], alpha, beta) * ms:12.3f}"
                     f"  {predict(two, n, alpha=alpha, beta=beta) * ms:8.3f}")
    lines.append(f"check: 2 ranks predicted {predict(two, 2) * ms:.3f} ms, measured "
                 f"{two['ddp'] * ms:.3f} ms")
    if four is not None:
        p4 = predict(two, 4, compute=four["compute"])
        lines.append(
            f"check: 4 ranks (compute measured at 4 ranks: "
            f"{four['compute'] * ms:.3f} ms) predicted {p4 * ms:.3f} ms, measured "
            f"{four['ddp'] * ms:.3f} ms; allreduce predicted "
            f"{allreduce_model(4, two['bytes'], alpha, beta) * ms:.3f} ms, measured "
            f"{four['allreduce'] * ms:.3f} ms")
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        _worker(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    else:
        steps = int(os.environ.get("CYGRAD_BENCH_STEPS", "50"))
        rounds = int(os.environ.get("CYGRAD_BENCH_ROUNDS", "15"))
        two = launch(2, steps, rounds)
        four = launch(4, steps, rounds) if "--no-4" not in sys.argv else None
        print(report(two, four))
        print(json.dumps({"2": two, "4": four}))
