"""Adagrad, with learning-rate decay."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    r"""Adagrad (torch's ``torch.optim.Adagrad``).

    For each parameter ``p`` with a gradient, at step ``t`` (from 1), in place::

        g = -grad if maximize else grad
        g = g + weight_decay * p                      # if weight_decay
        clr = lr / (1 + (t - 1) * lr_decay)
        s = s + g * g
        p = p - clr * g / (sqrt(s) + eps)

    Unlike the other optimizers, the state exists from construction: ``sum``
    filled with ``initial_accumulator_value`` and ``step`` at 0 (it advances
    only on steps where the parameter has a gradient).

    Parameters
    ----------
    params : iterable of Tensor or dict
    lr : float, default 1e-2
    lr_decay : float, default 0
    weight_decay : float, default 0
    initial_accumulator_value : float, default 0
    eps : float, default 1e-10
    maximize : bool, default False
    foreach, fused : ignored
        Accepted so torch code runs unchanged; cygrad always fuses.
    differentiable : False
        Accepted when False; True raises ``NotImplementedError``.

    Raises
    ------
    ValueError
        ``"Invalid learning rate: ..."``, ``"Invalid lr_decay value: ..."``,
        ``"Invalid weight_decay value: ..."``,
        ``"Invalid initial_accumulator_value value: ..."``,
        ``"Invalid epsilon value: ..."``.
    """

    def __init__(self, params: Params, lr: float | Tensor = 1e-2, lr_decay: float = 0,
                 weight_decay: float = 0, initial_accumulator_value: float = 0,
                 eps: float = 1e-10, foreach: bool | None = None, *,
                 maximize: bool = False, fused: bool | None = None,
                 differentiable: bool = False) -> None:
        check_torch_only_options(differentiable=differentiable)
        defaults = {
            "lr": lr,
            "lr_decay": lr_decay,
            "eps": eps,
            "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)  # add_param_group creates the state

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        super().add_param_group(param_group)
        self._init_state(self.param_groups[-1])

    def _init_state(self, group):
        for p in group["params"]:
            st = self.state[p]
            if len(st) == 0:
                st["step"] = step_state()
                st["sum"] = zeros_state(p, float(group["initial_accumulator_value"]))

    def _validate(self, group):
        if not 0.0 <= group["lr"]:
            raise ValueError(f"Invalid learning rate: {group['lr']}")
        if not 0.0 <= group["lr_decay"]:
            raise ValueError(f"Invalid lr_decay value: {group['lr_decay']}")
        if not 0.0 <= group["weight_decay"]:
            raise ValueError(f"Invalid weight_decay value: {group['weight_decay']}")
        if not 0.0 <= group["initial_accumulator_value"]:
            raise ValueError(
                "Invalid initial_accumulator_value value: "
                f"{group['initial_accumulator_value']}"
            )
        if not 0.0 <= group["eps"]:
            raise ValueError(f"Invalid epsilon value: {group['eps']}")

    def _update(self, group, items):
        lr = float(group["lr"])
        lr_decay = float(group["lr_decay"])
        weight_decay = float(group["weight_decay"])
        eps = float(group["eps"])
        maximize = bool(group["maximize"])
        self._init_state(group)  # parameters whose state a load left out
        state = self.state
        for p, arr, grad in items:
            st = state[p]
            step = advance_step(st["step"])
            clr = lr / (1 + (step - 1) * lr_decay)
            s_t = st["sum"]
            _k.adagrad(arr, grad, flat_state(s_t), clr, eps, weight_decay, maximize)
            s_t._bump_version()
            p._bump_version()
