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


# --- the indexing helpers against torch -------------------------------------------------

def _i(m, v):
    return m.tensor(v, dtype=m.int64)


_M = [[True, False, True, False], [False, False, True, True], [True, True, False,
                                                                 False]]

# (label, fn(m, x) -> tensor, input shape); every fn runs on torch and cygrad.
HELPERS = [
    ("gather1", lambda m, x: x.gather(1, _i(m, [[0, 0, 3], [1, 2, 1], [3, 3, 3]])),
     (3, 4)),
    ("gather0", lambda m, x: m.gather(x, 0, _i(m, [[2, 0, 1, 1]])), (3, 4)),
    ("gather_small", lambda m, x: x.gather(1, _i(m, [[1], [0]])), (3, 4)),
    ("gather3d", lambda m, x: x.gather(-1, _i(m, [[[1, 1]], [[0, 2]]])), (2, 3, 3)),
    ("gather_int32", lambda m, x: x.gather(1, m.tensor([[0], [2], [1]],
                                                        dtype=m.int32)), (3, 4)),
    ("take_along_dim", lambda m, x: m.take_along_dim(x, _i(m, [[1], [0], [-1]]), 1),
     (3, 4)),
    ("take_along_bcast", lambda m, x: x.take_along_dim(_i(m, [[[0], [1]]]), 2),
     (3, 1, 4)),
    ("take_along_none", lambda m, x: m.take_along_dim(x, _i(m, [5, 0, 5])), (3, 4)),
    ("take", lambda m, x: m.take(x, _i(m, [[0, 11], [-1, 5]])), (3, 4)),
    ("scatter_src", lambda m, x: x.scatter(1, _i(m, [[0, 2], [1, 3], [2, 2]]),
                                           x[:, :2] * 3), (3, 4)),
    # (torch's backward fails for a src larger than the index: src detached)
    ("scatter_big_src", lambda m, x: m.scatter(x, 0, _i(m, [[1, 0]]),
                                               (x * 2).detach()), (3, 4)),
    ("scatter_value", lambda m, x: x.scatter(0, _i(m, [[2, 1, 0, 2]]), 1.5), (3, 4)),
    ("scatter_add", lambda m, x: x.scatter_add(1, _i(m, [[0, 0], [3, 3], [1, 0]]),
                                               x[:, 1:3] ** 2), (3, 4)),
    ("scatter_add_fn", lambda m, x: m.scatter_add(x, 0, _i(m, [[2, 2, 2, 2]]),
                                                  x[1:2].exp()), (3, 4)),
    ("index_select", lambda m, x: x.index_select(1, _i(m, [3, 0, 0])), (3, 4)),
    ("index_select_fn", lambda m, x: m.index_select(x, 0, _i(m, [2, 1])), (3, 4)),
    ("index_select_0d", lambda m, x: x.index_select(0, _i(m, 2)), (3, 4)),
    ("index_add", lambda m, x: x.index_add(0, _i(m, [2, 0, 2]), x * 2), (3, 4)),
    ("index_add_alpha", lambda m, x: m.index_add(x, 1, _i(m, [1, 1]), x[:, :2],
                                                 alpha=-0.5), (3, 4)),
    ("index_copy", lambda m, x: x.index_copy(1, _i(m, [3, 0]), x[:, 1:3] * 2), (3, 4)),
    ("index_fill", lambda m, x: x.index_fill(1, _i(m, [0, -1]), -2.0), (3, 4)),
    ("index_put", lambda m, x: x.index_put((_i(m, [0, 2, 0]), _i(m, [1, 1, 1])),
                                           x[0, :3] * 4), (3, 4)),
    ("index_put_acc", lambda m, x: x.index_put((_i(m, [0, 2, 0]),), x[1] * 4,
                                               accumulate=True), (3, 4)),
    ("index_put_mask", lambda m, x: x.index_put((m.tensor(_M),), m.tensor(1.0,
                                                dtype=x.dtype)), (3, 4)),
    ("masked_fill", lambda m, x: x.masked_fill(m.tensor(_M), float("-inf")), (3, 4)),
    ("masked_fill_bcast", lambda m, x: x.masked_fill(m.tensor([True, False, True,
                                                               False]), 2.0), (3, 4)),
    ("masked_fill_bcast_in", lambda m, x: m.masked_fill(x, m.tensor(_M), 0.5),
     (3, 1)),
    ("masked_select", lambda m, x: x.masked_select(m.tensor(_M)), (3, 4)),
    ("masked_select_bcast", lambda m, x: m.masked_select(x, m.tensor(_M)), (4,)),
    ("masked_scatter", lambda m, x: x.masked_scatter(m.tensor(_M), x[::-1 if False
                                                                    else 1] * 3),
     (3, 4)),
    ("tril", lambda m, x: x.tril(), (3, 4)),
    ("tril_k", lambda m, x: m.tril(x, -1), (2, 3, 4)),
    ("triu", lambda m, x: m.triu(x, 1), (4, 3)),
    ("triu_neg", lambda m, x: x.triu(-2), (2, 4, 4)),
    ("diag_1d", lambda m, x: m.diag(x), (4,)),
    ("diag_1d_k", lambda m, x: x.diag(-2), (3,)),
    ("diag_2d", lambda m, x: m.diag(x, 1), (3, 4)),
    ("diagonal", lambda m, x: x.diagonal(), (3, 4)),
    ("diagonal_3d", lambda m, x: m.diagonal(x, -1, 2, 0), (3, 2, 4)),
    ("diagonal_far", lambda m, x: x.diagonal(7), (3, 4)),
    ("diag_embed", lambda m, x: m.diag_embed(x), (2, 3)),
    ("diag_embed_k", lambda m, x: x.diag_embed(1, 0, 2), (2, 3)),
    ("trace", lambda m, x: m.trace(x), (3, 4)),
    ("select", lambda m, x: x.select(1, -1), (3, 4)),
    ("select_fn", lambda m, x: m.select(x, 0, m.tensor(1)), (3, 4)),
    ("put", lambda m, x: x.put(_i(m, [0, 5]), x[1, :2] * 3), (3, 4)),
    ("put_acc", lambda m, x: m.put(x, _i(m, [0, 0]), x[2, :2] * 3, accumulate=True),
     (3, 4)),
    ("trace_method", lambda m, x: (x * x).trace(), (4, 4)),
]


@pytest.mark.parametrize("label,fn,shape", HELPERS, ids=[h[0] for h in HELPERS])
def test_helper_values_and_gradients_match_torch(label, fn, shape):
    arr = np.random.default_rng(len(label)).uniform(-1, 1, shape)
    res = []
    for m in (torch, cygrad):
        x = m.tensor(arr, requires_grad=True)
        y = fn(m, x)
        w = m.tensor(np.random.default_rng(5).uniform(-1, 1, tuple(y.shape)))
        yv = y.detach().numpy().copy()
        (m.where(m.isinf(y), m.zeros_like(y), y) * w).sum().backward() \
            if hasattr(m, "isinf") else (y * w).sum().backward()
        res.append((yv, y.dtype, x.grad.numpy()))
    (yw, dw, gw), (yg, dg, gg) = res
    assert str(dg).split(".")[-1] == str(dw).split(".")[-1]
    assert yg.shape == yw.shape
    np.testing.assert_array_equal(yg, yw)
    np.testing.assert_allclose(gg, gw, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("label,fn,shape", HELPERS, ids=[h[0] for h in HELPERS])
def test_helper_gradcheck_and_gradgradcheck(label, fn, shape):
    if label in ("scatter_src", "index_put", "scatter_big_src"):
        # Repeated writes (torch's gradient gathers to every repeat, while
        # only the last write counts numerically) or a detached source.
        return
    arr = np.random.default_rng(3).uniform(0.5, 1.5, shape)
    x = cygrad.tensor(arr, requires_grad=True)

    def f(t):
        y = fn(cygrad, t)
        return cygrad.where(y == float("-inf"), 0.0, y) if label == "masked_fill" \
            else y

    assert cygrad.autograd.gradcheck(f, (x,))
    if f(x).numel():
        assert cygrad.autograd.gradgradcheck(f, (x,))


def _vals(t):
    return t.tolist() if hasattr(t, "tolist") else t


NONDIFF = [
    ("nonzero", lambda m, x: m.nonzero(x > 0)),
    ("nonzero_tuple", lambda m, x: (x > 0).nonzero(as_tuple=True)),
    ("nonzero_0d", lambda m, x: m.nonzero(x[0, 0] * 0 + 1)),
    ("nonzero_0d_tuple", lambda m, x: m.nonzero(x[0, 0] * 0 + 1, as_tuple=True)),
    ("argwhere", lambda m, x: m.argwhere(x > 0.2)),
    ("where1", lambda m, x: m.where(x < 0)),
    ("where1_0d", lambda m, x: m.where(m.tensor(3))),
    ("searchsorted", lambda m, x: m.searchsorted(m.tensor([-0.5, 0.0, 0.5]), x)),
    ("searchsorted_right", lambda m, x: m.searchsorted(m.tensor([-1, 0, 0, 1]),
                                                       m.tensor([[0, 2], [-1, 0]]),
                                                       right=True)),
    ("searchsorted_side", lambda m, x: m.searchsorted(m.tensor([1, 3, 5]), 3,
                                                      side="right")),
    ("searchsorted_nd", lambda m, x: m.searchsorted(m.tensor([[1, 3, 5], [2, 4, 6]]),
                                                    m.tensor([[3, 0], [3, 7]]))),
    ("searchsorted_int32", lambda m, x: m.searchsorted(m.tensor([1, 3]),
                                                       m.tensor([2]), out_int32=True)),
    ("searchsorted_sorter", lambda m, x: m.searchsorted(
        m.tensor([5, 1, 3]), m.tensor([2, 4]), sorter=_i(m, [1, 2, 0]))),
    ("bucketize", lambda m, x: m.bucketize(x, m.tensor([-0.5, 0.0, 0.5]))),
    ("bucketize_right", lambda m, x: m.bucketize(m.tensor([[1, 3], [6, 0]]),
                                                 m.tensor([1, 3, 5]), right=True)),
    ("bucketize_scalar", lambda m, x: m.bucketize(3, m.tensor([1, 3, 5]))),
    ("tril_indices", lambda m, x: m.tril_indices(3, 4, 1)),
    ("triu_indices", lambda m, x: m.triu_indices(4, 3, -1)),
    ("tril_indices_empty", lambda m, x: m.tril_indices(0, 3)),
    ("int_gather", lambda m, x: m.arange(12).reshape(3, 4).gather(0, _i(m, [[2, 1]]))),
    ("int_masked_fill", lambda m, x: m.arange(3).masked_fill(m.tensor([True, False,
                                                                        True]), 2.7)),
    ("int_trace", lambda m, x: m.ones(3, 3, dtype=m.int64).trace()),
    ("bool_tril", lambda m, x: m.ones(3, 3, dtype=m.bool).tril()),
    ("scatter_reduce_add", lambda m, x: m.arange(12.0).reshape(3, 4).scatter(
        0, _i(m, [[1, 0]]), m.ones(1, 2) * 2, reduce="add")),
    ("scatter_multiply", lambda m, x: m.arange(12.0).reshape(3, 4).scatter(
        0, _i(m, [[1, 0]]), 2.0, reduce="multiply")),
    ("scatter_reduce_mean_excl", lambda m, x: m.arange(12.0).reshape(3, 4)
     .scatter_reduce(0, _i(m, [[1, 1]]), m.ones(1, 2), "mean", include_self=False)),
    ("scatter_reduce_int_mean", lambda m, x: m.arange(12).reshape(3, 4)
     .scatter_reduce(0, _i(m, [[1, 1, 0, 0]]), m.ones(1, 4, dtype=m.int64) * 4,
                     "mean")),
]


@pytest.mark.parametrize("label,fn", NONDIFF, ids=[h[0] for h in NONDIFF])
def test_nondifferentiable_helpers_match_torch(label, fn):
    arr = np.random.default_rng(1).uniform(-1, 1, (3, 4))
    want = fn(torch, torch.tensor(arr))
    got = fn(cygrad, cygrad.tensor(arr))
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        pairs = list(zip(want, got))
    else:
        pairs = [(want, got)]
    for w, g in pairs:
        assert tuple(g.shape) == tuple(w.shape)
        assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1]
        np.testing.assert_array_equal(g.numpy(), w.numpy())


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("zeros", [False, True])
def test_scatter_reduce_values_and_gradients_match_torch(reduce, include_self, zeros):
    rng = np.random.default_rng(0)
    xa = rng.uniform(0.5, 2, (3, 4))
    sa = rng.uniform(0.5, 2, (4, 4))
    if zeros:
        xa[0, 1] = 0.0
        sa[1, 1] = sa[2, 2] = sa[3, 2] = 0.0
    if reduce in ("amax", "amin"):
        sa[1, 0] = sa[3, 0] = xa[0, 0]      # ties share the gradient
        xa, sa = np.round(xa, 1), np.round(sa, 1)
    idx = [[0, 0, 2, 1], [0, 1, 0, 1], [2, 2, 0, 1], [0, 1, 0, 1]]
    wa = rng.uniform(-1, 1, (3, 4))
    res = []
    for m in (torch, cygrad):
        x = m.tensor(xa, requires_grad=True)
        s = m.tensor(sa, requires_grad=True)
        y = x.scatter_reduce(0, _i(m, idx), s, reduce, include_self=include_self)
        w = m.tensor(wa)
        (y * w).sum().backward()
        res.append((y.detach().numpy(), x.grad.numpy(), s.grad.numpy()))
    for a, b in zip(res[1], res[0]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "prod"])
def test_scatter_reduce_gradgradcheck(reduce):
    rng = np.random.default_rng(1)
    x = cygrad.tensor(rng.uniform(0.5, 2, (3, 4)), requires_grad=True)
    s = cygrad.tensor(rng.uniform(0.5, 2, (2, 4)), requires_grad=True)
    idx = _i(cygrad, [[0, 2, 2, 1], [0, 1, 0, 1]])

    def f(a, b):
        return a.scatter_reduce(0, idx, b, reduce)

    assert cygrad.autograd.gradcheck(f, (x, s))
    assert cygrad.autograd.gradgradcheck(f, (x, s))


INPLACE = [
    ("scatter_", lambda m, x: x.scatter_(1, _i(m, [[0], [2], [1]]), 7.0)),
    ("scatter_src", lambda m, x: x.scatter_(0, _i(m, [[2, 0]]), m.ones(1, 2,
                                                                     dtype=x.dtype))),
    ("scatter_add", lambda m, x: x.scatter_add_(0, _i(m, [[2, 2, 2, 0]]),
                                                m.ones(1, 4, dtype=x.dtype))),
    ("scatter_reduce_", lambda m, x: x.scatter_reduce_(1, _i(m, [[0, 0]] * 3),
                                                       m.ones(3, 2, dtype=x.dtype) * 3,
                                                       "amax")),
    ("scatter_multiply", lambda m, x: x.scatter_(1, _i(m, [[0, 0]] * 3), 2.0,
                                                 reduce="multiply")),
    ("index_add_", lambda m, x: x.index_add_(1, _i(m, [0, 0, 3]), m.ones(
        3, 3, dtype=x.dtype), alpha=2)),
    ("index_copy_", lambda m, x: x.index_copy_(0, _i(m, [2]), m.zeros(1, 4,
                                                                      dtype=x.dtype))),
    ("index_fill_", lambda m, x: x.index_fill_(1, _i(m, [1, 2]), m.tensor(-1.0,
                                                                          dtype=x.dtype))),
    ("index_put_", lambda m, x: x.index_put_((_i(m, [0, 1]), _i(m, [3, 3])),
                                             m.tensor(5.0, dtype=x.dtype))),
    ("index_put_acc", lambda m, x: x.index_put_((_i(m, [0, 0]),), m.ones(
        4, dtype=x.dtype), accumulate=True)),
    ("masked_fill_", lambda m, x: x.masked_fill_(x > 0, 0.25)),
    ("masked_fill_0d", lambda m, x: x.masked_fill_(m.tensor([True, False, False,
                                                              True]),
                                                    m.tensor(3.0))),
    ("masked_scatter_", lambda m, x: x.masked_scatter_(x < 0, m.arange(
        12.0, dtype=x.dtype))),
    ("tril_", lambda m, x: x.tril_()),
    ("triu_", lambda m, x: x.triu_(1)),
    ("put_", lambda m, x: x.put_(_i(m, [0, 11]), m.tensor([9.0, 8.0], dtype=x.dtype))),
    ("put_acc", lambda m, x: x.put_(_i(m, [3, 3]), m.tensor([9.0, 8.0],
                                                            dtype=x.dtype),
                                    accumulate=True)),
]


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("label,fn", INPLACE, ids=[h[0] for h in INPLACE])
def test_inplace_helpers_match_torch(label, fn, grad):
    if grad and label == "scatter_multiply":
        return      # torch: "derivative for aten::scatter_ is not implemented"
    arr = np.random.default_rng(2).uniform(-1, 1, (3, 4))
    res = []
    for m in (torch, cygrad):
        a = m.tensor(arr, requires_grad=grad)
        x = a * 1.0
        v = x._version
        out = fn(m, x)
        assert out is x and x._version > v
        if grad:
            (x * x).sum().backward()
        res.append((x.detach().numpy(), a.grad.numpy() if grad else None))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-12, atol=1e-15)
    if grad:
        np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-12, atol=1e-15)


ERRORS = [
    ("gather_oob", lambda m, x: x.gather(1, _i(m, [[0, 5]] * 3)), RuntimeError,
     "index 5 is out of bounds for dimension 1 with size 4"),
    ("gather_neg", lambda m, x: x.gather(1, _i(m, [[-1]])), RuntimeError,
     "index -1 is out of bounds"),
    ("gather_ndim", lambda m, x: x.gather(1, _i(m, [0])), RuntimeError,
     "same number of dimensions"),
    ("gather_big", lambda m, x: x.gather(1, m.zeros(4, 1, dtype=m.int64)),
     RuntimeError, "Size does not match at dimension 0"),
    ("gather_float", lambda m, x: x.gather(1, m.zeros(3, 1)), RuntimeError,
     "Expected dtype int32/int64 for index"),
    ("scatter_oob", lambda m, x: x.scatter(0, _i(m, [[3, 0]]), 1.0), RuntimeError,
     "index 3 is out of bounds for dimension 0 with size 3"),
    ("scatter_src_small", lambda m, x: x.scatter(0, _i(m, [[1, 0, 2]]), m.ones(
        1, 2, dtype=x.dtype)), RuntimeError, "to be no larger size than src"),
    ("scatter_reduce_bad", lambda m, x: x.scatter(0, _i(m, [[1]]), 2.0,
                                                  reduce="sum"), RuntimeError,
     "reduce argument must be either add or multiply"),
    ("scatter_add_oob_", lambda m, x: x.scatter_add_(0, _i(m, [[0, 7]]), m.ones(
        1, 2, dtype=x.dtype)), RuntimeError, "index 7 is out of bounds"),
    ("index_select_oob", lambda m, x: x.index_select(0, _i(m, [3])), IndexError,
     "index out of range in self"),
    ("index_select_2d", lambda m, x: x.index_select(0, _i(m, [[0]])), IndexError,
     "Index is supposed to be a vector"),
    ("index_add_oob", lambda m, x: x.index_add(0, _i(m, [3]), m.ones(
        1, 4, dtype=x.dtype)), RuntimeError, "index 3 is out of bounds"),
    ("index_add_oob_", lambda m, x: x.index_add_(0, _i(m, [-1]), m.ones(
        1, 4, dtype=x.dtype)), RuntimeError, "index -1 is out of bounds"),
    ("index_add_shape", lambda m, x: x.index_add(0, _i(m, [1]), m.ones(
        2, 4, dtype=x.dtype)), RuntimeError, r"Number of indices \(1\)"),
    ("index_copy_oob", lambda m, x: x.index_copy_(0, _i(m, [3]), m.ones(
        1, 4, dtype=x.dtype)), IndexError, "index 3 is out of bounds"),
    ("index_fill_oob", lambda m, x: x.index_fill_(1, _i(m, [4]), 1.0), IndexError,
     "index 4 is out of bounds"),
    ("index_put_oob", lambda m, x: x.index_put_((_i(m, [5]),), m.tensor(
        1.0, dtype=x.dtype)), IndexError, "index 5 is out of bounds"),
    ("take_oob", lambda m, x: x.take(_i(m, [12])), IndexError,
     "out of range: tried to access index 12 on a tensor of 12 elements"),
    ("put_oob", lambda m, x: x.put_(_i(m, [-13]), m.tensor([1.0], dtype=x.dtype)),
     IndexError, "out of range: tried to access index -13"),
    ("masked_fill_int_mask", lambda m, x: x.masked_fill(m.ones(3, 4, dtype=m.int64),
                                                        1.0), RuntimeError,
     "masked_fill_ only supports boolean masks, but got mask with dtype"),
    ("masked_fill_1d_value", lambda m, x: x.masked_fill(x > 0, m.tensor([1.0])),
     RuntimeError, "only supports a 0-dimensional value tensor"),
    ("masked_fill__bcast", lambda m, x: x[:, :1].masked_fill_(m.ones(
        3, 4, dtype=m.bool), 1.0), RuntimeError,
     r"output with shape \[3, 1\] doesn't match the broadcast shape \[3, 4\]"),
    ("masked_select_int", lambda m, x: x.masked_select(m.ones(4, dtype=m.int64)),
     RuntimeError, "masked_select: expected BoolTensor for mask"),
    ("masked_scatter_small", lambda m, x: x.masked_scatter(x > -2, m.ones(
        3, dtype=x.dtype)), RuntimeError, "Number of elements of source < number of "
     "ones in mask"),
    ("searchsorted_side", lambda m, x: m.searchsorted(m.tensor([1, 2]), 1, right=True,
                                                      side="left"), RuntimeError,
     "side and right can't be set to opposites"),
    ("searchsorted_nd", lambda m, x: m.searchsorted(m.ones(2, 3), m.ones(3, 1)),
     RuntimeError, "boundaries tensor should be 1 dimension or the first N-1"),
    ("bucketize_2d", lambda m, x: m.bucketize(m.tensor([3]), m.ones(1, 3)),
     RuntimeError, r"boundaries tensor must be 1 dimension, but got dim\(2\)"),
    ("diag_3d", lambda m, x: m.diag(m.ones(2, 2, 2)), RuntimeError,
     "diag\\(\\): Supports 1D or 2D tensors. Got 3D"),
    ("diagonal_same_dims", lambda m, x: m.diagonal(x, 0, 1, 1), RuntimeError,
     "diagonal dimensions cannot be identical 1, 1"),
    ("trace_1d", lambda m, x: m.trace(m.ones(3)), RuntimeError,
     "trace: expected a matrix, but got tensor with dim 1"),
    ("tril_1d", lambda m, x: m.tril(m.ones(3)), RuntimeError,
     "tril: input tensor must have at least 2 dimensions"),
    ("tril_indices_neg", lambda m, x: m.tril_indices(-1, 3), RuntimeError,
     "row must be non-negative"),
    ("select_oob", lambda m, x: x.select(0, 3), IndexError,
     r"select\(\): index 3 out of range for tensor of size \[3, 4\] at dimension 0"),
    ("select_dim", lambda m, x: x.select(2, 0), IndexError, "Dimension out of range"),
]


@pytest.mark.parametrize("label,fn,err,msg", ERRORS, ids=[e[0] for e in ERRORS])
def test_helper_errors_match_torch_and_change_nothing(label, fn, err, msg):
    arr = np.arange(12.0).reshape(3, 4)
    for m in (torch, cygrad):
        x = m.tensor(arr)
        with pytest.raises(err, match=msg):
            fn(m, x)
    # torch may write part of an in-place scatter before it raises; cygrad
    # checks first.
    np.testing.assert_array_equal(x.numpy(), arr)
    assert x._version == 0


def test_diagonal_is_a_writable_view():
    x = cygrad.zeros(3, 4)
    d = x.diagonal(1)
    d += 1.0
    assert x.tolist() == [[0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]
    assert np.shares_memory(d.numpy(), x.numpy())
    y = torch.zeros(3, 4)
    y.diagonal(1).add_(1.0)
    assert y.tolist() == x.tolist()


def test_diagonal_view_write_is_differentiable():
    res = []
    for m in (torch, cygrad):
        a = m.tensor(np.arange(1.0, 10.0).reshape(3, 3), requires_grad=True)
        x = a * 2
        x.diagonal().mul_(3.0)
        (x * x).sum().backward()
        res.append((x.detach().numpy(), a.grad.numpy()))
    np.testing.assert_allclose(res[1][0], res[0][0])
    np.testing.assert_allclose(res[1][1], res[0][1])


def test_gpt_attention_mask_idiom():
    t_ = 5
    rng = np.random.default_rng(0)
    att = rng.standard_normal((2, 3, t_, t_))
    res = []
    for m in (torch, cygrad):
        bias = m.tril(m.ones(8, 8)).view(1, 1, 8, 8)
        a = m.tensor(att, requires_grad=True)
        y = a.masked_fill(bias[:, :, :t_, :t_] == 0, float("-inf")).softmax(-1)
        (y * m.tensor(att)).sum().backward()
        res.append((y.detach().numpy(), a.grad.numpy()))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-12)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-10, atol=1e-14)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), shape=st.lists(st.integers(1, 4), min_size=1, max_size=3)
       .map(tuple))
def test_gather_scatter_index_ops_match_torch_over_shapes(data, shape):
    nd = len(shape)
    dim = data.draw(st.integers(-nd, nd - 1))
    d = dim % nd
    ishape = tuple(data.draw(st.integers(1, 5)) if k == d else
                   data.draw(st.integers(1, n)) for k, n in enumerate(shape))
    idx = np.array(data.draw(st.lists(st.integers(0, shape[d] - 1),
                                      min_size=int(np.prod(ishape)),
                                      max_size=int(np.prod(ishape))))).reshape(ishape)
    vec = np.array(data.draw(st.lists(st.integers(0, shape[d] - 1), min_size=1,
                                      max_size=5)))
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=int(np.prod(shape)),
                                       max_size=int(np.prod(shape))))).reshape(shape)
    rng = np.random.default_rng(0)
    arr = rng.uniform(-1, 1, shape)
    src = rng.uniform(-1, 1, ishape)
    vsrc = rng.uniform(-1, 1, shape[:d] + (len(vec),) + shape[d + 1:])
    calls = [
        lambda m, x, s, v: x.gather(dim, m.tensor(idx)),
        lambda m, x, s, v: x.scatter_add(dim, m.tensor(idx), s),
        lambda m, x, s, v: x.index_select(dim, m.tensor(vec)),
        lambda m, x, s, v: x.index_add(dim, m.tensor(vec), v, alpha=2.0),
        lambda m, x, s, v: x.masked_fill(m.tensor(mask), 0.5),
        lambda m, x, s, v: x.masked_select(m.tensor(mask)),
        lambda m, x, s, v: m.take_along_dim(x, m.tensor(idx - shape[d] * (idx % 2)),
                                            dim),
    ]
    def run(m, call):
        x = m.tensor(arr, requires_grad=True)
        s = m.tensor(src, requires_grad=True)
        v = m.tensor(vsrc, requires_grad=True)
        y = call(m, x, s, v)
        w = m.tensor(np.random.default_rng(1).uniform(-1, 1, tuple(y.shape)))
        (y * w).sum().backward()
        return [y.detach().numpy()] + [None if t.grad is None else t.grad.numpy()
                                       for t in (x, s, v)]

    for call in calls:
        want = _outcome(lambda: run(torch, call))
        got = _outcome(lambda: run(cygrad, call))
        assert got[0] == want[0], (want, got)
        if want[0] == "error":
            assert issubclass(got[1], want[1]), (want, got)
            continue
        for a, b in zip(got[1], want[1]):
            if b is None:
                assert a is None or not a.any()
                continue
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


ZERO_DIM_CALLS = [
    lambda m: m.zeros(5).scatter_(0, m.tensor(2), value=1),
    lambda m: m.zeros(5).scatter(0, m.tensor(2), m.tensor(7.0)),
    lambda m: m.zeros(5).scatter_(0, m.tensor([2]), m.tensor(7.0)),
    lambda m: m.zeros(5).scatter_add(0, m.tensor(2), m.tensor(7.0)),
    lambda m: m.zeros(5).gather(0, m.tensor(2)),
    lambda m: m.tensor(3.0).scatter_(0, m.tensor([0]), value=1),
    lambda m: m.tensor(3.0).scatter(0, m.tensor(0), m.tensor(4.0)),
    lambda m: m.tensor(3.0).scatter(0, m.tensor([0]), m.tensor([5.0]), reduce="add"),
    lambda m: m.zeros(10).scatter_(0, m.tensor(3), value=1),
]


@pytest.mark.parametrize("call", ZERO_DIM_CALLS)
def test_zero_dim_self_index_or_src_count_as_one_element(call):
    """The data tutorial one-hot-encodes with ``zeros(10).scatter_(0,
    tensor(y), value=1)``: a 0-d index (or self, or src) is one of shape (1,)."""
    got, want = call(cygrad), call(torch)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("call", [
    lambda m: m.zeros(2, 3).scatter_(0, m.tensor(1), value=1),
    lambda m: m.zeros(2, 3).scatter(0, m.tensor([1]), 2.0),
    lambda m: m.zeros(2, 3).scatter(0, m.tensor([1]), m.ones(1)),
    lambda m: m.zeros(2, 3).gather(0, m.tensor(1))])
def test_index_rank_errors_name_self_or_input_as_torch(call):
    with pytest.raises(RuntimeError) as want:
        call(torch)
    with pytest.raises(RuntimeError) as got:
        call(cygrad)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("shape, idx", [
    ((5, 3), ([0, 1], [0, 1, 2])),
    ((5, 3, 4), ([0, 1], [0, 1, 2], [[[0, 1, 2, 3]]])),
    ((6, 3), ([[0, 1], [2, 3]], [0, 1, 2])),
])
def test_unbroadcastable_index_tensors_name_their_shapes_as_torch(shape, idx):
    """The message lists the index shapes as torch does ("[2], [3]"); cygrad
    then adds the indexed tensor's shape (a notebook cell picked rows with a
    batch of 32 and a column index of the whole data set's length)."""
    def message(m):
        x = m.zeros(shape)
        with pytest.raises(IndexError) as info:
            x[tuple(m.tensor(i) for i in idx)]
        return str(info.value)

    theirs = message(torch)
    assert message(cygrad) == f"{theirs} (indexing a tensor of shape {list(shape)})"
