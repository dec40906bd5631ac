"""The digits MLP of digits_mlp.py trained data-parallel on N processes.

Every rank holds a replica wrapped in DistributedDataParallel.  Each step takes
the same global mini-batch of 128 on every rank (one shared permutation per
epoch), and rank r trains on the strided slice batch[r::N] of it.  The loss is
the sum over the local samples divided by the global batch size and multiplied
by N, so that DDP's average over the ranks is exactly the single-process
gradient: 1, 2 or 4 processes reach the same test accuracy.  Rank 0 prints one
line per epoch and writes the checkpoint; every rank then loads it.

    python examples/ddp_digits.py                                 # 1 process
    python -m cygrad.distributed.run -n 2 examples/ddp_digits.py  # 2 ranks
    mpiexec -n 4 python examples/ddp_digits.py --epochs 10        # 4 ranks
"""

import argparse
import io
import sys
import time

import numpy as np

import cygrad
import cygrad.distributed as dist
from cygrad import nn, optim
from cygrad.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--epochs", type=int, default=20)
parser.add_argument("--batch-size", type=int, default=128, help="global batch")
parser.add_argument("--checkpoint", default=None, help="file rank 0 writes")
args = parser.parse_args()

try:
    from sklearn.datasets import load_digits
except ImportError:
    print("scikit-learn is not installed: skipping the digits example "
          "(pip install scikit-learn)")
    sys.exit(0)
if not dist.is_available():
    print('mpi4py is not installed: skipping (pip install -e ".[distributed]")')
    sys.exit(0)

dist.init_process_group("mpi")
rank, world = dist.get_rank(), dist.get_world_size()


def log(*parts: object) -> None:
    if rank == 0:
        print(*parts, flush=True)


digits = load_digits()
X = (digits.data / 16.0).astype(np.float32)
y = digits.target.astype(np.int64)
rng = np.random.default_rng(0)
order = rng.permutation(len(X))
X, y = X[order], y[order]
n_train = 1400
X_train, y_train, X_test, y_test = X[:n_train], y[:n_train], X[n_train:], y[n_train:]

cygrad.manual_seed(rank)      # DDP replaces every rank's weights by rank 0's
model = DDP(nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)))
opt = optim.Adam(model.parameters(), lr=1e-3)
loss_fn = nn.CrossEntropyLoss(reduction="sum")
log(f"{world} process(es); model: {model.module}")

start = time.perf_counter()
for epoch in range(1, args.epochs + 1):
    perm = rng.permutation(n_train)   # the same on every rank
    total = cygrad.zeros(1, dtype=cygrad.float64)
    for i in range(0, n_train, args.batch_size):
        batch = perm[i : i + args.batch_size]
        mine = batch[rank::world]     # this rank's shard of the global batch
        logits = model(cygrad.from_numpy(X_train[mine]))
        local = loss_fn(logits, cygrad.from_numpy(y_train[mine]))
        loss = local * (world / len(batch))
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += local.item()
    dist.all_reduce(total)            # the loss summed over every rank's samples
    log(f"epoch {epoch:2d}: loss = {total.item() / n_train:.4f} "
        f"({time.perf_counter() - start:.1f} s)")

if args.checkpoint:
    if rank == 0:
        cygrad.save(model.state_dict(), args.checkpoint)
    dist.barrier()                    # the file is complete before anyone reads it
    state = cygrad.load(args.checkpoint)
else:
    buf = io.BytesIO()
    cygrad.save(model.state_dict(), buf)
    state = cygrad.load(io.BytesIO(buf.getvalue()))
model.load_state_dict(state)

model.eval()
with cygrad.no_grad():
    pred = model.module(cygrad.from_numpy(X_test)).numpy().argmax(axis=1)
accuracy = float((pred == y_test).mean())
accuracies = [None] * world
dist.all_gather_object(accuracies, accuracy)
assert len(set(accuracies)) == 1, f"replicas disagree: {accuracies}"
log(f"test accuracy: {accuracy:.3f} on {len(y_test)} held-out digits, "
    f"{world} process(es) ({time.perf_counter() - start:.1f} s)")
dist.destroy_process_group()
