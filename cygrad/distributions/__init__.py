"""``cygrad.distributions``: torch's probability distributions, their
constraints, transforms and KL divergences, on cygrad's tensors.

Every distribution follows torch's API (``sample``, ``rsample`` where
reparameterisable, ``log_prob``, ``cdf``/``icdf``, ``entropy``, the moments,
``expand``, ``enumerate_support``, argument validation) and lives in the
module of torch's name (``cygrad.distributions.normal.Normal``).
"""

from cygrad.distributions import constraints, utils  # noqa: F401
from cygrad.distributions.bernoulli import Bernoulli
from cygrad.distributions.binomial import Binomial
from cygrad.distributions.categorical import Categorical
from cygrad.distributions.distribution import Distribution
from cygrad.distributions.exp_family import ExponentialFamily
from cygrad.distributions.multinomial import Multinomial
from cygrad.distributions.normal import Normal
from cygrad.distributions.uniform import Uniform

__all__ = [
    "Bernoulli",
    "Binomial",
    "Categorical",
    "Distribution",
    "ExponentialFamily",
    "Multinomial",
    "Normal",
    "Uniform",
]
