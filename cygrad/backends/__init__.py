"""``cygrad.backends``: the flags scripts read or set (``cudnn.deterministic``,
``mps.is_available()``).  cygrad's CPU kernels are deterministic and use
none of these backends; the flags are kept so such scripts run unchanged.
Each backend is a submodule, so ``import torch.backends.cudnn as cudnn``
works too."""

from cygrad.backends import cuda, cudnn, mps

__all__ = ["cuda", "cudnn", "mps"]
