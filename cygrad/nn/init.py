"""In-place parameter initialisation, as ``torch.nn.init``.

Every function writes into ``tensor`` in place (as under ``no_grad``: the
tensor stays a leaf and its version counter advances) and returns it.  Random
draws come from cygrad's own generator, so ``cygrad.manual_seed`` makes them
reproducible; they are not the numbers torch would draw for the same seed.
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING

import numpy as np

from cygrad.creation import _rng, rand, randn

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


def _rand(tensor):
    return rand(*tensor.shape, dtype=tensor.dtype)._arr


def _randn(tensor):
    return randn(*tensor.shape, dtype=tensor.dtype)._arr


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill ``tensor`` with ``val``."""
    return _write(tensor, val)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill ``tensor`` with 0."""
    return _write(tensor, 0)


def ones_(tensor: Tensor) -> Tensor:
    """Fill ``tensor`` with 1."""
    return _write(tensor, 1)


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0) -> Tensor:
    """Fill ``tensor`` with draws from U(a, b)."""
    return _write(tensor, a + (b - a) * _rand(tensor))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    """Fill ``tensor`` with draws from N(mean, std**2)."""
    return _write(tensor, mean + std * _randn(tensor))


def xavier_uniform_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """U(-a, a) with ``a = gain * sqrt(6 / (fan_in + fan_out))`` (Glorot)."""
    fan_in, fan_out = _fans(tensor)
    a = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -a, a)


def xavier_normal_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """N(0, std**2) with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _fans(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)))


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu") -> Tensor:
    """U(-bound, bound), ``bound = gain * sqrt(3 / fan)`` (He).

    ``gain = calculate_gain(nonlinearity, a)``; ``fan`` is fan_in or fan_out
    per ``mode``.  A tensor with a zero-sized dimension is left unchanged.
    """
    if 0 in tuple(tensor.shape):
        return tensor
    fan = _fan(tensor, mode)
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu") -> Tensor:
    """N(0, std**2), ``std = gain / sqrt(fan)`` (He)."""
    if 0 in tuple(tensor.shape):
        return tensor
    fan = _fan(tensor, mode)
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan))


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
    """N(mean, std**2) restricted to [a, b] (a and b are values, not numbers
    of std): draws outside are drawn again, so the law is exact."""
    _floating(tensor)
    if not a <= b:
        raise ValueError(f"trunc_normal_: expected a <= b, got a={a}, b={b}")
    rng = _rng(generator)
    n = tensor._arr.size
    out = np.empty(n)
    todo = np.arange(n)
    for _ in range(1000):
        if todo.size == 0:
            break
        draw = mean + std * rng.standard_normal(todo.size)
        ok = (draw >= a) & (draw <= b)
        out[todo[ok]] = draw[ok]
        todo = todo[~ok]
    if todo.size:
        # [a, b] far in a tail: the uniform on [a, b] is within float error
        out[todo] = rng.uniform(a, b, todo.size)
    return _write(tensor, out.reshape(tensor._arr.shape))


def orthogonal_(tensor: Tensor, gain: float = 1,
                generator: Generator | None = None) -> Tensor:
    """A (semi-)orthogonal matrix (Saxe et al.) times ``gain``: the Q of the
    QR of a normal draw, its columns' signs fixed by R's diagonal; dims
    after the first are flattened."""
    _floating(tensor)
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor._arr.size == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor._arr.size // rows
    flat = _rng(generator).standard_normal((rows, cols))
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
