"""Rank script: DistributedDataParallel against single-process training.

Every rank trains its DDP replica on its strided shard of one data set and,
beside it, a plain copy of the model on the whole data set; after each step
the two must agree (float64 to 1e-12, float32 to 1e-6) and the replicas must be
bit-identical across ranks.  Shards are uneven on 3 ranks, so each rank's loss
is its sum over samples times world_size / N: the average over ranks is then
the full-batch mean.  argv[1] picks the case."""

import io
import sys

import numpy as np

import cygrad
import cygrad.distributed as dist
from cygrad import nn
from cygrad.autograd import Function
from cygrad.nn.parallel import DistributedDataParallel as DDP

N = 20
TOL = {cygrad.float64: {"rtol": 1e-12, "atol": 1e-12},
       cygrad.float32: {"rtol": 1e-6, "atol": 1e-6}}


class Scaled(nn.Module):
    """An MLP with buffers: a per-feature scale (drawn differently on each rank
    until DDP broadcasts rank 0's) and a forward counter."""

    def __init__(self, dtype):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3))
        self.register_buffer("scale", cygrad.rand(5, dtype=dtype) + 0.5)
        self.register_buffer("calls", cygrad.zeros(1, dtype=dtype))

    def forward(self, x):
        with cygrad.no_grad():
            self.calls.add_(1.0)
        return self.net(x * self.scale)


def mlp():
    return nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 8), nn.Tanh(),
                         nn.Linear(8, 3))


def build(kind, dtype, seed):
    cygrad.manual_seed(seed)
    model = Scaled(dtype) if kind == "buffers" else mlp()
    return model.to(dtype)


def data(dtype):
    rng = np.random.default_rng(123)
    x = cygrad.tensor(rng.standard_normal((N, 5)), dtype=dtype)
    y = cygrad.tensor(rng.standard_normal((N, 3)), dtype=dtype)
    return x, y


def loss_fn(out, y, scale):
    return ((out - y) ** 2).sum() * scale


def params_of(model):
    return [p.detach().numpy().copy() for p in model.parameters()]


def check_replicas_identical(model):
    mine = b"".join(p.detach().numpy().tobytes() for p in model.parameters())
    mine += b"".join(b.numpy().tobytes() for b in model.buffers())
    everyone = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, mine)
    assert all(e == everyone[0] for e in everyone), "replicas differ"


def train(kind, dtype_name, opt_name):
    dtype = getattr(cygrad, dtype_name)
    rank, n = dist.get_rank(), dist.get_world_size()
    ref = build(kind, dtype, 0)                  # what rank 0 starts from
    local = build(kind, dtype, 100 * rank)       # different on every rank
    ddp = DDP(local, bucket_cap_mb=0.0005)       # several small buckets
    for a, b in zip(params_of(ddp.module), params_of(ref)):
        np.testing.assert_array_equal(a, b)      # rank 0's weights everywhere
    for a, b in zip(ddp.module.buffers(), ref.buffers()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    make_opt = {"sgd": lambda p: cygrad.optim.SGD(p, lr=0.05, momentum=0.9),
                "adam": lambda p: cygrad.optim.Adam(p, lr=0.01)}[opt_name]
    opt, ref_opt = make_opt(ddp.parameters()), make_opt(ref.parameters())
    x, y = data(dtype)
    xs, ys = x[rank::n], y[rank::n]
    for step in range(20):
        opt.zero_grad()
        loss_fn(ddp(xs), ys, n / N).backward()
        opt.step()
        ref_opt.zero_grad()
        loss_fn(ref(x), y, 1.0 / N).backward()
        ref_opt.step()
        for a, b in zip(params_of(ddp.module), params_of(ref)):
            np.testing.assert_allclose(a, b, **TOL[dtype])
        check_replicas_identical(ddp.module)
    if kind == "buffers":
        assert ddp.module.calls.item() == 20.0


def no_sync_case():
    """Two local micro-batches under no_sync, then a synced one: the same
    gradient as the whole batch at once."""
    dtype = cygrad.float64
    rank, n = dist.get_rank(), dist.get_world_size()
    ref = build("mlp", dtype, 0)
    ddp = DDP(build("mlp", dtype, 7 * rank))
    x, y = data(dtype)
    idx = np.arange(rank, N, n)
    parts = np.array_split(idx, 3)
    with ddp.no_sync():
        for part in parts[:2]:
            loss_fn(ddp(x[part.tolist()]), y[part.tolist()], n / N).backward()
    # under no_sync the gradients are local: they differ between ranks
    loss_fn(ddp(x[parts[2].tolist()]), y[parts[2].tolist()], n / N).backward()
    loss_fn(ref(x), y, 1.0 / N).backward()
    for p, q in zip(ddp.module.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-12,
                                   atol=1e-12)
    check_replicas_identical(ddp.module)


class Branches(nn.Module):
    def __init__(self):
        super().__init__()
        self.used = nn.Linear(4, 2)
        self.sometimes = nn.Linear(4, 2)
        self.never = nn.Linear(4, 2)

    def forward(self, x, extra):
        out = self.used(x)
        if extra:
            out = out + self.sometimes(x)
        return out


def unused_case():
    """find_unused_parameters: a branch used on rank 0 only gets rank 0's
    gradient divided by the world size; one used nowhere keeps .grad None."""
    rank, n = dist.get_rank(), dist.get_world_size()
    cygrad.manual_seed(0)
    model = Branches().to(cygrad.float64)
    ref = Branches().to(cygrad.float64)
    ref.load_state_dict(model.state_dict())
    ddp = DDP(model, find_unused_parameters=True)
    x = cygrad.tensor(np.arange(12.0).reshape(3, 4) / 10 + rank, dtype=cygrad.float64)
    for _ in range(2):
        model.zero_grad()
        ddp(x, rank == 0).sum().backward()
    expect = {}
    for r in range(n):
        ref.zero_grad()
        xr = cygrad.tensor(np.arange(12.0).reshape(3, 4) / 10 + r, dtype=cygrad.float64)
        ref(xr, r == 0).sum().backward()
        for name, p in ref.named_parameters():
            if p.grad is not None:
                expect[name] = expect.get(name, 0) + p.grad.numpy() / n
    for name, p in model.named_parameters():
        if name.startswith("never"):
            assert p.grad is None, name
        else:
            np.testing.assert_allclose(p.grad.numpy(), expect[name], rtol=1e-12)
    # without find_unused_parameters the next forward names what was missing
    ddp2 = DDP(Branches())
    ddp2(x.float(), True).sum().backward()
    try:
        ddp2(x.float(), True)
    except RuntimeError as exc:
        assert "never.weight" in str(exc) and "find_unused_parameters" in str(exc)
    else:
        raise AssertionError("no error for parameters without gradients")


def mismatch_case():
    """Ranks that disagree on a shape all fail at wrap time, naming it."""
    rank = dist.get_rank()
    width = 8 if rank != 1 else 9
    model = nn.Sequential(nn.Linear(5, width), nn.ReLU(), nn.Linear(width, 3))
    try:
        DDP(model)
    except RuntimeError as exc:
        msg = str(exc)
        assert "'0.weight'" in msg and "rank 1" in msg and "[9, 5]" in msg, msg
        print(f"rank {rank} raised: {msg}", flush=True)
    else:
        raise AssertionError("shape mismatch not detected")


def checkpoint_case():
    """Rank 0 writes a checkpoint, every rank loads it; keys carry 'module.'."""
    rank = dist.get_rank()
    ddp = DDP(build("mlp", cygrad.float32, rank))
    sd = ddp.state_dict()
    assert list(sd)[:2] == ["module.0.weight", "module.0.bias"], list(sd)
    buf = [None]
    if rank == 0:
        f = io.BytesIO()
        cygrad.save(sd, f)
        buf = [f.getvalue()]
    dist.broadcast_object_list(buf, src=0)
    fresh = DDP(build("mlp", cygrad.float32, 50 + rank))
    fresh.load_state_dict(cygrad.load(io.BytesIO(buf[0])))
    for a, b in zip(params_of(fresh.module), params_of(ddp.module)):
        np.testing.assert_array_equal(a, b)


def overlap_case():
    """The first bucket's allreduce starts before backward reaches the first
    layer (observed through a Function whose backward logs)."""
    log = []

    class Probe(Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            log.append("first layer's input backward")
            return grad

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(6, 6)
            self.b = nn.Linear(6, 6)

        def forward(self, x):
            return self.b(self.a(Probe.apply(x)).tanh())

    cygrad.manual_seed(0)
    ddp = DDP(Net(), bucket_cap_mb=1e-4)
    comm = ddp.process_group.comm
    real = comm.Iallreduce

    class Spy:
        def __getattr__(self, name):
            return getattr(comm, name)

        def Iallreduce(self, *a, **k):
            log.append("allreduce")
            return real(*a, **k)

    ddp.process_group.comm = Spy()
    x = cygrad.ones(3, 6, requires_grad=True)
    ddp(x).sum().backward()
    ddp.process_group.comm = comm
    first = log.index("first layer's input backward")
    assert log[:first].count("allreduce") >= 1, log
    assert len(ddp._buckets) >= 2 and log.count("allreduce") == len(ddp._buckets), log


def direct_case():
    """Every gradient reduced in place in its own .grad (the path large
    parameters take): training, no_sync, unused parameters as above, and
    .grad kept (same tensor, averaged) under zero_grad(set_to_none=False)."""
    import cygrad.nn.parallel.distributed as ddp_mod
    ddp_mod._DIRECT_BYTES = 0
    for dtype_name in ("float64", "float32"):
        for opt_name in ("sgd", "adam"):
            train("mlp", dtype_name, opt_name)
    no_sync_case()
    unused_case()
    rank, n = dist.get_rank(), dist.get_world_size()
    ref = build("mlp", cygrad.float64, 0)
    ddp = DDP(build("mlp", cygrad.float64, 3 * rank))
    assert all(b.direct for b in ddp._buckets)
    x, y = data(cygrad.float64)
    loss_fn(ddp(x[rank::n]), y[rank::n], n / N).backward()
    grads = [p.grad for p in ddp.module.parameters()]
    for p in ddp.module.parameters():
        p.grad.zero_()
    loss_fn(ddp(x[rank::n]), y[rank::n], n / N).backward()
    loss_fn(ref(x), y, 1.0 / N).backward()
    for g, p, q in zip(grads, ddp.module.parameters(), ref.parameters()):
        assert p.grad is g
        np.testing.assert_allclose(g.numpy(), q.grad.numpy(), rtol=1e-12,
                                   atol=1e-12)
    check_replicas_identical(ddp.module)


def main(case):
    dist.init_process_group()
    rank = dist.get_rank()
    if case == "train":
        for kind in ("mlp", "buffers"):
            for dtype_name in ("float64", "float32"):
                for opt_name in ("sgd", "adam"):
                    train(kind, dtype_name, opt_name)
    else:
        {"no_sync": no_sync_case, "unused": unused_case, "mismatch": mismatch_case,
         "checkpoint": checkpoint_case, "overlap": overlap_case,
         "direct": direct_case}[case]()
    dist.barrier()
    dist.destroy_process_group()
    print(f"rank {rank} ok {case}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
