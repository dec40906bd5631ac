"""Entry of each rank started by ``cygrad.distributed.run`` (not for users).

``python -m cygrad.distributed._rank RUN_DIR [-m] script args...``: sets the
torchrun environment variables from MPI's, notes this rank's pid in RUN_DIR
(so the launcher can name a rank that dies), then runs the script as
``__main__``.  An uncaught exception or a non-zero ``sys.exit`` prints as usual
and then aborts the whole MPI job: otherwise the other ranks would wait for
this one forever.
"""

import atexit
import os
import runpy
import socket
import sys
import traceback

try:  # POSIX only; elsewhere the watch file stays where open() put it
    import fcntl
    import resource
except ImportError:
    fcntl = resource = None

_ENV = (("RANK", ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")),
        ("WORLD_SIZE", ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE")),
        ("LOCAL_RANK", ("MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK")),
        ("LOCAL_WORLD_SIZE", ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE")))


def _set_env():
    for name, sources in _ENV:
        for src in sources:
            if os.environ.get(src, "") != "":
                os.environ[name] = os.environ[src]
                break
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    os.environ.setdefault("LOCAL_RANK", os.environ["RANK"])
    os.environ.setdefault("LOCAL_WORLD_SIZE", os.environ["WORLD_SIZE"])
    os.environ.setdefault("GROUP_RANK", "0")
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")


class _PrefixedLines:
    """A text stream that writes each complete line as one ``[rankR]: line``
    write to the file descriptor, so that ranks' lines never interleave."""

    def __init__(self, stream, prefix):
        self._stream = stream
        self._fd = stream.fileno()
        self._prefix = prefix
        self._pending = ""

    def write(self, text):
        self._pending += text
        if "\n" in self._pending:
            *lines, self._pending = self._pending.split("\n")
            self._emit("".join(f"{self._prefix}{line}\n" for line in lines))
        if len(self._pending) > 65536:
            self.close_line()
        return len(text)

    def _emit(self, text):
        data = text.encode(self._stream.encoding or "utf-8", "replace")
        while data:
            data = data[os.write(self._fd, data):]

    def close_line(self):
        if self._pending:
            pending, self._pending = self._pending, ""
            self._emit(f"{self._prefix}{pending}\n")

    def flush(self):
        self._stream.flush()

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _prefix_output(rank):
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        sys.stdout.flush()
        try:
            wrapped = _PrefixedLines(stream, f"[rank{rank}]: ")
        except (AttributeError, OSError, ValueError):
            continue
        setattr(sys, name, wrapped)
        atexit.register(wrapped.close_line)


def _open_watch():
    """Keep ``alive/RANK`` open for writing until this process ends; the
    kernel's close of it tells the launcher when this rank died (run._Watch).
    Local ranks only: a rank on another machine does not see the folder.

    The file is moved to a high descriptor number.  When a process dies,
    Linux queues the release of its files in descriptor order and runs the
    queue last in, first out, yielding the CPU between releases: the
    sockets MPI opens later (higher numbers than a file opened now) used to
    be released first, so on a loaded machine the peers could see the lost
    rank's sockets close, abort, and have their own ``alive`` files closed
    before this rank's: the launcher then named the wrong rank.  Above every
    socket, this file is released first."""
    path = os.environ.get("CYGRAD_RUN_WATCH")
    if not path or not os.path.isdir(path):
        return None
    try:
        f = open(os.path.join(path, os.environ["RANK"]), "w")
    except OSError:
        return None
    if fcntl is None:
        return f
    try:
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        top = 4096 if soft == resource.RLIM_INFINITY else min(soft, 4096)
        fd = fcntl.fcntl(f.fileno(), fcntl.F_DUPFD_CLOEXEC, max(top - 64, 3))
    except (OSError, ValueError):
        return f
    f.close()
    return os.fdopen(fd, "w")


def _say_done(watch):
    if watch is not None:
        try:
            watch.write("done\n")
            watch.flush()
        except OSError:
            pass


def _abort(code, run_dir, why):
    try:
        with open(os.path.join(run_dir, f"failed.{os.environ['RANK']}"), "w") as f:
            f.write(why)
    except OSError:
        pass
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
        if isinstance(stream, _PrefixedLines):
            stream.close_line()
    # a rank that never initialised MPI is still known to mpiexec, which
    # ends the job only once an initialised rank aborts
    from mpi4py import MPI
    MPI.COMM_WORLD.Abort(code)


def main(argv):
    run_dir, argv = argv[0], argv[1:]
    module = argv[:1] == ["-m"]
    if module:
        argv = argv[1:]
    if not argv:
        raise SystemExit("cygrad.distributed._rank: no script given")
    _set_env()
    if os.environ.get("CYGRAD_RUN_PREFIX", "1") != "0":
        _prefix_output(os.environ["RANK"])
    with open(os.path.join(run_dir, f"pid.{os.environ['RANK']}"), "w") as f:
        f.write(f"{socket.gethostname()} {os.getpid()}")

    watch = _open_watch()

    def hook(exc_type, exc, tb):
        text = "".join(traceback.format_exception(exc_type, exc, tb))
        sys.stderr.write(text)
        # mpiexec may end the job before it forwarded the lines above: the
        # launcher prints this copy if they did not come through
        try:
            with open(os.path.join(run_dir, f"traceback.{os.environ['RANK']}"),
                      "w") as f:
                f.write(text)
        except OSError:
            pass
        _abort(1, run_dir, f"raised {exc_type.__name__} (traceback above)")

    sys.excepthook = hook
    sys.argv = list(argv)
    try:
        if module:
            runpy.run_module(argv[0], run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as exc:
        code = exc.code
        if code is None or code == 0:
            _say_done(watch)
            raise
        if not isinstance(code, int):
            print(code, file=sys.stderr)
            code = 1
        _abort(code, run_dir, f"called sys.exit({exc.code!r})")
    except BaseException:  # noqa: BLE001  (every failure must end the job)
        hook(*sys.exc_info())
    else:
        _say_done(watch)


if __name__ == "__main__":
    main(sys.argv[1:])
