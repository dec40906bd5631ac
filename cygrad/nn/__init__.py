"""``cygrad.nn``: modules, losses and initialisers for training loops."""

from . import functional, init, utils
from .linear import Identity, Linear
from .loss import BCEWithLogitsLoss, CrossEntropyLoss, MSELoss, NLLLoss
from .module import Module, ModuleList, Sequential
from . import modules
from .modules import *  # noqa: F401,F403  (the names of modules.__all__)
from .parameter import Parameter
from .utils import clip_grad_norm_
from . import parallel  # noqa: E402  (after .module, which it subclasses)

__all__ = [
    "BCEWithLogitsLoss",
    "CrossEntropyLoss",
    "Identity",
    "Linear",
    "MSELoss",
    "Module",
    "ModuleList",
    "NLLLoss",
    "Parameter",
    "Sequential",
    "clip_grad_norm_",
    "functional",
    "init",
    "parallel",
    "utils",
]
__all__ += modules.__all__
