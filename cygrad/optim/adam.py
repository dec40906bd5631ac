"""Adam, with L2 or decoupled (AdamW) weight decay and AMSGrad."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cygrad.optim._kernels import k as _k

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

__all__ = ["Adam"]


class Adam(Optimizer):
    r"""Adam (torch's ``torch.optim.Adam``).

    For each parameter ``p`` with a gradient, at step ``t`` (from 1), in place::

        g = -grad if maximize else grad
        p = p * (1 - lr * weight_decay)       # decoupled_weight_decay (AdamW)
        g = g + weight_decay * p              # otherwise: L2 penalty in the gradient
        m = m + (1 - beta1) * (g - m)         # a lerp, = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        v_hat = vmax = max(vmax, v) if amsgrad else v     # max of the raw v
        denom = sqrt(v_hat) / sqrt(1 - beta2**t) + eps    # eps after the correction
        p = p - lr / (1 - beta1**t) * m / denom

    Bias corrections are scalars formed in double; ``m``, ``v`` and ``vmax``
    start at zero.  State: ``step`` (a 0-d float tensor), ``exp_avg``,
    ``exp_avg_sq`` and, with amsgrad, ``max_exp_avg_sq``.

    Parameters
    ----------
    params : iterable of Tensor or dict
    lr : float, default 1e-3
    betas : (float, float), default (0.9, 0.999)
    eps : float, default 1e-8
    weight_decay : float, default 0
    amsgrad : bool, default False
    maximize : bool, default False
    decoupled_weight_decay : bool, default False
        Decay the weights directly (AdamW) instead of adding an L2 term.
    foreach, fused : ignored
        Accepted so torch code runs unchanged; cygrad always fuses.
    capturable, differentiable : False
        Accepted when False; True raises ``NotImplementedError``.

    Raises
    ------
    ValueError
        ``"Invalid learning rate: ..."``, ``"Invalid epsilon value: ..."``,
        ``"Invalid beta parameter at index 0: ..."`` (or 1) when not in
        ``[0, 1)``, ``"Invalid weight_decay value: ..."``.
    """

    def __init__(self, params: Params, lr: float | Tensor = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *,
                 maximize: bool = False, decoupled_weight_decay: bool = False,
                 foreach: bool | None = None, fused: bool | None = None,
                 capturable: bool = False, differentiable: bool = False) -> None:
        check_torch_only_options(capturable, differentiable)
        defaults = {
            "lr": lr,
            "betas": tuple(betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "amsgrad": amsgrad,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
            "fused": fused,
            "decoupled_weight_decay": decoupled_weight_decay,
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
        amsgrad = bool(group["amsgrad"])
        maximize = bool(group["maximize"])
        decoupled = bool(group["decoupled_weight_decay"])
        state = self.state
        for p, arr, grad in items:
            st = state[p]
            if len(st) == 0:
                st["step"] = step_state()
                st["exp_avg"] = zeros_state(p)
                st["exp_avg_sq"] = zeros_state(p)
                if amsgrad:
                    st["max_exp_avg_sq"] = zeros_state(p)
            elif amsgrad and "max_exp_avg_sq" not in st:
                # amsgrad switched on later (e.g. by load_state_dict): start at 0
                st["max_exp_avg_sq"] = zeros_state(p)
            m_t = st["exp_avg"]
            v_t = st["exp_avg_sq"]
            vmax_t = st["max_exp_avg_sq"] if amsgrad else None
            step = advance_step(st["step"])
            _k.adam(
                arr,
                grad,
                flat_state(m_t),
                flat_state(v_t),
                flat_state(vmax_t) if amsgrad else None,
                step,
                lr,
                beta1,
                beta2,
                eps,
                weight_decay,
                decoupled,
                maximize,
            )
            m_t._bump_version()
            v_t._bump_version()
            if amsgrad:
                vmax_t._bump_version()
            p._bump_version()
