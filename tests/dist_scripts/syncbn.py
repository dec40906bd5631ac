"""Rank script: SyncBatchNorm over 2 ranks, each holding half of a batch,
against one BatchNorm over the whole batch (outputs, input, weight and bias
gradients, running statistics), in float64."""

import numpy as np

import cygrad
import cygrad.distributed as dist
import cygrad.nn as nn


def main():
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4 * world, 3, 5)) * 2 + 1
    g = rng.standard_normal(x.shape)
    w, b = np.array([0.5, 2.0, -1.0]), np.array([0.1, 0.2, 0.3])
    checks = 0
    for momentum in (0.3, None):
        ref = nn.BatchNorm1d(3, momentum=momentum).double()
        sync = nn.SyncBatchNorm(3, momentum=momentum).double()
        for m in (ref, sync):
            m.weight.data = cygrad.tensor(w.copy())
            m.bias.data = cygrad.tensor(b.copy())
        rows = slice(4 * rank, 4 * rank + 4)
        for step in range(2):
            xr = cygrad.tensor(x, requires_grad=True)
            xs = cygrad.tensor(x[rows], requires_grad=True)
            yr, ys = ref(xr), sync(xs)
            np.testing.assert_allclose(ys.detach().numpy(), yr.detach().numpy()[rows],
                                       rtol=1e-10, atol=1e-12)
            yr.backward(cygrad.tensor(g))
            ys.backward(cygrad.tensor(g[rows]))
            np.testing.assert_allclose(xs.grad.numpy(), xr.grad.numpy()[rows],
                                       rtol=1e-10, atol=1e-12)
            # weight and bias: local gradients, whose sum over ranks is the total
            for p, q in ((sync.weight, ref.weight), (sync.bias, ref.bias)):
                total = p.grad.detach().clone()
                dist.all_reduce(total)
                np.testing.assert_allclose(total.numpy(), q.grad.numpy(), rtol=1e-10)
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                np.testing.assert_allclose(getattr(sync, name).numpy(),
                                           getattr(ref, name).numpy(), rtol=1e-12)
            for m in (ref, sync):
                m.zero_grad()
            checks += 1
        sync.eval()
        ref.eval()
        np.testing.assert_allclose(sync(cygrad.tensor(x[rows])).detach().numpy(),
                                   ref(cygrad.tensor(x[rows])).detach().numpy(),
                                   rtol=1e-12)
    dist.destroy_process_group()
    print(f"rank {rank} ok {checks} checks", flush=True)


if __name__ == "__main__":
    main()
