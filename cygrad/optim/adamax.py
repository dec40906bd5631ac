"""Adamax: Adam with an infinity-norm second moment."""

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

__all__ = ["Adamax"]


class Adamax(Optimizer):
    r"""Adamax (torch's ``torch.optim.Adamax``).

    For each parameter ``p`` with a gradient, at step ``t`` (from 1), in place::

        g = -grad if maximize else grad
        g = g + weight_decay * p                  # if weight_decay
        m = m + (1 - beta1) * (g - m)             # a lerp
        u = maximum(beta2 * u, |g| + eps)         # NaN from either side wins
        p = p - lr / (1 - beta1 ** t) * m / u

    State: ``step``, ``exp_avg``, ``exp_inf`` (both start at 0).

    Parameters
    ----------
    params : iterable of Tensor or dict
    lr : float, default 2e-3
    betas : (float, float), default (0.9, 0.999)
    eps : float, default 1e-8
    weight_decay : float, default 0
    foreach : ignored
    maximize : bool, default False
    differentiable, capturable : False
        Accepted when False; True raises ``NotImplementedError``.

    Raises
    ------
    ValueError
        ``"Invalid learning rate: ..."``, ``"Invalid epsilon value: ..."``,
        ``"Invalid beta parameter at index 0: ..."`` (or 1),
        ``"Invalid weight_decay value: ..."``.
    """

    def __init__(self, params: Params, lr: float | Tensor = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        check_torch_only_options(capturable, differentiable)
        defaults = {
            "lr": lr,
            "betas": tuple(betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
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
        maximize = bool(group["maximize"])
        state = self.state
        for p, arr, grad in items:
            st = state[p]
            if len(st) == 0:
                st["step"] = step_state()
                st["exp_avg"] = zeros_state(p)
                st["exp_inf"] = zeros_state(p)
            step = advance_step(st["step"])
            clr = lr / (1 - beta1**step)
            m_t, u_t = st["exp_avg"], st["exp_inf"]
            _k.adamax(
                arr,
                grad,
                flat_state(m_t),
                flat_state(u_t),
                clr,
                beta1,
                beta2,
                eps,
                weight_decay,
                maximize,
            )
            m_t._bump_version()
            u_t._bump_version()
            p._bump_version()
