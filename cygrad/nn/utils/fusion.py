"""Folding an evaluation-mode batch norm into the convolution or linear
layer before it, as ``torch.nn.utils.fusion``: with ``s = bn_w /
sqrt(running_var + eps)`` the fused layer has weight ``W * s`` (per output
channel; per dim 1 of a transposed convolution's weight) and bias
``(b - running_mean) * s + bn_b``, so that ``fused(x) == bn(layer(x))``."""

import copy

from cygrad import ops
from cygrad.autograd.grad_mode import no_grad
from cygrad.creation import zeros_like

from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]


def _scale_shift(bias, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    rsqrt = ops.rsqrt(bn_rv + bn_eps)
    if bn_w is not None:
        rsqrt = rsqrt * bn_w
    if bias is None:
        bias = zeros_like(bn_rm)
    shift = (bias - bn_rm) * rsqrt
    if bn_b is not None:
        shift = shift + bn_b
    return rsqrt, shift


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b,
                         transpose=False):
    """(fused weight, fused bias) as Parameters, in the conv weight's and
    bias's dtypes (the bias takes the weight's when ``conv_b`` is None)."""
    w_dtype = conv_w.dtype
    b_dtype = conv_b.dtype if conv_b is not None else w_dtype
    with no_grad():
        scale, shift = _scale_shift(conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b)
        shape = [1] * conv_w.ndim
        shape[1 if transpose else 0] = -1
        weight = (conv_w * scale.reshape(shape)).to(w_dtype)
        bias = shift.to(b_dtype)
    return (Parameter(weight, conv_w.requires_grad),
            Parameter(bias, conv_b.requires_grad if conv_b is not None
                      else conv_w.requires_grad))


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A copy of ``conv`` (eval mode) computing ``bn(conv(x))`` (eval mode)."""
    assert not (conv.training or bn.training), "Fusion only for eval!"
    fused = copy.deepcopy(conv)
    assert bn.running_mean is not None and bn.running_var is not None
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight,
        bn.bias, transpose)
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """(fused weight, fused bias) as Parameters."""
    with no_grad():
        scale, shift = _scale_shift(linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b)
        weight = linear_w * scale.unsqueeze(-1)
    return (Parameter(weight, linear_w.requires_grad),
            Parameter(shift, linear_b.requires_grad if linear_b is not None
                      else linear_w.requires_grad))


def fuse_linear_bn_eval(linear, bn):
    """A copy of ``linear`` (eval mode) computing ``bn(linear(x))``."""
    assert not (linear.training or bn.training), "Fusion only for eval!"
    fused = copy.deepcopy(linear)
    assert linear.out_features == bn.num_features or bn.num_features == 1, (
        "To fuse, linear.out_features == bn.num_features or bn.num_features == 1")
    assert bn.running_mean is not None and bn.running_var is not None
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight,
        bn.bias)
    return fused
