"""``cygrad.nn.attention``: choosing scaled-dot-product-attention backends.

cygrad runs one CPU implementation of ``F.scaled_dot_product_attention``
(``cygrad/nn/_functional_attention.py``) whatever backend is chosen: the
choice only decides, as on torch's CPU build, whether a call may run (see
``cygrad/nn/_sdp.py``): with MATH allowed every call runs; with only
FLASH_ATTENTION allowed, inputs torch's CPU flash kernel refuses (dropout,
not 4-d, mismatched batch or heads, other head sizes, a 3-d mask, a last
dimension of stride > 1) warn torch's reason and raise "No available
kernel"; with neither allowed (only EFFICIENT_ATTENTION, CUDNN_ATTENTION or
OVERRIDEABLE, or nothing) a call raises "No viable backend".

The flash-attention implementation registry (``register_flash_attention_impl``
and friends) keeps torch's API; cygrad registers no implementation (torch's
FA3/FA4 are CUDA libraries), so the list starts empty.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Any

from cygrad.nn import _sdp
from cygrad.nn._sdp import SDPBackend

__all__ = [
    "WARN_FOR_UNFUSED_KERNELS",
    "SDPBackend",
    "activate_flash_attention_impl",
    "current_flash_attention_impl",
    "list_flash_attention_impls",
    "register_flash_attention_impl",
    "restore_flash_attention_impl",
    "sdpa_kernel",
]

# torch warns why fused kernels were skipped when this is set; cygrad has no
# fused kernel to skip, so it is kept for scripts that set it
WARN_FOR_UNFUSED_KERNELS = False


@contextlib.contextmanager
def sdpa_kernel(backends: list[SDPBackend] | SDPBackend,
                set_priority: bool = False) -> Iterator[dict[Any, Any]]:
    """Allow only ``backends`` for ``F.scaled_dot_product_attention`` inside the
    block (a context manager and, as torch's, a decorator).

    Parameters
    ----------
    backends : SDPBackend or list of SDPBackend
        The backends allowed (a list may repeat one; other items in a list
        allow nothing, as torch).
    set_priority : bool
        Also make the list's order the backends' priority (kept and restored
        as torch's; cygrad's one implementation does not depend on it).

    Raises
    ------
    AssertionError
        ``backends`` is neither an ``SDPBackend`` nor a list (torch's check).
    """
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError(  # noqa: TRY004 (torch's type)
            "Backend must be an instance of SDPBackend or a list of SDPBackend "
            f"instances, got {type(backends).__name__}")
    if isinstance(backends, SDPBackend):
        backends = [backends]
    backends = list(dict.fromkeys(backends))
    previous = _sdp.enabled()
    previous_priority = _sdp.priority()
    try:
        _apply(backends, set_priority)
        yield {}
    finally:
        _apply(previous, False)
        if set_priority:
            _sdp.set_priority(previous_priority)


def _apply(backends, set_priority):
    allowed = [b for b in backends if isinstance(b, SDPBackend)]
    for b in SDPBackend:
        if b is not SDPBackend.ERROR:
            _sdp.set_enabled(b, b in allowed)
    if set_priority:
        order = [int(b) for b in allowed]
        order += [p for p in _sdp.priority() if p not in order]
        _sdp.set_priority(order)


class SDPAParams:
    """The inputs of one attention call, for ``can_use_*_attention`` (torch's
    positional order)."""

    def __init__(self, query: Any, key: Any, value: Any, attn_mask: Any,
                 dropout: float, is_causal: bool, enable_gqa: bool = False) -> None:
        self.query, self.key, self.value = query, key, value
        self.attn_mask, self.dropout = attn_mask, float(dropout)
        self.is_causal, self.enable_gqa = bool(is_causal), bool(enable_gqa)


def can_use_flash_attention(params: SDPAParams, debug: bool = False) -> bool:
    """False: torch's answer without CUDA (this asks about the CUDA kernel)."""
    return False


def can_use_efficient_attention(params: SDPAParams, debug: bool = False) -> bool:
    """False: torch's answer without CUDA (this asks about the CUDA kernel)."""
    return False


_FLASH_IMPLS: dict[str, Callable[..., Any]] = {}
_FLASH_ACTIVE: list[Any] = []


def register_flash_attention_impl(impl: str, *,
                                  register_fn: Callable[..., Any]) -> None:
    """Record ``register_fn`` as the way to install flash-attention ``impl``."""
    _FLASH_IMPLS[impl] = register_fn


def list_flash_attention_impls() -> list[str]:
    """Names of the registered flash-attention implementations."""
    return list(_FLASH_IMPLS)


def current_flash_attention_impl() -> str | None:
    """The active implementation's name, or None (the default)."""
    return _FLASH_ACTIVE[0][0] if _FLASH_ACTIVE else None


def activate_flash_attention_impl(impl: str) -> None:
    """Call the registered ``register_fn`` of ``impl`` and mark it active."""
    restore_flash_attention_impl(_raise_warn=False)
    register_fn = _FLASH_IMPLS.get(impl)
    if register_fn is None:
        raise ValueError(
            f"Unknown flash attention impl '{impl}'. Available implementations: "
            f"{list_flash_attention_impls()}")
    _FLASH_ACTIVE[:] = [(impl, register_fn())]


def restore_flash_attention_impl(_raise_warn: bool = True) -> None:
    """Back to the default implementation: the active one's handle (what its
    ``register_fn`` returned) is removed when it has ``remove()``."""
    handle = _FLASH_ACTIVE[0][1] if _FLASH_ACTIVE else None
    if handle is not None and hasattr(handle, "remove"):
        handle.remove()
    elif _raise_warn:
        logging.getLogger(__name__).warning(
            "Trying to restore default FA2 impl when no custom impl was activated")
    _FLASH_ACTIVE.clear()
