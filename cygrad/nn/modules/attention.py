"""``MultiheadAttention`` with torch's parameter names, initialisation, mask
conventions and return values, on the attention node of
``cygrad.nn._functional_attention``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from cygrad.creation import empty, get_default_dtype

from .. import functional as F
from .. import init
from .._functional_mha import _mha
from ..module import Module
from ..parameter import Parameter
from .linear import NonDynamicallyQuantizableLinear

if TYPE_CHECKING:
    from cygrad._tensor import Tensor
    from cygrad._typing import Device, DType

__all__ = ["MultiheadAttention", "NonDynamicallyQuantizableLinear"]


class MultiheadAttention(Module):
    r"""``out_proj(concat_h softmax(q_h k_h^T / sqrt(d) + mask) v_h)``.

    Parameters
    ----------
    embed_dim, num_heads : int
        ``embed_dim`` must be divisible by ``num_heads`` (head size ``d``).
    dropout : float
        On the attention weights, in training mode.
    bias : bool
        ``in_proj_bias`` and ``out_proj.bias``.
    add_bias_kv : bool
        Learned ``bias_k``, ``bias_v`` (1, 1, E) appended to the keys/values.
    add_zero_attn : bool
        A zero key/value appended per head.
    kdim, vdim : int, optional
        Key/value feature sizes (default ``embed_dim``); when either differs,
        the projections are ``q_proj_weight``, ``k_proj_weight``,
        ``v_proj_weight`` instead of one ``in_proj_weight`` (3E, E).
    batch_first : bool
        Inputs/outputs ``(N, L, E)`` instead of ``(L, N, E)``.

    ``forward(query, key, value, key_padding_mask=None, need_weights=True,
    attn_mask=None, average_attn_weights=True, is_causal=False)`` returns
    ``(attn_output, attn_weights or None)``.  Masks: ``True`` (bool) means
    *not allowed*; float masks are added.  ``key_padding_mask`` (N, S);
    ``attn_mask`` (L, S) or (N * num_heads, L, S).
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0,
                 bias: bool = True, add_bias_kv: bool = False,
                 add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False,
                 device: Device | None = None, dtype: DType | None = None) -> None:
        super().__init__()
        if device not in (None, "cpu"):
            raise ValueError(f"cygrad runs on the CPU only, got device={device!r}")
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                f"embed_dim and num_heads must be greater than 0, got embed_dim="
                f"{embed_dim} and num_heads={num_heads} instead")
        self.embed_dim = int(embed_dim)
        self.kdim = int(kdim) if kdim is not None else self.embed_dim
        self.vdim = int(vdim) if vdim is not None else self.embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = int(num_heads)
        self.dropout = float(dropout)
        self.batch_first = bool(batch_first)
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        dt = np.dtype(get_default_dtype() if dtype is None else dtype)
        e = self.embed_dim
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(empty(e, e, dtype=dt))
            self.k_proj_weight = Parameter(empty(e, self.kdim, dtype=dt))
            self.v_proj_weight = Parameter(empty(e, self.vdim, dtype=dt))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(empty(3 * e, e, dtype=dt))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(empty(3 * e, dtype=dt))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(e, e, bias=bias, dtype=dt)
        if add_bias_kv:
            self.bias_k = Parameter(empty(1, 1, e, dtype=dt))
            self.bias_v = Parameter(empty(1, 1, e, dtype=dt))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = bool(add_zero_attn)
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(self, query: Tensor, key: Tensor, value: float,
                key_padding_mask: Tensor | None = None, need_weights: bool = True,
                attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> Any:
        separate = not self._qkv_same_embed_dim
        return _mha(
            F.linear, query, key, value, self.embed_dim, self.num_heads,
            self.in_proj_weight, self.in_proj_bias, self.bias_k, self.bias_v,
            self.add_zero_attn,
            self.dropout, self.out_proj.weight, self.out_proj.bias,
            training=self.training, key_padding_mask=key_padding_mask,
            need_weights=need_weights, attn_mask=attn_mask,
            use_separate_proj_weight=separate, q_proj_weight=self.q_proj_weight,
            k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal,
            batch_first=self.batch_first)

