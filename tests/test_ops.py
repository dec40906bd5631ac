"""The op registry, walked: every op has cases, matches NumPy, and passes
gradcheck (float64 central differences); hypothesis drives the binary, unary
and reduction families; bad inputs raise clear errors and modify nothing.

Runs without torch (``test_ops_torch.py`` compares with PyTorch)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import CASES, ELSEWHERE
from strategies import array_and_dims, broadcast_pair, finite

import cygrad
from cygrad._kernels import optable
from cygrad.autograd import gradcheck, gradgradcheck

TOLS = {
    "float32": {"rtol": 1e-5, "atol": 1e-6},
    "float64": {"rtol": 1e-10, "atol": 1e-12},
}


def test_every_registered_op_has_cases():
    missing = [n for n in cygrad.OPS if n not in CASES and n not in ELSEWHERE]
    assert not missing, f"ops without test cases in tests/reference.py: {missing}"


def test_registry_attaches_methods_and_functions():
    for name, spec in cygrad.OPS.items():
        for m in spec.methods:
            assert getattr(cygrad.Tensor, m) is spec.fn, (name, m)
        if not name.startswith("__") and name != "getitem":
            public = getattr(cygrad, name)
            # ops written in Python get torch's out= keyword by a wrapper
            assert public is spec.fn or public.__wrapped__ is spec.fn, name
        assert spec.fn.__doc__, f"{name} has no docstring"


def _cases():
    for name, cases in CASES.items():
        for i, case in enumerate(cases):
            yield pytest.param(name, case, id=f"{name}-{case!r}-{i}")


def _draw(case, dtype, seed=0):
    rng = np.random.default_rng(seed)
    doms = case.domain if isinstance(case.domain, list) else [case.domain] * len(
        case.shapes)
    return [rng.uniform(lo, hi, size=s).astype(dtype)
            for s, (lo, hi) in zip(case.shapes, doms)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,case", list(_cases()))
def test_forward_matches_numpy(name, case, dtype):
    if case.ref is None:
        pytest.skip("no NumPy reference")
    arrays = _draw(case, dtype)
    got = case.fn(cygrad, *[cygrad.tensor(a) for a in arrays])
    want = case.ref(*[a.astype(np.float64) for a in arrays])
    got = got.numpy()
    assert got.shape == np.shape(want)
    if got.dtype.kind == "f":
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_allclose(got, want, **TOLS[dtype])
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name,case", list(_cases()))
def test_gradcheck(name, case):
    if not case.grad:
        pytest.skip("no gradient")
    if any(0 in shape for shape in case.shapes):
        pytest.skip("nothing to differentiate (empty input)")
    arrays = _draw(case, np.float64)
    ts = [cygrad.tensor(a, requires_grad=True) for a in arrays]
    assert gradcheck(lambda *xs: case.fn(cygrad, *xs), ts, eps=1e-6, atol=1e-6,
                     rtol=1e-4)


SECOND_ORDER = list(optable.ROWS) + [
    "clamp", "softmax", "log_softmax", "logsumexp", "var", "max", "min", "matmul",
    "where", "getitem", "cat", "stack", "permute", "expand", "sum", "mean"]


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_gradgradcheck(name):
    for case in CASES[name][:3]:
        if not case.grad or any(0 in s for s in case.shapes):
            continue
        arrays = _draw(case, np.float64, seed=5)
        ts = [cygrad.tensor(a, requires_grad=True) for a in arrays]
        assert gradgradcheck(lambda *xs, _c=case: _c.fn(cygrad, *xs), ts, atol=1e-5,
                             rtol=1e-3)


# --- hypothesis: families -------------------------------------------------------------------

@settings(max_examples=25, deadline=None)
@given(name=st.sampled_from([r.name for r in optable.BINARY]),
       dtype=st.sampled_from(["float32", "float64"]), data=st.data())
def test_binary_family(name, dtype, data):
    row = optable.ROWS[name]
    # Both operands inside both domains; a bound float32 can hold exactly.
    lo = float(np.float32(max(lo for lo, hi in row.domain)))
    a, b = data.draw(broadcast_pair(np.dtype(dtype), lo=lo))
    ta = cygrad.tensor(a, requires_grad=True)
    tb = cygrad.tensor(b, requires_grad=True)
    out = getattr(cygrad, name)(ta, tb)
    want = row.ref(a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(out.detach().numpy(), want, **TOLS[dtype])
    out.sum().backward()
    # Broadcasting undone: each gradient has its input's shape and dtype.
    assert ta.grad.dtype == ta.dtype
    assert ta.grad.shape == a.shape and tb.grad.shape == b.shape


def test_gradient_shapes_of_a_0d_operand():
    a = cygrad.ones(5, requires_grad=True)
    b = cygrad.tensor(2.0, requires_grad=True)
    (a * b).sum().backward()
    assert b.grad.shape == ()
    e = cygrad.ones(0, requires_grad=True)
    b.grad = None
    (e + b).sum().backward()
    assert b.grad.shape == () and b.grad.item() == 0.0


@settings(max_examples=25, deadline=None)
@given(name=st.sampled_from([r.name for r in optable.UNARY]), data=st.data())
def test_unary_family_gradcheck(name, data):
    from hypothesis.extra import numpy as hnp
    row = optable.ROWS[name]
    lo, hi = row.domain[0]
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    x = data.draw(hnp.arrays(np.float64, shape, elements=finite(np.float64, lo, hi)))
    x = np.where(np.abs(x) < 1e-3, 0.5, x)  # away from the kinks of relu/abs
    # and from the steps of floor/ceil/round/trunc (integers, half-integers)
    near = np.abs(2 * x - np.round(2 * x)) < 1e-3
    x = np.where(near, np.where(x + 0.123 < hi, x + 0.123, x - 0.123), x)
    t = cygrad.tensor(x, requires_grad=True)
    np.testing.assert_allclose(getattr(cygrad, name)(t).detach().numpy(),
                               row.ref(x), rtol=1e-12, atol=1e-14)
    assert gradcheck(getattr(cygrad, name), (t,))


REDUCTIONS = {
    "sum": lambda x, d, k: np.sum(x, axis=d, keepdims=k),
    "mean": lambda x, d, k: np.mean(x, axis=d, keepdims=k),
    "var": lambda x, d, k: np.var(x, axis=d, keepdims=k, ddof=1),
    "logsumexp": lambda x, d, k: np.log(np.sum(np.exp(x), axis=d, keepdims=k)),
}


@settings(max_examples=30, deadline=None)
@given(name=st.sampled_from(sorted(REDUCTIONS)), keepdim=st.booleans(),
       xd=array_and_dims(min_side=2))
def test_reduction_family(name, keepdim, xd):
    x, dim = xd
    t = cygrad.tensor(x, requires_grad=True)
    out = getattr(cygrad, name)(t, dim, keepdim=keepdim)
    axis = dim if dim is None or isinstance(dim, int) else tuple(dim)
    want = REDUCTIONS[name](x, axis, keepdim)
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-9, atol=1e-12)
    assert gradcheck(lambda u: getattr(cygrad, name)(u, dim, keepdim=keepdim), (t,))


@settings(max_examples=30, deadline=None)
@given(xd=array_and_dims(max_dims=3), is_min=st.booleans(), keepdim=st.booleans())
def test_max_min_with_dim(xd, is_min, keepdim):
    x, dim = xd
    if not isinstance(dim, int):
        dim = 0
    t = cygrad.tensor(x, requires_grad=True)
    res = (cygrad.min if is_min else cygrad.max)(t, dim, keepdim=keepdim)
    f, af = (np.min, np.argmin) if is_min else (np.max, np.argmax)
    np.testing.assert_array_equal(res.values.detach().numpy(),
                                  f(x, axis=dim, keepdims=keepdim))
    idx = af(x, axis=dim)
    np.testing.assert_array_equal(res.indices.numpy(),
                                  np.expand_dims(idx, dim) if keepdim else idx)
    res.values.sum().backward()
    want = np.zeros_like(x)
    np.put_along_axis(want, np.expand_dims(idx, dim), 1.0, axis=dim)
    np.testing.assert_array_equal(t.grad.numpy(), want)


@settings(max_examples=30, deadline=None)
@given(xd=array_and_dims(max_dims=3), log=st.booleans())
def test_softmax_family(xd, log):
    x, dim = xd
    if not isinstance(dim, int):
        dim = -1
    t = cygrad.tensor(x * 50, requires_grad=True)
    y = (cygrad.log_softmax if log else cygrad.softmax)(t, dim)
    e = np.exp(x * 50 - np.max(x * 50, axis=dim, keepdims=True))
    p = e / e.sum(axis=dim, keepdims=True)
    want = np.log(p) if log else p
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-9, atol=1e-12)
    assert gradcheck(lambda u: (cygrad.log_softmax if log else cygrad.softmax)(u, dim),
                     (cygrad.tensor(x, requires_grad=True),))


# --- behaviour worth pinning ---------------------------------------------------------------

def test_max_over_all_elements_splits_ties_evenly():
    x = cygrad.tensor([1.0, 3.0, 3.0, 0.0, 3.0], requires_grad=True)
    x.max().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0, 1 / 3, 1 / 3, 0, 1 / 3])


def test_max_with_dim_picks_the_first_tie():
    x = cygrad.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]], requires_grad=True)
    v, i = cygrad.max(x, 1)
    assert i.tolist() == [1, 0]
    v.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 1, 0], [1, 0, 0]])


def test_max_returns_a_named_pair_and_indices_carry_no_gradient():
    x = cygrad.randn(3, 4, requires_grad=True)
    res = x.max(dim=1)
    values, indices = res
    assert res.values is values and res.indices is indices
    assert indices.dtype == cygrad.int64 and not indices.requires_grad
    assert values.grad_fn.name() == "MaxBackward0"


def test_softmax_is_stable_for_huge_logits():
    for dt in (cygrad.float32, cygrad.float64):
        x = cygrad.tensor([[1e4, 0.0, -1e4], [-1e30, 0.0, 1e30]], dtype=dt)
        np.testing.assert_allclose(cygrad.softmax(x, 1).numpy(), [[1, 0, 0], [0, 0, 1]])
        lsm = cygrad.log_softmax(x, 1).numpy()
        assert np.isfinite(lsm[:, 1]).all()
        np.testing.assert_allclose(cygrad.logsumexp(x, 1).numpy(), [1e4, 1e30],
                                   rtol=1e-6)


def test_var_correction_and_unbiased_like_torch():
    x = cygrad.tensor([1.0, 2.0, 4.0, 7.0])
    a = np.array([1.0, 2.0, 4.0, 7.0])
    assert np.isclose(x.var().item(), a.var(ddof=1))
    assert np.isclose(x.var(unbiased=False).item(), a.var())
    assert np.isclose(x.var(0, correction=0).item(), a.var())
    assert np.isclose(x.var(False).item(), a.var())
    assert np.isnan(cygrad.tensor([3.0]).var().item())


def test_clamp_needs_a_bound_and_clamp_inplace_counts_versions():
    x = cygrad.tensor([-2.0, 0.5, 3.0])
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max'"):
        cygrad.clamp(x)
    v = x._version
    assert x.clamp_(-1, 1) is x
    assert x.tolist() == [-1.0, 0.5, 1.0] and x._version == v + 1
    w = cygrad.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w.clamp_(0, 1)


def test_clamp_inplace_on_a_non_leaf_differentiates():
    w = cygrad.tensor([-2.0, 0.5, 3.0], requires_grad=True)
    y = w * 2
    y.clamp_(-1.0, 2.0)
    assert y.grad_fn is not None
    (y * y).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [0.0, 4.0, 0.0])


# --- bad input: clear errors, nothing modified -----------------------------------------------

DIM_ERRORS = [
    lambda x: x.sum(3), lambda x: x.mean(-4), lambda x: x.var(2),
    lambda x: x.max(5), lambda x: x.min(-3), lambda x: x.logsumexp(2),
    lambda x: x.softmax(2), lambda x: x.log_softmax(-3), lambda x: x.argmax(2),
    lambda x: x.transpose(0, 2), lambda x: x.unsqueeze(4), lambda x: x.flatten(0, 2),
    lambda x: x.squeeze(2), lambda x: cygrad.cat([x, x], 2),
    lambda x: cygrad.stack([x, x], 4), lambda x: x.permute(0, 2),
]


@pytest.mark.parametrize("i", range(len(DIM_ERRORS)))
def test_dim_out_of_range_names_dim_and_ndim(i):
    x = cygrad.ones(2, 3)
    with pytest.raises(IndexError, match=r"Dimension out of range .*\[-\d, \d\].*"
                                         r"but got -?\d"):
        DIM_ERRORS[i](x)


BROADCAST_ERRORS = [
    lambda a, b: a + b, lambda a, b: a * b, lambda a, b: cygrad.maximum(a, b),
    lambda a, b: cygrad.where(a > 0, a, b), lambda a, b: a < b,
    lambda a, b: cygrad.clamp(a, b), lambda a, b: a.pow(b),
]


@pytest.mark.parametrize("i", range(len(BROADCAST_ERRORS)))
def test_non_broadcastable_names_both_shapes(i):
    a, b = cygrad.ones(2, 3), cygrad.ones(4)
    with pytest.raises(RuntimeError, match=r"\[2, 3\].*\[4\]|size of tensor a"):
        BROADCAST_ERRORS[i](a, b)


def test_failed_inplace_ops_modify_nothing():
    x = cygrad.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    before, v = x.numpy().copy(), x._version
    for bad in (lambda: x.add_(cygrad.ones(4)), lambda: x.clamp_(cygrad.ones(5)),
                lambda: x.__setitem__((0, 7), 1.0),
                lambda: x.__setitem__(0, cygrad.ones(4)),
                lambda: x.__setitem__(cygrad.tensor([0, 9]), 0.0),
                lambda: x.copy_(cygrad.ones(3, 3))):
        with pytest.raises((RuntimeError, IndexError)):
            bad()
        np.testing.assert_array_equal(x.numpy(), before)
        assert x._version == v


def test_cat_and_stack_errors():
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in "
                                           "dimension 0.*size 3 but got size 4"):
        cygrad.cat([cygrad.ones(2, 3), cygrad.ones(2, 4)])
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        cygrad.cat([cygrad.ones(2, 3), cygrad.ones(3)])
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        cygrad.stack([cygrad.ones(2), cygrad.ones(3)])
    with pytest.raises(RuntimeError, match="non-empty"):
        cygrad.cat([])
    with pytest.raises(TypeError):
        cygrad.cat(cygrad.ones(2))


def test_reductions_of_empty_inputs():
    with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
        cygrad.ones(0).max()
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero"):
        cygrad.ones(0, 3).max(0)
    assert cygrad.ones(0, 3).logsumexp(0).tolist() == [-np.inf] * 3


def test_0d_inputs_give_0d_tensors_backed_by_arrays():
    # NumPy ufuncs on 0-d arrays return scalars; every result must stay an
    # ndarray (the compiled core reads it as one).
    x = cygrad.tensor(1.5, dtype=cygrad.float64, requires_grad=True)
    (g,) = cygrad.autograd.grad(x.max(), x, create_graph=True)
    assert isinstance(g._arr, np.ndarray) and g.shape == ()
    (g * x).backward()
    a = cygrad.abs(cygrad.tensor(-3))
    assert isinstance(a._arr, np.ndarray) and a.item() == 3


def test_comparisons_are_bool_and_never_require_grad():
    x = cygrad.randn(3, requires_grad=True)
    for r in (x < 0, x <= x, x > 0.5, x >= 1, x == x, x != 0, cygrad.lt(x, x)):
        assert r.dtype == cygrad.bool and not r.requires_grad and r.grad_fn is None
