"""``Parameter``: a tensor that a ``Module`` registers as learnable."""

from __future__ import annotations

from typing import Any

import numpy as np

from cygrad import _copying
from cygrad._kernels import engine as _engine
from cygrad._tensor import Tensor

__all__ = ["Parameter"]


class Parameter(Tensor):
    """A leaf tensor that requires grad (by default) and that modules register.

    Parameters
    ----------
    data : Tensor, optional
        Values; the parameter shares its storage and version counter (as
        ``torch.nn.Parameter``).  An empty float32 tensor when omitted.
    requires_grad : bool
        Default True.

    Assigning a ``Parameter`` as a ``Module`` attribute registers it, so it
    appears in ``parameters()`` and ``state_dict()``.
    """

    def __new__(cls, data: Tensor | None = None,
                requires_grad: bool = True) -> Parameter:
        return Tensor.__new__(cls)

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        if data is None:
            self._arr = np.empty(0, np.float32)
            self._ver = _engine.Version()
        elif isinstance(data, Tensor):
            self._arr = data._arr
            self._ver = data._ver
        else:
            raise TypeError(
                f"Parameter: data must be a Tensor, got {type(data).__name__}"
            )
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: dict[int, Any]) -> Parameter:
        # torch's Parameter copy: values and requires_grad, no .grad
        return _copying.deepcopy_tensor(self, memo, keep_grad=False, keep_attrs=False)
