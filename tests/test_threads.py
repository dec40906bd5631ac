"""Threads: grad mode per thread, independent graphs in parallel agree with
serial runs, concurrent backward into a shared leaf loses nothing, and large
kernels release the GIL."""

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


def test_two_threads_of_elementwise_work_faster_than_serial():
    """Report serial vs two-thread wall time for large elementwise work.

    The assertion is loose (machines in CI share cores); the figures are
    printed.  Forward elementwise kernels run without the GIL, so on two free
    cores the parallel time approaches half the serial time.
    """
    xs = [cygrad.rand(1_000_000, dtype=cygrad.float64) for _ in range(2)]
    _big_work(xs[0])
    best_serial = best_parallel = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for x in xs:
            _big_work(x)
        best_serial = min(best_serial, time.perf_counter() - t0)
        t0 = time.perf_counter()
        _in_threads(lambda i: _big_work(xs[i]), n=2)
        best_parallel = min(best_parallel, time.perf_counter() - t0)
    ratio = best_parallel / best_serial
    print(
        f"\nserial {best_serial * 1e3:.1f} ms, two threads "
        f"{best_parallel * 1e3:.1f} ms, ratio {ratio:.2f}"
    )
    assert ratio < 2.0


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
