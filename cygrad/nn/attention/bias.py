"""``cygrad.nn.attention.bias``: causal masks that say how they are aligned.

``causal_upper_left(L, S)`` lets query ``i`` see keys ``j <= i``;
``causal_lower_right(L, S)`` aligns the diagonal with the last key, so query
``i`` sees keys ``j <= i + S - L`` (for ``L == S`` the two agree).  Passed as
``attn_mask`` to ``F.scaled_dot_product_attention``, an upper-left bias (or
any square one) runs as ``is_causal=True`` and a lower-right one as its
materialised boolean mask (which is how torch runs it on a CPU).  Unlike
torch's, cygrad's ``CausalBias`` is not a Tensor subclass: it is accepted by
``scaled_dot_product_attention`` and ``_materialize()`` gives the Tensor.
"""

from __future__ import annotations

import enum
import warnings
from typing import Any

import numpy as np

from cygrad.creation import from_numpy

__all__ = ["CausalBias", "CausalVariant", "causal_lower_right", "causal_upper_left"]


class CausalVariant(enum.IntEnum):
    """Where the causal diagonal starts: the top-left corner or the
    bottom-right one."""

    UPPER_LEFT = 1
    LOWER_RIGHT = 2


class CausalBias:
    """A causal attention mask of ``seq_len_q`` x ``seq_len_kv``, kept as its
    variant and sizes until ``scaled_dot_product_attention`` uses it."""

    def __init__(self, variant: CausalVariant, seq_len_q: int,
                 seq_len_kv: int) -> None:
        if not isinstance(variant, CausalVariant):
            raise AssertionError(  # noqa: TRY004 (torch's type)
                f"variant must be a CausalVariant, got {type(variant).__name__}")
        self.variant = variant
        self.seq_len_q = seq_len_q
        self.seq_len_kv = seq_len_kv
        if seq_len_q > seq_len_kv and variant == CausalVariant.LOWER_RIGHT:
            warnings.warn("Lower right causal bias will produce NaNs in the output "
                          "when seq_len_q > seq_len_kv!", stacklevel=2)

    @property
    def shape(self) -> tuple[int, int]:
        return (self.seq_len_q, self.seq_len_kv)

    def _materialize(self, device: Any = None) -> Any:
        """The mask as a bool Tensor (True: may attend)."""
        offset = 0
        if self.variant == CausalVariant.LOWER_RIGHT:
            offset = self.seq_len_kv - self.seq_len_q
        ones = np.ones((self.seq_len_q, self.seq_len_kv), dtype=bool)
        return from_numpy(np.tril(ones, k=offset))

    def _sdpa_args(self, is_causal: bool) -> tuple[Any, bool]:
        """(attn_mask, is_causal) for ``scaled_dot_product_attention``."""
        if is_causal:
            raise ValueError("CausalBias should not be used with causal=True")
        if (self.seq_len_q == self.seq_len_kv
                or self.variant == CausalVariant.UPPER_LEFT):
            return None, True
        return self._materialize(), False

    def __repr__(self) -> str:
        return repr(self._materialize())


def causal_upper_left(*size: int) -> CausalBias:
    """An upper-left causal bias of ``size = (seq_len_q, seq_len_kv)``."""
    if len(size) != 2:
        raise AssertionError("causal_upper_left only supports 2D tensors")
    return CausalBias(CausalVariant.UPPER_LEFT, size[0], size[1])


def causal_lower_right(*size: int) -> CausalBias:
    """A lower-right causal bias of ``size = (seq_len_q, seq_len_kv)``."""
    if len(size) != 2:
        raise AssertionError("causal_lower_right only supports 2D tensors")
    return CausalBias(CausalVariant.LOWER_RIGHT, size[0], size[1])
