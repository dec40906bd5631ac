"""``python -m cygrad.distributed.run -n 4 train.py ARGS``: cygrad's ``torchrun``.

Starts N ranks of ``train.py`` through the installed ``mpiexec`` (MPICH's
hydra from the ``mpich`` wheel, or Open MPI's), each with ``RANK``,
``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``, ``MASTER_ADDR`` and
``MASTER_PORT`` set as torchrun sets them, the caller's environment and
arguments forwarded, and each output line prefixed with its rank (``[rank1]: ...``).  A rank that
raises prints its traceback and ends the whole job; when a rank dies, the
launcher says which one.  Exit status: the job's.

Several machines: ``--hostfile hosts.txt`` (one ``host[:slots]`` a line, as
MPICH reads it) or ``--hosts a,b``; the same Python environment and script
path must exist on each machine (see docs/distributed.md).
"""

import argparse
import ctypes
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading

__all__ = ["find_mpiexec", "main", "mpiexec_command"]


def find_mpiexec():
    """The ``mpiexec`` beside this Python (the mpich wheel's), else on PATH."""
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.exists(here):
        return here
    found = shutil.which("mpiexec")
    if found is None:
        raise RuntimeError(
            'no mpiexec found: pip install -e ".[distributed]" (mpi4py and mpich) '
            "or install an MPI library")
    return found


def _flavour(mpiexec):
    try:
        text = subprocess.run([mpiexec, "--version"], capture_output=True, text=True,
                              timeout=20, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    if "HYDRA" in text:
        return "hydra"
    if "Open MPI" in text or "OpenRTE" in text or "open-mpi" in text:
        return "openmpi"
    return "unknown"


def _parser():
    p = argparse.ArgumentParser(
        prog="python -m cygrad.distributed.run",
        description="Start N ranks of a cygrad.distributed script through mpiexec.")
    p.add_argument("-n", "--nproc-per-node", "--nproc_per_node", "--np", dest="n",
                   type=int, default=1, help="number of ranks (default 1)")
    p.add_argument("--hostfile", "-f", default=None,
                   help="MPI host file: one host[:slots] per line")
    p.add_argument("--hosts", default=None, help="comma-separated host names")
    p.add_argument("--mpiexec", default=None, help="the mpiexec to use")
    p.add_argument("--no-prefix", action="store_true",
                   help="do not prefix output lines with the rank")
    p.add_argument("-m", "--module", action="store_true",
                   help="run the script argument as a module, like python -m")
    p.add_argument("script", help="the training script (or module with -m)")
    p.add_argument("args", nargs=argparse.REMAINDER,
                   help="arguments passed to the script")
    return p


def mpiexec_command(opts, run_dir, flavour="hydra", mpiexec=None):
    """The argv that starts the ranks (exposed for tests and docs)."""
    if opts.n < 1:
        raise SystemExit(f"cygrad.distributed.run: -n must be >= 1, got {opts.n}")
    cmd = [mpiexec or find_mpiexec(), "-n", str(opts.n)]
    if flavour == "hydra":
        if opts.hostfile:
            cmd += ["-f", opts.hostfile]
        if opts.hosts:
            cmd += ["-hosts", opts.hosts]
    else:
        if flavour == "openmpi" and hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        if opts.hostfile:
            cmd += ["--hostfile", opts.hostfile]
        if opts.hosts:
            cmd += ["--host", opts.hosts]
    cmd += [sys.executable, "-m", "cygrad.distributed._rank", run_dir]
    cmd += (["-m"] if opts.module else []) + [opts.script, *opts.args]
    return cmd


_PID_LINE = re.compile(r"PID (\d+) RUNNING AT (\S+)")
_WHY_LINE = re.compile(r"EXIT STRING: (.*\S)")


def _pump(src, dst, seen):
    for line in iter(src.readline, ""):
        dst.write(line)
        dst.flush()
        tail = seen.setdefault("tail", [])
        tail.append(line.rstrip("\n"))
        del tail[:-2000]
        m = _PID_LINE.search(line)
        if m:
            seen.setdefault("pids", []).append(int(m.group(1)))
        m = _WHY_LINE.search(line)
        if m:
            seen.setdefault("why", []).append(m.group(1))
    src.close()


def _rank_of_pids(run_dir, local_only=False):
    """{pid: rank} from the ranks' ``pid.R`` notes ("host pid")."""
    table = {}
    host = socket.gethostname()
    for name in os.listdir(run_dir):
        if name.startswith("pid."):
            try:
                with open(os.path.join(run_dir, name)) as f:
                    where, pid = f.read().split()
            except (OSError, ValueError):
                continue        # being written
            if not local_only or where == host:
                table[int(pid)] = int(name[4:])
    return table


class _Watch:
    """Names the local rank that died first, from the kernel's own record.

    Each local rank opens ``alive/RANK`` in the run directory for writing and
    keeps it open for its whole life, writing ``done`` into it before a normal
    exit.  However a process ends (an exception, ``SIGKILL``, the OOM killer,
    mpiexec ending it), the kernel closes its files, and inotify queues one
    close event per file in the order the closes happened.  The launcher reads
    that queue after the job: the first file closed without ``done`` is the lost
    rank.  The order is the kernel's, not that of whichever thread wakes first
    on a loaded machine (a reader woken late by a busy CPU sees all the closes
    at once, and a selector's batch order is not their order).

    Linux only (inotify); elsewhere ``first_lost`` is ``None`` and the report
    falls back on mpiexec's own lines."""

    _IN_CLOSE_WRITE = 0x8
    _HEADER = struct.Struct("iIII")         # wd, mask, cookie, len of name

    def __init__(self, run_dir):
        self.path = os.path.join(run_dir, "alive")
        os.mkdir(self.path)
        self._fd = -1
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        except (OSError, AttributeError):
            return
        if fd < 0:
            return
        if libc.inotify_add_watch(fd, os.fsencode(self.path), self._IN_CLOSE_WRITE) < 0:
            os.close(fd)
            return
        self._fd = fd

    def _closed_in_order(self):
        data = b""
        while True:
            try:
                chunk = os.read(self._fd, 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            data += chunk
        names, at = [], 0
        while at + self._HEADER.size <= len(data):
            _, _, _, size = self._HEADER.unpack_from(data, at)
            at += self._HEADER.size
            names.append(data[at:at + size].rstrip(b"\0").decode())
            at += size
        return names

    def first_lost(self):
        if self._fd < 0:
            return None
        for name in self._closed_in_order():
            try:
                with open(os.path.join(self.path, name)) as f:
                    said = f.read().split()
            except OSError:
                continue
            if "done" not in said and name.isdigit():
                return int(name)
        return None

    def close(self):
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _replay_traceback(run_dir, rank, seen):
    """Print the failed rank's traceback if mpiexec ended the job before its
    lines came through."""
    path = os.path.join(run_dir, f"traceback.{rank}")
    if not os.path.exists(path):
        return
    with open(path) as f:
        lines = f.read().rstrip("\n").split("\n")
    if not any(line.endswith(lines[-1]) for line in seen.get("tail", [])):
        sys.stderr.write("".join(f"[rank{rank}]: {line}\n" for line in lines))
        sys.stderr.flush()


def _report(run_dir, seen, returncode):
    """Say which rank ended the job: from the ranks' own notes (a raising rank
    writes ``failed.R``), from the first local rank whose watch connection
    closed, or from mpiexec's "PID ... EXIT STRING" report (remote ranks)."""
    failed = sorted(int(n[7:]) for n in os.listdir(run_dir) if n.startswith("failed."))
    if failed:
        with open(os.path.join(run_dir, f"failed.{failed[0]}")) as f:
            why = f.read()
        _replay_traceback(run_dir, failed[0], seen)
        return (f"cygrad.distributed.run: rank {failed[0]} {why}; the job was ended, "
                f"exit code {returncode}")
    how = "; ".join(seen.get("why", [])) or f"exit code {returncode}"
    pids = _rank_of_pids(run_dir)
    by_rank = {rank: pid for pid, rank in pids.items()}
    if seen.get("lost") is not None:
        rank = seen["lost"]
        return (f"cygrad.distributed.run: rank {rank} (pid {by_rank.get(rank)}) was "
                f"lost ({how}); the other ranks were ended")
    for pid in seen.get("pids", []):
        if pid in pids:
            return (f"cygrad.distributed.run: rank {pids[pid]} (pid {pid}) was lost "
                    f"({how}); the other ranks were ended")
    return f"cygrad.distributed.run: the job failed with exit code {returncode}"


def main(argv=None):
    opts = _parser().parse_args(argv)
    mpiexec = opts.mpiexec or find_mpiexec()
    with tempfile.TemporaryDirectory(prefix="cygrad-run-") as run_dir:
        cmd = mpiexec_command(opts, run_dir, _flavour(mpiexec), mpiexec)
        # the ranks inherit the environment and working directory, so they
        # import the same cygrad as this launcher
        env = dict(os.environ)
        watch = _Watch(run_dir)
        env["CYGRAD_RUN_WATCH"] = watch.path
        if opts.no_prefix:
            env["CYGRAD_RUN_PREFIX"] = "0"
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, bufsize=1)
        seen = {}
        pumps = [threading.Thread(target=_pump, args=(proc.stdout, sys.stdout, seen)),
                 threading.Thread(target=_pump, args=(proc.stderr, sys.stderr, seen))]
        for t in pumps:
            t.start()
        try:
            returncode = proc.wait()
        except KeyboardInterrupt:
            proc.terminate()
            returncode = proc.wait()
        for t in pumps:
            t.join()
        seen["lost"] = watch.first_lost()
        watch.close()
        if returncode != 0:
            print(_report(run_dir, seen, returncode), file=sys.stderr, flush=True)
    return returncode


if __name__ == "__main__":
    sys.exit(main())
