"""ASGD: averaged stochastic gradient descent."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cygrad.optim._kernels import k2 as _k

from .optimizer import (
    Optimizer,
    advance_step,
    check_torch_only_options,
    flat_state,
    round_to_default,
    set_scalar_state,
    step_state,
    zeros_state,
)

if TYPE_CHECKING:
    from cygrad._tensor import Tensor
    from cygrad._typing import Params

__all__ = ["ASGD"]


class ASGD(Optimizer):
    r"""Averaged SGD (torch's ``torch.optim.ASGD``).

    For each parameter ``p`` with a gradient, at step ``t`` (from 1), in place::

        g = -grad if maximize else grad
        g = g + weight_decay * p                  # if weight_decay
        p = p * (1 - lambd * eta)
        p = p - eta * g
        ax = ax + (p - ax) * mu if mu != 1 else copy(p)
        eta = lr / (1 + lambd * lr * t) ** alpha  # for the next step
        mu = 1 / max(1, t - t0)

    ``eta`` and ``mu`` are 0-d tensors of the default dtype, as torch keeps
    them (so read back rounded to float32 unless the default is float64);
    ``eta`` starts at ``lr``, ``mu`` at 1.  State: ``step``, ``eta``, ``mu``,
    ``ax`` (the average, starts at 0).

    Parameters
    ----------
    params : iterable of Tensor or dict
    lr : float, default 1e-2
    lambd : float, default 1e-4
    alpha : float, default 0.75
    t0 : float, default 1e6
        The step at which averaging starts.
    weight_decay : float, default 0
    foreach : ignored
    maximize : bool, default False
    differentiable, capturable : False
        Accepted when False; True raises ``NotImplementedError``.

    Raises
    ------
    ValueError
        ``"Invalid learning rate: ..."``, ``"Invalid weight_decay value: ..."``.
    """

    _scalar_keys = ("eta", "mu")

    def __init__(self, params: Params, lr: float | Tensor = 1e-2, lambd: float = 1e-4,
                 alpha: float = 0.75, t0: float = 1e6, weight_decay: float = 0,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        check_torch_only_options(capturable, differentiable)
        defaults = {
            "lr": lr,
            "lambd": lambd,
            "alpha": alpha,
            "t0": t0,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    def _validate(self, group):
        if not 0.0 <= group["lr"]:
            raise ValueError(f"Invalid learning rate: {group['lr']}")
        if not 0.0 <= group["weight_decay"]:
            raise ValueError(f"Invalid weight_decay value: {group['weight_decay']}")

    def _update(self, group, items):
        lr = float(group["lr"])
        lambd = float(group["lambd"])
        alpha = float(group["alpha"])
        t0 = float(group["t0"])
        weight_decay = float(group["weight_decay"])
        maximize = bool(group["maximize"])
        state = self.state
        for p, arr, grad in items:
            st = state[p]
            if len(st) == 0:
                st["step"] = step_state()
                st["eta"] = step_state(lr)
                st["mu"] = step_state(1.0)
                st["ax"] = zeros_state(p)
            step = advance_step(st["step"])
            eta_t, mu_t, ax_t = st["eta"], st["mu"], st["ax"]
            _k.asgd(
                arr,
                grad,
                flat_state(ax_t),
                float(eta_t._arr),
                float(mu_t._arr),
                lambd,
                weight_decay,
                maximize,
            )
            # torch makes the new values default-dtype tensors, then copies
            # them into the state (float64 after a load for a float64 param)
            eta = round_to_default(lr / ((1 + lambd * lr * step) ** alpha))
            set_scalar_state(eta_t, eta)
            set_scalar_state(mu_t, round_to_default(1 / max(1, step - t0)))
            ax_t._bump_version()
            p._bump_version()
