"""``cygrad.nn.grad``: the gradients of a convolution for its input and its
weight, as functions (``conv{1,2,3}d_input``, ``conv{1,2,3}d_weight``).

Each is one node of the convolution's own backward Functions
(``_functional_conv._ConvTransposeData`` for the input, ``_ConvWeight`` for
the weight), the ones ``F.conv*d`` records, so the numbers are those of
``conv*d``'s backward and they differentiate again (double backward).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ._functional_conv import _ConvTransposeData, _ConvWeight, _geo, _size_str

if TYPE_CHECKING:
    from cygrad._tensor import Tensor

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight",
           "conv3d_input", "conv3d_weight"]

_Size = Sequence[int]
_Arg = int | Sequence[int]


def _check(nd, input_shape, weight_shape, grad_shape, geo, name):
    """grad_output must be the output shape of the convolution of an input of
    ``input_shape`` with a weight of ``weight_shape``."""
    input_shape, weight_shape = tuple(input_shape), tuple(weight_shape)
    if len(input_shape) != nd + 2 or len(weight_shape) != nd + 2 \
            or len(grad_shape) != nd + 2:
        raise RuntimeError(
            f"{name}: expected {nd + 2}-D input size, weight and grad_output, got "
            f"{_size_str(input_shape)}, {_size_str(weight_shape)} and "
            f"{_size_str(grad_shape)}")
    strides, pads, dils, groups = geo
    strides, pads, dils = strides[-nd:], pads[-nd:], dils[-nd:]
    spatial = [(i + 2 * p - d * (k - 1) - 1) // s + 1 for i, k, s, p, d in
               zip(input_shape[2:], weight_shape[2:], strides, pads, dils)]
    want = (input_shape[0], weight_shape[0], *spatial)
    if (tuple(grad_shape) != want or input_shape[1] != weight_shape[1] * groups
            or weight_shape[0] % groups):
        raise RuntimeError(
            f"{name}: grad_output of size {_size_str(grad_shape)} is not the output "
            f"of a convolution of an input of size {_size_str(input_shape)} with a "
            f"weight of size {_size_str(weight_shape)} (groups={groups}, expected "
            f"{_size_str(want)})")


def _input(nd, input_size, weight, grad_output, stride, padding, dilation, groups,
           name):
    geo = _geo(nd, stride, padding, dilation, groups)
    shape = tuple(int(s) for s in input_size)
    _check(nd, shape, weight.shape, tuple(grad_output.shape), geo, name)
    return _ConvTransposeData.apply(grad_output, weight, None, shape, geo)


def _weight(nd, input, weight_size, grad_output, stride, padding, dilation, groups,
            name):
    geo = _geo(nd, stride, padding, dilation, groups)
    shape = tuple(int(s) for s in weight_size)
    _check(nd, input.shape, shape, tuple(grad_output.shape), geo, name)
    return _ConvWeight.apply(input, grad_output, shape, geo)


def conv1d_input(input_size: _Size, weight: Tensor, grad_output: Tensor,
                 stride: _Arg = 1, padding: _Arg = 0, dilation: _Arg = 1,
                 groups: int = 1) -> Tensor:
    """Gradient of ``conv1d`` for its input (of size ``input_size``)."""
    return _input(1, input_size, weight, grad_output, stride, padding, dilation,
                  groups, "conv1d_input")


def conv1d_weight(input: Tensor, weight_size: _Size, grad_output: Tensor,
                  stride: _Arg = 1, padding: _Arg = 0, dilation: _Arg = 1,
                  groups: int = 1) -> Tensor:
    """Gradient of ``conv1d`` for its weight (of size ``weight_size``)."""
    return _weight(1, input, weight_size, grad_output, stride, padding, dilation,
                   groups, "conv1d_weight")


def conv2d_input(input_size: _Size, weight: Tensor, grad_output: Tensor,
                 stride: _Arg = 1, padding: _Arg = 0, dilation: _Arg = 1,
                 groups: int = 1) -> Tensor:
    """Gradient of ``conv2d`` for its input (of size ``input_size``)."""
    return _input(2, input_size, weight, grad_output, stride, padding, dilation,
                  groups, "conv2d_input")


def conv2d_weight(input: Tensor, weight_size: _Size, grad_output: Tensor,
                  stride: _Arg = 1, padding: _Arg = 0, dilation: _Arg = 1,
                  groups: int = 1) -> Tensor:
    """Gradient of ``conv2d`` for its weight (of size ``weight_size``)."""
    return _weight(2, input, weight_size, grad_output, stride, padding, dilation,
                   groups, "conv2d_weight")


def conv3d_input(input_size: _Size, weight: Tensor, grad_output: Tensor,
                 stride: _Arg = 1, padding: _Arg = 0, dilation: _Arg = 1,
                 groups: int = 1) -> Tensor:
    """Gradient of ``conv3d`` for its input (of size ``input_size``)."""
    return _input(3, input_size, weight, grad_output, stride, padding, dilation,
                  groups, "conv3d_input")


def conv3d_weight(input: Tensor, weight_size: _Size, grad_output: Tensor,
                  stride: _Arg = 1, padding: _Arg = 0, dilation: _Arg = 1,
                  groups: int = 1) -> Tensor:
    """Gradient of ``conv3d`` for its weight (of size ``weight_size``)."""
    return _weight(3, input, weight_size, grad_output, stride, padding, dilation,
                   groups, "conv3d_weight")
