"""Lazy layers: parameters whose shape comes from the first input.

A lazy layer is built as its eager class with a zero input size (so its
repr reads as torch's, ``LazyLinear(in_features=0, ...)``); the first call
reads the size from the input, gives the parameters (and buffers) their
shapes in place (the same ``Parameter`` objects), draws torch's default
initialisation, and turns the module into its eager class
(``LazyLinear`` -> ``Linear``), as torch does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cygrad.creation import from_numpy

__all__ = ["LazyModuleMixin"]


class LazyModuleMixin:
    """Mixin of the lazy layers: ``initialize_parameters(input)`` runs once,
    before the first forward."""

    cls_to_become = None

    def has_uninitialized_params(self) -> bool:
        """True until the first call (then the module is its eager class)."""
        return isinstance(self, LazyModuleMixin)

    @staticmethod
    def _materialize(t, shape):
        """Give tensor ``t`` fresh storage of ``shape`` (its dtype kept)."""
        t.data = from_numpy(np.zeros(shape, t._arr.dtype))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not args:
            raise ValueError(f"{type(self).__name__}: the first call needs the input "
                             "tensor to infer the parameters' shapes")
        self.initialize_parameters(args[0])
        object.__setattr__(self, "__class__", type(self).cls_to_become)
        return self(*args, **kwargs)
