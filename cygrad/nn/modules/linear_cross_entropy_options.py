"""``LinearCrossEntropyOptions``: torch's tuning knobs of
``F.linear_cross_entropy`` (chunking and accumulation precision), validated
as torch validates them.

cygrad computes the loss as one ``linear`` then ``cross_entropy`` whatever
the options say: the numbers are those of the unchunked computation (which
torch's chunked path approximates to rounding), and the logits are held in
memory whole.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from cygrad.dtypes import bfloat16, float16, float32, float64

__all__ = ["LinearCrossEntropyOptions"]

_ACC_POLICIES = {"auto", "accurate", "balanced", "compact"}


@dataclasses.dataclass(slots=True, frozen=True)
class LinearCrossEntropyOptions:
    """Chunking and accumulation options of ``F.linear_cross_entropy``.

    Parameters
    ----------
    allow_retain_graph : bool
        torch: keep what a second backward through the loss needs.
    batch_chunk_size : int, optional
        torch: rows per chunk (positive), or chosen by ``chunking_method``.
    chunking_method : str, optional
        ``"auto"`` or ``"aspect_ratio[:k]"`` (k a positive integer).
    acc_policy : {"auto", "accurate", "balanced", "compact"}
        torch: precision of the chunked accumulation.
    acc_dtype : dtype, optional
        float16, bfloat16, float32 or float64.
    """

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: Literal["accurate", "balanced", "compact", "auto"] = "auto"
    acc_dtype: Any = None

    def __post_init__(self) -> None:
        if self.acc_policy not in _ACC_POLICIES:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        method = self.chunking_method
        if method is not None and method != "auto":
            name, sep, factor = method.partition(":")
            factor = factor if sep else "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"invalid chunking_method: {method!r}")
        size = self.batch_chunk_size
        if not (size is None or (isinstance(size, int) and size > 0)):
            raise ValueError(
                f"batch_chunk_size must be positive int or None, got {size!r}")
        allowed = (float16, bfloat16, float32, float64)
        if self.acc_dtype is not None and self.acc_dtype not in allowed:
            raise ValueError(
                "acc_dtype must be one of {None, torch.float16, torch.bfloat16, "
                f"torch.float32, torch.float64}}, got {self.acc_dtype!r}. Pass "
                "acc_dtype=None to let the op pick automatically.")
