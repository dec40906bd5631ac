"""``SyncBatchNorm``: batch norm whose training statistics cover the batch of
every process of a group, as ``torch.nn.SyncBatchNorm``.

On one process (no ``cygrad.distributed`` group, or a group of one) it is
``BatchNorm`` of any input of 2 or more dims.  With a group of several
processes, training first all-reduces the per-channel count, sum and
centred sum of squares (two passes, so the variance does not lose digits to
cancellation), then normalises in one node whose backward all-reduces the
per-channel sums of ``grad`` and ``grad * x_hat``, so each
process gets the gradient of the global batch's normalisation for its own
rows.  ``weight`` and ``bias`` get their local gradients (DDP averages
them, as torch's).  Running statistics move toward the global mean and
unbiased variance.
"""

import numpy as np

from cygrad.autograd.function import Function
from cygrad.autograd.grad_mode import no_grad
from cygrad.creation import from_numpy
from cygrad.distributed import (
    all_reduce,
    get_world_size,
    is_available,
    is_initialized,
)

from .normalization import _BatchNorm

__all__ = ["SyncBatchNorm"]


def _all_reduce(arr, group):
    t = from_numpy(np.ascontiguousarray(arr))
    all_reduce(t, group=group)
    return np.asarray(t._arr)


def _global_stats(a, group):
    """Per-channel count, mean and biased variance of the group's batch
    (float64 array ``a`` is this process's part)."""
    axes = (0,) + tuple(range(2, a.ndim))
    shape = (1, -1) + (1,) * (a.ndim - 2)
    count = _all_reduce(np.array([a.size // a.shape[1]], np.float64), group)[0]
    mean = _all_reduce(a.sum(axis=axes), group) / max(count, 1)
    centred = a - mean.reshape(shape)
    var = _all_reduce((centred * centred).sum(axis=axes), group) / max(count, 1)
    return count, mean, var


class _SyncBatchNorm(Function):
    """y = (x - mean) * invstd * w + b with the group's statistics;
    grad_x = w invstd (g - mean_g - x_hat mean(g x_hat)), the means global."""

    _node_name = "SyncBatchNormBackward"

    @staticmethod
    def forward(ctx, x, weight, bias, mean, invstd, count, group):
        a = np.asarray(x._arr, dtype=np.float64)
        shape = (1, -1) + (1,) * (a.ndim - 2)
        xhat = (a - mean.reshape(shape)) * invstd.reshape(shape)
        out = xhat
        if weight is not None:
            out = out * np.asarray(weight._arr, np.float64).reshape(shape)
        if bias is not None:
            out = out + np.asarray(bias._arr, np.float64).reshape(shape)
        ctx.xhat, ctx.invstd, ctx.count, ctx.group = xhat, invstd, count, group
        ctx.w = None if weight is None else np.asarray(weight._arr, np.float64)
        ctx.dtypes = (x._arr.dtype, None if weight is None else weight._arr.dtype)
        return from_numpy(out.astype(x._arr.dtype))

    @staticmethod
    def backward(ctx, grad):
        g = np.asarray(grad._arr, dtype=np.float64)
        xhat = ctx.xhat
        axes = (0,) + tuple(range(2, g.ndim))
        shape = (1, -1) + (1,) * (g.ndim - 2)
        sum_g = g.sum(axis=axes)
        sum_gx = (g * xhat).sum(axis=axes)
        gx = gw = gb = None
        if ctx.needs_input_grad[0]:
            both = _all_reduce(np.stack([sum_g, sum_gx]), ctx.group) / ctx.count
            scale = ctx.invstd if ctx.w is None else ctx.invstd * ctx.w
            gx = scale.reshape(shape) * (g - both[0].reshape(shape)
                                         - xhat * both[1].reshape(shape))
            gx = from_numpy(gx.astype(ctx.dtypes[0]))
        if ctx.needs_input_grad[1]:
            gw = from_numpy(sum_gx.astype(ctx.dtypes[1]))
        if ctx.needs_input_grad[2]:
            gb = from_numpy(sum_g.astype(ctx.dtypes[1]))
        return gx, gw, gb, None, None, None, None


class SyncBatchNorm(_BatchNorm):
    """Batch norm over (N, C, *) input with the statistics of the whole
    process group's batch in training (``BatchNorm`` on one process).

    Parameters
    ----------
    num_features, eps, momentum, affine, track_running_stats, bias : as
        ``BatchNorm2d``
    process_group : a ``cygrad.distributed`` group, or None for the world
    """

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_group=None, device=None,
                 dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats,
                         device, dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")

    def _check_non_zero_input_channels(self, input):
        if input.shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be "
                             "non-zero")

    def _group_size(self):
        if not (is_available() and is_initialized()):
            return 1
        return get_world_size(self.process_group)

    def forward(self, input):
        self._check_input_dim(input)
        self._check_non_zero_input_channels(input)
        bn_training = self.training or (
            self.running_mean is None and self.running_var is None)
        if not (bn_training and self.training) or self._group_size() == 1:
            return super().forward(input)
        count, mean, var = _global_stats(np.asarray(input._arr, np.float64),
                                         self.process_group)
        if count <= 1:
            raise ValueError("Expected more than 1 value per channel when training, "
                             f"got input size {list(input.shape)}")
        factor = 0.0 if self.momentum is None else self.momentum
        if self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked._arr[...] += 1
            self.num_batches_tracked._bump_version()
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked._arr)
        if self.track_running_stats:
            unbiased = var * count / (count - 1)
            for buf, value in ((self.running_mean, mean), (self.running_var, unbiased)):
                buf._arr[...] = ((1 - factor) * buf._arr + factor * value).astype(
                    buf._arr.dtype)
                buf._bump_version()
        invstd = 1.0 / np.sqrt(var + self.eps)
        return _SyncBatchNorm.apply(input, self.weight, self.bias, mean, invstd, count,
                                    self.process_group)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every batch norm in it replaced by a
        ``SyncBatchNorm`` holding the same parameters and buffers (the same
        objects, so an optimizer built before still works)."""
        out = module
        if isinstance(module, _BatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine,
                      module.track_running_stats, process_group,
                      bias=module.bias is not None or not module.affine)
            if module.affine:
                with no_grad():
                    out.weight = module.weight
                    out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out
