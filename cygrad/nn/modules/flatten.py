"""``Flatten`` and ``Unflatten``: reshape layers (views, as torch)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..module import Module

if TYPE_CHECKING:
    from cygrad._tensor import Tensor

__all__ = ["Flatten", "Unflatten"]


class Flatten(Module):
    """Flatten dimensions ``start_dim`` to ``end_dim`` (default: all but the
    batch dimension) into one."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Expand dimension ``dim`` into ``unflattened_size``."""

    def __init__(self, dim: int, unflattened_size: Any) -> None:
        super().__init__()
        if isinstance(dim, str):
            raise TypeError("Unflatten: named dimensions are not supported by cygrad")
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError(
                "unflattened_size must be tuple of ints, but found type "
                f"{type(unflattened_size).__name__}"
            )
        for i, s in enumerate(unflattened_size):
            if not isinstance(s, int):
                raise TypeError(
                    f"unflattened_size must be tuple of ints, but found element of "
                    f"type {type(s).__name__} at pos {i}"
                )
        self.dim = int(dim)
        self.unflattened_size = tuple(unflattened_size)

    def forward(self, input: Tensor) -> Tensor:
        shape = tuple(input.shape)
        dim = self.dim + len(shape) if self.dim < 0 else self.dim
        if not 0 <= dim < len(shape):
            raise IndexError(
                f"Dimension out of range (expected to be in range of "
                f"[{-len(shape)}, {len(shape) - 1}], but got {self.dim})"
            )
        sizes = list(self.unflattened_size)
        known = 1
        for s in sizes:
            if s != -1:
                known *= s
        if -1 in sizes and known:
            sizes[sizes.index(-1)] = shape[dim] // known
        total = 1
        for s in sizes:
            total *= s
        if total != shape[dim]:
            raise RuntimeError(
                f"unflatten: Provided sizes {list(self.unflattened_size)} don't "
                f"multiply up to the size of dim {self.dim} ({shape[dim]}) in the "
                "input tensor"
            )
        return input.reshape(shape[:dim] + tuple(sizes) + shape[dim + 1:])

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
