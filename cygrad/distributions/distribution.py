"""``Distribution``: the base of cygrad's distributions (torch's API).

A distribution holds a batch of independent distributions (``batch_shape``)
over values of shape ``event_shape``.  Parameters are tensors (numbers are
converted and broadcast).  ``sample`` draws outside the graph with cygrad's
generator; ``rsample`` (where ``has_rsample``) is differentiable with respect
to the parameters.  With ``validate_args`` (the default, as in torch; see
``set_default_validate_args``) each parameter is checked against its entry
of ``arg_constraints`` at construction, and the values given to
``log_prob`` / ``cdf`` against ``support``: a violation raises ValueError
with torch's message.
"""

import warnings

from cygrad._kernels.engine import TensorBase
from cygrad._tensor import Size
from cygrad.autograd.grad_mode import no_grad
from cygrad.distributions import constraints
from cygrad.distributions.utils import lazy_property

__all__ = ["Distribution"]


def _all_true(valid):
    return bool(valid.all()) if isinstance(valid, TensorBase) else bool(valid)


class Distribution:
    """A batch of probability distributions.

    Parameters
    ----------
    batch_shape : tuple of int
        The shape of the batch of independent distributions.
    event_shape : tuple of int
        The shape of one draw.
    validate_args : bool or None
        Check parameters and values (None: the class default, True unless
        ``set_default_validate_args(False)``).
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = True

    @staticmethod
    def set_default_validate_args(value):
        """Turn argument validation on or off for every distribution made
        without an explicit ``validate_args``."""
        if value not in (True, False):
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=Size(), event_shape=Size(), validate_args=None):
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(
                    f"{type(self)} does not define `arg_constraints`. Please set "
                    "`arg_constraints = {}` or initialize the distribution with "
                    "`validate_args=False` to turn off validation.", stacklevel=2)
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue
                if param not in self.__dict__ and isinstance(
                        getattr(type(self), param, None), lazy_property):
                    continue          # a lazily derived form of another parameter
                value = getattr(self, param)
                if not _all_true(constraint.check(value)):
                    raise ValueError(
                        f"Expected parameter {param} ({type(value).__name__} of "
                        f"shape {tuple(value.shape)}) of distribution {self!r} to "
                        f"satisfy the constraint {constraint!r}, but found invalid "
                        f"values:\n{value}")

    # --- shapes ---------------------------------------------------------------

    @property
    def batch_shape(self):
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self):
        """The shape of a single sample (without batching)."""
        return self._event_shape

    def _extended_shape(self, sample_shape=Size()):
        return Size(tuple(sample_shape) + tuple(self._batch_shape)
                    + tuple(self._event_shape))

    def expand(self, batch_shape, _instance=None):
        """This distribution with its parameters expanded (as views) to
        ``batch_shape``; the event shape is unchanged.

        The base version expands every parameter named in ``arg_constraints``
        that is set (its trailing ``constraint.event_dim`` dimensions kept),
        drops cached lazy values and copies the other attributes.
        """
        new = self.__new__(type(self)) if _instance is None else _instance
        batch_shape = Size(batch_shape)
        cls = type(self)
        for k, v in self.__dict__.items():
            if k in ("_batch_shape", "_event_shape", "_validate_args"):
                continue
            if isinstance(getattr(cls, k, None), lazy_property) and \
                    k not in self._expand_params():
                continue
            new.__dict__[k] = v
        for name, event_dim in self._expand_params().items():
            v = self.__dict__.get(name)
            if not isinstance(v, TensorBase):
                continue
            trailing = tuple(v.shape[v.ndim - event_dim:]) if event_dim else ()
            new.__dict__[name] = v.expand(tuple(batch_shape) + trailing)
        Distribution.__init__(new, batch_shape, self.event_shape,
                              validate_args=False)
        new._validate_args = self._validate_args
        new._expanded_from(self)
        return new

    def _expand_params(self):
        """{attribute: its number of event dimensions} of the tensors
        ``expand`` expands: by default the parameters of ``arg_constraints``
        with their constraints' ``event_dim``."""
        return {name: 0 if constraints.is_dependent(c) else c.event_dim
                for name, c in self.arg_constraints.items()}

    def _expanded_from(self, other):
        """Hook for subclasses: fix attributes after the base ``expand``."""

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {type(self).__name__} of {cls.__name__} that defines a "
                "custom __init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    # --- the constraints ------------------------------------------------------

    @property
    def arg_constraints(self):
        """The constraint each parameter must satisfy, by name."""
        raise NotImplementedError

    @property
    def support(self):
        """The constraint the values of this distribution satisfy."""
        raise NotImplementedError

    # --- moments --------------------------------------------------------------

    @property
    def mean(self):
        raise NotImplementedError(f"{type(self)} does not implement mean")

    @property
    def mode(self):
        raise NotImplementedError(f"{type(self)} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError(f"{type(self)} does not implement variance")

    @property
    def stddev(self):
        return self.variance.sqrt()

    # --- sampling -------------------------------------------------------------

    def sample(self, sample_shape=Size()):
        """A draw of shape ``sample_shape + batch_shape + event_shape``,
        outside the graph."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=Size()):
        """A draw of shape ``sample_shape + batch_shape + event_shape``,
        differentiable with respect to the parameters."""
        raise NotImplementedError

    def sample_n(self, n):
        """``sample((n,))`` (deprecated in torch, as here)."""
        warnings.warn("sample_n will be deprecated. Use .sample((n,)) instead",
                      UserWarning, stacklevel=2)
        return self.sample(Size((n,)))

    # --- densities ------------------------------------------------------------

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def enumerate_support(self, expand=True):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def perplexity(self):
        """``exp(entropy())``."""
        return self.entropy().exp()

    # --- validation -----------------------------------------------------------

    def _validate_sample(self, value):
        """Raise ValueError unless ``value`` is a tensor whose shape fits the
        batch and event shapes and whose entries lie in the support."""
        if not isinstance(value, TensorBase):
            raise ValueError("The value argument to log_prob must be a Tensor")
        start = value.ndim - len(self._event_shape)
        if tuple(value.shape[start:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: "
                             f"{value.size()} vs {self._event_shape}.")
        actual = value.size()
        expected = Size(tuple(self._batch_shape) + tuple(self._event_shape))
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with "
                                 f"batch_shape+event_shape: {actual} vs {expected}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{type(self)} does not define `support` to enable sample "
                          "validation. Please initialize the distribution with "
                          "`validate_args=False` to turn off validation.",
                          stacklevel=2)
            return
        if not _all_true(support.check(value)):
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape "
                f"{tuple(value.shape)}) to be within the support ({support!r}) of "
                f"the distribution {self!r}, but found invalid values:\n{value}")

    def __repr__(self):
        names = [k for k in self.arg_constraints if k in self.__dict__]
        parts = []
        for p in names:
            v = self.__dict__[p]
            shown = v if v.numel() == 1 else v.size()
            parts.append(f"{p}: {shown}")
        return f"{type(self).__name__}({', '.join(parts)})"
