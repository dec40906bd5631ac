"""``InstanceNorm1d``/``2d``/``3d``: torch's instance norms, with its
defaults (``affine=False``, ``track_running_stats=False``), parameter and
buffer names, and unbatched input (one dimension fewer)."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from .._functional_instance import instance_norm
from .normalization import _NormBase

if TYPE_CHECKING:
    from cygrad._tensor import Tensor
    from cygrad._typing import Device, DType

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]


class _InstanceNorm(_NormBase):
    """Shared forward of the instance norms.

    Training (or ``track_running_stats=False``) normalises each sample's
    channel by its own statistics and, when tracked, moves the running
    statistics toward their mean over the batch; eval with tracked
    statistics normalises by the running ones.  ``num_batches_tracked`` does
    not move (as in torch)."""

    _spatial = 1  # spatial dimensions of one sample

    def __init__(self, num_features: int, eps: float = 1e-5,
                 momentum: float | None = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device: Device | None = None,
                 dtype: DType | None = None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats,
                         device, dtype, bias=bias)

    def _check_input_dim(self, input):
        lo = self._spatial + 1
        if input.ndim not in (lo, lo + 1):
            raise ValueError(
                f"expected {lo}D or {lo + 1}D input (got {input.ndim}D input)")

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        no_batch = self._spatial + 1
        feature_dim = input.ndim - no_batch
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(
                    f"expected input's size at dim={feature_dim} to match "
                    f"num_features ({self.num_features}), but got: "
                    f"{input.shape[feature_dim]}.")
            warnings.warn(
                f"input's size at dim={feature_dim} does not match num_features. "
                "num_features is not used because affine=False", stacklevel=2)
        x = input.unsqueeze(0) if input.ndim == no_batch else input
        out = instance_norm(
            x, self.running_mean, self.running_var, self.weight, self.bias,
            self.training or not self.track_running_stats,
            0.0 if self.momentum is None else self.momentum, self.eps)
        return out.squeeze(0) if input.ndim == no_batch else out


class InstanceNorm1d(_InstanceNorm):
    """Instance norm of (N, C, L) input, or unbatched (C, L)."""

    _spatial = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance norm of (N, C, H, W) input, or unbatched (C, H, W)."""

    _spatial = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance norm of (N, C, D, H, W) input, or unbatched (C, D, H, W)."""

    _spatial = 3
