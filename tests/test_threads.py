"""Threads: grad mode per thread, independent graphs in parallel agree with
serial runs, concurrent backward into a shared leaf loses nothing, large
kernels release the GIL; and the kernels' own OpenMP threads
(``cygrad.set_num_threads``): the setting, the environment, and results that
do not depend on the thread count."""

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import cygrad

N_THREADS = 8


def _in_threads(fn, n=N_THREADS):
    """Run fn(i) in n threads started together; return results, re-raise errors."""
    barrier = threading.Barrier(n)
    results = [None] * n
    errors = []

    def run(i):
        try:
            barrier.wait()
            results[i] = fn(i)
        except BaseException as e:  # noqa: BLE001 - reported in the main thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0]
    return results


def test_grad_mode_is_per_thread():
    seen = {}
    entered = threading.Event()
    release = threading.Event()

    def other():
        seen["start"] = cygrad.is_grad_enabled()
        with cygrad.no_grad():
            entered.set()
            release.wait(10)
            seen["inside"] = cygrad.is_grad_enabled()
        seen["after"] = cygrad.is_grad_enabled()

    with cygrad.no_grad():
        t = threading.Thread(target=other)
        t.start()
        assert entered.wait(10)
        # The other thread's no_grad does not leak here, nor ours there.
        assert not cygrad.is_grad_enabled()
        release.set()
        t.join(10)
    assert cygrad.is_grad_enabled()
    x = cygrad.ones(2, requires_grad=True)
    assert (x * 2).requires_grad
    assert seen == {"start": True, "inside": False, "after": True}


def test_set_grad_enabled_in_thread_leaves_main_alone():
    def work(i):
        cygrad.set_grad_enabled(i % 2 == 0)
        x = cygrad.ones(3, requires_grad=True)
        time.sleep(0.01)
        return cygrad.is_grad_enabled(), (x * 2).requires_grad

    res = _in_threads(work)
    assert res == [(i % 2 == 0, i % 2 == 0) for i in range(N_THREADS)]
    assert cygrad.is_grad_enabled()


def _problem(i, n=130):
    """Thread i's graph: inputs from its own seed; large enough that kernels
    release the GIL (n * n > 16384 elements)."""
    rng = np.random.default_rng(100 + i)
    a = rng.standard_normal((n, n))
    b = rng.standard_normal((n, n))
    c = rng.standard_normal(n)
    return a, b, c


def _grads(arrays):
    a, b, c = (cygrad.tensor(v, requires_grad=True) for v in arrays)
    h = (a * b + c).tanh()
    y = (h.exp() / (1 + h * h)).sigmoid() - a.sin() * c
    z = (y @ b).relu().sum(dim=1) ** 2
    loss = z.mean() + (a * a).sum() / 7
    loss.backward()
    return loss.item(), a.grad.numpy(), b.grad.numpy(), c.grad.numpy()


def test_independent_graphs_in_8_threads_match_serial():
    problems = [_problem(i) for i in range(N_THREADS)]
    serial = [_grads(p) for p in problems]
    for _ in range(2):
        parallel = _in_threads(lambda i: _grads(problems[i]))
        for s, p in zip(serial, parallel):
            assert s[0] == p[0]
            for gs, gp in zip(s[1:], p[1:]):
                np.testing.assert_array_equal(gs, gp)


def test_concurrent_backward_into_shared_leaf_loses_nothing():
    """8 threads, each 20 backward passes into one shared leaf: the sum is exact.

    (Before the engine lock, a shared leaf's AccumulateGrad scratch and the
    in-place .grad sum raced: 136-156 instead of 160.)
    """
    w = cygrad.zeros(200, 200, dtype=cygrad.float64, requires_grad=True)
    reps = 20

    def work(i):
        x = cygrad.full((200, 200), float(i + 1), dtype=cygrad.float64)
        for _ in range(reps):
            (w * x + w).sum().backward()

    _in_threads(work)
    want = sum(reps * (i + 2) for i in range(N_THREADS))
    np.testing.assert_array_equal(w.grad.numpy(), np.full((200, 200), want))


def test_threads_with_shared_parameters_and_no_grad_updates():
    """Threads compute grads of a shared parameter with autograd.grad while the
    main thread never sees their grad mode: results equal the serial ones."""
    w = cygrad.tensor(np.linspace(-1, 1, 40 * 40).reshape(40, 40), requires_grad=True)

    def work(i):
        x = cygrad.tensor(np.full((40, 40), 0.1 * (i + 1)))
        with cygrad.enable_grad():
            (g,) = cygrad.autograd.grad(((w @ x).tanh() ** 2).sum(), w)
        with cygrad.no_grad():
            assert not (w * 2).requires_grad
        return g.numpy()

    serial = [work(i) for i in range(N_THREADS)]
    parallel = _in_threads(work)
    for s, p in zip(serial, parallel):
        np.testing.assert_array_equal(s, p)
    assert w.grad is None


# --- the GIL -------------------------------------------------------------------


def test_kernels_release_the_gil():
    """While one thread is inside a large kernel, another runs Python code.

    CPython switches threads only between bytecodes or when C code releases
    the GIL: if the kernel held the GIL, the stamping thread could not record
    a time strictly inside the kernel call.
    """
    x = cygrad.rand(4_000_000, dtype=cygrad.float64)
    x.exp()  # warm up allocation paths
    stamps = []
    stop = threading.Event()

    def stamp():
        last = 0.0
        while not stop.is_set():
            t = time.perf_counter()
            if t - last > 0.0005:
                stamps.append(t)
                last = t

    th = threading.Thread(target=stamp)
    th.start()
    calls = []
    try:
        time.sleep(0.02)
        for _ in range(4):
            t0 = time.perf_counter()
            x.exp()
            t1 = time.perf_counter()
            calls.append((t0, t1))
            time.sleep(0.01)
    finally:
        stop.set()
        th.join()
    inside = []
    for t0, t1 in calls:
        d = t1 - t0
        inside.append(sum(t0 + 0.2 * d < s < t1 - 0.2 * d for s in stamps))
    print(
        f"\nkernel calls (ms): {[round((b - a) * 1e3, 1) for a, b in calls]}, "
        f"other thread's stamps inside each: {inside}"
    )
    assert max(inside) > 0


def _big_work(x):
    y = x
    for _ in range(3):
        y = (y * 1.0000001).sin() + x
    return y


def test_two_threads_of_large_elementwise_work_equal_the_serial_results():
    """Large elementwise kernels release the GIL; two threads running them at
    once give the serial results bit for bit.  The wall times are printed
    (on two free cores the parallel time approaches half the serial time),
    never asserted: CI machines share their cores."""
    xs = [cygrad.rand(1_000_000, dtype=cygrad.float64) for _ in range(2)]
    t0 = time.perf_counter()
    serial = [_big_work(x).numpy() for x in xs]
    t_serial = time.perf_counter() - t0
    out = [None, None]

    def work(i):
        out[i] = _big_work(xs[i]).numpy()

    t0 = time.perf_counter()
    _in_threads(work, n=2)
    t_parallel = time.perf_counter() - t0
    print(f"\nserial {t_serial * 1e3:.1f} ms, two threads {t_parallel * 1e3:.1f} ms")
    for got, want in zip(out, serial, strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_threads_hammering_one_tensor_read_only_is_safe(dtype):
    """Many threads reading one tensor (forward + backward of their own graphs
    built on a shared non-leaf) get identical, correct results."""
    base = cygrad.tensor(np.linspace(0, 1, 30000).astype(dtype), requires_grad=True)
    shared = base * 2  # a shared non-leaf, read by every thread's graph

    def work(i):
        x = cygrad.tensor(np.full(30000, i, dtype=dtype), requires_grad=True)
        (shared.detach() * x).exp().sum().backward()
        return x.grad.numpy()

    res = _in_threads(work)
    for i, g in enumerate(res):
        want = np.exp(np.linspace(0, 1, 30000) * 2 * i) * (np.linspace(0, 1, 30000) * 2)
        np.testing.assert_allclose(
            g, want.astype(dtype), rtol=1e-5 if dtype == "float32" else 1e-12
        )


# --- cygrad.set_num_threads: the kernels' OpenMP threads -------------------------

from cygrad._kernels import threads as _threads

BIG = 2 * _threads.parallel_threshold() + 1234  # above the threshold, not a round size


@pytest.fixture
def kernel_threads():
    """Restore the thread count and policy after the test; the back-off off, so
    that 2 threads really run in parallel on a busy machine."""
    saved = _threads.get_num_threads()
    adaptive = _threads._set_adaptive(False)
    _threads.thread_stats(reset=True)
    yield
    _threads._set_adaptive(adaptive)
    _threads._set_parallel_threshold(None)
    cygrad.set_num_threads(saved)


def _at(n, fn):
    """fn() computed with n kernel threads, as NumPy arrays."""
    cygrad.set_num_threads(n)
    out = fn()
    return [np.array(o.detach().numpy() if hasattr(o, "detach") else o) for o in out]


def _assert_ran_parallel():
    if _threads.openmp_enabled():
        assert _threads.thread_stats()["parallel"] > 0


def test_set_get_num_threads_round_trip(kernel_threads):
    for n in (1, 2, 3, 1):
        cygrad.set_num_threads(n)
        assert cygrad.get_num_threads() == n
    cygrad.set_num_threads(np.int64(2))  # any integer type, as torch
    assert cygrad.get_num_threads() == 2
    assert type(cygrad.get_num_threads()) is int


def test_set_num_threads_bounds_the_blas_too(kernel_threads):
    """As torch.set_num_threads bounds its matrix products, cygrad's sets the
    threads of NumPy's BLAS (where that BLAS has a setting)."""
    threadpoolctl = pytest.importorskip("threadpoolctl")

    def blas_threads():
        return [i["num_threads"] for i in threadpoolctl.threadpool_info()
                if i["user_api"] == "blas" and i["internal_api"] in ("openblas", "mkl")
                and "numpy" in i["filepath"]]         # not torch's or SciPy's
    try:
        import torch  # noqa: F401  (a second BLAS in the process must not confuse it)
    except ImportError:
        pass
    if not blas_threads():
        pytest.skip("NumPy's BLAS has no thread setting here")
    for n in (1, 2, 1):
        cygrad.set_num_threads(n)
        assert set(blas_threads()) == {n}


@pytest.mark.parametrize("bad", [0, -1, -100])
def test_set_num_threads_refuses_non_positive(kernel_threads, bad):
    cygrad.set_num_threads(2)
    with pytest.raises(ValueError, match="'n' must be a positive integer"):
        cygrad.set_num_threads(bad)
    assert cygrad.get_num_threads() == 2


@pytest.mark.parametrize("bad", [1.0, 2.5, "2", None, True, [2]])
def test_set_num_threads_refuses_non_integers(kernel_threads, bad):
    cygrad.set_num_threads(2)
    with pytest.raises(TypeError, match="'n' must be int"):
        cygrad.set_num_threads(bad)
    assert cygrad.get_num_threads() == 2


def _elementwise(dtype):
    rng = np.random.default_rng(1)
    cols = 500
    rows = BIG // cols
    a_np = rng.standard_normal((rows, cols)).astype(dtype)
    b_np = rng.standard_normal((rows, cols)).astype(dtype)
    bias_np = rng.standard_normal(cols).astype(dtype)
    col_np = rng.standard_normal((rows, 1)).astype(dtype)
    flat_np = rng.standard_normal(BIG).astype(dtype)

    def run():
        a, b = cygrad.from_numpy(a_np), cygrad.from_numpy(b_np)
        bias = cygrad.from_numpy(bias_np)
        flat = cygrad.from_numpy(flat_np)
        outs = [
            a * b,
            a + b,
            a / b,
            cygrad.maximum(a, b),
            a * 0.5,  # contiguous
            flat.exp(),
            flat.tanh(),
            flat.relu(),
            flat.sin(),
            a + bias,
            cygrad.from_numpy(col_np) * bias,  # broadcasting
            a[:, ::2] * b[:, 1::2],
            a.T * b.T,
            a[::2] - b[1::2],  # strided
        ]
        c = a.clone()
        c += b  # in place
        outs.append(c)
        return outs

    return run


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_elementwise_same_bits_on_1_and_2_threads(kernel_threads, dtype):
    run = _elementwise(dtype)
    one = _at(1, run)
    two = _at(2, run)
    _assert_ran_parallel()
    for x, y in zip(one, two):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_elementwise_on_2_threads_matches_numpy(kernel_threads, dtype):
    rng = np.random.default_rng(2)
    a_np = rng.standard_normal((BIG // 300, 300)).astype(dtype)
    b_np = rng.standard_normal(300).astype(dtype)
    cygrad.set_num_threads(2)
    a, b = cygrad.from_numpy(a_np), cygrad.from_numpy(b_np)
    np.testing.assert_array_equal((a * b).numpy(), a_np * b_np)
    np.testing.assert_array_equal((a.T + b[:, None]).numpy(), a_np.T + b_np[:, None])
    np.testing.assert_allclose(a.exp().numpy(), np.exp(a_np), rtol=1e-6)
    _assert_ran_parallel()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_backward_same_bits_on_1_and_2_threads(kernel_threads, dtype):
    """Elementwise backward kernels, broadcast gradients summed back to a bias
    (N, C) -> (C,) and a column (N, 1), and a full sum."""
    rng = np.random.default_rng(3)
    rows, cols = BIG // 400, 400
    x_np = rng.standard_normal((rows, cols)).astype(dtype)
    w_np = rng.standard_normal(cols).astype(dtype)
    c_np = rng.standard_normal((rows, 1)).astype(dtype)

    def run():
        x = cygrad.tensor(x_np, requires_grad=True)
        w = cygrad.tensor(w_np, requires_grad=True)
        c = cygrad.tensor(c_np, requires_grad=True)
        loss = ((x * w).tanh() * c + x.exp()).sum()
        loss.backward()
        return loss, x.grad, w.grad, c.grad

    one = _at(1, run)
    two = _at(2, run)
    _assert_ran_parallel()
    # sums of float32 terms may cancel: an absolute term scaled by the sizes
    tol = {"rtol": 1e-5, "atol": 1e-4} if dtype == np.float32 else {"rtol": 1e-12}
    for x, y in zip(one, two):
        np.testing.assert_allclose(x, y, **tol)
    np.testing.assert_array_equal(one[1], two[1])  # elementwise: exact
    # against float64 NumPy
    x64, w64, c64 = (v.astype(np.float64) for v in (x_np, w_np, c_np))
    th = np.tanh(x64 * w64)
    gw = ((1 - th * th) * x64 * c64).sum(axis=0)
    tol = {"rtol": 1e-4, "atol": 1e-3} if dtype == np.float32 else {"rtol": 1e-10}
    np.testing.assert_allclose(two[2], gw, **tol)
    np.testing.assert_allclose(two[3], th.sum(axis=1, keepdims=True), **tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sums_agree_and_are_deterministic(kernel_threads, dtype):
    rng = np.random.default_rng(4)
    x_np = (rng.random(5 * BIG) + 0.5).astype(dtype)
    ref = x_np.astype(np.float64).sum()
    x = cygrad.from_numpy(x_np)
    got = {}
    for n in (1, 2, 3):
        cygrad.set_num_threads(n)
        first = x.sum().item()
        for _ in range(3):  # a given thread count always gives the same bits
            assert x.sum().item() == first
        got[n] = first
    _assert_ran_parallel()
    rtol = 1e-6 if dtype == np.float32 else 1e-13
    for v in got.values():
        np.testing.assert_allclose(v, ref, rtol=rtol)
    # non-contiguous (a strided view) and 2-D inputs
    cygrad.set_num_threads(2)
    m = cygrad.from_numpy(x_np.reshape(-1, 10))
    np.testing.assert_allclose(m.T.sum().item(), ref, rtol=rtol)
    np.testing.assert_allclose(
        x[::2].sum().item(), x_np[::2].astype(np.float64).sum(), rtol=rtol
    )


@pytest.mark.parametrize(
    "shape,to",
    [
        ((BIG // 50, 50), (50,)),
        ((50, BIG // 50), (50, 1)),
        ((BIG // 8, 8), (1, 8)),
        ((2, 3, BIG // 6), (3, 1)),
        ((BIG // 1000, 10, 100), (10, 1)),
        ((3, BIG // 3), (BIG // 3,)),
    ],
    ids=["rows", "cols", "narrow", "channels", "mid", "few-rows"],
)
def test_sum_to_shape_1_and_2_threads(kernel_threads, shape, to):
    from cygrad._kernels.reduce import sum_to_shape

    rng = np.random.default_rng(5)
    x = rng.standard_normal(shape).astype(np.float32)
    one = _at(1, lambda: [sum_to_shape(x, to)])[0]
    two = _at(2, lambda: [sum_to_shape(x, to)])[0]
    _assert_ran_parallel()
    lead = x.ndim - len(to)
    axes = tuple(range(lead)) + tuple(
        lead + d for d, s in enumerate(to) if s == 1 and x.shape[lead + d] != 1
    )
    ref = x.astype(np.float64).sum(axis=axes, keepdims=True).reshape(to)
    assert one.shape == two.shape == to and two.dtype == np.float32
    np.testing.assert_allclose(one, ref, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(two, one, rtol=1e-6, atol=1e-5)
    # a given thread count gives the same bits again
    np.testing.assert_array_equal(_at(2, lambda: [sum_to_shape(x, to)])[0], two)


def test_small_kernels_stay_serial(kernel_threads):
    cygrad.set_num_threads(2)
    n = _threads.parallel_threshold() // 20  # exp weighs 16x: still below
    a = cygrad.rand(n)
    ((a * a + a).exp().sum()).item()
    assert _threads.thread_stats()["parallel"] == 0


def test_back_off_keeps_results(kernel_threads):
    """With the back-off on (regions may run their blocks serially), a sum
    still gives the bits of its configured thread count."""
    x = cygrad.rand(3 * BIG)
    cygrad.set_num_threads(2)
    want = x.sum().item()
    _threads._set_adaptive(True)
    for _ in range(20):
        assert x.sum().item() == want
    stats = _threads.thread_stats()
    assert set(stats) == {"parallel", "slow", "skipped", "credit_s"}


def _threads_in_subprocess(env):
    full = {
        k: v
        for k, v in os.environ.items()
        if k not in ("CYGRAD_NUM_THREADS", "OMP_NUM_THREADS")
    }
    full.update(env)
    code = (
        "import warnings, cygrad; warnings.simplefilter('error');"
        "print(cygrad.get_num_threads())"
    )
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    full["PYTHONPATH"] = os.pathsep.join(p for p in (root, full.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, "-W", "default", "-c", code],
        env=full,
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return proc


def test_environment_sets_the_default():
    proc = _threads_in_subprocess({"CYGRAD_NUM_THREADS": "1", "OMP_NUM_THREADS": "4"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "1"  # CYGRAD_NUM_THREADS wins
    proc = _threads_in_subprocess({"OMP_NUM_THREADS": "3,1"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "3"  # OpenMP's list: the outer level


def test_bad_environment_warns_and_uses_the_cores():
    proc = _threads_in_subprocess({"CYGRAD_NUM_THREADS": "zero"})
    assert "CYGRAD_NUM_THREADS='zero'" in proc.stderr
    if hasattr(os, "sched_getaffinity"):
        cores = len(os.sched_getaffinity(0))
        proc = _threads_in_subprocess({})
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == str(cores)


def _forked_sum(_):
    b = cygrad.ones(BIG)
    return (b * b).sum().item(), cygrad.get_num_threads()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_fork_after_a_parallel_kernel_does_not_hang(kernel_threads):
    """GNU OpenMP's pool is not copied by fork(): a forked child runs serially."""
    import multiprocessing

    cygrad.set_num_threads(2)
    (cygrad.ones(BIG) * 2).sum().item()  # the parent runs a parallel region
    _assert_ran_parallel()
    with multiprocessing.get_context("fork").Pool(1) as pool:
        total, n = pool.apply_async(_forked_sum, (0,)).get(timeout=60)
    assert total == BIG
    assert n == (1 if _threads.openmp_enabled() else 2)
    assert cygrad.get_num_threads() == 2  # the parent keeps its setting
