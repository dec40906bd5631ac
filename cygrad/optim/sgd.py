"""Stochastic gradient descent, with momentum, Nesterov and weight decay."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cygrad.optim._kernels import k as _k

from .optimizer import (
    Optimizer,
    check_torch_only_options,
    flat_state,
    zeros_state,
)

if TYPE_CHECKING:
    from cygrad._tensor import Tensor
    from cygrad._typing import Params

__all__ = ["SGD"]


class SGD(Optimizer):
    r"""Stochastic gradient descent (torch's ``torch.optim.SGD``).

    For each parameter ``p`` with a gradient, in place and in this order::

        g = -grad if maximize else grad
        g = g + weight_decay * p                      # L2 penalty, if weight_decay
        buf = g                                       # first step (a copy)
        buf = momentum * buf + (1 - dampening) * g    # later steps
        g = g + momentum * buf if nesterov else buf   # if momentum
        p = p - lr * g

    The momentum buffer starts as a copy of the first (decayed) gradient, not
    as zeros, so dampening does not shrink the first step.  State:
    ``momentum_buffer`` (only when ``momentum != 0``).

    Parameters
    ----------
    params : iterable of Tensor or dict
    lr : float, default 1e-3
    momentum : float, default 0
    dampening : float, default 0
    weight_decay : float, default 0
    nesterov : bool, default False
        Needs ``momentum > 0`` and ``dampening == 0``.
    maximize : bool, default False
        Ascend the objective instead.
    foreach, fused : ignored
        Accepted so torch code runs unchanged; cygrad always fuses.
    differentiable : False
        Accepted when False; True raises ``NotImplementedError``.

    Raises
    ------
    ValueError
        ``"Invalid learning rate: {lr}"``, ``"Invalid momentum value: ..."``,
        ``"Invalid weight_decay value: ..."``, ``"Invalid dampening value: ..."``
        or ``"Nesterov momentum requires a momentum and zero dampening"``.
    """

    def __init__(self, params: Params, lr: float | Tensor = 1e-3, momentum: float = 0,
                 dampening: float = 0, weight_decay: float = 0, nesterov: bool = False,
                 *, maximize: bool = False, foreach: bool | None = None,
                 fused: bool | None = None, differentiable: bool = False) -> None:
        check_torch_only_options(differentiable=differentiable)
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "weight_decay": weight_decay,
            "nesterov": nesterov,
            "maximize": maximize,
            "foreach": foreach,
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)

    def _validate(self, group):
        if not group["lr"] >= 0.0:
            raise ValueError(f"Invalid learning rate: {group['lr']}")
        if not group["momentum"] >= 0.0:
            raise ValueError(f"Invalid momentum value: {group['momentum']}")
        if not group["weight_decay"] >= 0.0:
            raise ValueError(f"Invalid weight_decay value: {group['weight_decay']}")
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")

    def _update(self, group, items):
        lr = float(group["lr"])
        momentum = float(group["momentum"])
        dampening = float(group["dampening"])
        weight_decay = float(group["weight_decay"])
        nesterov = bool(group["nesterov"])
        maximize = bool(group["maximize"])
        state = self.state
        for p, arr, grad in items:
            buf = None
            first = False
            if momentum != 0:
                st = state[p]
                buf_t = st.get("momentum_buffer")
                if buf_t is None:
                    buf_t = zeros_state(p)
                    st["momentum_buffer"] = buf_t
                    first = True
                buf = flat_state(buf_t)
            _k.sgd(
                arr,
                grad,
                buf,
                lr,
                weight_decay,
                momentum,
                dampening,
                nesterov,
                maximize,
                first,
            )
            if buf is not None:
                buf_t._bump_version()
            p._bump_version()
