"""pytest configuration of the benchmark suite.

Thread policy
    NumPy's BLAS (through threadpoolctl), torch (``torch.set_num_threads``) and
    cygrad (``cygrad.set_num_threads`` when it exists) all get the same number
    of threads: 1 by default, ``CYGRAD_BENCH_THREADS=n`` to change it.  The
    limits are applied once, at configure time, after importing the libraries
    so that the OpenMP and BLAS runtimes they load are covered.  Environment
    variables of the BLAS itself (``OPENBLAS_CORETYPE``, ...) are left as the
    machine has them and are recorded in the JSON.

Fast mode
    With ``--benchmark-disable`` (or ``CYGRAD_BENCH_FAST=1``, or without
    pytest-benchmark) every case runs once on tiny sizes, so CI only checks
    that the benchmarks still run and agree.

Recorded in the JSON
    ``machine_info["cygrad_bench"]``: thread counts, ``threadpool_info()``,
    library versions and BLAS environment; each benchmark's ``extra_info``
    gets ``threads``.
"""

import os
import platform
import subprocess
import sys

import numpy as np
import pytest

import benchmarks

try:
    import pytest_benchmark  # noqa: F401

    HAVE_PYTEST_BENCHMARK = True
except ImportError:
    HAVE_PYTEST_BENCHMARK = False

_INFO = {}
_LIMITS = []  # keeps the threadpoolctl limiter alive for the session
BLAS_ENV = (
    "OPENBLAS_CORETYPE",
    "OPENBLAS_NUM_THREADS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "CYGRAD_BENCH_THREADS",
)


def _disabled(config):
    if not HAVE_PYTEST_BENCHMARK:
        return True
    return bool(
        config.getoption("benchmark_disable", False)
        and not config.getoption("benchmark_enable", False)
    )


def _apply_threads(n):
    """Give every library ``n`` threads; return what each one reports."""
    info = {"requested": n}
    torch, _ = benchmarks.try_import("torch")
    cygrad, cygrad_error = benchmarks.try_import("cygrad")
    try:
        from threadpoolctl import threadpool_info, threadpool_limits

        _LIMITS.append(threadpool_limits(limits=n))
        info["threadpool_info"] = threadpool_info()
    except ImportError:
        info["threadpool_info"] = "threadpoolctl not installed: BLAS threads not set"
    if torch is not None:
        torch.set_num_threads(n)
        info["torch"] = torch.get_num_threads()
        info["torch_version"] = torch.__version__
    if cygrad is not None:
        if hasattr(cygrad, "set_num_threads"):
            cygrad.set_num_threads(n)
        getter = getattr(cygrad, "get_num_threads", None)
        info["cygrad"] = getter() if getter else "no cygrad.get_num_threads"
        info["cygrad_version"] = getattr(cygrad, "__version__", "unknown")
    else:
        info["cygrad"] = cygrad_error
    return info


def _git_describe():
    """The commit measured: ``CYGRAD_BENCH_COMMIT`` (for a snapshot), else git."""
    if os.environ.get("CYGRAD_BENCH_COMMIT"):
        return os.environ["CYGRAD_BENCH_COMMIT"]
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
            capture_output=True,
            check=False,
            text=True,
            timeout=10,
        )
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _loadavg():
    """1-minute load average (other work on the machine skews timings)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def pytest_configure(config):
    benchmarks.set_fast_mode(benchmarks.fast_mode() or _disabled(config))
    info = _apply_threads(benchmarks.requested_threads())
    info.update(
        fast_mode=benchmarks.fast_mode(),
        numpy_version=np.__version__,
        python=sys.version.split()[0],
        cpu=_cpu_model(),
        logical_cpus=os.cpu_count(),
        env={k: os.environ.get(k) for k in BLAS_ENV},
        commit=_git_describe(),
        argv=["pytest", *config.invocation_params.args],
        loadavg_start=_loadavg(),
        statistic_note="report uses the median of each benchmark's rounds",
    )
    _INFO.update(info)


def pytest_collect_file(file_path, parent):
    """Collect ``bench_*.py`` (STYLE.md's names) when pytest would not."""
    if file_path.suffix != ".py" or not file_path.name.startswith("bench_"):
        return None
    if parent.session.isinitpath(file_path):
        return None  # named on the command line: pytest collects it already
    patterns = parent.config.getini("python_files")
    if any(file_path.match(p) for p in patterns):
        return None
    return pytest.Module.from_parent(parent, path=file_path)


def pytest_report_header(config):
    return (
        f"cygrad bench: threads={_INFO.get('requested')} "
        f"(torch {_INFO.get('torch')}, cygrad {_INFO.get('cygrad')}), "
        f"fast_mode={_INFO.get('fast_mode')}, "
        f"OPENBLAS_CORETYPE={_INFO.get('env', {}).get('OPENBLAS_CORETYPE')}"
    )


def pytest_benchmark_update_machine_info(config, machine_info):
    machine_info["cygrad_bench"] = dict(_INFO, loadavg_end=_loadavg())


def pytest_benchmark_update_json(config, benchmarks, output_json):
    for bench in output_json.get("benchmarks", []):
        bench.setdefault("extra_info", {}).setdefault("threads", _INFO.get("requested"))


if not HAVE_PYTEST_BENCHMARK:

    class _RunOnce:
        """Stand-in for pytest-benchmark's fixture: calls the function once."""

        def __init__(self):
            self.group = None
            self.extra_info = {}

        def __call__(self, fn, *args, **kwargs):
            return fn(*args, **kwargs)

        def pedantic(self, fn, args=(), kwargs=None, setup=None, **_):
            if setup is not None:
                args, kwargs = setup()
            return fn(*args, **(kwargs or {}))

    @pytest.fixture
    def benchmark():
        return _RunOnce()


@pytest.fixture(scope="session")
def fast():
    """True in the fast mode (tiny sizes, one round)."""
    return benchmarks.fast_mode()


@pytest.fixture(scope="session")
def threads():
    """The thread count every library was given."""
    return _INFO["requested"]


@pytest.fixture
def rng():
    """A fresh, seeded NumPy generator: the same inputs for every library."""
    return np.random.default_rng(0)
