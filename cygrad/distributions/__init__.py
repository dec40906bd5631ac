"""``cygrad.distributions``: the distributions scripts use most, with
torch's API (``sample``, ``rsample`` where reparameterisable,
``log_prob``, ``entropy``, ``mean``/``variance``)."""

from cygrad.distributions import (  # noqa: F401
    bernoulli,
    categorical,
    multinomial,
    normal,
    uniform,
)
from cygrad.distributions.bernoulli import Bernoulli
from cygrad.distributions.categorical import Categorical
from cygrad.distributions.distribution import Distribution
from cygrad.distributions.multinomial import Multinomial
from cygrad.distributions.normal import Normal
from cygrad.distributions.uniform import Uniform

__all__ = ["Bernoulli", "Categorical", "Distribution", "Multinomial", "Normal",
           "Uniform"]
