"""``cygrad.multiprocessing``: Python's multiprocessing plus ``spawn``, which
starts N ranks of a distributed script as ``torch.multiprocessing.spawn``
does, here through MPI (see ``cygrad.multiprocessing.spawn``)."""

from multiprocessing import (  # noqa: F401
    Array,
    Barrier,
    Condition,
    Event,
    Lock,
    Manager,
    Pipe,
    Pool,
    Process,
    Queue,
    RLock,
    Semaphore,
    SimpleQueue,
    Value,
    active_children,
    cpu_count,
    current_process,
    get_all_start_methods,
    get_context,
    get_start_method,
    parent_process,
    set_start_method,
)

from cygrad.multiprocessing.spawn import (  # noqa: F401
    ProcessContext,
    ProcessException,
    ProcessExitedException,
    ProcessRaisedException,
    spawn,
    start_processes,
)


def get_sharing_strategy():
    """Tensors are not shared through multiprocessing queues here: "file_system"
    is reported for scripts that ask."""
    return "file_system"


def set_sharing_strategy(new_strategy):
    """Accepted for torch compatibility; tensors pickle by value."""
    if new_strategy not in ("file_system", "file_descriptor"):
        raise ValueError(f"invalid sharing strategy {new_strategy!r}")


def get_all_sharing_strategies():
    return {"file_system", "file_descriptor"}
