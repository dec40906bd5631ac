"""Lazy layers: parameters whose shape comes from the first input.

A lazy layer is built as its eager class with a zero input size (so its
repr reads as torch's, ``LazyLinear(in_features=0, ...)``), whose parameters
and floating buffers are then ``UninitializedParameter``/``UninitializedBuffer``
objects.  The first call reads the size from the input, materializes them in
place (the same objects, now a ``Parameter`` and a ``Tensor``: an optimizer
built before holds them), draws torch's default initialisation, and turns the
module into its eager class (``LazyLinear`` -> ``Linear``), as torch does.
``load_state_dict`` before the first call materializes them from the
checkpoint's shapes instead (the module stays lazy until its first call, which
then keeps the loaded values).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..parameter import UninitializedBuffer, UninitializedParameter, is_lazy

__all__ = ["LazyModuleMixin"]


class LazyModuleMixin:
    """Mixin of the lazy layers: ``initialize_parameters(input)`` runs once,
    before the first forward."""

    cls_to_become = None

    def _uninitialize(self) -> None:
        """Replace the parameters and floating buffers the eager constructor
        made (with a zero input size) by uninitialized ones; the eager
        class's ``__init__`` calls this last."""
        for name, p in self._parameters.items():
            if p is not None:
                self._parameters[name] = UninitializedParameter(p.requires_grad,
                                                                dtype=p.dtype)
        for name, b in self._buffers.items():
            if b is not None and np.issubdtype(b.dtype, np.floating):
                self._buffers[name] = UninitializedBuffer(dtype=b.dtype)

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer still has no shape."""
        tensors = list(self._parameters.values()) + list(self._buffers.values())
        return any(is_lazy(t) for t in tensors)

    def _materialize(self, t, shape):
        """Give this layer's tensor ``t`` zeroed storage of ``shape`` (its
        dtype kept; see ``Module._materialize_lazy``)."""
        names = {id(v): k for k, v in (*self._parameters.items(),
                                       *self._buffers.items())}
        self._materialize_lazy(names[id(t)], t, shape)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not args:
            raise ValueError(f"{type(self).__name__}: the first call needs the input "
                             "tensor to infer the parameters' shapes")
        if self.has_uninitialized_params():
            self.initialize_parameters(args[0])
        object.__setattr__(self, "__class__", type(self).cls_to_become)
        return self(*args, **kwargs)
