"""Lookup tables: ``Embedding`` and ``EmbeddingBag``, with torch's arguments,
parameter name (``weight``, shape (num_embeddings, embedding_dim)) and
initialisation (N(0, 1), the padding row zeroed)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from cygrad._device import check_device
from cygrad.autograd.grad_mode import no_grad
from cygrad.creation import empty, get_default_dtype

from .. import _functional_sparse as F
from .. import init
from ..module import Module
from ..parameter import Parameter

if TYPE_CHECKING:
    from typing_extensions import Self

    from cygrad._tensor import Tensor
    from cygrad._typing import Device, DType

__all__ = ["Embedding", "EmbeddingBag"]


def _table(num_embeddings, embedding_dim, _weight, _freeze, device, dtype):
    check_device(device)
    if _weight is None:
        dt = np.dtype(get_default_dtype() if dtype is None else dtype)
        return Parameter(empty(num_embeddings, embedding_dim, dtype=dt),
                         requires_grad=not _freeze), True
    if tuple(_weight.shape) != (num_embeddings, embedding_dim):
        raise AssertionError("Shape of weight does not match num_embeddings and "
                             "embedding_dim")
    return Parameter(_weight, requires_grad=not _freeze), False


class Embedding(Module):
    """A table of ``num_embeddings`` vectors of size ``embedding_dim``, looked
    up by integer index.

    Parameters
    ----------
    num_embeddings, embedding_dim : int
    padding_idx : int, optional
        Its row starts at zero and gets no gradient; negative counts from
        the end (stored as the non-negative index, as torch).
    max_norm : float, optional
        Looked-up rows are renormalised in place to this ``norm_type`` norm.
    norm_type : float (default 2)
    scale_grad_by_freq : bool
        Divide gradients by the index's count in the mini-batch.
    sparse : bool
        False only (cygrad has no sparse gradients).
    _weight : Tensor (num_embeddings, embedding_dim), optional initial table
    _freeze : bool
        The weight does not require grad.
    device, dtype
        The weight's (CPU only; float32 by default).
    """

    def __init__(self, num_embeddings: int, embedding_dim: int,
                 padding_idx: int | None = None, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                 sparse: bool = False, _weight: Any = None, _freeze: Any = False,
                 device: Device | None = None, dtype: DType | None = None) -> None:
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        if padding_idx is not None:
            padding_idx = F._padding(padding_idx, num_embeddings)
        self.padding_idx = padding_idx
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        if sparse:
            raise NotImplementedError(
                "Embedding: sparse=True needs sparse gradients, which cygrad does "
                "not have; use sparse=False (a dense gradient)")
        self.sparse = sparse
        self.weight, fresh = _table(num_embeddings, embedding_dim, _weight, _freeze,
                                    device, dtype)
        if fresh:
            self.reset_parameters()

    def reset_parameters(self) -> None:
        """N(0, 1) entries; the padding row zero."""
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self):
        if self.padding_idx is not None:
            with no_grad():
                self.weight._arr[self.padding_idx] = 0
                self.weight._bump_version()

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm,
                           self.norm_type, self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        if self.sparse is not False:
            s += ", sparse=True"
        return s

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True,
                        padding_idx: int | None = None, max_norm: float | None = None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> Self:
        """An ``Embedding`` whose table is ``embeddings`` (2-D, shared, not
        copied); ``freeze`` keeps it out of training."""
        if embeddings.ndim != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx=padding_idx, max_norm=max_norm,
                   norm_type=norm_type, scale_grad_by_freq=scale_grad_by_freq,
                   sparse=sparse, _weight=embeddings, _freeze=freeze)


class EmbeddingBag(Module):
    """Sums, means or maxima of bags of embeddings, without the (B, N, D)
    intermediate's size in the output.

    Parameters as ``Embedding``, plus ``mode`` ("mean" default, "sum",
    "max") and ``include_last_offset`` (``offsets`` has one more entry: the
    end of the last bag).  ``forward(input, offsets=None,
    per_sample_weights=None)``.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int,
                 max_norm: float | None = None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, mode: str = "mean",
                 sparse: bool = False, _weight: Any = None,
                 include_last_offset: bool = False, padding_idx: int | None = None,
                 device: Device | None = None, dtype: DType | None = None) -> None:
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        if padding_idx is not None:
            padding_idx = F._padding(padding_idx, num_embeddings)
        self.padding_idx = padding_idx
        if sparse:
            raise NotImplementedError(
                "EmbeddingBag: sparse=True needs sparse gradients, which cygrad "
                "does not have; use sparse=False (a dense gradient)")
        self.weight, fresh = _table(num_embeddings, embedding_dim, _weight, False,
                                    device, dtype)
        self.mode = mode
        self.sparse = sparse
        self.include_last_offset = include_last_offset
        if fresh:
            self.reset_parameters()

    reset_parameters = Embedding.reset_parameters
    _fill_padding_idx_with_zero = Embedding._fill_padding_idx_with_zero

    def forward(self, input: Tensor, offsets: Tensor | None = None,
                per_sample_weights: Tensor | None = None) -> Tensor:
        return F.embedding_bag(input, self.weight, offsets, self.max_norm,
                               self.norm_type, self.scale_grad_by_freq, self.mode,
                               self.sparse, per_sample_weights,
                               self.include_last_offset, self.padding_idx)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        s += f", mode='{self.mode}'"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True,
                        max_norm: float | None = None, norm_type: float = 2.0,
                        scale_grad_by_freq: bool = False, mode: str = "mean",
                        sparse: bool = False, include_last_offset: bool = False,
                        padding_idx: int | None = None) -> Self:
        """An ``EmbeddingBag`` over the 2-D table ``embeddings``."""
        if embeddings.ndim != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        bag = cls(rows, cols, max_norm=max_norm, norm_type=norm_type,
                  scale_grad_by_freq=scale_grad_by_freq, mode=mode, sparse=sparse,
                  _weight=embeddings, include_last_offset=include_last_offset,
                  padding_idx=padding_idx)
        bag.weight.requires_grad_(not freeze)
        return bag
