"""``MultiheadAttention`` with torch's parameter names, initialisation, mask
conventions and return values, on the attention node of
``cygrad.nn._functional_attention``."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from cygrad.creation import empty, from_numpy, get_default_dtype, zeros
from cygrad.ops.shape import cat

from .. import functional as F
from .. import init
from .._functional_attention import attention
from ..module import Module
from ..parameter import Parameter
from .linear import NonDynamicallyQuantizableLinear

if TYPE_CHECKING:
    from cygrad._tensor import Tensor
    from cygrad._typing import Device, DType

__all__ = ["MultiheadAttention", "NonDynamicallyQuantizableLinear"]


def _float_mask(mask, name, dtype):
    """Bool (True = masked out) or float (added) mask -> additive float Tensor."""
    if mask is None:
        return None
    md = mask._arr.dtype
    if md == np.bool_:
        return from_numpy(np.where(mask._arr, -np.inf, 0.0).astype(dtype))
    if md.kind != "f":
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask if md == dtype else mask.to(dtype)


def _pad_last(mask):
    """One more (zero) column on the last axis of an additive mask."""
    if mask is None:
        return None
    pad = zeros(*mask.shape[:-1], 1, dtype=mask._arr.dtype)
    return cat([mask, pad], -1)


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

    def _projections(self):
        e = self.embed_dim
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            ws = (w[0:e], w[e:2 * e], w[2 * e:])
        else:
            ws = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        b = self.in_proj_bias
        bs = (None, None, None) if b is None else (b[0:e], b[e:2 * e], b[2 * e:])
        return ws, bs

    def forward(self, query: Tensor, key: Tensor, value: float,
                key_padding_mask: Tensor | None = None, need_weights: bool = True,
                attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> Any:
        batched = query.dim() == 3
        packed = (batched and self.batch_first and query is key and key is value
                  and self._qkv_same_embed_dim and self.bias_k is None
                  and not self.add_zero_attn)
        x_in = query
        if batched and self.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        if not batched:
            if query.dim() != 2:
                raise AssertionError(
                    f"query should be unbatched 2D or batched 3D tensor but received "
                    f"{query.dim()}-D query tensor")
            query, key, value = (t.unsqueeze(1) for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        tgt_len, bsz, embed_dim = (int(s) for s in query.shape)
        h, hd = self.num_heads, self.head_dim
        if embed_dim != self.embed_dim:
            raise AssertionError(
                f"was expecting embedding dimension of {self.embed_dim}, but got "
                f"{embed_dim}")
        if key.dim() != 3 or value.dim() != 3 or key.shape[1] != bsz:
            raise AssertionError(
                f"key {list(key.shape)} and value {list(value.shape)} must be 3-D with "
                f"the query's batch size {bsz}")
        if key.shape[:2] != value.shape[:2]:
            raise AssertionError(
                f"key's sequence and batch dims {tuple(key.shape[:2])} do not match "
                f"value's {tuple(value.shape[:2])}")
        if key.shape[-1] != self.kdim or value.shape[-1] != self.vdim:
            raise AssertionError(
                f"was expecting key and value feature sizes ({self.kdim}, {self.vdim}),"
                f" but got ({key.shape[-1]}, {value.shape[-1]})")
        src_len = int(key.shape[0])
        dt = query._arr.dtype
        if is_causal and attn_mask is None:
            raise RuntimeError(
                "Need attn_mask if specifying the is_causal hint. You may use the "
                "Transformer module method `generate_square_subsequent_mask` to create "
                "this mask.")
        if key_padding_mask is not None and tuple(key_padding_mask.shape) != (
                bsz, src_len):
            raise AssertionError(
                f"expecting key_padding_mask shape of {(bsz, src_len)}, but got "
                f"{tuple(key_padding_mask.shape)}")
        kpm = _float_mask(key_padding_mask, "key_padding_mask", dt)
        mask = _float_mask(attn_mask, "attn_mask", dt)
        if mask is not None:
            if mask.dim() == 2:
                if tuple(mask.shape) != (tgt_len, src_len):
                    raise RuntimeError(
                        f"The shape of the 2D attn_mask is {_size(mask.shape)}, but "
                        f"should be {(tgt_len, src_len)}.")
                mask = mask.unsqueeze(0)
            elif mask.dim() == 3:
                if tuple(mask.shape) != (bsz * h, tgt_len, src_len):
                    raise RuntimeError(
                        f"The shape of the 3D attn_mask is {_size(mask.shape)}, but "
                        f"should be {(bsz * h, tgt_len, src_len)}.")
            else:
                raise RuntimeError(
                    f"attn_mask's dimension {mask.dim()} is not supported")
        if packed:
            return self._self_attention(x_in, mask, kpm, need_weights,
                                        average_attn_weights)
        (wq, wk, wv), (bq, bk, bv) = self._projections()
        q = F.linear(query, wq, bq)
        k = F.linear(key, wk, bk)
        v = F.linear(value, wv, bv)
        if self.bias_k is not None:
            k = cat([k, self.bias_k.expand(1, bsz, embed_dim)], 0)
            v = cat([v, self.bias_v.expand(1, bsz, embed_dim)], 0)
            mask = _pad_last(mask)
            kpm = _pad_last(kpm)
        q = q.reshape(tgt_len, bsz * h, hd).transpose(0, 1)
        k = k.reshape(k.shape[0], bsz * h, hd).transpose(0, 1)
        v = v.reshape(v.shape[0], bsz * h, hd).transpose(0, 1)
        if self.add_zero_attn:
            z = zeros(bsz * h, 1, hd, dtype=dt)
            k = cat([k, z], 1)
            v = cat([v, z], 1)
            mask = _pad_last(mask)
            kpm = _pad_last(kpm)
        s = int(k.shape[1])
        if kpm is not None:
            kpm = kpm.reshape(bsz, 1, 1, s).expand(bsz, h, 1, s).reshape(bsz * h, 1, s)
            mask = kpm if mask is None else mask + kpm
        p = self.dropout if self.training else 0.0
        out, weights = attention(q, k, v, mask, p, 1.0 / math.sqrt(hd),
                                 safe=not need_weights)
        out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = self.out_proj(out).reshape(tgt_len, bsz, embed_dim)
        if self.batch_first and batched:
            out = out.transpose(0, 1)
        if not batched:
            out = out.squeeze(1)
        if not need_weights:
            return out, None
        weights = weights.reshape(bsz, h, tgt_len, s)
        if average_attn_weights:
            weights = weights.mean(1)
        if not batched:
            weights = weights.squeeze(0)
        return out, weights


    def _self_attention(self, x, mask, kpm, need_weights, average_attn_weights):
        """Batch-first self-attention (query, key and value one tensor, no
        bias_k, no zero attention) in the input's (B, T, E) layout: one
        product with the whole ``in_proj_weight`` (B, T, 3E) split as views
        into heads (B, h, T, hd), so no transposed copies of the input, no
        three weight slices (each a node whose backward scatters into a
        zero (3E, E) gradient) and no transposes back.  The same arithmetic
        as the general path, in another memory order."""
        bsz, tgt_len, e = (int(n) for n in x.shape)
        h, hd = self.num_heads, self.head_dim
        qkv = F.linear(x, self.in_proj_weight, self.in_proj_bias)
        qkv = qkv.reshape(bsz, tgt_len, 3, h, hd).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        if mask is not None and mask.shape[0] != 1:
            mask = mask.reshape(bsz, h, tgt_len, tgt_len)
        if kpm is not None:
            kpm = kpm.reshape(bsz, 1, 1, tgt_len)
            mask = kpm if mask is None else mask + kpm
        p = self.dropout if self.training else 0.0
        out, weights = attention(q, k, v, mask, p, 1.0 / math.sqrt(hd),
                                 safe=not need_weights)
        out = self.out_proj(out.transpose(1, 2).reshape(bsz, tgt_len, e))
        if not need_weights:
            return out, None
        if average_attn_weights:
            weights = weights.mean(1)
        return out, weights


def _size(shape):
    return "torch.Size([" + ", ".join(str(int(s)) for s in shape) + "])"
