"""The losses beyond the fused four, and the distances they rest on.

Each loss is composed of Tensor ops (so every input, the target included
where torch differentiates it, gets its gradient, and ``create_graph``
works), following torch's formulas term by term: the same clamps (BCE's
``log >= -100``), the same epsilons (``cosine_embedding_loss``'s 1e-12,
``pairwise_distance``'s 1e-6 added to the difference), the same
normalisation of ``mean`` under class weights.  The p-norm is one node
with torch's subgradient (0 where the norm is 0), so a zero vector does not
turn gradients into NaN.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from cygrad import ops
from cygrad._tensor import Tensor
from cygrad.autograd.function import Function
from cygrad.creation import _exponential_array, from_numpy, tensor

__all__ = [
    "binary_cross_entropy", "cosine_embedding_loss", "cosine_similarity",
    "gaussian_nll_loss", "gumbel_softmax", "hinge_embedding_loss", "huber_loss",
    "kl_div", "l1_loss", "margin_ranking_loss", "multi_margin_loss",
    "multilabel_soft_margin_loss", "normalize", "pairwise_distance",
    "poisson_nll_loss", "smooth_l1_loss", "soft_margin_loss", "triplet_margin_loss",
]

_REDUCTIONS = ("none", "mean", "sum")


def legacy_reduction(size_average: bool | None, reduce: bool | None, reduction: str,
                     stacklevel: Any = 3) -> Tensor:
    """torch's reading of the deprecated ``size_average`` / ``reduce``."""
    if size_average is None and reduce is None:
        if reduction not in _REDUCTIONS and reduction != "batchmean":
            raise ValueError(f"{reduction} is not a valid value for reduction")
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "none" if not reduce else ("mean" if size_average else "sum")
    warnings.warn(f"size_average and reduce args will be deprecated, please use "
                  f"reduction='{ret}' instead.", UserWarning, stacklevel=stacklevel)
    return ret


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _size(shape):
    return f"torch.Size([{', '.join(str(int(s)) for s in shape)}])"


def _as_tensor(t, like):
    return t if isinstance(t, Tensor) else tensor(t, dtype=like.dtype)


def _warn_shapes(input, target):
    if tuple(input.shape) != tuple(target.shape):
        warnings.warn(
            f"Using a target size ({_size(target.shape)}) that is different to the "
            f"input size ({_size(input.shape)}). This will likely lead to incorrect "
            "results due to broadcasting. Please ensure they have the same size.",
            UserWarning, stacklevel=3)


def _const(arr):
    return from_numpy(np.ascontiguousarray(arr))


# ---------------------------------------------------------------------------
# norms and distances


class _VectorNorm(Function):
    """``out = (sum |x|^p)^(1/p)`` along ``dim``;  grad = g x |x|^(p-2) /
    out^(p-1) (0 where out == 0; p = inf: g sign(x) at the maxima, split)."""

    _node_name = "LinalgVectorNormBackward0"

    @staticmethod
    def forward(ctx, x, p, dim, keepdim):
        a = x._arr
        with np.errstate(all="ignore"):
            if p == math.inf:
                out = np.abs(a).max(axis=dim, keepdims=True)
            elif p == 2:
                out = np.sqrt((a * a).sum(axis=dim, keepdims=True))
            elif p == 1:
                out = np.abs(a).sum(axis=dim, keepdims=True)
            else:
                out = (np.abs(a) ** p).sum(axis=dim, keepdims=True) ** (1.0 / p)
        ctx.save_for_backward(x)
        ctx.p, ctx.dim, ctx.keepdim = p, dim, keepdim
        ctx.norm = out
        return from_numpy(out if keepdim else np.squeeze(out, axis=dim))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        p, dim = ctx.p, ctx.dim
        g = grad if ctx.keepdim else grad.unsqueeze(dim)
        norm = _VectorNorm.apply(x, p, dim, True) if x.requires_grad else _const(
            ctx.norm)
        zero = _const(ctx.norm == 0)
        safe = ops.where(zero, 1.0, norm)
        if p == 2:
            gx = x * (g / safe)
        elif p == 1:
            gx = _const(np.sign(x._arr)) * g
        elif p == math.inf:
            hit = _const((np.abs(x._arr) == ctx.norm).astype(x._arr.dtype))
            count = _const(hit._arr.sum(axis=dim, keepdims=True))
            gx = _const(np.sign(x._arr)) * hit * (g / ops.where(count == 0, 1.0, count))
        else:
            gx = x * ops.abs(x) ** (p - 2) * (g / safe ** (p - 1))
        return ops.where(zero, 0.0, gx), None, None, None


def _norm(x, p, dim, keepdim=False):
    dim = dim % x.ndim if x.ndim else 0
    return _VectorNorm.apply(x, float(p), dim, keepdim)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out: Tensor | None = None) -> Tensor:
    """``input / max(||input||_p, eps)`` along ``dim``."""
    if out is not None:
        raise TypeError("normalize: out= is not supported by cygrad")
    denom = ops.clamp(_norm(input, p, dim, keepdim=True), min=eps)
    return input / denom


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """``||x1 - x2 + eps||_p`` along the last dimension."""
    nd = max(x1.ndim, x2.ndim)
    diff = x1 - x2 + eps
    if nd == 0:
        return ops.abs(diff)
    return _norm(diff, p, -1, keepdim)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1,
                      eps: float = 1e-8) -> Tensor:
    """``sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps), dim)`` (torch's
    normalise-then-multiply form) over broadcast inputs."""
    try:
        shape = np.broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
    except ValueError:
        raise RuntimeError(
            f"The size of tensor a ({x1.shape[0]}) must match the size of tensor b "
            f"({x2.shape[0]}) at non-singleton dimension 0") from None
    if tuple(x1.shape) != shape:
        x1 = x1.expand(*shape)
    if tuple(x2.shape) != shape:
        x2 = x2.expand(*shape)
    n1 = ops.clamp(_norm(x1, 2, dim, True), min=eps)
    n2 = ops.clamp(_norm(x2, 2, dim, True), min=eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


# ---------------------------------------------------------------------------
# regression losses


def l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
            reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """``|input - target|`` reduced."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    target = _as_tensor(target, input)
    _warn_shapes(input, target)
    return _reduce(ops.abs(input - target), reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                   reduce: bool | None = None, reduction: str = "mean",
                   beta: float = 1.0) -> Tensor:
    """``0.5 d^2 / beta`` where ``|d| < beta``, else ``|d| - beta / 2``."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    target = _as_tensor(target, input)
    _warn_shapes(input, target)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    d = input - target
    ad = ops.abs(d)
    if beta == 0:
        return _reduce(ad, reduction)
    return _reduce(ops.where(ad < beta, d * d * (0.5 / beta), ad - 0.5 * beta),
                   reduction)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean",
               delta: float = 1.0, weight: Tensor | None = None) -> Tensor:
    """``0.5 d^2`` where ``|d| < delta``, else ``delta (|d| - delta / 2)``."""
    target = _as_tensor(target, input)
    _warn_shapes(input, target)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    d = input - target
    ad = ops.abs(d)
    loss = ops.where(ad < delta, d * d * 0.5, (ad - 0.5 * delta) * delta)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, legacy_reduction(None, None, reduction))


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: Any = True,
                     full: bool = False, size_average: bool | None = None,
                     eps: float = 1e-8, reduce: bool | None = None,
                     reduction: str = "mean") -> Tensor:
    """``exp(x) - y x`` (``log_input``) or ``x - y log(x + eps)``; ``full`` adds
    Stirling's ``y log y - y + log(2 pi y) / 2`` where ``y > 1``."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    target = _as_tensor(target, input)
    if log_input:
        loss = ops.exp(input) - target * input
    else:
        loss = input - target * ops.log(input + eps)
    if full:
        y = target._arr
        with np.errstate(all="ignore"):
            st = np.where(y > 1, y * np.log(y) - y + 0.5 * np.log(2 * np.pi * y), 0)
        loss = loss + _const(st.astype(y.dtype))
    return _reduce(loss, reduction)


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor, full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """``(log(max(var, eps)) + (input - target)^2 / max(var, eps)) / 2`` (+
    log(2 pi) / 2 with ``full``); the clamp passes var's gradient through,
    as torch's (it clamps a copy under no_grad)."""
    if not isinstance(var, Tensor):
        var = tensor(float(var), dtype=input.dtype)
        if var._arr < 0:
            raise ValueError("var has negative entry/entries")
        var = var.expand(*input.shape)
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in _REDUCTIONS:
        raise ValueError(reduction + " is not valid")
    if np.any(var._arr < 0):
        raise ValueError("var has negative entry/entries")
    shift = np.maximum(var._arr, eps) - var._arr
    var = var + _const(shift)
    loss = 0.5 * (ops.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


# ---------------------------------------------------------------------------
# probabilistic losses


class _BCE(Function):
    """``l = -w (y max(log x, -100) + (1 - y) max(log(1 - x), -100))``;
    grad_x = g w (x - y) / max(x (1 - x), 1e-12), grad_y = g w
    (max(log(1 - x), -100) - max(log x, -100)) (torch's formulas)."""

    _node_name = "BinaryCrossEntropyBackward0"

    @staticmethod
    def forward(ctx, x, y, w):
        xa, ya = x._arr, y._arr
        with np.errstate(divide="ignore"):
            lx = np.maximum(np.log(xa), -100)
            l1x = np.maximum(np.log1p(-xa), -100)
        loss = -(ya * lx + (1 - ya) * l1x)
        if w is not None:
            loss = loss * w._arr
        ctx.save_for_backward(x, y, *(() if w is None else (w,)))
        ctx.has_w = w is not None
        return from_numpy(np.asarray(loss, dtype=xa.dtype))

    @staticmethod
    def backward(ctx, grad):
        saved = ctx.saved_tensors
        x, y = saved[0], saved[1]
        w = saved[2] if ctx.has_w else None
        g = grad if w is None else grad * w
        gx = gy = None
        if ctx.needs_input_grad[0]:
            gx = g * (x - y) / ops.clamp((1 - x) * x, min=1e-12)
        if ctx.needs_input_grad[1]:
            gy = g * (ops.clamp(ops.log1p(-x), min=-100.0)
                      - ops.clamp(ops.log(x), min=-100.0))
        return gx, gy, None


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average: bool | None = None, reduce: bool | None = None,
                         reduction: str = "mean") -> Tensor:
    """Binary cross-entropy of probabilities in [0, 1] (logs clamped at -100,
    as torch).  Prefer ``binary_cross_entropy_with_logits`` on logits."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    target = _as_tensor(target, input)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"Using a target size ({_size(target.shape)}) that is different to the "
            f"input size ({_size(input.shape)}) is deprecated. Please ensure they have "
            "the same size.")
    xa = input._arr
    if xa.size and (np.nanmin(xa) < 0 or np.nanmax(xa) > 1):
        raise RuntimeError("all elements of input should be between 0 and 1")
    if weight is not None:
        weight = weight.expand(*input.shape) if tuple(weight.shape) != tuple(
            input.shape) else weight
    return _reduce(_BCE.apply(input, target, weight), reduction)


def kl_div(input: Tensor, target: Tensor, size_average: bool | None = None,
           reduce: bool | None = None, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    """``target (log target - input)`` pointwise (``exp(t) (t - input)`` with
    ``log_target``); ``batchmean`` divides the sum by the batch size."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the "
            "support size.'batchmean' divides only by the batch size, and aligns with "
            "the KL div math definition.'mean' will be changed to behave the same as "
            "'batchmean' in the next major release.", UserWarning, stacklevel=2)
    target = _as_tensor(target, input)
    if log_target:
        loss = ops.exp(target) * (target - input)
    else:
        positive = target > 0
        safe = ops.where(positive, target, 1.0)
        loss = target * ops.log(safe) - target * input
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.ndim else 1)
    return _reduce(loss, reduction)


def gumbel_softmax(logits: Any, tau: Any = 1, hard: Any = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """``softmax((logits + g) / tau)`` with Gumbel(0, 1) noise g from cygrad's
    generator (torch's draws after the same seed); ``hard``: the one-hot argmax in the forward, the soft sample's
    gradient (straight-through)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.",
                      UserWarning, stacklevel=2)
    # torch's noise: -log of exponential_() draws in the logits' dtype
    e = _exponential_array(tuple(logits.shape), logits._arr.dtype, 1.0)
    g = _const(-np.log(e))
    y = ops.softmax((logits + g) / tau, dim)
    if not hard:
        return y
    idx = np.argmax(y._arr, axis=dim)
    onehot = np.zeros(y._arr.shape, y._arr.dtype)
    np.put_along_axis(onehot, np.expand_dims(idx, dim), 1, axis=dim)
    return _const(onehot) - y.detach() + y


# ---------------------------------------------------------------------------
# margin and embedding losses


def _same_dims(name, **ts):
    shapes = [tuple(t.shape) for t in ts.values()]
    if len({len(s) for s in shapes}) != 1:
        sizes = ", ".join(f"{k}: {_size(t.shape)}" for k, t in ts.items())
        raise RuntimeError(f"{name} : All input tensors should have same dimension but "
                           f"got sizes: {sizes} ")


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor,
                        margin: float = 0, size_average: bool | None = None,
                        reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """``max(0, -target (input1 - input2) + margin)``."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _same_dims("margin_ranking_loss", input1=input1, input2=input2, target=target)
    return _reduce(ops.clamp(-target * (input1 - input2) + margin, min=0.0), reduction)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,
                         size_average: bool | None = None, reduce: bool | None = None,
                         reduction: str = "mean") -> Tensor:
    """``input`` where target is 1, ``max(0, margin - input)`` where it is -1."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    target = _as_tensor(target, input)
    margin_part = ops.where(target != 1, ops.clamp(margin - input, min=0.0), 0.0)
    self_part = ops.where(target != -1, input, 0.0)
    return _reduce(margin_part + self_part, reduction)


def soft_margin_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                     reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """``log(1 + exp(-target input))``."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    target = _as_tensor(target, input)
    return _reduce(-ops.logsigmoid(target * input), reduction)


def multilabel_soft_margin_loss(input: Tensor, target: Tensor,
                                weight: Tensor | None = None,
                                size_average: bool | None = None,
                                reduce: bool | None = None,
                                reduction: str = "mean") -> Tensor:
    """``-mean_c(y log sigmoid(x) + (1 - y) log sigmoid(-x))`` per sample."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    target = _as_tensor(target, input)
    loss = -(target * ops.logsigmoid(input) + (1 - target) * ops.logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    c = input.shape[-1] if input.ndim else 1
    loss = loss.sum(dim=input.ndim - 1) / c if input.ndim else loss
    return _reduce(loss, reduction)


def multi_margin_loss(input: Tensor, target: Tensor, p: float = 1, margin: float = 1.0,
                      weight: Tensor | None = None, size_average: bool | None = None,
                      reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """``sum_{j != y} max(0, margin - x[y] + x[j])^p / C`` per sample, times
    ``weight[y]``."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    x = input if input.ndim == 2 else input.reshape(1, -1)
    t = np.asarray(target._arr, np.int64).reshape(-1)
    n, c = x.shape
    if t.shape[0] != n:
        raise RuntimeError(f"inconsistent target size, expected {n} but got "
                           f"{list(target.shape)}")
    if t.size and (t.min() < 0 or t.max() >= c):
        raise RuntimeError("target out of range")
    onehot = np.zeros((n, c), x._arr.dtype)
    onehot[np.arange(n), t] = 1
    picked = (x * _const(onehot)).sum(1, keepdim=True)
    m = ops.clamp(margin - picked + x, min=0.0)
    if p == 2:
        m = m * m
    if weight is not None:
        m = m * _const(weight._arr[t].reshape(n, 1))
    loss = (m * _const(1 - onehot)).sum(1) / c
    if input.ndim < 2:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor,
                          margin: float = 0, size_average: bool | None = None,
                          reduce: bool | None = None,
                          reduction: str = "mean") -> Tensor:
    """``1 - cos`` where target is 1, ``max(0, cos - margin)`` where -1; cos
    with torch's 1e-12 under each squared norm."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    dim = input1.ndim - 1
    prod = (input1 * input2).sum(dim)
    mag1 = (input1 * input1).sum(dim) + 1e-12
    mag2 = (input2 * input2).sum(dim) + 1e-12
    cos = prod / ops.sqrt(mag1 * mag2)
    target = _as_tensor(target, input1)
    pos = ops.where(target == 1, 1 - cos, 0.0)
    neg = ops.where(target == -1, ops.clamp(cos - margin, min=0.0), 0.0)
    return _reduce(pos + neg, reduction)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor,
                        margin: float = 1.0, p: float = 2, eps: float = 1e-6,
                        swap: bool = False, size_average: bool | None = None,
                        reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """``max(d(a, p) - d(a, n) + margin, 0)``, d the ``pairwise_distance``;
    ``swap`` uses ``min(d(a, n), d(p, n))``."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, "
                         f"got {margin} instead")
    nd = {anchor.ndim, positive.ndim, negative.ndim}
    if len(nd) != 1:
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same "
            f"number of dimensions, but got: anchor {anchor.ndim}D, positive "
            f"{positive.ndim}D, and negative {negative.ndim}D inputs")
    d_ap = pairwise_distance(anchor, positive, p, eps)
    d_an = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_an = ops.minimum(d_an, pairwise_distance(positive, negative, p, eps))
    return _reduce(ops.clamp(d_ap - d_an + margin, min=0.0), reduction)


def multilabel_margin_loss(input: Tensor, target: Tensor,
                           size_average: bool | None = None,
                           reduce: bool | None = None,
                           reduction: str = "mean") -> Tensor:
    """``sum_{k, i} max(0, 1 - (x[y_k] - x[i])) / C`` per sample, over the
    target classes ``y_k`` (read up to the first -1) and the classes ``i``
    not among them; hinge'(0) = 0 (torch's strict ``> 0``)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if input.ndim > 2 or (input.ndim == 2 and input.shape[1] == 0) or (
            input.ndim == 1 and input.shape[0] == 0):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim "
                           f"batch size, but got: {list(input.shape)}")
    want = list(input.shape) if input.ndim else [1]
    if list(target.shape) != want and not (input.ndim == 0 and target.ndim == 0):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input "
                           f"of size: {list(input.shape)}")
    if np.dtype(target.dtype) != np.dtype(np.int64):
        raise RuntimeError("expected scalar type Long but found "
                           f"{_TYPE_NAMES.get(np.dtype(target.dtype), target.dtype)}")
    x = input.reshape(-1, want[-1])
    n, c = x.shape
    t = np.asarray(target._arr).reshape(n, c)
    # a target row ends at its first -1
    ended = np.cumsum(t == -1, axis=1) > 0
    if ((t[~ended] < 0) | (t[~ended] >= c)).any():
        raise RuntimeError("argument #2 'target' is out of range")
    valid = ~ended
    labels = np.where(valid, t, 0)
    is_target = np.zeros((n, c), bool)
    is_target[np.repeat(np.arange(n), c)[valid.reshape(-1)], t[valid]] = True
    picked = x.gather(1, from_numpy(labels))                 # (N, K)
    hinge = ops.relu(1.0 - picked.unsqueeze(2) + x.unsqueeze(1))  # (N, K, C)
    mask = valid[:, :, None] & ~is_target[:, None, :]
    loss = (hinge * _const(mask.astype(x._arr.dtype))).sum((1, 2)) / c
    if input.ndim < 2:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


_TYPE_NAMES = {np.dtype(np.float32): "Float", np.dtype(np.float64): "Double",
               np.dtype(np.int32): "Int", np.dtype(np.int16): "Short",
               np.dtype(np.int8): "Char", np.dtype(np.uint8): "Byte",
               np.dtype(bool): "Bool", np.dtype(np.float16): "Half"}


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor,
                                      negative: Tensor, *,
                                      distance_function: Any = None,
                                      margin: float = 1.0, swap: bool = False,
                                      reduction: str = "mean") -> Tensor:
    """``max(d(a, p) - d(a, n) + margin, 0)`` for any distance ``d`` (default
    ``pairwise_distance``); ``swap`` uses ``min(d(a, n), d(p, n))``."""
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same "
            f"number of dimensions, but got: anchor {anchor.ndim}D, positive "
            f"{positive.ndim}D, and negative {negative.ndim}D inputs")
    dist = pairwise_distance if distance_function is None else distance_function
    d_ap = dist(anchor, positive)
    d_an = dist(anchor, negative)
    if swap:
        d_an = ops.minimum(d_an, dist(positive, negative))
    return _reduce(ops.clamp(margin + d_ap - d_an, min=0.0), reduction)


__all__ += ["multilabel_margin_loss", "triplet_margin_with_distance_loss"]
