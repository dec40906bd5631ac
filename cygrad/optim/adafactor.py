"""Adafactor: factored second moments for matrices, relative step sizes."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cygrad.creation import from_numpy
from cygrad.optim._kernels import k2 as _k

from .optimizer import (
    Optimizer,
    advance_step,
    flat_state,
    step_state,
    zeros_state,
)

if TYPE_CHECKING:
    from cygrad._tensor import Tensor
    from cygrad._typing import Params

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    r"""Adafactor (torch's ``torch.optim.Adafactor``).

    For each parameter ``p`` with a gradient, at step ``t`` (from 1), in place::

        g = -grad if maximize else grad
        beta2_t = 1 - t ** beta2_decay;  rho = min(lr, 1 / sqrt(t))
        alpha = max(eps2, norm(p) / sqrt(numel)) * rho
        p = p * (1 - lr * weight_decay)                   # if weight_decay
        if p.ndim > 1:   # factored over the last two dims (a batch of matrices)
            row_var = lerp(row_var, mean(g * g, dim=-1), 1 - beta2_t)
            col_var = lerp(col_var, mean(g * g, dim=-2), 1 - beta2_t)
            v = row_var @ col_var / max(mean(row_var, dim=-2), eps1)
        else:
            variance = lerp(variance, g * g, 1 - beta2_t);  v = variance
        u = g / sqrt(max(v, eps1 * eps1))
        p = p - alpha / max(1, norm(u) / (sqrt(numel) * d)) * u

    ``mean(g * g)`` is formed as torch forms it, ``norm(g) ** 2 / size``, with
    the norm rounded to the dtype; ``eps1=None`` means the dtype's machine
    epsilon.  State: ``step`` and either ``row_var`` (shape ``(..., R, 1)``)
    and ``col_var`` (``(..., 1, C)``) or ``variance`` (the parameter's shape).
    One compiled kernel per parameter (three passes: the update's norm is
    needed before it is applied).

    Parameters
    ----------
    params : iterable of Tensor or dict
    lr : float, default 1e-2
    beta2_decay : float, default -0.8
    eps : (float or None, float), default (None, 1e-3)
    d : float, default 1.0
        The clipping threshold of the update's RMS.
    weight_decay : float, default 0.0
    foreach : ignored
    maximize : bool, default False

    Raises
    ------
    ValueError
        torch's phrases: ``"Learning rate should be >= 0 but is: ..."``,
        ``"beta2_decay should be <= 0 but is: ..."``, ``"epsilon1 should be >= 0
        but is: ..."``, ``"epsilon2 ..."``, ``"Clipping threshold d should be >= 1
        but is: ..."``, ``"weight_decay should be >= 0 but is: ..."``.
    """

    def __init__(self, params: Params, lr: float | Tensor = 1e-2,
                 beta2_decay: float = -0.8, eps: float = (None, 1e-3), d: float = 1.0,
                 weight_decay: float = 0.0, *, foreach: bool | None = None,
                 maximize: bool = False) -> None:
        defaults = {
            "lr": lr,
            "beta2_decay": beta2_decay,
            "eps": tuple(eps),
            "d": d,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "foreach": foreach,
        }
        super().__init__(params, defaults)

    def _state_shape(self, key, shape):
        if key == "row_var":
            return shape[:-1] + (1,)
        if key == "col_var":
            return shape[:-2] + (1, shape[-1])
        return super()._state_shape(key, shape)

    def _validate(self, group):
        lr, eps = group["lr"], group["eps"]
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= group["beta2_decay"]:
            raise ValueError(
                f"beta2_decay should be <= 0 but is: {group['beta2_decay']}"
            )
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= group["d"]:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {group['d']}")
        if not 0.0 <= group["weight_decay"]:
            raise ValueError(
                f"weight_decay should be >= 0 but is: {group['weight_decay']}"
            )

    def _update(self, group, items):
        lr = float(group["lr"])
        beta2_decay = float(group["beta2_decay"])
        eps1, eps2 = group["eps"]
        d = float(group["d"])
        weight_decay = float(group["weight_decay"])
        maximize = bool(group["maximize"])
        state = self.state
        for p, arr, grad in items:
            shape = p._arr.shape
            st = state[p]
            if len(st) == 0:
                st["step"] = step_state()
                if len(shape) > 1:
                    st["row_var"] = from_numpy(
                        np.zeros(shape[:-1] + (1,), dtype=arr.dtype)
                    )
                    st["col_var"] = from_numpy(
                        np.zeros(shape[:-2] + (1, shape[-1]), dtype=arr.dtype)
                    )
                else:
                    st["variance"] = zeros_state(p)
            step = advance_step(st["step"])
            e1 = float(np.finfo(arr.dtype).eps) if eps1 is None else float(eps1)
            factored = len(shape) > 1
            buffers = (
                [st["row_var"], st["col_var"]] if factored else [st["variance"]]
            )
            _k.adafactor(
                arr,
                grad,
                flat_state(buffers[0]) if factored else None,
                flat_state(buffers[1]) if factored else None,
                None if factored else flat_state(buffers[0]),
                shape[-2] if factored else 1,
                shape[-1] if factored else 1,
                lr,
                step**beta2_decay,
                e1,
                float(eps2),
                d,
                min(lr, 1 / (step**0.5)),
                weight_decay,
                maximize,
            )
            for t in buffers:
                t._bump_version()
            p._bump_version()
