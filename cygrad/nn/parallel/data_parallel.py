"""``DataParallel`` on the CPU: one device, so the wrapped module runs as is.

torch's ``DataParallel`` splits a batch across GPUs; cygrad has the CPU
only, where torch itself runs the wrapped module unchanged.  The wrapper
keeps torch's attribute (``.module``), its state-dict keys
(``module.<name>``) and its repr, so code written for it runs.
"""

from cygrad._device import check_device
from cygrad.nn.module import Module

__all__ = ["DataParallel"]


class DataParallel(Module):
    """Holds ``module``; ``forward`` calls it with the same arguments.

    ``device_ids`` / ``output_device`` must name the CPU (None, "cpu" or
    an empty list); ``dim`` is accepted (the batch is not split).
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        for d in list(device_ids or ()) + ([output_device] if output_device is not
                                             None else []):
            check_device(d if isinstance(d, str) else f"cuda:{d}")
        self.module = module
        self.device_ids = []
        self.dim = dim
        self.output_device = None

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)
