"""``cygrad.nn.functional``: stateless layers and losses, as ``torch.nn.functional``.

The three losses and ``linear`` are single autograd nodes.  Their forward
runs one compiled kernel (``cygrad._kernels.loss``) or one BLAS call; their
backward does the same when the engine runs it without building a graph
(the usual case) and falls back to differentiable Tensor operations when the
caller asked for ``create_graph=True``, so second derivatives work.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import math
import warnings

import numpy as np

from cygrad import dtypes as _dt
from cygrad import ops
from cygrad._kernels import engine as _engine
from cygrad._kernels import loss as _k
from cygrad._kernels.reduce import add_bias as _add_bias
from cygrad._tensor import Tensor
from cygrad.autograd.function import Function
from cygrad.creation import from_numpy, tensor
from cygrad.ops.registry import _ns, named, xp_helper

from . import _functional_act as _act
from . import _functional_loss as _lossf

if TYPE_CHECKING:
    from cygrad._typing import DType

__all__ = [
    "binary_cross_entropy_with_logits",
    "cross_entropy",
    "linear",
    "log_softmax",
    "mse_loss",
    "nll_loss",
    "sigmoid",
    "softmax",
    "tanh",
]

_REDUCTIONS = ("none", "mean", "sum")
_REAL = (np.dtype(np.float32), np.dtype(np.float64))


def _check_reduction(reduction):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _real(t, name):
    """The array of floating tensor ``t`` as a C-contiguous array."""
    dt = t._arr.dtype
    if dt not in _REAL:
        raise NotImplementedError(
            f"{name}: no kernel for dtype {dt}; use float32 or float64 inputs"
        )
    return np.asarray(t._arr, order="C")


def _grad_arr(grad, dtype):
    """The incoming gradient (an array) as a flat contiguous one of ``dtype``."""
    return np.ascontiguousarray(grad, dtype=dtype).reshape(-1)


def _scalar(value, dtype):
    return from_numpy(np.array(value, dtype=dtype))


def _mean(total, count):
    # 0/0 is NaN (as torch), not ZeroDivisionError
    return total / count if count else math.nan


def _constant(arr):
    return from_numpy(np.asarray(arr, order="C"))


# ---------------------------------------------------------------------------
# linear


class _Linear(Function):
    """``out = x @ W.T``;  grad_x = g @ W, grad_W = g.T @ x (grad_b = sum(g)
    in ``_LinearBias``)."""

    _node_name = "MmBackward0"      # torch's node names for x @ W.T (+ b)

    @staticmethod
    def forward(ctx, x, weight):
        return _linear_forward(ctx, x, weight, None)

    @staticmethod
    def backward(ctx, grad):
        return _linear_backward(ctx, grad, ctx.needs_input_grad)


class _LinearBias(Function):
    """``_Linear`` with a bias, its inputs in torch's order ``(bias, x, W)``
    (``grad_fn.next_functions[0]`` is the bias's, as for torch's addmm)."""

    _node_name = "AddmmBackward0"

    @staticmethod
    def forward(ctx, bias, x, weight):
        return _linear_forward(ctx, x, weight, bias)

    @staticmethod
    def backward(ctx, grad):
        needs = ctx.needs_input_grad
        grad_x, grad_weight, grad_bias = _linear_backward(
            ctx, grad, (needs[1], needs[2], needs[0]))
        return grad_bias, grad_x, grad_weight


# The names torch's linear gives its result's node: a 1-D or (contiguous)
# n-d input is viewed as a matrix and the product viewed back; without a
# bias an n-d product is matmul's unsafe view, a 1-D one its squeeze.
class _LinearView(_LinearBias):
    _node_name = "ViewBackward0"


class _LinearAdd(_LinearBias):
    _node_name = "AddBackward0"


class _LinearUnsafeView(_Linear):
    _node_name = "UnsafeViewBackward0"


class _LinearSqueeze(_Linear):
    _node_name = "SqueezeBackward4"


def _linear_forward(ctx, x, weight, bias):
    xa, wa = x._arr, weight._arr
    # torch's wording depends on its path: mm without a bias, addmm with one
    if xa.dtype != wa.dtype and bias is None:
        raise RuntimeError(
            "expected m1 and m2 to have the same dtype, but got: "
            f"{_dt.c_name(xa.dtype)} != {_dt.c_name(wa.dtype)}")
    bad = xa if bias is None or bias._arr.dtype == wa.dtype else bias._arr
    if bad.dtype != wa.dtype:       # addmm checks the bias (its self) first
        raise RuntimeError(
            f"{'mat1' if bad is xa else 'self'} and mat2 must have the same dtype, "
            f"but got {_dt.short_name(bad.dtype)} and {_dt.short_name(wa.dtype)}")
    if xa.shape[-1:] != wa.shape[1:]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied "
            f"({int(np.prod(xa.shape[:-1]))}x{xa.shape[-1] if xa.ndim else 1} "
            f"and {wa.shape[1]}x{wa.shape[0]})"
        )
    if xa.ndim > 2:
        # one GEMM over the flattened leading dimensions: NumPy's matmul of
        # a stack runs one small GEMM per matrix (1.8x slower at 16x32x64)
        out = np.matmul(xa.reshape(-1, xa.shape[-1]), wa.T).reshape(
            xa.shape[:-1] + (wa.shape[0],))
    else:
        out = np.matmul(xa, wa.T)
    # a bias of shape (out_features,): compiled; any other shape broadcasts
    if bias is not None and not _add_bias(out, bias._arr):
        try:
            fits = np.broadcast_shapes(out.shape, bias._arr.shape) == out.shape
        except ValueError:
            fits = False
        if not fits:
            raise RuntimeError(
                f"The expanded size of the tensor ({out.shape[-1]}) must match "
                f"the existing size ({bias._arr.shape[-1]}): linear's bias of "
                f"shape {list(bias._arr.shape)} does not broadcast to the "
                f"output's shape {list(out.shape)}")
        out += bias._arr
    ctx.save_for_backward(x, weight)
    return from_numpy(out)


def _linear_backward(ctx, grad, needs):
    """(grad_x, grad_W, grad_b) as ``needs`` (x, W, b) asks; grad_b only
    when three are asked about."""
    x, weight = ctx.saved_tensors
    xp = _ns()
    g = xp.val(grad)
    out_f, in_f = weight.shape
    g2 = xp.reshape(g, (-1, out_f))
    grad_x = None
    if needs[0]:
        grad_x = xp.matmul(g2, xp.val(weight))
        if len(g.shape) != 2:
            grad_x = xp.reshape(grad_x, tuple(g.shape[:-1]) + (in_f,))
        grad_x = xp.out(grad_x)
    grad_weight = grad_bias = None
    if needs[1]:
        x2 = xp.reshape(xp.val(x), (-1, in_f))
        grad_weight = xp.out(xp.matmul(xp.swapaxes(g2, 0, 1), x2))
    if len(needs) > 2 and needs[2]:
        grad_bias = xp.out(xp.sum_to_shape(g2, (out_f,)))
    if len(needs) > 2:
        return grad_x, grad_weight, grad_bias
    return grad_x, grad_weight


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias`` as one autograd node.

    Parameters
    ----------
    input : Tensor of shape (*, in_features)
    weight : Tensor of shape (out_features, in_features)
    bias : Tensor of shape (out_features,), optional

    Returns
    -------
    Tensor of shape (*, out_features), the inputs' dtype (which must agree).
    A 1-D ``weight`` of shape (in_features,) gives shape (*,) (``input @
    weight``), as torch; a bias then needs a 1-D input.
    """
    if weight.ndim == 1:
        out = ops.matmul(input, weight)
        if bias is None:
            return out
        if input.ndim != 1:
            raise RuntimeError("mat2 must be a matrix, got 1-D tensor")
        return out + bias
    if bias is None:
        node = (_Linear if input.ndim == 2 else
                _LinearSqueeze if input.ndim == 1 else _LinearUnsafeView)
        return node.apply(input, weight)
    node = (_LinearBias if input.ndim == 2 else
            _LinearView if input.ndim == 1 or input._arr.flags.c_contiguous else
            _LinearAdd)
    return node.apply(bias, input, weight)


# ---------------------------------------------------------------------------
# activations (the Tensor ops, under torch's functional names)


def tanh(input: Tensor) -> Tensor:
    return ops.tanh(input)


def sigmoid(input: Tensor) -> Tensor:
    return ops.sigmoid(input)


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype: DType | None = None) -> Tensor:
    """``exp(x) / sum(exp(x), dim)``, computed stably.  Without ``dim``,
    torch's deprecated guess (with its warning)."""
    if dim is None:
        dim = _act._softmax_dim("softmax", input.ndim, _stacklevel)
    return ops.softmax(input, dim, dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
                dtype: DType | None = None) -> Tensor:
    """``x - logsumexp(x, dim)``, computed stably.  Without ``dim``, torch's
    deprecated guess (with its warning)."""
    if dim is None:
        dim = _act._softmax_dim("log_softmax", input.ndim, _stacklevel)
    return ops.log_softmax(input, dim, dtype)


def _row_max(input, dim):
    """The maximum along ``dim`` as a constant: shifting by it changes no
    gradient of softmax / log_softmax, and keeps ``exp`` from overflowing."""
    return _constant(input._arr.max(axis=dim, keepdims=True))


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


# ---------------------------------------------------------------------------
# pointwise losses (MSE, BCE with logits): one kernel call per direction


def _pointwise_loss_forward(ctx, input, target, reduction, kernel, name):
    """Per-element loss by ``kernel`` (which also returns the double sum),
    then the reduction; saves what both backwards read."""
    x = _real(input, name)
    y = np.ascontiguousarray(target._arr, dtype=x.dtype)
    per = np.empty(x.size, dtype=x.dtype)
    total = kernel(x.reshape(-1), y.reshape(-1), per)
    ctx.save_for_backward(input, target)
    ctx.reduction = reduction
    if reduction == "none":
        return from_numpy(per.reshape(x.shape))
    if reduction == "sum":
        return _scalar(total, x.dtype)
    return _scalar(_mean(total, x.size), x.dtype)


# ---------------------------------------------------------------------------
# mean squared error


class _MSELoss(Function):
    """``l = (x - y)**2`` reduced;  grad_x = 2 g (x - y), grad_y = -grad_x."""

    _node_name = "MseLossBackward0"

    @staticmethod
    def forward(ctx, input, target, reduction):
        return _pointwise_loss_forward(ctx, input, target, reduction, _k.mse_fwd,
                                       "mse_loss")

    @staticmethod
    def backward(ctx, grad):
        input, target = ctx.saved_tensors
        needs = ctx.needs_input_grad
        xp = _ns()
        gx = xp.mse_grad(xp.val(input), xp.val(target), xp.val(grad), ctx.reduction)
        return (xp.out(gx) if needs[0] else None), (
            xp.out(-gx) if needs[1] else None), None


def _mse_grad_arrays(x, y, g, reduction):
    x = np.ascontiguousarray(x)
    dt = x.dtype
    y = np.ascontiguousarray(y, dtype=dt)
    g = _grad_arr(g, dt)
    if reduction == "mean":
        g = (g.astype(np.float64) / x.size).astype(dt)
    gx = np.empty(x.size, dtype=dt)
    _k.mse_bwd(x.reshape(-1), y.reshape(-1), g, gx)
    return gx.reshape(x.shape)


def _mse_grad_tensors(x, y, g, reduction):
    scale = g * (2.0 / x.numel()) if reduction == "mean" else g * 2.0
    return (x - y) * scale


# grad_x = 2 g (x - y) (/ n for the mean); one compiled pass on arrays.
xp_helper("mse_grad", _mse_grad_arrays, _mse_grad_tensors)


def mse_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
             reduce: bool | None = None, reduction: str = "mean",
             weight: Tensor | None = None) -> Tensor:
    """Mean squared error ``(input - target)**2`` with ``reduction``.

    Parameters
    ----------
    input, target : Tensor, same shape (a different but broadcastable shape
        warns, as torch, and is computed by broadcasting)
    reduction : "mean" | "sum" | "none"
    """
    reduction = _lossf.legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not isinstance(target, Tensor):
        target = tensor(target, dtype=input.dtype)
    input, target = _promote(input, target)
    if weight is not None:
        return _reduce((input - target) ** 2 * weight, reduction)
    if tuple(input.shape) != tuple(target.shape):
        warnings.warn(
            f"Using a target size ({_size(target.shape)}) that is different to the "
            f"input size ({_size(input.shape)}). This will likely lead to incorrect "
            "results due to broadcasting. Please ensure they have the same size.",
            UserWarning,
            stacklevel=2,
        )
        return _reduce((input - target) ** 2, reduction)
    return _MSELoss.apply(input, target, reduction)


def _promote(a, b):
    """Cast two operands to one dtype as torch promotes them: a floating dtype
    wins over an integer or bool one; two floating dtypes give the wider."""
    da, db = np.dtype(a.dtype), np.dtype(b.dtype)
    if da == db:
        return a, b
    fa, fb = da.kind == "f", db.kind == "f"
    if fa and not fb:
        dt = da
    elif fb and not fa:
        dt = db
    else:
        dt = np.promote_types(da, db)
    return (a if da == dt else a.to(dt)), (b if db == dt else b.to(dt))


def _size(shape):
    return f"cygrad.Size([{', '.join(str(int(s)) for s in shape)}])"


# ---------------------------------------------------------------------------
# binary cross-entropy with logits


class _BCEWithLogits(Function):
    """``l = max(x,0) - x y + log1p(exp(-|x|))``;  grad_x = g (sigmoid(x) - y),
    grad_y = -g x."""

    _node_name = "BinaryCrossEntropyWithLogitsBackward0"

    @staticmethod
    def forward(ctx, input, target, reduction):
        return _pointwise_loss_forward(ctx, input, target, reduction,
                                       _k.bce_logits_fwd,
                                       "binary_cross_entropy_with_logits")

    @staticmethod
    def backward(ctx, grad):
        input, target = ctx.saved_tensors
        needs = ctx.needs_input_grad
        xp = _ns()
        grad_x, grad_y = xp.bce_logits_grad(xp.val(input), xp.val(target),
                                            xp.val(grad), ctx.reduction, *needs[:2])
        return xp.out(grad_x), xp.out(grad_y), None


def _bce_logits_grad_arrays(x, y, g, reduction, need_x, need_y):
    x = np.ascontiguousarray(x)
    dt = x.dtype
    y = np.ascontiguousarray(y, dtype=dt)
    g = _grad_arr(g, dt)
    if reduction == "mean":
        g = (g.astype(np.float64) / x.size).astype(dt)
    gx = gy = None
    if need_x:
        gx = np.empty(x.size, dtype=dt)
        _k.bce_logits_bwd(x.reshape(-1), y.reshape(-1), g, gx)
        gx = gx.reshape(x.shape)
    if need_y:
        gy = -(x * (g.reshape(x.shape) if reduction == "none" else g[0]))
    return gx, gy


def _bce_logits_grad_tensors(x, y, g, reduction, need_x, need_y):
    scale = g * (1.0 / x.numel()) if reduction == "mean" else g
    return ((ops.sigmoid(x) - y) * scale if need_x else None,
            -x * scale if need_y else None)


# grad_x = g (sigmoid(x) - y), grad_y = -g x (/ n for the mean).
xp_helper("bce_logits_grad", _bce_logits_grad_arrays, _bce_logits_grad_tensors)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Tensor | None = None,
                                     size_average: bool | None = None,
                                     reduce: bool | None = None,
                                     reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """Sigmoid + binary cross-entropy in one stable step.

    ``l = -w [p y log(sigmoid(x)) + (1 - y) log(1 - sigmoid(x))]``, computed
    as ``max(x, 0) - x y + log1p(exp(-|x|))`` (no overflow for any logit).

    Parameters
    ----------
    input : Tensor of logits, any shape
    target : Tensor of the same shape, values in [0, 1]
    weight : Tensor broadcastable to input, optional
    reduction : "mean" | "sum" | "none"
    pos_weight : Tensor broadcastable to input (the class dimension last)
    """
    reduction = _lossf.legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not isinstance(target, Tensor):
        target = tensor(target, dtype=input.dtype)
    input, target = _promote(input, target)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"Target size ({_size(target.shape)}) must be the same as input size "
            f"({_size(input.shape)})"
        )
    if weight is None and pos_weight is None:
        return _BCEWithLogits.apply(input, target, reduction)
    # weighted forms: composed of Tensor ops (differentiable, not fused)
    softplus_neg = ops.log((-ops.abs(input)).exp() + 1) + ops.relu(-input)
    if pos_weight is not None:
        loss = (1 - target) * input + (1 + (pos_weight - 1) * target) * softplus_neg
    else:
        loss = (1 - target) * input + softplus_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


# ---------------------------------------------------------------------------
# cross-entropy with class indices


class _CrossEntropy(Function):
    """``l_i = w[t_i] (logsumexp(x_i) - x_i[t_i])`` reduced;
    grad_x_i = g_i w[t_i] (softmax(x_i) - onehot(t_i))."""

    _node_name = "NllLossBackward0"   # torch prints its last node's name

    @staticmethod
    def forward(ctx, input, target, weight, ignore_index, reduction):
        x = _real(input, "cross_entropy")
        dt = x.dtype
        axis = 0 if x.ndim == 1 else 1
        c = x.shape[axis]
        t = np.asarray(target._arr)
        if x.ndim == 1:
            rows = x.reshape(1, c)
        elif x.ndim == 2:
            rows = x
        else:
            rows = np.ascontiguousarray(np.moveaxis(x, 1, -1)).reshape(-1, c)
        w = (
            np.empty(0, dt)
            if weight is None
            else np.ascontiguousarray(weight._arr, dtype=dt).reshape(-1)
        )
        t_rows = np.ascontiguousarray(t, dtype=np.int64).reshape(-1)
        if x.ndim > 2 and t.shape != x.shape[:1] + x.shape[2:]:
            raise RuntimeError(
                f"cross_entropy: expected target of shape "
                f"{x.shape[:1] + x.shape[2:]} for input of shape {x.shape}, got "
                f"{t.shape}"
            )
        n = rows.shape[0]
        per = np.empty(n, dtype=dt)
        lse = np.empty(n, dtype=dt)
        total, wsum = _k.cross_entropy_fwd(rows, t_rows, w, ignore_index, per, lse)
        ctx.save_for_backward(input, target, *(() if weight is None else (weight,)))
        ctx.lse = lse
        ctx.wsum = wsum
        ctx.reduction = reduction
        ctx.ignore_index = ignore_index
        ctx.has_weight = weight is not None
        if reduction == "none":
            return from_numpy(per.reshape(t.shape))
        if reduction == "sum":
            return _scalar(total, dt)
        return _scalar(_mean(total, wsum), dt)

    @staticmethod
    def backward(ctx, grad):
        saved = ctx.saved_tensors
        input, target = saved[0], saved[1]
        weight = saved[2] if ctx.has_weight else None
        if not ctx.needs_input_grad[0]:
            return None, None, None, None, None
        xp = _ns()
        rule = (ctx.reduction, ctx.ignore_index, ctx.wsum, ctx.lse)
        grad_x = xp.cross_entropy_grad(
            xp.val(input), target._arr, None if weight is None else weight._arr,
            xp.val(grad), rule)
        return xp.out(grad_x), None, None, None, None


def _ce_grad_arrays(x, target, weight, grad, rule):
    reduction, ignore_index, wsum, lse = rule
    x = np.ascontiguousarray(x)
    dt = x.dtype
    c = x.shape[0 if x.ndim == 1 else 1]
    if x.ndim <= 2:
        rows = x.reshape(-1, c)
    else:
        rows = np.ascontiguousarray(np.moveaxis(x, 1, -1)).reshape(-1, c)
    t = np.ascontiguousarray(target, dtype=np.int64).reshape(-1)
    w = np.empty(0, dt) if weight is None else np.ascontiguousarray(
        weight, dtype=dt).reshape(-1)
    g = _grad_arr(grad, dt)
    if reduction == "mean":
        g = np.array([_mean(g[0], wsum)], dtype=dt)
    out = np.empty(rows.shape, dtype=dt)
    _k.cross_entropy_bwd(rows, t, w, ignore_index, lse, g, out)
    if x.ndim <= 2:
        return out.reshape(x.shape)
    moved = out.reshape(x.shape[:1] + x.shape[2:] + (c,))
    return np.ascontiguousarray(np.moveaxis(moved, -1, 1))


def _ce_grad_tensors(input, target, weight, grad, rule):
    reduction, ignore_index, wsum, _ = rule
    axis = 0 if input.ndim == 1 else 1
    c = input.shape[axis]
    xa = input._arr
    t = np.asarray(target).astype(np.int64)
    t_axis = np.expand_dims(t, axis)
    classes = np.arange(c).reshape((c,) + (1,) * (input.ndim - axis - 1))
    onehot = (classes == t_axis).astype(xa.dtype)
    keep = t_axis != ignore_index
    if weight is not None:
        wrow = np.where(keep, np.asarray(weight)[np.where(keep, t_axis, 0)], 0)
    else:
        wrow = keep
    e = (input - _row_max(input, axis)).exp()
    probs = e / e.sum(dim=axis, keepdim=True)
    if reduction == "none":
        g = grad.reshape(t_axis.shape)
    elif reduction == "mean":
        g = grad * float(_mean(1.0, wsum))
    else:
        g = grad
    return (probs - _constant(onehot)) * (g * _constant(wrow.astype(xa.dtype)))


# grad = (softmax(x) - onehot(target)) * g * w[target] (0 at ignore_index),
# / the weight sum for the mean.  rule: (reduction, ignore_index, wsum, lse).
xp_helper("cross_entropy_grad", _ce_grad_arrays, _ce_grad_tensors)
_engine.install_cross_entropy_graph(_ce_grad_tensors)   # the compiled node's


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  size_average: bool | None = None, ignore_index: int = -100,
                  reduce: bool | None = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Cross-entropy between logits and class indices, as one fused kernel.

    ``l_i = w[t_i] * (logsumexp(x_i) - x_i[t_i])``; ``mean`` divides the sum
    by the sum of the weights of non-ignored rows (the row count without
    ``weight``).  Stable for any finite logits (1e4 included).

    Parameters
    ----------
    input : Tensor (C,), (N, C) or (N, C, d1, ...), float32 or float64
    target : integer Tensor (), (N,) or (N, d1, ...) of class indices in
        ``[0, C)`` or equal to ``ignore_index``; or a floating Tensor of
        input's shape holding class probabilities
    weight : Tensor (C,), optional per-class weights
    reduction : "mean" | "sum" | "none"
    label_smoothing : float in [0, 1]
        Mixes each target with the uniform distribution, as torch:
        ``(1 - eps) * nll + eps / C * sum_c -w_c log p_c``.
    size_average, reduce : deprecated flags, mapped to ``reduction`` as torch
        maps them (with its warning).

    Raises
    ------
    RuntimeError
        For a target that is neither int64/uint8 class indices nor floating
        probabilities of the input's shape (torch's message).
    IndexError
        For a class index out of range (the message names it).
    ValueError
        For mismatched batch sizes.
    """
    if weight is None and size_average is None and reduce is None and \
            not label_smoothing:
        # (N, C) logits and (N,) targets, 'mean' or 'sum': one compiled node
        loss = _engine.cross_entropy_fast(input, target, ignore_index, reduction)
        if loss is not None:
            return loss
    reduction = _lossf.legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    label_smoothing = float(label_smoothing)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(
            f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if not isinstance(target, Tensor):
        raise TypeError(
            "cross_entropy_loss(): argument 'target' (position 2) must be Tensor, "
            f"not {type(target).__name__}")
    if input.ndim == 0:
        raise ValueError("cross_entropy: input must have at least 1 dimension")
    tdt = target._arr.dtype
    if tdt.kind == "f" and target._arr.shape == input._arr.shape:
        return _soft_cross_entropy(input, target, weight, reduction, label_smoothing)
    if tdt not in (np.dtype(np.int64), np.dtype(np.uint8)):
        raise RuntimeError(
            "expected target dtype to be Long or Byte, but got "
            f"{_TORCH_TYPE_NAMES.get(tdt, str(tdt))} (cross_entropy takes int64 "
            "class indices, or floating class probabilities of the input's shape "
            f"{tuple(input.shape)})")
    if input.ndim == 1 and target.ndim != 0:
        raise ValueError(
            f"Expected input batch_size (1) to match target batch_size "
            f"({target.shape[0] if target.ndim else 1})."
        )
    if weight is not None and np.dtype(weight.dtype) != np.dtype(input.dtype):
        raise RuntimeError(
            f"expected scalar type {_TORCH_TYPE_NAMES.get(np.dtype(input.dtype))} but "
            f"found {_TORCH_TYPE_NAMES.get(np.dtype(weight.dtype))} (cross_entropy: "
            f"weight is {weight.dtype}, input is {input.dtype})")
    nll = _CrossEntropy.apply(input, target, weight, int(ignore_index), reduction)
    nll = named(nll, _nll_node_name(input.ndim, reduction))
    if label_smoothing == 0.0:
        return nll
    return _smoothed(input, target, weight, int(ignore_index), reduction,
                     label_smoothing, nll)


# torch's names of the dtypes, for messages that quote torch's own.
_TORCH_TYPE_NAMES = {
    np.dtype(np.float16): "Half", np.dtype(np.float32): "Float",
    np.dtype(np.float64): "Double", np.dtype(np.int8): "Char",
    np.dtype(np.int16): "Short", np.dtype(np.int32): "Int",
    np.dtype(np.int64): "Long", np.dtype(np.uint8): "Byte", np.dtype(bool): "Bool",
}


def _soft_cross_entropy(input, target, weight, reduction, eps):
    """Cross-entropy against class probabilities (smoothed towards uniform)."""
    axis = 0 if input.ndim == 1 else 1
    if eps:
        target = target * (1.0 - eps) + eps / input.shape[axis]
    logp = log_softmax(input, dim=axis)
    if weight is not None:
        shape = (-1,) + (1,) * (input.ndim - axis - 1)
        logp = logp * weight.reshape(shape)
    return _reduce(-(target * logp).sum(dim=axis), reduction)


def _smoothed(input, target, weight, ignore_index, reduction, eps, nll):
    """``(1 - eps) * nll + eps / C * smooth`` with ``smooth_i = -sum_c w_c
    logp_ic`` over non-ignored rows; ``mean`` divides ``smooth`` by the same
    weight sum as the nll term (torch's rule)."""
    axis = 0 if input.ndim == 1 else 1
    c = input.shape[axis]
    logp = log_softmax(input, dim=axis)
    if weight is not None:
        shape = (-1,) + (1,) * (input.ndim - axis - 1)
        logp = logp * weight.reshape(shape)
    t = np.asarray(target._arr)
    keep = t != ignore_index
    smooth = -logp.sum(dim=axis) * _constant(keep.astype(input._arr.dtype))
    if reduction == "none":
        return nll * (1.0 - eps) + smooth * (eps / c)
    if reduction == "sum":
        return nll * (1.0 - eps) + smooth.sum() * (eps / c)
    if weight is None:
        denom = float(keep.sum())
    else:
        w = np.asarray(weight._arr)
        denom = float(w[np.where(keep, t, 0)][keep].sum())
    return nll * (1.0 - eps) + smooth.sum() * (eps / c / denom if denom else math.nan)


def _nll_node_name(ndim, reduction):
    """torch's name of the loss's node: spatial inputs (N, C, d1, ...) go
    through its 2-D kernel, and an unreduced 3-D one is viewed back."""
    if ndim <= 2:
        return "NllLossBackward0"
    if ndim != 4 and reduction == "none":
        return "ViewBackward0"
    return "NllLoss2DBackward0"


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
             size_average: bool | None = None, ignore_index: int = -100,
             reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of log-probabilities: ``-w[t] * input[t]``.

    Composed of Tensor ops (not fused); prefer ``cross_entropy`` on logits.
    """
    reduction = _lossf.legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    axis = 0 if input.ndim == 1 else 1
    c = input.shape[axis]
    t = np.asarray(target._arr).astype(np.int64)
    bad = (t != ignore_index) & ((t < 0) | (t >= c))
    if bad.any():
        raise IndexError(f"Target {int(t[bad].flat[0])} is out of bounds.")
    t_axis = np.expand_dims(t, axis)
    keep = t_axis != ignore_index
    classes = np.arange(c).reshape((c,) + (1,) * (input.ndim - axis - 1))
    onehot = (classes == t_axis) & keep
    w = keep.astype(input._arr.dtype)
    if weight is not None:
        w = np.where(keep, np.asarray(weight._arr)[np.where(keep, t_axis, 0)], 0)
    picked = -(input * _constant(onehot.astype(input._arr.dtype))).sum(dim=axis)
    wrow = np.squeeze(w, axis).astype(input._arr.dtype)
    loss = picked * _constant(wrow)
    if reduction == "mean":
        loss = loss.sum() / float(wrow.sum())
    else:
        loss = _reduce(loss, reduction)
    return named(loss, _nll_node_name(input.ndim, reduction))


# Convolution, pooling and normalisation live in their own modules; re-exported.
from ._functional_conv import (  # noqa: E402
    conv1d, conv2d, conv_transpose1d, conv_transpose2d, fold, pad, unfold,
)
from ._functional_norm import batch_norm, group_norm, layer_norm, rms_norm  # noqa: E402
from ._functional_instance import instance_norm  # noqa: E402
from ._functional_pool import (  # noqa: E402
    adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool1d, adaptive_max_pool2d,
    avg_pool1d, avg_pool2d, interpolate, max_pool1d, max_pool2d,
)
from ._functional_dropout import (  # noqa: E402
    alpha_dropout, dropout, dropout1d, dropout2d, dropout3d, feature_alpha_dropout,
)
from ._functional_sparse import embedding, embedding_bag, one_hot  # noqa: E402
from ._functional_act import (  # noqa: E402
    celu, celu_, elu, elu_, gelu, glu, hardshrink, hardsigmoid, hardswish, hardtanh,
    hardtanh_, leaky_relu, leaky_relu_, logsigmoid, mish, prelu, relu, relu6, relu_,
    selu, selu_, silu, softmin, softplus, softshrink, softsign, tanhshrink,
    threshold, threshold_,
)
from . import _functional_conv, _functional_norm, _functional_pool  # noqa: E402
from ._functional_loss import (  # noqa: E402
    binary_cross_entropy, cosine_embedding_loss, cosine_similarity, gaussian_nll_loss,
    gumbel_softmax, hinge_embedding_loss, huber_loss, kl_div, l1_loss,
    margin_ranking_loss, multi_margin_loss, multilabel_soft_margin_loss, normalize,
    pairwise_distance, poisson_nll_loss, smooth_l1_loss, soft_margin_loss,
    triplet_margin_loss,
)
from ._functional_linear import (  # noqa: E402
    bilinear, channel_shuffle, native_channel_shuffle, pixel_shuffle, pixel_unshuffle,
)
from . import _functional_dropout, _functional_linear, _functional_sparse  # noqa: E402

__all__ += (_functional_conv.__all__ + _functional_norm.__all__
            + _functional_pool.__all__ + _functional_dropout.__all__
            + _functional_sparse.__all__ + _act.__all__
            + _functional_linear.__all__ + _lossf.__all__)
from ._functional_attention import scaled_dot_product_attention  # noqa: E402

__all__ += ["instance_norm", "scaled_dot_product_attention"]

from ._functional_more import (  # noqa: E402
    adaptive_max_pool1d_with_indices, adaptive_max_pool2d_with_indices,
    local_response_norm, lp_pool1d, lp_pool2d, max_pool1d_with_indices,
    max_pool2d_with_indices, pdist, upsample, upsample_bilinear, upsample_nearest,
)
from . import _functional_more  # noqa: E402

__all__ += _functional_more.__all__

# the 3-d layers (their names are in _functional_conv.__all__ and
# _functional_pool3d.__all__)
from ._functional_conv import conv3d, conv_transpose3d  # noqa: E402
from ._functional_pool3d import (  # noqa: E402
    adaptive_avg_pool3d, adaptive_max_pool3d, adaptive_max_pool3d_with_indices,
    avg_pool3d, lp_pool3d, max_pool3d, max_pool3d_with_indices, max_unpool1d,
    max_unpool2d, max_unpool3d,
)
from . import _functional_pool3d  # noqa: E402

__all__ += _functional_pool3d.__all__
from ._functional_fractional import (  # noqa: E402
    fractional_max_pool2d, fractional_max_pool2d_with_indices, fractional_max_pool3d,
    fractional_max_pool3d_with_indices,
)
from . import _functional_fractional  # noqa: E402

__all__ += _functional_fractional.__all__
from ._functional_ctc import ctc_loss  # noqa: E402
from ._functional_act import rrelu, rrelu_  # noqa: E402
from ._functional_loss import (  # noqa: E402
    multilabel_margin_loss, triplet_margin_with_distance_loss,
)

__all__ += ["ctc_loss", "multilabel_margin_loss", "rrelu", "rrelu_",
            "triplet_margin_with_distance_loss"]
from ._functional_grid import (  # noqa: E402
    GRID_SAMPLE_INTERPOLATION_MODES, GRID_SAMPLE_PADDING_MODES, affine_grid,
    grid_sample,
)
from . import _functional_grid  # noqa: E402

__all__ += _functional_grid.__all__
from ._functional_mha import _mha  # noqa: E402


def multi_head_attention_forward(
        query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int,
        num_heads: int, in_proj_weight: Tensor | None, in_proj_bias: Tensor | None,
        bias_k: Tensor | None, bias_v: Tensor | None, add_zero_attn: bool,
        dropout_p: float, out_proj_weight: Tensor, out_proj_bias: Tensor | None,
        training: bool = True, key_padding_mask: Tensor | None = None,
        need_weights: bool = True, attn_mask: Tensor | None = None,
        use_separate_proj_weight: bool = False, q_proj_weight: Tensor | None = None,
        k_proj_weight: Tensor | None = None, v_proj_weight: Tensor | None = None,
        static_k: Tensor | None = None, static_v: Tensor | None = None,
        average_attn_weights: bool = True, is_causal: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """Multi-head attention with the given weights (``nn.MultiheadAttention``'s
    computation, sequence-first; both run ``_functional_mha._mha``).

    Parameters
    ----------
    query, key, value : Tensor
        (L, N, E), (S, N, kdim), (S, N, vdim); or unbatched (L, E), (S, ...).
    embed_dim_to_check, num_heads : int
        E, which must equal the query's last dimension, and the head count
        (which must divide it).
    in_proj_weight, in_proj_bias : Tensor or None
        Packed (3E, E) projection and (3E,) bias; with
        ``use_separate_proj_weight`` the weights are ``q_proj_weight`` (E, E),
        ``k_proj_weight`` (E, kdim) and ``v_proj_weight`` (E, vdim) instead.
    bias_k, bias_v : Tensor or None
        (1, 1, E) appended to the projected keys/values.
    add_zero_attn : bool
        Append a zero key/value per head.
    dropout_p : float
        On the attention weights, when ``training``.
    out_proj_weight, out_proj_bias : Tensor
        The output projection (E, E) and (E,) or None.
    key_padding_mask, attn_mask : Tensor, optional
        (N, S) and (L, S) or (N * num_heads, L, S); bool True masks out,
        floats are added.
    static_k, static_v : Tensor, optional
        (N * num_heads, S, E / num_heads) keys/values used as they are.
    need_weights, average_attn_weights : bool
        Also return the weights (N, L, S) averaged over heads, or
        (N, num_heads, L, S).
    is_causal : bool
        A hint that ``attn_mask`` is causal (it must be given).

    Returns
    -------
    (Tensor, Tensor or None)
        The output (L, N, E) and the weights or None.
    """
    return _mha(linear, query, key, value, embed_dim_to_check, num_heads,
                in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p,
                out_proj_weight, out_proj_bias, training, key_padding_mask,
                need_weights, attn_mask, use_separate_proj_weight, q_proj_weight,
                k_proj_weight, v_proj_weight, static_k, static_v,
                average_attn_weights, is_causal)


__all__ += ["multi_head_attention_forward"]


def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor, *,
                         linear_bias: Tensor | None = None,
                         weight: Tensor | None = None, reduction: str = "mean",
                         ignore_index: int | None = None,
                         label_smoothing: float = 0.0, options: object = None,
                         ) -> Tensor:
    """``cross_entropy(linear(input, linear_weight, linear_bias), target)``.

    Parameters
    ----------
    input : Tensor
        (N, in_features) or unbatched (in_features,).
    linear_weight : Tensor
        (C, *out_features, in_features); ``out_features`` make a K-dimensional
        loss (logits (N, C, *out_features); batched input only).
    target : Tensor
        Class indices (N, *out_features), or probabilities of the logits'
        shape.
    linear_bias : Tensor, optional
        (C, *out_features).
    weight, reduction, ignore_index, label_smoothing
        As ``cross_entropy``; ``ignore_index=None`` means -100 and must be None
        for probability targets.
    options : LinearCrossEntropyOptions, optional
        torch's chunking knobs; cygrad computes the logits whole (the same
        numbers; see ``nn.modules.linear_cross_entropy_options``).
    """
    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(
            f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError("expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.dim()}")
    batch = tuple(input.shape[:-1])
    in_features = input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError(
            "expected equal input and linear_weight last dimensions (in_features), "
            f"got {in_features} and {linear_weight.shape[-1]}, respectively")
    num_classes = linear_weight.shape[0]
    out_features = tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (num_classes,
                                                                *out_features):
        raise RuntimeError("expected linear_bias shape "
                           f"{(num_classes, *out_features)}, "
                           f"got {tuple(linear_bias.shape)}")
    if out_features and not batch:
        raise RuntimeError(
            f"K-dimensional loss defined by linear_weight shape "
            f"{tuple(linear_weight.shape)} requires batched input, (N, {in_features}), "
            f"got unbatched input with shape {tuple(input.shape)}")
    logits_shape = (*batch, num_classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError(
            "ignore_index cannot be specified when target contains probabilities")
    rows = math.prod(out_features, start=num_classes)
    w2 = linear_weight.reshape(rows, in_features) if out_features else linear_weight
    b2 = (linear_bias.reshape(rows) if out_features and linear_bias is not None
          else linear_bias)
    logits = linear(input, w2, b2).reshape(logits_shape)
    return cross_entropy(logits, target, weight=weight, reduction=reduction,
                         ignore_index=-100 if ignore_index is None else ignore_index,
                         label_smoothing=label_smoothing)


__all__ += ["linear_cross_entropy"]
from ._functional_tbc import conv_tbc  # noqa: E402
from . import grad  # noqa: E402  (torch.nn.functional.grad is torch.nn.grad)

__all__ += ["conv_tbc"]
from ._functional_helpers import assert_int_or_pair, boolean_dispatch  # noqa: E402,F401
