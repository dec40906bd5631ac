"""Rprop: resilient backpropagation, per-element step sizes from gradient signs."""

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

__all__ = ["Rprop"]


class Rprop(Optimizer):
    r"""Rprop (torch's ``torch.optim.Rprop``).

    For each parameter ``p`` with a gradient, in place, elementwise::

        g = -grad if maximize else grad
        f = etaplus if g * prev > 0 else etaminus if g * prev < 0 else 1
        step_size = clamp(step_size * f, step_size_min, step_size_max)
        g = 0 where f == etaminus             # a sign change: no move, no memory
        p = p - sign(g) * step_size
        prev = g

    ``sign`` is torch's (0 for 0 and for NaN).  State: ``step``, ``prev``
    (starts at 0) and ``step_size`` (starts at ``lr``).

    Parameters
    ----------
    params : iterable of Tensor or dict
    lr : float, default 1e-2
    etas : (float, float), default (0.5, 1.2)
        ``(etaminus, etaplus)``, with ``0 < etaminus < 1 < etaplus``.
    step_sizes : (float, float), default (1e-6, 50)
        ``(step_size_min, step_size_max)``.
    maximize : bool, default False
    foreach : ignored
    capturable, differentiable : False
        Accepted when False; True raises ``NotImplementedError``.

    Raises
    ------
    ValueError
        ``"Invalid learning rate: ..."``, ``"Invalid eta values: ..., ..."``.
    """

    def __init__(self, params: Params, lr: float | Tensor = 1e-2,
                 etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *,
                 capturable: bool = False, foreach: bool | None = None,
                 maximize: bool = False, differentiable: bool = False) -> None:
        check_torch_only_options(capturable, differentiable)
        defaults = {
            "lr": lr,
            "etas": tuple(etas),
            "step_sizes": tuple(step_sizes),
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    def _validate(self, group):
        if not 0.0 <= group["lr"]:
            raise ValueError(f"Invalid learning rate: {group['lr']}")
        etas = group["etas"]
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")

    def _update(self, group, items):
        etaminus, etaplus = (float(e) for e in group["etas"])
        step_size_min, step_size_max = (float(s) for s in group["step_sizes"])
        maximize = bool(group["maximize"])
        state = self.state
        for p, arr, grad in items:
            st = state[p]
            if len(st) == 0:
                st["step"] = step_state()
                st["prev"] = zeros_state(p)
                st["step_size"] = zeros_state(p, float(group["lr"]))
            advance_step(st["step"])
            prev_t, size_t = st["prev"], st["step_size"]
            _k.rprop(
                arr,
                grad,
                flat_state(prev_t),
                flat_state(size_t),
                etaminus,
                etaplus,
                step_size_min,
                step_size_max,
                maximize,
            )
            prev_t._bump_version()
            size_t._bump_version()
            p._bump_version()
