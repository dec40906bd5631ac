"""Data loading: cygrad's DataLoader vs torch's, in the main process.

Groups (each case: one pass over ``NBATCH`` batches, ``num_workers=0``, one
thread each; ``extra_info["batches"]`` gives the per-batch cost):

``data_tensor_batch``          TensorDataset of (N, 784) float32 images and
                               int64 labels, batch 128, sequential order
``data_tensor_batch_shuffle``  the same with ``shuffle=True``
``data_numpy_samples``         a map-style dataset returning one NumPy
                               (784,) float32 image and an int label per
                               index: the general path (per-sample
                               ``__getitem__`` + ``default_collate``)
``data_tensor_batch_workers``  ``data_tensor_batch`` read by 2 persistent
                               worker processes (started before timing):
                               what crossing processes costs (cygrad: pipes,
                               torch: shared memory)

``python -m benchmarks.bench_data`` times the variants in turn, round after
round, and prints the cost per batch and the ratio cygrad / torch.
"""

import numpy as np
import pytest

from benchmarks import need, pick, run, tag

BATCH = 128
FEATURES = 784
NBATCH = pick(50, 2)
N = BATCH * NBATCH
CASES = ("data_tensor_batch", "data_tensor_batch_shuffle", "data_numpy_samples",
         "data_tensor_batch_workers")


def _arrays():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, FEATURES)).astype(np.float32)
    y = rng.integers(0, 10, N).astype(np.int64)
    return x, y


class _NumpySamples:
    """One sample per index as NumPy data (the dataset half of both cases)."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def __getitem__(self, i):
        return self.x[i], int(self.y[i])

    def __len__(self):
        return len(self.x)


def build(lib, case):
    """``(one_pass, loader)``: ``one_pass()`` reads every batch once."""
    T = need(lib, "utils.data.DataLoader", "utils.data.TensorDataset")
    import importlib

    data = importlib.import_module(f"{lib}.utils.data")
    x, y = _arrays()
    if case == "data_numpy_samples":
        base = data.Dataset
        ds = type("Samples", (_NumpySamples, base), {})(x, y)
    else:
        ds = data.TensorDataset(T.from_numpy(x), T.from_numpy(y))
    workers = {"num_workers": 2, "persistent_workers": True} if case.endswith(
        "workers") else {}
    loader = data.DataLoader(ds, batch_size=BATCH,
                             shuffle=case == "data_tensor_batch_shuffle", **workers)

    def one_pass():
        for _ in loader:
            pass

    return one_pass, loader


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("lib", ["cygrad", "torch"])
def test_loader_pass(benchmark, case, lib):
    one_pass, _ = build(lib, case)
    one_pass()
    tag(benchmark, case, lib, batches=NBATCH, batch_size=BATCH, features=FEATURES)
    run(benchmark, one_pass)


@pytest.mark.parametrize("case", CASES)
def test_agree(case):
    """Both libraries give the same batches (shuffle=False cases)."""
    if case == "data_tensor_batch_shuffle":
        pytest.skip("the orders come from different generators")
    got = {}
    for lib in ("cygrad", "torch"):
        try:
            _, loader = build(lib, case)
        except pytest.skip.Exception:
            continue
        got[lib] = [[np.asarray(t.numpy()) for t in b] for b in loader]
    if len(got) == 2:
        for a, b in zip(got["cygrad"], got["torch"]):
            for u, v in zip(a, b):
                assert u.dtype == v.dtype
                np.testing.assert_array_equal(u, v)


def _interleaved(reps=40):
    import time

    passes = {(case, lib): build(lib, case)[0] for case in CASES
              for lib in ("cygrad", "torch")}
    for fn in passes.values():
        fn()
    times = {key: [] for key in passes}
    for _ in range(reps):
        for key, fn in passes.items():
            t = time.perf_counter()
            fn()
            times[key].append(time.perf_counter() - t)
    print(f"{NBATCH} batches of ({BATCH}, {FEATURES}) float32 + int64 labels, "
          f"{reps} interleaved rounds; per batch:")
    for case in CASES:
        c, t = times[(case, "cygrad")], times[(case, "torch")]
        print(f"  {case:27s} cygrad min {min(c) / NBATCH * 1e6:7.1f} us  median "
              f"{np.median(c) / NBATCH * 1e6:7.1f} us | torch min "
              f"{min(t) / NBATCH * 1e6:7.1f} us  median "
              f"{np.median(t) / NBATCH * 1e6:7.1f} us | ratio min "
              f"x{min(c) / min(t):.2f}  median x{np.median(c) / np.median(t):.2f}")


if __name__ == "__main__":
    import benchmarks.conftest as _conf  # the same thread policy as the suite

    _conf._apply_threads(__import__("benchmarks").requested_threads())
    _interleaved()
