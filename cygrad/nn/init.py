"""In-place parameter initialisation, as ``torch.nn.init``.

Every function writes into ``tensor`` in place (as under ``no_grad``: the
tensor stays a leaf and its version counter advances) and returns it.  Random
draws come from cygrad's own generator, so ``cygrad.manual_seed`` makes them
reproducible; they are not the numbers torch would draw for the same seed.
"""

import math

import numpy as np

from cygrad.creation import rand, randn

__all__ = [
    "calculate_gain",
    "constant_",
    "kaiming_normal_",
    "kaiming_uniform_",
    "normal_",
    "ones_",
    "uniform_",
    "xavier_normal_",
    "xavier_uniform_",
    "zeros_",
]


def _write(tensor, values):
    """Store ``values`` into ``tensor`` in place and advance its version."""
    arr = tensor._arr
    if not np.issubdtype(arr.dtype, np.floating):
        raise TypeError(f"nn.init: expected a floating point tensor, got {arr.dtype}")
    arr[...] = values
    tensor._bump_version()
    return tensor


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for ``nonlinearity`` (torch's table).

    ``linear``, the conv variants and ``sigmoid``: 1; ``tanh``: 5/3;
    ``relu``: sqrt(2); ``leaky_relu``: sqrt(2 / (1 + slope**2)) with
    ``param`` the negative slope (default 0.01); ``selu``: 3/4.
    """
    linear = (
        "linear",
        "conv1d",
        "conv2d",
        "conv3d",
        "conv_transpose1d",
        "conv_transpose2d",
        "conv_transpose3d",
        "sigmoid",
    )
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _fans(tensor):
    shape = tuple(tensor.shape)
    if len(shape) < 2:
        raise ValueError(
            "Fan in and fan out can not be computed for tensor with fewer than 2 "
            "dimensions"
        )
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


def _fan(tensor, mode):
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(
            f"Mode {mode} not supported, please use one of fan_in, fan_out"
        )
    fan_in, fan_out = _fans(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _rand(tensor):
    return rand(*tensor.shape, dtype=tensor.dtype)._arr


def _randn(tensor):
    return randn(*tensor.shape, dtype=tensor.dtype)._arr


def constant_(tensor, val):
    """Fill ``tensor`` with ``val``."""
    return _write(tensor, val)


def zeros_(tensor):
    """Fill ``tensor`` with 0."""
    return _write(tensor, 0)


def ones_(tensor):
    """Fill ``tensor`` with 1."""
    return _write(tensor, 1)


def uniform_(tensor, a=0.0, b=1.0):
    """Fill ``tensor`` with draws from U(a, b)."""
    return _write(tensor, a + (b - a) * _rand(tensor))


def normal_(tensor, mean=0.0, std=1.0):
    """Fill ``tensor`` with draws from N(mean, std**2)."""
    return _write(tensor, mean + std * _randn(tensor))


def xavier_uniform_(tensor, gain=1.0):
    """U(-a, a) with ``a = gain * sqrt(6 / (fan_in + fan_out))`` (Glorot)."""
    fan_in, fan_out = _fans(tensor)
    a = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -a, a)


def xavier_normal_(tensor, gain=1.0):
    """N(0, std**2) with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _fans(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)))


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    """U(-bound, bound), ``bound = gain * sqrt(3 / fan)`` (He).

    ``gain = calculate_gain(nonlinearity, a)``; ``fan`` is fan_in or fan_out
    per ``mode``.  A tensor with a zero-sized dimension is left unchanged.
    """
    if 0 in tuple(tensor.shape):
        return tensor
    fan = _fan(tensor, mode)
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    """N(0, std**2), ``std = gain / sqrt(fan)`` (He)."""
    if 0 in tuple(tensor.shape):
        return tensor
    fan = _fan(tensor, mode)
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan))
