"""RAdam: Adam with a rectified (variance-corrected) adaptive rate."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cygrad.optim._kernels import k2 as _k

from .optimizer import (
    Optimizer,
    advance_step,
    check_betas,
    check_nonnegative,
    check_torch_only_options,
    flat_state,
    step_state,
    zeros_state,
)

if TYPE_CHECKING:
    from cygrad._tensor import Tensor
    from cygrad._typing import Params

__all__ = ["RAdam"]


class RAdam(Optimizer):
    r"""RAdam (torch's ``torch.optim.RAdam``).

    For each parameter ``p`` with a gradient, at step ``t`` (from 1), in place::

        g = -grad if maximize else grad
        p = p * (1 - lr * weight_decay)     # decoupled_weight_decay, if weight_decay
        g = g + weight_decay * p            # otherwise: L2 term, if weight_decay
        m = m + (1 - beta1) * (g - m)       # a lerp
        v = beta2 * v + (1 - beta2) * g * g
        bc1 = 1 - beta1 ** t; bc2 = 1 - beta2 ** t
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * t * beta2 ** t / bc2
        if rho_t > 5:
            rect = sqrt((rho_t - 4) * (rho_t - 2) * rho_inf
                        / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            p = p - m / bc1 * lr * (sqrt(bc2) / (sqrt(v) + eps)) * rect
        else:
            p = p - m / bc1 * lr            # plain momentum while rho_t <= 5

    The scalars are formed in double; ``sqrt(bc2) / x`` is taken as torch
    takes it, ``(1 / x) * sqrt(bc2)``.  State: ``step``, ``exp_avg``,
    ``exp_avg_sq``.

    Parameters
    ----------
    params : iterable of Tensor or dict
    lr : float, default 1e-3
    betas : (float, float), default (0.9, 0.999)
    eps : float, default 1e-8
    weight_decay : float, default 0
    decoupled_weight_decay : bool, default False
    maximize : bool, default False
    foreach : ignored
    capturable, differentiable : False
        Accepted when False; True raises ``NotImplementedError``.

    Raises
    ------
    ValueError
        ``"Invalid learning rate: ..."``, ``"Invalid epsilon value: ..."``,
        ``"Invalid beta parameter at index 0: ..."`` (or 1),
        ``"Invalid weight_decay value: ..."``.
    """

    def __init__(self, params: Params, lr: float | Tensor = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False) -> None:
        check_torch_only_options(capturable, differentiable)
        defaults = {
            "lr": lr,
            "betas": tuple(betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "decoupled_weight_decay": decoupled_weight_decay,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _validate(self, group):
        check_nonnegative(group, "lr", "eps")
        check_betas(group["betas"])
        check_nonnegative(group, "weight_decay")

    def _update(self, group, items):
        lr = float(group["lr"])
        beta1, beta2 = (float(b) for b in group["betas"])
        eps = float(group["eps"])
        weight_decay = float(group["weight_decay"])
        decoupled = bool(group["decoupled_weight_decay"])
        maximize = bool(group["maximize"])
        state = self.state
        for p, arr, grad in items:
            st = state[p]
            if len(st) == 0:
                st["step"] = step_state()
                st["exp_avg"] = zeros_state(p)
                st["exp_avg_sq"] = zeros_state(p)
            step = advance_step(st["step"])
            bias_correction1 = 1 - beta1**step
            bias_correction2 = 1 - beta2**step
            rho_inf = 2 / (1 - beta2) - 1
            rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
            rectify = rho_t > 5.0
            rect = 1.0
            if rectify:
                rect = (
                    (rho_t - 4)
                    * (rho_t - 2)
                    * rho_inf
                    / ((rho_inf - 4) * (rho_inf - 2) * rho_t)
                ) ** 0.5
            m_t, v_t = st["exp_avg"], st["exp_avg_sq"]
            _k.radam(
                arr,
                grad,
                flat_state(m_t),
                flat_state(v_t),
                lr,
                beta1,
                beta2,
                eps,
                weight_decay,
                decoupled,
                bias_correction1,
                bias_correction2,
                rect,
                rectify,
                maximize,
            )
            m_t._bump_version()
            v_t._bump_version()
            p._bump_version()
