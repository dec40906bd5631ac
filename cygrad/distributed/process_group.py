"""Process groups on MPI: the default group, ``new_group``, ranks and sizes.

``mpi4py`` is imported only by ``init_process_group`` (importing ``mpi4py.MPI``
initialises MPI), so ``import cygrad.distributed`` works without it.  A group
holds an MPI communicator of its own (a duplicate), so its messages never meet
those of another group or of a user's own ``mpi4py`` code.
"""

from __future__ import annotations

import enum
import os
import sys
import time
import traceback
from typing import TYPE_CHECKING, Any

from cygrad._device import device as _device

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "Backend", "GroupMember", "ProcessGroup", "ReduceOp", "destroy_process_group",
    "get_backend", "get_rank", "get_world_size", "group", "init_process_group",
    "is_available", "is_initialized", "is_mpi_available", "is_torchelastic_launched",
    "new_group",
]

INSTALL_HINT = (
    'cygrad.distributed needs mpi4py and an MPI library: pip install -e '
    '".[distributed]" (from a cygrad checkout) or pip install mpi4py mpich')


def _mpi():
    """The ``mpi4py.MPI`` module, imported (and MPI initialised) on first use."""
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc
    return MPI


def is_available() -> bool:
    """True when the MPI backend can be used (``mpi4py`` is installed)."""
    try:
        import mpi4py  # noqa: F401  (the package only: MPI starts with mpi4py.MPI)
    except ImportError:
        return False
    return True


is_mpi_available = is_available


def is_torchelastic_launched() -> bool:
    """False: cygrad's ranks are started by MPI, not by torchelastic."""
    return False


class ReduceOp(enum.Enum):
    """Reduction of ``all_reduce``, ``reduce`` and ``reduce_scatter``."""
    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"

    def __repr__(self):
        return f"<ReduceOp.{self.name}>"


class Backend(str):
    """Backend names; cygrad has one, ``"mpi"`` (``"gloo"`` is accepted as an
    alias so that CPU scripts written for torch run unchanged)."""
    UNDEFINED = "undefined"
    MPI = "mpi"
    GLOO = "gloo"
    NCCL = "nccl"
    # torch's table; a script passes what it finds here to
    # init_process_group, which takes "gloo" as MPI
    default_device_backend_map = {"cpu": "gloo", "cuda": "nccl", "xpu": "xccl",
                                  "mps": "gloo"}

    def __new__(cls, name):
        if not isinstance(name, str):
            raise TypeError(f"Backend name must be a string, but got: {name}")
        value = name.lower()
        if value in ("cpu:gloo", "cpu:mpi"):
            value = value[4:]
        if value not in ("mpi", "gloo"):
            raise ValueError(
                f"Invalid backend: '{name}'. cygrad.distributed runs on MPI: use "
                "backend='mpi' (or 'gloo', an alias of it)")
        return super().__new__(cls, value)


class ProcessGroup:
    """A set of ranks with its own MPI communicator.

    ``ranks`` are global ranks (in the default group), in group-rank order.
    ``comm`` is None on a process that is not a member.
    """

    def __init__(self, comm, ranks, backend="mpi"):
        self.comm = comm
        self.ranks = tuple(ranks)
        self._global_to_group = {g: i for i, g in enumerate(self.ranks)}
        self._backend = backend

    def rank(self):
        return self.comm.Get_rank() if self.comm is not None else -1

    def size(self):
        return len(self.ranks)

    def group_rank(self, global_rank, what="rank"):
        """Translate a global rank (as torch's src/dst arguments are) to ours."""
        if not isinstance(global_rank, int) or isinstance(global_rank, bool):
            raise TypeError(f"{what} must be an int, got {type(global_rank).__name__}")
        try:
            return self._global_to_group[global_rank]
        except KeyError:
            raise ValueError(
                f"Invalid {what}: global rank {global_rank} is not part of the group "
                f"(ranks {list(self.ranks)})") from None

    def __repr__(self):
        return f"ProcessGroup(backend={self._backend!r}, ranks={list(self.ranks)})"


class GroupMember:
    """``GroupMember.WORLD`` is the default group once initialised."""
    WORLD = None
    NON_GROUP_MEMBER = object()


class _WorldAccessor:
    @property
    def WORLD(self):
        return GroupMember.WORLD


group = _WorldAccessor()

_state = {"default": None, "groups": [], "hook": None}


def is_initialized() -> bool:
    """True once ``init_process_group`` ran (and ``destroy_process_group`` did not)."""
    return _state["default"] is not None


def _default_group():
    pg = _state["default"]
    if pg is None:
        raise ValueError(
            "Default process group has not been initialized, please make sure to "
            "call init_process_group.")
    return pg


def _resolve(group):
    """The ProcessGroup for a ``group=`` argument (None: the default one)."""
    if group is None or group is GroupMember.WORLD:
        return _default_group()
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup, got {type(group).__name__}")
    _default_group()
    if group not in _state["groups"]:
        raise ValueError("Invalid process group specified (it was destroyed)")
    return group


def _env_int(name):
    value = os.environ.get(name)
    if value in (None, ""):
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"Error initializing process group: environment variable "
                         f"{name} is expected to be an int, got {value!r}") from None


def _abort_on_uncaught(exc_type, exc, tb):
    """sys.excepthook of a rank: print the traceback, then end the whole job
    (an MPI job whose rank died with an exception would wait forever)."""
    try:
        traceback.print_exception(exc_type, exc, tb)
        sys.stderr.flush()
        sys.stdout.flush()
    finally:
        MPI = _mpi()
        if MPI.Is_initialized() and not MPI.Is_finalized():
            # give mpiexec a moment to forward the traceback: Abort ends
            # every process of the job, the output forwarders included
            time.sleep(0.3)
            MPI.COMM_WORLD.Abort(1)


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: Any = None, world_size: int = -1, rank: int = -1,
                       store: Any = None, group_name: str = "", pg_options: Any = None,
                       device_id: Any = None) -> None:
    """Join the job's processes (the ranks started by ``mpiexec`` or
    ``python -m cygrad.distributed.run``) into the default group.

    Parameters
    ----------
    backend : str, optional
        ``"mpi"`` (default) or ``"gloo"``, accepted as an alias.
    world_size, rank : int, optional
        When given (or set in the environment as ``WORLD_SIZE``/``RANK``), they
        are checked against MPI's; ranks and sizes always come from MPI.
    init_method, timeout, store, group_name, pg_options, device_id
        Accepted for torch compatibility; MPI finds its peers itself and has no
        collective timeout.
    """
    if _state["default"] is not None:
        raise ValueError("trying to initialize the default process group twice!")
    backend = Backend(backend if backend is not None else "mpi")
    MPI = _mpi()
    if not MPI.Is_initialized():     # pragma: no cover (mpi4py initialises on import)
        MPI.Init_thread()
    world = MPI.COMM_WORLD
    size, me = world.Get_size(), world.Get_rank()
    for what, given, env, actual in (("world_size", world_size, "WORLD_SIZE", size),
                                     ("rank", rank, "RANK", me)):
        if given is None or given < 0:
            given = _env_int(env)
        if given is not None and given != actual:
            raise RuntimeError(
                f"init_process_group: {what}={given} but MPI started this process "
                f"as rank {me} of {size}. Launch the ranks with "
                f"`python -m cygrad.distributed.run -n N script.py` or "
                f"`mpiexec -n N python script.py`")
    pg = ProcessGroup(world.Dup(), range(size), backend)
    _state["default"] = pg
    _state["groups"] = [pg]
    GroupMember.WORLD = pg
    if size > 1 and sys.excepthook is sys.__excepthook__:
        _state["hook"] = sys.excepthook
        sys.excepthook = _abort_on_uncaught


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Free a group's communicator; without ``group``, every group and the
    default one (``init_process_group`` may then be called again)."""
    if group is None or group is GroupMember.WORLD:
        _default_group()
        for pg in _state["groups"]:
            if pg.comm is not None:
                pg.comm.Free()
                pg.comm = None
        _state["groups"] = []
        _state["default"] = None
        GroupMember.WORLD = None
        if _state["hook"] is not None and sys.excepthook is _abort_on_uncaught:
            sys.excepthook = _state["hook"]
        _state["hook"] = None
        return
    pg = _resolve(group)
    if pg.comm is not None:
        pg.comm.Free()
        pg.comm = None
    _state["groups"].remove(pg)


def new_group(ranks: Sequence[int] | None = None, timeout: Any = None,
              backend: str | None = None, pg_options: Any = None,
              use_local_synchronization: bool = False,
              group_desc: str | None = None) -> ProcessGroup:
    """A group of the given global ranks (all ranks when None).

    Every rank of the default group must call it, members or not (as in
    torch); a non-member gets a group on which ``get_rank`` is -1.
    """
    world = _default_group()
    n = world.size()
    if ranks is None:
        ranks = list(range(n))
    ranks = [int(r) for r in ranks]
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"new_group: ranks {ranks} contain duplicates")
    for r in ranks:
        if not 0 <= r < n:
            raise ValueError(
                f"new_group: rank {r} is not in the default group of size {n}")
    MPI = _mpi()
    sub = world.comm.group.Incl(sorted(ranks))
    comm = world.comm.Create(sub)
    sub.Free()
    pg = ProcessGroup(None if comm == MPI.COMM_NULL else comm, sorted(ranks),
                      world._backend)
    _state["groups"].append(pg)
    return pg


def get_rank(group: ProcessGroup | None = None) -> int:
    """This process's rank in ``group`` (-1 if it is not a member)."""
    return _resolve(group).rank()


def get_world_size(group: ProcessGroup | None = None) -> int:
    """Number of ranks in ``group`` (-1 if this process is not a member)."""
    pg = _resolve(group)
    return pg.size() if pg.comm is not None else -1


def get_default_backend_for_device(device: Any) -> str:
    """torch's default backend name for a device (``"gloo"`` for the CPU,
    which ``init_process_group`` runs on MPI); ValueError for a device type
    torch has none for."""
    kind = device.type if isinstance(device, _device) else _device(device).type
    backend = Backend.default_device_backend_map.get(kind)
    if backend is None:
        raise ValueError(f"Default backend not registered for device : {device}")
    return backend


def get_backend(group: ProcessGroup | None = None) -> str:
    """The group's backend name, ``"mpi"`` (or ``"gloo"`` if asked for so)."""
    return _resolve(group)._backend


def get_process_group_ranks(group: ProcessGroup) -> list[int]:
    """Global ranks of ``group``'s members, in group-rank order."""
    return list(_resolve(group).ranks)


def get_global_rank(group: ProcessGroup, group_rank: int) -> int:
    """The global rank of ``group_rank`` in ``group``."""
    pg = _resolve(group)
    if not 0 <= group_rank < pg.size():
        raise ValueError(f"Group rank {group_rank} is not part of group {pg}")
    return pg.ranks[group_rank]
