"""RMSprop, plain or centered, with optional momentum."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cygrad.optim._kernels import k as _k

from .optimizer import (
    Optimizer,
    advance_step,
    check_torch_only_options,
    flat_state,
    step_state,
    zeros_state,
)

if TYPE_CHECKING:
    from cygrad._tensor import Tensor
    from cygrad._typing import Params

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    r"""RMSprop (torch's ``torch.optim.RMSprop``).

    For each parameter ``p`` with a gradient, in place::

        g = -grad if maximize else grad
        g = g + weight_decay * p                      # if weight_decay
        v = alpha * v + (1 - alpha) * g * g
        if centered:
            ga = ga + (1 - alpha) * (g - ga)          # a lerp
            avg = sqrt(v - ga * ga) + eps
        else:
            avg = sqrt(v) + eps                       # eps outside the sqrt
        if momentum > 0:
            buf = momentum * buf + g / avg
            p = p - lr * buf
        else:
            p = p - lr * g / avg

    ``v``, ``ga`` and ``buf`` start at zero.  State: ``step``, ``square_avg``,
    ``momentum_buffer`` (if momentum > 0), ``grad_avg`` (if centered).

    Parameters
    ----------
    params : iterable of Tensor or dict
    lr : float, default 1e-2
    alpha : float, default 0.99
    eps : float, default 1e-8
    weight_decay : float, default 0
    momentum : float, default 0
    centered : bool, default False
    maximize : bool, default False
    foreach : ignored
    capturable, differentiable : False
        Accepted when False; True raises ``NotImplementedError``.

    Raises
    ------
    ValueError
        ``"Invalid learning rate: ..."``, ``"Invalid epsilon value: ..."``,
        ``"Invalid momentum value: ..."``, ``"Invalid weight_decay value: ..."``,
        ``"Invalid alpha value: ..."``.
    """

    def __init__(self, params: Params, lr: float | Tensor = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0, momentum: float = 0,
                 centered: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_torch_only_options(capturable, differentiable)
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "alpha": alpha,
            "eps": eps,
            "centered": centered,
            "weight_decay": weight_decay,
            "capturable": capturable,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _validate(self, group):
        if not 0.0 <= group["lr"]:
            raise ValueError(f"Invalid learning rate: {group['lr']}")
        if not 0.0 <= group["eps"]:
            raise ValueError(f"Invalid epsilon value: {group['eps']}")
        if not 0.0 <= group["momentum"]:
            raise ValueError(f"Invalid momentum value: {group['momentum']}")
        if not 0.0 <= group["weight_decay"]:
            raise ValueError(f"Invalid weight_decay value: {group['weight_decay']}")
        if not 0.0 <= group["alpha"]:
            raise ValueError(f"Invalid alpha value: {group['alpha']}")

    def _update(self, group, items):
        lr = float(group["lr"])
        alpha = float(group["alpha"])
        eps = float(group["eps"])
        weight_decay = float(group["weight_decay"])
        momentum = float(group["momentum"])
        centered = bool(group["centered"])
        maximize = bool(group["maximize"])
        state = self.state
        for p, arr, grad in items:
            st = state[p]
            if len(st) == 0:
                st["step"] = step_state()
                st["square_avg"] = zeros_state(p)
            # buffers an option needs, created at first use (also after a
            # load_state_dict that switched the option on)
            if momentum > 0 and "momentum_buffer" not in st:
                st["momentum_buffer"] = zeros_state(p)
            if centered and "grad_avg" not in st:
                st["grad_avg"] = zeros_state(p)
            advance_step(st["step"])
            buffers = [st["square_avg"]]
            ga = buf = None
            if centered:
                buffers.append(st["grad_avg"])
                ga = flat_state(st["grad_avg"])
            if momentum > 0:
                buffers.append(st["momentum_buffer"])
                buf = flat_state(st["momentum_buffer"])
            _k.rmsprop(
                arr,
                grad,
                flat_state(st["square_avg"]),
                ga,
                buf,
                lr,
                alpha,
                eps,
                weight_decay,
                momentum,
                maximize,
            )
            for t in buffers:
                t._bump_version()
            p._bump_version()
