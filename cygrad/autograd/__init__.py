"""cygrad.autograd: Function, grad modes, grad/backward."""

from cygrad._kernels.engine import is_grad_enabled

from .function import Function, FunctionCtx, once_differentiable
from .functional import backward, grad
from .grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .higher import hessian, hvp, jacobian, jvp, vhp, vjp
from .anomaly import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from .diagnostics import (
    explain, get_debug_level, graph_stats, retain_grads, set_debug_level,
)

__all__ = [
    "Function", "FunctionCtx", "once_differentiable", "backward", "grad",
    "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled",
    "inference_mode", "gradcheck", "gradgradcheck", "GradcheckError",
    "jacobian", "hessian", "vjp", "jvp", "vhp", "hvp",
    "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "explain",
    "retain_grads", "graph_stats", "set_debug_level", "get_debug_level",
]
