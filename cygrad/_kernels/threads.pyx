"""How many OpenMP threads a kernel may use, and the one parallel loop.

Layout: one process-wide setting, the thread count, read by every kernel
through ``threads_for(work)`` (cimported from ``threads.pxd``); ``work`` is
the number of multiply-like elements a call touches.  A kernel cuts its work
into that many blocks and hands them to ``run_blocks``, the only OpenMP
region of cygrad: one block per thread, ``schedule(static)``.  Python sets
and reads the count with ``set_num_threads`` / ``get_num_threads``
(re-exported by ``cygrad``).

Determinism: the blocks depend only on the size and the configured count, so
a sum gives the same bits for a given count whether its blocks ran in
parallel or one after the other.

Shared cores: a parallel region ends at a barrier, so it lasts until the
slowest thread is done.  When other processes keep the cores busy, a woken
OpenMP worker may wait a whole scheduler slice (~4 ms measured here, load 4
on 2 cores) before it runs, and a 20 us kernel takes 4 ms.  ``run_blocks``
therefore keeps an account: each region's gain is the serial estimate (the
CPU time of the master's own block times the number of blocks) minus the
region's wall time, added to
a credit capped at 10 ms.  While the credit is negative, threading has lost
more than it saved, and the blocks run serially for 20x the loss (at most
1 s); then one region probes again with a clean account.  A loaded machine
thus pays at most ~5% for probing, and an idle one keeps every region.
``thread_stats()`` counts regions run, those slower than serial, and skipped.

Threading: everything here is ``nogil``; the settings are plain ints and
doubles, a concurrent change is seen by the next kernel call.  A kernel
called inside a parallel region (a row of a row-parallel ``nd_apply``) gets
1 from ``threads_for``, so regions never nest.  Built without OpenMP
(``CYGRAD_OPENMP=0``) the pragma vanishes and every kernel runs serially.
"""

from cython.parallel cimport prange

import os
import warnings

cdef extern from "cg_threads.h":
    int cg_in_parallel() noexcept nogil
    int cg_after_fork
    void cg_mark_used() noexcept nogil
    int cg_watch_fork() noexcept
    double cg_now() noexcept nogil
    double cg_cpu_now() noexcept nogil
    int cg_enter() noexcept nogil
    void cg_leave() noexcept nogil
    int CG_OPENMP

# Work (in multiply-like elements) below which a kernel stays serial.
# Measured on the development machine (2 vCPUs of an AMD EPYC, shared; load
# 1.4, i.e. the other core mostly free), median time per call of 2 threads
# over 1 thread, float32, calls interleaved, with _set_parallel_threshold(0)
# and _set_adaptive(False) (bench_scaling.py's threads cases re-measure it
# with the policy in force):
#        n     1e3   1e4   3e4   1e5   3e5   1e6   1e7
#   mul      2.85  1.36  0.92  0.73  0.83  0.78  0.69
#   add      3.08  1.35  0.96  0.70  0.58  0.54  0.72
#   exp      1.35  0.60  0.52  0.51  0.49  0.48  0.54
#   sum      3.52  1.18  0.77  0.64  0.54  0.57  0.55
# float64 alike (mul 0.88 at 1e5, 0.57 at 1e6).  A region costs ~2 us, so
# multiply-like work wins clearly from ~1e5 elements; rows that call libm
# weigh 16 (exp: 2 threads win from 3e3), so they split from 6,250.  At load
# 2.5-3 every size loses on average (a worker waits for a core) - that is the
# run_blocks account's job, not the threshold's.
cdef enum:
    PARALLEL_MIN = 100000

# The account of run_blocks (seconds): savings kept to absorb later losses,
# serial running per second lost, longest serial stretch.
cdef double CREDIT_MAX = 0.01
cdef double BACKOFF_PER_LOSS = 20.0
cdef double BACKOFF_MAX = 1.0

cdef int _num_threads = 1
cdef Py_ssize_t _threshold = PARALLEL_MIN
cdef bint _adaptive = True
cdef double _credit = 0.0, _backoff_until = 0.0
cdef Py_ssize_t _n_parallel = 0, _n_slow = 0, _n_skipped = 0


cdef int threads_for(Py_ssize_t work) noexcept nogil:
    """1 below the threshold, inside a parallel region or after a fork;
    else the configured count.

    Each thread gets at least half a threshold of work, so on a machine with
    many cores the team grows with the size instead of jumping to all cores
    at the threshold (with 2 threads this is exactly the configured count).
    """
    cdef Py_ssize_t t, grain
    if _num_threads <= 1 or work < _threshold or cg_after_fork or cg_in_parallel():
        return 1
    grain = _threshold // 2
    if grain < 1:
        return _num_threads
    t = work // grain
    return <int>t if t < _num_threads else _num_threads


cdef void run_blocks(block_fn fn, void* job, int nblocks) noexcept nogil:
    """Run ``fn(job, c)`` for c in 0..nblocks-1, one block per thread.

    Serially when there is one block, inside a parallel region, while
    another Python thread's region runs (no more threads than cores), after
    a fork, or while the account is in deficit (see the module docstring).
    """
    global _credit, _backoff_until, _n_parallel, _n_slow, _n_skipped
    cdef Py_ssize_t c
    cdef double t0, gain
    cdef double master[2]
    cdef bint serial = nblocks <= 1 or cg_after_fork or cg_in_parallel()
    if not serial and _adaptive and _backoff_until > 0:
        if cg_now() < _backoff_until:
            _n_skipped += 1
            serial = True
        else:
            _backoff_until = 0.0  # probe with a clean account
            _credit = 0.0
    if serial or not CG_OPENMP or not cg_enter():
        for c in range(nblocks):
            fn(job, c)
        return
    cg_mark_used()
    master[0] = master[1] = 0.0
    t0 = cg_now()
    for c in prange(nblocks, schedule="static", num_threads=nblocks):
        if c == 0:
            master[1] = cg_cpu_now()
        fn(job, c)
        if c == 0:
            master[0] = cg_cpu_now() - master[1]
    # The serial estimate is the CPU time of one block times the blocks: on
    # a busy machine, where both threads wait for cores, wall times would
    # make a region look worth it when it is not.
    gain = nblocks * master[0] - (cg_now() - t0)
    cg_leave()
    _n_parallel += 1
    if gain < 0:
        _n_slow += 1
    if _adaptive:
        _credit = min(_credit + gain, CREDIT_MAX)
        if _credit < 0:
            _backoff_until = cg_now() + min(-_credit * BACKOFF_PER_LOSS, BACKOFF_MAX)


def thread_stats(reset=False):
    """Counts of parallel regions since the last reset.

    Returns a dict: ``parallel`` regions run on several threads, ``slow``
    ones among them that were slower than the serial estimate, ``skipped``
    splits run serially while the account was in deficit, and the current
    ``credit_s`` (seconds saved, net, since the last probe; capped).
    """
    global _n_parallel, _n_slow, _n_skipped
    out = dict(parallel=_n_parallel, slow=_n_slow, skipped=_n_skipped,
               credit_s=_credit)
    if reset:
        _n_parallel = _n_slow = _n_skipped = 0
    return out


def _set_adaptive(flag):
    """Switch the back-off on or off (measurements and tests); returns the old."""
    global _adaptive, _credit, _backoff_until
    old = _adaptive
    _adaptive = bool(flag)
    _credit = _backoff_until = 0.0
    return old


def _env_threads():
    """The default count: CYGRAD_NUM_THREADS, OMP_NUM_THREADS, usable cores."""
    for var in ("CYGRAD_NUM_THREADS", "OMP_NUM_THREADS"):
        text = os.environ.get(var, "").strip()
        if not text:
            continue
        # OMP_NUM_THREADS may list one count per nesting level ("4,2").
        first = text.split(",")[0].strip()
        try:
            n = int(first)
        except ValueError:
            n = 0
        if n >= 1:
            return n
        warnings.warn(
            f"cygrad: ignoring {var}={text!r} (not a positive integer)",
            RuntimeWarning,
            stacklevel=2,
        )
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def set_num_threads(n):
    """Set the number of threads cygrad's large kernels may use.

    Parameters
    ----------
    n : int
        A positive thread count.  Kernels on fewer elements than
        ``parallel_threshold()`` stay serial whatever ``n`` is.

    Raises
    ------
    TypeError
        If ``n`` is not an integer (bools are refused too).
    ValueError
        If ``n`` is smaller than 1.
    """
    global _num_threads
    if isinstance(n, bool) or not hasattr(type(n), "__index__"):
        raise TypeError(
            f"set_num_threads(): argument 'n' must be int, not {type(n).__name__}")
    n = n.__index__()
    if n < 1:
        raise ValueError(
            f"set_num_threads(): argument 'n' must be a positive integer, got {n}")
    _num_threads = min(n, 1 << 16)


def get_num_threads():
    """The number of threads cygrad's large kernels may use (an int >= 1).

    The default comes from the environment when cygrad is imported:
    ``CYGRAD_NUM_THREADS``, else ``OMP_NUM_THREADS``, else the number of
    cores this process may run on.  In a process forked after its parent ran
    a parallel kernel it is 1: OpenMP's threads are not copied by ``fork``.
    """
    return 1 if cg_after_fork else _num_threads


def parallel_threshold():
    """Elements below which a kernel stays serial, whatever the thread count."""
    return _threshold


def openmp_enabled():
    """True when the kernels were compiled with OpenMP."""
    return bool(CG_OPENMP)


def _set_parallel_threshold(n):
    """Change the threshold (measurements and tests only); returns the old one.

    ``None`` restores the built-in value.
    """
    global _threshold
    old = _threshold
    _threshold = PARALLEL_MIN if n is None else max(0, int(n))
    return old


_num_threads = _env_threads()
cg_watch_fork()
