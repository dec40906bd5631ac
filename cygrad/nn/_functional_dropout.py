"""Dropout in its forms: elementwise (``dropout``), per channel (``dropout1d``,
``dropout2d``, ``dropout3d``), and the SELU-preserving ``alpha_dropout`` /
``feature_alpha_dropout``.

Masks are torch's: after the same ``manual_seed`` the same elements are
dropped.  A mask is torch's ``bernoulli_(1 - p)`` (one uniform double per
element, kept below 1 - p, ``cygrad._kernels.rng``) times ``1 / (1 - p)``
in the input's dtype; the output is one compiled multiply by it, whose
backward is ``grad * multiplier``.  ``inplace=True`` writes the result into the input
(``copy_``'s autograd rules: the input's history continues through it).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np

from cygrad import ops
from cygrad.autograd.grad_mode import is_grad_enabled, no_grad
from cygrad.creation import _in_layout, _mt, from_numpy

if TYPE_CHECKING:
    from cygrad._tensor import Tensor

__all__ = [
    "alpha_dropout",
    "dropout",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "feature_alpha_dropout",
]

# SELU's negative saturation value, -scale * alpha (Klambauer et al. 2017).
_ALPHA_PRIME = -1.7580993408473766


def _check_p(p):
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _keep_mask(shape, p, dtype, value=1.0):
    """``value`` with probability ``1 - p``, else 0: an array of ``shape`` in
    the floating ``dtype`` (torch's ``bernoulli_(1 - p)``, drawn in C order;
    float16 is filled in float32 and rounded, ``value`` being a float16)."""
    dt = np.dtype(dtype)
    work = dt if dt in (np.float32, np.float64) else np.dtype(np.float32)
    m = np.empty(shape, work)
    _mt(None).bernoulli_fill(m.reshape(-1), 1.0 - p, float(value))
    return m if work == dt else m.astype(dt)


def _apply(input, fn, inplace):
    """``fn(input)``, or written back into ``input`` when ``inplace``."""
    if not inplace:
        return fn(input)
    if is_grad_enabled() and input.requires_grad:
        # fn reads a copy, so that the write below cannot invalidate what
        # its backward saved.
        return input.copy_(fn(input.clone()))
    with no_grad():
        out = fn(input)
    return input.copy_(out)


def scaled_keep(shape, p, dtype):
    """The dropout multiplier ``keep / (1 - p)``, an array of ``shape`` in the
    floating ``dtype`` drawn as torch draws it
    (also the attention weights' dropout and the RNNs' between layers)."""
    dt = np.dtype(dtype)
    if p >= 1.0:
        return np.zeros(shape, dt)
    # torch's noise.div_(1 - p): 1 / (1 - p) rounded in the dtype
    return _keep_mask(shape, p, dt, dt.type(1.0) / dt.type(1.0 - p))


def _scaled_mask(input, mask_shape, p):
    dt = np.dtype(input.dtype)
    if dt.kind != "f":
        raise RuntimeError(f"dropout: expected a floating point input, got {dt}")
    if tuple(mask_shape) == tuple(input.shape):
        # torch draws into empty_like(input), whose layout is the input's:
        # the draws go in the input's memory order
        return _in_layout(input._arr, lambda shape, contig: scaled_keep(shape, p, dt))
    return scaled_keep(mask_shape, p, dt)


def _feature_dropout(input, p, inplace, mask_shape):
    def fn(x):
        return ops.mul(x, from_numpy(_scaled_mask(x, mask_shape, p)))
    return _apply(input, fn, inplace)


def dropout(input: Tensor, p: float = 0.5, training: bool = True,
            inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p``, scale the rest by ``1/(1-p)``.

    Parameters
    ----------
    input : floating Tensor, any shape
    p : float in [0, 1]
    training : bool
        When False (or ``p == 0``) the input is returned unchanged.
    inplace : bool
        Write the result into ``input``.
    """
    _check_p(p)
    if not training or p == 0.0:
        return input
    return _feature_dropout(input, p, inplace, tuple(input.shape))


def _channel_shape(shape, batched):
    """Mask shape keeping the batch and channel dims, 1 elsewhere."""
    lead = 2 if batched else 1
    return tuple(shape[:lead]) + (1,) * (len(shape) - lead)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (C, L) or (N, C, L) with probability ``p``."""
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. "
            "Note that dropout1d exists to provide channel-wise dropout on inputs "
            "with 1 spatial dimension, a channel dimension, and an optional batch "
            "dimension (i.e. 2D or 3D inputs).")
    if not training or p == 0.0:
        return input
    shape = _channel_shape(tuple(input.shape), input.ndim == 3)
    return _feature_dropout(input, p, inplace, shape)


def _nd_dropout(input, p, training, inplace, spatial, name):
    _check_p(p)
    ndim = input.ndim
    batched = True
    if ndim == spatial + 1 and spatial == 2:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that "
            "channel-wise 1D dropout behavior is desired - input is interpreted as "
            "shape (N, C, L), where C is the channel dim. This behavior will change "
            "in a future release to interpret the input as one without a batch "
            "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise "
            "dropout behavior, please switch to using dropout1d instead.",
            UserWarning, stacklevel=3)
    elif ndim == spatial + 1:
        batched = False
    elif ndim != spatial + 2:
        warnings.warn(
            f"{name}: Received a {ndim}-D input to {name}, which is deprecated and "
            "will result in an error in a future release. To retain the behavior "
            "and silence this warning, please use dropout instead. Note that "
            f"{name} exists to provide channel-wise dropout on inputs with "
            f"{spatial} spatial dimensions, a channel dimension, and an optional "
            f"batch dimension (i.e. {spatial + 1}D or {spatial + 2}D inputs).",
            UserWarning, stacklevel=3)
    if not training or p == 0.0:
        return input
    shape = tuple(input.shape)
    mask = _channel_shape(shape, batched) if len(shape) >= 2 else shape
    return _feature_dropout(input, p, inplace, mask)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (C, H, W) or (N, C, H, W) with probability ``p``
    (a 3-D input is read as (N, C, L) with a warning, as torch)."""
    return _nd_dropout(input, p, training, inplace, 2, "dropout2d")


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (C, D, H, W) or (N, C, D, H, W) with probability
    ``p``."""
    return _nd_dropout(input, p, training, inplace, 3, "dropout3d")


def _alpha(input, p, training, inplace, mask_shape):
    _check_p(p)
    if not training or p == 0.0:
        return input
    dt = np.dtype(input.dtype)
    if p == 1.0:
        def fn(x):
            return ops.mul(x, from_numpy(np.zeros(mask_shape(x), dt)))
        return _apply(input, fn, inplace)
    # keep -> a x + b; drop -> a alpha' + b, with a, b chosen so that a unit
    # normal input keeps zero mean and unit variance.
    a = (1.0 - p) * (1.0 + p * _ALPHA_PRIME ** 2)
    a = a ** -0.5
    b = -a * _ALPHA_PRIME * p

    def fn(x):
        keep = _keep_mask(mask_shape(x), p, dt)
        scale = keep * dt.type(a)
        shift = (1 - keep) * dt.type(a * _ALPHA_PRIME) + dt.type(b)
        return ops.add(ops.mul(x, from_numpy(scale)), from_numpy(shift))
    return _apply(input, fn, inplace)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                  inplace: bool = False) -> Tensor:
    """Dropout that keeps SELU's self-normalising mean and variance: dropped
    elements take SELU's saturation value, then ``a * x + b`` restores the
    moments (``training`` defaults to False, as torch)."""
    return _alpha(input, p, training, inplace, lambda x: tuple(x.shape))


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    """``alpha_dropout`` with one draw per channel (dims after the second are
    shared)."""
    def shape(x):
        s = tuple(x.shape)
        return s[:2] + (1,) * (len(s) - 2)
    return _alpha(input, p, training, inplace, shape)
