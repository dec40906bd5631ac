"""Training-loop helpers: ``clip_grad_norm_``."""

import math

import numpy as np

from cygrad._tensor import Tensor
from cygrad.creation import tensor
from cygrad.optim._kernels import k as _k

__all__ = ["clip_grad_norm_"]


def _norm_power_sum(g, norm_type):
    """For a flat contiguous float array: the piece of the total norm it adds."""
    if norm_type == 2.0:
        return _k.sum_squares(g)
    if norm_type == math.inf:
        return _k.max_abs(g)
    if norm_type == -math.inf:
        return float(np.min(np.abs(g))) if g.size else math.inf
    if norm_type == 0.0:
        return float(np.count_nonzero(g))
    return _k.sum_abs_pow(g, norm_type)


def clip_grad_norm_(
    parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None
):
    r"""Scale the gradients in place so that their joint norm is at most ``max_norm``.

    The total norm is the ``norm_type``-norm of all gradients taken together
    (the norm of the per-parameter norms); sums of squares and of powers
    accumulate in double, so float32 gradients lose no digits.  Every gradient
    is then multiplied by ``min(max_norm / (total + 1e-6), 1)``, computed in the
    gradients' dtype as torch does.  Parameters without a gradient are ignored.

    Parameters
    ----------
    parameters : Tensor or iterable of Tensor
    max_norm : float
    norm_type : float, default 2.0
        Any p > 0, ``0`` (count of non-zeros), ``inf`` (max of ``|g|``) or
        ``-inf`` (min of ``|g|``).
    error_if_nonfinite : bool, default False
        Raise instead of scaling when the total norm is NaN or infinite.
    foreach : ignored
        Accepted so torch code runs unchanged.

    Returns
    -------
    Tensor
        The total norm before clipping, a 0-d tensor of the gradients' dtype
        (float32 when no parameter has a gradient).

    Raises
    ------
    RuntimeError
        With ``error_if_nonfinite=True``, when the total norm is not finite.
    """
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    max_norm = float(max_norm)
    norm_type = float(norm_type)
    if not grads:
        return tensor(0.0)
    dtype = np.result_type(*[g._arr.dtype for g in grads])
    if dtype.kind != "f":
        raise TypeError(f"clip_grad_norm_ needs floating gradients, got {dtype}")

    flats = [np.ascontiguousarray(g._arr).reshape(-1) for g in grads]
    parts = [_norm_power_sum(f, norm_type) for f in flats]
    if norm_type == math.inf:
        total = max(parts)
    elif norm_type == -math.inf:
        total = min(parts)
    elif norm_type == 0.0:
        total = sum(parts)
    elif norm_type == 2.0:
        total = math.sqrt(sum(parts))
    else:
        total = sum(parts) ** (1.0 / norm_type)
    total = dtype.type(total)

    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the "
            "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`"
        )
    with np.errstate(all="ignore"):
        coef = dtype.type(max_norm) / (total + dtype.type(1e-6))
    # min(coef, 1) that keeps NaN, as torch's clamp(max=1) does
    if not coef < 1 and not np.isnan(coef):
        return tensor(total, dtype=dtype)
    for g, flat in zip(grads, flats):
        arr = g._arr
        if np.shares_memory(flat, arr) and flat.dtype == arr.dtype:
            _k.scale(flat, float(coef))
        else:
            arr *= arr.dtype.type(coef)
        g._bump_version()
    return tensor(total, dtype=dtype)
