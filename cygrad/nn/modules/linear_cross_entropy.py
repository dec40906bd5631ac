"""``LinearCrossEntropyLoss``: a linear classifier head and its cross-entropy
in one module (``F.linear_cross_entropy``), with torch's parameter layout."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from .. import functional as F
from .linear import Linear
from .linear_cross_entropy_options import LinearCrossEntropyOptions
from .loss import _WeightedLoss

if TYPE_CHECKING:
    from cygrad._tensor import Tensor

__all__ = ["LinearCrossEntropyLoss", "LinearCrossEntropyOptions"]


class LinearCrossEntropyLoss(_WeightedLoss):
    """``cross_entropy(linear(input), target)`` with the head's weights inside.

    Parameters
    ----------
    in_features, num_classes : int
        The head maps ``in_features`` to ``num_classes`` (times
        ``prod(out_features)`` for a K-dimensional loss).
    out_features : tuple of int
        Extra logit dimensions after the class one (batched input only).
    bias : bool
        Whether the head has a bias (default False, as torch).
    reduction, weight, ignore_index, label_smoothing
        As ``CrossEntropyLoss`` (``ignore_index=None`` means -100).
    options : LinearCrossEntropyOptions, optional
        torch's chunking knobs (validated, see their module doc).

    The head is ``self.linear``, a ``Linear(in_features, num_classes *
    prod(out_features))`` whose weight is viewed as ``(num_classes,
    *out_features, in_features)`` in ``forward``; state dicts match torch's.
    """

    def __init__(self, in_features: int, num_classes: int, *,
                 out_features: tuple[int, ...] = (), bias: bool = False,
                 device: Any = None, dtype: Any = None, reduction: str = "mean",
                 weight: Tensor | None = None, ignore_index: int | None = None,
                 label_smoothing: float = 0.0,
                 options: LinearCrossEntropyOptions | None = None) -> None:
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got "
                               f"{tuple(weight.shape)}")
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError("expected label_smoothing to be in range [0, 1], got "
                               f"{label_smoothing}")
        super().__init__(weight=weight, size_average=None, reduce=None,
                         reduction=reduction)
        self.num_classes = num_classes
        self.out_features = tuple(out_features)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        self.linear = Linear(in_features, math.prod(self.out_features, start=num_classes),
                             bias=bias, device=device, dtype=dtype)
        self.options = options

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        shape = (self.num_classes, *self.out_features)
        linear_weight = self.linear.weight.reshape(shape + (self.linear.in_features,))
        linear_bias = (None if self.linear.bias is None
                       else self.linear.bias.reshape(shape))
        return F.linear_cross_entropy(
            input, linear_weight, target, linear_bias=linear_bias, weight=self.weight,
            reduction=self.reduction, ignore_index=self.ignore_index,
            label_smoothing=self.label_smoothing, options=self.options)

    def extra_repr(self) -> str:
        return (f"in_features={self.linear.in_features}, "
                f"num_classes={self.num_classes}, out_features={self.out_features}, "
                f"bias={self.linear.bias is not None}, reduction={self.reduction}, "
                f"ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")
