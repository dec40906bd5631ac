"""where: the compiled select (``_kernels/select.pyx``) against np.where and the
closed-form gradients, the op's choice between the kernel and the np.where
fallback, exact zeros beside inf/NaN gradients, thread-count independence,
and torch parity when torch is installed."""

import numpy as np
import pytest

import cygrad as cg
from cygrad.ops import select as ops_select
from cygrad._kernels import select as S
from cygrad._kernels import threads as _threads

DTYPES = [np.float32, np.float64]


def _mask(rng, shape):
    return rng.random(shape) < 0.5


# --- the kernels ------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 7, 1001])
@pytest.mark.parametrize("sides", ["vv", "vs", "sv", "ss"])
def test_where_fwd_matches_np_where(dtype, n, sides):
    rng = np.random.default_rng(n)
    c = _mask(rng, n)
    a = rng.standard_normal(n if sides[0] == "v" else 1).astype(dtype)
    b = rng.standard_normal(n if sides[1] == "v" else 1).astype(dtype)
    a.flags.writeable = False  # inputs are const memoryviews
    b.flags.writeable = False
    out = np.full(n, 7, dtype)
    buf = out
    S.where_fwd(c.view(np.uint8), a, b, out)
    assert out is buf
    want = np.where(c, a if a.size == n else a[0], b if b.size == n else b[0])
    np.testing.assert_array_equal(out, want.astype(dtype))


def test_where_fwd_any_nonzero_byte_is_true():
    c = np.array([0, 1, 2, 255, 0], np.uint8)
    a = np.arange(5.0)
    out = np.empty(5)
    S.where_fwd(c, a, np.array([-1.0]), out)
    np.testing.assert_array_equal(out, [-1, 1, 2, 3, -1])


def test_where_fwd_keeps_nan_inf_and_signed_zero_bits():
    c = np.array([True, False, True, False])
    a = np.array([np.nan, 1, -0.0, 2], np.float32)
    b = np.array([3, -np.inf, 4, -0.0], np.float32)
    out = np.empty(4, np.float32)
    S.where_fwd(c.view(np.uint8), a, b, out)
    np.testing.assert_array_equal(
        out.view(np.uint32), np.where(c, a, b).view(np.uint32)
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("which", ["both", "a", "b", "none"])
def test_where_bwd_exact_zeros_beside_inf_and_nan(dtype, which):
    rng = np.random.default_rng(1)
    n = 515
    c = _mask(rng, n)
    g = rng.standard_normal(n).astype(dtype)
    g[::7] = np.inf
    g[3::7] = -np.inf
    g[5::7] = np.nan
    ga = np.full(n, 9, dtype) if which in ("both", "a") else None
    gb = np.full(n, 9, dtype) if which in ("both", "b") else None
    S.where_bwd(c.view(np.uint8), g, ga, gb)
    if ga is not None:
        np.testing.assert_array_equal(ga, np.where(c, g, 0))
        assert not np.signbit(ga[~c]).any()  # +0, as torch
    if gb is not None:
        np.testing.assert_array_equal(gb, np.where(c, 0, g))
        assert not np.signbit(gb[c]).any()


@pytest.mark.parametrize(
    "call",
    [
        lambda c, v, o: S.where_fwd(c, v[:3], v, o),
        lambda c, v, o: S.where_fwd(c, v, v[:0], o),
        lambda c, v, o: S.where_fwd(c, v, v, o[:9]),
        lambda c, v, o: S.where_bwd(c, v[:9], o, None),
        lambda c, v, o: S.where_bwd(c, v, o[:9], None),
        lambda c, v, o: S.where_bwd(c, v, None, o[:1]),
        lambda c, v, o: S.where_bwd(c, v, o, o[:9]),
    ],
    ids=["a", "b-empty", "out", "g", "ga", "gb", "gb-of-two"],
)
def test_where_kernels_refuse_length_mismatch(call):
    c = np.ones(10, np.uint8)
    v = np.arange(10.0)
    o = np.empty(10)
    with pytest.raises(ValueError):
        call(c, v, o)


def test_where_kernels_refuse_mixed_dtypes():
    c = np.ones(4, np.uint8)
    with pytest.raises((TypeError, ValueError)):
        S.where_fwd(c, np.ones(4, np.float32), np.ones(4), np.empty(4))


@pytest.fixture
def kernel_threads():
    saved = _threads.get_num_threads()
    adaptive = _threads._set_adaptive(False)
    yield
    _threads._set_adaptive(adaptive)
    _threads._set_parallel_threshold(None)
    cg.set_num_threads(saved)


@pytest.mark.parametrize("dtype", DTYPES)
def test_where_kernels_same_bits_for_any_thread_count(kernel_threads, dtype):
    rng = np.random.default_rng(2)
    n = 2 * _threads.parallel_threshold() + 1234
    c = _mask(rng, n).view(np.uint8)
    a = rng.standard_normal(n).astype(dtype)
    b = rng.standard_normal(n).astype(dtype)
    results = []
    for t in (1, 2, 3):
        cg.set_num_threads(t)
        out, ga, gb, gs = (np.empty(n, dtype) for _ in range(4))
        S.where_fwd(c, a, b, out)
        S.where_bwd(c, a, ga, gb)
        S.where_fwd(c, a, b[:1], gs)
        results.append((out, ga, gb, gs))
    for r in results[1:]:
        for got, want in zip(r, results[0]):
            np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(results[0][0], np.where(c, a, b))


# --- the op ----------------------------------------------------------------------------


class _Spy:
    """Counts the calls cygrad.ops.select.Where makes into the select kernels."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        fn = getattr(S, name)

        def call(*args):
            self.calls.append(name)
            return fn(*args)

        return call


@pytest.fixture
def spy(monkeypatch):
    s = _Spy()
    monkeypatch.setattr(ops_select, "_select_k", s)
    return s


def _leaf(a):
    return cg.tensor(a, requires_grad=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("needs", [(True, True), (True, False), (False, True)])
def test_where_op_kernel_path_values_and_grads(spy, dtype, needs):
    rng = np.random.default_rng(3)
    shape = (5, 37)
    c = _mask(rng, shape)
    xa = rng.standard_normal(shape).astype(dtype)
    ya = rng.standard_normal(shape).astype(dtype)
    ga = rng.standard_normal(shape).astype(dtype)
    x = cg.tensor(xa, requires_grad=needs[0])
    y = cg.tensor(ya, requires_grad=needs[1])
    out = cg.where(cg.tensor(c), x, y)
    assert out.dtype == dtype
    np.testing.assert_array_equal(out.detach().numpy(), np.where(c, xa, ya))
    out.backward(cg.tensor(ga))
    assert spy.calls == ["where_fwd", "where_bwd"]
    if needs[0]:
        np.testing.assert_array_equal(x.grad.numpy(), ga * c)
    else:
        assert x.grad is None
    if needs[1]:
        np.testing.assert_array_equal(y.grad.numpy(), ga * ~c)
    else:
        assert y.grad is None


@pytest.mark.parametrize("dtype", DTYPES)
def test_where_op_scalar_other_and_scalar_input(spy, dtype):
    rng = np.random.default_rng(4)
    xa = rng.standard_normal((6, 9)).astype(dtype)
    x = _leaf(xa)
    out = cg.where(x > 0, x, 0.0)
    np.testing.assert_array_equal(out.detach().numpy(), np.where(xa > 0, xa, 0))
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), (xa > 0).astype(dtype))
    x.grad = None
    out = cg.where(x > 0, -1.5, x)
    np.testing.assert_array_equal(out.detach().numpy(), np.where(xa > 0, -1.5, xa))
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), (xa <= 0).astype(dtype))
    assert spy.calls.count("where_fwd") == 2 and spy.calls.count("where_bwd") == 2


def test_where_op_one_element_tensor_gets_the_summed_gradient(spy):
    rng = np.random.default_rng(5)
    c = _mask(rng, (4, 6))
    x = _leaf(rng.standard_normal((4, 6)))
    s = _leaf(np.array([[2.5]]))  # one element, fewer dims than c
    out = cg.where(cg.tensor(c), x, s)
    np.testing.assert_array_equal(
        out.detach().numpy(), np.where(c, x.detach().numpy(), 2.5)
    )
    g = rng.standard_normal((4, 6))
    out.backward(cg.tensor(g))
    assert spy.calls == ["where_fwd", "where_bwd"]
    assert s.grad.shape == (1, 1)
    np.testing.assert_allclose(s.grad.numpy(), [[g[~c].sum()]], rtol=1e-12)


def test_where_op_inf_nan_grad_gives_exact_zeros_on_kernel_path(spy):
    c = np.array([[True, False, True, False]])
    x = _leaf(np.ones((1, 4), np.float32))
    y = _leaf(np.zeros((1, 4), np.float32))
    g = np.array([[np.inf, np.nan, np.nan, -np.inf]], np.float32)
    cg.where(cg.tensor(c), x, y).backward(cg.tensor(g))
    assert spy.calls == ["where_fwd", "where_bwd"]
    np.testing.assert_array_equal(x.grad.numpy(), [[np.inf, 0, np.nan, 0]])
    np.testing.assert_array_equal(y.grad.numpy(), [[0, np.nan, 0, -np.inf]])


@pytest.mark.parametrize(
    "shapes",
    [
        ((3, 1), (1, 4), (3, 4)),  # the mask broadcasts
        ((3, 4), (4,), (3, 4)),  # input broadcasts, more than one element
        ((4,), (3, 4), (1,)),  # the output is larger than the mask
        ((3, 4), (3, 4), (1, 1, 1)),  # a one-element other adds a dim
    ],
)
def test_where_op_broadcast_falls_back_to_np_where(spy, shapes):
    rng = np.random.default_rng(6)
    sc, sx, sy = shapes
    c = _mask(rng, sc)
    xa, ya = rng.standard_normal(sx), rng.standard_normal(sy)
    x, y = _leaf(xa), _leaf(ya)
    out = cg.where(cg.tensor(c), x, y)
    want = np.where(c, xa, ya)
    assert out.shape == want.shape
    np.testing.assert_array_equal(out.detach().numpy(), want)
    g = rng.standard_normal(want.shape)
    out.backward(cg.tensor(g))
    cb = np.broadcast_to(c, want.shape)
    np.testing.assert_allclose(x.grad.numpy(), _sum_to(g * cb, sx), rtol=1e-12)
    np.testing.assert_allclose(y.grad.numpy(), _sum_to(g * ~cb, sy), rtol=1e-12)
    assert spy.calls == []


def _sum_to(a, shape):
    a = a.sum(axis=tuple(range(a.ndim - len(shape))))
    return a.sum(axis=tuple(i for i, s in enumerate(shape) if s == 1), keepdims=True)


def test_where_op_non_contiguous_and_int_fall_back(spy):
    xa = np.arange(12.0).reshape(3, 4)
    x = cg.from_numpy(xa).t()  # a transposed view
    c = cg.tensor(np.arange(12).reshape(4, 3) % 2 == 0)
    out = cg.where(c, x, 0.0)
    np.testing.assert_array_equal(out.numpy(), np.where(c.numpy(), xa.T, 0.0))
    ia = cg.tensor([1, 2, 3])
    out = cg.where(cg.tensor([True, False, True]), ia, cg.tensor([7, 8, 9]))
    assert out.dtype == np.int64 and out.tolist() == [1, 8, 3]
    assert spy.calls == []


def test_where_op_non_contiguous_grad_falls_back(spy):
    c = np.array([[True, False], [False, True]])
    x = _leaf(np.ones((2, 2)))
    out = cg.where(cg.tensor(c), x, 0.0)
    g = np.arange(4.0).reshape(2, 2)
    out.backward(cg.from_numpy(g).t())
    np.testing.assert_array_equal(x.grad.numpy(), g.T * c)
    assert spy.calls == ["where_fwd"]


def test_where_op_create_graph_backward_is_differentiable():
    rng = np.random.default_rng(7)
    c = cg.tensor(_mask(rng, (3, 5)))
    xa = rng.standard_normal((3, 5))
    x = _leaf(xa)
    (gx,) = cg.autograd.grad(cg.where(c, x * x, 0.0).sum(), x, create_graph=True)
    np.testing.assert_allclose(gx.detach().numpy(), 2 * xa * c.numpy(), rtol=1e-12)
    gx.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2.0 * c.numpy())


def test_where_op_empty_and_0d():
    e = _leaf(np.zeros((0, 3), np.float32))
    out = cg.where(cg.tensor(np.zeros((0, 3), bool)), e, 1.0)
    assert out.shape == (0, 3)
    out.sum().backward()
    assert e.grad.shape == (0, 3)
    z = _leaf(np.array(2.0))
    out = cg.where(cg.tensor(False), z, -z)
    assert out.item() == -2.0
    out.backward()
    assert z.grad.item() == -1.0


# --- torch parity ------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("other", ["tensor", "scalar"])
def test_where_matches_torch(dtype, other):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(8)
    xa = rng.standard_normal((7, 11)).astype(dtype)
    ya = rng.standard_normal((7, 11)).astype(dtype)
    ga = rng.standard_normal((7, 11)).astype(dtype)
    ga[0, :4] = [np.inf, np.nan, -np.inf, np.nan]
    res = {}
    for name, m in (("cg", cg), ("torch", torch)):
        x = m.tensor(xa, requires_grad=True)
        y = m.tensor(ya, requires_grad=True)
        out = m.where(x > 0, x, y if other == "tensor" else 0.25)
        out.backward(m.tensor(ga))
        res[name] = [out.detach().numpy(), x.grad.numpy()]
        if other == "tensor":
            res[name].append(y.grad.numpy())
    for got, want in zip(res["cg"], res["torch"]):
        np.testing.assert_array_equal(got, want)
