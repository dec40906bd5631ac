"""``Chi2(df)``: ``Gamma(df / 2, 1 / 2)``."""

from cygrad.distributions import constraints
from cygrad.distributions.gamma import Gamma
from cygrad.distributions.utils import broadcast_all

__all__ = ["Chi2"]


class Chi2(Gamma):
    """The chi-squared distribution with ``df`` degrees of freedom."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        (df,) = broadcast_all(df)
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def _expand_params(self):
        return {"concentration": 0, "rate": 0}

    @property
    def df(self):
        return self.concentration * 2
