"""DataLoader with worker processes: the batches of num_workers=0, seeding,
get_worker_info, persistent workers, and failures that end cleanly.

Every test runs under a SIGALRM guard (a hang fails the test instead of the
suite), loaders get a ``timeout`` where waiting could block, and scripts that
must die run in a subprocess with a deadline.
"""

import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_data_collate import plain

import cygrad
from cygrad.utils.data import (
    DataLoader,
    Dataset,
    IterableDataset,
    TensorDataset,
    get_worker_info,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GUARD_SECONDS = 90


@pytest.fixture(autouse=True)
def _alarm():
    def hang(signum, frame):
        raise TimeoutError(f"test still running after {GUARD_SECONDS} s")
    old = signal.signal(signal.SIGALRM, hang)
    signal.alarm(GUARD_SECONDS)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def _alive(pid):
    """True while ``pid`` runs (a zombie, exited but not reaped, counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _assert_stopped(iterator):
    assert iterator._stopped
    for p in iterator._workers:
        assert not p.is_alive() and p.exitcode is not None
        assert not _alive(p.pid)


class Records(Dataset):
    def __init__(self, n=23):
        self.n = n

    def __getitem__(self, i):
        x = np.arange(3, dtype=np.float32) * i
        return {"x": x, "y": i, "t": cygrad.tensor([i, -i]), "name": str(i)}

    def __len__(self):
        return self.n


class WhoAmI(Dataset):
    def __getitem__(self, i):
        info = get_worker_info()
        return {"i": i, "worker": info.id, "num_workers": info.num_workers,
                "seed": info.seed, "rand": float(cygrad.rand(1).item()),
                "np": float(np.random.random())}

    def __len__(self):
        return 12


class Failing(Dataset):
    def __init__(self, exc, at=5):
        self.exc, self.at = exc, at

    def __getitem__(self, i):
        if i == self.at:
            raise self.exc
        return i

    def __len__(self):
        return 20


class Sleepy(Dataset):
    def __getitem__(self, i):
        time.sleep(1.5)
        return i

    def __len__(self):
        return 4


class Killer(Dataset):
    def __getitem__(self, i):
        if i == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        return i

    def __len__(self):
        return 10


class ShardedStream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))


class WholeStream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))


class TwoArgError(Exception):
    def __init__(self, a, b):
        super().__init__(a, b)


def _epochs(loader, n=2):
    return [[plain(b) for b in loader] for _ in range(n)]


@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("shuffle", [False, True])
def test_workers_give_the_batches_of_the_main_process(workers, shuffle):
    kw = {"batch_size": 4, "shuffle": shuffle, "drop_last": False, "timeout": 30}
    cygrad.manual_seed(5)
    ref = _epochs(DataLoader(Records(), **{**kw, "timeout": 0}))
    cygrad.manual_seed(5)
    got = _epochs(DataLoader(Records(), num_workers=workers, **kw))
    assert got == ref
    if shuffle:
        assert ref[0] != ref[1]


@pytest.mark.parametrize("persistent", [False, True])
def test_tensor_dataset_with_workers(persistent):
    x = cygrad.tensor(np.random.default_rng(0).standard_normal((50, 7)))
    y = cygrad.arange(50)
    ds = TensorDataset(x, y)
    g0 = cygrad.Generator().manual_seed(9)
    g1 = cygrad.Generator().manual_seed(9)
    ref = _epochs(DataLoader(ds, batch_size=8, shuffle=True, generator=g0), 3)
    loader = DataLoader(ds, batch_size=8, shuffle=True, generator=g1, num_workers=2,
                        persistent_workers=persistent, timeout=30)
    assert len(loader) == 7
    assert _epochs(loader, 3) == ref


def test_batch_size_none_and_drop_last_with_workers():
    ref = [plain(b) for b in DataLoader(Records(7), batch_size=None)]
    assert [plain(b) for b in DataLoader(Records(7), batch_size=None,
                                         num_workers=2, timeout=30)] == ref
    ref = [plain(b) for b in DataLoader(Records(), batch_size=5, drop_last=True)]
    got = [plain(b) for b in DataLoader(Records(), batch_size=5, drop_last=True,
                                        num_workers=2, timeout=30)]
    assert got == ref and len(got) == 4


def test_worker_info_seeds_and_init_fn(tmp_path):
    assert get_worker_info() is None

    def init(worker_id):
        info = get_worker_info()
        (tmp_path / f"init{worker_id}").write_text(f"{info.id} {info.num_workers}")

    def run():
        loader = DataLoader(WhoAmI(), batch_size=2, num_workers=3,
                            worker_init_fn=init, timeout=30)
        return list(loader)

    cygrad.manual_seed(0)
    batches = run()
    for k, b in enumerate(batches):
        assert b["worker"].tolist() == [k % 3] * 2        # round robin
        assert b["num_workers"].tolist() == [3, 3]
        assert b["i"].tolist() == [2 * k, 2 * k + 1]
    seeds = {b["worker"][0].item(): b["seed"][0].item() for b in batches}
    assert seeds[1] == seeds[0] + 1 and seeds[2] == seeds[0] + 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["init0", "init1", "init2"]
    assert (tmp_path / "init2").read_text() == "2 3"
    rand = [r for b in batches for r in b["rand"].tolist()]
    assert len(set(rand)) == len(rand)              # workers draw different numbers
    cygrad.manual_seed(0)
    again = run()
    assert [plain(b) for b in again] == [plain(b) for b in batches]
    cygrad.manual_seed(1)
    assert run()[0]["seed"][0].item() != batches[0]["seed"][0].item()


def test_worker_info_is_read_only():
    class Probe(Dataset):
        def __getitem__(self, i):
            w = get_worker_info()
            try:
                w.id = 5
            except RuntimeError as e:
                return str(e)
            return "assigned"

        def __len__(self):
            return 1
    out = next(iter(DataLoader(Probe(), num_workers=1, timeout=30)))
    assert out == ["Cannot assign attributes to WorkerInfo objects"]


def test_iterable_dataset_with_workers_matches_torch():
    torch = pytest.importorskip("torch")

    class TorchSharded(torch.utils.data.IterableDataset):
        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            return iter(range(info.id, 11, info.num_workers))

    class TorchWhole(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(5))

    for ours_ds, theirs_ds in [(ShardedStream(11), TorchSharded()),
                               (WholeStream(5), TorchWhole())]:
        for bs in (None, 2):
            ours = DataLoader(ours_ds, batch_size=bs, num_workers=2, timeout=30)
            theirs = torch.utils.data.DataLoader(theirs_ds, batch_size=bs,
                                                 num_workers=2)
            assert [plain(b) for b in ours] == [plain(b) for b in theirs]


def test_persistent_workers_are_reused_and_survive_a_broken_epoch():
    ds = ShardedStream(10)
    loader = DataLoader(ds, batch_size=2, num_workers=2, persistent_workers=True,
                        timeout=30)
    first = [b.tolist() for b in loader]
    it = loader._iterator
    pids = [p.pid for p in it._workers]
    for b in loader:      # leave this epoch early: its batches must not leak
        break
    second = [b.tolist() for b in loader]
    assert first == second
    assert loader._iterator is it and [p.pid for p in it._workers] == pids
    assert all(p.is_alive() for p in it._workers)
    del loader, it
    import gc
    gc.collect()
    time.sleep(0.2)
    assert not any(_alive(pid) for pid in pids)


def test_map_dataset_persistent_workers_broken_epoch():
    loader = DataLoader(Records(), batch_size=3, num_workers=2, persistent_workers=True,
                        timeout=30)
    ref = [plain(b) for b in DataLoader(Records(), batch_size=3)]
    for k, _ in enumerate(loader):
        if k == 1:
            break
    assert [plain(b) for b in loader] == ref


@pytest.mark.parametrize("exc, expect", [
    (ValueError("bad sample 5"), ValueError),
    (KeyError("k"), KeyError),
    (TwoArgError("a", "b"), RuntimeError),     # cannot be rebuilt from one message
    (ZeroDivisionError("division"), ZeroDivisionError),
])
def test_worker_exception_is_reraised_with_its_traceback(exc, expect):
    loader = DataLoader(Failing(exc), batch_size=2, num_workers=2, timeout=30)
    it = iter(loader)
    got = []
    with pytest.raises(expect) as info:
        for b in it:
            got.append(b.tolist())
    assert got == [[0, 1], [2, 3]]          # the batches before the failing one
    msg = str(info.value)
    assert f"Caught {type(exc).__name__} in DataLoader worker process 0" in msg
    assert "Original Traceback (most recent call last):" in msg
    assert "in __getitem__" in msg and "raise self.exc" in msg
    _assert_stopped(it)
    with pytest.raises(StopIteration):
        next(it)


def test_worker_init_fn_error_is_reraised():
    def init(worker_id):
        raise OSError(f"no disk for worker {worker_id}")
    it = iter(DataLoader(Records(), num_workers=2, worker_init_fn=init, timeout=30))
    with pytest.raises(OSError, match="no disk for worker 0"):
        next(it)
    _assert_stopped(it)


def test_timeout_raises_and_stops_workers():
    it = iter(DataLoader(Sleepy(), num_workers=1, timeout=0.3))
    t = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0.3 seconds"):
        next(it)
    assert time.monotonic() - t < 10
    _assert_stopped(it)


def test_a_killed_worker_is_reported():
    it = iter(DataLoader(Killer(), batch_size=2, num_workers=2))
    t = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) "
                                           r"exited unexpectedly"):
        list(it)
    assert time.monotonic() - t < 15
    _assert_stopped(it)


def test_tensors_cross_with_requires_grad_and_non_leaves_are_refused():
    class Leaves(Dataset):
        def __getitem__(self, i):
            return cygrad.tensor([float(i)], requires_grad=True)

        def __len__(self):
            return 2

    class NonLeaf(Leaves):
        def __getitem__(self, i):
            return super().__getitem__(i) * 2

    out = list(DataLoader(Leaves(), batch_size=None, num_workers=1, timeout=30))
    assert [t.requires_grad for t in out] == [True, True]
    assert [t.tolist() for t in out] == [[0.0], [1.0]]
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf"):
        list(DataLoader(NonLeaf(), batch_size=None, num_workers=1, timeout=30))


def test_spawn_context_pickles_the_dataset():
    ds = TensorDataset(cygrad.arange(12.0).reshape(6, 2), cygrad.arange(6))
    ref = [plain(b) for b in DataLoader(ds, batch_size=4)]
    got = [plain(b) for b in DataLoader(ds, batch_size=4, num_workers=1,
                                        multiprocessing_context="spawn", timeout=60)]
    assert got == ref


def _run(script, timeout=60):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get(
        "PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)],
                          capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=ROOT, check=False)


def test_uncaught_worker_error_ends_the_script_without_orphans(tmp_path):
    script = f"""
        import os
        import cygrad as torch
        from cygrad.utils.data import DataLoader, Dataset

        class Bad(Dataset):
            def __getitem__(self, i):
                open(os.path.join({str(tmp_path)!r}, str(os.getpid())), "w").close()
                if i == 7:
                    raise ValueError("sample 7 is corrupt")
                return i
            def __len__(self):
                return 100

        for batch in DataLoader(Bad(), batch_size=2, num_workers=3):
            pass
    """
    t = time.monotonic()
    proc = _run(script)
    assert time.monotonic() - t < 60
    assert proc.returncode != 0
    assert "ValueError: Caught ValueError in DataLoader worker process" in proc.stderr
    assert "sample 7 is corrupt" in proc.stderr and "in __getitem__" in proc.stderr
    pids = [int(p.name) for p in tmp_path.iterdir()]
    assert len(pids) == 3
    assert not any(_alive(pid) for pid in pids)


def test_workers_leave_when_the_main_process_is_killed():
    script = """
        import os, sys, time
        from cygrad.utils.data import DataLoader, Dataset, _worker

        _worker.STATUS_CHECK_INTERVAL = 0.5   # forked workers poll faster

        class Ds(Dataset):
            def __getitem__(self, i):
                return os.getpid()
            def __len__(self):
                return 4

        loader = DataLoader(Ds(), num_workers=2, persistent_workers=True)
        pids = sorted(set(int(b) for b in loader))
        print(" ".join(map(str, pids)), flush=True)
        time.sleep(120)
    """
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)],
                            stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    try:
        pids = [int(p) for p in proc.stdout.readline().split()]
        assert len(pids) == 2 and all(_alive(p) for p in pids)
        proc.kill()
        proc.wait(timeout=10)
        deadline = time.monotonic() + 30
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(_alive(p) for p in pids), "workers outlived their parent"
    finally:
        proc.kill()
        proc.stdout.close()


def test_persistent_loader_after_a_worker_error_starts_new_workers():
    loader = DataLoader(Failing(ValueError("bad"), at=3), batch_size=2, num_workers=2,
                        persistent_workers=True, timeout=30)
    for _ in range(2):
        with pytest.raises(ValueError, match="Caught ValueError"):
            list(loader)
        _assert_stopped(loader._iterator)


@pytest.mark.parametrize("prefetch_factor", [1, 3])
def test_prefetch_factor_bounds_the_requests(prefetch_factor):
    loader = DataLoader(Records(), batch_size=2, num_workers=2, timeout=30,
                        prefetch_factor=prefetch_factor)
    it = iter(loader)
    assert it._tasks_outstanding == 2 * prefetch_factor
    got = []
    for b in it:
        assert it._tasks_outstanding <= 2 * prefetch_factor
        got.append(plain(b))
    assert got == [plain(b) for b in DataLoader(Records(), batch_size=2)]


def test_out_of_order_gives_every_batch_once():
    class Uneven(Dataset):
        def __getitem__(self, i):
            if i % 4 == 0:
                time.sleep(0.05)
            return i

        def __len__(self):
            return 16

    batches = [b.tolist() for b in DataLoader(Uneven(), batch_size=2, num_workers=2,
                                              in_order=False, timeout=30)]
    assert sorted(batches) == [[i, i + 1] for i in range(0, 16, 2)]


def test_distributed_sampler_in_loaders_with_workers():
    from cygrad.utils.data import DistributedSampler
    ds = TensorDataset(cygrad.arange(25))
    seen = []
    for rank in range(3):
        sampler = DistributedSampler(ds, num_replicas=3, rank=rank, seed=1)
        sampler.set_epoch(2)
        loader = DataLoader(ds, batch_size=4, sampler=sampler, num_workers=2,
                            timeout=30)
        ref = [b[0].tolist() for b in DataLoader(ds, batch_size=4, sampler=sampler)]
        got = [b[0].tolist() for b in loader]
        assert got == ref and len(loader) == 3
        seen += [i for b in got for i in b]
    assert len(seen) == 27 and set(seen) == set(range(25))


def test_spawn_with_a_dataset_of_this_module_and_a_local_one():
    ref = [plain(b) for b in DataLoader(Records(9), batch_size=4)]
    got = [plain(b) for b in DataLoader(Records(9), batch_size=4, num_workers=2,
                                        multiprocessing_context="spawn", timeout=60)]
    assert got == ref

    class Local(Records):
        pass
    loader = DataLoader(Local(9), num_workers=1, multiprocessing_context="spawn")
    with pytest.raises((AttributeError, pickle.PicklingError), match="Local"):
        iter(loader)


class _OnlyInWorkers:
    """Pickles fine in a worker; unpickling it in the main process fails."""

    def __reduce__(self):
        return _fail_to_unpickle, ()


def _fail_to_unpickle():
    if get_worker_info() is None:
        raise ImportError("this class only exists in the workers")
    return _OnlyInWorkers()


def test_a_batch_the_main_process_cannot_unpickle_stops_the_workers():
    class Odd(Dataset):
        def __getitem__(self, i):
            return _OnlyInWorkers()

        def __len__(self):
            return 4

    it = iter(DataLoader(Odd(), batch_size=None, num_workers=2, timeout=30))
    with pytest.raises(ImportError, match="only exists in the workers"):
        next(it)
    _assert_stopped(it)


class Jittery(Dataset):
    """Uneven fetch times, so that workers finish out of order."""

    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        time.sleep(0.001 * (i * 7 % 3))
        return i, float(i) / 3

    def __len__(self):
        return self.n


@settings(max_examples=12, deadline=None)
@given(n=st.integers(1, 30), batch_size=st.sampled_from([None, 1, 3, 8]),
       drop_last=st.booleans(), workers=st.integers(1, 3),
       prefetch=st.integers(1, 3), shuffle=st.booleans(), seed=st.integers(0, 9))
def test_any_configuration_gives_the_main_process_batches(
        n, batch_size, drop_last, workers, prefetch, shuffle, seed):
    drop_last = drop_last and batch_size is not None
    kw = {"batch_size": batch_size, "drop_last": drop_last, "shuffle": shuffle}
    ref = [plain(b) for b in DataLoader(
        Jittery(n), generator=cygrad.Generator().manual_seed(seed), **kw)]
    got = [plain(b) for b in DataLoader(
        Jittery(n), generator=cygrad.Generator().manual_seed(seed),
        num_workers=workers, prefetch_factor=prefetch, timeout=30, **kw)]
    assert got == ref


def test_an_exception_class_pickle_cannot_name_arrives_as_runtime_error():
    class LocalError(Exception):
        pass

    it = iter(DataLoader(Failing(LocalError("local trouble"), at=0), num_workers=1,
                         timeout=30))
    with pytest.raises(RuntimeError, match="Caught LocalError in DataLoader worker"):
        next(it)
    _assert_stopped(it)


def test_more_workers_than_cpus_warns_as_torch_does():
    torch = pytest.importorskip("torch")
    import warnings

    n = len(os.sched_getaffinity(0)) + 1
    ds = list(range(4))
    for mod in (torch.utils.data, cygrad.utils.data):
        with pytest.warns(UserWarning, match=f"This DataLoader will create {n} worker "
                          "processes in total"):
            mod.DataLoader(ds, num_workers=n)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            mod.DataLoader(ds, num_workers=n - 1)
            mod.DataLoader(ds)
