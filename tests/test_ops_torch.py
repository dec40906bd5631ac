"""Every op of the registry against PyTorch: values and gradients.

The cases come from ``tests/reference.py``; each runs the same lambda on
``torch`` and on ``cygrad`` in float32 and float64 with the same inputs and
the same upstream gradient.  float64 agrees to 1e-10 relative, float32 to
1e-5.  Also: dtype promotion, boundary gradients (clamp, relu, abs, max
ties), matmul's shape cases and the integer/bool dtypes.
"""

import numpy as np
import pytest
from reference import CASES

import cygrad

torch = pytest.importorskip("torch")

TOLS = {
    "float32": {"rtol": 1e-5, "atol": 1e-5},
    "float64": {"rtol": 1e-10, "atol": 1e-12},
}


def _params():
    for name, cases in CASES.items():
        for i, case in enumerate(cases):
            for dt in case.dtypes:
                yield pytest.param(name, case, dt, id=f"{name}-{case!r}-{i}-{dt}")


def _draw(case, dtype, seed):
    rng = np.random.default_rng(seed)
    doms = case.domain if isinstance(case.domain, list) else [case.domain] * len(
        case.shapes)
    return [rng.uniform(lo, hi, size=s).astype(dtype)
            for s, (lo, hi) in zip(case.shapes, doms)]


def _run(m, case, arrays, w_seed):
    ts = [m.tensor(a, requires_grad=case.grad) for a in arrays]
    out = case.fn(m, *ts)
    grads = None
    if case.grad and out.dtype in (m.float32, m.float64) and out.requires_grad:
        w = np.random.default_rng(w_seed).uniform(-1, 1, size=tuple(out.shape))
        try:
            (out * m.tensor(w.astype(arrays[0].dtype))).sum().backward()
        except RuntimeError as e:
            # torch has no derivative (floor_divide): cygrad's must be 0.
            if "derivative for" not in str(e):
                raise
            return out.detach().numpy(), [None] * len(ts)
        grads = [None if t.grad is None else t.grad.detach().numpy() for t in ts]
    return out.detach().numpy(), grads


def _np(t):
    return np.asarray(t)


@pytest.mark.parametrize("name,case,dtype", list(_params()))
def test_matches_torch(name, case, dtype):
    arrays = _draw(case, dtype, 1)
    want, want_g = _run(torch, case, arrays, 2)
    got, got_g = _run(cygrad, case, arrays, 2)
    assert got.shape == want.shape
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, **TOLS[dtype])
    if want_g is not None:
        assert got_g is not None
        for i, (g, w) in enumerate(zip(got_g, want_g)):
            if w is None:
                assert g is None or not np.any(g), f"input {i}"
                continue
            assert g is not None, f"input {i} got no gradient"
            assert g.shape == w.shape, f"input {i}: {g.shape} != {w.shape}"
            np.testing.assert_allclose(g, w, **TOLS[dtype], err_msg=f"input {i}")


# --- dtypes and promotion ---------------------------------------------------------------

PROMOTIONS = [
    lambda m: m.ones(2) + m.ones(2, dtype=m.float64),
    lambda m: m.ones(2) + m.tensor(1.0, dtype=m.float64),
    lambda m: m.ones(2, dtype=m.int64) + m.ones(2),
    lambda m: m.ones(2, dtype=m.int64) + 2.5,
    lambda m: m.ones(2, dtype=m.float32) * 3,
    lambda m: m.ones(2, dtype=m.bool) + m.ones(2, dtype=m.bool),
    lambda m: m.ones(2, dtype=m.bool) + 1,
    lambda m: m.ones(2, dtype=m.bool) * m.tensor(1.0, dtype=m.float64),
    lambda m: m.tensor(3) + m.ones(2),
    lambda m: m.tensor([3, 4]) / m.tensor([2, 2]),
    lambda m: m.tensor([3, 4]) ** 2,
    lambda m: m.tensor([3, 4]) ** 2.0,
    lambda m: 2 ** m.tensor([3, 4]),
    lambda m: m.tensor(1.0, dtype=m.float64) + m.tensor([1, 2]),
    lambda m: m.tensor(1) + m.tensor(1.0),
    lambda m: m.maximum(m.tensor([1, 2]), m.tensor([1.5, 0.5])),
    lambda m: m.where(m.tensor([True, False]), m.ones(2), m.zeros(2, dtype=m.float64)),
    lambda m: m.where(m.tensor([True, False]), m.tensor([1, 2]), 0.5),
    lambda m: m.sqrt(m.tensor([4])),
    lambda m: m.abs(m.tensor([-4, 3])),
    lambda m: m.tensor([True, True]).sum(),
    lambda m: m.clamp(m.tensor([-3, 0, 5]), -1, 2),
    lambda m: m.clamp(m.tensor([-3, 0, 5]), min=0.5),
    lambda m: m.cat([m.ones(2), m.ones(2, dtype=m.float64)]),
    lambda m: m.cat([m.ones(2, dtype=m.int64), m.ones(2)]),
    lambda m: m.stack([m.tensor([1, 2]), m.tensor([3, 4])]),
    lambda m: m.tensor([1, 5, 3]).max(),
    lambda m: m.tensor([[1, 5], [7, 0]]).min(1).indices,
    lambda m: m.tensor([[1, 5], [7, 0]]).max(0).values,
    lambda m: m.tensor([1, 5, 3]).argmax(),
    lambda m: m.arange(5)[m.tensor([1, 1, 4])],
    lambda m: m.tensor([1.0, 2.0]) < m.tensor([2, 1]),
    lambda m: m.tensor([1, 2]) == 2,
    lambda m: m.logsumexp(m.tensor([1, 2, 3]), 0),
    lambda m: m.softmax(m.tensor([1.0, 2.0], dtype=m.float64), 0),
    lambda m: m.randint(0, 5, (3,)) * 2,
    lambda m: m.arange(4) + m.arange(4.0),
    lambda m: m.matmul(m.ones(2, 3, dtype=m.int64), m.ones(3, dtype=m.int64)),
]


PROMOTION_SRC = [__import__("inspect").getsource(f) for f in PROMOTIONS]


@pytest.mark.parametrize("i", range(len(PROMOTIONS)))
def test_dtype_and_value_like_torch(i):
    fn = PROMOTIONS[i]
    want = fn(torch)
    got = fn(cygrad)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    assert tuple(got.shape) == tuple(want.shape)
    if "randint" not in PROMOTION_SRC[i]:  # generators differ; dtype is the point
        np.testing.assert_allclose(_np(got).astype(float), want.numpy().astype(float),
                                   rtol=1e-6)


def test_integer_tensors_cannot_require_grad():
    for m in (torch, cygrad):
        for t in (m.tensor([1, 2]), m.tensor([True]), m.arange(3)):
            with pytest.raises(RuntimeError, match="floating point"):
                t.requires_grad_(True)
            with pytest.raises(RuntimeError, match="floating point"):
                m.tensor([1, 2], requires_grad=True)


# --- kinks and ties, where a random input never lands -------------------------------------

KINKS = [
    lambda m, x: m.clamp(x, -1.0, 1.0),
    lambda m, x: m.clamp(x, min=0.0),
    lambda m, x: x.clamp(max=0.0),
    lambda m, x: m.clamp(x, 1.0, -1.0),
    lambda m, x: m.relu(x),
    lambda m, x: m.abs(x),
    lambda m, x: m.maximum(x, m.zeros_like(x)),
    lambda m, x: m.minimum(x, m.zeros_like(x)),
    lambda m, x: x.max(),
    lambda m, x: x.min(),
    lambda m, x: x.reshape(2, 3).max(1).values,
    lambda m, x: x.reshape(2, 3).min(0).values,
    lambda m, x: m.sqrt(x * x),
    lambda m, x: x ** 0.0,
    lambda m, x: m.zeros_like(x) ** x,
    lambda m, x: m.clamp_min(x, m.zeros_like(x)),
]


@pytest.mark.parametrize("i", range(len(KINKS)))
def test_gradient_at_kinks_and_ties_like_torch(i):
    arr = np.array([-1.0, 0.0, 1.0, 1.0, 0.0, -1.0])
    res = []
    for m in (torch, cygrad):
        x = m.tensor(arr, requires_grad=True)
        y = KINKS[i](m, x)
        y.sum().backward()
        res.append((y.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(res[1][0], res[0][0])
    np.testing.assert_allclose(res[1][1], res[0][1])


def test_nan_propagation_like_torch():
    arr = np.array([[1.0, np.nan, 3.0], [np.inf, 1.0, -np.inf], [-np.inf] * 3])
    for fn in (lambda m, x: m.softmax(x, 1), lambda m, x: m.log_softmax(x, 1),
               lambda m, x: m.logsumexp(x, 1), lambda m, x: x.max(1).values,
               lambda m, x: x.max(1).indices, lambda m, x: x.min(1).indices,
               lambda m, x: m.clamp(x, -1, 1), lambda m, x: x.var(1)):
        want = fn(torch, torch.tensor(arr)).numpy()
        got = fn(cygrad, cygrad.tensor(arr)).numpy()
        np.testing.assert_array_equal(got, want)


def test_matmul_errors_name_both_shapes():
    a, b = cygrad.ones(2, 3), cygrad.ones(4, 5)
    with pytest.raises(RuntimeError, match="2x3 and 4x5"):
        a @ b


def test_second_derivatives_match_torch():
    arr = np.random.default_rng(3).uniform(-1, 1, (3, 4))
    fns = [
        lambda m, x: m.softmax(x, 1),
        lambda m, x: m.log_softmax(x, 0),
        lambda m, x: m.logsumexp(x, 1),
        lambda m, x: x.var(1),
        lambda m, x: x.max(1).values * x.sum(1),
        lambda m, x: m.clamp(x, -0.5, 0.5) * x,
        lambda m, x: x[[0, 0, 2]] ** 2,
        lambda m, x: m.cat([x, x * x], 1),
    ]
    for fn in fns:
        out = []
        for m in (torch, cygrad):
            x = m.tensor(arr, requires_grad=True)
            y = fn(m, x)
            (g,) = m.autograd.grad((y * y).sum(), x, create_graph=True)
            (h,) = m.autograd.grad((g * g).sum(), x)
            out.append((g.detach().numpy(), h.numpy()))
        np.testing.assert_allclose(out[1][0], out[0][0], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(out[1][1], out[0][1], rtol=1e-9, atol=1e-12)
