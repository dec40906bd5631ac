"""Start a rank script under ``mpiexec`` from pytest: with a timeout, killing
the whole job on expiry, and checking afterwards that no process of the job is
left (each job's processes carry a unique tag in their environment)."""

import glob
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections import namedtuple

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPTS = os.path.join(ROOT, "tests", "dist_scripts")
Result = namedtuple("Result", "returncode stdout stderr seconds")


def mpiexec():
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return here if os.path.exists(here) else shutil.which("mpiexec")


def require_mpi():
    if importlib.util.find_spec("mpi4py") is None:
        pytest.skip('mpi4py is not installed (pip install -e ".[distributed]")')
    if mpiexec() is None:
        pytest.skip("no mpiexec on PATH")


def tagged_pids(tag):
    """Processes whose environment holds ``CYGRAD_TEST_TAG=tag``."""
    needle = f"CYGRAD_TEST_TAG={tag}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    found.append(int(name))
        except OSError:
            continue
    return found


def _kill_tagged(tag):
    for pid in tagged_pids(tag):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def child_env(**extra):
    """os.environ for a child that imports the cygrad these tests test."""
    env = dict(os.environ, **extra)
    if glob.glob(os.path.join(ROOT, "cygrad", "_kernels", "engine*.so")):
        env["PYTHONPATH"] = ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")
    return env


def run(cmd, timeout=60, env=None):
    """Run ``cmd`` (a job of ranks) and return its Result; fail the test if it
    outlives ``timeout`` or leaves a process behind."""
    tag = uuid.uuid4().hex
    full_env = child_env(CYGRAD_TEST_TAG=tag, OMP_NUM_THREADS="1",
                         PYTHONUNBUFFERED="1")
    full_env.update(env or {})
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=full_env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            stdin=subprocess.DEVNULL)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _kill_tagged(tag)
        out, err = proc.communicate()
        pytest.fail(f"job did not end within {timeout} s: {cmd}\n--- stdout\n{out}\n"
                    f"--- stderr\n{err}")
    seconds = time.monotonic() - start
    deadline = time.monotonic() + 10
    while tagged_pids(tag) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = tagged_pids(tag)
    if left:
        _kill_tagged(tag)
        pytest.fail(f"processes {left} of {cmd} were left behind")
    return Result(proc.returncode, out, err, seconds)


def run_ranks(n, script, *args, timeout=60, env=None):
    """``mpiexec -n n python tests/dist_scripts/<script> args``."""
    require_mpi()
    cmd = [mpiexec(), "-n", str(n), sys.executable, os.path.join(SCRIPTS, script),
           *map(str, args)]
    return run(cmd, timeout=timeout, env=env)


def run_launcher(n, script, *args, timeout=60, env=None, launcher_args=()):
    """``python -m cygrad.distributed.run -n n tests/dist_scripts/<script> args``."""
    require_mpi()
    cmd = [sys.executable, "-m", "cygrad.distributed.run", "-n", str(n),
           *launcher_args, os.path.join(SCRIPTS, script), *map(str, args)]
    return run(cmd, timeout=timeout, env=env)


def check_ok(res, n):
    """Every rank printed its ``rank R ok`` line and the job exited 0."""
    assert res.returncode == 0, f"exit {res.returncode}\n{res.stdout}\n{res.stderr}"
    for r in range(n):
        assert f"rank {r} ok" in res.stdout, f"rank {r}:\n{res.stdout}\n{res.stderr}"
