"""Higher-order gradients: gradgradcheck on every differentiable op of the
registry, closed forms, gradient penalties, and agreement with torch."""

import breadth_ops
import cases_reduce
import numpy as np
import pytest

from linalg_cases import higher_order_samples

import cygrad
from cygrad.autograd import grad, gradcheck, gradgradcheck


def leaf(values):
    return cygrad.tensor(values, dtype=cygrad.float64, requires_grad=True)


# --- one sample call per op ------------------------------------------------------------
#
# Elementwise ("unary"/"binary") ops are sampled generically from their
# domain.  Ops with extra arguments get explicit calls here; an op of the
# registry with neither shows up as a skipped test naming it, so an op added
# to ops.py is visibly uncovered until it gets a line below.

_MASK = np.array([[True, False, True, False], [False, True, True, False],
                  [True, True, False, False]])

def _ix(*v):
    return cygrad.tensor(np.array(v), dtype=cygrad.int64)


_INDEXING_SAMPLES = {
    "gather": [("dim1", lambda x: x.gather(1, _ix([0, 0], [3, 1], [2, 2])) ** 2,
                [(3, 4)])],
    "take_along_dim": [("dim0", lambda x: cygrad.take_along_dim(x, _ix([2, 0, 1, 1]),
                                                                 0) ** 2, [(3, 4)])],
    "take": [("flat", lambda x: cygrad.take(x, _ix([0, 5], [5, 11])) ** 2, [(3, 4)])],
    "scatter": [("src", lambda x, s: cygrad.scatter(x * x, 0, _ix([1, 0, 2, 0]),
                                                    s * s), [(3, 4), (1, 4)])],
    "scatter_add": [("src", lambda x, s: (x * x).scatter_add(1, _ix([0, 0], [3, 1],
                                                                    [1, 1]), s * s),
                     [(3, 4), (3, 2)])],
    "scatter_reduce": [("amax", lambda x, s: (x * x).scatter_reduce(
        0, _ix([1, 0, 2, 0]), s * s, "mean"), [(3, 4), (1, 4)])],
    "index_select": [("dim1", lambda x: x.index_select(1, _ix(3, 0, 3)) ** 2,
                      [(3, 4)])],
    "index_add": [("dim0", lambda x, s: (x * x).index_add(0, _ix(2, 2), s * s,
                                                          alpha=0.5),
                   [(3, 4), (2, 4)])],
    "index_copy": [("dim1", lambda x, s: (x * x).index_copy(1, _ix(3, 0), s * s),
                    [(3, 4), (3, 2)])],
    "index_fill": [("value", lambda x: (x * x).index_fill(0, _ix(1), 0.5), [(3, 4)])],
    "index_put": [("acc", lambda x, v: (x * x).index_put((_ix(0, 2, 0),), v * v,
                                                         accumulate=True),
                   [(3, 4), (4,)])],
    "masked_fill": [("const", lambda x: (x * x).masked_fill(cygrad.tensor(_MASK),
                                                            0.5), [(3, 4)])],
    "masked_select": [("mask", lambda x: x.masked_select(cygrad.tensor(_MASK)) ** 2,
                       [(3, 4)])],
    "masked_scatter": [("src", lambda x, s: (x * x).masked_scatter(
        cygrad.tensor(_MASK), s * s), [(3, 4), (7,)])],
    "tril": [("k1", lambda x: cygrad.tril(x, 1) ** 2, [(3, 4)])],
    "triu": [("k0", lambda x: x.triu() ** 2, [(3, 4)])],
    "diagonal": [("k1", lambda x: x.diagonal(1) ** 2, [(3, 4)])],
    "diag_embed": [("2d", lambda x: cygrad.diag_embed(x) ** 2, [(2, 3)])],
    "diag": [("1d", lambda x: cygrad.diag(x, -1) ** 2, [(3,)])],
    "trace": [("sq", lambda x: cygrad.trace(x * x) ** 2, [(3, 3)])],
    "select": [("dim1", lambda x: x.select(1, 2) ** 2, [(3, 4)])],
    "put": [("src", lambda x, s: (x * x).put(_ix(0, 5), s * s), [(3, 4), (2,)])],
}

SAMPLES = {
    "sum": [("dim1", lambda x: cygrad.sum(x, 1), [(3, 4)]),
            ("all_keepdim", lambda x: x.sum((0, 1), keepdim=True) ** 2, [(3, 4)])],
    "mean": [("dim0", lambda x: cygrad.mean(x, 0) ** 2, [(3, 4)])],
    "matmul": [("mm", lambda a, b: a @ b, [(3, 4), (4, 2)]),
               ("mv", lambda a, b: a @ b, [(3, 4), (4,)]),
               ("vm", lambda a, b: a @ b, [(4,), (4, 2)]),
               ("dot", lambda a, b: a @ b, [(4,), (4,)]),
               ("batched_broadcast", lambda a, b: a @ b, [(2, 3, 4), (4, 2)])],
    "reshape": [("2d", lambda x: cygrad.reshape(x, (6, 2)) ** 2, [(3, 4)])],
    "view": [("flat", lambda x: x.view(-1) ** 2, [(3, 4)])],
    "permute": [("swap", lambda x: cygrad.permute(x, (1, 0)) ** 2, [(3, 4)])],
    "transpose": [("t", lambda x: cygrad.transpose(x, 0, 1) ** 2, [(3, 4)])],
    "expand": [("rows", lambda x: cygrad.expand(x, (3, 4)) ** 2, [(3, 1)])],
    "squeeze": [("dim1", lambda x: cygrad.squeeze(x, 1) ** 2, [(3, 1)])],
    "unsqueeze": [("dim0", lambda x: cygrad.unsqueeze(x, 0) ** 2, [(3,)])],
    "flatten": [("all", lambda x: cygrad.flatten(x) ** 2, [(3, 4)])],
    "clone": [("sq", lambda x: cygrad.clone(x) ** 2, [(3,)])],
    "contiguous": [("t", lambda x: x.t().contiguous() ** 2, [(3, 4)])],
    "where": [("mask", lambda a, b: cygrad.where(cygrad.tensor(_MASK), a * a, b * b),
               [(3, 4), (1, 4)])],
    "clamp": [("both", lambda x: cygrad.clamp(x, -0.5, 0.7) ** 2, [(3, 4)])],
    "clamp_min": [("num", lambda x: cygrad.clamp_min(x, 0.3) ** 2, [(3, 4)]),
                  ("tensor", lambda a, b: cygrad.clamp_min(a, b) ** 2,
                   [(3, 4), (4,)])],
    "clamp_max": [("num", lambda x: cygrad.clamp_max(x, 0.3) ** 2, [(3, 4)]),
                  ("tensor", lambda a, b: cygrad.clamp_max(a, b) ** 2,
                   [(3, 4), (4,)])],
    "lerp": [("scalar", lambda a, b: cygrad.lerp(a, b, 0.3) ** 2, [(3, 4), (4,)]),
             ("tensor", lambda a, b, w: cygrad.lerp(a, b, w) ** 2,
              [(3, 4), (4,), (3, 1)])],
    "addcmul": [("value", lambda a, b, c: cygrad.addcmul(a, b, c, value=2) ** 2,
                 [(3, 4), (4,), (3, 1)])],
    "addcdiv": [("value", lambda a, b, c: cygrad.addcdiv(a, b, c * c + 1, value=2)
                 ** 2, [(3, 4), (4,), (3, 1)])],
    "softmax": [("dim1", lambda x: cygrad.softmax(x, dim=1), [(3, 4)])],
    "log_softmax": [("dim0", lambda x: cygrad.log_softmax(x, dim=0), [(3, 4)])],
    "logsumexp": [("dim1", lambda x: cygrad.logsumexp(x, dim=1), [(3, 4)])],
    "var": [("dim1", lambda x: cygrad.var(x, dim=1), [(3, 4)]),
            ("all", lambda x: cygrad.var(x), [(3, 4)])],
    "max": [("dim1", lambda x: cygrad.max(x, dim=1)[0] ** 2, [(3, 4)]),
            ("all", lambda x: cygrad.max(x) ** 2, [(3, 4)])],
    "min": [("dim0", lambda x: cygrad.min(x, 0)[0] ** 2, [(3, 4)])],
    "cat": [("dim1", lambda a, b: cygrad.cat([a, b], dim=1) ** 2, [(3, 4), (3, 2)])],
    "stack": [("dim0", lambda a, b: cygrad.stack([a, b], 0) ** 2, [(3, 4), (3, 4)])],
    "getitem": [("slices", lambda x: x[1:, ::2] ** 2, [(3, 4)]),
                ("int_array", lambda x: x[[0, 2, 2]] ** 2, [(3, 4)]),
                ("mask", lambda x: x[cygrad.tensor(_MASK)] ** 2, [(3, 4)]),
                ("none_ellipsis", lambda x: x[None, 1, ...] ** 2, [(3, 4)])],
    **_INDEXING_SAMPLES,
}
SAMPLES.update(cases_reduce.samples(cygrad))   # issue 17
SAMPLES.update(breadth_ops.samples(cygrad))     # the API-breadth ops

SAMPLES.update(higher_order_samples())

# Kinds whose results carry no gradient.
_NON_DIFF_KINDS = {"compare", "index"}
_ALWAYS_NON_DIFF = {"argmax", "argmin"}


def _elementwise_sample(spec):
    if spec.kind == "unary":
        return [("x", lambda x: spec.fn(x), [(3, 4)])]
    return [("broadcast", lambda a, b: spec.fn(a, b), [(3, 1), (1, 4)])]


def _cases():
    cases = []
    for name, spec in cygrad.OPS.items():
        if spec.kind in _NON_DIFF_KINDS or name in _ALWAYS_NON_DIFF:
            continue
        if name in SAMPLES:
            samples = SAMPLES[name]
        elif spec.kind in ("unary", "binary"):
            samples = _elementwise_sample(spec)
        else:
            cases.append(pytest.param(name, None, None, id=f"{name}-nosample"))
            continue
        for label, fn, shapes in samples:
            cases.append(pytest.param(name, fn, shapes, id=f"{name}-{label}"))
    return cases


def _domains(name, n):
    spec = cygrad.OPS[name]
    dom = spec.domain
    if dom is None:
        return [(-2.0, 2.0)] * n
    if isinstance(dom[0], (tuple, list)):
        return [tuple(d) for d in dom] + [(-2.0, 2.0)] * (n - len(dom))
    return [tuple(dom)] * n


def _inputs(name, shapes, seed):
    rng = np.random.default_rng(seed)
    out = []
    for shape, (lo, hi) in zip(shapes, _domains(name, len(shapes))):
        vals = rng.uniform(lo, hi, shape)
        # Keep clear of the kinks at 0 (relu, abs, ...) and of ties.
        vals = np.where(np.abs(vals) < 0.05, vals + 0.1, vals)
        out.append(leaf(vals))
    return out


@pytest.mark.parametrize(("name", "fn", "shapes"), _cases())
def test_double_backward_of_every_op(name, fn, shapes):
    if fn is None:
        pytest.skip(f"op {name!r} has no sample call in tests/test_higher_order.py "
                    "SAMPLES: add one so its double backward is checked")
    xs = _inputs(name, shapes, seed=len(name))
    assert gradcheck(fn, xs)
    assert gradgradcheck(fn, xs)


@pytest.mark.parametrize(("name", "fn", "shapes"),
                         [c for c in _cases() if c.values[1] is not None])
def test_double_backward_keeps_float32(name, fn, shapes):
    xs = [cygrad.tensor(x.detach().numpy().astype(np.float32), requires_grad=True)
          for x in _inputs(name, shapes, seed=1)]
    gs = grad(fn(*xs).sum(), xs, create_graph=True, allow_unused=True)
    used = [g for g in gs if g is not None]
    assert all(g.dtype == cygrad.float32 for g in used)
    second = [g for g in used if g.requires_grad]
    if second:
        total = (second[0] * second[0]).sum()
        for g in second[1:]:
            total = total + (g * g).sum()
        ggs = grad(total, xs, allow_unused=True)
        assert all(g.dtype == cygrad.float32 for g in ggs if g is not None)


def test_every_sampled_op_exists():
    """A stale SAMPLES entry (renamed op) would silently test nothing."""
    missing = [n for n in SAMPLES if n not in cygrad.OPS]
    assert not missing, f"SAMPLES names ops not in cygrad.OPS: {missing}"


# --- closed forms ---------------------------------------------------------------------------

def test_second_derivative_of_cube_is_6x():
    xv = np.array([-1.5, 0.5, 2.0])
    x = leaf(xv)
    (g,) = grad((x ** 3).sum(), x, create_graph=True)
    assert g.requires_grad and g.grad_fn is not None
    np.testing.assert_allclose(g.detach().numpy(), 3 * xv ** 2)
    (gg,) = grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), 6 * xv)


def test_second_derivative_through_backward_create_graph():
    xv = np.array([-1.5, 0.5, 2.0])
    x = leaf(xv)
    (x ** 3).sum().backward(create_graph=True)
    g = x.grad
    assert g.requires_grad
    x.grad = None
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 6 * xv)


def test_third_derivative():
    xv = np.array([0.5, -2.0])
    x = leaf(xv)
    (g1,) = grad((x ** 4).sum(), x, create_graph=True)
    (g2,) = grad(g1.sum(), x, create_graph=True)
    (g3,) = grad(g2.sum(), x)
    np.testing.assert_allclose(g2.detach().numpy(), 12 * xv ** 2)
    np.testing.assert_allclose(g3.numpy(), 24 * xv)


def test_mixed_partials_of_a_composition():
    # f(x, y) = sin(x) * exp(x * y); d2f/dxdy in closed form.
    xv, yv = np.array([0.3, -0.8]), np.array([1.1, 0.4])
    x, y = leaf(xv), leaf(yv)
    (gx,) = grad((x.sin() * (x * y).exp()).sum(), x, create_graph=True)
    (gxy,) = grad(gx.sum(), y)
    e = np.exp(xv * yv)
    expected = np.cos(xv) * xv * e + np.sin(xv) * e * (1 + xv * yv)
    np.testing.assert_allclose(gxy.numpy(), expected, rtol=1e-12)


def test_hessian_vector_product_by_double_backward():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 4))
    a = a + a.T
    v = rng.standard_normal(4)
    x = leaf(rng.standard_normal(4))
    am = cygrad.tensor(a, dtype=cygrad.float64)
    f = (x @ (am @ x)) * 0.5 + (x ** 3).sum()
    (g,) = grad(f, x, create_graph=True)
    (hv,) = grad(g, x, grad_outputs=cygrad.tensor(v, dtype=cygrad.float64))
    xv = x.detach().numpy()
    np.testing.assert_allclose(hv.numpy(), a @ v + 6 * xv * v, rtol=1e-12)
    # the same through the functional helper
    _, hv2 = cygrad.autograd.hvp(
        lambda z: (z @ (am @ z)) * 0.5 + (z ** 3).sum(), x.detach(),
        cygrad.tensor(v, dtype=cygrad.float64))
    np.testing.assert_allclose(hv2.numpy(), hv.numpy(), rtol=1e-12)


def test_hessian_of_a_quadratic_form_is_the_matrix():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((3, 3))
    am = cygrad.tensor(a, dtype=cygrad.float64)
    x = cygrad.tensor(rng.standard_normal(3), dtype=cygrad.float64)
    h = cygrad.autograd.hessian(lambda z: z @ (am @ z), x)
    np.testing.assert_allclose(h.numpy(), a + a.T, rtol=1e-12, atol=1e-14)
    sym = (a + a.T) / 2
    sm = cygrad.tensor(sym, dtype=cygrad.float64)
    h2 = cygrad.autograd.hessian(lambda z: 0.5 * (z @ (sm @ z)), x)
    np.testing.assert_allclose(h2.numpy(), sym, rtol=1e-12, atol=1e-14)


def test_double_backward_through_relu():
    # f = relu(x) * x = x**2 for x > 0, else 0: f' = 2x step(x), f'' = 2 step(x).
    x = leaf([-1.0, 2.0, 0.5])
    (g,) = grad((x.relu() * x).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [0.0, 4.0, 1.0])
    (gg,) = grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), [0.0, 2.0, 2.0])


def test_gradient_penalty_is_optimised():
    """WGAN-GP style: minimise (|d critic / d x| - 1)^2 over the critic's weights."""
    rng = np.random.default_rng(4)
    xs = cygrad.tensor(rng.standard_normal((8, 3)), dtype=cygrad.float64)
    w = leaf(rng.standard_normal((3, 4)) * 2)
    v = leaf(rng.standard_normal(4))

    def penalty():
        x = xs.detach().requires_grad_(True)
        critic = ((x @ w).tanh() @ v).sum()
        (gx,) = grad(critic, x, create_graph=True)
        norms = ((gx * gx).sum(1) + 1e-12).sqrt()
        return ((norms - 1.0) ** 2).mean()

    first = penalty().item()
    for _ in range(60):
        loss = penalty()
        loss.backward()
        assert w.grad is not None and v.grad is not None
        with cygrad.no_grad():
            w -= 0.05 * w.grad
            v -= 0.05 * v.grad
        w.grad = None
        v.grad = None
    assert penalty().item() < 0.2 * first


# --- against torch ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def _both(torch, values):
    return (leaf(values),
            torch.tensor(values, dtype=torch.float64, requires_grad=True))


def test_double_backward_through_softmax_matmul_tanh_indexing_broadcasting(torch):
    rng = np.random.default_rng(5)
    xv, wv, bv = rng.standard_normal((4, 3)), rng.standard_normal((3, 5)), \
        rng.standard_normal((1, 5))
    idx = [0, 2, 4]

    def run(lib, x, w, b):
        logits = x @ w + b                                   # broadcast bias
        p = lib.softmax(logits, dim=1)[:, idx]               # indexing
        f = (p * x.tanh().sum(1, keepdim=True)).sum()
        gx, gw, gb = lib.autograd.grad(f, (x, w, b), create_graph=True)
        pen = (gx * gx).sum() + (gw ** 2).sum() * 0.5 + (gb * b).sum()
        return lib.autograd.grad(pen, (x, w, b))

    c = run(cygrad, leaf(xv), leaf(wv), leaf(bv))
    t = run(torch, *[torch.tensor(v, dtype=torch.float64, requires_grad=True)
                     for v in (xv, wv, bv)])
    for a, b in zip(c, t):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)


def test_second_derivatives_of_compositions_match_torch(torch):
    rng = np.random.default_rng(6)
    xv = rng.uniform(0.5, 2.0, 5)
    exprs = [
        lambda lib, x: (x.log() * x.sigmoid()).sum(),
        lambda lib, x: (x.sqrt() / (1 + x * x)).sum(),
        lambda lib, x: lib.logsumexp(x * x.cos(), dim=0),
        lambda lib, x: (lib.maximum(x, x[[4, 3, 2, 1, 0]]) ** 2).sum(),
        lambda lib, x: (x.reshape(1, 5).expand(3, 5) * x.reshape(5, 1)[:3].reshape(
            3, 1)).exp().mean(),
        lambda lib, x: lib.var(x.exp(), dim=0),
        lambda lib, x: (x ** x).sum(),
    ]
    for k, e in enumerate(exprs):
        xc, xt = _both(torch, xv)
        (gc,) = grad(e(cygrad, xc), xc, create_graph=True)
        (gt,) = torch.autograd.grad(e(torch, xt), xt, create_graph=True)
        np.testing.assert_allclose(gc.detach().numpy(), gt.detach().numpy(),
                                   rtol=1e-10, err_msg=f"expr {k}")
        (hc,) = grad((gc * gc.sin()).sum(), xc)
        (ht,) = torch.autograd.grad((gt * gt.sin()).sum(), xt)
        np.testing.assert_allclose(hc.numpy(), ht.numpy(), rtol=1e-9, atol=1e-12,
                                   err_msg=f"expr {k}")


def test_gradient_penalty_trajectory_matches_torch(torch):
    rng = np.random.default_rng(7)
    xv, wv = rng.standard_normal((6, 3)), rng.standard_normal((3, 2))

    def train(lib, tensor):
        w = tensor(wv, requires_grad=True)
        x0 = tensor(xv)
        losses = []
        for _ in range(5):
            x = x0.detach().requires_grad_(True)
            out = ((x @ w).sigmoid() ** 2).sum()
            (gx,) = lib.autograd.grad(out, x, create_graph=True)
            loss = out * 0.01 + ((gx * gx).sum(1) - 1.0).abs().mean()
            loss.backward()
            with lib.no_grad():
                w -= 0.1 * w.grad
            w.grad = None
            losses.append(loss.item())
        return np.array(losses), w.detach().numpy()

    lc, wc = train(cygrad, lambda v, requires_grad=False: cygrad.tensor(
        v, dtype=cygrad.float64, requires_grad=requires_grad))
    lt, wt = train(torch, lambda v, requires_grad=False: torch.tensor(
        v, dtype=torch.float64, requires_grad=requires_grad))
    np.testing.assert_allclose(lc, lt, rtol=1e-10)
    np.testing.assert_allclose(wc, wt, rtol=1e-10)


# --- functional helpers (torch.autograd.functional semantics) ------------------------------

def _np(x):
    if isinstance(x, tuple):
        return tuple(_np(v) for v in x)
    return x.detach().numpy()


def _assert_same(c, t):
    if isinstance(t, tuple):
        assert isinstance(c, tuple) and len(c) == len(t)
        for a, b in zip(c, t):
            _assert_same(a, b)
        return
    assert tuple(c.shape) == tuple(t.shape)
    np.testing.assert_allclose(_np(c), t.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_functional_helpers_match_torch(torch):
    from torch.autograd import functional as tf

    from cygrad.autograd import functional as cf
    rng = np.random.default_rng(8)
    xv, yv = rng.uniform(0.5, 1.5, 3), rng.uniform(0.5, 1.5, 2)
    v_in = (rng.standard_normal(3), rng.standard_normal(2))
    v_out = (rng.standard_normal(2), rng.standard_normal(3))

    def f(x, y):           # two outputs of shapes (2,) and (3,)
        return (x ** 3).sum() * y.tanh(), x.sin() * y.sum()

    def s(x, y):           # scalar
        return (x ** 3).sum() * y.log().sum() + (x * x).sum()

    def c_(v):
        return tuple(cygrad.tensor(a, dtype=cygrad.float64) for a in v)

    def t_(v):
        return tuple(torch.tensor(a, dtype=torch.float64) for a in v)

    ci, ti = c_((xv, yv)), t_((xv, yv))
    _assert_same(cf.jacobian(f, ci), tf.jacobian(f, ti))
    _assert_same(cf.jacobian(f, ci, strategy="forward-mode"), tf.jacobian(f, ti))
    _assert_same(cf.jacobian(lambda x: x.exp(), ci[0]),
                 tf.jacobian(lambda x: x.exp(), ti[0]))
    _assert_same(cf.hessian(s, ci), tf.hessian(s, ti))
    _assert_same(cf.hessian(lambda x: (x ** 4).sum(), ci[0]),
                 tf.hessian(lambda x: (x ** 4).sum(), ti[0]))
    _assert_same(cf.vjp(f, ci, c_(v_out)), tf.vjp(f, ti, t_(v_out)))
    _assert_same(cf.vjp(lambda x: (x ** 2).sum(), ci[0]),
                 tf.vjp(lambda x: (x ** 2).sum(), ti[0]))
    _assert_same(cf.jvp(f, ci, c_(v_in)), tf.jvp(f, ti, t_(v_in)))
    _assert_same(cf.hvp(s, ci, c_(v_in)), tf.hvp(s, ti, t_(v_in)))
    _assert_same(cf.vhp(s, ci, c_(v_in)), tf.vhp(s, ti, t_(v_in)))


def test_functional_helpers_leave_inputs_alone_and_detach_results():
    x = leaf([0.5, 1.0])
    out, g = cygrad.autograd.vjp(lambda a: (a ** 3).sum(), x)
    assert x.grad is None
    assert not out.requires_grad and not g.requires_grad
    j = cygrad.autograd.jacobian(lambda a: a ** 2, x)
    assert not j.requires_grad
    np.testing.assert_allclose(j.numpy(), np.diag([1.0, 2.0]))


def test_functional_create_graph_is_differentiable_wrt_the_inputs():
    xv = np.array([0.5, 1.5])
    x = leaf(xv)
    j = cygrad.autograd.jacobian(lambda a: a ** 3, x, create_graph=True)
    assert j.requires_grad
    (g,) = grad(j.sum(), x)
    np.testing.assert_allclose(g.numpy(), 6 * xv)
    _, hv = cygrad.autograd.hvp(lambda a: (a ** 4).sum(), x,
                                cygrad.ones(2, dtype=cygrad.float64), create_graph=True)
    (g3,) = grad(hv.sum(), x)
    np.testing.assert_allclose(g3.numpy(), 24 * xv)


def test_functional_strict_mode_and_errors():
    x = cygrad.tensor([1.0, 2.0], dtype=cygrad.float64)
    indep = lambda a: cygrad.ones(2, dtype=cygrad.float64)
    np.testing.assert_array_equal(cygrad.autograd.jacobian(indep, x).numpy(),
                                  np.zeros((2, 2)))
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function "
                       "does not require gradients"):
        cygrad.autograd.jacobian(indep, x, strict=True)
    with pytest.raises(RuntimeError, match="independent of input 0. This is not "
                       "allowed in strict mode when create_graph=True"):
        cygrad.autograd.vjp(lambda a: a * 2, x, cygrad.ones(2, dtype=cygrad.float64),
                            strict=True, create_graph=True)
    with pytest.raises(RuntimeError, match="The vector v can only be None if the "
                       "user-provided function returns a single Tensor with a single "
                       "element"):
        cygrad.autograd.vjp(lambda a: a * 2, x)
    with pytest.raises(RuntimeError, match=r"v has invalid size: should be \[2\] "
                       r"but got \[3\]"):
        cygrad.autograd.vjp(lambda a: a * 2, x, cygrad.ones(3, dtype=cygrad.float64))
    with pytest.raises(RuntimeError, match="The Tensor returned by the function given "
                       "to hessian should contain a single element"):
        cygrad.autograd.hessian(lambda a: a * 2, x)


@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
def test_hessian_with_create_graph_gives_third_derivatives(strategy):
    xv = np.array([0.5, 1.5])
    x = leaf(xv)
    h = cygrad.autograd.hessian(lambda a: (a ** 4).sum() + a[0] * a[1] ** 2, x,
                                create_graph=True, outer_jacobian_strategy=strategy)
    np.testing.assert_allclose(h.detach().numpy(),
                               [[12 * 0.25, 2 * 1.5], [2 * 1.5, 12 * 2.25 + 2 * 0.5]])
    (g,) = grad(h.sum(), x)
    # sum(H) = 12 a0^2 + 12 a1^2 + 4 a1 + 2 a0
    np.testing.assert_allclose(g.numpy(), [24 * 0.5 + 2, 24 * 1.5 + 4])
