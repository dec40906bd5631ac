"""Batch, layer, group and RMS normalisation as single autograd nodes on the
compiled kernels of ``cygrad._kernels.norm``.

Forward and backward each run the compiled kernels when no graph is being
built (the usual case).  Under ``create_graph=True`` the backward is written
with differentiable Tensor operations instead (the statistics recomputed from
``x`` as Tensor ops, so that the second derivative sees their dependence on
``x``), which makes gradgradcheck hold.

Running statistics (``batch_norm`` in training mode) are updated in place,
outside autograd, with the unbiased batch variance, as torch:
``running = (1 - momentum) * running + momentum * batch``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from cygrad._kernels import norm as _k
from cygrad.autograd.function import Function
from cygrad.autograd.grad_mode import is_grad_enabled
from cygrad.creation import from_numpy

from ._functional_conv import _check_real, _size_str

if TYPE_CHECKING:
    from cygrad._tensor import Tensor

__all__ = ["batch_norm", "group_norm", "layer_norm", "rms_norm"]


def _flat3(a, n, c):
    """Contiguous (n, c, rest) view of an array with leading dims (n, c)."""
    rest = 1
    for s in a.shape[2:]:
        rest *= int(s)
    return np.ascontiguousarray(a).reshape(n, c, rest)


def _arr_or_empty(t, dt):
    if t is None:
        return np.empty(0, dtype=dt)
    return np.ascontiguousarray(t._arr, dtype=dt).reshape(-1)


# ---------------------------------------------------------------------------
# batch norm


class _BatchNorm(Function):
    """``y = (x - mean) * invstd * w + b`` per channel.

    Training (batch statistics):  ``grad_x = w invstd (g - mean(g) - xhat
    mean(g xhat))``; eval (running statistics, constants):
    ``grad_x = w invstd g``.  grad_w = sum(g xhat), grad_b = sum(g).
    """

    _node_name = "NativeBatchNormBackward0"

    @staticmethod
    def forward(ctx, x, w, b, mean, invstd, training, eps):
        n, c = x.shape[0], x.shape[1]
        x3 = _flat3(x._arr, n, c)
        scale = invstd if w is None else invstd * w._arr.astype(np.float64)
        shift = -mean * scale
        if b is not None:
            shift = shift + b._arr.astype(np.float64)
        y = np.empty(x3.shape, dtype=x3.dtype)
        _k.bn_affine(x3, np.ascontiguousarray(scale), np.ascontiguousarray(shift), y)
        ctx.save_for_backward(x, w)
        ctx.mean, ctx.invstd, ctx.training, ctx.eps = mean, invstd, training, eps
        return from_numpy(y.reshape(x._arr.shape))

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        needs = ctx.needs_input_grad
        if is_grad_enabled():
            return _bn_backward_graph(ctx, x, w, grad)
        n, c = x.shape[0], x.shape[1]
        x3 = _flat3(x._arr, n, c)
        g3 = _flat3(grad._arr.astype(x3.dtype, copy=False), n, c)
        mean, invstd = ctx.mean, ctx.invstd
        m = max(x3.shape[0] * x3.shape[2], 1)  # an empty batch has zero sums
        sum_g = np.empty(c)
        sum_gx = np.empty(c)
        _k.bn_bwd_sums(x3, g3, mean, sum_g, sum_gx)
        gx = gw = gb = None
        if needs[0]:
            wv = np.ones(c) if w is None else w._arr.astype(np.float64)
            a = wv * invstd
            if ctx.training:
                bcoef = -a * invstd * invstd * sum_gx / m
                c0 = -a * sum_g / m
            else:
                bcoef = np.zeros(c)
                c0 = np.zeros(c)
            dx = np.empty(x3.shape, dtype=x3.dtype)
            _k.bn_bwd_data(x3, g3, mean, np.ascontiguousarray(a), bcoef, c0, dx)
            gx = from_numpy(dx.reshape(x._arr.shape))
        if needs[1]:
            gw = from_numpy((sum_gx * invstd).astype(w._arr.dtype))
        if needs[2]:
            gb = from_numpy(sum_g.astype(x3.dtype))
        return gx, gw, gb, None, None, None, None


def _bn_backward_graph(ctx, x, w, grad):
    """The same gradients as differentiable Tensor ops (create_graph)."""
    needs = ctx.needs_input_grad
    n, c = x.shape[0], x.shape[1]
    rest = x.numel() // (n * c) if n * c else 0
    x3 = x.reshape(n, c, rest)
    g3 = grad.reshape(n, c, rest)
    dims = (0, 2)
    dt = x._arr.dtype
    if ctx.training:
        mu = x3.mean(dims, keepdim=True)
        xc = x3 - mu
        invstd = ((xc * xc).mean(dims, keepdim=True) + ctx.eps) ** -0.5
    else:
        mu = from_numpy(ctx.mean.astype(dt).reshape(1, c, 1))
        xc = x3 - mu
        invstd = from_numpy(ctx.invstd.astype(dt).reshape(1, c, 1))
    xhat = xc * invstd
    gx = gw = gb = None
    if needs[0]:
        scale = invstd if w is None else invstd * w.reshape(1, c, 1)
        if ctx.training:
            inner = g3 - g3.mean(dims, keepdim=True) - xhat * (g3 * xhat).mean(
                dims, keepdim=True)
            gx = (scale * inner).reshape(tuple(x.shape))
        else:
            gx = (scale * g3).reshape(tuple(x.shape))
    if needs[1]:
        gw = (g3 * xhat).sum(dims)
    if needs[2]:
        gb = g3.sum(dims)
    return gx, gw, gb, None, None, None, None


def batch_norm(input: Tensor, running_mean: Tensor, running_var: Tensor,
               weight: Tensor | None = None, bias: Tensor | None = None,
               training: bool = False, momentum: float | None = 0.1,
               eps: float = 1e-5) -> Tensor:
    """Normalise each channel (dim 1) of (N, C, *) input.

    Training: by the batch mean and biased variance; ``running_mean`` and
    ``running_var`` (when given) move toward the batch mean and UNBIASED
    variance by ``momentum``.  Eval: by the running statistics.

    Raises
    ------
    ValueError
        Training on one value per channel.
    RuntimeError
        Running statistics or affine parameters of the wrong size.
    """
    _check_batch_norm(input, running_mean, running_var, weight, bias, training)
    n, c = input.shape[0], input.shape[1]
    count = input.numel() // c if c else 0
    x3 = _flat3(input._arr, n, c)
    if training and count == 0:
        # an empty batch (as torch): an empty output, running statistics kept
        mean, invstd = np.zeros(c), np.ones(c)
    elif training:
        mean = np.empty(c)
        var = np.empty(c)
        _k.bn_stats(x3, mean, var)
        if running_mean is not None:
            _lerp_(running_mean, mean, momentum)
        if running_var is not None:
            _lerp_(running_var, var * (count / (count - 1)), momentum)
        invstd = 1.0 / np.sqrt(var + eps)
    else:
        mean = np.asarray(running_mean._arr, dtype=np.float64).reshape(-1).copy()
        invstd = 1.0 / np.sqrt(
            np.asarray(running_var._arr, dtype=np.float64).reshape(-1) + eps)
    return _BatchNorm.apply(input, weight, bias, mean, invstd, bool(training),
                            float(eps))


def _check_batch_norm(input, running_mean, running_var, weight, bias, training):
    """Every check of ``batch_norm``, so that callers can run it before they
    change any state (BatchNorm's ``num_batches_tracked``)."""
    if input.ndim < 2:
        raise ValueError(f"batch_norm: expected at least 2D input (got {input.ndim}D "
                         "input)")
    _check_real(input, weight, bias)
    c = input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != c:
            raise RuntimeError(
                f"{name} should contain {c} elements not {t.numel()}"
            )
    count = input.numel() // c if c else 0
    if training and count == 1:
        raise ValueError(
            "Expected more than 1 value per channel when training, got input size "
            f"cygrad.Size({_size_str(input.shape)})"
        )
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError(
            "running_mean and running_var must be defined in evaluation mode"
        )


def _lerp_(t, value, momentum):
    """``t = (1 - momentum) * t + momentum * value``, in place, outside autograd."""
    arr = t._arr
    arr[...] = ((1.0 - momentum) * arr.astype(np.float64)
                + momentum * value.reshape(arr.shape)).astype(arr.dtype)
    t._bump_version()


# ---------------------------------------------------------------------------
# row norms: layer, group, RMS


class _RowNorm(Function):
    """Normalise rows of x viewed as (R, Cg, L) by their own statistics, then
    ``* w[ch] + b[ch]`` with ``ch = (r % G) * Cg + cg``;  grad_x =
    rstd (gw - mean(gw) - xhat mean(gw xhat)), gw = g w (RMS: no mean(gw))."""

    _node_name = "NativeLayerNormBackward0"

    @staticmethod
    def forward(ctx, x, w, b, geom):
        r, groups, cg, length, eps, rms = geom
        dt = x._arr.dtype
        x3 = np.ascontiguousarray(x._arr).reshape(r, cg, length)
        y = np.empty(x3.shape, dtype=dt)
        mean = np.empty(r)
        rstd = np.empty(r)
        w_arr = _arr_or_empty(w, dt)
        _k.row_norm_fwd(x3, w_arr, _arr_or_empty(b, dt), groups, eps, rms, y, mean,
                        rstd)
        ctx.save_for_backward(x, w)
        ctx.w_arr = w_arr  # the flat weight the backward kernel reads
        ctx.geom, ctx.mean, ctx.rstd = geom, mean, rstd
        ctx.pshape = tuple((w if w is not None else b).shape) if (
            w is not None or b is not None) else None
        return from_numpy(y.reshape(x._arr.shape))

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        needs = ctx.needs_input_grad
        if is_grad_enabled():
            return _row_backward_graph(ctx, x, w, grad)
        r, groups, cg, length, _, rms = ctx.geom
        dt = x._arr.dtype
        x3 = np.ascontiguousarray(x._arr).reshape(r, cg, length)
        g3 = np.ascontiguousarray(grad._arr, dtype=dt).reshape(r, cg, length)
        dx = np.empty(x3.shape, dtype=dt)
        nw = groups * cg
        dw = np.empty(nw if needs[1] else 0)
        db = np.empty(nw if len(needs) > 2 and needs[2] else 0)
        _k.row_norm_bwd(x3, g3, ctx.w_arr, groups, rms, ctx.mean, ctx.rstd, dx, dw,
                        db)
        gx = from_numpy(dx.reshape(x._arr.shape)) if needs[0] else None
        gw = from_numpy(dw.astype(dt).reshape(ctx.pshape)) if needs[1] else None
        gb = None
        if needs[2]:
            gb = from_numpy(db.astype(dt).reshape(ctx.pshape))
        return gx, gw, gb, None


def _row_backward_graph(ctx, x, w, grad):
    """The row-norm gradients as differentiable Tensor ops (create_graph)."""
    r, groups, cg, length, eps, rms = ctx.geom
    needs = ctx.needs_input_grad
    n = r // groups
    x4 = x.reshape(n, groups, cg, length)
    g4 = grad.reshape(n, groups, cg, length)
    dims = (2, 3)
    if rms:
        xc = x4
    else:
        xc = x4 - x4.mean(dims, keepdim=True)
    rstd = ((xc * xc).mean(dims, keepdim=True) + eps) ** -0.5
    xhat = xc * rstd
    gx = gw = gb = None
    if needs[0]:
        gwt = g4 if w is None else g4 * w.reshape(1, groups, cg, 1)
        inner = gwt - xhat * (gwt * xhat).mean(dims, keepdim=True)
        if not rms:
            inner = inner - gwt.mean(dims, keepdim=True)
        gx = (rstd * inner).reshape(tuple(x.shape))
    if needs[1]:
        gw = (g4 * xhat).sum((0, 3)).reshape(ctx.pshape)
    if needs[2]:
        gb = g4.sum((0, 3)).reshape(ctx.pshape)
    return gx, gw, gb, None


def _normalized(normalized_shape):
    if isinstance(normalized_shape, (int, np.integer)):
        return (int(normalized_shape),)
    return tuple(int(s) for s in normalized_shape)


def _check_trailing(input, shape, weight, bias, star):
    k = len(shape)
    if k == 0 or input.ndim < k or tuple(input.shape[input.ndim - k:]) != shape:
        want = "[" + star + ", ".join(map(str, shape)) + "]"
        raise RuntimeError(
            f"Given normalized_shape={list(shape)}, expected input with shape "
            f"{want}, but got input of size{_size_str(input.shape)}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != shape:
            raise RuntimeError(
                f"Expected {name} to be of same shape as normalized_shape, but got "
                f"{name} of shape {_size_str(t.shape)} and normalized_shape = "
                f"{_size_str(shape)}"
            )


def layer_norm(input: Tensor, normalized_shape: Any, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise over the trailing ``normalized_shape`` dimensions:
    ``(x - mean) / sqrt(var + eps) * weight + bias`` (biased variance)."""
    shape = _normalized(normalized_shape)
    _check_trailing(input, shape, weight, bias, "*, ")
    _check_real(input, weight, bias)
    d = math.prod(shape)
    r = input.numel() // d if d else 0
    geom = (r, 1, d, 1, float(eps), False)
    return _RowNorm.apply(input, weight, bias, geom)


def rms_norm(input: Tensor, normalized_shape: Any, weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """``x / sqrt(mean(x^2) + eps) * weight`` over the trailing dimensions;
    ``eps=None`` is the dtype's machine epsilon (as torch)."""
    shape = _normalized(normalized_shape)
    _check_trailing(input, shape, weight, None, "*")
    _check_real(input, weight)
    if eps is None:
        eps = float(np.finfo(np.dtype(input.dtype)).eps)
    d = math.prod(shape)
    r = input.numel() // d if d else 0
    geom = (r, 1, d, 1, float(eps), True)
    return _RowNorm.apply(input, weight, None, geom)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise (N, C, *) input over groups of ``C / num_groups`` channels
    (and all spatial positions), then a per-channel affine."""
    if input.ndim < 2:
        raise RuntimeError(
            f"Expected at least 2 dimensions for input tensor but received "
            f"{input.ndim}"
        )
    n, c = input.shape[0], input.shape[1]
    g = int(num_groups)
    if g < 1 or c % g:
        raise RuntimeError(
            f"Expected number of channels in input to be divisible by num_groups, "
            f"but got input of shape {_size_str(input.shape)} and num_groups={g}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t.shape[0] != c):
            raise RuntimeError(
                f"Expected {name} to be a vector of size equal to the number of "
                f"channels in input, but got {name} of shape {_size_str(t.shape)} "
                f"and input of shape {_size_str(input.shape)}"
            )
    _check_real(input, weight, bias)
    length = input.numel() // (n * c) if n * c else 0
    if n * (c // g) * length == 1:
        # torch's batch-size check, on the sizes it forms for group norm
        raise ValueError(
            "Expected more than 1 value per channel when training, got input size "
            f"{_size_str([n * c // g, g, *input.shape[2:]])}"
        )
    geom = (n * g, g, c // g, length, float(eps), False)
    return _RowNorm.apply(input, weight, bias, geom)
