"""Which scaled-dot-product-attention backends the user allows (process-wide,
as torch's flags), and torch's CPU choice among them.

cygrad has one implementation of ``F.scaled_dot_product_attention`` and every
backend name runs it.  What the flags change is whether a call may run at
all, as on torch's CPU build: torch there picks flash attention when it is
allowed and its constraints hold, else the math kernel when that is
allowed; efficient, cuDNN and overrideable attention never run on a CPU.
So a call with neither FLASH_ATTENTION nor MATH allowed raises "No viable
backend", and one allowed only flash attention whose inputs it cannot take
warns torch's reason and raises "No available kernel".  ``sdpa_kernel``
(``cygrad.nn.attention``) and ``cygrad.backends.cuda.enable_*_sdp`` set the
flags.
"""

from __future__ import annotations

import enum
import warnings


class SDPBackend(enum.Enum):
    """The attention backends torch names (its values; ``int()`` gives them)."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    def __int__(self) -> int:
        return self.value

    def __index__(self) -> int:
        return self.value

    def __repr__(self) -> str:
        return f"<SDPBackend.{self.name}: {self.value}>"


_ALL = (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH,
        SDPBackend.CUDNN_ATTENTION, SDPBackend.OVERRIDEABLE)
_enabled = set(_ALL)
_priority = [int(b) for b in _ALL]


def enabled() -> list[SDPBackend]:
    """The allowed backends, in torch's flag order (cudnn, flash, efficient,
    math, overrideable)."""
    order = (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION,
             SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH, SDPBackend.OVERRIDEABLE)
    return [b for b in order if b in _enabled]


def set_enabled(backend: SDPBackend, on: bool) -> None:
    if on:
        _enabled.add(backend)
    else:
        _enabled.discard(backend)


def is_enabled(backend: SDPBackend) -> bool:
    return backend in _enabled


def priority() -> list[int]:
    return list(_priority)


def set_priority(order: list[int]) -> None:
    _priority[:] = [int(b) for b in order]


def _flash_reason(query, key, value, attn_mask, dropout_p, enable_gqa):
    """Why torch's CPU flash attention would refuse these inputs (None: it
    takes them); its checks in its order, its words."""
    if dropout_p > 0.0:
        return "Both fused kernels do not support non-zero dropout."
    dims = (query.dim(), key.dim(), value.dim())
    if dims != (4, 4, 4):
        return ("All fused kernels requires query, key and value to be 4 dimensional, "
                f"but got Query dim: {dims[0]}, Key dim: {dims[1]}, Value dim: "
                f"{dims[2]} instead.")
    qs, ks, vs = (list(t.shape) for t in (query, key, value))
    if not qs[0] == ks[0] == vs[0]:
        return ("For dense inputs, both fused kernels require query, key and value to "
                f"have the same batch_size. Query.sizes(): {qs}, Key.sizes(): {ks}, "
                f"Value.sizes(): {vs} instead. To broadcast dense inputs, try using "
                "unsqueeze and expand_to before passing them into the kernel.")
    heads_ok = qs[1] == ks[1] == vs[1] or (
        enable_gqa and ks[1] == vs[1] and ks[1] and qs[1] % ks[1] == 0)
    if not heads_ok:
        return ("For dense input, both fused kernels require query, key and value to "
                f"have the same num_heads. Query.sizes(): {qs}, Key sizes(): {ks}, "
                f"Value sizes(): {vs} instead. To broadcast dense inputs, try using "
                "unsqueeze and expand_to before passing them into the kernel.")
    if attn_mask is not None:
        ms = list(attn_mask.shape)
        lq, sk = qs[2], ks[2]
        if len(ms) == 2:
            fits = ms[0] in (1, lq) and ms[1] in (1, sk)
        elif len(ms) == 4:
            fits = all(m in (1, n) for m, n in zip(ms, (qs[0], qs[1], lq, sk)))
        else:
            fits = False
        if not fits:
            return ("Please use the following attn mask shapes: 2d - ({Q_seq_len, 1}  "
                    "x {KV_seq_len, 1}); 4d - ({Batch, 1} x {Num_heads, 1} x "
                    "{Q_seq_len, 1}  x {KV_seq_len, 1})")
    if not qs[3] == ks[3] == vs[3]:
        return ("Flash attention requires q,k,v to have the same last dimension. Got "
                f"Query.size(-1): {qs[3]}, Key.size(-1): {ks[3]}, Value.size(-1): "
                f"{vs[3]} instead.")
    strides = [t.stride(-1) for t in (query, key, value)]
    if strides != [1, 1, 1]:
        return ("All fused kernels require the last dimension of the input to have "
                f"stride 1. Got Query.stride(-1): {strides[0]}, Key.stride(-1): "
                f"{strides[1]}, Value.stride(-1): {strides[2]}")
    return None


def check(query, key, value, attn_mask, dropout_p, enable_gqa) -> None:
    """Raise as torch's CPU build does when no allowed backend can run."""
    if 0 in tuple(query.shape[:-1]) or 0 in tuple(key.shape[:-1]):
        return      # empty attention: torch returns before choosing
    if SDPBackend.MATH in _enabled:
        return
    if SDPBackend.FLASH_ATTENTION not in _enabled:
        raise RuntimeError(
            "No viable backend for scaled_dot_product_attention was found. This is "
            "likely due to turning off both the math kernel and the fused kernels.")
    reason = _flash_reason(query, key, value, attn_mask, dropout_p, enable_gqa)
    if reason is None:
        return
    warnings.warn("Flash attention kernel not used because:", UserWarning,
                  stacklevel=3)
    warnings.warn(reason, UserWarning, stacklevel=3)
    raise RuntimeError("No available kernel.  Aborting execution.")


def flash_possible(query, key, value, attn_mask, dropout_p, enable_gqa) -> bool:
    return _flash_reason(query, key, value, attn_mask, dropout_p, enable_gqa) is None
