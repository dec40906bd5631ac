"""default_collate / default_convert against torch on the same samples.

``plain`` turns a batch of either library into nested Python values (tensors
into dtype, shape and values), so a whole structure compares at once; the
other ``test_data_*`` modules import it.
"""

import collections

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import cygrad
from cygrad.utils.data import collate, default_collate, default_convert

Point = collections.namedtuple("Point", "x y")


def plain(x):
    """Nested Python values of a batch from cygrad or torch."""
    if hasattr(x, "detach") and hasattr(x, "dtype"):
        arr = np.asarray(x.detach().numpy())
        return ("tensor", str(x.dtype).split(".")[-1], arr.shape, arr.tolist())
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return (type(x).__name__, tuple(plain(v) for v in x))
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [plain(v) for v in x])
    if isinstance(x, dict):
        return (type(x).__name__, {k: plain(v) for k, v in x.items()})
    return (type(x).__name__, x)


def _to_torch(x, torch):
    """The same sample with cygrad tensors replaced by torch tensors."""
    if isinstance(x, cygrad.Tensor):
        return torch.from_numpy(x.numpy().copy())
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(_to_torch(v, torch) for v in x))
    if isinstance(x, (list, tuple)):
        return type(x)(_to_torch(v, torch) for v in x)
    if isinstance(x, dict):
        return type(x)((k, _to_torch(v, torch)) for k, v in x.items())
    return x


def assert_like_torch(fn_name, batch):
    torch = pytest.importorskip("torch")
    from torch.utils import data as tdata
    ours = getattr(cygrad.utils.data, fn_name)(batch)
    theirs = getattr(tdata, fn_name)(_to_torch(batch, torch))
    assert plain(ours) == plain(theirs)


SAMPLES = {
    "python_ints": [1, 2, 3],
    "python_floats": [1.5, 2.0],
    "bools": [True, False],
    "int_then_float": [1, 2.5],
    "float_then_int": [1.5, 2],
    "strings": ["a", "bc"],
    "bytes": [b"a", b"b"],
    "numpy_f32_scalars": [np.float32(1), np.float32(2)],
    "numpy_i32_scalars": [np.int32(1), np.int32(7)],
    "numpy_f64_scalars": [np.float64(1), np.float64(2)],
    "numpy_bool_scalars": [np.bool_(True), np.bool_(False)],
    "numpy_arrays": [np.zeros((2, 3)), np.ones((2, 3))],
    "numpy_f32_arrays": [np.arange(3, dtype=np.float32)] * 2,
    "numpy_0d": [np.array(3.0), np.array(4.0)],
    "tuples": [(1, 2.0), (3, 4.0)],
    "lists": [[1, 2], [3, 4]],
    "namedtuples": [Point(1, 2.0), Point(3, 4.0)],
    "dicts": [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}],
    "nested": [{"a": (np.ones(2), [1.5, "s"]), "b": {"c": 1}},
               {"a": (np.zeros(2), [2.5, "t"]), "b": {"c": 2}}],
    "ordered_dict": [collections.OrderedDict(a=1, b=2.0)] * 3,
}


@pytest.mark.parametrize("name", list(SAMPLES))
def test_default_collate_matches_torch(name):
    assert_like_torch("default_collate", SAMPLES[name])


@pytest.mark.parametrize("name", list(SAMPLES))
def test_default_convert_matches_torch(name):
    for sample in SAMPLES[name]:
        assert_like_torch("default_convert", sample)


def test_tensors_stack_along_a_new_first_dim():
    batch = [cygrad.tensor([[1.0, 2.0]]), cygrad.tensor([[3.0, 4.0]])]
    out = default_collate(batch)
    assert out.shape == (2, 1, 2) and out.dtype == cygrad.float32
    assert out.tolist() == [[[1.0, 2.0]], [[3.0, 4.0]]]
    assert_like_torch("default_collate", batch)
    assert_like_torch("default_collate", [(t, i) for i, t in enumerate(batch)])


def test_stacked_tensors_keep_the_graph():
    a = cygrad.tensor([1.0, 2.0], requires_grad=True)
    out = default_collate([a * 2, a * 3])
    out.sum().backward()
    assert a.grad.tolist() == [5.0, 5.0]


def test_default_convert_shares_numpy_memory():
    arr = np.arange(4.0)
    out = default_convert(arr)
    arr[0] = 10.0
    assert isinstance(out, cygrad.Tensor) and out.tolist()[0] == 10.0
    strings = np.array(["a", "b"])
    assert default_convert(strings) is strings


@pytest.mark.parametrize("batch, exc, match", [
    ([object()], TypeError, "batch must contain tensors, numpy arrays, numbers"),
    ([np.array(["a"]), np.array(["b"])], TypeError, "found <U1"),
    ([[1, 2], [3]], RuntimeError, "each element in list of batch should be of equal"),
    ([cygrad.zeros(2), cygrad.zeros(3)], RuntimeError, "stack expects each tensor"),
    ([None, None], TypeError, "found <class 'NoneType'>"),
])
def test_errors_like_torch(batch, exc, match):
    with pytest.raises(exc, match=match):
        default_collate(batch)
    torch = pytest.importorskip("torch")
    with pytest.raises(exc):
        torch.utils.data.default_collate(_to_torch(batch, torch))


def test_collate_with_a_custom_map():
    def first_only(batch, *, collate_fn_map):
        return batch[0]

    def joined(batch, *, collate_fn_map):
        return "".join(batch)

    fns = {int: first_only, str: joined}
    assert collate([(1, "a"), (2, "b")], collate_fn_map=fns) == [1, "ab"]
    assert collate([{"k": True}, {"k": False}], collate_fn_map=fns) == {"k": True}
    with pytest.raises(TypeError, match="found <class 'float'>"):
        collate([(1, 2.0)], collate_fn_map=fns)


leaves = st.one_of(
    st.integers(-5, 5), st.floats(-3, 3, allow_nan=False, width=32),
    st.booleans(), st.text("ab", max_size=2),
    st.sampled_from([np.float32, np.int64, np.float64]).map(
        lambda d: ("np", d)),
)


def _structures():
    return st.recursive(
        leaves,
        lambda kids: st.one_of(st.lists(kids, min_size=1, max_size=3),
                               st.lists(kids, min_size=1, max_size=3).map(tuple),
                               st.dictionaries(st.sampled_from("xyz"), kids,
                                               min_size=1, max_size=3)),
        max_leaves=6)


def _instance(template, seed):
    """A sample with ``template``'s structure and leaf types, values from seed."""
    rng = np.random.default_rng(seed)
    if isinstance(template, tuple) and len(template) == 2 and template[0] == "np":
        return rng.integers(0, 9, size=(2,)).astype(template[1])
    if isinstance(template, list):
        return [_instance(t, seed + i) for i, t in enumerate(template)]
    if isinstance(template, tuple):
        return tuple(_instance(t, seed + i) for i, t in enumerate(template))
    if isinstance(template, dict):
        return {k: _instance(v, seed + i) for i, (k, v) in enumerate(template.items())}
    if isinstance(template, bool):
        return bool(rng.integers(2))
    if isinstance(template, int):
        return int(rng.integers(-9, 9))
    if isinstance(template, float):
        return float(rng.integers(-9, 9)) / 4
    return template


@given(template=_structures(), n=st.integers(1, 4))
def test_nested_structures_match_torch(template, n):
    batch = [_instance(template, seed) for seed in range(n)]
    assert_like_torch("default_collate", batch)
    assert_like_torch("default_convert", batch[0])


@pytest.mark.parametrize("batch", [
    [cygrad.zeros(2), cygrad.ones(2, dtype=cygrad.float64)],
    [cygrad.arange(2), cygrad.ones(2)],
    [cygrad.arange(6.0).reshape(2, 3).t(), cygrad.ones(3, 2)],    # a strided view
    [cygrad.tensor(1.5), cygrad.tensor(2.5)],
    [cygrad.tensor([True]), cygrad.tensor([False])],
], ids=["f32+f64", "i64+f32", "view", "0-d", "bool"])
def test_tensor_batches_promote_like_torch(batch):
    assert_like_torch("default_collate", batch)


def test_numpy_arrays_of_mixed_dtypes_and_shapes():
    assert_like_torch("default_collate", [np.zeros(2, np.float32), np.ones(2)])
    assert_like_torch("default_collate", [np.zeros(2, np.int32), np.ones(2, np.int64)])
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal"):
        default_collate([np.zeros(2), np.zeros(3)])
