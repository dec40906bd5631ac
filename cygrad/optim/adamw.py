"""AdamW: Adam with decoupled weight decay."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .adam import Adam
from .optimizer import check_torch_only_options

if TYPE_CHECKING:
    from cygrad._tensor import Tensor
    from cygrad._typing import Params

__all__ = ["AdamW"]


class AdamW(Adam):
    r"""AdamW (torch's ``torch.optim.AdamW``): Adam with decoupled weight decay.

    The weights decay before the moments are updated, ``p = p * (1 - lr *
    weight_decay)``, and the gradient carries no L2 term; everything else is
    :class:`Adam`'s update.  ``weight_decay`` defaults to ``1e-2``.

    Parameters
    ----------
    params : iterable of Tensor or dict
    lr : float, default 1e-3
    betas : (float, float), default (0.9, 0.999)
    eps : float, default 1e-8
    weight_decay : float, default 1e-2
    amsgrad : bool, default False
    maximize : bool, default False
    foreach, fused : ignored
        Accepted (and kept in the groups, as torch keeps them) so torch code
        runs unchanged; cygrad always fuses.
    capturable, differentiable : False
        Accepted when False; True raises ``NotImplementedError``.
    """

    def __init__(self, params: Params, lr: float | Tensor = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None,
                 fused: bool | None = None, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_torch_only_options(capturable, differentiable)
        super().__init__(
            params,
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            amsgrad=amsgrad,
            maximize=maximize,
            decoupled_weight_decay=True,
            foreach=foreach,
            fused=fused,
            capturable=capturable,
            differentiable=differentiable,
        )
