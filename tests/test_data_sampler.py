"""Samplers: torch's values where no random number is drawn, otherwise the
contract (a permutation, reproducible for a seed, new at every pass, the
right distribution)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import cygrad
from cygrad.utils.data import (
    BatchSampler,
    DistributedSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)


def _gen(seed):
    return cygrad.Generator().manual_seed(seed)


def test_sequential_sampler():
    s = SequentialSampler(range(5))
    assert list(s) == [0, 1, 2, 3, 4] and len(s) == 5


def test_sampler_base():
    with pytest.raises(NotImplementedError):
        iter(Sampler())
    with pytest.warns(UserWarning, match="data_source"):
        Sampler(range(3))


@given(n=st.integers(1, 40), seed=st.integers(0, 2 ** 32))
def test_random_sampler_is_a_reproducible_permutation(n, seed):
    a = list(RandomSampler(range(n), generator=_gen(seed)))
    b = list(RandomSampler(range(n), generator=_gen(seed)))
    assert sorted(a) == list(range(n)) and a == b
    assert all(type(i) is int for i in a)


def test_random_sampler_changes_between_passes_and_follows_manual_seed():
    s = RandomSampler(range(30))
    cygrad.manual_seed(1)
    first, second = list(s), list(s)
    assert sorted(first) == sorted(second) == list(range(30)) and first != second
    cygrad.manual_seed(1)
    assert list(s) == first
    g = _gen(5)
    s = RandomSampler(range(30), generator=g)
    assert list(s) != list(s)


def test_random_sampler_num_samples_without_replacement():
    s = RandomSampler(range(4), num_samples=10, generator=_gen(0))
    out = list(s)
    assert len(out) == len(s) == 10
    assert sorted(out[:4]) == sorted(out[4:8]) == [0, 1, 2, 3]
    assert set(out[8:]) <= {0, 1, 2, 3} and len(set(out[8:])) == 2


def test_random_sampler_with_replacement():
    s = RandomSampler(range(5), replacement=True, num_samples=5000, generator=_gen(0))
    out = np.array(list(s))
    assert len(out) == 5000 and out.min() == 0 and out.max() == 4
    counts = np.bincount(out, minlength=5)
    assert np.all(np.abs(counts - 1000) < 150)
    assert len(list(RandomSampler(range(3), replacement=True, num_samples=70))) == 70


def test_random_sampler_errors_like_torch():
    torch = pytest.importorskip("torch")
    for kwargs, exc in [({"replacement": 1}, TypeError),
                        ({"num_samples": 0}, ValueError),
                        ({"num_samples": -1}, ValueError),
                        ({"num_samples": 2.0}, ValueError)]:
        with pytest.raises(exc) as ours:
            RandomSampler(range(3), **kwargs)
        with pytest.raises(exc) as theirs:
            torch.utils.data.RandomSampler(range(3), **kwargs)
        assert str(ours.value) == str(theirs.value)
    with pytest.raises(TypeError, match="cygrad.Generator"):
        list(RandomSampler(range(3), generator=torch.Generator()))


def test_subset_random_sampler():
    idx = [10, 20, 30, 40]
    s = SubsetRandomSampler(idx, generator=_gen(3))
    a = list(s)
    assert sorted(a) == idx and len(s) == 4
    assert list(SubsetRandomSampler(idx, generator=_gen(3))) == a


def test_weighted_random_sampler_distribution():
    w = [0.0, 1.0, 3.0]
    s = WeightedRandomSampler(w, 8000, generator=_gen(0))
    out = np.array(list(s))
    assert len(out) == len(s) == 8000
    counts = np.bincount(out, minlength=3)
    assert counts[0] == 0
    assert abs(counts[2] / counts[1] - 3.0) < 0.3
    again = list(WeightedRandomSampler(cygrad.tensor(w), 8000, generator=_gen(0)))
    assert again == out.tolist()


def test_weighted_random_sampler_without_replacement():
    s = WeightedRandomSampler([1.0, 2.0, 0.0, 5.0], 3, replacement=False,
                              generator=_gen(1))
    assert sorted(s) == [0, 1, 3]
    with pytest.raises(RuntimeError, match="without replacement"):
        list(WeightedRandomSampler([1.0, 0.0], 2, replacement=False))


def test_weighted_random_sampler_errors_like_torch():
    torch = pytest.importorskip("torch")
    for args, kwargs in [(([1.0], 0), {}), (([1.0], 2), {"replacement": 0}),
                         (([[1.0]], 1), {})]:
        with pytest.raises(ValueError) as ours:
            WeightedRandomSampler(*args, **kwargs)
        with pytest.raises(ValueError) as theirs:
            torch.utils.data.WeightedRandomSampler(*args, **kwargs)
        assert str(ours.value) == str(theirs.value)
    for w in ([-1.0, 2.0], [0.0, 0.0], [float("nan"), 1.0]):
        with pytest.raises(RuntimeError, match="invalid multinomial distribution"):
            list(WeightedRandomSampler(w, 2))
        with pytest.raises(RuntimeError):
            list(torch.utils.data.WeightedRandomSampler(w, 2))


@given(n=st.integers(0, 30), size=st.integers(1, 8), drop_last=st.booleans())
def test_batch_sampler_matches_torch(n, size, drop_last):
    torch = pytest.importorskip("torch")
    ours = BatchSampler(SequentialSampler(range(n)), size, drop_last)
    theirs = torch.utils.data.BatchSampler(range(n), size, drop_last)
    assert list(ours) == list(theirs)
    assert len(ours) == len(theirs)


def test_batch_sampler_errors_like_torch():
    torch = pytest.importorskip("torch")
    for args in [(0, False), (True, False), (2.5, False), (2, 1)]:
        with pytest.raises(ValueError) as ours:
            BatchSampler(range(4), *args)
        with pytest.raises(ValueError) as theirs:
            torch.utils.data.BatchSampler(range(4), *args)
        assert str(ours.value) == str(theirs.value)


@given(n=st.integers(1, 40), replicas=st.integers(1, 5), drop_last=st.booleans())
def test_distributed_sampler_without_shuffle_matches_torch(n, replicas, drop_last):
    torch = pytest.importorskip("torch")
    for rank in range(replicas):
        ours = DistributedSampler(range(n), replicas, rank, shuffle=False,
                                  drop_last=drop_last)
        theirs = torch.utils.data.DistributedSampler(
            range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        assert list(ours) == list(theirs)
        assert len(ours) == len(theirs)
        assert ours.total_size == theirs.total_size


@given(n=st.integers(1, 40), replicas=st.integers(1, 5), seed=st.integers(0, 99))
def test_distributed_sampler_shards_are_disjoint_and_complete(n, replicas, seed):
    shards = [list(DistributedSampler(range(n), replicas, r, seed=seed))
              for r in range(replicas)]
    assert all(len(s) == len(shards[0]) for s in shards)
    flat = [i for s in shards for i in s]
    assert set(flat) == set(range(n))
    assert len(flat) - n == (-n) % replicas       # only the padding repeats
    dropped = [list(DistributedSampler(range(n), replicas, r, seed=seed,
                                       drop_last=True)) for r in range(replicas)]
    flat = [i for s in dropped for i in s]
    assert len(flat) == len(set(flat)) == n - n % replicas


def test_distributed_sampler_set_epoch():
    s = DistributedSampler(range(20), 2, 0, seed=3)
    first = list(s)
    assert list(s) == first
    s.set_epoch(1)
    second = list(s)
    assert second != first
    other = DistributedSampler(range(20), 2, 1, seed=3)
    other.set_epoch(1)
    assert sorted(second + list(other)) == list(range(20))


def test_distributed_sampler_errors():
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the "
                                         r"interval \[0, 1\]"):
        DistributedSampler(range(4), 2, 2)
    with pytest.raises(ValueError, match="Invalid rank -1"):
        DistributedSampler(range(4), 2, -1)


def test_distributed_sampler_without_a_process_group():
    try:
        from cygrad import distributed as dist
    except ImportError:
        dist = None
    if dist is not None and getattr(dist, "is_initialized", lambda: False)():
        pytest.skip("a process group is initialized in this process")
    with pytest.raises(RuntimeError, match="DistributedSampler"):
        DistributedSampler(range(4))
    with pytest.raises(RuntimeError, match="num_replicas"):
        DistributedSampler(range(4), num_replicas=2)


def test_distributed_sampler_asks_the_process_group(monkeypatch):
    import sys
    import types
    fake = types.ModuleType("cygrad.distributed")
    fake.is_available = lambda: True
    fake.is_initialized = lambda: True
    fake.get_world_size = lambda: 3
    fake.get_rank = lambda: 1
    monkeypatch.setitem(sys.modules, "cygrad.distributed", fake)
    monkeypatch.setattr(cygrad, "distributed", fake, raising=False)
    s = DistributedSampler(range(10), shuffle=False)
    assert (s.num_replicas, s.rank) == (3, 1)
    assert list(s) == [1, 4, 7, 0]
    fake.is_initialized = lambda: False
    with pytest.raises(RuntimeError, match="process group has not been initialized"):
        DistributedSampler(range(10))
    fake.is_available = lambda: False
    with pytest.raises(RuntimeError, match="not available"):
        DistributedSampler(range(10))
