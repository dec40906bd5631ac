"""``DataParallel`` on the CPU: one device, so the wrapped module runs as is.

torch's ``DataParallel`` splits a batch across GPUs; cygrad has the CPU
only, where torch itself runs the wrapped module unchanged.  The wrapper
keeps torch's attribute (``.module``), its state-dict keys
(``module.<name>``) and its repr, so code written for it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cygrad._device import check_device
from cygrad.nn.module import Module

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["DataParallel"]


class DataParallel(Module):
    """Holds ``module``; ``forward`` calls it with the same arguments.

    ``device_ids`` / ``output_device`` must name the CPU (None, "cpu" or
    an empty list); ``dim`` is accepted (the batch is not split).
    """

    def __init__(self, module: Module, device_ids: Sequence[Any] | None = None,
                 output_device: Any = None, dim: int = 0) -> None:
        super().__init__()
        for d in list(device_ids or ()) + ([output_device] if output_device is not
                                             None else []):
            check_device(d if isinstance(d, str) else f"cuda:{d}")
        self.module = module
        self.device_ids = []
        self.dim = dim
        self.output_device = None

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        return self.module(*inputs, **kwargs)
