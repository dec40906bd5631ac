"""``convert_conv2d_weight_memory_format`` / ``convert_conv3d_weight_memory_format``:
torch re-lays convolution weights out in a memory format (channels-last);
cygrad keeps every tensor in one (C-contiguous) layout, so these walk the
module tree as torch's do and leave the weights' values and layout as
they are."""

from __future__ import annotations

from typing import Any, TypeVar

from ..modules.conv import Conv2d, Conv3d, ConvTranspose2d, ConvTranspose3d

__all__ = ["convert_conv2d_weight_memory_format",
           "convert_conv3d_weight_memory_format"]

_M = TypeVar("_M")


def _walk(module: Any, kinds: tuple[type, ...]) -> None:
    if isinstance(module, kinds):
        module.weight.data = module.weight.detach().contiguous()
    for child in module.children():
        _walk(child, kinds)


def convert_conv2d_weight_memory_format(module: _M, memory_format: Any) -> _M:
    """Returns ``module``; its (transposed) 2-d convolutions' weights are
    contiguous (cygrad's one layout, whatever ``memory_format``)."""
    _walk(module, (Conv2d, ConvTranspose2d))
    return module


def convert_conv3d_weight_memory_format(module: _M, memory_format: Any) -> _M:
    """Returns ``module``; its (transposed) 3-d convolutions' weights are
    contiguous (cygrad's one layout, whatever ``memory_format``)."""
    _walk(module, (Conv3d, ConvTranspose3d))
    return module
