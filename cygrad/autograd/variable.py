"""``Variable``: PyTorch's pre-0.4 wrapper, kept for old scripts.  As in
torch, ``Variable(t, requires_grad)`` returns a new plain tensor sharing
``t``'s storage, without history, requiring grad as asked (``t`` itself is
left as it was)."""

from cygrad._kernels.engine import TensorBase
from cygrad._tensor import Tensor
from cygrad.creation import tensor

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor)

    def __call__(cls, data=None, requires_grad=False, volatile=False):
        if data is None:
            data = tensor([])
        if not isinstance(data, TensorBase):
            raise TypeError(f"Variable data has to be a tensor, but got "
                            f"{type(data).__name__}")
        t = data.detach()
        if requires_grad:
            t.requires_grad_(True)
        return t


class Variable(metaclass=_VariableMeta):
    """``Variable(tensor, requires_grad=False)``: a leaf aliasing the
    tensor's storage (requiring grad when asked); ``isinstance(t, Variable)``
    holds for every tensor."""
