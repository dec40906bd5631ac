"""``nn.Buffer``: marks a tensor so that assigning it as a ``Module``
attribute registers it as a buffer (persistent or not), as torch 2.x's."""

from cygrad._tensor import Tensor
from cygrad.creation import empty

__all__ = ["Buffer"]


class _BufferMeta(type):
    # a Buffer is a plain Tensor carrying the mark, so isinstance reads it
    def __instancecheck__(cls, instance):
        return isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False)


class Buffer(metaclass=_BufferMeta):
    """``Buffer(data=None, *, persistent=True)``: a tensor (sharing ``data``'s
    storage, detached, keeping its ``requires_grad``) that ``Module``
    registers as a buffer on assignment; ``persistent=False`` keeps it out
    of ``state_dict``.  An empty float tensor when ``data`` is None."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = empty(0)
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t
