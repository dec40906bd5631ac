"""Connectionist temporal classification: ``F.ctc_loss``.

The loss of one sequence is ``-log p(target | log_probs)``, summed over
every alignment of the target (blanks between and around its labels,
repeats collapsed).  The forward runs the alpha recursion in log space and
the backward the beta recursion: both loop over time and are vectorised
over the batch and the extended label positions (2 S + 1 of them: blank,
label, blank, ...), in float64 whatever the input dtype, so float32 inputs
lose nothing to the many log-sum-exps.

The gradient is torch's: ``exp(lp) - exp(log(sum alpha beta) + nll - lp)``
at the steps before each sequence's input length, 0 after it.  That is the
gradient with respect to the logits under a ``log_softmax`` (torch assumes
the input is one): it differs from the plain derivative by ``exp(lp)``,
which ``log_softmax``'s backward removes, so a model that feeds
``log_softmax`` output gets the exact gradient.  An infeasible alignment
(target too long for the input) has an infinite loss and a NaN gradient,
or 0 for both with ``zero_infinity=True``.  The gradient is a constant of
the incoming one (no second derivative through ``log_probs``; torch has
none either).
"""

import numpy as np

from cygrad._tensor import Tensor
from cygrad.autograd.function import Function
from cygrad.creation import from_numpy

__all__ = ["ctc_loss"]

_NEG = -np.inf
_REDUCTION_CODES = {0: "none", 1: "mean", 2: "sum"}


def _lse(*xs):
    """Elementwise log(sum(exp(x))) of equal-shaped arrays, -inf safe."""
    m = xs[0]
    for x in xs[1:]:
        m = np.maximum(m, x)
    safe = np.where(np.isfinite(m), m, 0.0)
    total = sum(np.exp(x - safe) for x in xs)
    with np.errstate(divide="ignore"):
        return np.log(total) + safe


def _allocate_error(msg):
    return RuntimeError(f"{msg} (while checking arguments for ctc_loss_allocate_outputs)")


def _lengths(value, name, n):
    """``input_lengths`` / ``target_lengths`` as an int64 array of ``n``."""
    if isinstance(value, Tensor):
        arr = np.asarray(value._arr)
        if arr.dtype.kind not in "iu":
            raise RuntimeError(f"{name} must be integral")
    else:
        arr = np.asarray(value)
        if arr.dtype.kind not in "iu":
            raise TypeError(
                f"ctc_loss(): argument '{name}' must be a tuple of ints or an "
                f"integral Tensor, not {type(value).__name__}")
    arr = arr.reshape(-1).astype(np.int64)
    if arr.shape[0] != n:
        raise RuntimeError(f"{name} must be of size batch_size")
    return arr


def _padded_targets(targets, tl, n, concatenated):
    """The targets as an (N, max S) int64 array (padding: 0)."""
    s_max = int(tl.max()) if n else 0
    if not concatenated:
        return targets[:, :s_max] if s_max else np.zeros((n, 0), np.int64)
    out = np.zeros((n, s_max), np.int64)
    starts = np.concatenate([[0], np.cumsum(tl)[:-1]]).astype(np.int64)
    for i in range(n):
        out[i, :tl[i]] = targets[starts[i]:starts[i] + tl[i]]
    return out


def _extended(tg, tl, blank):
    """Blank-interleaved labels (N, 2 S + 1), where each position may also
    come from two positions back (a label differing from the one before)."""
    n, s = tg.shape
    ext = np.full((n, 2 * s + 1), blank, np.int64)
    ext[:, 1::2] = tg
    skip = np.zeros(ext.shape, bool)
    if s > 1:
        skip[:, 3::2] = tg[:, 1:] != tg[:, :-1]
    valid = np.arange(2 * s + 1)[None, :] < (2 * tl + 1)[:, None]
    return ext, skip, valid


def _alpha_beta(lp, ext, skip, valid, il, tl, need_beta):
    """log alpha, log beta (T, N, L) and the negative log-likelihood (N,)."""
    t_max, n, _ = lp.shape
    width = ext.shape[1]
    rows = np.arange(n)[:, None]
    emit = lp[:, rows, ext]                        # (T, N, L)
    emit = np.where(valid[None], emit, _NEG)
    neg = np.full((n, width), _NEG)
    alpha = np.full((t_max, n, width), _NEG)
    if t_max:
        alpha[0, :, :2] = emit[0, :, :2]
        if width > 1:
            alpha[0, tl == 0, 1] = _NEG
    for t in range(1, t_max):
        prev = alpha[t - 1]
        one = np.concatenate([neg[:, :1], prev[:, :-1]], axis=1)
        two = np.concatenate([neg[:, :2], prev[:, :-2]], axis=1)
        alpha[t] = _lse(prev, one, np.where(skip, two, _NEG)) + emit[t]
    last = np.clip(il - 1, 0, None)
    at_end = alpha[last, np.arange(n)]             # (N, L)
    end_blank = at_end[np.arange(n), 2 * tl]
    end_label = np.where(tl > 0, at_end[np.arange(n), np.maximum(2 * tl - 1, 0)],
                         _NEG)
    nll = -_lse(end_blank, end_label)
    nll = np.where(il == 0, np.where(tl == 0, 0.0, np.inf), nll)
    if not need_beta:
        return alpha, None, nll
    beta = np.full((t_max, n, width), _NEG)
    skip_next = np.zeros_like(skip)               # position s may jump to s + 2
    skip_next[:, :-2] = skip[:, 2:]
    final = np.zeros((n, width), bool)
    final[np.arange(n), 2 * tl] = True
    final[np.arange(n)[tl > 0], (2 * tl - 1)[tl > 0]] = True
    for t in range(t_max - 1, -1, -1):
        if t + 1 < t_max:
            nxt = beta[t + 1]
            one = np.concatenate([nxt[:, 1:], neg[:, :1]], axis=1)
            two = np.concatenate([nxt[:, 2:], neg[:, :2]], axis=1)
            inner = _lse(nxt, one, np.where(skip_next, two, _NEG)) + emit[t]
        else:
            inner = neg
        start = np.where(final, emit[t], _NEG)
        here = np.where((t == il - 1)[:, None], start, inner)
        beta[t] = np.where((t < il)[:, None], here, _NEG)
    return alpha, beta, nll


class _CTC(Function):
    """nll_n = -log sum over alignments; grad_lp (torch's, see the module)."""

    _node_name = "CtcLossBackward0"

    @staticmethod
    def forward(ctx, log_probs, tg, il, tl, blank, zero_infinity):
        lp = np.asarray(log_probs._arr, dtype=np.float64)
        ext, skip, valid = _extended(tg, tl, blank)
        need = log_probs.requires_grad
        alpha, beta, nll = _alpha_beta(lp, ext, skip, valid, il, tl, need)
        if need:
            ctx.grad_lp = _gradient(lp, alpha, beta, nll, ext, valid, il, blank,
                                    zero_infinity).astype(log_probs._arr.dtype)
        if zero_infinity:
            nll = np.where(np.isinf(nll), 0.0, nll)
        return from_numpy(nll.astype(log_probs._arr.dtype))

    @staticmethod
    def backward(ctx, grad):
        if not ctx.needs_input_grad[0]:
            return (None,) * 6
        g = grad.reshape((1, -1, 1)) * from_numpy(ctx.grad_lp)
        return g, None, None, None, None, None


def _gradient(lp, alpha, beta, nll, ext, valid, il, blank, zero_infinity):
    t_max, n, c = lp.shape
    ab = alpha + beta                              # (T, N, L)
    m = ab.max(axis=2, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    onehot = np.zeros((n, ext.shape[1], c))
    onehot[np.arange(n)[:, None], np.arange(ext.shape[1])[None, :], ext] = valid
    acc = np.einsum("tns,nsc->tnc", np.exp(ab - m), onehot)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        lcab = np.log(acc) + m
        grad = np.exp(lp) - np.exp(lcab + nll[None, :, None] - lp)
    grad = np.where((np.arange(t_max)[:, None] < il[None, :])[:, :, None], grad, 0.0)
    if zero_infinity:
        grad = np.where(np.isinf(nll)[None, :, None], 0.0, grad)
    return grad


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0,
             reduction="mean", zero_infinity=False):
    """The CTC loss of ``log_probs`` (T, N, C) or unbatched (T, C).

    Parameters
    ----------
    log_probs : Tensor (T, N, C) or (T, C), float32/float64 log-probabilities
    targets : Tensor (N, S) padded, or 1-d (sum of target_lengths) concatenated
    input_lengths, target_lengths : int Tensors or tuples of ints, (N,)
    blank : int, the blank class
    reduction : "none" (N,) | "sum" | "mean" (each loss divided by its target
        length, clamped to 1, then the batch mean)
    zero_infinity : bool, infinite losses (and their gradients) become 0

    Returns
    -------
    Tensor: the losses (reduction "none") or a scalar
    """
    if isinstance(reduction, int) and not isinstance(reduction, bool):
        reduction = _REDUCTION_CODES.get(reduction, reduction)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if not isinstance(log_probs, Tensor):
        raise TypeError("ctc_loss(): argument 'log_probs' (position 1) must be Tensor, "
                        f"not {type(log_probs).__name__}")
    dt = np.dtype(log_probs.dtype)
    if dt.kind != "f" or dt.itemsize < 4:
        names = {"i": "Long", "u": "Byte", "b": "Bool", "f": "Half"}
        raise NotImplementedError(
            f'"ctc_loss_cpu" not implemented for \'{names.get(dt.kind, str(dt))}\'')
    unbatched = log_probs.ndim != 3
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        if log_probs.ndim != 3:
            raise _allocate_error(
                f"Expected 3-dimensional tensor, but got {log_probs.ndim}-dimensional "
                "tensor for argument #1 'log_probs'")
    t_max, n, c = (int(s) for s in log_probs.shape)
    tg = np.asarray(targets._arr).astype(np.int64)
    if unbatched:
        tg = tg.reshape((1, -1)) if tg.ndim <= 1 else tg
        tg_concat = False
    else:
        tg_concat = tg.ndim == 1
    il = _lengths(input_lengths, "input_lengths", n)
    tl = _lengths(target_lengths, "target_lengths", n)
    if not 0 <= blank < c:
        raise RuntimeError("blank must be in label range")
    for name, arr in (("input_lengths", il), ("target_lengths", tl)):
        if n and arr.min() < 0:
            raise _allocate_error(
                f"Expected {name} to have value at least 0, but got value "
                f"{int(arr.min())}")
    if n and il.max() > t_max:
        raise _allocate_error(f"Expected input_lengths to have value at most "
                              f"{t_max}, but got value {int(il.max())}")
    if tg_concat:
        if tg.shape[0] != int(tl.sum()):
            raise _allocate_error(
                f"Expected tensor to have size {int(tl.sum())} at dimension 0, but "
                f"got size {tg.shape[0]} for argument #2 'targets'")
    elif n and tg.shape[1] < tl.max():
        raise _allocate_error(
            f"Expected tensor to have size at least {int(tl.max())} at dimension 1, "
            f"but got size {tg.shape[1]} for argument #2 'targets'")
    tg = _padded_targets(tg, tl, n, tg_concat)
    nll = _CTC.apply(log_probs, tg, il, tl, int(blank), bool(zero_infinity))
    if reduction == "mean":
        div = from_numpy(np.maximum(tl, 1).astype(log_probs._arr.dtype))
        return (nll / div).mean()
    if reduction == "sum":
        return nll.sum()
    return nll.squeeze(0) if unbatched else nll
