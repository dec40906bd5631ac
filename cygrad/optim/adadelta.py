"""Adadelta: per-element rates from running averages of g**2 and update**2."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cygrad.optim._kernels import k2 as _k

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

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    r"""Adadelta (torch's ``torch.optim.Adadelta``).

    For each parameter ``p`` with a gradient, in place::

        g = -grad if maximize else grad
        g = g + weight_decay * p                  # if weight_decay
        v = rho * v + (1 - rho) * g * g
        delta = sqrt(a + eps) / sqrt(v + eps) * g
        a = rho * a + (1 - rho) * delta * delta
        p = p - lr * delta

    State: ``step``, ``square_avg`` (``v``) and ``acc_delta`` (``a``), both
    starting at 0.

    Parameters
    ----------
    params : iterable of Tensor or dict
    lr : float, default 1.0
    rho : float, default 0.9
    eps : float, default 1e-6
    weight_decay : float, default 0
    foreach : ignored
    maximize : bool, default False
    capturable, differentiable : False
        Accepted when False; True raises ``NotImplementedError``.

    Raises
    ------
    ValueError
        ``"Invalid learning rate: ..."``, ``"Invalid rho value: ..."`` (not in
        ``[0, 1]``), ``"Invalid epsilon value: ..."``,
        ``"Invalid weight_decay value: ..."``.
    """

    def __init__(self, params: Params, lr: float | Tensor = 1.0, rho: float = 0.9,
                 eps: float = 1e-6, weight_decay: float = 0,
                 foreach: bool | None = None, *, capturable: bool = False,
                 maximize: bool = False, differentiable: bool = False) -> None:
        check_torch_only_options(capturable, differentiable)
        defaults = {
            "lr": lr,
            "rho": rho,
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "capturable": capturable,
            "foreach": foreach,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _validate(self, group):
        if not 0.0 <= group["lr"]:
            raise ValueError(f"Invalid learning rate: {group['lr']}")
        if not 0.0 <= group["rho"] <= 1.0:
            raise ValueError(f"Invalid rho value: {group['rho']}")
        if not 0.0 <= group["eps"]:
            raise ValueError(f"Invalid epsilon value: {group['eps']}")
        if not 0.0 <= group["weight_decay"]:
            raise ValueError(f"Invalid weight_decay value: {group['weight_decay']}")

    def _update(self, group, items):
        lr = float(group["lr"])
        rho = float(group["rho"])
        eps = float(group["eps"])
        weight_decay = float(group["weight_decay"])
        maximize = bool(group["maximize"])
        state = self.state
        for p, arr, grad in items:
            st = state[p]
            if len(st) == 0:
                st["step"] = step_state()
                st["square_avg"] = zeros_state(p)
                st["acc_delta"] = zeros_state(p)
            advance_step(st["step"])
            v_t, a_t = st["square_avg"], st["acc_delta"]
            _k.adadelta(
                arr,
                grad,
                flat_state(v_t),
                flat_state(a_t),
                lr,
                rho,
                eps,
                weight_decay,
                maximize,
            )
            v_t._bump_version()
            a_t._bump_version()
            p._bump_version()
