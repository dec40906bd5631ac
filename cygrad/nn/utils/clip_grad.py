"""Gradient clipping by norm and by value (``clip_grad_norm_``, ``clip_grad_value_``).

Each function makes one compiled pass over each gradient
(``cygrad._kernels.optim``: ``vector_norm``, ``scale``, ``clamp``).  The total
norm is torch's norm of the per-tensor norms: every per-tensor norm is rounded
to its tensor's dtype, then the norms (in their common dtype) are normed
again, so a NaN in any gradient makes the total NaN for every order but 0,
exactly as torch's.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np

from cygrad._tensor import Tensor
from cygrad.creation import get_default_dtype, tensor
from cygrad.optim._kernels import k as _k

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = [
    "clip_grad_norm",
    "clip_grad_norm_",
    "clip_grad_value_",
    "clip_grads_with_norm_",
    "get_total_norm",
]


def _as_list(tensors):
    if isinstance(tensors, Tensor):
        return [tensors]
    return list(tensors)


def _flat(arr):
    """A flat C-contiguous view (or, for a strided array, a flat copy)."""
    return np.ascontiguousarray(arr).reshape(-1)


def _float_dtype(arrays, what):
    dtype = np.result_type(*[a.dtype for a in arrays])
    if dtype.kind != "f":
        raise TypeError(f"{what} needs floating tensors, got {dtype}")
    return dtype


def get_total_norm(tensors: Iterable[Tensor] | Tensor, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False,
                   foreach: bool | None = None) -> Tensor:
    r"""The ``norm_type``-norm of ``tensors`` viewed as one vector.

    Parameters
    ----------
    tensors : Tensor or iterable of Tensor
        Usually the gradients, ``[p.grad for p in params if p.grad is not None]``.
    norm_type : float, default 2.0
        Any real: ``inf`` (max ``|x|``), ``-inf`` (min ``|x|``), ``0`` (number
        of non-zeros of the per-tensor norms, as torch counts), ``p``.
    error_if_nonfinite : bool, default False
        Raise when the total is NaN or infinite.
    foreach : ignored
        Accepted so torch code runs unchanged.

    Returns
    -------
    Tensor
        0-d, of the tensors' common dtype (the default dtype when empty, 0).

    Raises
    ------
    RuntimeError
        With ``error_if_nonfinite=True``, when the total norm is not finite.
    """
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return tensor(0.0)
    arrays = [t._arr for t in tensors]
    dtype = _float_dtype(arrays, "get_total_norm")
    # each per-tensor norm in its own dtype, then the norm of the norms
    norms = np.array(
        [a.dtype.type(_k.vector_norm(_flat(a), norm_type)) for a in arrays],
        dtype=dtype,
    )
    total = dtype.type(_k.vector_norm(norms, norm_type))
    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the "
            "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`"
        )
    return tensor(total, dtype=dtype)


def clip_grads_with_norm_(parameters: Iterable[Tensor] | Tensor, max_norm: float,
                          total_norm: Tensor, foreach: bool | None = None) -> None:
    r"""Scale every gradient by ``min(max_norm / (total_norm + 1e-6), 1)``.

    The coefficient is formed in ``total_norm``'s dtype as torch forms it
    (``(1 / (total + 1e-6)) * max_norm``) and rounded to each gradient's dtype;
    a NaN total makes every gradient NaN.  Parameters without a gradient are
    ignored.

    Parameters
    ----------
    parameters : Tensor or iterable of Tensor
    max_norm : float
    total_norm : Tensor or float
        Usually :func:`get_total_norm` of the gradients.
    foreach : ignored
    """
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return
    if isinstance(total_norm, Tensor):
        total = total_norm._arr
        dtype = total.dtype if total.dtype.kind == "f" else np.dtype(np.float32)
        total = dtype.type(total.reshape(()))
    else:
        dtype = np.dtype(get_default_dtype())
        total = dtype.type(total_norm)
    _float_dtype([g._arr for g in grads], "clip_grads_with_norm_")
    with np.errstate(all="ignore"):
        coef = (dtype.type(1) / (total + dtype.type(1e-6))) * dtype.type(max_norm)
    if coef > 1:  # torch.clamp(max=1) keeps a NaN
        coef = dtype.type(1)
    if coef == 1:  # x * 1 is exact: nothing would change
        return
    for g in grads:
        arr = g._arr
        if arr.flags.c_contiguous:
            _k.scale(arr.reshape(-1), float(coef))
        else:
            arr *= arr.dtype.type(coef)
        g._bump_version()


def clip_grad_norm_(parameters: Iterable[Tensor] | Tensor, max_norm: float,
                    norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach: bool | None = None) -> Tensor:
    r"""Scale the gradients in place so that their joint norm is at most ``max_norm``.

    :func:`get_total_norm` of the gradients, then
    :func:`clip_grads_with_norm_` with it.  On an error nothing is scaled.

    Parameters
    ----------
    parameters : Tensor or iterable of Tensor
    max_norm : float
    norm_type : float, default 2.0
    error_if_nonfinite : bool, default False
    foreach : ignored

    Returns
    -------
    Tensor
        The total norm before clipping (0-d, the gradients' dtype; 0 in the
        default dtype when no parameter has a gradient).

    Raises
    ------
    RuntimeError
        With ``error_if_nonfinite=True``, when the total norm is not finite.
    """
    parameters = _as_list(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters: Iterable[Tensor] | Tensor, max_norm: float,
                   norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: bool | None = None) -> Tensor:
    """Deprecated alias of :func:`clip_grad_norm_` (warns, as torch does)."""
    warnings.warn(
        "`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
        "`torch.nn.utils.clip_grad_norm_`.",
        FutureWarning,
        stacklevel=2,
    )
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters: Iterable[Tensor] | Tensor, clip_value: float,
                     foreach: bool | None = None) -> None:
    r"""Clamp every gradient into ``[-clip_value, clip_value]`` in place.

    NaN stays NaN (torch's ``clamp``); parameters without a gradient are ignored.

    Parameters
    ----------
    parameters : Tensor or iterable of Tensor
    clip_value : float
    foreach : ignored
    """
    clip_value = float(clip_value)
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if grads:
        _float_dtype([g._arr for g in grads], "clip_grad_value_")
    for g in grads:
        arr = g._arr
        if arr.flags.c_contiguous:
            _k.clamp(arr.reshape(-1), -clip_value, clip_value)
        else:
            lo, hi = arr.dtype.type(-clip_value), arr.dtype.type(clip_value)
            # NaN-keeping, as torch: where(a < lo, lo, a), then where(a > hi, hi, a)
            np.copyto(arr, lo, where=arr < lo)
            np.copyto(arr, hi, where=arr > hi)
        g._bump_version()

