"""kl_divergence against torch for every pair torch registers (values and
gradients with respect to both distributions' parameters, infinite where
the supports say so), and the registry: most-specific dispatch, the
ambiguity warning, the memo, and the error for an unregistered pair."""

import warnings

import numpy as np
import pytest

import cygrad

torch = pytest.importorskip("torch")

A = np.array


def _spd(seed):
    r = np.random.default_rng(seed).standard_normal((3, 2, 2))
    return r @ np.swapaxes(r, -1, -2) + 2 * np.eye(2)


# two parameter sets per class: index 0 is used as p, index 1 as q; batch (3,)
PARAMS = {
    "Bernoulli": [dict(probs=A([0.2, 0.0, 0.7])), dict(probs=A([0.5, 0.3, 1.0]))],
    "Beta": [dict(concentration1=A([0.5, 2.0, 1.0]),
                  concentration0=A([1.5, 0.7, 3.0])),
             dict(concentration1=A([2.0, 1.0, 0.6]),
                  concentration0=A([1.0, 2.5, 0.9]))],
    "Binomial": [dict(total_count=A([5.0, 7.0, 3.0]), probs=A([0.3, 0.6, 0.2])),
                 dict(total_count=A([5.0, 4.0, 3.0]), probs=A([0.5, 0.2, 0.9]))],
    "Categorical": [dict(probs=A([[0.2, 0.3, 0.5], [0.0, 0.5, 0.5],
                                  [0.1, 0.1, 0.8]])),
                    dict(probs=A([[0.5, 0.25, 0.25], [0.3, 0.3, 0.4],
                                  [0.2, 0.0, 0.8]]))],
    "ContinuousBernoulli": [dict(probs=A([0.2, 0.4999, 0.8])),
                            dict(probs=A([0.6, 0.3, 0.5001]))],
    "Dirichlet": [dict(concentration=A([[0.5, 1.0, 2.0], [1.5, 1.5, 0.3],
                                        [3.0, 1.0, 1.0]])),
                  dict(concentration=A([[1.0, 1.0, 1.0], [0.7, 2.0, 4.0],
                                        [2.0, 0.5, 1.5]]))],
    "Exponential": [dict(rate=A([0.5, 1.0, 3.0])), dict(rate=A([2.0, 0.7, 1.0]))],
    "Gamma": [dict(concentration=A([0.5, 2.0, 4.0]), rate=A([1.0, 0.5, 2.0])),
              dict(concentration=A([1.5, 1.0, 2.0]), rate=A([0.7, 2.0, 1.0]))],
    "Gumbel": [dict(loc=A([0.0, 1.0, -1.0]), scale=A([1.0, 0.5, 2.0])),
               dict(loc=A([0.5, -1.0, 0.0]), scale=A([2.0, 1.0, 0.7]))],
    "Geometric": [dict(probs=A([0.2, 0.5, 0.9])), dict(probs=A([0.4, 0.1, 0.6]))],
    "HalfNormal": [dict(scale=A([0.5, 1.0, 2.0])), dict(scale=A([1.5, 0.7, 1.0]))],
    "Laplace": [dict(loc=A([0.0, 1.0, -1.0]), scale=A([1.0, 0.5, 2.0])),
                dict(loc=A([0.5, -1.0, 0.0]), scale=A([2.0, 1.0, 0.7]))],
    "LowRankMultivariateNormal": [
        dict(loc=A([[0.0, 1.0], [1.0, 0.0], [-1.0, 2.0]]),
             cov_factor=A([[[1.0], [0.5]], [[0.2], [1.0]], [[-0.5], [0.3]]]),
             cov_diag=A([[1.0, 0.5], [2.0, 1.0], [0.7, 0.9]])),
        dict(loc=A([[0.5, 0.0], [0.0, 1.0], [1.0, 1.0]]),
             cov_factor=A([[[0.3], [0.1]], [[1.0], [-1.0]], [[0.5], [0.5]]]),
             cov_diag=A([[0.5, 1.5], [1.0, 1.0], [2.0, 0.4]]))],
    "MultivariateNormal": [
        dict(loc=A([[0.0, 1.0], [1.0, 0.0], [-1.0, 2.0]]),
             covariance_matrix=_spd(0)),
        dict(loc=A([[0.5, 0.0], [0.0, 1.0], [1.0, 1.0]]),
             scale_tril=np.linalg.cholesky(_spd(1)))],
    "Normal": [dict(loc=A([0.0, 1.0, -1.0]), scale=A([1.0, 0.5, 2.0])),
               dict(loc=A([0.5, -1.0, 0.0]), scale=A([2.0, 1.0, 0.7]))],
    "OneHotCategorical": [dict(probs=A([[0.2, 0.3, 0.5], [0.0, 0.5, 0.5],
                                        [0.1, 0.1, 0.8]])),
                          dict(logits=A([[0.5, 0.25, -1.0], [0.3, 2.0, 0.4],
                                         [0.2, 0.0, 0.8]]))],
    "Pareto": [dict(scale=A([1.0, 2.0, 0.5]), alpha=A([0.8, 2.5, 3.0])),
               dict(scale=A([0.5, 3.0, 0.5]), alpha=A([2.0, 1.0, 1.5]))],
    "Poisson": [dict(rate=A([0.5, 2.0, 4.0])), dict(rate=A([1.0, 0.7, 5.0]))],
    "Uniform": [dict(low=A([0.1, -0.5, 0.2]), high=A([0.9, 0.5, 1.5])),
                dict(low=A([0.0, -1.0, 0.3]), high=A([1.0, 2.0, 1.0]))],
    "Cauchy": [dict(loc=A([0.0, 1.0, -1.0]), scale=A([1.0, 0.5, 2.0])),
               dict(loc=A([0.5, -1.0, 0.0]), scale=A([2.0, 1.0, 0.7]))],
}


def _build(m, name, which):
    """(distribution, {name: leaf tensor}) of ``PARAMS[name][which]``."""
    D = m.distributions
    if name == "Independent":
        d, leaves = _build(m, "Normal", which)
        return D.Independent(d.expand((2, 3)), 1), leaves
    if name == "TransformedDistribution":
        d, leaves = _build(m, "Normal", which)
        return D.TransformedDistribution(d, [D.ExpTransform(),
                                             D.AffineTransform(1.0, 2.0)]), leaves
    if name == "ExponentialFamily":         # a family with no pair of its own
        df = m.tensor(A([3.0, 4.5, 6.0]) + which, dtype=m.float64,
                      requires_grad=True)
        cov = m.tensor(_spd(which), dtype=m.float64, requires_grad=True)
        return D.Wishart(df, covariance_matrix=cov), {"df": df, "cov": cov}
    leaves = {}
    kwargs = {}
    for k, v in PARAMS[name][which].items():
        t = m.tensor(v, dtype=m.float64, requires_grad=k != "total_count")
        kwargs[k] = t
        if t.requires_grad:
            leaves[k] = t
    return getattr(D, name)(**kwargs), leaves


def _pairs():
    for (p, q) in sorted(torch.distributions.kl._KL_REGISTRY,
                         key=lambda pq: (pq[0].__name__, pq[1].__name__)):
        yield pytest.param(p.__name__, q.__name__, id=f"{p.__name__}-{q.__name__}")


def _kl(m, pname, qname):
    p, lp = _build(m, pname, 0)
    q, lq = _build(m, qname, 1)
    try:
        out = m.distributions.kl_divergence(p, q)
    except Exception as e:
        return type(e), None
    leaves = {("p", k): t for k, t in lp.items()}
    leaves.update({("q", k): t for k, t in lq.items()})
    finite = np.isfinite(out.detach().numpy())
    grads = {}
    if out.requires_grad and finite.any():
        w = np.linspace(0.5, 1.5, finite.size).reshape(finite.shape) * finite
        (out.masked_fill(~m.tensor(finite), 0) * m.tensor(w)).sum().backward()
        grads = {k: None if t.grad is None else t.grad.numpy()
                 for k, t in leaves.items()}
    return out.detach().numpy(), grads


def test_every_torch_pair_is_registered():
    ours = {(p.__name__, q.__name__) for p, q in
            cygrad.distributions.kl._KL_REGISTRY}
    theirs = {(p.__name__, q.__name__) for p, q in torch.distributions.kl._KL_REGISTRY}
    assert ours == theirs


@pytest.mark.parametrize("pname,qname", list(_pairs()))
def test_kl_matches_torch(pname, qname):
    ours, g_ours = _kl(cygrad, pname, qname)
    theirs, g_theirs = _kl(torch, pname, qname)
    if isinstance(theirs, type):
        assert ours is theirs
        return
    assert not isinstance(ours, type), ours
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    assert g_ours.keys() == g_theirs.keys()
    for k, g in g_theirs.items():
        if g is None:
            assert g_ours[k] is None or not np.any(g_ours[k]), k
        else:
            np.testing.assert_allclose(g_ours[k], g, rtol=1e-9, atol=1e-11,
                                       err_msg=str(k))


def test_kl_float32_matches_torch():
    res = []
    for m in (cygrad, torch):
        D = m.distributions
        p = D.Normal(m.tensor([0.0, 1.0]), m.tensor([1.0, 2.0]))
        q = D.Normal(m.tensor([0.5, 0.0]), m.tensor([2.0, 0.5]))
        out = D.kl_divergence(p, q)
        assert out.dtype == m.float32
        res.append(out.numpy())
    np.testing.assert_allclose(*res, rtol=1e-5, atol=1e-6)


def test_unregistered_pair_raises_like_torch():
    for m in (cygrad, torch):
        D = m.distributions
        with pytest.raises(NotImplementedError, match="No KL\\(p \\|\\| q\\) is "
                           "implemented for p type Cauchy and q type Normal"):
            D.kl_divergence(D.Cauchy(0.0, 1.0), D.Normal(0.0, 1.0))
        with pytest.raises(NotImplementedError):
            D.kl_divergence(D.Normal(0.0, 1.0), D.Cauchy(0.0, 1.0))


def test_register_kl_dispatches_to_the_most_specific_pair():
    D = cygrad.distributions
    kl = D.kl

    class MyNormal(D.Normal):
        pass

    class MyOtherNormal(D.Normal):
        pass

    p, q = MyNormal(0.0, 1.0), MyOtherNormal(1.0, 2.0)
    # inherited: the Normal pair's closed form
    assert float(D.kl_divergence(p, q)) == pytest.approx(
        float(D.kl_divergence(D.Normal(0.0, 1.0), D.Normal(1.0, 2.0))))
    saved = dict(kl._KL_REGISTRY)
    try:
        @D.register_kl(MyNormal, D.Normal)
        def _left(p, q):
            return p.loc * 0 + 11.0

        @D.register_kl(D.Normal, MyOtherNormal)
        def _right(p, q):
            return p.loc * 0 + 22.0

        with pytest.warns(RuntimeWarning, match="Ambiguous kl_divergence"
                          "\\(MyNormal, MyOtherNormal\\). Please "
                          "register_kl\\(MyNormal, MyOtherNormal\\)"):
            assert float(D.kl_divergence(p, q)) == 11.0   # p's class decides

        @D.register_kl(MyNormal, MyOtherNormal)
        def _both(p, q):
            return p.loc * 0 + 33.0

        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert float(D.kl_divergence(p, q)) == 33.0   # the memo was cleared
        assert float(D.kl_divergence(p, D.Normal(0.0, 1.0))) == 11.0
        assert float(D.kl_divergence(D.Normal(0.0, 1.0), q)) == 22.0
    finally:
        kl._KL_REGISTRY.clear()
        kl._KL_REGISTRY.update(saved)
        kl._KL_MEMOIZE.clear()


def test_register_kl_refuses_non_distributions():
    for m in (cygrad, torch):
        with pytest.raises(TypeError):
            m.distributions.register_kl(m.distributions.Normal, "Normal")
    # torch lets any class through here (its check is ``not isinstance(t,
    # type) and ...``); cygrad refuses classes that are not distributions
    with pytest.raises(TypeError, match="Expected type_p to be a Distribution"):
        cygrad.distributions.register_kl(int, cygrad.distributions.Normal)


def test_scalar_parameters_have_entropy_and_kl():
    # digamma of a 0-d tensor (Gamma's entropy, the Dirichlet KL's total)
    for m in (cygrad, torch):
        D = m.distributions
        g = D.Gamma(m.tensor(2.0, dtype=m.float64), 1.5)
        assert tuple(g.entropy().shape) == ()
    np.testing.assert_allclose(
        cygrad.distributions.Gamma(cygrad.tensor(2.0, dtype=cygrad.float64),
                                   1.5).entropy().numpy(),
        torch.distributions.Gamma(torch.tensor(2.0, dtype=torch.float64),
                                  1.5).entropy().numpy(), rtol=1e-12)


def test_kl_of_a_distribution_with_itself_is_zero():
    D = cygrad.distributions
    loc = cygrad.tensor([0.3, -1.0], dtype=cygrad.float64)
    scale = cygrad.tensor([[1.0, 0.0], [0.4, 2.0]], dtype=cygrad.float64)
    for d in (D.Normal(loc, loc.exp()), D.Gamma(loc.exp(), 2.0),
              D.MultivariateNormal(loc, scale_tril=scale),
              D.Dirichlet(loc.exp()), D.Categorical(logits=loc)):
        np.testing.assert_allclose(D.kl_divergence(d, d).numpy(), 0, atol=1e-12)
