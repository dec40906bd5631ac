"""``DistributedDataParallel``: one replica of a module per rank, gradients
averaged over the ranks during backward.

How a step runs
---------------
* At wrap time every rank sends its parameter and buffer names, shapes and
  dtypes to every other; a mismatch raises the same RuntimeError on every rank.
  Then rank 0's parameters and buffers are broadcast, in place.
* Gradients are grouped into buckets: parameters in reverse order of
  ``module.parameters()`` (roughly the order in which backward produces their
  gradients), one dtype per bucket, the first bucket at most 1 MiB and the
  others at most ``bucket_cap_mb``.  Each bucket owns one contiguous array.
  A parameter of at least 256 KiB has a bucket of its own: unless
  ``gradient_as_bucket_view``, its gradient is reduced in place in its own
  ``.grad`` (divided by the world size first), with no copy in or out.
* A post-accumulate-grad hook on each parameter (called by the engine as soon
  as that gradient is final) copies the gradient into its bucket; when a
  bucket is complete its non-blocking ``MPI_Iallreduce`` starts at once (in
  bucket order, the same on every rank, as MPI requires), while backward goes
  on computing the gradients of earlier layers.
* Each gradient is divided by the world size on its way into the bucket (as
  torch does), so the bucket's sum is the mean.  The last hook waits for every
  bucket and writes the averages back into ``.grad`` (or, with ``gradient_as_bucket_view=True``,
  makes ``.grad`` a view of the bucket: no copy back).  So when ``backward()``
  returns, every rank holds the same averaged gradients, and identical
  optimizer steps keep the replicas bit-identical.
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from cygrad._tensor import Tensor
from cygrad.autograd.grad_mode import is_grad_enabled, no_grad
from cygrad.creation import from_numpy
from cygrad.distributed.collectives import all_gather_object
from cygrad.distributed.process_group import _mpi, _resolve
from cygrad.nn.module import Module

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from cygrad.distributed.process_group import ProcessGroup

__all__ = ["DistributedDataParallel"]

_FIRST_BUCKET_BYTES = 1 << 20
# a gradient at least this large gets a bucket of its own, reduced in place in
# its own ``.grad`` (gradient_as_bucket_view=False): no copy in, no copy out
_DIRECT_BYTES = 1 << 18
# torch keywords that change nothing on CPU here
_ACCEPTED = {"delay_all_reduce_named_params", "param_to_hook_all_reduce",
             "mixed_precision", "device_mesh", "skip_all_reduce_unused_params"}


class _Bucket:
    __slots__ = ("direct", "flat", "index", "offsets", "params", "pending",
                 "request", "target")

    def __init__(self, index, params, dtype, direct=False):
        self.index = index
        self.params = params
        self.offsets = []
        n = 0
        for p in params:
            self.offsets.append(n)
            n += p._arr.size
        self.flat = np.zeros(n, dtype)
        self.pending = len(params)
        self.request = None
        # direct: one parameter, whose .grad can be reduced where it lies;
        # target: the array this step reduces (the bucket's, or that .grad)
        self.direct = direct
        self.target = self.flat

    def slot(self, i):
        p = self.params[i]
        off = self.offsets[i]
        return self.flat[off:off + p._arr.size].reshape(p._arr.shape)


def _tensors_in(obj, out):
    if isinstance(obj, Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _tensors_in(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _tensors_in(o, out)
    return out


def _leaves_reached(outputs):
    """ids of the leaves that backward from ``outputs`` would reach."""
    seen, found = set(), set()
    stack = [t.grad_fn for t in _tensors_in(outputs, []) if t.grad_fn is not None]
    for t in _tensors_in(outputs, []):
        if t.grad_fn is None and t.requires_grad:
            found.add(id(t))
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        var = getattr(node, "variable", None)
        if var is not None:
            found.add(id(var))
            continue
        for child, _ in node.next_functions:
            if child is not None:
                stack.append(child)
    return found


class _Step:
    """Per-step state, a plain object: the hooks update it several times per
    parameter, and Module.__setattr__ is not free."""

    def __init__(self, n_params):
        self.prepared = False
        self.n_ready = 0
        self.next_bucket = 0
        self.ready = np.zeros(n_params, np.int8)  # 0 no grad yet, 1 unused, 2 ready
        self.claimed = set()    # ids of the .grad arrays reduced in place
        self.hidden_bytes = 0   # summed over steps, see _finalize
        self.wait_s = 0.0       # time waited for allreduces after backward
        self.n_syncs = 0


class DistributedDataParallel(Module):
    """Data parallelism across the ranks of a process group, as
    ``torch.nn.parallel.DistributedDataParallel``.

    Parameters
    ----------
    module : Module
        The replica on this rank; reach it as ``ddp.module``.
    broadcast_buffers : bool
        Broadcast rank 0's buffers before every forward (default True).
    process_group : ProcessGroup, optional
        The ranks to average over (default: all).
    bucket_cap_mb : float, optional
        Bucket size in MiB (default 25).
    find_unused_parameters : bool
        Look for parameters that the forward's output does not depend on; they
        count as ready at once, and a parameter unused on every rank keeps its
        ``.grad`` unchanged.
    gradient_as_bucket_view : bool
        Make ``.grad`` views of the buckets (saves a copy per step).

    ``device_ids``, ``output_device``, ``dim``, ``check_reduction`` and
    ``static_graph`` are accepted for compatibility (CPU only).
    """

    def __init__(self, module: Module, device_ids: Sequence[Any] | None = None,
                 output_device: Any = None, dim: int = 0,
                 broadcast_buffers: bool = True,
                 process_group: ProcessGroup | None = None,
                 bucket_cap_mb: float | None = None,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False,
                 init_sync: bool = True, **kwargs: Any) -> None:
        super().__init__()
        unknown = set(kwargs) - _ACCEPTED
        if unknown:
            raise TypeError(f"DistributedDataParallel.__init__() got an unexpected "
                            f"keyword argument '{min(unknown)}'")
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel expects a Module, got "
                            f"{type(module).__name__}")
        if device_ids not in (None, [], ["cpu"]) or output_device not in (None, "cpu"):
            raise ValueError(
                "DistributedDataParallel device_ids and output_device must be None "
                f"for CPU modules (got {device_ids!r}, {output_device!r})")
        cap = 25.0 if bucket_cap_mb is None else float(bucket_cap_mb)
        if cap <= 0:
            raise ValueError(f"bucket_cap_mb must be positive, got {bucket_cap_mb}")
        self.module = module
        self._pg = _resolve(process_group)
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.require_backward_grad_sync = True
        self.bucket_bytes_cap = int(cap * (1 << 20))
        self.dim = dim
        named = []
        ids = set()
        for name, p in module.named_parameters():
            if p.requires_grad and id(p) not in ids:
                ids.add(id(p))
                named.append((name, p))
        if not named:
            raise RuntimeError(
                "DistributedDataParallel is not needed when a module doesn't have "
                "any parameter that requires a gradient.")
        self._named_params = named
        self._check_same_model()
        if init_sync:
            self._sync_module_states()
        self._buckets = self._make_buckets()
        # per parameter: (index, bucket, slot: its view of the bucket's array)
        index = {id(p): k for k, (_, p) in enumerate(named)}
        self._slot_of = {}
        for bucket in self._buckets:
            for i, p in enumerate(bucket.params):
                self._slot_of[id(p)] = (index[id(p)], bucket, bucket.slot(i))
        self._st = _Step(len(named))
        self._handles = [p.register_post_accumulate_grad_hook(self._grad_ready)
                         for _, p in named]

    # --- wrap time ---------------------------------------------------------------

    def _check_same_model(self):
        comm = self._pg.comm
        if comm is None:
            raise RuntimeError("DistributedDataParallel: this rank is not a member "
                               "of the given process group")
        mine = [("parameter", n, tuple(p._arr.shape), str(p._arr.dtype))
                for n, p in self._named_params]
        mine += [("buffer", n, tuple(b._arr.shape), str(b._arr.dtype))
                 for n, b in self.module.named_buffers()]
        everyone = [None] * self._pg.size()
        all_gather_object(everyone, mine, group=self._pg)
        ref = everyone[0]
        for r, theirs in enumerate(everyone[1:], start=1):
            rank = self._pg.ranks[r]
            for k, (a, b) in enumerate(zip(ref, theirs)):
                if a != b:
                    raise RuntimeError(
                        f"DistributedDataParallel expects the same model on every "
                        f"rank, but {b[0]} {k} '{b[1]}' is {b[3]} of shape "
                        f"{list(b[2])} on rank {rank}, while rank "
                        f"{self._pg.ranks[0]} has {a[0]} '{a[1]}', {a[3]} of shape "
                        f"{list(a[2])}")
            if len(ref) != len(theirs):
                raise RuntimeError(
                    f"DistributedDataParallel expects the same model on every rank, "
                    f"but rank {rank} has {len(theirs)} parameters and buffers while "
                    f"rank {self._pg.ranks[0]} has {len(ref)}")

    def _broadcast_arrays(self, tensors):
        comm = self._pg.comm
        for t in tensors:
            arr = t._arr
            if arr.flags.c_contiguous and arr.flags.writeable:
                comm.Bcast(arr, root=0)
            else:
                tmp = np.ascontiguousarray(arr)
                comm.Bcast(tmp, root=0)
                np.copyto(arr, tmp)
            t._ver.v += 1

    def _sync_module_states(self):
        with no_grad():
            self._broadcast_arrays([p for _, p in self.module.named_parameters()])
            self._broadcast_arrays([b for _, b in self.module.named_buffers()])

    def _make_buckets(self):
        buckets, open_ = [], {}
        cap = min(_FIRST_BUCKET_BYTES, self.bucket_bytes_cap)
        for _, p in reversed(self._named_params):
            dt = p._arr.dtype
            if not self.gradient_as_bucket_view and p._arr.nbytes >= _DIRECT_BYTES:
                # the gradients before it go first (backward made them first)
                if dt in open_:
                    buckets.append(_Bucket(len(buckets), open_.pop(dt)[0], dt))
                buckets.append(_Bucket(len(buckets), [p], dt, direct=True))
                cap = self.bucket_bytes_cap
                continue
            cur = open_.setdefault(dt, [[], 0])
            cur[0].append(p)
            cur[1] += p._arr.nbytes
            if cur[1] >= cap:
                buckets.append(_Bucket(len(buckets), cur[0], dt))
                del open_[dt]
                cap = self.bucket_bytes_cap
        for dt, (params, _) in open_.items():
            buckets.append(_Bucket(len(buckets), params, dt))
        return buckets

    # --- a step ------------------------------------------------------------------

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        st = self._st
        if st.prepared and st.n_ready:
            missing = [n for k, (n, _) in enumerate(self._named_params)
                       if not st.ready[k]]
            st.prepared = False
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before "
                "starting a new one: parameters "
                f"{missing[:10]}{' ...' if len(missing) > 10 else ''} received no "
                "gradient in that backward. Pass find_unused_parameters=True to "
                "DistributedDataParallel if some parameters are not used in "
                "producing the loss, and make sure that every forward output "
                "takes part in computing the loss.")
        if self.broadcast_buffers and self._pg.size() > 1:
            buffers = [b for _, b in self.module.named_buffers()]
            if buffers:
                with no_grad():
                    self._broadcast_arrays(buffers)
        out = self.module(*inputs, **kwargs)
        if is_grad_enabled() and self.require_backward_grad_sync:
            self._prepare(out)
        else:
            st.prepared = False
        return out

    def _prepare(self, out):
        st = self._st
        st.prepared = True
        st.n_ready = 0
        st.next_bucket = 0
        st.ready[:] = 0
        st.claimed.clear()
        for b in self._buckets:
            b.pending = len(b.params)
            b.request = None
            b.target = b.flat
        if self.find_unused_parameters:
            used = _leaves_reached(out)
            for _, p in self._named_params:
                if id(p) not in used:
                    k, bucket, slot = self._slot_of[id(p)]
                    slot[...] = 0
                    st.ready[k] = 1
                    self._mark(bucket)

    def _grad_ready(self, p):
        st = self._st
        if not st.prepared:
            return
        k, bucket, slot = self._slot_of[id(p)]
        if st.ready[k]:
            return
        gt = p._grad
        g = gt._arr
        n = self._pg.size()
        if (bucket.direct and not gt._requires_grad and g.flags.owndata
                and g.flags.c_contiguous and g.flags.writeable
                and g.dtype == bucket.flat.dtype and id(g) not in st.claimed):
            st.claimed.add(id(g))    # (two parameters could share one .grad)
            # reduced in place in .grad (which backward has finished with);
            # divided first, as torch does, so the sum is the mean
            if n > 1:
                np.divide(g, n, out=g)
            bucket.target = g
            st.ready[k] = 2
            self._mark(bucket)
            return
        # divided on the way in (as torch does), so the bucket's sum is the mean
        if g.base is bucket.flat:       # .grad is our view: already in place
            if n > 1:
                np.divide(slot, n, out=slot, casting="unsafe")
        elif n > 1:
            np.divide(g, n, out=slot, casting="unsafe")
        else:
            np.copyto(slot, g, casting="unsafe")
        st.ready[k] = 2
        self._mark(bucket)

    def _mark(self, bucket):
        st = self._st
        st.n_ready += 1
        bucket.pending -= 1
        MPI = _mpi()
        launched = st.next_bucket
        buckets = self._buckets
        while st.next_bucket < len(buckets) and buckets[st.next_bucket].pending == 0:
            nb = buckets[st.next_bucket]
            nb.request = self._pg.comm.Iallreduce(MPI.IN_PLACE, nb.target, MPI.SUM)
            st.next_bucket += 1
        if st.n_ready == len(self._named_params):
            self._finalize()
        elif launched:
            # MPI advances a non-blocking collective only inside MPI calls:
            # give the ones in flight a turn while backward goes on
            MPI.Request.Testall([b.request for b in buckets[:launched]])

    def _finalize(self):
        MPI = _mpi()
        st = self._st
        st.prepared = False
        start = time.perf_counter()
        # bytes whose allreduce already finished while backward ran (the
        # communication the overlap hid entirely)
        for b in self._buckets[:-1]:
            if b.request.Test():
                st.hidden_bytes += b.flat.nbytes
        MPI.Request.Waitall([b.request for b in self._buckets])
        # communication left to wait for once backward is done (the part the
        # overlap did not hide), for the benchmark and for users' profiling
        st.wait_s += time.perf_counter() - start
        st.n_syncs += 1
        used = None
        if self.find_unused_parameters:
            used = (st.ready == 2).astype(np.int8)
            self._pg.comm.Allreduce(MPI.IN_PLACE, used, MPI.MAX)
        for b in self._buckets:
            b.request = None
            if b.target is not b.flat:      # reduced in its own .grad
                b.params[0]._grad._ver.v += 1
                b.target = b.flat
                continue
            for p in b.params:
                k, _, slot = self._slot_of[id(p)]
                if used is not None and not used[k]:
                    continue        # unused on every rank: .grad stays as it was
                self._write_grad(p, b, slot)

    def _write_grad(self, p, bucket, slot):
        """``.grad`` = the average in ``slot``."""
        g = p._grad
        if self.gradient_as_bucket_view:
            if g is None or g._arr.base is not bucket.flat:
                p._grad = from_numpy(slot)
            else:
                g._ver.v += 1
            return
        if g is None or g._requires_grad or not g._arr.flags.writeable:
            p._grad = from_numpy(slot.copy())
            return
        np.copyto(g._arr, slot)
        g._ver.v += 1

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Within this context, backward accumulates gradients locally; the
        first forward/backward after it averages the accumulated sums."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    @property
    def process_group(self) -> ProcessGroup:
        return self._pg

    def extra_repr(self) -> str:
        return ""
