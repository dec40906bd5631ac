"""The engine's compiled cat and stack (one JoinNode, the copy in C): torch's
values, gradients, node names and layouts for every dtype and dim, inputs
that are views or outputs of multi-output nodes, double backward, and the
calls that must take the Python op (promotion, legacy empty tensors, bad
arguments, ``out=``)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cygrad
from cygrad.ops import shape as S

JOINS = {"cat": S._cat, "stack": S._stack}


def _arrays(name, shape, dim, n, dtype, seed=0):
    """n arrays that ``name`` can join along ``dim`` (cat: varied extents)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        s = list(shape)
        if name == "cat" and s:
            s[dim] = (s[dim] + i) % 4
        a = rng.standard_normal(s) * 3
        out.append(a.astype(dtype) if dtype != np.bool_ else a > 0)
    return out


def _as_torch(torch, arrays, grad):
    return [torch.tensor(a, requires_grad=grad) for a in arrays]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64,
                                   np.int32, np.uint8, np.bool_])
@pytest.mark.parametrize("name", list(JOINS))
def test_values_match_torch_every_dtype(name, dtype):
    torch = pytest.importorskip("torch")
    arrays = _arrays(name, (3, 2, 4), 1, 3, dtype)
    for dim in range(-3, 3):
        if name == "cat" and dim not in (1, -2):
            arrays_d = _arrays(name, (3, 2, 4), dim, 3, dtype)
        else:
            arrays_d = arrays
        got = getattr(cygrad, name)([cygrad.tensor(a) for a in arrays_d], dim)
        want = getattr(torch, name)([torch.tensor(a) for a in arrays_d], dim)
        assert got.dtype == getattr(cygrad, str(want.dtype).split(".")[1])
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        assert got.is_contiguous()


@pytest.mark.parametrize("name", list(JOINS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gradients_match_torch(name, dtype):
    torch = pytest.importorskip("torch")
    for dim in (0, 1, -1):
        arrays = _arrays(name, (2, 3, 5), dim, 4, dtype, seed=dim + 5)
        xs = [cygrad.tensor(a, requires_grad=i != 1) for i, a in enumerate(arrays)]
        ts = [torch.tensor(a, requires_grad=i != 1) for i, a in enumerate(arrays)]
        y, ty = getattr(cygrad, name)(xs, dim), getattr(torch, name)(ts, dim)
        assert y.grad_fn.name() == ty.grad_fn.name()
        assert type(y.grad_fn).__name__ == "JoinNode"
        g = np.random.default_rng(9).standard_normal(y.shape).astype(dtype)
        (y * cygrad.tensor(g)).sum().backward()
        (ty * torch.tensor(g)).sum().backward()
        for x, t in zip(xs, ts):
            if t.grad is None:
                assert x.grad is None
            else:
                np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


@pytest.mark.parametrize("name", list(JOINS))
def test_same_bits_as_the_python_op(name):
    rng = np.random.default_rng(4)
    for dim in (0, 2, -1):
        arrays = _arrays(name, (3, 4, 2), dim, 3, np.float32, seed=dim + 1)
        g = None
        grads = []
        for fn in (getattr(cygrad, name), JOINS[name]):
            xs = [cygrad.tensor(a, requires_grad=True) for a in arrays]
            y = fn(xs, dim)
            if g is None:
                g = rng.standard_normal(y.shape).astype(np.float32)
            y.backward(cygrad.tensor(g))
            grads.append((y.detach().numpy(), [x.grad.numpy() for x in xs]))
        (y0, g0), (y1, g1) = grads
        np.testing.assert_array_equal(y0, y1)
        for a, b in zip(g0, g1):
            np.testing.assert_array_equal(a, b)


def test_views_and_multi_output_inputs():
    """Non-contiguous inputs (a transpose, a strided slice) and inputs that
    are outputs 1..n of one node (unbind, split) route their gradients to
    the right output of that node."""
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(5).standard_normal((4, 6))
    x, tx = cygrad.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    outs = []
    for lib, t in ((cygrad, x), (torch, tx)):
        p, q, r = t.split(2, dim=1)           # outputs 0, 1, 2 of one node
        y = lib.cat([r, t.t()[:6:2, :4].t(), p], 1)
        z = lib.stack([q.t(), p.t(), r.t()], -1)
        ((y * y).sum() + (z * 2).sin().sum()).backward()
        outs.append((y.detach().numpy(), z.detach().numpy(), t.grad.numpy()))
    for got, want in zip(*outs):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", list(JOINS))
def test_twice_differentiable(name):
    rng = np.random.default_rng(6)
    shapes = [(2, 3), (2, 3), (2, 3)] if name == "stack" else [(2, 3), (2, 1), (2, 4)]
    xs = tuple(cygrad.tensor(rng.standard_normal(s), requires_grad=True)
               for s in shapes)
    fn = getattr(cygrad, name)
    assert cygrad.autograd.gradcheck(lambda *t: fn(list(t), 1) ** 2, xs)
    assert cygrad.autograd.gradgradcheck(lambda *t: fn(list(t), 1) ** 2, xs)


def test_falls_back_where_the_python_op_decides():
    torch = pytest.importorskip("torch")
    f32, i64 = np.ones((2, 2), np.float32), np.arange(4).reshape(2, 2)
    # dtype promotion
    for name in JOINS:
        got = getattr(cygrad, name)([cygrad.tensor(f32), cygrad.tensor(i64)])
        want = getattr(torch, name)([torch.tensor(f32), torch.tensor(i64)])
        assert str(got.dtype) == str(want.dtype).split(".")[1]
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    # legacy 1-D empty tensors are skipped by cat
    got = cygrad.cat([cygrad.zeros(0), cygrad.ones(2, 3), cygrad.zeros(0)])
    assert got.shape == (2, 3)
    # out= and the axis alias
    out = cygrad.empty(0)
    r = cygrad.cat((cygrad.ones(2), cygrad.zeros(1)), out=out)
    assert r is out and out.tolist() == [1, 1, 0]
    assert cygrad.stack([cygrad.ones(2), cygrad.zeros(2)], axis=1).shape == (2, 2)
    assert cygrad.concat([cygrad.ones(1, 2)] * 2, axis=-1).shape == (1, 4)


@pytest.mark.parametrize("args, exc, match", [
    (([np.ones((2, 3)), np.ones((3, 3))], 1), RuntimeError, "Sizes of tensors must match"),
    (([np.ones((2, 3)), np.ones(3)], 0), RuntimeError, "same number of dimensions"),
    (([np.ones(())], 0), RuntimeError, "zero-dimensional"),
    (([np.ones(3)], 1), IndexError, "Dimension out of range"),
    (([], 0), RuntimeError, "non-empty list"),
])
def test_bad_cat_calls_raise_torchs_errors(args, exc, match):
    tensors, dim = args
    with pytest.raises(exc, match=match):
        cygrad.cat([cygrad.tensor(a) for a in tensors], dim)


def test_bad_stack_calls_and_arguments():
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        cygrad.stack([cygrad.ones(2, 3), cygrad.ones(3, 2)])
    with pytest.raises(IndexError, match="Dimension out of range"):
        cygrad.stack([cygrad.ones(2)], 2)
    with pytest.raises(TypeError, match="must be a tuple or list of Tensors"):
        cygrad.cat(cygrad.ones(2))
    with pytest.raises(TypeError, match="expected Tensor as element 1"):
        cygrad.stack([cygrad.ones(2), [1.0, 2.0]])
    with pytest.raises(TypeError, match="both 'dim' and its alias 'axis'"):
        cygrad.cat([cygrad.ones(2)], 1, axis=0)
    x = cygrad.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        cygrad.cat([x, x], out=cygrad.empty(4))


def test_no_grad_and_requires_grad_flags():
    x = cygrad.ones(2, requires_grad=True)
    with cygrad.no_grad():
        y = cygrad.cat([x, x])
    assert not y.requires_grad and y.grad_fn is None
    z = cygrad.stack([cygrad.ones(2), cygrad.ones(2)])
    assert not z.requires_grad
    w = cygrad.stack((cygrad.ones(2), x))
    assert w.requires_grad and w.grad_fn.name() == "StackBackward0"
    assert w.grad_fn.next_functions[0][0] is None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=4), st.integers(1, 4),
       st.data())
def test_any_shape_matches_numpy(shape, n, data):
    nd = len(shape)
    dim = data.draw(st.integers(-nd, nd - 1))
    arrays = _arrays("cat", shape, dim, n, np.float64, seed=n)
    y = cygrad.cat([cygrad.tensor(a, requires_grad=True) for a in arrays], dim)
    np.testing.assert_array_equal(y.detach().numpy(), np.concatenate(arrays, dim))
    sdim = data.draw(st.integers(-nd - 1, nd))
    same = [arrays[0]] * n
    z = cygrad.stack([cygrad.tensor(a) for a in same], sdim)
    np.testing.assert_array_equal(z.numpy(), np.stack(same, sdim))


def test_stack_of_scalars_backward():
    """Each input's gradient is a 0-d array (an index of g alone would give
    a NumPy scalar, which the engine must never see)."""
    torch = pytest.importorskip("torch")
    outs = []
    for lib in (cygrad, torch):
        xs = [lib.tensor(v, requires_grad=True) for v in (0.5, -1.5, 2.0)]
        y = lib.stack([x * x for x in xs] + [xs[0]])
        (y * lib.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
        outs.append([x.grad.numpy() for x in xs])
        assert xs[0].grad.shape == ()
    np.testing.assert_array_equal(np.array(outs[0]), np.array(outs[1]))
