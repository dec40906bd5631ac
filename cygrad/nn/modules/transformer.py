"""Transformer layers as torch's: ``TransformerEncoderLayer``,
``TransformerEncoder``, ``TransformerDecoderLayer``, ``TransformerDecoder``
and ``Transformer``, with the same submodule names (so state dicts load
both ways), post-norm by default and pre-norm with ``norm_first``.

Stacks copy their template layer (fresh parameters holding the same values,
as torch's deep copies).  torch's nested-tensor and fused fast paths are
inference shortcuts with the same numbers; here every call takes the one
path, so ``enable_nested_tensor`` and ``mask_check`` are accepted and have
no effect.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from cygrad.creation import from_numpy, get_default_dtype

from .. import functional as F
from .. import init
from .linear import Linear
from ..module import Module
from .container import ModuleList
from ..parameter import Parameter
from .attention import MultiheadAttention
from .dropout import Dropout
from .activation import GELU, ReLU
from .normalization import LayerNorm

if TYPE_CHECKING:
    from cygrad._tensor import Tensor
    from cygrad._typing import DType, Device

__all__ = ["Transformer", "TransformerDecoder", "TransformerDecoderLayer",
           "TransformerEncoder", "TransformerEncoderLayer"]


def _activation(activation):
    if isinstance(activation, str):
        if activation == "relu":
            return F.relu
        if activation == "gelu":
            return F.gelu
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")
    if not callable(activation):
        raise TypeError(f"activation must be 'relu', 'gelu' or a callable, got "
                        f"{activation!r}")
    return activation


def _clone_module(m):
    """A copy of ``m`` with its own parameters and buffers (same values)."""
    new = object.__new__(type(m))
    d = dict(m.__dict__)
    d["_parameters"] = {
        k: None if p is None else Parameter(p.detach().clone(),
                                            requires_grad=p.requires_grad)
        for k, p in m._parameters.items()}
    d["_buffers"] = {k: None if b is None else b.detach().clone()
                     for k, b in m._buffers.items()}
    d["_modules"] = {k: None if c is None else _clone_module(c)
                     for k, c in m._modules.items()}
    d["_non_persistent"] = set(m._non_persistent)
    new.__dict__.update(d)
    return new


def _clones(module, n):
    return ModuleList([_clone_module(module) for _ in range(n)])


def _dims(d_model, nhead, dim_feedforward, dropout):
    return int(d_model), int(nhead), int(dim_feedforward), float(dropout)


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward block, each with a residual and a
    LayerNorm (after the residual, or before the block with ``norm_first``).

    Parameters
    ----------
    d_model, nhead : int
    dim_feedforward : int, default 2048
    dropout : float, default 0.1
    activation : "relu", "gelu" or a callable, default relu
    layer_norm_eps : float, default 1e-5
    batch_first : bool, default False
    norm_first : bool, default False
    bias : bool, default True
        Of the linear layers, the attention projections and the norms.

    ``forward(src, src_mask=None, src_key_padding_mask=None, is_causal=False)``.
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: Any = F.relu,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True,
                 device: Device | None = None, dtype: DType | None = None) -> None:
        super().__init__()
        d_model, nhead, dim_feedforward, dropout = _dims(d_model, nhead,
                                                        dim_feedforward, dropout)
        kw = dict(device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = bool(norm_first)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation(activation)
        # torch's record of a fast-path activation: 1 relu, 2 gelu, 0 other
        act = self.activation
        self.activation_relu_or_gelu = (
            1 if act is F.relu or isinstance(act, ReLU) else
            2 if act is F.gelu or isinstance(act, GELU) else 0)
        self.batch_first = bool(batch_first)

    def forward(self, src: Tensor, src_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                is_causal: bool = False) -> Tensor:
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask,
                                   is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask,
                                              is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask,
                           key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=bool(is_causal))[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


class TransformerDecoderLayer(Module):
    """Self-attention, attention over ``memory``, and a feed-forward block,
    each with a residual and a LayerNorm (post- or pre-norm).  Parameters as
    :class:`TransformerEncoderLayer`.

    ``forward(tgt, memory, tgt_mask=None, memory_mask=None,
    tgt_key_padding_mask=None, memory_key_padding_mask=None,
    tgt_is_causal=False, memory_is_causal=False)``.
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: Any = F.relu,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True,
                 device: Device | None = None, dtype: DType | None = None) -> None:
        super().__init__()
        d_model, nhead, dim_feedforward, dropout = _dims(d_model, nhead,
                                                        dim_feedforward, dropout)
        kw = dict(device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                                 bias=bias, batch_first=batch_first,
                                                 **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = bool(norm_first)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation(activation)
        self.batch_first = bool(batch_first)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: Any = False, memory_is_causal: Any = False) -> Tensor:
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask,
                                   tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask,
                                    memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask,
                                              tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask,
                                               memory_key_padding_mask,
                                               memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask,
                           key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=bool(is_causal))[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, need_weights=False,
                                is_causal=bool(is_causal))[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout3(x)


def _why_not_fast(layer):
    """The first reason torch gives for not using its nested-tensor path."""
    name = "encoder_layer"
    if not isinstance(layer, TransformerEncoderLayer):
        return f"{name} was not TransformerEncoderLayer"
    attn = layer.self_attn
    reasons = [
        (layer.norm_first, f"{name}.norm_first was True"),
        (not attn.batch_first, f"{name}.self_attn.batch_first was not True(use "
                               "batch_first for better inference performance)"),
        (not attn._qkv_same_embed_dim,
         f"{name}.self_attn._qkv_same_embed_dim was not True"),
        (attn.in_proj_bias is None, f"{name}.self_attn was passed bias=False"),
        (not layer.activation_relu_or_gelu,
         f"{name}.activation_relu_or_gelu was not True"),
        (layer.norm1.eps != layer.norm2.eps,
         f"{name}.norm1.eps was not equal to {name}.norm2.eps"),
        (attn.num_heads % 2 == 1, f"{name}.self_attn.num_heads is odd"),
    ]
    return next((text for failed, text in reasons if failed), "")


class TransformerEncoder(Module):
    """``num_layers`` copies of ``encoder_layer`` applied in turn, then ``norm``.

    ``forward(src, mask=None, src_key_padding_mask=None, is_causal=None)``.
    """

    def __init__(self, encoder_layer: Any, num_layers: int, norm: Any = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        super().__init__()
        self.layers = _clones(encoder_layer, int(num_layers))
        self.num_layers = int(num_layers)
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check
        why = _why_not_fast(encoder_layer)
        if enable_nested_tensor and why:
            # cygrad has no nested tensors either way; torch's warning stays
            warnings.warn(f"enable_nested_tensor is True, but self.use_nested_tensor "
                          f"is False because {why}", stacklevel=2)
            self.use_nested_tensor = False

    def forward(self, src: Tensor, mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        out = src
        for mod in self.layers:
            out = mod(out, src_mask=mask, is_causal=bool(is_causal),
                      src_key_padding_mask=src_key_padding_mask)
        if self.norm is not None:
            out = self.norm(out)
        return out


class TransformerDecoder(Module):
    """``num_layers`` copies of ``decoder_layer`` applied in turn, then ``norm``."""

    def __init__(self, decoder_layer: Any, num_layers: int, norm: Any = None) -> None:
        super().__init__()
        self.layers = _clones(decoder_layer, int(num_layers))
        self.num_layers = int(num_layers)
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: Any = None, memory_is_causal: Any = False) -> Tensor:
        out = tgt
        for mod in self.layers:
            out = mod(out, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask,
                      memory_key_padding_mask=memory_key_padding_mask,
                      tgt_is_causal=bool(tgt_is_causal),
                      memory_is_causal=memory_is_causal)
        if self.norm is not None:
            out = self.norm(out)
        return out


class Transformer(Module):
    """Encoder-decoder transformer (torch's ``nn.Transformer``).

    Parameters
    ----------
    d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
    dim_feedforward=2048, dropout=0.1, activation=relu, custom_encoder=None,
    custom_decoder=None, layer_norm_eps=1e-5, batch_first=False,
    norm_first=False, bias=True, device=None, dtype=None

    Every parameter with more than one dimension is re-drawn with
    ``xavier_uniform_`` (as torch).
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: Any = F.relu,
                 custom_encoder: Any = None, custom_decoder: Any = None,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True,
                 device: Device | None = None, dtype: DType | None = None) -> None:
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout,
                                            activation, layer_norm_eps, batch_first,
                                            norm_first, bias, **kw)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
            self.encoder = TransformerEncoder(layer, num_encoder_layers, norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout,
                                            activation, layer_norm_eps, batch_first,
                                            norm_first, bias, **kw)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
            self.decoder = TransformerDecoder(layer, num_decoder_layers, norm)
        self._reset_parameters()
        self.d_model = int(d_model)
        self.nhead = int(nhead)
        self.batch_first = bool(batch_first)

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None,
                tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                src_is_causal: Any = None, tgt_is_causal: Any = None,
                memory_is_causal: Any = False) -> Tensor:
        batched = src.dim() == 3
        bdim = 0 if self.batch_first else 1
        if batched and src.shape[bdim] != tgt.shape[bdim]:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError(
                "the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask,
                              src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: Device | None = None,
                                        dtype: DType | None = None) -> Tensor:
        """The (sz, sz) float mask with ``-inf`` above the diagonal, 0 elsewhere."""
        dt = np.dtype(get_default_dtype() if dtype is None else dtype)
        upper = np.triu(np.ones((sz, sz), dtype=bool), k=1)
        return from_numpy(np.where(upper, -np.inf, 0.0).astype(dt))
