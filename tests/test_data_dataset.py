"""Datasets and random_split: values against torch, splits by their contract."""

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_data_collate import plain

import cygrad
from cygrad.utils.data import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return i * i

    def __len__(self):
        return self.n


class Count(IterableDataset):
    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi

    def __iter__(self):
        return iter(range(self.lo, self.hi))

    def __len__(self):
        return self.hi - self.lo


def _xy(n=6):
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    y = np.arange(n, dtype=np.int64)
    return x, y


def test_tensor_dataset_matches_torch():
    torch = pytest.importorskip("torch")
    x, y = _xy()
    ours = TensorDataset(cygrad.tensor(x), cygrad.tensor(y))
    theirs = torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y))
    assert len(ours) == len(theirs) == 6
    for i in [0, 3, 5, -1, -6]:
        assert plain(ours[i]) == plain(theirs[i])
    assert plain(ours[[1, 4]]) == plain(theirs[[1, 4]])
    assert plain(ours[1:3]) == plain(theirs[1:3])


def test_tensor_dataset_errors():
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(cygrad.zeros(3, 2), cygrad.zeros(4))
    with pytest.raises(IndexError):
        TensorDataset(cygrad.zeros(3))[3]


def test_base_classes_raise_not_implemented():
    with pytest.raises(NotImplementedError, match="should implement __getitem__"):
        Dataset()[0]
    with pytest.raises(NotImplementedError, match="should implement __iter__"):
        iter(IterableDataset())


def test_subset_and_getitems():
    ds = Squares(10)
    sub = Subset(ds, [9, 2, 5])
    assert len(sub) == 3
    assert [sub[i] for i in range(3)] == [81, 4, 25]
    assert sub[-1] == 25
    assert sub.__getitems__([2, 0]) == [25, 81]
    nested = Subset(sub, [2, 0])
    assert [nested[0], nested[1]] == [25, 81]
    assert nested.__getitems__([1, 0]) == [81, 25]
    t = TensorDataset(cygrad.arange(10))
    assert Subset(t, [3, 1])[[0, 1]][0].tolist() == [3, 1]


def test_concat_dataset_matches_torch():
    torch = pytest.importorskip("torch")
    parts = [Squares(3), Squares(0), Squares(4)]
    ours = ConcatDataset(parts)
    theirs = torch.utils.data.ConcatDataset(parts)
    assert ours.cumulative_sizes == theirs.cumulative_sizes == [3, 3, 7]
    assert [ours[i] for i in range(-7, 7)] == [theirs[i] for i in range(-7, 7)]
    with pytest.raises(ValueError, match="absolute value of index"):
        ours[-8]
    with pytest.raises(IndexError):
        ours[7]
    added = Squares(2) + Squares(3)
    assert isinstance(added, ConcatDataset) and [added[i] for i in range(5)] == \
        [0, 1, 0, 1, 4]


def test_concat_dataset_errors():
    with pytest.raises(AssertionError, match="datasets should not be an empty"):
        ConcatDataset([])
    with pytest.raises(AssertionError, match="does not support IterableDataset"):
        ConcatDataset([Count(0, 2)])


def test_chain_dataset():
    chained = Count(0, 2) + Count(5, 7)
    assert isinstance(chained, ChainDataset)
    assert list(chained) == [0, 1, 5, 6] and len(chained) == 4


def test_stack_dataset():
    a, b = Squares(4), TensorDataset(cygrad.arange(4) * 10)
    tup = StackDataset(a, b)
    assert len(tup) == 4
    assert tup[2][0] == 4 and tup[2][1][0].item() == 20
    dct = StackDataset(sq=a, ten=b)
    assert dct[3]["sq"] == 9 and dct[3]["ten"][0].item() == 30
    assert [s["sq"] for s in dct.__getitems__([1, 3])] == [1, 9]
    assert [s[0] for s in tup.__getitems__([0, 2])] == [0, 4]
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(Squares(2), Squares(3))
    with pytest.raises(ValueError, match="At least one dataset"):
        StackDataset()
    with pytest.raises(ValueError, match="but both types are given"):
        StackDataset(a, x=a)


@given(n=st.integers(0, 60), lengths=st.lists(st.integers(0, 20), min_size=1,
                                              max_size=5))
def test_random_split_lengths_partition(n, lengths):
    total = sum(lengths)
    ds = Squares(total)
    parts = random_split(ds, lengths, generator=cygrad.Generator().manual_seed(n))
    assert [len(p) for p in parts] == lengths
    seen = sorted(i for p in parts for i in p.indices)
    assert seen == list(range(total))


@pytest.mark.parametrize("n, fractions", [
    (10, [0.3, 0.3, 0.4]), (11, [0.5, 0.5]), (7, [0.1, 0.2, 0.7]),
    (100, [0.25] * 4), (5, [1.0]), (3, [0.4, 0.4, 0.2]), (13, [0.33, 0.33, 0.34]),
])
def test_random_split_fractions_match_torch_lengths(n, fractions):
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = random_split(Squares(n), fractions)
        theirs = torch.utils.data.random_split(Squares(n), fractions)
    assert [len(p) for p in ours] == [len(p) for p in theirs]
    assert sorted(i for p in ours for i in p.indices) == list(range(n))


def test_random_split_is_reproducible_and_random():
    ds = Squares(50)
    a = random_split(ds, [20, 30], generator=cygrad.Generator().manual_seed(7))
    b = random_split(ds, [20, 30], generator=cygrad.Generator().manual_seed(7))
    c = random_split(ds, [20, 30], generator=cygrad.Generator().manual_seed(8))
    assert a[0].indices == b[0].indices and a[1].indices == b[1].indices
    assert a[0].indices != c[0].indices
    cygrad.manual_seed(3)
    d = random_split(ds, [0.5, 0.5])
    cygrad.manual_seed(3)
    e = random_split(ds, [0.5, 0.5])
    assert d[0].indices == e[0].indices
    assert d[0].indices != list(range(25))


def test_random_split_errors_like_torch():
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        random_split(Squares(5), [2, 2])
    with pytest.raises(ValueError, match="Fraction at index 1 is not between 0 and 1"):
        random_split(Squares(5), [0.5, 1.5, -1.0])
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(Squares(2), [0.9, 0.1])


def test_datasets_and_samplers_are_generic_like_torch():
    from cygrad.utils.data import DataLoader, Sampler

    class Ints(Dataset[int]):
        def __getitem__(self, i):
            return i * 10

        def __len__(self):
            return 3

    class Backwards(Sampler[int]):
        def __iter__(self):
            return iter([2, 1, 0])

    batches = [b.tolist() for b in DataLoader(Ints(), sampler=Backwards())]
    assert batches == [[20], [10], [0]]
