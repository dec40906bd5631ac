"""``cygrad.distributions``: torch's probability distributions, their
constraints, transforms and KL divergences, on cygrad's tensors.

Every distribution follows torch's API (``sample``, ``rsample`` where
reparameterisable, ``log_prob``, ``cdf``/``icdf``, ``entropy``, the moments,
``expand``, ``enumerate_support``, argument validation) and lives in the
module of torch's name (``cygrad.distributions.normal.Normal``).  Sampled
values come from cygrad's generator (reproducible with
``cygrad.manual_seed``, not torch's numbers); everything deterministic is
torch's.
"""

from cygrad.distributions import constraints, transforms, utils  # noqa: F401
from cygrad.distributions.bernoulli import Bernoulli
from cygrad.distributions.beta import Beta
from cygrad.distributions.binomial import Binomial
from cygrad.distributions.categorical import Categorical
from cygrad.distributions.cauchy import Cauchy
from cygrad.distributions.chi2 import Chi2
from cygrad.distributions.constraint_registry import biject_to, transform_to
from cygrad.distributions.continuous_bernoulli import ContinuousBernoulli
from cygrad.distributions.dirichlet import Dirichlet
from cygrad.distributions.distribution import Distribution
from cygrad.distributions.exp_family import ExponentialFamily
from cygrad.distributions.exponential import Exponential
from cygrad.distributions.fishersnedecor import FisherSnedecor
from cygrad.distributions.gamma import Gamma
from cygrad.distributions.generalized_pareto import GeneralizedPareto
from cygrad.distributions.geometric import Geometric
from cygrad.distributions.gumbel import Gumbel
from cygrad.distributions.half_cauchy import HalfCauchy
from cygrad.distributions.half_normal import HalfNormal
from cygrad.distributions.independent import Independent
from cygrad.distributions.inverse_gamma import InverseGamma
from cygrad.distributions.kl import kl_divergence, register_kl
from cygrad.distributions.kumaraswamy import Kumaraswamy
from cygrad.distributions.laplace import Laplace
from cygrad.distributions.lkj_cholesky import LKJCholesky
from cygrad.distributions.log_normal import LogNormal
from cygrad.distributions.logistic_normal import LogisticNormal
from cygrad.distributions.lowrank_multivariate_normal import LowRankMultivariateNormal
from cygrad.distributions.mixture_same_family import MixtureSameFamily
from cygrad.distributions.multinomial import Multinomial
from cygrad.distributions.multivariate_normal import MultivariateNormal
from cygrad.distributions.negative_binomial import NegativeBinomial
from cygrad.distributions.normal import Normal
from cygrad.distributions.one_hot_categorical import (
    OneHotCategorical,
    OneHotCategoricalStraightThrough,
)
from cygrad.distributions.pareto import Pareto
from cygrad.distributions.poisson import Poisson
from cygrad.distributions.relaxed_bernoulli import RelaxedBernoulli
from cygrad.distributions.relaxed_categorical import RelaxedOneHotCategorical
from cygrad.distributions.studentT import StudentT
from cygrad.distributions.transformed_distribution import TransformedDistribution
from cygrad.distributions.transforms import *  # noqa: F403
from cygrad.distributions.uniform import Uniform
from cygrad.distributions.von_mises import VonMises
from cygrad.distributions.weibull import Weibull
from cygrad.distributions.wishart import Wishart

__all__ = [
    "Bernoulli",
    "Beta",
    "Binomial",
    "Categorical",
    "Cauchy",
    "Chi2",
    "ContinuousBernoulli",
    "Dirichlet",
    "Distribution",
    "Exponential",
    "ExponentialFamily",
    "FisherSnedecor",
    "Gamma",
    "GeneralizedPareto",
    "Geometric",
    "Gumbel",
    "HalfCauchy",
    "HalfNormal",
    "Independent",
    "InverseGamma",
    "Kumaraswamy",
    "LKJCholesky",
    "Laplace",
    "LogNormal",
    "LogisticNormal",
    "LowRankMultivariateNormal",
    "MixtureSameFamily",
    "Multinomial",
    "MultivariateNormal",
    "NegativeBinomial",
    "Normal",
    "OneHotCategorical",
    "OneHotCategoricalStraightThrough",
    "Pareto",
    "Poisson",
    "RelaxedBernoulli",
    "RelaxedOneHotCategorical",
    "StudentT",
    "TransformedDistribution",
    "Uniform",
    "VonMises",
    "Weibull",
    "Wishart",
    "biject_to",
    "kl_divergence",
    "register_kl",
    "transform_to",
]
__all__.extend(transforms.__all__)
