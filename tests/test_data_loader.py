"""DataLoader in the main process: batches against torch with shuffle=False
(the order then depends on no random number), the options' rules and errors,
and the TensorDataset fast path against the general path."""

import collections

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_data_collate import plain

import cygrad
from cygrad.utils.data import (
    BatchSampler,
    DataLoader,
    Dataset,
    IterableDataset,
    SequentialSampler,
    Subset,
    TensorDataset,
    default_collate,
    random_split,
)

Pair = collections.namedtuple("Pair", "image label")


class Records(Dataset):
    """A bit of everything default_collate handles, per sample."""

    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(f"index {i} out of range")
        x = np.arange(4, dtype=np.float32) + i
        return {"x": x, "label": i % 3, "weight": i / 2, "name": f"s{i}",
                "pair": Pair(x * 2, i)}

    def __len__(self):
        return self.n


class Stream(IterableDataset):
    def __init__(self, n, length=True):
        self.n = n
        self.length = length

    def __iter__(self):
        for i in range(self.n):
            yield np.array([i, -i], dtype=np.int64)

    def __len__(self):
        if not self.length:
            raise TypeError("no len")
        return self.n


def _torch_stream(torch, n):
    class TorchStream(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter(Stream(n))

        def __len__(self):
            return n
    return TorchStream()


def _same_batches(ours, theirs):
    a, b = [plain(x) for x in ours], [plain(x) for x in theirs]
    assert a == b
    return a


@pytest.mark.parametrize("batch_size, drop_last", [
    (1, False), (3, False), (3, True), (4, True), (10, False), (11, True),
    (None, False),
])
def test_batches_match_torch(batch_size, drop_last):
    torch = pytest.importorskip("torch")
    ds = Records(10)
    ours = DataLoader(ds, batch_size=batch_size, drop_last=drop_last)
    theirs = torch.utils.data.DataLoader(ds, batch_size=batch_size,
                                         drop_last=drop_last)
    assert len(ours) == len(theirs)
    batches = _same_batches(ours, theirs)
    assert len(batches) == len(ours)


@given(n=st.integers(1, 25), batch_size=st.integers(1, 7), drop_last=st.booleans(),
       width=st.integers(1, 3))
def test_tensor_dataset_batches_match_torch(n, batch_size, drop_last, width):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(n).standard_normal((n, width)).astype(np.float32)
    y = np.arange(n) % 4
    ours = DataLoader(TensorDataset(cygrad.tensor(x), cygrad.tensor(y)),
                      batch_size=batch_size, drop_last=drop_last)
    theirs = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y)),
        batch_size=batch_size, drop_last=drop_last)
    assert len(ours) == len(theirs)
    _same_batches(ours, theirs)


def _general_path(batch):
    return default_collate(batch)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool", "float16"])
def test_fast_path_equals_stacking_each_sample(dtype):
    rng = np.random.default_rng(0)
    x = cygrad.tensor((rng.standard_normal((13, 2, 3)) * 3).astype(dtype))
    y = cygrad.tensor(rng.integers(0, 5, 13))
    ds = TensorDataset(x, y)
    subset = Subset(Subset(ds, list(range(12, -1, -1))), [0, 5, 2, 7, 9, 11, 1])
    for data in (ds, subset):
        for shuffle in (False, True):
            fast = DataLoader(data, batch_size=4, shuffle=shuffle,
                              generator=cygrad.Generator().manual_seed(1))
            slow = DataLoader(data, batch_size=4, shuffle=shuffle,
                              generator=cygrad.Generator().manual_seed(1),
                              collate_fn=_general_path)
            assert iter(fast)._fetcher.read_tensors is not None     # the fast path
            assert iter(slow)._fetcher.read_tensors is None
            fb, sb = [plain(b) for b in fast], [plain(b) for b in slow]
            assert fb == sb and len(fb) == len(fast)
            assert all(b[0] == "list" for b in fb)


def test_fast_path_keeps_autograd():
    w = cygrad.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad=True)
    (xb,) = next(iter(DataLoader(TensorDataset(w), batch_size=2)))
    assert xb.requires_grad
    xb.sum().backward()
    assert w.grad.tolist() == [[1.0, 1.0], [1.0, 1.0], [0.0, 0.0]]


def test_fast_path_general_indices():
    ds = TensorDataset(cygrad.arange(6))
    # negative indices from a custom sampler read the same items as one by one
    batches = list(DataLoader(ds, batch_sampler=[[-1, 0], [5, -6]]))
    assert [b[0].tolist() for b in batches] == [[5, 0], [5, 0]]
    with pytest.raises(IndexError):
        list(DataLoader(ds, batch_sampler=[[0, 6]]))
    with pytest.raises(IndexError):       # an empty batch: default_collate([])
        list(DataLoader(ds, batch_sampler=[[]]))


def test_batch_size_none_converts_without_batching():
    torch = pytest.importorskip("torch")
    ds = Records(3)
    _same_batches(DataLoader(ds, batch_size=None),
                  torch.utils.data.DataLoader(ds, batch_size=None))
    sample = next(iter(DataLoader(ds, batch_size=None)))
    assert isinstance(sample["x"], cygrad.Tensor) and sample["label"] == 0


def test_batch_sampler_and_sampler_options():
    torch = pytest.importorskip("torch")
    ds = Records(7)
    bs = [[6, 0], [3], [1, 2, 4]]
    _same_batches(DataLoader(ds, batch_sampler=bs),
                  torch.utils.data.DataLoader(ds, batch_sampler=bs))
    order = [5, 1, 3, 3]
    _same_batches(DataLoader(ds, sampler=order, batch_size=3),
                  torch.utils.data.DataLoader(ds, sampler=order, batch_size=3))
    loader = DataLoader(ds, batch_sampler=BatchSampler(SequentialSampler(ds), 2,
                                                       True))
    assert len(loader) == 3 and loader.batch_size is None


def test_iterable_dataset_matches_torch():
    torch = pytest.importorskip("torch")
    for bs, drop in [(None, False), (1, False), (3, False), (3, True), (20, False)]:
        ours = DataLoader(Stream(8), batch_size=bs, drop_last=drop)
        theirs = torch.utils.data.DataLoader(_torch_stream(torch, 8), batch_size=bs,
                                             drop_last=drop)
        assert len(ours) == len(theirs)
        _same_batches(ours, theirs)
    with pytest.raises(TypeError):
        len(DataLoader(Stream(3, length=False)))


def test_shuffle_is_a_reproducible_permutation_new_each_epoch():
    ds = TensorDataset(cygrad.arange(40))
    loader = DataLoader(ds, batch_size=8, shuffle=True)
    cygrad.manual_seed(11)
    epochs = [[i for b in loader for i in b[0].tolist()] for _ in range(3)]
    for e in epochs:
        assert sorted(e) == list(range(40))
    assert epochs[0] != epochs[1] != epochs[2]
    cygrad.manual_seed(11)
    assert [i for b in loader for i in b[0].tolist()] == epochs[0]
    g1, g2 = cygrad.Generator().manual_seed(4), cygrad.Generator().manual_seed(4)
    a = [b[0].tolist() for b in DataLoader(ds, batch_size=8, shuffle=True,
                                           generator=g1)]
    b = [b[0].tolist() for b in DataLoader(ds, batch_size=8, shuffle=True,
                                           generator=g2)]
    assert a == b


def test_random_split_then_loader():
    x = cygrad.arange(20.0).reshape(10, 2)
    train, test = random_split(TensorDataset(x), [0.8, 0.2])
    seen = [r for b in DataLoader(train, batch_size=3) for r in b[0].tolist()]
    seen += [r for b in DataLoader(test, batch_size=3) for r in b[0].tolist()]
    assert sorted(seen) == x.tolist()


def _message(exc_info):
    return str(exc_info.value)


@pytest.mark.parametrize("kwargs", [
    {"num_workers": -1},
    {"timeout": -1},
    {"prefetch_factor": 2},
    {"persistent_workers": True},
    {"shuffle": True, "sampler": [0, 1]},
    {"batch_sampler": [[0]], "batch_size": 2},
    {"batch_sampler": [[0]], "shuffle": True},
    {"batch_sampler": [[0]], "drop_last": True},
    {"batch_sampler": [[0]], "sampler": [0]},
    {"batch_size": None, "drop_last": True},
    {"multiprocessing_context": "fork"},
])
def test_option_errors_match_torch(kwargs):
    torch = pytest.importorskip("torch")
    ds = Records(4)
    with pytest.raises(ValueError) as ours:
        DataLoader(ds, **kwargs)
    with pytest.raises(ValueError) as theirs:
        torch.utils.data.DataLoader(ds, **kwargs)
    assert _message(ours) == _message(theirs)


@pytest.mark.parametrize("kwargs", [{"shuffle": True}, {"sampler": [0]},
                                    {"batch_sampler": [[0]]}])
def test_iterable_dataset_option_errors_match_torch(kwargs):
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError) as ours:
        DataLoader(Stream(3), **kwargs)
    with pytest.raises(ValueError) as theirs:
        torch.utils.data.DataLoader(_torch_stream(torch, 3), **kwargs)
    assert _message(ours).split(", but")[0] == _message(theirs).split(", but")[0]


def test_context_errors():
    with pytest.raises(ValueError, match="valid start method"):
        DataLoader(Records(2), num_workers=1, multiprocessing_context="nope")
    with pytest.raises(TypeError, match="valid context object"):
        DataLoader(Records(2), num_workers=1, multiprocessing_context=3)


def test_attributes_are_frozen_after_init():
    loader = DataLoader(Records(4), batch_size=2)
    for attr in ("batch_size", "sampler", "batch_sampler", "drop_last", "dataset",
                 "persistent_workers"):
        with pytest.raises(ValueError, match=f"{attr} attribute should not be set "
                                             "after DataLoader is initialized"):
            setattr(loader, attr, None)
    loader.num_workers = 0         # not protected, as in torch
    assert loader.pin_memory is False


def test_pin_memory_is_accepted():
    loader = DataLoader(TensorDataset(cygrad.arange(4)), batch_size=2,
                        pin_memory=True, pin_memory_device="cpu")
    with pytest.warns(UserWarning):
        assert [b[0].tolist() for b in loader] == [[0, 1], [2, 3]]


@pytest.mark.parametrize("device", ["", "cpu"])
def test_pin_memory_warns_at_each_iterator_as_torch_without_accelerator(device):
    """torch on a machine without an accelerator warns that pin_memory=True
    does nothing (karpathy/makemore's loader sets it), once per iterator."""
    import warnings
    torch = pytest.importorskip("torch")

    def messages(m):
        loader = m.utils.data.DataLoader(m.utils.data.TensorDataset(m.arange(4)),
                                         batch_size=2, pin_memory=True,
                                         pin_memory_device=device)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            for _ in range(2):
                assert [b[0].tolist() for b in loader] == [[0, 1], [2, 3]]
        return [(type(x.message), str(x.message)) for x in w]

    if torch.accelerator.is_available():
        pytest.skip("torch sees an accelerator here")
    ours = messages(cygrad)
    assert ours == messages(torch) and len(ours) == (4 if device else 2)


def test_errors_in_the_main_process_propagate_unchanged():
    class Broken(Dataset):
        def __getitem__(self, i):
            raise KeyError(f"missing {i}")

        def __len__(self):
            return 3
    with pytest.raises(KeyError, match="missing 0"):
        next(iter(DataLoader(Broken())))


def test_example_runs():
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get(
        "PYTHONPATH", ""))
    out = subprocess.run([sys.executable, os.path.join(root, "examples",
                                                       "data_loading.py")],
                         capture_output=True, text=True, timeout=120, env=env,
                         cwd=root, check=False)
    assert out.returncode == 0, out.stderr
    assert "epoch 1: 15 batches, 960 samples" in out.stdout
    assert "Feature batch shape: (64, 1, 28, 28)" in out.stdout
    assert "2 workers give the batches of the main process: True" in out.stdout


def test_a_tensor_collate_registered_by_the_user_is_honoured():
    from cygrad.utils.data import default_collate_fn_map
    from cygrad.utils.data._collate import _collate_tensor

    def first(batch, *, collate_fn_map):
        return batch[0]

    ds = TensorDataset(cygrad.arange(6))
    default_collate_fn_map[cygrad.Tensor] = first
    try:
        batches = [b[0].tolist() for b in DataLoader(ds, batch_size=3)]
    finally:
        default_collate_fn_map[cygrad.Tensor] = _collate_tensor
    assert batches == [0, 3]
    assert [b[0].tolist() for b in DataLoader(ds, batch_size=3)] == [[0, 1, 2],
                                                                     [3, 4, 5]]
