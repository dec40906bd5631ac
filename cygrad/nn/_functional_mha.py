"""``_mha``: multi-head attention from given weights, the one implementation
behind ``F.multi_head_attention_forward`` and ``nn.MultiheadAttention`` (both
pass their weights, and ``F.linear``, to it: this module cannot import
``functional``, which imports it).

Projections are ``F.linear`` nodes, the attention itself the single node of
``_functional_attention.attention``.  Masks: bool ``True`` means *masked
out* (it becomes ``-inf``), float masks are added; ``key_padding_mask`` is
(N, S), ``attn_mask`` (L, S) or (N * num_heads, L, S).
"""

from __future__ import annotations

import math

import numpy as np

from cygrad.creation import from_numpy, zeros
from cygrad.ops.shape import cat

from ._functional_attention import attention

__all__: list[str] = []


def _size(shape):
    return "torch.Size([" + ", ".join(str(int(s)) for s in shape) + "])"


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


def _shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """torch's checks of the inputs' ranks; True for batched (3-D) input."""
    if query.dim() not in (2, 3):
        raise AssertionError(
            "query should be unbatched 2D or batched 3D tensor but received "
            f"{query.dim()}-D query tensor")
    batched = query.dim() == 3
    kind = "batched (3-D)" if batched else "unbatched (2-D)"
    nd = query.dim()
    if key.dim() != nd or value.dim() != nd:
        raise AssertionError(
            f"For {kind} `query`, expected `key` and `value` to be {nd}-D but found "
            f"{key.dim()}-D and {value.dim()}-D tensors respectively")
    if key_padding_mask is not None and key_padding_mask.dim() != nd - 1:
        raise AssertionError(
            f"For {kind} `query`, expected `key_padding_mask` to be `None` or "
            f"{nd - 1}-D but found {key_padding_mask.dim()}-D tensor instead")
    if attn_mask is not None:
        if attn_mask.dim() not in (2, 3):
            raise AssertionError(
                f"For {kind} `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                f"but "
                f"found {attn_mask.dim()}-D tensor instead")
        if not batched and attn_mask.dim() == 3:
            want = (num_heads, query.shape[0], key.shape[0])
            if tuple(attn_mask.shape) != want:
                raise AssertionError(
                    f"Expected `attn_mask` shape to be {want} but got "
                    f"{_size(attn_mask.shape)}")
    return batched


def _mha(_linear, query, key, value, embed_dim_to_check, num_heads, in_proj_weight,
         in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight,
         out_proj_bias, training=True, key_padding_mask=None, need_weights=True,
         attn_mask=None, use_separate_proj_weight=False, q_proj_weight=None,
         k_proj_weight=None, v_proj_weight=None, static_k=None, static_v=None,
         average_attn_weights=True, is_causal=False, batch_first=False):
    """``F.multi_head_attention_forward`` with ``_linear`` its ``F.linear``;
    with ``batch_first`` batched inputs and output are (N, L, E) (the
    module's option)."""
    batched = _shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    packed = (batched and batch_first and query is key and key is value
              and not use_separate_proj_weight and bias_k is None and bias_v is None
              and not add_zero_attn and static_k is None and static_v is None)
    x_in = query
    if batched and batch_first:
        query, key, value = (t.transpose(0, 1) for t in (query, key, value))
    if not batched:
        query, key, value = (t.unsqueeze(1) for t in (query, key, value))
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = (int(s) for s in query.shape)
    src_len = int(key.shape[0])
    dt = query._arr.dtype
    kpm = _float_mask(key_padding_mask, "key_padding_mask", dt)
    if is_causal and attn_mask is None:
        raise RuntimeError(
            "Need attn_mask if specifying the is_causal hint. You may use the "
            "Transformer module method `generate_square_subsequent_mask` to create "
            "this mask.")
    mask = _float_mask(attn_mask, "attn_mask", dt)
    if embed_dim != embed_dim_to_check:
        raise AssertionError(
            f"was expecting embedding dimension of {embed_dim_to_check}, but got "
            f"{embed_dim}")
    h = int(num_heads)
    hd = embed_dim // h
    if hd * h != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {h}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(
                f"key's sequence and batch dims {_size(key.shape[:2])} do not match "
                f"value's {_size(value.shape[:2])}")
    elif tuple(key.shape) != tuple(value.shape):
        raise AssertionError(
            f"key shape {_size(key.shape)} does not match value shape "
            f"{_size(value.shape)}")
    if not use_separate_proj_weight and in_proj_weight is None:
        raise AssertionError("use_separate_proj_weight is False but in_proj_weight is "
                             "None")
    if use_separate_proj_weight:
        for name, w in (("q", q_proj_weight), ("k", k_proj_weight),
                        ("v", v_proj_weight)):
            if w is None:
                raise AssertionError(
                    f"use_separate_proj_weight is True but {name}_proj_weight is None")
    if mask is not None:
        if mask.dim() == 2:
            if tuple(mask.shape) != (tgt_len, src_len):
                raise RuntimeError(
                    f"The shape of the 2D attn_mask is {_size(mask.shape)}, but "
                    f"should be {(tgt_len, src_len)}.")
            mask = mask.unsqueeze(0)
        elif tuple(mask.shape) != (bsz * h, tgt_len, src_len):
            raise RuntimeError(
                f"The shape of the 3D attn_mask is {_size(mask.shape)}, but should be "
                f"{(bsz * h, tgt_len, src_len)}.")
    if (bias_k is None) != (bias_v is None):
        raise AssertionError("bias_k is set but bias_v is None" if bias_v is None
                             else "bias_v is set but bias_k is None")
    if bias_k is not None and (static_k is not None or static_v is not None):
        which = "key" if static_k is not None else "value"
        raise AssertionError(f"bias cannot be added to static {which}.")
    p = float(dropout_p) if training else 0.0
    if packed:
        out, weights = _packed(_linear, x_in, in_proj_weight, in_proj_bias,
                               out_proj_weight, out_proj_bias, h, mask, kpm, p,
                               need_weights, average_attn_weights)
        return out, weights
    if use_separate_proj_weight:
        ws = (q_proj_weight, k_proj_weight, v_proj_weight)
    else:
        w = in_proj_weight
        ws = (w[0:embed_dim], w[embed_dim:2 * embed_dim], w[2 * embed_dim:])
    b = in_proj_bias
    bs = ((None, None, None) if b is None
          else (b[0:embed_dim], b[embed_dim:2 * embed_dim], b[2 * embed_dim:]))
    q = _linear(query, ws[0], bs[0])
    k = _linear(key, ws[1], bs[1]) if static_k is None else None
    v = _linear(value, ws[2], bs[2]) if static_v is None else None
    if bias_k is not None:
        k = cat([k, bias_k.expand(1, bsz, embed_dim)], 0)
        v = cat([v, bias_v.expand(1, bsz, embed_dim)], 0)
        mask, kpm = _pad_last(mask), _pad_last(kpm)
    q = q.reshape(tgt_len, bsz * h, hd).transpose(0, 1)
    k = _heads(k, static_k, bsz, h, hd, "static_k")
    v = _heads(v, static_v, bsz, h, hd, "static_v")
    if add_zero_attn:
        z = zeros(bsz * h, 1, hd, dtype=dt)
        k, v = cat([k, z], 1), cat([v, z], 1)
        mask, kpm = _pad_last(mask), _pad_last(kpm)
    s = int(k.shape[1])
    if kpm is not None:
        _check_kpm(kpm, bsz, s)
        kpm = kpm.reshape(bsz, 1, 1, s).expand(bsz, h, 1, s).reshape(bsz * h, 1, s)
        mask = kpm if mask is None else mask + kpm
    out, weights = attention(q, k, v, mask, p, 1.0 / math.sqrt(hd),
                             safe=not need_weights)
    out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
    out = _linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
    if batch_first and batched:
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


def _check_kpm(kpm, bsz, src_len):
    if kpm.shape[0] != bsz:
        raise AssertionError(
            f"Expected key_padded_mask.shape[0] to be {bsz}, but got {kpm.shape[0]}")
    if kpm.shape[1] != src_len:
        raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but "
                             f"got {kpm.shape[1]}")


def _heads(t, static, bsz, h, hd, name):
    """(S, N, E) -> (N * h, S, hd), or the given ``static_k``/``static_v``."""
    if static is None:
        return t.reshape(t.shape[0], bsz * h, hd).transpose(0, 1)
    if static.shape[0] != bsz * h:
        raise AssertionError(
            f"expecting {name}.size(0) of {bsz * h}, but got {static.shape[0]}")
    if static.shape[2] != hd:
        raise AssertionError(
            f"expecting {name}.size(2) of {hd}, but got {static.shape[2]}")
    return static


def _packed(_linear, x, in_proj_weight, in_proj_bias, out_proj_weight, out_proj_bias,
            h, mask, kpm, p, need_weights, average_attn_weights):
    """Batch-first self-attention (query, key and value one tensor, no
    bias_k, no zero attention) in the input's (B, T, E) layout: one
    product with the whole ``in_proj_weight`` (B, T, 3E) split as views
    into heads (B, h, T, hd), so no transposed copies of the input, no
    three weight slices (each a node whose backward scatters into a
    zero (3E, E) gradient).  The same arithmetic as the general path, and
    the output in its (and torch's) layout: a (B, T, E) view of (T, B, E)."""
    bsz, tgt_len, e = (int(n) for n in x.shape)
    hd = e // h
    qkv = _linear(x, in_proj_weight, in_proj_bias)
    # unbind: one node whose backward stacks the three gradients (three
    # selects each scattered theirs into a zero (3, B, h, T, hd) array)
    q, k, v = qkv.reshape(bsz, tgt_len, 3, h, hd).permute(2, 0, 3, 1, 4).unbind(0)
    if mask is not None and mask.shape[0] != 1:
        mask = mask.reshape(bsz, h, tgt_len, tgt_len)
    if kpm is not None:
        _check_kpm(kpm, bsz, tgt_len)
        kpm = kpm.reshape(bsz, 1, 1, tgt_len)
        mask = kpm if mask is None else mask + kpm
    out, weights = attention(q, k, v, mask, p, 1.0 / math.sqrt(hd),
                             safe=not need_weights)
    # the output projection over (T, B) rows, returned as a (B, T, E) view:
    # torch's layout, so that what draws in memory order (dropout) draws
    # as torch's does
    out = _linear(out.permute(2, 0, 1, 3).reshape(tgt_len * bsz, e), out_proj_weight,
                  out_proj_bias).reshape(tgt_len, bsz, e).transpose(0, 1)
    if not need_weights:
        return out, None
    if average_attn_weights:
        weights = weights.mean(1)
    return out, weights

