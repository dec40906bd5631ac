"""Connectionist temporal classification: ``F.ctc_loss``.

The loss of one sequence is ``-log p(target | log_probs)``, summed over
every alignment of the target (blanks between and around its labels,
repeats collapsed).  The alpha recursion (forward) and the beta recursion
(for the gradient, computed with the forward when ``log_probs`` requires
grad) run in log space in one compiled loop over sequences, time and the
2 S + 1 extended label positions (``_kernels/loss.pyx``: ``ctc_fwd_bwd``),
in float64 whatever the input dtype, so float32 inputs lose nothing to the
many log-sum-exps.

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

from __future__ import annotations

import numpy as np

from cygrad._kernels import loss as _k
from cygrad._tensor import Tensor
from cygrad.autograd.function import Function
from cygrad.creation import from_numpy

__all__ = ["ctc_loss"]

_REDUCTION_CODES = {0: "none", 1: "mean", 2: "sum"}


def _allocate_error(msg):
    return RuntimeError(
        f"{msg} (while checking arguments for ctc_loss_allocate_outputs)")


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


def _extended(tg, blank):
    """Blank-interleaved labels (N, 2 S + 1), and where a position may also
    come from two positions back (a label differing from the one before)."""
    n, s = tg.shape
    ext = np.full((n, 2 * s + 1), blank, np.int64)
    ext[:, 1::2] = tg
    skip = np.zeros(ext.shape, np.uint8)
    if s > 1:
        skip[:, 3::2] = tg[:, 1:] != tg[:, :-1]
    return ext, skip


class _CTC(Function):
    """nll_n = -log sum over alignments; grad_lp (torch's, see the module)."""

    _node_name = "CtcLossBackward0"

    @staticmethod
    def forward(ctx, log_probs, tg, il, tl, blank, zero_infinity):
        lp = np.ascontiguousarray(log_probs._arr, dtype=np.float64)
        ext, skip = _extended(tg, blank)
        nll = np.empty(lp.shape[1])
        need = log_probs.requires_grad
        grad = np.empty(lp.shape if need else (0, 0, 0))
        _k.ctc_fwd_bwd(lp, ext, skip, il, tl, nll, grad)
        if zero_infinity:
            inf = np.isinf(nll)
            nll[inf] = 0.0
            if need:
                grad[:, inf] = 0.0
        if need:
            ctx.grad_lp = grad.astype(log_probs._arr.dtype)
        return from_numpy(nll.astype(log_probs._arr.dtype))

    @staticmethod
    def backward(ctx, grad):
        if not ctx.needs_input_grad[0]:
            return (None,) * 6
        g = grad.reshape((1, -1, 1)) * from_numpy(ctx.grad_lp)
        return g, None, None, None, None, None


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Tensor | list[int],
             target_lengths: Tensor | list[int], blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
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
    used = np.arange(tg.shape[1])[None, :] < tl[:, None]
    if ((tg < 0) | (tg >= c))[used].any():
        bad = int(tg[used & ((tg < 0) | (tg >= c))][0])
        raise RuntimeError(f"ctc_loss: target label {bad} is out of range for "
                           f"{c} classes")
    nll = _CTC.apply(log_probs, tg, il, tl, int(blank), bool(zero_infinity))
    if reduction == "mean":
        div = from_numpy(np.maximum(tl, 1).astype(log_probs._arr.dtype))
        return (nll / div).mean()
    if reduction == "sum":
        return nll.sum()
    return nll.squeeze(0) if unbatched else nll
