"""Loss modules: thin wrappers over the fused losses in ``nn.functional``."""

from . import functional as F
from .module import Module

__all__ = ["BCEWithLogitsLoss", "CrossEntropyLoss", "MSELoss", "NLLLoss"]


class _Loss(Module):
    def __init__(self, reduction="mean"):
        super().__init__()
        F._check_reduction(reduction)
        self.reduction = reduction

    def extra_repr(self):
        return ""       # torch's losses print no arguments


class MSELoss(_Loss):
    """Mean squared error; ``reduction`` is "mean" (default), "sum" or "none"."""

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class CrossEntropyLoss(_Loss):
    """Cross-entropy from logits and class indices (one fused kernel).

    Parameters
    ----------
    weight : Tensor (C,), optional per-class weights
    ignore_index : int
        Targets equal to it contribute nothing (default -100).
    reduction : "mean" | "sum" | "none"
    """

    def __init__(
        self, weight=None, size_average=None, ignore_index=-100, reduce=None,
        reduction="mean", label_smoothing=0.0,
    ):
        if size_average is not None or reduce is not None:
            reduction = F._legacy_reduction(size_average, reduce)
        super().__init__(reduction)
        if weight is not None:
            self.register_buffer("weight", weight)
        else:
            self.weight = None
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(
            input,
            target,
            weight=self.weight,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
            label_smoothing=self.label_smoothing,
        )


class NLLLoss(_Loss):
    """Negative log-likelihood of log-probabilities and class indices."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean"):
        super().__init__(reduction)
        if weight is not None:
            self.register_buffer("weight", weight)
        else:
            self.weight = None
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(
            input,
            target,
            weight=self.weight,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
        )


class BCEWithLogitsLoss(_Loss):
    """Sigmoid and binary cross-entropy in one stable fused kernel.

    Parameters
    ----------
    weight : Tensor broadcastable to the input, optional
    reduction : "mean" | "sum" | "none"
    pos_weight : Tensor, optional weight of positive examples
    """

    def __init__(self, weight=None, reduction="mean", pos_weight=None):
        super().__init__(reduction)
        if weight is not None:
            self.register_buffer("weight", weight)
        else:
            self.weight = None
        if pos_weight is not None:
            self.register_buffer("pos_weight", pos_weight)
        else:
            self.pos_weight = None

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(
            input,
            target,
            weight=self.weight,
            reduction=self.reduction,
            pos_weight=self.pos_weight,
        )
