"""Sampling: draws lie in the support, their moments and CDF match the
distribution (seeded, with bounds of several standard errors), a seed
reproduces them, and ``rsample``'s gradients are right: exact for the
location-scale families, the implicit reparameterisation gradient of Gamma
against finite differences of the CDF (and against torch's approximation),
and unbiased for Gamma, Beta, Dirichlet, Chi2, StudentT and FisherSnedecor
(the mean gradient over many draws is the gradient of the mean).

No torch needed except where a test says so."""

import math

import numpy as np
import pytest
from dist_cases import CASES

import cygrad
from cygrad.distributions._dirichlet_sampler import beta_sample_grad
from cygrad.distributions._gamma_sampler import standard_gamma_grad

D = cygrad.distributions
N = 20000


def _build(case, grad=False):
    P = {k: cygrad.tensor(v, dtype=cygrad.float64,
                          requires_grad=grad and k not in case.fixed)
         for k, v in case.params.items()}
    return case.build(D, P), P


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_samples_lie_in_the_support(case):
    d, _ = _build(case)
    s = d.sample((200,))
    assert tuple(s.shape) == (200,) + tuple(d.batch_shape) + tuple(d.event_shape)
    assert bool(d.support.check(s).all())
    if d.has_rsample:
        assert bool(d.support.check(d.rsample((50,)).detach()).all())


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_sample_with_parameters_that_require_grad(case):
    d, _ = _build(case, grad=True)
    s = d.sample((3,))
    assert not s.requires_grad
    if d.has_rsample:
        r = d.rsample((3,))
        assert r.requires_grad
        r.sum().backward()


def _finite(t):
    try:
        a = t.detach().numpy()
    except NotImplementedError:
        return None
    return a if np.all(np.isfinite(a)) else None


@pytest.mark.parametrize("case", [c for c in CASES if c.id != "VonMises"],
                         ids=repr)
def test_sample_mean_matches_mean(case):
    # (VonMises: angles wrap, so their linear mean is not loc; its circular
    # moments are checked in test_multivariate_moments)
    d, _ = _build(case)
    try:
        mean, var = _finite(d.mean), _finite(d.variance)
    except NotImplementedError:
        pytest.skip("no mean/variance")
    if mean is None or var is None:
        pytest.skip("infinite or undefined moments")
    cygrad.manual_seed(11)
    s = d.sample((N,)).numpy()
    se = np.sqrt(var / N)
    assert np.all(np.abs(s.mean(0) - mean) <= 6 * se + 1e-12), (
        s.mean(0), mean, se)


_CDF_CASES = [c for c in CASES if c.id in (
    "Normal", "Uniform", "Gamma", "Chi2", "Exponential", "Laplace", "Cauchy",
    "HalfNormal", "HalfCauchy", "LogNormal", "Gumbel", "Weibull", "Pareto",
    "InverseGamma", "ContinuousBernoulli", "GeneralizedPareto", "Kumaraswamy")]


@pytest.mark.parametrize("case", _CDF_CASES, ids=repr)
def test_empirical_cdf_matches_cdf(case):
    """At the empirical 10/50/90% points the CDF is within 6 standard errors
    of 0.1/0.5/0.9 (a check that also covers the heavy-tailed families)."""
    d, _ = _build(case)
    cygrad.manual_seed(5)
    s = d.sample((N,)).numpy()
    for q in (0.1, 0.5, 0.9):
        x = cygrad.tensor(np.quantile(s, q, axis=0), dtype=cygrad.float64)
        F = d.cdf(x).numpy()
        assert np.all(np.abs(F - q) <= 6 * math.sqrt(q * (1 - q) / N)), (q, F)


@pytest.mark.parametrize("make,support", [
    (lambda: D.Categorical(cygrad.tensor([0.1, 0.6, 0.3], dtype=cygrad.float64)),
     range(3)),
    (lambda: D.Poisson(cygrad.tensor(3.5, dtype=cygrad.float64)), range(8)),
    (lambda: D.Geometric(cygrad.tensor(0.3, dtype=cygrad.float64)), range(8)),
    (lambda: D.Binomial(7, cygrad.tensor(0.35, dtype=cygrad.float64)), range(8)),
    (lambda: D.NegativeBinomial(cygrad.tensor(3.0, dtype=cygrad.float64),
                                cygrad.tensor(0.4, dtype=cygrad.float64)), range(8)),
    (lambda: D.Bernoulli(cygrad.tensor(0.3, dtype=cygrad.float64)), range(2)),
], ids=["Categorical", "Poisson", "Geometric", "Binomial", "NegativeBinomial",
        "Bernoulli"])
def test_discrete_frequencies_match_pmf(make, support):
    d = make()
    cygrad.manual_seed(2)
    s = d.sample((N,)).numpy()
    for k in support:
        v = cygrad.tensor(k) if isinstance(d, D.Categorical) else \
            cygrad.tensor(float(k), dtype=cygrad.float64)
        p = float(d.log_prob(v).exp())
        emp = np.mean(s == k)
        assert abs(emp - p) <= 6 * math.sqrt(p * (1 - p) / N) + 1e-4, (k, emp, p)


def test_multivariate_moments():
    cov = cygrad.tensor([[2.0, 0.6], [0.6, 1.0]], dtype=cygrad.float64)
    loc = cygrad.tensor([1.0, -1.0], dtype=cygrad.float64)
    for d in (D.MultivariateNormal(loc, cov),
              D.LowRankMultivariateNormal(loc, cygrad.tensor([[1.0], [0.6]],
                                                             dtype=cygrad.float64),
                                          cygrad.tensor([1.0, 0.64],
                                                        dtype=cygrad.float64))):
        cygrad.manual_seed(4)
        s = d.sample((N,)).numpy()
        np.testing.assert_allclose(s.mean(0), loc.numpy(), atol=0.05)
        np.testing.assert_allclose(np.cov(s.T), d.covariance_matrix.numpy(), atol=0.08)
    w = D.Wishart(cygrad.tensor(5.0, dtype=cygrad.float64), covariance_matrix=cov)
    cygrad.manual_seed(4)
    np.testing.assert_allclose(w.sample((N,)).numpy().mean(0), w.mean.numpy(),
                               rtol=0.05, atol=0.05)
    lkj = D.LKJCholesky(3, 2.0)
    L = lkj.sample((N,)).numpy()
    corr = L @ np.swapaxes(L, -1, -2)
    np.testing.assert_allclose(np.diagonal(corr, axis1=-2, axis2=-1), 1.0, atol=1e-6)
    # LKJ(eta) marginal correlations: E = 0, Var = 1 / (2 eta + d - 1)
    np.testing.assert_allclose(corr[:, 0, 1].var(), 1 / (2 * 2.0 + 2), rtol=0.05)
    vm = D.VonMises(cygrad.tensor(0.5, dtype=cygrad.float64), 2.0)
    a = vm.sample((N,)).numpy()
    assert np.all((a >= -math.pi) & (a < math.pi))
    np.testing.assert_allclose(np.angle(np.exp(1j * a).mean()), 0.5, atol=0.02)
    np.testing.assert_allclose(1 - np.abs(np.exp(1j * a).mean()),
                               float(vm.variance), atol=0.01)


def test_manual_seed_reproduces_samples():
    for make in (lambda: D.Normal(0.0, 1.0), lambda: D.Gamma(2.0, 1.0),
                 lambda: D.Dirichlet(cygrad.tensor([1.0, 2.0, 3.0])),
                 lambda: D.Categorical(cygrad.tensor([0.2, 0.8])),
                 lambda: D.VonMises(0.0, 1.0), lambda: D.Binomial(5, 0.3)):
        cygrad.manual_seed(123)
        a = make().sample((10,)).numpy()
        cygrad.manual_seed(123)
        b = make().sample((10,)).numpy()
        c = make().sample((10,)).numpy()
        np.testing.assert_array_equal(a, b)
        assert not np.array_equal(a, c)
    g = cygrad.Generator().manual_seed(0)
    assert g is not None


def test_location_scale_rsample_gradients_are_the_noise():
    loc = cygrad.tensor([0.5, -1.0], dtype=cygrad.float64, requires_grad=True)
    scale = cygrad.tensor([2.0, 0.5], dtype=cygrad.float64, requires_grad=True)
    for Dist in (D.Normal, D.Laplace, D.Cauchy, D.Gumbel):
        loc.grad = scale.grad = None
        x = Dist(loc, scale).rsample()
        eps = ((x - loc) / scale).detach()
        x.sum().backward()
        np.testing.assert_allclose(loc.grad.numpy(), [1.0, 1.0])
        np.testing.assert_allclose(scale.grad.numpy(), eps.numpy(), rtol=1e-12)
    s = D.Normal(loc, scale).sample()
    assert not s.requires_grad
    with pytest.raises(NotImplementedError):
        D.Poisson(cygrad.tensor(1.0)).rsample()


@pytest.mark.parametrize("alpha", [0.05, 0.3, 1.0, 2.5, 9.0, 150.0])
def test_gamma_implicit_gradient_matches_cdf_finite_differences(alpha):
    """dx/dalpha at fixed u = P(alpha, x) is -(dP/dalpha) / (dP/dx); dP/dalpha
    by central differences of the regularised incomplete gamma."""
    a = cygrad.full((400,), alpha, dtype=cygrad.float64, requires_grad=True)
    cygrad.manual_seed(9)
    x = D.Gamma(a, 1.0).rsample()
    x.sum().backward()
    xs = x.detach()
    h = 1e-5 * alpha
    P = cygrad.special.gammainc
    dPda = (P(cygrad.full((400,), alpha + h, dtype=cygrad.float64), xs)
            - P(cygrad.full((400,), alpha - h, dtype=cygrad.float64), xs)) / (2 * h)
    pdf = (D.Gamma(cygrad.tensor(alpha, dtype=cygrad.float64), 1.0)
           .log_prob(xs).exp())
    expected = (-dPda / pdf).numpy()
    ok = pdf.numpy() > 1e-8
    np.testing.assert_allclose(a.grad.numpy()[ok], expected[ok], rtol=2e-5,
                               atol=1e-9)


def test_gamma_implicit_gradient_close_to_torchs_approximation():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    for alpha in (0.1, 0.7, 3.0, 20.0, 500.0):
        x = np.maximum(rng.standard_gamma(alpha, 500), 1e-30)
        ours = standard_gamma_grad(x, alpha)
        theirs = torch._standard_gamma_grad(torch.full((500,), alpha,
                                                       dtype=torch.float64),
                                            torch.tensor(x)).numpy()
        # torch's series / saddle-point / rational fit is good to ~1e-3
        np.testing.assert_allclose(ours, theirs, rtol=2e-3, atol=1e-6)


@pytest.mark.parametrize("a,b", [(0.05, 0.3), (0.5, 1.5), (1.0, 1.0), (2.0, 0.7),
                                 (3.0, 3.0), (0.2, 40.0), (30.0, 50.0),
                                 (500.0, 200.0)])
def test_beta_implicit_gradient_matches_cdf_finite_differences(a, b):
    sp = pytest.importorskip("scipy.special")
    x = np.clip(np.random.default_rng(3).beta(a, b, 400), 1e-300, 1 - 1e-16)
    h = 1e-6 * a
    dI = (sp.betainc(a + h, b, x) - sp.betainc(a - h, b, x)) / (2 * h)
    log_pdf = ((a - 1) * np.log(x) + (b - 1) * np.log1p(-x)
               - (sp.gammaln(a) + sp.gammaln(b) - sp.gammaln(a + b)))
    pdf = np.exp(log_pdf)
    ok = pdf > 1e-6
    np.testing.assert_allclose(beta_sample_grad(x, a, b)[ok], (-dI / pdf)[ok],
                               rtol=2e-6, atol=1e-12)


def test_dirichlet_and_beta_rsample_gradients_are_torchs_formula():
    """For the draw cygrad made, torch's backward (``_dirichlet_grad``, an
    approximation of the same derivative) gives the same gradient."""
    torch = pytest.importorskip("torch")
    conc = cygrad.tensor([[0.3, 1.0, 2.5], [4.0, 0.8, 1.2]], dtype=cygrad.float64,
                         requires_grad=True)
    w = np.array([[1.0, -2.0, 0.5], [0.3, 0.7, -1.0]])
    x = D.Dirichlet(conc).rsample()
    (x * cygrad.tensor(w, dtype=cygrad.float64)).sum().backward()
    X = torch.tensor(x.detach().numpy())
    c = torch.tensor(conc.detach().numpy())
    d = torch._dirichlet_grad(X, c, c.sum(-1, keepdim=True).expand_as(c))
    g = torch.tensor(w)
    expected = (d * (g - (X * g).sum(-1, keepdim=True))).numpy()
    np.testing.assert_allclose(conc.grad.numpy(), expected, rtol=2e-3, atol=1e-6)
    a = cygrad.tensor([0.5, 2.0, 3.0], dtype=cygrad.float64, requires_grad=True)
    b = cygrad.tensor([1.5, 0.7, 30.0], dtype=cygrad.float64, requires_grad=True)
    y = D.Beta(a, b).rsample()
    y.sum().backward()
    yn = y.detach().numpy()
    np.testing.assert_allclose(a.grad.numpy(), beta_sample_grad(
        yn, a.detach().numpy(), b.detach().numpy()), rtol=1e-9)
    np.testing.assert_allclose(b.grad.numpy(), -beta_sample_grad(
        1 - yn, b.detach().numpy(), a.detach().numpy()), rtol=1e-9)


def _mean_grad(make, params, n=N):
    """The gradient, with respect to ``params``, of the mean of n rsamples."""
    cygrad.manual_seed(17)
    x = make(*params).rsample((n,))
    x.sum().backward()
    return [p.grad.numpy() / n for p in params]


def test_rsample_gradients_are_unbiased():
    f64 = dict(dtype=cygrad.float64, requires_grad=True)
    # Gamma: E = c / r
    c, r = cygrad.tensor([0.4, 3.0], **f64), cygrad.tensor([2.0, 0.5], **f64)
    gc, gr = _mean_grad(D.Gamma, [c, r])
    np.testing.assert_allclose(gc, 1 / r.detach().numpy(), rtol=0.05)
    np.testing.assert_allclose(gr, -(c / r ** 2).detach().numpy(), rtol=0.05)
    # Beta: E = a / (a + b)
    a, b = cygrad.tensor([0.5, 2.0], **f64), cygrad.tensor([1.5, 3.0], **f64)
    ga, gb = _mean_grad(D.Beta, [a, b])
    an, bn = a.detach().numpy(), b.detach().numpy()
    np.testing.assert_allclose(ga, bn / (an + bn) ** 2, rtol=0.06)
    np.testing.assert_allclose(gb, -an / (an + bn) ** 2, rtol=0.06)
    # Dirichlet: d E[x_0] / d c = (delta_0j c0 - c_0) / c0^2
    conc = cygrad.tensor([0.7, 1.5, 3.0], **f64)
    cygrad.manual_seed(3)
    x = D.Dirichlet(conc).rsample((N,))
    x[:, 0].sum().backward()
    cn = conc.detach().numpy()
    expected = (np.eye(3)[0] * cn.sum() - cn[0]) / cn.sum() ** 2
    np.testing.assert_allclose(conc.grad.numpy() / N, expected, rtol=0.06, atol=3e-3)
    # Chi2: E = df
    df = cygrad.tensor([1.5, 6.0], **f64)
    (gdf,) = _mean_grad(D.Chi2, [df])
    np.testing.assert_allclose(gdf, 1.0, rtol=0.05)
    # StudentT (df > 1): E = loc, whatever the scale and df
    t_df, t_loc, t_scale = (cygrad.tensor([4.0], **f64), cygrad.tensor([1.0], **f64),
                            cygrad.tensor([2.0], **f64))
    g_df, g_loc, g_scale = _mean_grad(D.StudentT, [t_df, t_loc, t_scale])
    np.testing.assert_allclose(g_loc, 1.0)
    assert abs(g_df[0]) < 0.05 and abs(g_scale[0]) < 0.05
    # FisherSnedecor: E = d2 / (d2 - 2)
    d1, d2 = cygrad.tensor([5.0], **f64), cygrad.tensor([12.0], **f64)
    g1, g2 = _mean_grad(D.FisherSnedecor, [d1, d2])
    assert abs(g1[0]) < 0.02
    np.testing.assert_allclose(g2, -2 / (12.0 - 2) ** 2, rtol=0.2)


def test_straight_through_and_relaxed_rsample_gradients():
    logits = cygrad.tensor([0.2, -0.4, 1.0], dtype=cygrad.float64, requires_grad=True)
    d = D.OneHotCategoricalStraightThrough(logits=logits)
    s = d.rsample((5,))
    assert set(np.unique(s.detach().numpy())) <= {0.0, 1.0}
    (s * cygrad.tensor([1.0, 2.0, 3.0], dtype=cygrad.float64)).sum().backward()
    p = d.probs.detach().numpy()
    w = np.array([1.0, 2.0, 3.0])
    # straight through: the gradient of 5 * <w, probs>
    np.testing.assert_allclose(logits.grad.numpy(), 5 * p * (w - (p * w).sum()))
    t = cygrad.tensor(0.5, dtype=cygrad.float64, requires_grad=True)
    r = D.RelaxedOneHotCategorical(t, logits=logits).rsample((4,))
    np.testing.assert_allclose(r.detach().numpy().sum(-1), 1.0)
    r.sum().backward()
    assert t.grad is not None
    rb = D.RelaxedBernoulli(t, logits=logits).rsample()
    assert bool(((rb > 0) & (rb < 1)).all())
