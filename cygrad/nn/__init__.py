"""``cygrad.nn``: modules, losses and initialisers for training loops."""

import typing as _typing

from . import attention, common_types, functional, grad, init, utils
from .module import Module
from . import modules
from .modules import *  # noqa: F401,F403  (the names of modules.__all__)
from .parameter import Parameter, UninitializedBuffer, UninitializedParameter
from . import parameter
from .utils import clip_grad_norm_
from . import parallel  # noqa: E402  (after .module, which it subclasses)
if _typing.TYPE_CHECKING:
    # mypy reads only literal lists in an __all__, and modules.__all__ adds
    # these families' lists to its own: their names, for the type checker.
    from .modules.activation import *  # noqa: F401,F403
    from .modules.container import *  # noqa: F401,F403
    from .modules.linear import *  # noqa: F401,F403
    from .modules.loss import *  # noqa: F401,F403
    from .modules.more import *  # noqa: F401,F403
    from .modules.pixelshuffle import *  # noqa: F401,F403
from .parallel import DataParallel  # noqa: E402

__all__ = [
    "DataParallel",
    "Module",
    "attention",
    "Parameter",
    "UninitializedBuffer",
    "UninitializedParameter",
    "clip_grad_norm_",
    "functional",
    "grad",
    "init",
    "parallel",
    "parameter",
    "utils",
]
__all__ += modules.__all__
from ._buffer import Buffer  # noqa: E402

__all__ += ["Buffer"]
from ._factory import factory_kwargs  # noqa: E402

__all__ += ["factory_kwargs"]
