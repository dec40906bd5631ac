"""Transforms, constraints, biject_to / transform_to and
``distributions.utils`` against torch: values, inverses, log|det J| and
their gradients, shapes, caching, equality, reprs and ``check``."""

import numpy as np
import pytest

import cygrad

torch = pytest.importorskip("torch")

rng = np.random.default_rng(7)
X = rng.standard_normal((2, 3))
POS = rng.uniform(0.3, 2.0, (2, 3))


def _t(m, a, grad=False):
    return m.tensor(a, dtype=m.float64, requires_grad=grad)


# name: (build(T, m) -> transform, x in its domain)
TRANSFORMS = {
    "Exp": (lambda T, m: T.ExpTransform(), X),
    "Affine-numbers": (lambda T, m: T.AffineTransform(1.5, -2.0), X),
    "Affine-tensors": (lambda T, m: T.AffineTransform(_t(m, [0.5, 1.0, -1.0]),
                                                      _t(m, [2.0, -0.5, 3.0])), X),
    "Affine-event": (lambda T, m: T.AffineTransform(_t(m, [0.5, 1.0, -1.0]),
                                                    _t(m, [2.0, -0.5, 3.0]),
                                                    event_dim=1), X),
    "Sigmoid": (lambda T, m: T.SigmoidTransform(), X * 4),
    "Tanh": (lambda T, m: T.TanhTransform(), X * 3),
    "Softplus": (lambda T, m: T.SoftplusTransform(), X * 8),
    "Power": (lambda T, m: T.PowerTransform(_t(m, [0.5, 2.0, -1.0])), POS),
    "Abs": (lambda T, m: T.AbsTransform(), X),
    "Softmax": (lambda T, m: T.SoftmaxTransform(), X),
    "StickBreaking": (lambda T, m: T.StickBreakingTransform(), X),
    "LowerCholesky": (lambda T, m: T.LowerCholeskyTransform(),
                      rng.standard_normal((2, 3, 3))),
    "PositiveDefinite": (lambda T, m: T.PositiveDefiniteTransform(),
                         rng.standard_normal((2, 3, 3))),
    "CorrCholesky": (lambda T, m: T.CorrCholeskyTransform(),
                     rng.standard_normal((2, 6))),
    "Compose": (lambda T, m: T.ComposeTransform([T.AffineTransform(0.5, 2.0),
                                                 T.ExpTransform(),
                                                 T.PowerTransform(_t(m, 0.5))]), X),
    "Compose-events": (lambda T, m: T.ComposeTransform([
        T.ExpTransform(), T.IndependentTransform(T.AffineTransform(1.0, 3.0), 1),
        T.StickBreakingTransform()]), X),
    "Independent": (lambda T, m: T.IndependentTransform(T.SigmoidTransform(), 1), X),
    "Reshape": (lambda T, m: T.ReshapeTransform((3,), (3, 1)), X),
    "Cat": (lambda T, m: T.CatTransform([T.ExpTransform(),
                                         T.AffineTransform(1.0, 2.0)], dim=1,
                                        lengths=[1, 2]), X),
    "Cat-events": (lambda T, m: T.CatTransform([
        T.IndependentTransform(T.ExpTransform(), 1), T.SigmoidTransform()],
        dim=0, lengths=[1, 1]), X),
    "Stack": (lambda T, m: T.StackTransform([T.ExpTransform(), T.TanhTransform(),
                                             T.AffineTransform(1.0, 2.0)], dim=1), X),
    "CumulativeDistribution": (lambda T, m: T.CumulativeDistributionTransform(
        m.distributions.Normal(_t(m, 0.5), _t(m, 2.0))), X),
    "Inverse-Sigmoid": (lambda T, m: T.SigmoidTransform().inv,
                        rng.uniform(0.05, 0.95, (2, 3))),
    "identity": (lambda T, m: T.identity_transform, X),
}


def _run(m, name):
    build, x = TRANSFORMS[name]
    t = build(m.distributions.transforms, m)
    xt = _t(m, x, grad=True)
    y = t(xt)
    res = {"y": y.detach().numpy(), "x_back": t.inv(y.detach()).detach().numpy(),
           "repr": repr(t), "bijective": t.bijective,
           "domain": repr(t.domain), "codomain": repr(t.codomain),
           "domain_event_dim": t.domain.event_dim,
           "codomain_event_dim": t.codomain.event_dim,
           "fshape": tuple(t.forward_shape(tuple(x.shape))),
           "ishape": tuple(t.inverse_shape(tuple(y.shape)))}
    w = np.linspace(0.5, 1.5, y.numel()).reshape(tuple(y.shape))
    (y * m.tensor(w)).sum().backward()
    res["dy_dx"] = xt.grad.numpy()
    try:
        xt2 = _t(m, x, grad=True)
        ladj = t.log_abs_det_jacobian(xt2, t(xt2))
        res["ladj"] = ladj.detach().numpy()
        res["ladj_requires_grad"] = ladj.requires_grad
        if ladj.requires_grad:
            ladj.sum().backward()
            res["dladj_dx"] = None if xt2.grad is None else xt2.grad.numpy()
    except NotImplementedError:
        res["ladj"] = NotImplementedError
    try:
        s = t.sign
        res["sign"] = s if isinstance(s, int) else s.numpy()
    except NotImplementedError:
        res["sign"] = NotImplementedError
    return res


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_transform_matches_torch(name):
    ours, theirs = _run(cygrad, name), _run(torch, name)
    assert ours.keys() == theirs.keys()
    for k, b in theirs.items():
        a = ours[k]
        if isinstance(b, np.ndarray):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=k)
        else:
            assert a == b, (k, a, b)


def test_inverse_round_trip_and_caching():
    T = cygrad.distributions.transforms
    x = _t(cygrad, X)
    for t in (T.ExpTransform(), T.SigmoidTransform(), T.StickBreakingTransform()):
        np.testing.assert_allclose(t.inv(t(x)).numpy(), X, rtol=1e-9, atol=1e-12)
        assert t.inv(t(x)) is not x
        cached = t.with_cache(1)
        assert cached.with_cache(1) is cached
        y = cached(x)
        assert cached.inv(y) is x                   # the remembered input
        assert cached(x) is y
    assert T.ExpTransform().inv.inv == T.ExpTransform()
    t = T.ExpTransform()
    assert t.inv is t.inv                            # one inverse object
    c = T.ComposeTransform([T.ExpTransform(), T.AffineTransform(1.0, 2.0)])
    assert c.inv.inv is c
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        T.ExpTransform(cache_size=2)


def test_transform_equality_like_torch():
    for m in (cygrad, torch):
        T = m.distributions.transforms
        assert T.ExpTransform() == T.ExpTransform()
        assert T.ExpTransform() != T.SigmoidTransform()
        assert T.AffineTransform(1.0, 2.0) == T.AffineTransform(1.0, 2.0)
        assert T.AffineTransform(1.0, 2.0) != T.AffineTransform(1.0, 3.0)
        assert T.PowerTransform(_t(m, 2.0)) == T.PowerTransform(_t(m, 2.0))
        assert T.ExpTransform().inv == T.ExpTransform().inv
        assert T.ComposeTransform([T.ExpTransform()]) == T.ComposeTransform(
            [T.ExpTransform()])
        with pytest.raises(ValueError):
            T.ReshapeTransform((2, 3), (5,))
        with pytest.raises(ValueError):
            T.ReshapeTransform((3,), (3,)).forward_shape((2, 4))


CONSTRAINTS = {
    "real": lambda C: C.real, "positive": lambda C: C.positive,
    "nonnegative": lambda C: C.nonnegative,
    "greater_than": lambda C: C.greater_than(1.5),
    "greater_than_eq": lambda C: C.greater_than_eq(-0.5),
    "less_than": lambda C: C.less_than(0.5),
    "interval": lambda C: C.interval(-1.0, 2.0),
    "unit_interval": lambda C: C.unit_interval,
    "half_open_interval": lambda C: C.half_open_interval(0.0, 3.0),
    "simplex": lambda C: C.simplex, "real_vector": lambda C: C.real_vector,
    "independent": lambda C: C.independent(C.positive, 1),
    "lower_cholesky": lambda C: C.lower_cholesky,
    "positive_definite": lambda C: C.positive_definite,
    "positive_semidefinite": lambda C: C.positive_semidefinite,
    "corr_cholesky": lambda C: C.corr_cholesky,
    "cat": lambda C: C.cat([C.real, C.positive], dim=-1, lengths=[2, 1]),
    "stack": lambda C: C.stack([C.real, C.positive, C.unit_interval], dim=-1),
}
_UNCONSTRAINED_SHAPE = {"lower_cholesky": (2, 3, 3), "positive_definite": (2, 3, 3),
                        "positive_semidefinite": (2, 3, 3), "corr_cholesky": (2, 3)}


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
@pytest.mark.parametrize("name", sorted(CONSTRAINTS))
def test_biject_to_and_transform_to_match_torch(name, registry):
    x = rng.standard_normal(_UNCONSTRAINED_SHAPE.get(name, (2, 3)))
    res = []
    for m in (cygrad, torch):
        D = m.distributions
        c = CONSTRAINTS[name](D.constraints)
        try:
            t = getattr(D, registry)(c)
        except NotImplementedError as e:
            res.append(type(e))
            continue
        xt = _t(m, x)
        y = t(xt)
        out = [type(t).__name__, y.numpy(), t.log_abs_det_jacobian(xt, y).numpy()
               if t.bijective else None, bool(c.check(y).all())]
        res.append(out)
    ours, theirs = res
    if isinstance(theirs, type):
        assert ours is theirs
        return
    assert ours[0] == theirs[0] and ours[3] is True and theirs[3] is True
    for a, b in zip(ours[1:3], theirs[1:3]):
        if b is not None:
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_constraint_registry_errors():
    D = cygrad.distributions
    with pytest.raises(NotImplementedError, match="Cannot transform _Boolean "
                       "constraints"):
        D.biject_to(D.constraints.boolean)
    with pytest.raises(TypeError):
        D.biject_to.register(int, lambda c: None)


CHECKS = [
    ("real", [[0.0, np.inf, np.nan]]), ("positive", [[0.0, 1.0, -1.0]]),
    ("nonnegative", [[0.0, 1.0, -1.0]]), ("greater_than", [[1.5, 2.0, 1.0]]),
    ("greater_than_eq", [[-0.5, 0.0, -1.0]]), ("less_than", [[0.5, 0.0, 1.0]]),
    ("interval", [[-1.0, 2.0, 2.5]]), ("unit_interval", [[0.0, 1.0, 1.5]]),
    ("half_open_interval", [[0.0, 3.0, 1.0]]),
    ("simplex", [[0.2, 0.3, 0.5], [0.5, 0.6, -0.1], [0.2, 0.2, 0.2]]),
    ("real_vector", [[0.0, np.nan, 1.0], [1.0, 2.0, 3.0]]),
    ("independent", [[1.0, 2.0, 0.0], [1.0, 2.0, 3.0]]),
    ("lower_cholesky", [[[1.0, 0.0], [0.5, 2.0]], [[1.0, 0.1], [0.5, 2.0]],
                        [[-1.0, 0.0], [0.5, 2.0]]]),
    ("positive_definite", [[[2.0, 0.5], [0.5, 1.0]], [[1.0, 2.0], [2.0, 1.0]]]),
    ("positive_semidefinite", [[[1.0, 1.0], [1.0, 1.0]], [[1.0, 2.0], [2.0, 1.0]]]),
    ("corr_cholesky", [[[1.0, 0.0], [0.6, 0.8]], [[1.0, 0.0], [0.6, 0.9]]]),
    ("cat", [[0.0, -1.0, 1.0], [0.0, 1.0, -1.0]]),
    ("stack", [[0.0, 1.0, 0.5], [0.0, -1.0, 1.5]]),
]
OTHER_CHECKS = [
    (lambda C: C.boolean, [0.0, 1.0, 0.5]),
    (lambda C: C.one_hot, [[0.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.5, 0.5, 0.0]]),
    (lambda C: C.integer_interval(0, 3), [0.0, 3.0, 4.0, 1.5]),
    (lambda C: C.nonnegative_integer, [0.0, 3.0, -1.0, 1.5]),
    (lambda C: C.positive_integer, [0.0, 3.0, -1.0, 1.5]),
    (lambda C: C.multinomial(4), [[1.0, 3.0], [3.0, 3.0], [-1.0, 2.0]]),
    (lambda C: C.lower_triangular, [[[1.0, 0.0], [2.0, -3.0]], [[1.0, 1.0],
                                                                [0.0, 1.0]]]),
    (lambda C: C.square, np.zeros((2, 2, 3))),
    (lambda C: C.symmetric, [[[1.0, 2.0], [2.0, 1.0]], [[1.0, 2.0], [3.0, 1.0]]]),
]


@pytest.mark.parametrize("make,value", [(CONSTRAINTS[n], v) for n, v in CHECKS]
                         + OTHER_CHECKS)
def test_constraint_check_repr_and_flags_match_torch(make, value):
    res = []
    for m in (cygrad, torch):
        c = make(m.distributions.constraints)
        res.append((c.check(_t(m, np.asarray(value))).numpy(), repr(c),
                    c.is_discrete, c.event_dim))
    (a, *ra), (b, *rb) = res
    np.testing.assert_array_equal(a, b)
    assert ra == rb


def test_dependent_constraints_like_torch():
    for m in (cygrad, torch):
        C = m.distributions.constraints
        assert C.is_dependent(C.dependent)
        assert not C.is_dependent(C.real)
        with pytest.raises(ValueError, match="Cannot determine validity of "
                           "dependent constraint"):
            C.dependent.check(m.tensor(0.0))
        with pytest.raises(NotImplementedError):
            C.dependent.event_dim
        d = C.dependent(is_discrete=True, event_dim=1)
        assert d.is_discrete and d.event_dim == 1
        assert C.is_dependent(m.distributions.Uniform.support)
        assert repr(C.simplex) == "Simplex()"
    with pytest.raises(ValueError, match="Expected value.dim\\(\\) >= 2 but got 1"):
        cygrad.distributions.constraints.independent(
            cygrad.distributions.constraints.real, 2).check(cygrad.zeros(3))


@pytest.mark.parametrize("fn", [
    lambda U, m: U.broadcast_all(_t(m, [1.0, 2.0]), 3.0, _t(m, [[0.5], [1.5]])),
    lambda U, m: U.logits_to_probs(_t(m, X)),
    lambda U, m: U.logits_to_probs(_t(m, X), is_binary=True),
    lambda U, m: U.probs_to_logits(_t(m, [[0.0, 0.3, 0.7]])),
    lambda U, m: U.probs_to_logits(_t(m, [0.0, 0.3, 1.0]), is_binary=True),
    lambda U, m: U.clamp_probs(_t(m, [0.0, 0.5, 1.0])),
    lambda U, m: U.vec_to_tril_matrix(_t(m, np.arange(12.0).reshape(2, 6))),
    lambda U, m: U.vec_to_tril_matrix(_t(m, np.arange(6.0)), diag=-1),
    lambda U, m: U.tril_matrix_to_vec(_t(m, np.arange(18.0).reshape(2, 3, 3)), 1),
])
def test_utils_match_torch(fn):
    a = fn(cygrad.distributions.utils, cygrad)
    b = fn(torch.distributions.utils, torch)
    if isinstance(b, tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x.numpy(), y.numpy())
            assert str(x.dtype).split(".")[-1] == str(y.dtype).split(".")[-1]
    else:
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)


def test_broadcast_all_dtype_and_errors_like_torch():
    for m in (cygrad, torch):
        U = m.distributions.utils
        a, b = U.broadcast_all(1.0, 2)
        assert a.dtype == m.float32 and tuple(a.shape) == ()
        a, b = U.broadcast_all(1.0, m.tensor([1.0, 2.0], dtype=m.float64))
        assert a.dtype == m.float64 and tuple(a.shape) == (2,)
        with pytest.raises(ValueError, match="Input arguments must all be "
                           "instances of Number"):
            U.broadcast_all("a", 1.0)


def test_lazy_property_computes_once():
    calls = []

    class A:
        @cygrad.distributions.utils.lazy_property
        def x(self):
            calls.append(1)
            return 42

    a = A()
    assert a.x == 42 and a.x == 42 and calls == [1]
    assert "x" in a.__dict__
    assert isinstance(A.x, cygrad.distributions.utils.lazy_property)
