"""NAdam: Adam with Nesterov momentum and a momentum-decay schedule."""

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
    set_scalar_state,
    step_state,
    zeros_state,
)

if TYPE_CHECKING:
    from cygrad._tensor import Tensor
    from cygrad._typing import Params

__all__ = ["NAdam"]


class NAdam(Optimizer):
    r"""NAdam (torch's ``torch.optim.NAdam``).

    For each parameter ``p`` with a gradient, at step ``t`` (from 1), in place::

        g = -grad if maximize else grad
        p = p * (1 - lr * weight_decay)     # decoupled_weight_decay, if weight_decay
        g = g + weight_decay * p            # otherwise: L2 term, if weight_decay
        mu      = beta1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))
        mu_next = beta1 * (1 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
        mu_product = mu_product * mu        # a 0-d tensor of the default dtype
        m = m + (1 - beta1) * (g - m)       # a lerp
        v = beta2 * v + (1 - beta2) * g * g
        denom = sqrt(v / (1 - beta2 ** t)) + eps
        p = p - lr * (1 - mu) / (1 - mu_product) * g / denom
        p = p - lr * mu_next / (1 - mu_product * mu_next) * m / denom

    ``mu_product`` is kept, as torch keeps it, in the default dtype (float32
    unless the default is float64) and read back as a Python float, so the
    trajectories agree with torch's under either default.  State: ``step``,
    ``mu_product`` (starts at 1), ``exp_avg``, ``exp_avg_sq`` (start at 0).

    Parameters
    ----------
    params : iterable of Tensor or dict
    lr : float, default 2e-3
    betas : (float, float), default (0.9, 0.999)
    eps : float, default 1e-8
    weight_decay : float, default 0
    momentum_decay : float, default 4e-3
    decoupled_weight_decay : bool, default False
    maximize : bool, default False
    foreach : ignored
        Accepted so torch code runs unchanged; cygrad always fuses.
    capturable, differentiable : False
        Accepted when False; True raises ``NotImplementedError``.

    Raises
    ------
    ValueError
        ``"Invalid learning rate: ..."``, ``"Invalid epsilon value: ..."``,
        ``"Invalid beta parameter at index 0: ..."`` (or 1),
        ``"Invalid weight_decay value: ..."``, ``"Invalid momentum_decay value: ..."``.
    """

    _scalar_keys = ("mu_product",)

    def __init__(self, params: Params, lr: float | Tensor = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_torch_only_options(capturable, differentiable)
        defaults = {
            "lr": lr,
            "betas": tuple(betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "momentum_decay": momentum_decay,
            "decoupled_weight_decay": decoupled_weight_decay,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _validate(self, group):
        check_nonnegative(group, "lr", "eps")
        check_betas(group["betas"])
        check_nonnegative(group, "weight_decay", "momentum_decay")

    def _update(self, group, items):
        lr = float(group["lr"])
        beta1, beta2 = (float(b) for b in group["betas"])
        eps = float(group["eps"])
        weight_decay = float(group["weight_decay"])
        momentum_decay = float(group["momentum_decay"])
        decoupled = bool(group["decoupled_weight_decay"])
        maximize = bool(group["maximize"])
        state = self.state
        for p, arr, grad in items:
            st = state[p]
            if len(st) == 0:
                st["step"] = step_state()
                st["mu_product"] = step_state(1.0)
                st["exp_avg"] = zeros_state(p)
                st["exp_avg_sq"] = zeros_state(p)
            step = advance_step(st["step"])
            mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
            mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
            mp_t = st["mu_product"]
            # torch's ``mu_product *= mu``: one multiply in the tensor's dtype
            mu_product = set_scalar_state(mp_t, mp_t._arr * mp_t._arr.dtype.type(mu))
            m_t, v_t = st["exp_avg"], st["exp_avg_sq"]
            _k.nadam(
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
                1.0 - beta2**step,
                mu,
                mu_product,
                mu_next,
                maximize,
            )
            m_t._bump_version()
            v_t._bump_version()
            p._bump_version()
