"""Indexing against torch: hypothesis draws shapes and mixed indices (ints,
negative ints, slices, None, Ellipsis, int lists, ranges, int tensors of 0-2
dims, bool lists and masks, True/False), and getitem, setitem and their
gradients must match torch exactly; errors match torch's types and are
raised before anything is written."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cygrad

torch = pytest.importorskip("torch")


@st.composite
def mixed_index(draw, shape):
    """A recipe (list of parts) for an index into ``shape``; ``build`` turns
    it into the same index for torch and for cygrad."""
    parts = []
    dim = 0
    ell = False
    while dim < len(shape):
        n = shape[dim]
        kinds = ["int", "slice", "full", "list", "range", "tensor", "tensor2d",
                 "tensor0d", "boollist", "mask", "none", "bool"]
        if not ell:
            kinds.append("ellipsis")
        kind = draw(st.sampled_from(kinds))
        if kind == "int":
            parts.append(("int", draw(st.integers(-n, n - 1))))
        elif kind == "slice":
            parts.append(("slice", slice(draw(st.one_of(st.none(), st.integers(-n, n))),
                                         draw(st.one_of(st.none(), st.integers(-n, n))),
                                         draw(st.one_of(st.none(), st.integers(1, 3))))))
        elif kind == "full":
            parts.append(("slice", slice(None)))
        elif kind in ("list", "tensor"):
            parts.append((kind, draw(st.lists(st.integers(-n, n - 1), min_size=1,
                                              max_size=4))))
        elif kind == "range":
            a = draw(st.integers(0, n - 1))
            parts.append(("range", range(a, draw(st.integers(a, n)))))
        elif kind == "tensor2d":
            parts.append(("tensor", [[draw(st.integers(-n, n - 1))] * 2] * 2))
        elif kind == "tensor0d":
            parts.append(("tensor0d", draw(st.integers(-n, n - 1))))
        elif kind == "boollist":
            parts.append(("boollist", draw(st.lists(st.booleans(), min_size=n,
                                                    max_size=n))))
        elif kind == "mask":
            k = draw(st.integers(1, len(shape) - dim))
            sub = shape[dim:dim + k]
            bits = draw(st.lists(st.booleans(), min_size=int(np.prod(sub)),
                                 max_size=int(np.prod(sub))))
            parts.append(("mask", np.array(bits, bool).reshape(sub)))
            dim += k
            continue
        elif kind == "none":
            parts.append(("none", None))
            continue
        elif kind == "bool":
            parts.append(("bool", draw(st.booleans())))
            continue
        else:
            ell = True
            parts.append(("ellipsis", Ellipsis))
            dim = len(shape)
            continue
        dim += 1
        if draw(st.integers(0, 3)) == 0:
            break       # fewer indices than dims
    return parts


def build(m, parts):
    out = []
    for kind, v in parts:
        if kind in ("int", "slice", "none", "bool", "ellipsis", "range", "boollist"):
            out.append(v)
        elif kind == "list":
            out.append(list(v))
        elif kind == "tensor":
            out.append(m.tensor(v))
        elif kind == "tensor0d":
            out.append(m.tensor(v))
        else:
            out.append(m.tensor(v))
    return tuple(out)


SHAPES = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)


def _run(m, arr, parts, seed):
    x = m.tensor(arr, requires_grad=True)
    y = x[build(m, parts)]
    w = m.tensor(np.random.default_rng(seed).uniform(-1, 1, tuple(y.shape)))
    (y * w).sum().backward()
    return y.detach().numpy(), x.grad.numpy()


def _outcome(fn):
    try:
        return "ok", fn()
    except Exception as e:  # noqa: BLE001 - the types are compared
        return "error", type(e)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), shape=SHAPES)
def test_getitem_and_its_gradient_match_torch(data, shape):
    parts = data.draw(mixed_index(shape))
    arr = np.random.default_rng(0).uniform(-1, 1, shape)
    want = _outcome(lambda: _run(torch, arr, parts, 1))
    got = _outcome(lambda: _run(cygrad, arr, parts, 1))
    assert got[0] == want[0], (parts, want, got)
    if want[0] == "error":
        assert got[1] is want[1] or issubclass(got[1], want[1]), (parts, want, got)
        return
    (yw, gw), (yg, gg) = want[1], got[1]
    assert yg.shape == yw.shape, parts
    np.testing.assert_array_equal(yg, yw)
    np.testing.assert_allclose(gg, gw, rtol=1e-12, atol=1e-15)


def _run_set(m, arr, parts, vshape, seed):
    a = m.tensor(arr, requires_grad=True)
    rng = np.random.default_rng(seed)
    v = m.tensor(rng.uniform(-1, 1, vshape), requires_grad=True)
    x = a * 2
    x[build(m, parts)] = v * 3
    w = m.tensor(rng.uniform(-1, 1, tuple(x.shape)))
    (x * x * w).sum().backward()
    return x.detach().numpy(), a.grad.numpy(), v.grad.numpy()


@settings(max_examples=200, deadline=None)
@given(data=st.data(), shape=SHAPES)
def test_setitem_and_its_gradients_match_torch(data, shape):
    parts = data.draw(mixed_index(shape))
    arr = np.random.default_rng(0).uniform(-1, 1, shape)
    try:
        target = tuple(torch.zeros(shape)[build(torch, parts)].shape)
    except IndexError:
        return
    # A value of the target's shape, or one that broadcasts to it.
    k = data.draw(st.integers(0, len(target)))
    vshape = tuple(1 if data.draw(st.booleans()) else s for s in target[k:])
    want = _outcome(lambda: _run_set(torch, arr, parts, vshape, 2))
    got = _outcome(lambda: _run_set(cygrad, arr, parts, vshape, 2))
    assert got[0] == want[0], (parts, vshape, want, got)
    if want[0] == "error":
        return
    xw, aw, vw = want[1]
    xg, ag, vg = got[1]
    # Repeated indices: torch writes them in order on the CPU (the last
    # wins) and so does cygrad.
    np.testing.assert_array_equal(xg, xw)
    np.testing.assert_allclose(ag, aw, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(vg, vw, rtol=1e-12, atol=1e-14)


def test_wrong_length_mask_raises_for_getitem_and_setitem():
    x = cygrad.arange(12.0).reshape(4, 3)
    msg = (r"The shape of the mask \[3\] at index 0 does not match the shape of "
           r"the indexed tensor \[4, 3\] at index 0")
    for mask in (cygrad.tensor([True, False, True]), [True, False, True]):
        with pytest.raises(IndexError, match=msg):
            x[mask]
        with pytest.raises(IndexError, match=msg):
            x[mask] = 0.0
    with pytest.raises(IndexError, match=r"mask \[2\] at index 0 .* \[4, 3\] at "
                                         r"index 1"):
        x[:, cygrad.tensor([True, False])]
    with pytest.raises(IndexError, match=r"mask \[4, 2\] at index 1 .* at index 1"):
        x[cygrad.ones(4, 2, dtype=cygrad.bool)] = 1.0
    with pytest.raises(IndexError, match=r"mask \[3\] at index 0 .* at index 2"):
        cygrad.zeros(2, 4, 5)[..., cygrad.tensor([True, True, False])]
    assert x.tolist() == np.arange(12.0).reshape(4, 3).tolist() and x._version == 0


def test_makemore_dlogits_update():
    rng = np.random.default_rng(0)
    logits, yb = rng.standard_normal((8, 27)), rng.integers(0, 27, 8)
    res = []
    for m in (torch, cygrad):
        d = m.tensor(logits).softmax(1)
        d[range(8), m.tensor(yb)] -= 1
        d /= 8
        res.append(d.numpy())
    np.testing.assert_allclose(res[1], res[0], rtol=1e-12)


def test_repeated_indices_last_write_wins_and_index_put_accumulates():
    for m in (torch, cygrad):
        x = m.zeros(4)
        x[m.tensor([1, 1, 3, 1])] = m.tensor([1.0, 2.0, 3.0, 4.0])
        assert x.tolist() == [0.0, 4.0, 0.0, 3.0]


def test_setitem_index_errors_change_nothing():
    x = cygrad.arange(6.0).reshape(2, 3)
    for bad, err in ((lambda: x.__setitem__(([0, 1], [2, 3]), 1.0), IndexError),
                     (lambda: x.__setitem__(([0, 1], [0, 1, 2]), 1.0), IndexError),
                     (lambda: x.__setitem__([[0, 2]], 1.0), IndexError),
                     (lambda: x.__setitem__([0, 1], cygrad.ones(3, 3)), RuntimeError)):
        with pytest.raises(err):
            bad()
    assert x.tolist() == [[0, 1, 2], [3, 4, 5]] and x._version == 0


def test_ints_apply_before_advanced_indices_as_torch():
    x = cygrad.zeros(3, 4, 5)
    assert x[0, :, [1, 2]].shape == (4, 2)
    assert x[cygrad.tensor(0), :, [1, 2]].shape == (4, 2)
    assert x[[0, 1], :, [1, 2]].shape == (2, 4)
    assert x[:, [0, 1], None, [1, 2]].shape == (2, 3, 1)


def test_lists_read_as_tuples_like_torch():
    x = cygrad.arange(12).reshape(3, 4)
    assert x[[[0, 1], [1, 2]]].tolist() == [1, 6]
    assert x[[slice(None), [0, 1]]].shape == (3, 2)
    assert x[[0, None]].shape == (1, 4)
    assert x[[[0, 1]] * 40].shape == (40, 2, 4)   # 32 or more: one index
    assert x[np.array([[0, 1], [1, 2]])].shape == (2, 2, 4)


def test_byte_mask_is_a_mask_with_torchs_warning():
    x = cygrad.arange(3.0)
    with pytest.warns(UserWarning, match="uint8 is now deprecated"):
        assert x[cygrad.tensor([1, 0, 1], dtype=cygrad.uint8)].tolist() == [0.0, 2.0]


@pytest.mark.parametrize("dtype", ["int8", "int16", "float32"])
def test_other_index_dtypes_are_refused(dtype):
    with pytest.raises(IndexError, match="tensors used as indices must be long, "
                                         "int, byte or bool"):
        cygrad.zeros(3)[cygrad.tensor([0], dtype=getattr(cygrad, dtype))]


def test_int32_index_works():
    x = cygrad.arange(5.0)
    assert x[cygrad.tensor([4, 0], dtype=cygrad.int32)].tolist() == [4.0, 0.0]
