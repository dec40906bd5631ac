"""``Distribution``: the base of cygrad's distributions (torch's API).

Parameters are tensors (numbers are converted and broadcast); sampling uses
cygrad's default generator; ``rsample`` (where defined) is differentiable
with respect to the parameters (the reparameterisation trick), ``sample`` is
not.  With ``validate_args`` (the default, as torch), parameters and the
values given to ``log_prob`` are checked and a violation raises ValueError.
"""

import numpy as np

from cygrad._kernels.engine import TensorBase
from cygrad._tensor import Size
from cygrad.autograd.grad_mode import no_grad
from cygrad.creation import get_default_dtype, tensor

__all__ = ["Distribution"]


def _as_tensor(x):
    if isinstance(x, TensorBase):
        return x
    return tensor(x, dtype=get_default_dtype())


def broadcast_all(*values):
    """The values as tensors of one broadcast shape (numbers become tensors
    of the default float dtype, or of the first tensor's dtype)."""
    tensors = [v for v in values if isinstance(v, TensorBase)]
    dtype = tensors[0].dtype if tensors else get_default_dtype()
    ts = [v if isinstance(v, TensorBase) else tensor(float(v), dtype=dtype)
          for v in values]
    shape = np.broadcast_shapes(*[tuple(t.shape) for t in ts])
    return [t if tuple(t.shape) == shape else t.expand(shape) for t in ts]


class Distribution:
    """A batch of probability distributions: ``batch_shape`` (independent
    copies) and ``event_shape`` (one draw's shape)."""

    _validate_default = True
    arg_constraints = {}

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)
        self._validate_args = self._validate_default if validate_args is None \
            else bool(validate_args)

    @staticmethod
    def set_default_validate_args(value):
        Distribution._validate_default = bool(value)

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    def _extended_shape(self, sample_shape=()):
        return Size(tuple(sample_shape) + tuple(self._batch_shape)
                    + tuple(self._event_shape))

    def sample(self, sample_shape=()):
        """A draw of shape ``sample_shape + batch_shape + event_shape``,
        outside the graph."""
        with no_grad():
            return self.rsample(sample_shape).detach()

    def rsample(self, sample_shape=()):
        raise NotImplementedError(f"{type(self).__name__} has no reparameterised "
                                  "sampler (rsample); use sample()")

    def sample_n(self, n):
        return self.sample((n,))

    @property
    def stddev(self):
        return self.variance.sqrt()

    def _invalid(self, what, value, constraint):
        shape = tuple(value.shape) if isinstance(value, TensorBase) else ()
        return ValueError(
            f"Expected {what} (Tensor of shape {shape}) of distribution {self!r} to "
            f"satisfy the constraint {constraint}, but found invalid values:\n{value}")

    def _check_param(self, name, value, ok, constraint):
        if self._validate_args and not bool(np.all(ok)):
            raise self._invalid(f"parameter {name}", value, constraint)

    def _check_value(self, value, ok, support):
        if not isinstance(value, TensorBase):
            raise ValueError("The value argument to log_prob must be a Tensor")
        if self._validate_args and not bool(np.all(ok)):
            shape = tuple(value.shape)
            raise ValueError(
                f"Expected value argument (Tensor of shape {shape}) to be within the "
                f"support ({support}) of the distribution {self!r}, but found "
                f"invalid values:\n{value}")

    def __repr__(self):
        parts = []
        for name in self.arg_constraints:
            if name in self.__dict__:
                v = self.__dict__[name]
                parts.append(f"{name}: {v.item() if v.numel() == 1 else v.size()}")
        return f"{type(self).__name__}({', '.join(parts)})"
