"""Operations on a tensor's storage rather than its values: ``resize_``
(the deprecated ``resize``) and ``resize_as_``, and ``apply_`` (a Python
function on every element).  None is differentiable: as in torch, a tensor
that requires grad is refused."""

import warnings

import numpy as np

from cygrad._kernels import engine as _engine
from cygrad._tensor import Tensor
from cygrad.ops.registry import _no_grad


def _sizes(sizes):
    if len(sizes) == 1 and not isinstance(sizes[0], (int, np.integer)):
        sizes = tuple(sizes[0])
    shape = tuple(int(s) for s in sizes)
    if any(s < 0 for s in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{min(shape)}: {list(shape)}")
    return shape


def resize_(self, *sizes, memory_format=None):
    """Give ``self`` the shape ``sizes`` in place, keeping its leading
    elements in row-major order (new elements, if it grows, are
    uninitialised: here zeros)."""
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    shape = _sizes(sizes)
    old = np.ascontiguousarray(self._arr).reshape(-1)
    n = int(np.prod(shape, dtype=np.int64))
    if n == old.size and self._arr.flags.c_contiguous:
        new = self._arr.reshape(shape)
    else:
        new = np.zeros(n, dtype=old.dtype)
        k = min(n, old.size)
        new[:k] = old[:k]
        new = new.reshape(shape)
    with _no_grad():
        self.data = _engine._wrap(new)
    return self


def resize(self, *sizes):
    """The deprecated non-in-place ``resize``: a resized copy (torch warns)."""
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    return resize_(self.detach().clone(), *sizes)


def resize_as_(self, other, memory_format=None):
    """``resize_`` to ``other``'s shape."""
    return resize_(self, tuple(other.shape))


def apply_(self, callable):
    """Replace every element ``x`` by ``callable(x)`` (a Python float or
    int), in place; slow by nature (one Python call per element)."""
    if self.requires_grad:
        raise RuntimeError("Can't call apply_() on Variable that requires grad. Use "
                           "var.detach().apply_() instead.")
    self._writable_check("apply_")
    with np.nditer(self._arr, op_flags=["readwrite"]) as it:
        for x in it:
            x[...] = callable(x.item())
    _engine._mark_inplace(self, "apply_")
    return self


Tensor.resize_ = resize_
Tensor.resize = resize
Tensor.resize_as_ = resize_as_
Tensor.apply_ = apply_
