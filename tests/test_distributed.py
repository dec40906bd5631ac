"""cygrad.distributed: collectives on 1, 2 and 3 ranks against NumPy, the
launcher, multiprocessing.spawn, faults (a raising, a killed, an exiting rank)
and the import without mpi4py.  Ranks run as subprocesses under mpiexec
(tests/dist_scripts/harness.py: timeout, no process left behind)."""

import os
import subprocess
import sys
import time

import pytest
from dist_scripts import harness

import cygrad.distributed as dist


def test_import_works_without_mpi4py_and_init_says_how_to_install():
    code = (
        "import sys; sys.modules['mpi4py'] = None\n"
        "import cygrad, cygrad.distributed as d, cygrad.nn.parallel\n"
        "import cygrad.multiprocessing\n"
        "assert d.is_available() is False\n"
        "try:\n"
        "    d.init_process_group('mpi')\n"
        "except ImportError as e:\n"
        "    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=harness.child_env(), timeout=60,
                         check=False)
    assert out.returncode == 0, out.stderr
    assert 'pip install -e ".[distributed]"' in out.stdout


def test_import_cygrad_does_not_start_mpi():
    code = ("import sys, cygrad, cygrad.distributed, cygrad.nn.parallel\n"
            "assert 'mpi4py.MPI' not in sys.modules, 'MPI was initialised'\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=harness.child_env(), timeout=60,
                         check=False)
    assert out.returncode == 0, out.stderr


def test_calls_before_init_raise_torchs_error():
    assert not dist.is_initialized()
    for fn in (dist.get_rank, dist.get_world_size, dist.get_backend, dist.barrier):
        with pytest.raises(ValueError, match="Default process group has not been "
                           "initialized"):
            fn()


def test_backend_names():
    assert dist.Backend("MPI") == "mpi" and dist.Backend("gloo") == "gloo"
    with pytest.raises(ValueError, match="Invalid backend: 'nccl'"):
        dist.Backend("nccl")
    assert {op.name for op in dist.ReduceOp} >= {"SUM", "AVG", "MIN", "MAX",
                                                 "PRODUCT"}


def test_collectives_on_a_single_process_without_mpiexec():
    harness.require_mpi()
    res = harness.run([sys.executable, os.path.join(harness.SCRIPTS,
                                                    "collectives.py")])
    harness.check_ok(res, 1)


@pytest.mark.parametrize("n", [2, 3])
def test_collectives_against_numpy(n):
    res = harness.run_ranks(n, "collectives.py")
    harness.check_ok(res, n)


def test_launcher_forwards_arguments_and_environment_and_prefixes_ranks():
    res = harness.run_launcher(2, "env_check.py", "a", "--b", "c d",
                               env={"CYGRAD_FORWARDED": "yes"})
    harness.check_ok(res, 2)
    for r in (0, 1):
        assert f"[rank{r}]: args ['a', '--b', 'c d']" in res.stdout
        assert f"[rank{r}]: rank {r} ok" in res.stdout.splitlines()


def test_launcher_runs_collectives_on_three_ranks():
    res = harness.run_launcher(3, "collectives.py")
    harness.check_ok(res, 3)


def test_spawn_runs_fn_on_every_rank_and_returns_to_the_caller():
    harness.require_mpi()
    res = harness.run([sys.executable, os.path.join(harness.SCRIPTS,
                                                    "spawn_script.py"), "3", "hi"])
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    # code under __main__ runs once (in the caller), fn once per rank
    assert lines.count("main starts") == 1 and lines[-1] == "main done"
    for r in range(3):
        assert f"[rank{r}]: rank {r} ok hi sum=6.0" in lines


def test_spawn_raises_in_the_caller_when_a_rank_fails():
    harness.require_mpi()
    res = harness.run([sys.executable, os.path.join(harness.SCRIPTS,
                                                    "spawn_script.py"), "2", "fail"])
    assert res.returncode == 2, res.stdout + res.stderr
    assert "main caught ProcessRaisedException" in res.stdout
    assert "RuntimeError: worker 1 failed on purpose" in res.stderr


def test_a_raising_rank_ends_the_job_with_its_traceback():
    res = harness.run_ranks(2, "fault.py", "raise", timeout=60)
    assert res.returncode != 0
    assert res.seconds < 30
    assert "Traceback (most recent call last)" in res.stderr
    assert "ValueError: boom from rank 1" in res.stderr
    assert "was not ended" not in res.stdout


@pytest.mark.parametrize("mode, says", [
    ("raise", "rank 1 raised ValueError"),
    ("exit", "rank 1 called sys.exit(3)"),
    ("kill", "rank 1 (pid "),
])
def test_launcher_ends_the_job_and_names_the_failed_rank(mode, says):
    res = harness.run_launcher(3, "fault.py", mode, timeout=60)
    assert res.returncode != 0
    assert res.seconds < 30
    assert says in res.stderr, res.stderr
    assert "was not ended" not in res.stdout
    if mode == "kill":
        assert "was lost (Killed (signal 9))" in res.stderr
    if mode == "raise":
        assert "[rank1]: ValueError: boom from rank 1" in res.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")
def test_the_watch_names_the_first_rank_to_die_not_the_first_one_read(tmp_path):
    """Ranks 2, 0 and 1 end in that order (0 after writing ``done``) while the
    launcher reads nothing; read afterwards, all three closes are waiting, and
    the watch still names rank 2, whose file closed first without ``done``."""
    from cygrad.distributed import run
    watch = run._Watch(str(tmp_path))
    code = ("import os, signal, sys\n"
            "f = open(os.path.join(sys.argv[1], sys.argv[2]), 'w')\n"
            "if sys.argv[3] == 'done':\n"
            "    f.write('done\\n'); f.flush()\n"
            "os.kill(os.getpid(), signal.SIGKILL)\n")
    try:
        for rank, how in (("2", "killed"), ("0", "done"), ("1", "killed")):
            subprocess.run([sys.executable, "-c", code, watch.path, rank, how],
                           timeout=60, check=False)
        assert watch.first_lost() == 2
    finally:
        watch.close()


def test_a_killed_rank_ends_a_plain_mpiexec_job():
    res = harness.run_ranks(2, "fault.py", "kill", timeout=60)
    assert res.returncode != 0 and res.seconds < 30
    assert "was not ended" not in res.stdout


def test_the_harness_notices_left_over_processes():
    """The leak check of every job above is real: a detached sleeper is found."""
    import uuid
    tag = uuid.uuid4().hex
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
                            env=dict(os.environ, CYGRAD_TEST_TAG=tag),
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while proc.pid not in harness.tagged_pids(tag) and time.monotonic() < deadline:
            time.sleep(0.05)        # its environment appears once it has exec'd
        assert proc.pid in harness.tagged_pids(tag)
    finally:
        proc.kill()
        proc.wait()
    assert harness.tagged_pids(tag) == []


def test_ddp_argument_errors_before_any_communication():
    from cygrad import nn
    from cygrad.nn.parallel import DistributedDataParallel as DDP
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        DDP(nn.Linear(2, 2), bogus=1)
    with pytest.raises(TypeError, match="expects a Module, got object"):
        DDP(object())
    with pytest.raises(ValueError, match="bucket_cap_mb must be positive"):
        DDP(nn.Linear(2, 2), bucket_cap_mb=0)
    with pytest.raises(ValueError, match="Default process group has not been "
                       "initialized"):
        DDP(nn.Linear(2, 2))


def test_launcher_runs_a_module_with_dash_m():
    harness.require_mpi()
    res = harness.run([sys.executable, "-m", "cygrad.distributed.run", "-n", "2",
                       "-m", "tests.dist_scripts.env_check", "z"],
                      env={"CYGRAD_FORWARDED": "yes"})
    harness.check_ok(res, 2)
    assert "[rank1]: args ['z']" in res.stdout


@pytest.mark.parametrize("flavour, want", [
    ("hydra", ["-f", "hosts.txt", "-hosts", "a,b"]),
    ("openmpi", ["--hostfile", "hosts.txt", "--host", "a,b"]),
])
def test_launcher_passes_host_files_to_mpiexec(flavour, want):
    from cygrad.distributed import run
    opts = run._parser().parse_args(["-n", "16", "--hostfile", "hosts.txt",
                                     "--hosts", "a,b", "train.py", "--lr", "3"])
    cmd = run.mpiexec_command(opts, "/tmp/x", flavour, mpiexec="/opt/mpiexec")
    assert cmd[:3] == ["/opt/mpiexec", "-n", "16"]
    for flag, value in zip(want[::2], want[1::2]):
        assert cmd[cmd.index(flag) + 1] == value
    assert cmd[-3:] == ["train.py", "--lr", "3"]
    assert cmd[cmd.index("cygrad.distributed._rank") + 1] == "/tmp/x"
