"""cygrad.autograd: Function, grad modes, grad/backward."""

from cygrad._kernels.engine import is_grad_enabled

from .function import Function, FunctionCtx, once_differentiable
from .functional import backward, grad
from .grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .higher import hessian, hvp, jacobian, jvp, vhp, vjp

__all__ = [
    "Function", "FunctionCtx", "once_differentiable", "backward", "grad",
    "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled",
    "inference_mode", "gradcheck", "gradgradcheck", "GradcheckError",
    "jacobian", "hessian", "vjp", "jvp", "vhp", "hvp",
]
