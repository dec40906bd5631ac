"""``ExponentialFamily``: distributions with density
``h(x) exp(<t(x), theta> - F(theta))``; the entropy (and the KL divergence
between two members of one family) follow from the log normaliser ``F``
through autograd."""

from cygrad.autograd.backprop import grad as _grad
from cygrad.distributions.distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Base of exponential families.  Subclasses give ``_natural_params``
    (the tuple theta), ``_log_normalizer(*theta)`` and
    ``_mean_carrier_measure`` (E[log h(x)])."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        """``F(theta) - <theta, grad F(theta)> - E[log h(x)]``, with grad F
        from autograd (differentiable: the graph is kept)."""
        result = -self._mean_carrier_measure
        params = [p.detach().requires_grad_() for p in self._natural_params]
        log_norm = self._log_normalizer(*params)
        grads = _grad(log_norm.sum(), params, create_graph=True)
        result = result + log_norm
        for p, g in zip(params, grads):
            result = result - (p * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
