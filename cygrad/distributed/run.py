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
import os
import re
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

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
    """Each local rank keeps a connection to this Unix socket open for its
    whole life and says ``done`` before a normal exit.  The kernel closes a
    dead rank's connection at once, before mpiexec reacts and ends the others,
    so the first connection that closes without ``done`` names the lost rank.

    One thread waits on every connection through one selector (epoll on
    Linux), which hands back ready connections in the order they became
    ready: on a loaded machine the thread may wake late, after mpiexec has
    ended the other ranks too, and the order still says who went first
    (threads per connection would race one another instead)."""

    def __init__(self, run_dir):
        self.path = os.path.join(run_dir, "watch.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(256)
        self.lost = []          # ranks whose connection closed without "done", in order
        self._lock = threading.Lock()
        self._stop_r, self._stop_w = socket.socketpair()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        sel = selectors.DefaultSelector()
        sel.register(self.sock, selectors.EVENT_READ, None)
        sel.register(self._stop_r, selectors.EVENT_READ, "stop")
        heard = {}              # connection -> bytes received so far
        while True:
            for key, _ in sel.select():
                if key.data == "stop":
                    sel.close()
                    return
                if key.data is None:
                    try:
                        conn, _ = self.sock.accept()
                    except OSError:
                        continue
                    heard[conn] = b""
                    sel.register(conn, selectors.EVENT_READ, "rank")
                    continue
                conn = key.fileobj
                try:
                    chunk = conn.recv(64)
                except OSError:
                    chunk = b""
                if chunk:
                    heard[conn] += chunk
                    continue
                sel.unregister(conn)
                conn.close()
                words = heard.pop(conn).decode(errors="replace").split()
                if words and "done" not in words[1:]:
                    with self._lock:
                        self.lost.append(int(words[0]))

    def first_lost(self):
        with self._lock:
            return self.lost[0] if self.lost else None

    def close(self):
        self._stop_w.send(b"x")
        self._thread.join(timeout=5)
        self.sock.close()
        self._stop_r.close()
        self._stop_w.close()


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
        watch.close()
        seen["lost"] = watch.first_lost()
        if returncode != 0:
            print(_report(run_dir, seen, returncode), file=sys.stderr, flush=True)
    return returncode


if __name__ == "__main__":
    sys.exit(main())
