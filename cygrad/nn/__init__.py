"""``cygrad.nn``: modules, losses and initialisers for training loops."""

from . import functional, init, utils
from .module import Module
from . import modules
from .modules import *  # noqa: F401,F403  (the names of modules.__all__)
from .parameter import Parameter
from .utils import clip_grad_norm_
from . import parallel  # noqa: E402  (after .module, which it subclasses)
from .parallel import DataParallel  # noqa: E402

__all__ = [
    "DataParallel",
    "Module",
    "Parameter",
    "clip_grad_norm_",
    "functional",
    "init",
    "parallel",
    "utils",
]
__all__ += modules.__all__
from ._buffer import Buffer  # noqa: E402

__all__ += ["Buffer"]
