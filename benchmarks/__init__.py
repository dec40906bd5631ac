"""Shared helpers of cygrad's benchmark suite.

The suite puts three implementations of the same work side by side, in one
pytest-benchmark ``group`` per case, so that ratios come from one run:

- ``cygrad``: the library under test;
- ``numpy``: a hand-written forward and backward of the same math (the line
  with no autograd overhead at all);
- ``torch``: PyTorch eager, when it is installed.

Because cygrad speaks PyTorch's dialect, most cases write the cygrad and the
torch variant once, against a module ``T`` that is either library.

This module stays light (NumPy only): ``python -m benchmarks.report`` imports
the package without importing torch or cygrad.  ``conftest.py`` sets the
thread policy and switches the fast mode on before the ``bench_*`` modules are
imported, so module-level size lists can depend on :func:`fast_mode`.
"""

import importlib
import os
import time

import numpy as np
import pytest

LIBS = ("cygrad", "numpy", "torch")
SIDES = ("cygrad", "torch")      # the cases without a NumPy line

_STATE = {"fast": os.environ.get("CYGRAD_BENCH_FAST", "0") not in ("", "0")}
_MODULES = {}


def set_fast_mode(flag):
    """Switch the fast mode (tiny sizes, one round) on or off."""
    _STATE["fast"] = bool(flag)


def fast_mode():
    """True when benchmarks only check that they run (``--benchmark-disable``)."""
    return _STATE["fast"]


def pick(full, fast):
    """``full`` normally, ``fast`` in the fast mode."""
    return fast if fast_mode() else full


def log_sizes(lo, hi, per_decade=1):
    """Integers from ``lo`` to ``hi`` (inclusive), log-spaced, no repeats."""
    k = round(np.log10(hi / lo) * per_decade)
    sizes = np.unique(np.round(np.logspace(np.log10(lo), np.log10(hi), k + 1)))
    return [int(s) for s in sizes]


def requested_threads():
    """Thread count of every library: ``CYGRAD_BENCH_THREADS``, default 1."""
    value = os.environ.get("CYGRAD_BENCH_THREADS", "1")
    try:
        n = int(value)
    except ValueError:
        raise ValueError(f"Invalid CYGRAD_BENCH_THREADS: {value!r}") from None
    if n < 1:
        raise ValueError(f"Invalid CYGRAD_BENCH_THREADS: {value!r}")
    return n


def try_import(lib):
    """``(module, None)`` or ``(None, reason)``; NumPy is always there."""
    if lib not in _MODULES:
        try:
            _MODULES[lib] = (importlib.import_module(lib), None)
        except Exception as exc:  # noqa: BLE001 (a broken build skips too)
            _MODULES[lib] = (None, f"{lib} cannot be imported: {exc!r}")
    return _MODULES[lib]


def need(lib, *attrs):
    """Return the module ``lib``, or skip the test with the reason.

    ``attrs`` are dotted attribute paths (``"nn.functional.cross_entropy"``)
    that the case needs; a missing one skips the case, naming it.
    """
    import pytest

    module, reason = try_import(lib)
    if module is None:
        pytest.skip(reason)
    if lib != "numpy":
        attrs = ("tensor", *attrs)  # the core every case uses
    for path in attrs:
        obj = module
        for part in path.split("."):
            try:
                obj = getattr(obj, part)
            except AttributeError:
                try:  # subpackages that __init__ does not import
                    obj = importlib.import_module(f"{obj.__name__}.{part}")
                except ImportError:
                    pytest.skip(f"{lib} has no {lib}.{path}")
    return module


def tag(benchmark, group, lib, **info):
    """Name the group and record what the report needs in ``extra_info``."""
    benchmark.group = group
    benchmark.extra_info["lib"] = lib
    benchmark.extra_info.update(info)


def to_numpy(x):
    """A NumPy array from a cygrad or torch tensor, a NumPy value or None."""
    if x is None:
        return None
    if hasattr(x, "detach"):
        x = x.detach()
    if hasattr(x, "numpy"):
        return np.asarray(x.numpy())
    return np.asarray(x)


def libs_agree(case, op, rtol, atol):
    """``case(lib, op)()`` of every installed library equals NumPy's
    (each step returns its outputs and gradients)."""
    outs = {}
    for lib in LIBS:
        try:
            step = case(lib, op)
        except pytest.skip.Exception:
            continue
        outs[lib] = [to_numpy(r).astype(np.float64) for r in step()]
    ref = outs["numpy"]
    for lib, vals in outs.items():
        for got, want in zip(vals, ref):
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol,
                                       err_msg=f"{lib} {op}")


def sides_agree(case, name, rtol=0.0, atol=0.0):
    """``case(lib, name)()`` gives the same values in cygrad and torch (equal
    when ``rtol`` and ``atol`` are 0); nothing to compare without torch."""
    got = {}
    for lib in SIDES:
        try:
            got[lib] = to_numpy(case(lib, name)())
        except pytest.skip.Exception:
            continue
    if len(got) == 2:
        np.testing.assert_allclose(got["cygrad"], got["torch"], rtol=rtol, atol=atol,
                                   err_msg=name)


def run(benchmark, fn, setup=None, rounds=None):
    """Time ``fn``; with ``setup``, each round gets fresh state.

    ``setup()`` returns the argument tuple of ``fn`` and is not timed.  Without
    ``setup``, pytest-benchmark calibrates rounds and iterations itself.
    """
    if setup is None:
        return benchmark(fn)
    rounds = 1 if fast_mode() else (rounds or 5)
    return benchmark.pedantic(
        fn, setup=lambda: (setup(), {}), rounds=rounds, warmup_rounds=0
    )


def rss_bytes():
    """Resident set size of this process in bytes (Linux), else None."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def round_robin(name, steps, rounds=9, unit="us", width=24, clock=time.process_time):
    """Print one row: the median per-round times of ``steps`` ({"cygrad": fn,
    "torch": fn}), run in alternation round after round (about 50 ms per
    library per round), and the median of the per-round ratios (robust when
    other work shares the cores, where the minimum of separate runs favours
    whichever hit a quiet moment).  ``unit``: "us" or "ms"."""
    for fn in steps.values():
        fn()
        fn()
    t0 = clock()
    steps["torch"]()
    reps = max(1, int(0.05 / max(clock() - t0, 1e-6)))
    times = {lib: [] for lib in SIDES}
    for _ in range(rounds):
        for lib in SIDES:
            t0 = clock()
            for _ in range(reps):
                steps[lib]()
            times[lib].append((clock() - t0) / reps)
    ratios = [a / b for a, b in zip(times["cygrad"], times["torch"], strict=True)]
    k = 1e6 if unit == "us" else 1e3
    print(f"{name:{width}s} {np.median(times['cygrad']) * k:8.2f}{unit} "
          f"{np.median(times['torch']) * k:8.2f}{unit} {np.median(ratios):6.2f}x")


def interleaved(names, make, rounds=9):
    """A table of ``round_robin`` rows, one per case of ``names``, with the
    steps ``make(lib, name)`` (process time, microseconds)."""
    print(f"{'case':24s} {'cygrad':>10s} {'torch':>10s} {'ratio':>7s}")
    for name in names:
        round_robin(name, {lib: make(lib, name) for lib in SIDES}, rounds)
