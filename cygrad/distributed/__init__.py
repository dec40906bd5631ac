"""``cygrad.distributed``: ``torch.distributed``'s API on MPI (through mpi4py).

``import cygrad.distributed`` always works; ``is_available()`` says whether
mpi4py is installed, and ``init_process_group`` raises an ImportError that says
how to install it when it is not.  Start the ranks with
``python -m cygrad.distributed.run -n N script.py`` or ``mpiexec -n N python
script.py``; see docs/distributed.md.
"""

from cygrad.distributed.collectives import (  # noqa: F401
    Work,
    all_gather,
    all_gather_into_tensor,
    all_gather_object,
    all_reduce,
    all_to_all_single,
    barrier,
    broadcast,
    broadcast_object_list,
    gather,
    gather_object,
    irecv,
    isend,
    recv,
    reduce,
    reduce_scatter,
    reduce_scatter_tensor,
    scatter,
    scatter_object_list,
    send,
)
from cygrad.distributed.process_group import (  # noqa: F401
    Backend,
    GroupMember,
    ProcessGroup,
    ReduceOp,
    destroy_process_group,
    get_backend,
    get_default_backend_for_device,
    get_global_rank,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    is_available,
    is_initialized,
    is_mpi_available,
    is_torchelastic_launched,
    new_group,
)
