"""The distributions both test files compare with torch: one case per
parametrisation, its parameters (NumPy, batched and broadcasting), a value
inside the support (and the edges where it matters) and probabilities for
``icdf``.  ``build(D, P)`` makes the distribution from the module ``D``
(``cygrad.distributions`` or ``torch.distributions``) and the tensors ``P``;
parameters named in ``fixed`` get no gradient (counts, integer totals)."""

from dataclasses import dataclass, field

import numpy as np

_rng = np.random.default_rng(1234)


def _u(*shape, lo=0.0, hi=1.0):
    return _rng.uniform(lo, hi, size=shape)


def _n(*shape):
    return _rng.standard_normal(shape)


def _spd(*batch, n=3):
    a = _rng.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _simplex(*shape):
    p = _rng.uniform(0.1, 1.0, size=shape)
    return p / p.sum(-1, keepdims=True)


@dataclass
class Case:
    id: str
    build: object
    params: dict
    value: np.ndarray
    fixed: tuple = ()
    q: np.ndarray = field(default_factory=lambda: np.array([0.1, 0.5, 0.9]))
    tol64: float = 1e-10
    # parameters whose gradient is compared on the lower triangle only:
    # torch's cholesky_solve gives its factor a gradient above the diagonal
    # too (as if the whole matrix were read); cygrad's gives zeros there
    grad_tril: tuple = ()

    def __repr__(self):
        return self.id


def _lowrank_case():
    return Case("LowRankMultivariateNormal",
                lambda D, P: D.LowRankMultivariateNormal(P["loc"], P["W"], P["d"]),
                {"loc": _n(2, 3), "W": _n(3, 2), "d": _u(2, 3, lo=0.5, hi=2)},
                _n(4, 2, 3))


CASES = [
    Case("Normal", lambda D, P: D.Normal(P["loc"], P["scale"]),
         {"loc": _n(2, 3), "scale": _u(3, lo=0.5, hi=2)}, _n(2, 3)),
    Case("Normal-scalar", lambda D, P: D.Normal(P["loc"], 2.0),
         {"loc": np.array(0.5)}, np.array([0.2, -1.0, 3.0])),
    Case("Uniform", lambda D, P: D.Uniform(P["low"], P["high"]),
         {"low": np.array([-1.0, 0.0, 2.0]), "high": np.array([[0.0, 1.0, 5.0],
                                                              [3.0, 2.0, 2.5]])},
         np.array([[-1.0, 0.5, 2.0], [2.9, 1.0, 2.25]])),
    Case("Bernoulli-probs", lambda D, P: D.Bernoulli(probs=P["probs"]),
         {"probs": np.array([[0.2, 0.5, 0.9], [0.0, 1.0, 0.3]])},
         np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])),
    Case("Bernoulli-logits", lambda D, P: D.Bernoulli(logits=P["logits"]),
         {"logits": _n(2, 3) * 3}, np.array([1.0, 0.0, 1.0])),
    Case("Binomial", lambda D, P: D.Binomial(P["n"], probs=P["probs"]),
         {"n": np.array([5.0, 10.0, 3.0]), "probs": _u(2, 3, lo=0.1, hi=0.9)},
         np.array([[0.0, 10.0, 3.0], [2.0, 7.0, 1.0]]), fixed=("n",)),
    Case("Binomial-logits", lambda D, P: D.Binomial(4, logits=P["logits"]),
         {"logits": _n(3)}, np.array([0.0, 2.0, 4.0])),
    Case("Categorical-probs", lambda D, P: D.Categorical(probs=P["probs"]),
         {"probs": _simplex(2, 4)}, np.array([[0, 3], [1, 2], [3, 3]]).T),
    Case("Categorical-logits", lambda D, P: D.Categorical(logits=P["logits"]),
         {"logits": _n(3, 4)}, np.array([0, 3, 2])),
    Case("OneHotCategorical", lambda D, P: D.OneHotCategorical(probs=P["probs"]),
         {"probs": _simplex(2, 3)}, np.eye(3)[[0, 2]]),
    Case("OneHotCategoricalStraightThrough",
         lambda D, P: D.OneHotCategoricalStraightThrough(logits=P["logits"]),
         {"logits": _n(2, 3)}, np.eye(3)[[1, 2]]),
    Case("Multinomial", lambda D, P: D.Multinomial(5, probs=P["probs"]),
         {"probs": _simplex(2, 3)}, np.array([[1.0, 4.0, 0.0], [2.0, 2.0, 1.0]])),
    Case("Gamma", lambda D, P: D.Gamma(P["c"], P["r"]),
         {"c": _u(2, 3, lo=0.3, hi=4), "r": _u(3, lo=0.5, hi=2)},
         _u(2, 3, lo=0.1, hi=3)),
    Case("Chi2", lambda D, P: D.Chi2(P["df"]), {"df": _u(3, lo=0.5, hi=6)},
         _u(3, lo=0.1, hi=4)),
    Case("Exponential", lambda D, P: D.Exponential(P["rate"]),
         {"rate": _u(2, 3, lo=0.5, hi=3)}, np.array([0.0, 0.5, 2.0])),
    Case("Laplace", lambda D, P: D.Laplace(P["loc"], P["scale"]),
         {"loc": _n(2, 3), "scale": _u(2, 3, lo=0.5, hi=2)}, _n(2, 3)),
    Case("Poisson", lambda D, P: D.Poisson(P["rate"]),
         {"rate": np.array([0.5, 3.0, 10.0])}, np.array([[0.0, 2.0, 12.0]])),
    Case("Geometric-probs", lambda D, P: D.Geometric(probs=P["probs"]),
         {"probs": np.array([0.2, 0.5, 1.0])}, np.array([3.0, 0.0, 0.0])),
    Case("Geometric-logits", lambda D, P: D.Geometric(logits=P["logits"]),
         {"logits": _n(3)}, np.array([3.0, 0.0, 5.0])),
    Case("Cauchy", lambda D, P: D.Cauchy(P["loc"], P["scale"]),
         {"loc": _n(3), "scale": _u(2, 3, lo=0.5, hi=2)}, _n(2, 3)),
    Case("HalfNormal", lambda D, P: D.HalfNormal(P["scale"]),
         {"scale": _u(3, lo=0.5, hi=2)}, np.array([0.0, 0.5, 2.0])),
    Case("HalfCauchy", lambda D, P: D.HalfCauchy(P["scale"]),
         {"scale": _u(3, lo=0.5, hi=2)}, np.array([0.0, 0.5, 2.0])),
    Case("StudentT", lambda D, P: D.StudentT(P["df"], P["loc"], P["scale"]),
         {"df": np.array([0.8, 1.5, 3.0]), "loc": _n(3), "scale": _u(3, lo=0.5, hi=2)},
         _n(2, 3)),
    Case("Beta", lambda D, P: D.Beta(P["a"], P["b"]),
         {"a": np.array([0.5, 1.0, 2.5]), "b": np.array([[0.7, 1.0, 3.0],
                                                        [2.0, 0.4, 1.0]])},
         np.array([[0.2, 0.5, 0.9], [0.01, 0.99, 0.5]])),
    Case("Dirichlet", lambda D, P: D.Dirichlet(P["c"]),
         {"c": _u(2, 4, lo=0.3, hi=3)}, _simplex(2, 4)),
    Case("LogNormal", lambda D, P: D.LogNormal(P["loc"], P["scale"]),
         {"loc": _n(3), "scale": _u(3, lo=0.5, hi=1.5)}, _u(2, 3, lo=0.1, hi=4)),
    Case("Gumbel", lambda D, P: D.Gumbel(P["loc"], P["scale"]),
         {"loc": _n(3), "scale": _u(3, lo=0.5, hi=2)}, _n(2, 3)),
    Case("Weibull", lambda D, P: D.Weibull(P["scale"], P["k"]),
         {"scale": _u(3, lo=0.5, hi=2), "k": np.array([0.7, 1.0, 2.5])},
         _u(2, 3, lo=0.1, hi=3)),
    Case("Pareto", lambda D, P: D.Pareto(P["scale"], P["alpha"]),
         {"scale": _u(3, lo=0.5, hi=1), "alpha": np.array([0.8, 1.5, 3.0])},
         _u(2, 3, lo=1.0, hi=4)),
    Case("InverseGamma", lambda D, P: D.InverseGamma(P["c"], P["r"]),
         {"c": np.array([0.8, 1.5, 3.0]), "r": _u(3, lo=0.5, hi=2)},
         _u(2, 3, lo=0.1, hi=4)),
    Case("ContinuousBernoulli", lambda D, P: D.ContinuousBernoulli(probs=P["p"]),
         {"p": np.array([0.2, 0.4995, 0.8])}, np.array([[0.0, 0.3, 1.0],
                                                       [0.5, 0.9, 0.1]])),
    Case("ContinuousBernoulli-logits",
         lambda D, P: D.ContinuousBernoulli(logits=P["lg"]),
         {"lg": np.array([-2.0, 0.001, 1.5])}, np.array([0.2, 0.3, 0.7])),
    Case("NegativeBinomial", lambda D, P: D.NegativeBinomial(P["n"], probs=P["p"]),
         {"n": np.array([1.0, 2.5, 4.0]), "p": np.array([0.2, 0.5, 0.7])},
         np.array([[0.0, 3.0, 10.0]])),
    Case("NegativeBinomial-logits",
         lambda D, P: D.NegativeBinomial(P["n"], logits=P["lg"]),
         {"n": np.array([0.0, 2.5, 4.0]), "lg": _n(3)}, np.array([0.0, 1.0, 2.0])),
    Case("FisherSnedecor", lambda D, P: D.FisherSnedecor(P["d1"], P["d2"]),
         {"d1": np.array([1.0, 3.0, 6.0]), "d2": np.array([1.5, 4.5, 10.0])},
         _u(2, 3, lo=0.1, hi=3)),
    Case("Kumaraswamy", lambda D, P: D.Kumaraswamy(P["a"], P["b"]),
         {"a": np.array([0.5, 1.5, 3.0]), "b": np.array([2.0, 0.7, 3.0])},
         _u(2, 3, lo=0.05, hi=0.95)),
    Case("VonMises", lambda D, P: D.VonMises(P["loc"], P["k"]),
         {"loc": _n(3), "k": np.array([0.5, 3.0, 10.0])}, _n(2, 3)),
    Case("GeneralizedPareto",
         lambda D, P: D.GeneralizedPareto(P["loc"], P["scale"], P["c"]),
         {"loc": np.array([0.0, 1.0, -1.0]), "scale": np.array([1.0, 2.0, 0.5]),
          "c": np.array([0.0, 0.3, -0.2])}, np.array([0.5, 2.0, 0.0])),
    Case("RelaxedBernoulli", lambda D, P: D.RelaxedBernoulli(P["t"], probs=P["p"]),
         {"t": np.array(0.7), "p": np.array([0.2, 0.5, 0.9])},
         np.array([0.1, 0.5, 0.95])),
    Case("RelaxedOneHotCategorical",
         lambda D, P: D.RelaxedOneHotCategorical(P["t"], logits=P["lg"]),
         {"t": np.array(0.5), "lg": _n(2, 3)}, _simplex(2, 3)),
    Case("LogisticNormal", lambda D, P: D.LogisticNormal(P["loc"], P["scale"]),
         {"loc": _n(2, 3), "scale": _u(3, lo=0.5, hi=1.5)}, _simplex(2, 4)),
    Case("MultivariateNormal-cov",
         lambda D, P: D.MultivariateNormal(P["loc"], covariance_matrix=P["cov"]),
         {"loc": _n(2, 3), "cov": _spd()}, _n(4, 2, 3)),
    Case("MultivariateNormal-precision",
         lambda D, P: D.MultivariateNormal(P["loc"], precision_matrix=P["prec"]),
         {"loc": _n(3), "prec": _spd(2)}, _n(2, 3)),
    Case("MultivariateNormal-tril",
         lambda D, P: D.MultivariateNormal(P["loc"], scale_tril=P["L"]),
         {"loc": _n(2, 3), "L": np.linalg.cholesky(_spd(2))}, _n(2, 3)),
    _lowrank_case(),
    Case("Independent-Normal",
         lambda D, P: D.Independent(D.Normal(P["loc"], P["scale"]), 1),
         {"loc": _n(2, 3), "scale": _u(2, 3, lo=0.5, hi=2)}, _n(4, 2, 3)),
    Case("MixtureSameFamily",
         lambda D, P: D.MixtureSameFamily(D.Categorical(logits=P["lg"]),
                                          D.Normal(P["loc"], P["scale"])),
         {"lg": _n(2, 3), "loc": _n(2, 3), "scale": _u(2, 3, lo=0.5, hi=2)},
         _n(4, 2)),
    Case("TransformedDistribution",
         lambda D, P: D.TransformedDistribution(
             D.Normal(P["loc"], P["scale"]),
             [D.ExpTransform(), D.AffineTransform(1.0, P["s"])]),
         {"loc": _n(3), "scale": _u(3, lo=0.5, hi=1.5), "s": np.array(2.0)},
         _u(2, 3, lo=1.5, hi=5)),
    Case("LKJCholesky", lambda D, P: D.LKJCholesky(3, P["c"]),
         {"c": np.array([0.5, 2.0])},
         np.linalg.cholesky(np.array([[1.0, 0.3, 0.1], [0.3, 1.0, -0.2],
                                      [0.1, -0.2, 1.0]]))),
    Case("Wishart", lambda D, P: D.Wishart(P["df"], covariance_matrix=P["cov"]),
         {"df": np.array([4.0, 6.5]), "cov": _spd(n=3)}, _spd(2, n=3)),
    Case("Wishart-tril", lambda D, P: D.Wishart(5.0, scale_tril=P["L"]),
         {"L": np.linalg.cholesky(_spd(n=2))}, _spd(n=2), grad_tril=("L",)),
]
