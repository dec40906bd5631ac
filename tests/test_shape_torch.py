"""Shape ops of issue 17 against torch on the same inputs: values, shapes,
gradients, which results are views (sharing storage and the version
counter), the in-place metadata ops, and torch's errors.  Random-input
cases of every op also run through ``reference.CASES``."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import cygrad
from cygrad.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(3)
X = RNG.standard_normal((2, 3, 4))


def _run(m, fn, arrays):
    xs = [m.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    out = fn(m, *xs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    total = None
    for k, o in enumerate(outs):
        if o.requires_grad:
            w = np.linspace(-1.0, 1.0 + k, o.numel()).reshape(tuple(o.shape))
            term = (o * m.tensor(w, dtype=o.dtype)).sum()
            total = term if total is None else total + term
    grads = None
    if total is not None:
        total.backward()
        grads = [None if x.grad is None else x.grad.numpy() for x in xs]
    return [o.detach().numpy() for o in outs], grads


def same(fn, *arrays):
    """fn(torch, ...) and fn(cygrad, ...) give equal outputs (values, shapes,
    dtypes, count) and equal gradients of a weighted sum of them."""
    want, want_g = _run(torch, fn, arrays)
    got, got_g = _run(cygrad, fn, arrays)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    assert (got_g is None) == (want_g is None)
    for g, w in zip(got_g or (), want_g or ()):
        assert (g is None) == (w is None)
        if w is not None:
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def raises_like(fn, exc, match):
    for m in (torch, cygrad):
        with pytest.raises(exc, match=match):
            fn(m)


# --- views ----------------------------------------------------------------------------------

VIEWS = {
    "narrow": lambda x: x.narrow(1, 1, 2),
    "split": lambda x: x.split(2, -1)[1],
    "split_sizes": lambda x: x.split([1, 2], 1)[1],
    "chunk": lambda x: x.chunk(2, 2)[0],
    "unbind": lambda x: x.unbind(1)[2],
    "movedim": lambda x: x.movedim(0, 2),
    "moveaxis": lambda x: x.moveaxis(2, 0),
    "swapaxes": lambda x: x.swapaxes(0, 1),
    "swapdims": lambda x: x.swapdims(2, 1),
    "unfold": lambda x: x.unfold(2, 2, 1),
    "broadcast_to": lambda x: x[:, :1].broadcast_to((5, 2, 3, 4)),
    "meshgrid": lambda x: None,
}


@pytest.mark.parametrize("name", [n for n in VIEWS if n != "meshgrid"])
def test_views_share_storage_and_version(name):
    fn = VIEWS[name]
    base = cygrad.arange(24.0).reshape(2, 3, 4).clone()
    v = fn(base)
    assert np.shares_memory(v.numpy(), base.numpy())
    assert v._base is base
    ver = base._version
    with cygrad.no_grad():
        base.mul_(2)
    assert v._version == base._version == ver + 1
    np.testing.assert_array_equal(
        v.numpy(), fn(torch.arange(24.0).reshape(2, 3, 4) * 2).numpy())


def test_copies_are_not_views():
    base = cygrad.arange(24.0).reshape(2, 3, 4)
    for fn in (lambda x: x.flip(0), lambda x: x.roll(1, 0), lambda x: x.repeat(2, 1, 1),
               lambda x: x.tile((2,)), lambda x: x.repeat_interleave(2, 0)):
        assert not np.shares_memory(fn(base).numpy(), base.numpy())


def test_write_through_a_split_view_differentiates():
    # torch refuses in-place writes to the views of a multi-view op; cygrad
    # allows them, with torch's gradient for the same write through narrow.
    def prog(m, a, split):
        b = a * 1.0
        top, bottom = b.split(1, 0) if split else (b.narrow(0, 0, 1),
                                                   b.narrow(0, 1, 1))
        top.mul_(3.0)
        return (b * b).sum() + (bottom * 2).sum()
    x = cygrad.tensor(X, requires_grad=True)
    prog(cygrad, x, True).backward()
    t = torch.tensor(X, requires_grad=True)
    prog(torch, t, False).backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    with pytest.raises(RuntimeError, match="multiple views"):
        prog(torch, torch.tensor(X, requires_grad=True), True)


def test_in_place_write_through_an_unfold_window_view():
    def prog(m, a):
        b = a * 1.0
        w = b.unfold(2, 2, 2)
        w[:, :, 0] = 5.0
        return b * b
    same(prog, X)


# --- split, chunk, unbind, narrow ---------------------------------------------------------------

def test_split_chunk_unbind_narrow_match_torch():
    same(lambda m, x: m.split(x, 2, dim=2), X)
    same(lambda m, x: x.split([1, 0, 2], 1), X)
    same(lambda m, x: x.split(5, 0), X)
    same(lambda m, x: x.split(split_size=2, dim=2), X)
    same(lambda m, x: m.chunk(x, 3, 2), X)
    same(lambda m, x: x.chunk(5, -1), X)
    same(lambda m, x: m.chunk(x, 2, 1), X)
    same(lambda m, x: m.unbind(x, -1), X)
    same(lambda m, x: x.unbind(), X)
    same(lambda m, x: m.narrow(x, -1, -3, 2), X)
    same(lambda m, x: x.narrow(0, 0, 0), X)
    same(lambda m, x: m.narrow(x, 1, m.tensor(1), 2), X)


def test_only_some_pieces_used():
    same(lambda m, x: m.split(x, 1, 1)[1] * 3, X)
    same(lambda m, x: m.unbind(x, 2)[0].exp(), X)


def test_piece_errors():
    raises_like(lambda m: m.split(m.ones(4), [1, 2]), RuntimeError,
                "split_with_sizes expects split_sizes to sum exactly to 4")
    raises_like(lambda m: m.chunk(m.ones(4), 0), RuntimeError,
                "chunk expects `chunks` to be greater than 0")
    raises_like(lambda m: m.narrow(m.ones(4), 0, 3, 2), RuntimeError,
                r"start \(3\) \+ length \(2\) exceeds dimension size \(4\)")
    raises_like(lambda m: m.narrow(m.ones(4), 0, 5, 0), IndexError,
                "start out of range")
    raises_like(lambda m: m.unbind(m.ones(4), 1), IndexError, "Dimension out of range")


def test_split_gradgrad():
    x = cygrad.tensor(X, requires_grad=True)
    assert gradgradcheck(lambda t: [p * p for p in t.split([1, 2], 1)], [x])
    assert gradgradcheck(lambda t: t.unbind(2)[1] ** 3, [x])


# --- movedim, swapaxes, broadcast -----------------------------------------------------------------

def test_movedim_swapaxes_broadcast():
    same(lambda m, x: m.movedim(x, (0, 2), (2, 0)), X)
    same(lambda m, x: m.moveaxis(x, -1, 0), X)
    same(lambda m, x: m.movedim(x, [1], [2]), X)
    same(lambda m, x: m.swapaxes(x, 0, -1), X)
    same(lambda m, x: m.swapdims(x, 1, 2), X)
    same(lambda m, x: m.broadcast_to(x, (3, 2, 3, 4)), X)
    same(lambda m, x: m.broadcast_to(x[:, :1], (-1, 3, 4)), X)
    same(lambda m, x, y: m.broadcast_tensors(x, y, x[0, 0]), X, X[0, :, :1])
    raises_like(lambda m: m.broadcast_tensors(m.ones(2), m.ones(3)), RuntimeError,
                r"The size of tensor a \(2\) must match the size of tensor b \(3\) at "
                "non-singleton dimension 0")
    same(lambda m, x, y, z: m.broadcast_tensors(x, y, z), np.ones((2, 1)),
         np.ones(3), np.ones((4, 1, 1)))
    raises_like(lambda m: m.movedim(m.ones(2, 3), (0, 1), (0,)), RuntimeError,
                "movedim: Invalid source or destination dims")
    raises_like(lambda m: m.movedim(m.ones(2, 3), (0, 0), (0, 1)), RuntimeError,
                "repeated dim in `source`")


# --- flip, roll ------------------------------------------------------------------------------------

def test_flip_roll():
    same(lambda m, x: m.flip(x, [0, 2]), X)
    same(lambda m, x: x.flip(-1), X)
    same(lambda m, x: m.flip(x, ()), X)
    same(lambda m, x: m.fliplr(x), X)
    same(lambda m, x: m.flipud(x), X)
    same(lambda m, x: m.roll(x, 3), X)
    same(lambda m, x: m.roll(x, -7, 2), X)
    same(lambda m, x: x.roll((1, 2), (0, -1)), X)
    same(lambda m, x: m.roll(x, (1, 1), (2, 2)), X)
    same(lambda m, x: m.roll(x, 2, 0), np.arange(5.0))
    raises_like(lambda m: m.fliplr(m.ones(3)), RuntimeError, "Input must be >= 2-d")
    raises_like(lambda m: m.roll(m.ones(3, 2), (1, 2), 0), RuntimeError,
                "shifts and dimensions must align")
    raises_like(lambda m: m.flip(m.ones(3, 2), (0, 0)), RuntimeError,
                "dim 0 appears multiple times")


# --- stacking, repeating -----------------------------------------------------------------------

def test_hstack_vstack_dstack_and_cat_aliases():
    a, b = X[0], X[1]
    same(lambda m, x, y: m.hstack([x, y]), a, b)
    same(lambda m, x, y: m.vstack((x, y)), a, b)
    same(lambda m, x, y: m.dstack([x, y]), a, b)
    same(lambda m, x, y: m.hstack([x[0], y[0]]), a, b)
    same(lambda m, x, y: m.vstack([x[0], y[0]]), a, b)
    same(lambda m, x, y: m.dstack([x[0, 0], y[0, 0]]), a, b)
    same(lambda m, x, y: m.dstack([x, y.unsqueeze(-1)]), a, b)
    same(lambda m, x, y: m.vstack([x, y[0, 0]]), np.ones((2, 1)), b)
    same(lambda m, x, y: m.concat([x, y], 1), a, b)
    same(lambda m, x, y: m.concatenate((x, y), dim=-1), a, b)
    same(lambda m, x, y: m.cat((x, y), axis=0), a, b)


def test_repeat_tile():
    same(lambda m, x: x.repeat(2, 1, 3), X)
    same(lambda m, x: x.repeat((1, 2, 1, 2)), X)
    same(lambda m, x: x.repeat(0, 1, 1), X)
    same(lambda m, x: m.tile(x, (2,)), X)
    same(lambda m, x: x.tile((2, 1, 1, 1)), X)
    same(lambda m, x: m.tile(x[0, 0, 0], (3, 2)), X)
    raises_like(lambda m: m.ones(2, 3).repeat(2), RuntimeError,
                "Number of dimensions of repeat dims can not be smaller")


def test_repeat_interleave():
    same(lambda m, x: m.repeat_interleave(x, 2), X)
    same(lambda m, x: x.repeat_interleave(3, dim=-1), X)
    same(lambda m, x: x.repeat_interleave(2, 1, output_size=6), X)
    same(lambda m, x: m.repeat_interleave(x, m.tensor([2, 0, 1]), dim=1), X)
    same(lambda m, x: m.repeat_interleave(x, m.tensor([3]), dim=0), X)
    same(lambda m, x: m.repeat_interleave(x, m.tensor(2)), X)
    same(lambda m, x: m.repeat_interleave(x, 2, axis=0), X)
    same(lambda m, x: m.repeat_interleave(x[0, 0, 0], 3), X)
    same(lambda m, r: m.repeat_interleave(r), np.array([2, 0, 3, 1]))
    same(lambda m, r: m.repeat_interleave(r), np.array([], dtype=np.int64))
    raises_like(lambda m: m.repeat_interleave(m.ones(3), m.tensor([1, 2]), dim=0),
                RuntimeError, "repeats must have the same size as input along dim")
    raises_like(lambda m: m.repeat_interleave(m.ones(3), -1), RuntimeError,
                "Repeats must be non-negative")
    raises_like(lambda m: m.repeat_interleave(m.ones(3), m.tensor([1, -1, 1])),
                RuntimeError, "repeats can not be negative")


def test_repeat_gradgrad():
    x = cygrad.tensor(X, requires_grad=True)
    assert gradgradcheck(lambda t: t.repeat(2, 1, 2) ** 2, [x])
    assert gradgradcheck(lambda t: t.repeat_interleave(cygrad.tensor([1, 3, 0]), 1)
                         ** 2, [x])


# --- meshgrid --------------------------------------------------------------------------------------

def test_meshgrid():
    a, b, c = np.arange(3.0), np.arange(4.0) * 2, np.array([5.0, 7.0])
    same(lambda m, x, y: m.meshgrid(x, y, indexing="ij"), a, b)
    same(lambda m, x, y: m.meshgrid(x, y, indexing="xy"), a, b)
    same(lambda m, x, y, z: m.meshgrid([x, y, z], indexing="xy"), a, b, c)
    same(lambda m, x, y, z: m.meshgrid(x, y, z, indexing="ij"), a, b, c)
    same(lambda m, x: m.meshgrid(x, indexing="xy"), a)
    same(lambda m, x, y: m.meshgrid(x[0], y, indexing="ij"), a, b)
    for m in (torch, cygrad):
        with pytest.warns(UserWarning, match="indexing argument"):
            m.meshgrid(m.ones(2), m.ones(3))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            m.meshgrid(m.ones(2), m.ones(3), indexing="ij")
    g = cygrad.meshgrid(cygrad.arange(3.0), cygrad.arange(2.0), indexing="ij")
    assert g[0]._base is not None


# --- unfold --------------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [(2, 2, 1), (2, 3, 2), (0, 1, 1), (1, 3, 3),
                                  (-1, 4, 1), (2, 1, 5), (1, 2, 7)])
def test_unfold(args):
    same(lambda m, x: x.unfold(*args), X)


def test_unfold_errors_and_second_order():
    raises_like(lambda m: m.ones(4).unfold(0, 5, 1), RuntimeError,
                "maximum size for tensor at dimension 0 is 4 but size is 5")
    raises_like(lambda m: m.ones(4).unfold(0, 2, 0), RuntimeError, "step is 0")
    x = cygrad.tensor(X, requires_grad=True)
    assert gradcheck(lambda t: t.unfold(2, 3, 1), [x])
    assert gradgradcheck(lambda t: t.unfold(1, 2, 1) ** 2, [x])
    same(lambda m, x: x.unfold(0, 1, 1), np.array(3.0))


# --- view_as, reshape_as, type_as, in-place metadata ops ----------------------------------

def test_as_methods():
    same(lambda m, x: x.view_as(m.ones(6, 4)), X)
    same(lambda m, x: x.transpose(0, 2).reshape_as(m.ones(4, 6)), X)
    same(lambda m, x: x.type_as(m.ones(1, dtype=m.float32)), X)
    same(lambda m, x: x.type_as(m.ones(1, dtype=m.int64)), X)
    v = cygrad.arange(6.0).view_as(cygrad.ones(2, 3))
    assert v._base is not None


def test_in_place_metadata_ops():
    def prog(m, a):
        b = a * 2.0
        b.unsqueeze_(1)
        c = b * 1.0
        c.squeeze_()
        d = c[0] * 1.0
        d.t_()
        e = d * 1.0
        e.squeeze_(0)
        f = (c * 3.0).transpose_(0, 2)
        return [b, c, d, e, f]
    same(prog, X)
    for m in (torch, cygrad):
        t = m.ones(2, 1, 3)
        assert t.squeeze_() is t and tuple(t.shape) == (2, 3)
        assert t.unsqueeze_(0) is t and tuple(t.shape) == (1, 2, 3)
        u = m.ones(2, 3)
        assert u.t_() is u and tuple(u.shape) == (3, 2)
    raises_like(lambda m: m.ones(2, 1, requires_grad=True).squeeze_(), RuntimeError,
                "a leaf Variable that requires grad is being used in an in-place")
    raises_like(lambda m: m.ones(2, 2, 2).t_(), RuntimeError, "expects a tensor with")
    for m in (torch, cygrad):
        with m.no_grad():
            leaf = m.ones(2, 1, requires_grad=True)
            leaf.squeeze_()
        assert leaf.is_leaf and leaf.requires_grad and tuple(leaf.shape) == (2,)


# --- hypothesis ----------------------------------------------------------------------------------

@settings(max_examples=30, deadline=None)
@given(arr=hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=5),
                      elements=st.floats(-3, 3)),
       data=st.data())
def test_shape_ops_hypothesis(arr, data):
    nd = arr.ndim
    dim = data.draw(st.integers(-nd, nd - 1))
    n = arr.shape[dim]
    shift = data.draw(st.integers(-7, 7))
    size = data.draw(st.integers(1, 3))
    reps = data.draw(st.integers(0, 3))
    same(lambda m, x: m.roll(x, shift, dim), arr)
    same(lambda m, x: m.split(x, size, dim), arr)
    same(lambda m, x: m.chunk(x, size, dim), arr)
    same(lambda m, x: m.repeat_interleave(x, reps, dim), arr)
    same(lambda m, x: x.repeat(*([1] * (nd - 1) + [reps])), arr)
    if size <= n:
        step = data.draw(st.integers(1, 3))
        same(lambda m, x: x.unfold(dim, size, step), arr)


@pytest.mark.parametrize("shapes", [((2, 3), (3, 2)), ((4, 3, 2), (4, 3)),
                                    ((4, 3, 2), (2, 3)), ((4, 3, 2), (0,)),
                                    ((5, 1, 4), (3, 7, 4)), ((2, 3, 4), (3, 5, 4))])
def test_broadcast_error_names_the_last_mismatch_as_torch(shapes):
    """torch compares sizes from the last dimension and reports the first
    mismatch it meets (the tensors tutorial prints it)."""
    messages = []
    for m in (cygrad, torch):
        with pytest.raises(RuntimeError) as err:
            m.ones(*shapes[0]) * m.ones(*shapes[1])
        messages.append(str(err.value))
    assert messages[0].startswith(messages[1])


VIEW_OPS = {
    "view": lambda x: x.view(4, 6), "reshape": lambda x: x.reshape(-1),
    "transpose": lambda x: x.transpose(0, 2), "permute": lambda x: x.permute(2, 0, 1),
    "t": lambda x: x.view(4, 6).t(), "mT": lambda x: x.mT, "T": lambda x: x.view(4, 6).T,
    "unsqueeze": lambda x: x.unsqueeze(1), "squeeze": lambda x: x[:, :1].squeeze(1),
    "movedim": lambda x: x.movedim(0, 2), "flatten": lambda x: x.flatten(1),
}


@pytest.mark.parametrize("name", sorted(VIEW_OPS))
def test_compiled_views_match_torch(name):
    """The views with compiled nodes (ViewNode, PermuteNode): torch's node
    name, values, storage and version shared with the input, first and
    second derivatives."""
    got = {}
    for m in (cygrad, torch):
        x = m.tensor(np.arange(24.0).reshape(2, 3, 4), requires_grad=True)
        base = x * 1
        out = VIEW_OPS[name](base)
        weight = m.tensor(np.linspace(-1, 2, out.numel()).reshape(tuple(out.shape)))
        g, = m.autograd.grad((out * out * weight).sum(), x, create_graph=True)
        gg, = m.autograd.grad(g.sum(), x)
        base.add_(1)                     # the view sees the in-place update
        got[m] = (out.grad_fn.name(), out.detach().numpy().copy(), g.detach().numpy(),
                  gg.numpy())
    assert got[cygrad][0] == got[torch][0]
    for a, b in zip(got[cygrad][1:], got[torch][1:], strict=True):
        np.testing.assert_array_equal(a, b)
