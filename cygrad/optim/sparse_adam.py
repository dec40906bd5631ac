"""SparseAdam: exists so torch code constructs it; cygrad has no sparse gradients."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .optimizer import check_betas
from .optimizer import Optimizer

if TYPE_CHECKING:
    from cygrad._tensor import Tensor
    from cygrad._typing import Params

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    r"""SparseAdam (torch's ``torch.optim.SparseAdam``): Adam over the non-zero
    entries of a sparse gradient.

    cygrad's gradients are always dense, and torch's SparseAdam given a dense
    gradient raises at ``step``; so does this one (``RuntimeError``, before
    anything changes: no state, no parameter update).  Construction checks
    the hyperparameters as torch does, so a program that builds one for an
    embedding it never steps still runs.  Use :class:`Adam` (or
    ``Adam(..., foreach=False)``) on dense gradients.

    Parameters
    ----------
    params : iterable of Tensor or dict
    lr : float, default 1e-3
    betas : (float, float), default (0.9, 0.999)
    eps : float, default 1e-8
    maximize : bool, default False

    Raises
    ------
    ValueError
        ``"Invalid learning rate: ..."`` (lr must be > 0),
        ``"Invalid epsilon value: ..."`` (eps must be > 0),
        ``"Invalid beta parameter at index 0: ..."`` (or 1).
    RuntimeError
        At ``step``, for any parameter with a gradient.
    """

    def __init__(self, params: Params, lr: float | Tensor = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 maximize: bool = False) -> None:
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "maximize": maximize}
        super().__init__(params, defaults)

    def _validate(self, group):
        if not 0.0 < group["lr"]:
            raise ValueError(f"Invalid learning rate: {group['lr']}")
        if not 0.0 < group["eps"]:
            raise ValueError(f"Invalid epsilon value: {group['eps']}")
        check_betas(group["betas"])

    def _update(self, group, items):
        if items:
            raise RuntimeError(
                "SparseAdam does not support dense gradients, please consider "
                "Adam instead (cygrad has no sparse gradients, so SparseAdam "
                "can never step)"
            )
