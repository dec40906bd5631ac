"""Bad input to the distributions raises what torch raises: the exception
type and the message (naming the parameter, its constraint and the
distribution), for invalid parameters, values outside the support, values
of the wrong shape, and constructor misuse; ``validate_args=False`` and
``Distribution.set_default_validate_args`` turn the checks off."""

import math

import numpy as np
import pytest

import cygrad

torch = pytest.importorskip("torch")


def _message(fn, m):
    try:
        fn(m.distributions, m)
    except Exception as e:
        return type(e), str(e).replace("torch.", "cygrad.")
    return None, None


def _both(fn):
    ours, theirs = _message(fn, cygrad), _message(fn, torch)
    assert theirs[0] is not None, "torch did not raise"
    assert ours[0] is theirs[0], (ours, theirs)
    return ours[1], theirs[1]


T = lambda m, *v: m.tensor(list(v))  # noqa: E731

INVALID_PARAMETERS = {
    "Normal-scale": lambda D, m: D.Normal(T(m, 0.0, 1.0), T(m, 1.0, -1.0)),
    "Normal-loc-nan": lambda D, m: D.Normal(T(m, math.nan), 1.0),
    "Normal-scalar": lambda D, m: D.Normal(0.0, -1.0),
    "Uniform": lambda D, m: D.Uniform(T(m, 0.0, 2.0), T(m, 1.0, 1.0)),
    "Bernoulli": lambda D, m: D.Bernoulli(probs=T(m, 0.5, 1.5)),
    "Binomial-count": lambda D, m: D.Binomial(T(m, 2.5), probs=T(m, 0.5)),
    "Binomial-probs": lambda D, m: D.Binomial(3, probs=T(m, -0.5)),
    "Categorical": lambda D, m: D.Categorical(probs=T(m, -0.1, 1.1)),
    "Categorical-nan-logits": lambda D, m: D.Categorical(logits=T(m, 0.0, math.nan)),
    "Multinomial": lambda D, m: D.Multinomial(3, probs=T(m, -0.1, 1.1)),
    "Gamma": lambda D, m: D.Gamma(T(m, 1.0, 0.0), 1.0),
    "Gamma-rate": lambda D, m: D.Gamma(1.0, T(m, -2.0)),
    "Chi2": lambda D, m: D.Chi2(T(m, -1.0)),
    "Beta": lambda D, m: D.Beta(T(m, 1.0), T(m, -1.0)),
    "Dirichlet": lambda D, m: D.Dirichlet(T(m, 1.0, 0.0)),
    "Exponential": lambda D, m: D.Exponential(T(m, 0.0)),
    "Laplace": lambda D, m: D.Laplace(0.0, T(m, 0.0)),
    "Poisson": lambda D, m: D.Poisson(T(m, -1.0)),
    "Geometric": lambda D, m: D.Geometric(probs=T(m, 0.0, 0.5)),
    "Cauchy": lambda D, m: D.Cauchy(0.0, T(m, -1.0)),
    "HalfNormal": lambda D, m: D.HalfNormal(T(m, -1.0)),
    "StudentT": lambda D, m: D.StudentT(T(m, -1.0)),
    "LogNormal": lambda D, m: D.LogNormal(0.0, T(m, -1.0)),
    "Gumbel": lambda D, m: D.Gumbel(0.0, T(m, -1.0)),
    "Weibull": lambda D, m: D.Weibull(T(m, 1.0), T(m, -1.0)),
    "Pareto": lambda D, m: D.Pareto(T(m, -1.0), T(m, 1.0)),
    "VonMises": lambda D, m: D.VonMises(0.0, T(m, -1.0)),
    "MultivariateNormal": lambda D, m: D.MultivariateNormal(
        T(m, 0.0, 0.0), covariance_matrix=m.tensor([[1.0, 2.0], [2.0, 1.0]])),
    "MultivariateNormal-tril": lambda D, m: D.MultivariateNormal(
        T(m, 0.0, 0.0), scale_tril=m.tensor([[1.0, 0.0], [2.0, -1.0]])),
    "NegativeBinomial": lambda D, m: D.NegativeBinomial(T(m, 2.0), probs=T(m, 1.0)),
    "OneHotCategorical": lambda D, m: D.OneHotCategorical(probs=T(m, -0.5, 1.5)),
}


@pytest.mark.parametrize("name", sorted(INVALID_PARAMETERS))
def test_invalid_parameter_message_matches_torch(name):
    ours, theirs = _both(INVALID_PARAMETERS[name])
    assert ours == theirs
    assert "Expected parameter" in ours


OUT_OF_SUPPORT = {
    "Normal": lambda D, m: D.Normal(0.0, 1.0).log_prob(T(m, math.nan)),
    "Uniform": lambda D, m: D.Uniform(0.0, 2.0).log_prob(T(m, 3.0)),
    "Bernoulli": lambda D, m: D.Bernoulli(probs=T(m, 0.5)).log_prob(T(m, 0.5)),
    "Binomial": lambda D, m: D.Binomial(3, probs=T(m, 0.5)).log_prob(T(m, 4.0)),
    "Categorical": lambda D, m: D.Categorical(probs=T(m, 0.5, 0.5)).log_prob(
        m.tensor([0, 5])),
    "Gamma": lambda D, m: D.Gamma(1.0, 1.0).log_prob(T(m, -1.0)),
    "Beta": lambda D, m: D.Beta(1.0, 1.0).log_prob(T(m, 1.5)),
    "Dirichlet": lambda D, m: D.Dirichlet(T(m, 1.0, 1.0)).log_prob(T(m, 0.3, 0.3)),
    "Exponential": lambda D, m: D.Exponential(1.0).log_prob(T(m, -1.0)),
    "Exponential-cdf": lambda D, m: D.Exponential(1.0).cdf(T(m, -1.0)),
    "Poisson": lambda D, m: D.Poisson(T(m, 1.0)).log_prob(T(m, 0.5)),
    "Geometric": lambda D, m: D.Geometric(T(m, 0.5)).log_prob(T(m, -1.0)),
    "OneHotCategorical": lambda D, m: D.OneHotCategorical(T(m, 0.5, 0.5)).log_prob(
        T(m, 1.0, 1.0)),
    "Multinomial": lambda D, m: D.Multinomial(3, T(m, 0.5, 0.5)).log_prob(
        T(m, 3.0, 2.0)),
    "LogNormal": lambda D, m: D.LogNormal(0.0, 1.0).log_prob(T(m, -1.0)),
    "HalfNormal": lambda D, m: D.HalfNormal(1.0).log_prob(T(m, -1.0)),
    "Pareto": lambda D, m: D.Pareto(2.0, 1.0).log_prob(T(m, 1.0)),
    "MultivariateNormal": lambda D, m: D.MultivariateNormal(
        T(m, 0.0, 0.0), m.eye(2)).log_prob(T(m, math.nan, 0.0)),
    "Independent": lambda D, m: D.Independent(D.Exponential(T(m, 1.0, 1.0)), 1)
    .log_prob(T(m, 1.0, -1.0)),
}


@pytest.mark.parametrize("name", sorted(OUT_OF_SUPPORT))
def test_out_of_support_message_matches_torch(name):
    ours, theirs = _both(OUT_OF_SUPPORT[name])
    assert ours == theirs
    assert "to be within the support" in ours


MISUSE = {
    "value-not-tensor": lambda D, m: D.Normal(0.0, 1.0).log_prob(0.5),
    "event-shape": lambda D, m: D.Dirichlet(T(m, 1.0, 1.0)).log_prob(
        T(m, 0.2, 0.3, 0.5)),
    "not-broadcastable": lambda D, m: D.Normal(T(m, 0.0, 1.0), 1.0).log_prob(
        T(m, 0.1, 0.2, 0.3)),
    "probs-and-logits": lambda D, m: D.Bernoulli(T(m, 0.5), T(m, 0.0)),
    "neither": lambda D, m: D.Categorical(),
    "categorical-0d": lambda D, m: D.Categorical(probs=m.tensor(0.5)),
    "categorical-0d-logits": lambda D, m: D.Categorical(logits=m.tensor(0.5)),
    "dirichlet-0d": lambda D, m: D.Dirichlet(m.tensor(0.5)),
    "multinomial-count": lambda D, m: D.Multinomial(T(m, 3.0), T(m, 0.5, 0.5)),
    "mvn-two-matrices": lambda D, m: D.MultivariateNormal(
        T(m, 0.0), m.eye(1), scale_tril=m.eye(1)),
    "mvn-0d-loc": lambda D, m: D.MultivariateNormal(m.tensor(0.0), m.eye(1)),
    "mvn-1d-matrix": lambda D, m: D.MultivariateNormal(T(m, 0.0), T(m, 1.0)),
    "lowrank-factor": lambda D, m: D.LowRankMultivariateNormal(
        T(m, 0.0, 0.0), m.ones(3, 1), T(m, 1.0, 1.0)),
    "independent-ndims": lambda D, m: D.Independent(D.Normal(T(m, 0.0), 1.0), 2),
    "independent-enumerate": lambda D, m: D.Independent(
        D.Bernoulli(T(m, 0.5)), 1).enumerate_support(),
    "mixture-not-categorical": lambda D, m: D.MixtureSameFamily(
        D.Normal(0.0, 1.0), D.Normal(T(m, 0.0, 1.0), 1.0)),
    "mixture-components": lambda D, m: D.MixtureSameFamily(
        D.Categorical(T(m, 0.5, 0.5)), D.Normal(T(m, 0.0, 1.0, 2.0), 1.0)),
    "transformed-bad": lambda D, m: D.TransformedDistribution(D.Normal(0.0, 1.0), 3),
    "binomial-entropy": lambda D, m: D.Binomial(T(m, 2.0, 3.0), T(m, 0.5, 0.5))
    .entropy(),
    "normal-enumerate": lambda D, m: D.Normal(0.0, 1.0).enumerate_support(),
    "normal-mode-mean-ok-but-rsample-categorical": lambda D, m: D.Categorical(
        T(m, 0.5, 0.5)).rsample(),
    "lkj-dim": lambda D, m: D.LKJCholesky(1),
    "cont-bernoulli": lambda D, m: D.ContinuousBernoulli(T(m, 1.5),
                                                         validate_args=True),
    "set-default-validate": lambda D, m: D.Distribution.set_default_validate_args(2),
}


@pytest.mark.parametrize("name", sorted(MISUSE))
def test_misuse_raises_like_torch(name):
    ours, theirs = _both(MISUSE[name])
    if name in ("normal-enumerate", "normal-mode-mean-ok-but-rsample-categorical",
                "set-default-validate"):
        return                                  # torch's message is empty
    assert ours == theirs


def test_validate_args_false_and_the_default_switch():
    D = cygrad.distributions
    out = D.Uniform(0.0, 2.0, validate_args=False).log_prob(cygrad.tensor(3.0))
    assert out.item() == -math.inf
    assert D.Normal(0.0, -1.0, validate_args=False).scale.item() == -1.0
    try:
        D.Distribution.set_default_validate_args(False)
        assert D.Normal(0.0, -1.0).scale.item() == -1.0
        assert D.Poisson(cygrad.tensor(1.0)).log_prob(cygrad.tensor(0.5)).isfinite()
        with pytest.raises(ValueError):
            D.Normal(0.0, -1.0, validate_args=True)
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Normal(0.0, -1.0)
    # expand keeps the flag
    d = D.Normal(cygrad.tensor([0.0]), 1.0, validate_args=False).expand((3,))
    assert d._validate_args is False
    d.log_prob(cygrad.tensor([math.nan] * 3))


def test_not_implemented_methods_raise_like_torch():
    for m in (cygrad, torch):
        D = m.distributions
        d = D.Categorical(m.tensor([0.5, 0.5]))
        with pytest.raises(NotImplementedError):
            d.cdf(m.tensor(0))
        with pytest.raises(NotImplementedError):
            d.icdf(m.tensor(0.5))
        with pytest.raises(NotImplementedError):
            D.Poisson(m.tensor(1.0)).cdf(m.tensor(1.0))
        with pytest.raises(NotImplementedError):
            D.Dirichlet(m.tensor([1.0, 1.0])).cdf(m.tensor([0.5, 0.5]))
        with pytest.raises(NotImplementedError):
            D.Poisson(m.tensor(1.0)).rsample()


def test_values_on_the_support_edges_match_torch():
    cases = [
        lambda D, m: D.Uniform(0.0, 2.0).log_prob(m.tensor([0.0, 2.0 - 1e-12, 2.0])),
        lambda D, m: D.Uniform(0.0, 2.0).cdf(m.tensor([0.0, 2.0])),
        lambda D, m: D.Exponential(2.0).log_prob(m.tensor([0.0])),
        lambda D, m: D.Gamma(m.tensor([0.5, 1.0, 2.0]), 1.0).log_prob(
            m.tensor([0.0, 0.0, 0.0])),
        lambda D, m: D.Beta(m.tensor([0.5, 1.0, 2.0]), 1.0).log_prob(
            m.tensor([0.0, 0.0, 1.0])),
        lambda D, m: D.Poisson(m.tensor([0.0, 0.0])).log_prob(m.tensor([0.0, 1.0])),
        lambda D, m: D.Bernoulli(m.tensor([0.0, 1.0])).log_prob(m.tensor([0.0, 0.0])),
        lambda D, m: D.Binomial(3, m.tensor([0.0, 1.0])).log_prob(
            m.tensor([0.0, 3.0])),
        lambda D, m: D.Geometric(m.tensor([1.0, 1.0])).log_prob(m.tensor([0.0, 2.0])),
        lambda D, m: D.Categorical(m.tensor([0.0, 1.0])).log_prob(m.tensor([0, 1])),
        lambda D, m: D.Categorical(m.tensor([0.0, 1.0])).entropy(),
        lambda D, m: D.Multinomial(2, m.tensor([0.0, 1.0])).log_prob(
            m.tensor([0.0, 2.0])),
        lambda D, m: D.HalfNormal(1.0).log_prob(m.tensor([0.0])),
        lambda D, m: D.Dirichlet(m.tensor([1.0, 2.0])).log_prob(m.tensor([0.0, 1.0])),
        lambda D, m: D.Normal(0.0, 1.0).log_prob(m.tensor([math.inf, -math.inf])),
        lambda D, m: D.Normal(0.0, 1.0).cdf(m.tensor([math.inf, -math.inf])),
        lambda D, m: D.Normal(0.0, 1.0).icdf(m.tensor([0.0, 1.0])),
        lambda D, m: D.Exponential(1.0).icdf(m.tensor([0.0, 1.0])),
        lambda D, m: D.Laplace(0.0, 1.0).icdf(m.tensor([0.0, 1.0])),
    ]
    for case in cases:
        a = case(cygrad.distributions, cygrad).numpy()
        b = case(torch.distributions, torch).numpy()
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7, equal_nan=True)


def test_repr_like_torch():
    for fn in (lambda D, m: D.Normal(0.0, 1.0),
               lambda D, m: D.Normal(m.tensor([0.0, 1.0]), 1.0),
               lambda D, m: D.Categorical(logits=m.tensor([0.0, 1.0])),
               lambda D, m: D.Independent(D.Normal(m.tensor([0.0, 1.0]), 1.0), 1),
               lambda D, m: D.MultivariateNormal(m.zeros(2), m.eye(2)),
               lambda D, m: D.Multinomial(3, m.tensor([0.5, 0.5]))):
        a = repr(fn(cygrad.distributions, cygrad))
        b = repr(fn(torch.distributions, torch)).replace("torch.", "cygrad.")
        assert a == b
