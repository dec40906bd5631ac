"""cygrad.autograd: Function, grad modes, grad/backward, checks, diagnostics.

The core (``Function``, the grad modes, anomaly mode) sits below the ops,
which are built on it; ``backward``/``grad``, the derivative helpers,
``gradcheck`` and the diagnostics sit above them.  This package imports the
core only: the other names load from their modules on first use, so the ops
can import the core without pulling in what is built on the ops.
``cygrad/__init__.py`` imports every module, so ``import cygrad`` has them
all.
"""

import importlib
import typing as _typing

from cygrad._kernels.engine import is_grad_enabled

from .anomaly import (
    detect_anomaly,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_anomaly_enabled,
    set_detect_anomaly,
)
from .function import Function, FunctionCtx, once_differentiable
from .grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled

if _typing.TYPE_CHECKING:
    # What __getattr__ loads on first use, as mypy should see it (a name
    # such as gradcheck is both a function and its module).
    from . import backprop, diagnostics, functional, higher, profiler  # noqa: F401
    from .backprop import backward, grad  # noqa: F401
    from .diagnostics import (  # noqa: F401
        explain,
        get_debug_level,
        graph_stats,
        retain_grads,
        set_debug_level,
    )
    from .gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: F401
    from .higher import hessian, hvp, jacobian, jvp, vhp, vjp  # noqa: F401
    from .variable import Variable  # noqa: F401

# name -> the module above the ops that defines it
_ABOVE_OPS = {
    "backward": "backprop", "grad": "backprop",
    "gradcheck": "gradcheck", "gradgradcheck": "gradcheck",
    "GradcheckError": "gradcheck",
    "jacobian": "higher", "hessian": "higher", "vjp": "higher", "jvp": "higher",
    "vhp": "higher", "hvp": "higher",
    "explain": "diagnostics", "get_debug_level": "diagnostics",
    "graph_stats": "diagnostics", "retain_grads": "diagnostics",
    "set_debug_level": "diagnostics",
    "Variable": "variable",
    "functional": None, "backprop": None, "higher": None, "diagnostics": None,
    "profiler": None,
}

__all__ = [
    "Function", "FunctionCtx", "once_differentiable", "no_grad", "enable_grad",
    "set_grad_enabled", "is_grad_enabled", "inference_mode", "detect_anomaly",
    "set_detect_anomaly", "is_anomaly_enabled",
] + [n for n, m in _ABOVE_OPS.items() if m is not None]


def __getattr__(name: str) -> _typing.Any:
    if name not in _ABOVE_OPS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f"{__name__}.{_ABOVE_OPS[name] or name}")
    value = module if _ABOVE_OPS[name] is None else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_ABOVE_OPS))
