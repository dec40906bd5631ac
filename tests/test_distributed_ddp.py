"""DistributedDataParallel on 2 and 3 ranks (3: uneven shards): 20 training
steps equal single-process full-batch training (float64 to 1e-12, float32 to
1e-6, SGD with momentum and Adam, an MLP and a model with buffers) with
bit-identical replicas; no_sync accumulation; find_unused_parameters; shape
mismatch at wrap time on every rank; checkpoints; the overlap of the first
bucket's allreduce with the rest of backward; gradients reduced in place in
their own .grad (large parameters).  The checks run inside the rank
script (tests/dist_scripts/ddp_train.py)."""

import pytest
from dist_scripts import harness


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("case", ["train", "no_sync", "unused", "checkpoint",
                                  "overlap", "direct"])
def test_ddp(case, n):
    res = harness.run_ranks(n, "ddp_train.py", case, timeout=120)
    harness.check_ok(res, n)


@pytest.mark.parametrize("n", [2, 3])
def test_ddp_shape_mismatch_fails_on_every_rank_at_wrap_time(n):
    res = harness.run_ranks(n, "ddp_train.py", "mismatch")
    harness.check_ok(res, n)
    for r in range(n):
        assert f"rank {r} raised: DistributedDataParallel expects the same model" \
            in res.stdout
