"""In-place parameter initialisation, as ``torch.nn.init``.

Every function writes into ``tensor`` in place (as under ``no_grad``: the
tensor stays a leaf and its version counter advances) and returns it.  Random
draws follow torch's: after the same ``manual_seed`` the uniform, normal,
Xavier, Kaiming, truncated-normal and orthogonal initialisations give torch's
values (``sparse_`` draws from the same stream but through NumPy's
permutation, so its values differ).
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING

import numpy as np

from cygrad.creation import _in_layout, _normal_array, _rng, _uniform_array

if TYPE_CHECKING:
    from cygrad._tensor import Tensor
    from cygrad.creation import Generator

__all__ = [
    "calculate_gain",
    "constant_",
    "dirac_",
    "eye_",
    "orthogonal_",
    "sparse_",
    "trunc_normal_",
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


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
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


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill ``tensor`` with ``val``."""
    return _write(tensor, val)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill ``tensor`` with 0."""
    return _write(tensor, 0)


def ones_(tensor: Tensor) -> Tensor:
    """Fill ``tensor`` with 1."""
    return _write(tensor, 1)


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0,
             generator: Generator | None = None) -> Tensor:
    """Fill ``tensor`` with draws from U(a, b) (torch's ``uniform_``)."""
    _floating(tensor)
    d = tensor._arr.dtype
    return _write(tensor, _in_layout(tensor._arr, lambda shape, contig: _uniform_array(
        shape, d, float(a), float(b), generator)))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0,
            generator: Generator | None = None) -> Tensor:
    """Fill ``tensor`` with draws from N(mean, std**2) (torch's ``normal_``)."""
    _floating(tensor)
    d = tensor._arr.dtype
    return _write(tensor, _in_layout(tensor._arr, lambda shape, contig: _normal_array(
        shape, d, float(mean), float(std), generator, contig)))


def xavier_uniform_(tensor: Tensor, gain: float = 1.0,
                    generator: Generator | None = None) -> Tensor:
    """U(-a, a) with ``a = sqrt(3) * gain * sqrt(2 / (fan_in + fan_out))``
    (Glorot; the bound computed in torch's order, so its rounding too)."""
    fan_in, fan_out = _fans(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0,
                   generator: Generator | None = None) -> Tensor:
    """N(0, std**2) with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _fans(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)),
                   generator)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu",
                     generator: Generator | None = None) -> Tensor:
    """U(-bound, bound), ``bound = gain * sqrt(3 / fan)`` (He).

    ``gain = calculate_gain(nonlinearity, a)``; ``fan`` is fan_in or fan_out
    per ``mode``.  A tensor with a zero-sized dimension is left unchanged.
    """
    if 0 in tuple(tensor.shape):
        return tensor
    fan = _fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu",
                    generator: Generator | None = None) -> Tensor:
    """N(0, std**2), ``std = gain / sqrt(fan)`` (He)."""
    if 0 in tuple(tensor.shape):
        return tensor
    fan = _fan(tensor, mode)
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan),
                   generator)


def _calculate_fan_in_and_fan_out(tensor):
    """(fan_in, fan_out) of a weight of shape (out, in, *kernel): in and out
    times the kernel's size (torch's private helper, which scripts call)."""
    return _fans(tensor)


def _calculate_correct_fan(tensor, mode):
    return _fan(tensor, mode.lower() if isinstance(mode, str) else mode)


def _floating(tensor):
    if not np.issubdtype(tensor._arr.dtype, np.floating):
        raise TypeError(
            f"nn.init: expected a floating point tensor, got {tensor._arr.dtype}")


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator: Generator | None = None) -> Tensor:
    """N(mean, std**2) restricted to [a, b] (values, not numbers of std), by
    torch's rejection recipes, draw for draw: when [a, b] holds more than 0.3
    of the mass, normal draws with the ones outside drawn again; otherwise
    uniform draws on [a, b] accepted against the density's peak."""
    _floating(tensor)
    if not a <= b:
        raise ValueError(f"trunc_normal_: expected a <= b, got a={a}, b={b}")
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
                      "The distribution of values may be incorrect.", stacklevel=2)

    def cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    d = tensor._arr.dtype
    shape = tensor._arr.shape

    def draws(kind, *args):
        make = _normal_array if kind == "normal" else _uniform_array
        return make(shape, d, *args, generator)

    if cdf((b - mean) / std) - cdf((a - mean) / std) > 0.3:
        lo, hi = d.type(a), d.type(b)
        result = draws("normal", float(mean), float(std))
        while True:
            outside = (result < lo) | (result > hi)
            if not outside.any():
                break
            result = np.where(outside, draws("normal", float(mean), float(std)), result)
        return _write(tensor, result)
    mode = max(a, min(mean, b))
    log_peak = -0.5 * ((mode - mean) / std) ** 2

    def log_density(c):
        # torch's in-place chain, rounded in the tensor's dtype
        c = (c - d.type(mean)) / d.type(std)
        return (c * c) * d.type(-0.5) - d.type(log_peak)

    def rejected(c):
        with np.errstate(divide="ignore"):
            return np.log(draws("uniform", 0.0, 1.0)) > log_density(c)

    result = draws("uniform", float(a), float(b))
    pending = rejected(result)
    while pending.any():
        cand = draws("uniform", float(a), float(b))
        result = np.where(pending, cand, result)
        pending = np.where(pending, rejected(cand), pending)
    return _write(tensor, result)


def orthogonal_(tensor: Tensor, gain: float = 1,
                generator: Generator | None = None) -> Tensor:
    """A (semi-)orthogonal matrix (Saxe et al.) times ``gain``: the Q of the
    QR of a normal draw, its columns' signs fixed by R's diagonal; dims
    after the first are flattened.  The draw is torch's ``normal_`` of a
    (rows, cols) tensor of ``tensor``'s dtype, so a seed gives torch's
    matrix (to the rounding of the two LAPACK builds' QR) and leaves the
    stream where torch's is."""
    _floating(tensor)
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor._arr.size == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor._arr.size // rows
    flat = _normal_array((rows, cols), tensor._arr.dtype, 0.0, 1.0, generator)
    if flat.dtype == np.float16:        # no half QR: factor in float32
        flat = flat.astype(np.float32)
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    d = np.sign(np.diag(r))
    d[d == 0] = 1
    q = q * d
    if rows < cols:
        q = q.T
    return _write(tensor, (gain * q).reshape(tensor._arr.shape))


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01,
            generator: Generator | None = None) -> Tensor:
    """2-D: N(0, std**2) entries, with ``ceil(sparsity * rows)`` of each
    column's entries set to zero at random rows (Martens 2010)."""
    _floating(tensor)
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    rng = _rng(generator)
    vals = std * rng.standard_normal((rows, cols))
    zeros = int(math.ceil(sparsity * rows))
    for j in range(cols):
        vals[rng.permutation(rows)[:zeros], j] = 0
    return _write(tensor, vals)


def eye_(tensor: Tensor) -> Tensor:
    """The 2-D identity (ones on the main diagonal of a possibly
    rectangular matrix)."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _write(tensor, np.eye(*tensor.shape))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """A 3-, 4- or 5-D convolution weight that keeps its input: a 1 at the
    kernel's centre for channel d of each group's output d."""
    nd = tensor.ndim
    if nd not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    shape = tuple(tensor.shape)
    if shape[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    per_group = shape[0] // groups
    k = min(per_group, shape[1])
    vals = np.zeros(shape)
    centre = tuple(s // 2 for s in shape[2:])
    for g in range(groups):
        for d in range(k):
            vals[(g * per_group + d, d) + centre] = 1
    return _write(tensor, vals)


def _deprecated(name):
    """torch's pre-0.4 name ``nn.init.<name>``: ``<name>_`` with a warning."""
    target = globals()[name + "_"]

    def alias(*args, **kwargs):
        warnings.warn(f"`nn.init.{name}` is now deprecated in favor of "
                      f"`nn.init.{name}_`.", FutureWarning, stacklevel=2)
        return target(*args, **kwargs)
    alias.__name__ = alias.__qualname__ = name
    alias.__doc__ = f"Deprecated: ``{name}_`` (same arguments), with a FutureWarning."
    return alias


constant = _deprecated("constant")
dirac = _deprecated("dirac")
eye = _deprecated("eye")
kaiming_normal = _deprecated("kaiming_normal")
kaiming_uniform = _deprecated("kaiming_uniform")
normal = _deprecated("normal")
orthogonal = _deprecated("orthogonal")
sparse = _deprecated("sparse")
uniform = _deprecated("uniform")
xavier_normal = _deprecated("xavier_normal")
xavier_uniform = _deprecated("xavier_uniform")
