"""Scaled dot-product attention as one autograd node, and the multi-head
attention forward that ``nn.MultiheadAttention`` runs.

The node computes, over batched matrices (NumPy's BLAS matmul),

    S = scale * q @ k^T + mask,   P = softmax(S),   A = P * keep / (1 - p),
    out = A @ v

and returns ``out`` and ``A`` (the attention weights MultiheadAttention may
return).  Its backward is written out, with softmax's backward fused into
one expression instead of a chain of generic ops:

    dA = g_out @ v^T (+ g_A),   dv = A^T @ g_out,   dP = dA * keep / (1 - p),
    dS = P * (dP - rowsum(dP * P)),
    dq = scale * dS @ k,   dk = scale * dS^T @ q,   dmask = dS

Gradients of broadcast inputs (a key shared by all heads, a mask shared by
the batch) are summed back to the input's shape.  A row whose every key is
masked is all zeros with ``safe=True`` (``scaled_dot_product_attention``,
as torch's) and NaN otherwise (MultiheadAttention's weights path, as
torch's).  Under ``create_graph=True`` the backward is the same formulas in
Tensor operations, so double backward works.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from cygrad import ops
from cygrad._kernels import reductions as _R
from cygrad._kernels.bmm import matmul as _matmul
from cygrad.autograd.function import Function
from cygrad.autograd.grad_mode import is_grad_enabled
from cygrad.creation import from_numpy

from . import _sdp
from ._functional_dropout import scaled_keep
from .attention.bias import CausalBias

if TYPE_CHECKING:
    from cygrad._tensor import Tensor

__all__ = ["scaled_dot_product_attention"]

_REAL = (np.dtype(np.float32), np.dtype(np.float64))


def _sum_to(arr, shape):
    """``arr`` summed over the axes it was broadcast along to reach its shape."""
    if arr.shape == tuple(shape):
        return arr
    lead = arr.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, s in enumerate(shape) if s == 1 and arr.shape[i + lead] != 1)
    return arr.sum(axis=axes, keepdims=True).reshape(shape)


def _softmax_rows(s, safe):
    if s.dtype in _REAL and s.flags.c_contiguous and s.size:
        # one compiled pass per row (max, exp and sum, scale) instead of six
        # NumPy passes and their temporaries
        n = s.shape[-1]
        s2 = s.reshape(-1, n)
        p = np.empty_like(s2)
        _R.softmax_fwd(s2, p)
        if safe:
            # a row of -inf alone (every key masked) came out NaN, as does a
            # row holding NaN or +inf: look only at rows whose first entry is
            # NaN (a NumPy row max over all of s cost as much as the softmax)
            rows = np.flatnonzero(np.isnan(p[:, 0]))
            if rows.size:
                dead = rows[np.isneginf(s2[rows]).all(axis=1)]
                p[dead] = 0
        return p.reshape(s.shape)
    m = s.max(axis=-1, keepdims=True)
    if safe:
        dead = np.isneginf(m)
        m = np.where(dead, 0, m)
    with np.errstate(invalid="ignore"):
        e = np.exp(s - m)
    tot = e.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = e / tot
    if safe:
        p = np.where(dead, 0, p)
    return p


class _Attention(Function):
    """``(q, k, v, mask) -> (out, weights)``; see the module docstring."""

    _node_name = "ScaledDotProductAttentionBackward"

    @staticmethod
    def forward(ctx, q, k, v, mask, scale, keep, safe):
        qa, ka, va = q._arr, k._arr, v._arr
        s = _matmul(qa, np.swapaxes(ka, -1, -2))
        s *= qa.dtype.type(scale)
        if mask is not None:
            ma = mask._arr
            if ma.dtype == s.dtype and ma.ndim <= s.ndim and all(
                    a == b or a == 1 for a, b in zip(ma.shape[::-1], s.shape[::-1])):
                s += ma         # the mask broadcasts to s: no new array
            else:
                s = s + ma
        p = _softmax_rows(s, safe)
        a = p if keep is None else p * keep
        out = _matmul(a, va)
        ctx.set_materialize_grads(False)
        ctx.scale, ctx.keep, ctx.p = scale, keep, p
        ctx.save_for_backward(q, k, v, mask)
        return from_numpy(out), from_numpy(np.ascontiguousarray(a))

    @staticmethod
    def backward(ctx, grad_out, grad_w):
        q, k, v, mask = ctx.saved_tensors
        needs = ctx.needs_input_grad
        if is_grad_enabled():
            return _attention_backward_graph(ctx, q, k, v, mask, grad_out, grad_w)
        p, keep, scale = ctx.p, ctx.keep, ctx.scale
        a = p if keep is None else p * keep
        dt = p.dtype
        da = None
        gv = None
        if grad_out is not None:
            go = np.asarray(grad_out._arr, dtype=dt)
            da = _matmul(go, np.swapaxes(v._arr, -1, -2))
            if needs[2]:
                gv = _sum_to(_matmul(np.swapaxes(a, -1, -2), go), v.shape)
        if grad_w is not None:
            da = grad_w._arr if da is None else da + grad_w._arr
        if da is None:
            return None, None, gv, None, None, None, None
        dp = da if keep is None else da * keep
        if dt in _REAL and p.flags.c_contiguous and p.size:
            # ds = p * (dp - rowsum(dp * p)): softmax's backward kernel
            n = p.shape[-1]
            ds = np.empty(p.shape, dt)
            _R.softmax_bwd(p.reshape(-1, n), np.ascontiguousarray(dp, dtype=dt)
                           .reshape(-1, n), ds.reshape(-1, n))
        else:
            ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True))
        gq = gk = gm = None
        if needs[0]:
            gq = _sum_to(_matmul(ds, k._arr) * dt.type(scale), q.shape)
        if needs[1]:
            gk = _sum_to(_matmul(np.swapaxes(ds, -1, -2), q._arr) * dt.type(scale),
                         k.shape)
        if needs[3]:
            gm = _sum_to(ds, mask.shape)
        wrap = [None if g is None else from_numpy(np.ascontiguousarray(g))
                for g in (gq, gk, gv, gm)]
        return (*wrap, None, None, None)


def _attention_backward_graph(ctx, q, k, v, mask, grad_out, grad_w):
    """The same gradients from differentiable Tensor ops (create_graph)."""
    needs = ctx.needs_input_grad
    s = ops.matmul(q, k.transpose(-1, -2)) * ctx.scale
    if mask is not None:
        s = s + mask
    p = ops.softmax(s, -1)
    keep = None if ctx.keep is None else from_numpy(ctx.keep)
    a = p if keep is None else p * keep
    da = None
    gv = None
    if grad_out is not None:
        da = ops.matmul(grad_out, v.transpose(-1, -2))
        if needs[2]:
            gv = _sum_to_t(ops.matmul(a.transpose(-1, -2), grad_out), v.shape)
    if grad_w is not None:
        da = grad_w if da is None else da + grad_w
    if da is None:
        return None, None, gv, None, None, None, None
    dp = da if keep is None else da * keep
    ds = p * (dp - (dp * p).sum(-1, keepdim=True))
    gq = _sum_to_t(ops.matmul(ds, k) * ctx.scale, q.shape) if needs[0] else None
    gk = (_sum_to_t(ops.matmul(ds.transpose(-1, -2), q) * ctx.scale, k.shape)
          if needs[1] else None)
    gm = _sum_to_t(ds, mask.shape) if needs[3] else None
    return gq, gk, gv, gm, None, None, None


def _sum_to_t(t, shape):
    shape = tuple(shape)
    if tuple(t.shape) == shape:
        return t
    lead = t.dim() - len(shape)
    if lead:
        t = t.sum(tuple(range(lead)))
    axes = tuple(i for i, s in enumerate(shape) if s == 1 and t.shape[i] != 1)
    if axes:
        t = t.sum(axes, keepdim=True)
    return t


def _repeat_heads(t, r):
    """``t.repeat_interleave(r, dim=-3)`` from view ops: each head r times."""
    shape = tuple(t.shape)
    big = shape[:-2] + (r,) + shape[-2:]
    t = t.unsqueeze(-3).expand(*big)
    return t.reshape(*shape[:-3], shape[-3] * r, *shape[-2:])


def _broadcast_shapes(*shapes):
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        return None


def attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None,
              dropout_p: Any = 0.0, scale: float | None = None,
              safe: Any = True) -> Tensor:
    """The node's entry: ``(out, weights)``; ``mask`` a float Tensor or None
    (additive, broadcastable to ``(..., L, S)``)."""
    e = q.shape[-1]
    if scale is None:
        scale = 1.0 / math.sqrt(e) if e else 1.0
    keep = None
    if dropout_p > 0:
        lead = _broadcast_shapes(tuple(q.shape[:-2]), tuple(k.shape[:-2]))
        keep = scaled_keep(tuple(lead) + (q.shape[-2], k.shape[-2]), dropout_p,
                           q._arr.dtype)
    return _Attention.apply(q, k, v, mask, float(scale), keep, safe)


def _check_batch(a, b):
    """The broadcast of batch shapes ``a`` and ``b``; torch's matmul error
    when they do not broadcast."""
    r = max(len(a), len(b))
    pa, pb = (1,) * (r - len(a)) + a, (1,) * (r - len(b)) + b
    for i, (x, y) in enumerate(zip(pa, pb)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(
                f"The size of tensor a ({x}) must match the size of tensor b ({y}) at "
                f"non-singleton dimension {i}")
    return tuple(max(x, y) if min(x, y) != 0 else 0 for x, y in zip(pa, pb))


def _dt_name(dt):
    return {"float32": "float", "float64": "double", "int64": "long int",
            "bool": "bool", "int32": "int"}.get(str(dt), str(dt))


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: float,
                                 attn_mask: Tensor | None = None,
                                 dropout_p: float = 0.0, is_causal: bool = False,
                                 scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    r"""``softmax(q k^T * scale + mask) @ v``, as one autograd node.

    Parameters
    ----------
    query : Tensor of shape (..., L, E)
    key : Tensor of shape (..., S, E)
    value : Tensor of shape (..., S, Ev)
    attn_mask : Tensor, optional
        Broadcastable to (..., L, S): bool (True = may attend; False becomes
        -inf) or of the query's float dtype (added to the scores).
    dropout_p : float
        Dropout on the attention weights (always applied when > 0, as torch).
    is_causal : bool
        Query ``i`` attends to keys ``j <= i`` (top-left aligned); not with
        ``attn_mask``.
    scale : float, optional
        Default ``1 / sqrt(E)``.
    enable_gqa : bool
        Grouped-query attention: key/value heads (dim -3) repeated to the
        query's head count, which they must divide.

    Returns
    -------
    Tensor of shape (..., L, Ev)

    ``attn_mask`` may also be a ``cygrad.nn.attention.bias.CausalBias``; the
    backends allowed by ``cygrad.nn.attention.sdpa_kernel`` decide whether
    the call may run, as on torch's CPU build (``cygrad/nn/_sdp.py``).
    """
    if isinstance(attn_mask, CausalBias):
        attn_mask, is_causal = attn_mask._sdpa_args(is_causal)
    for t in (query, key, value):
        if t.dim() < 2:
            raise RuntimeError(
                "Expected query, key, and value to all be  at least 2 dimensional, "
                f"but got query.dim: {query.dim()} key.dim: {key.dim()} and "
                f"value.dim: {value.dim()} instead.")
    qd, kd, vd = query._arr.dtype, key._arr.dtype, value._arr.dtype
    if not (qd == kd == vd):
        raise RuntimeError(
            "Expected query, key, and value to have the same dtype, but got "
            f"query.dtype: {_dt_name(qd)} key.dtype: {_dt_name(kd)} and value.dtype: "
            f"{_dt_name(vd)} instead.")
    if qd not in _REAL:
        raise NotImplementedError(
            f"scaled_dot_product_attention: no kernel for dtype {qd}; use float32 "
            "or float64")
    if query.shape[-1] != key.shape[-1]:
        raise RuntimeError(
            f"scaled_dot_product_attention: query {list(query.shape)} and key "
            f"{list(key.shape)} must have the same last dimension (embedding size)")
    if key.shape[-2] != value.shape[-2]:
        raise RuntimeError(
            f"scaled_dot_product_attention: key {list(key.shape)} and value "
            f"{list(value.shape)} must have the same sequence length (dim -2)")
    _sdp.check(query, key, value, attn_mask, dropout_p, enable_gqa)
    if enable_gqa and query.dim() >= 3:
        hq, hk = query.shape[-3], key.shape[-3]
        if hq != hk:
            if hk == 0 or hq % hk or value.shape[-3] != hk:
                raise RuntimeError(
                    f"scaled_dot_product_attention: with enable_gqa the query's "
                    f"{hq} heads must be a multiple of the key's and value's heads, "
                    f"got key {list(key.shape)} and value {list(value.shape)}")
            key = _repeat_heads(key, hq // hk)
            value = _repeat_heads(value, hq // hk)
    lead = _check_batch(tuple(query.shape[:-2]), tuple(key.shape[:-2]))
    _check_batch(lead, tuple(value.shape[:-2]))
    lq, sk = query.shape[-2], key.shape[-2]
    mask = None
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError(
                "_scaled_dot_product_attention: Explicit attn_mask should not be set "
                "when is_causal=True")
        tri = np.tril(np.ones((lq, sk), dtype=bool))
        mask = from_numpy(np.where(tri, 0.0, -np.inf).astype(qd))
    elif attn_mask is not None:
        md = attn_mask._arr.dtype
        if md != np.bool_ and md != qd:
            raise RuntimeError(
                "Expected attn_mask dtype to be bool or float or to match query "
                f"dtype, but got attn_mask.dtype: {_dt_name(md)} and  query.dtype: "
                f"{_dt_name(qd)} instead.")
        lead = _broadcast_shapes(tuple(query.shape[:-2]), tuple(key.shape[:-2]))
        target = tuple(lead) + (lq, sk)
        if _broadcast_shapes(tuple(attn_mask.shape), target) != target:
            raise RuntimeError(
                f"scaled_dot_product_attention: attn_mask of shape "
                f"{list(attn_mask.shape)} cannot be broadcast to the attention "
                f"weights' shape {list(target)} (query {list(query.shape)}, key "
                f"{list(key.shape)})")
        if md == np.bool_:
            mask = from_numpy(np.where(attn_mask._arr, 0.0, -np.inf).astype(qd))
        else:
            mask = attn_mask
    return attention(query, key, value, mask, dropout_p, scale, safe=True)[0]
