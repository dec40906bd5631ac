"""``spawn(fn, args, nprocs)``: run ``fn(rank, *args)`` on ``nprocs`` MPI ranks.

Called in a plain process, it starts the ranks with ``python -m
cygrad.distributed.run -n nprocs`` and waits; each rank imports the calling
script as ``__mp_main__`` (so code under ``if __name__ == "__main__":`` does
not run again, as with torch's spawn start method), unpickles ``fn`` and
``args`` and calls ``fn(rank, *args)``.  Called inside an MPI job that already
has ``nprocs`` ranks (``mpiexec -n N python script.py``), it calls
``fn(rank, *args)`` on each rank directly.  Either way a
``init_process_group(..., rank=rank, world_size=nprocs)`` inside ``fn`` joins
the ranks, so torch DDP scripts run unchanged.
"""

import os
import pickle
import subprocess
import sys
import tempfile

__all__ = ["ProcessContext", "ProcessException", "ProcessExitedException",
           "ProcessRaisedException", "spawn", "start_processes"]


class ProcessException(Exception):
    def __init__(self, msg, error_index=-1, pid=None):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.pid = pid


class ProcessRaisedException(ProcessException):
    """A rank raised (its traceback was printed with its rank prefix)."""


class ProcessExitedException(ProcessException):
    """A rank exited with a non-zero code or was killed."""

    def __init__(self, msg, error_index=-1, error_pid=None, exit_code=None,
                 signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name


def _job_size():
    for name in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE"):
        if os.environ.get(name):
            return int(os.environ[name])
    return None


def _job_rank():
    for name in ("PMI_RANK", "OMPI_COMM_WORLD_RANK"):
        if os.environ.get(name):
            return int(os.environ[name])
    return 0


class ProcessContext:
    """The running ranks of a ``spawn(..., join=False)``; ``join()`` waits."""

    def __init__(self, proc, payload_dir):
        self._proc = proc
        self._dir = payload_dir

    def pids(self):
        return [self._proc.pid]

    def join(self, timeout=None):
        """True once the ranks ended (raises if one failed), False on timeout."""
        try:
            code = self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        self._dir.cleanup()
        if code != 0:
            cls = ProcessRaisedException if code == 1 else ProcessExitedException
            raise cls(f"a spawned process failed with exit code {code}: see the "
                      f"rank-prefixed output above")
        return True


def _main_path():
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if path is None:
        raise RuntimeError(
            "spawn needs the function to live in a script file (run with python "
            "script.py); an interactive session cannot be re-imported by the ranks")
    return os.path.abspath(path)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False,
                    start_method="spawn"):
    """Start ``nprocs`` ranks calling ``fn(rank, *args)``; see the module doc."""
    if not isinstance(nprocs, int) or nprocs < 1:
        raise ValueError(f"nprocs must be a positive int, got {nprocs!r}")
    if os.environ.get("CYGRAD_SPAWN_CHILD") == "1" or _job_size() == nprocs:
        # already one of the ranks: run the function here
        fn(_job_rank(), *args)
        return None
    if _job_size() not in (None, 1):
        raise RuntimeError(
            f"spawn(nprocs={nprocs}) inside an MPI job of {_job_size()} ranks: start "
            f"the job with {nprocs} ranks or call spawn from a plain process")
    try:
        payload = pickle.dumps((fn, tuple(args)))
    except Exception as exc:
        raise TypeError(
            f"spawn: fn and args must be picklable (fn a function defined at the top "
            f"of a module): {exc}") from exc
    tmp = tempfile.TemporaryDirectory(prefix="cygrad-spawn-")
    path = os.path.join(tmp.name, "payload.pkl")
    with open(path, "wb") as f:
        f.write(payload)
    cmd = [sys.executable, "-m", "cygrad.distributed.run", "-n", str(nprocs), "-m",
           "cygrad.multiprocessing._entry", path, _main_path()]
    env = dict(os.environ, CYGRAD_SPAWN_CHILD="1")
    ctx = ProcessContext(subprocess.Popen(cmd, env=env), tmp)
    if not join:
        return ctx
    while not ctx.join():
        pass
    return None


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Run ``fn(i, *args)`` for i in 0..nprocs-1 on MPI ranks, as
    ``torch.multiprocessing.spawn``.

    Parameters
    ----------
    fn : a function defined at the top of a module (it is pickled by name)
    args : tuple of picklable arguments
    nprocs : number of ranks
    join : wait for the ranks (else return a ``ProcessContext``)

    Raises ``ProcessRaisedException``/``ProcessExitedException`` when a rank
    failed (its traceback is printed with its rank).
    """
    return start_processes(fn, args, nprocs, join, daemon, start_method)
