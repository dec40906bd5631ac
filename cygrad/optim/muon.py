"""Muon: momentum orthogonalised by a bfloat16 Newton-Schulz iteration."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from cygrad._kernels import optim_muon as _km

from .optimizer import Optimizer, flat_state, zeros_state

if TYPE_CHECKING:
    from cygrad._tensor import Tensor
    from cygrad._typing import Params

__all__ = ["Muon"]

EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5


def _check_newton_schulz(ns_coefficients, ns_steps):
    if ns_steps >= 100:
        raise ValueError(
            "Number of steps must be less than 100 for computational efficiency"
        )
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")


def zeropower_via_newtonschulz(update, ns_coefficients, ns_steps, eps):
    """The orthogonalised ``update`` (a 2-D array), as torch computes it.

    In bfloat16 (stored as float32): ``X = bf16(update)``, transposed if it
    has more rows than columns; ``X = X / max(norm(X), eps)``; then
    ``ns_steps`` times ``G = X X^T``, ``U = b G + c G G``, ``X = a X + U X``,
    each result rounded to bfloat16 and every product accumulated in float32.

    Returns
    -------
    ndarray of float32, ``update``'s shape, holding bfloat16 values.
    """
    _check_newton_schulz(ns_coefficients, ns_steps)
    if update.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    a, b, c = (np.float32(v) for v in ns_coefficients)
    rows, cols = update.shape
    x = np.empty(update.shape, np.float32)
    _km.to_bf16(np.ascontiguousarray(update).reshape(-1), x.reshape(-1))
    if rows > cols:
        x = np.ascontiguousarray(x.T)
    norm = np.float32(_km.bf16_norm(x.reshape(-1)))
    floor = np.array([eps], np.float32)  # clamp(min=eps) of a bfloat16 tensor
    _km.to_bf16(floor, floor)
    _km.bf16_div(x.reshape(-1), float(max(norm, floor[0])))
    m = x.shape[0]
    gram = np.empty((m, m), np.float32)
    prod = np.empty((m, m), np.float32)
    step = np.empty_like(x)
    for _ in range(ns_steps):
        np.matmul(x, x.T, out=gram)
        _km.to_bf16(gram.reshape(-1), gram.reshape(-1))
        np.matmul(gram, gram, out=prod)
        _km.bf16_axpby(prod.reshape(-1), float(b), gram.reshape(-1), float(c),
                       prod.reshape(-1))
        np.matmul(prod, x, out=step)
        _km.bf16_axpby(x.reshape(-1), float(a), x.reshape(-1), 1.0, step.reshape(-1))
    if rows > cols:
        x = np.ascontiguousarray(x.T)
    return x


def adjust_lr(lr, adjust_lr_fn, shape):
    """torch's rate scaling: ``sqrt(max(1, A / B))`` ("original", default) or
    ``0.2 * sqrt(max(A, B))`` ("match_rms_adamw")."""
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, rows / cols))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(rows, cols))
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    r"""Muon (torch's ``torch.optim.Muon``), for 2-D parameters.

    For each parameter ``p`` with a gradient ``g``, in place::

        buf = buf + (1 - momentum) * (g - buf)                 # a lerp
        u = g + momentum * (buf - g) if nesterov else buf      # a lerp
        O = NewtonSchulz(u)                                    # in bfloat16
        p = p * (1 - lr * weight_decay)
        p = p - adjust_lr(lr, adjust_lr_fn, p.shape) * O

    ``NewtonSchulz`` is :func:`zeropower_via_newtonschulz` with
    ``ns_coefficients = (a, b, c)``, ``ns_steps`` and ``eps``; it runs in
    bfloat16 where torch does (the roundings are compiled, the matrix
    products are float32 BLAS), so the trajectory is torch's, not that of a
    float64 variant.  ``buf`` starts at zero.  State: ``momentum_buffer``.

    Parameters
    ----------
    params : iterable of Tensor or dict
        2-D parameters only.
    lr : float, default 1e-3
    weight_decay : float, default 0.1
    momentum : float, default 0.95
    nesterov : bool, default True
    ns_coefficients : (float, float, float), default (3.4445, -4.7750, 2.0315)
    eps : float, default 1e-7
    ns_steps : int, default 5
    adjust_lr_fn : None, "original" or "match_rms_adamw"

    Raises
    ------
    ValueError
        torch's messages: ``"Learning rate should be >= 0 but is: ..."``,
        ``"momentum should be >= 0 but is: ..."``, ``"weight decay should be >=
        0 but is: ..."``, an unknown ``adjust_lr_fn``, a parameter that is not
        2-D; at ``step``, ``ns_steps >= 100`` or not three coefficients.
    """

    def __init__(self, params: Params, lr: float | Tensor = 1e-3,
                 weight_decay: float = 0.1, momentum: float = 0.95,
                 nesterov: bool = True,
                 ns_coefficients: tuple[float, float, float] = (
                     DEFAULT_A, DEFAULT_B, DEFAULT_C),
                 eps: float = EPS, ns_steps: int = DEFAULT_NS_STEPS,
                 adjust_lr_fn: str | None = None) -> None:
        defaults = {
            "lr": lr,
            "weight_decay": weight_decay,
            "momentum": momentum,
            "nesterov": nesterov,
            "ns_coefficients": ns_coefficients,
            "eps": eps,
            "ns_steps": ns_steps,
            "adjust_lr_fn": adjust_lr_fn,
        }
        super().__init__(params, defaults)

    def _validate(self, group):
        if not 0.0 <= group["lr"]:
            raise ValueError(f"Learning rate should be >= 0 but is: {group['lr']}")
        if not 0.0 <= group["momentum"]:
            raise ValueError(f"momentum should be >= 0 but is: {group['momentum']}")
        if not 0.0 <= group["weight_decay"]:
            raise ValueError(
                f"weight decay should be >= 0 but is: {group['weight_decay']}"
            )
        fn = group["adjust_lr_fn"]
        if fn is not None and fn not in ["original", "match_rms_adamw"]:
            raise ValueError(f"Adjust learning rate function {fn} is not supported")
        for p in group["params"]:
            if p.ndim != 2:
                raise ValueError(
                    "Muon only supports 2D parameters whereas we found a parameter "
                    f"with size: {p.shape}"
                )

    def _update(self, group, items):
        lr = float(group["lr"])
        weight_decay = float(group["weight_decay"])
        momentum = float(group["momentum"])
        nesterov = bool(group["nesterov"])
        # the iteration's own checks, made before any state changes
        _check_newton_schulz(group["ns_coefficients"], group["ns_steps"])
        for p, arr, grad in items:
            st = self.state[p]
            if "momentum_buffer" not in st:
                st["momentum_buffer"] = zeros_state(p)
            buf_t = st["momentum_buffer"]
            update = np.empty_like(arr)
            _km.momentum(grad, flat_state(buf_t), update, momentum, nesterov)
            buf_t._bump_version()
            ortho = zeropower_via_newtonschulz(
                update.reshape(p._arr.shape), group["ns_coefficients"],
                group["ns_steps"], group["eps"],
            )
            alpha = -adjust_lr(lr, group["adjust_lr_fn"], p._arr.shape)
            _km.apply(arr, ortho.reshape(-1), 1 - lr * weight_decay, alpha)
            p._bump_version()
