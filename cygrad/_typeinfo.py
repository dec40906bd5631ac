"""Questions about dtypes and tensors that scripts ask: ``finfo``, ``iinfo``,
``promote_types``, ``result_type``, ``can_cast``, ``numel``,
``is_floating_point``, ``is_complex``, ``is_nonzero``.

Promotion follows torch, which differs from NumPy where an integer meets a
float (``int32`` with ``float16`` is ``float16``, not ``float64``) and where
a tensor meets a 0-d tensor or a Python number: a higher-dimensional
operand's dtype wins unless the other is of a higher category (bool <
integer < float), and then a Python number contributes only its category
(the default float dtype, or int64).
"""

import numbers

import numpy as np

from cygrad import dtypes as _dt
from cygrad._kernels.engine import TensorBase
from cygrad.creation import get_default_dtype

__all__ = [
    "can_cast", "finfo", "iinfo", "is_complex", "is_floating_point", "is_nonzero",
    "numel", "promote_types", "result_type",
]


class finfo:
    """Machine limits of a floating dtype (default: the default dtype):
    ``bits``, ``eps``, ``max``, ``min``, ``tiny`` (= ``smallest_normal``),
    ``resolution`` and ``dtype`` (its name)."""

    def __init__(self, type=None):
        d = get_default_dtype() if type is None else _dt.to_numpy(type)
        if d.kind != "f":
            raise TypeError("torch.finfo() requires a floating point input type. "
                            "Use torch.iinfo to handle 'torch.finfo'")
        info = np.finfo(d)
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -int(info.precision)
        self.dtype = _dt.name(d)

    def __eq__(self, other):
        return isinstance(other, finfo) and other.dtype == self.dtype

    def __hash__(self):
        return hash(("finfo", self.dtype))

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, "
                f"max={self.max:g}, eps={self.eps:g}, smallest_normal="
                f"{self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype: ``bits``, ``max``, ``min``, ``dtype``."""

    def __init__(self, type):
        d = _dt.to_numpy(type)
        if d.kind == "b":
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if d.kind not in "iu":
            raise TypeError("torch.iinfo() requires an integer input type. Use "
                            "torch.finfo to handle 'torch.iinfo'")
        info = np.iinfo(d)
        self.bits = int(info.bits)
        self.max = int(info.max)
        self.min = int(info.min)
        self.dtype = _dt.name(d)

    def __eq__(self, other):
        return isinstance(other, iinfo) and other.dtype == self.dtype

    def __hash__(self):
        return hash(("iinfo", self.dtype))

    def __repr__(self):
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"


def _category(d):
    return {"b": 0, "u": 1, "i": 1, "f": 2}[d.kind]


def promote_types(type1, type2):
    """The smallest dtype both ``type1`` and ``type2`` convert to (torch's
    table: a float meeting an integer gives the float)."""
    a, b = _dt.to_numpy(type1), _dt.to_numpy(type2)
    ca, cb = _category(a), _category(b)
    if ca != cb:
        return a if ca > cb else b
    if ca == 0:
        return a
    return np.promote_types(a, b)


def _promote_all(dts):
    out = dts[0]
    for d in dts[1:]:
        out = promote_types(out, d)
    return out


def result_type(tensor, other):
    """The dtype of an arithmetic op on ``tensor`` and ``other`` (tensors or
    numbers), with torch's dimension-aware rules."""
    groups = ([], [], [])      # tensors with dims, 0-d tensors, Python numbers
    for x in (tensor, other):
        if isinstance(x, TensorBase):
            groups[0 if x._arr.ndim else 1].append(x._arr.dtype)
        elif isinstance(x, bool):
            groups[2].append(_dt.bool)
        elif isinstance(x, numbers.Integral):
            groups[2].append(_dt.int64)
        elif isinstance(x, numbers.Real):
            groups[2].append(np.dtype(get_default_dtype()))
        else:
            raise TypeError(f"result_type(): arguments must be Tensors or numbers, "
                            f"got {type(x).__name__}")
    out = None
    for level, dts in enumerate(groups):
        if not dts:
            continue
        d = _promote_all(dts)
        if out is None:
            out = d
        elif _category(d) > _category(out):
            if level == 2:      # a Python number: only its category counts
                d = np.dtype(get_default_dtype()) if d.kind == "f" else _dt.int64
            out = d
    return out


def can_cast(from_, to):
    """Whether torch's type promotion allows casting ``from_`` to ``to``
    (never down a category: float to int, or int to bool)."""
    a, b = _dt.to_numpy(from_), _dt.to_numpy(to)
    return _category(a) <= _category(b)


def _check_tensor(x, fname):
    if not isinstance(x, TensorBase):
        raise TypeError(f"{fname}(): argument 'input' (position 1) must be Tensor, "
                        f"not {type(x).__name__}")


def numel(input):
    """The number of elements of ``input``."""
    _check_tensor(input, "numel")
    return int(input._arr.size)


def is_floating_point(input):
    _check_tensor(input, "is_floating_point")
    return input._arr.dtype.kind == "f"


def is_complex(input):
    """Always False: cygrad has no complex dtypes."""
    _check_tensor(input, "is_complex")
    return False


def is_nonzero(input):
    """Whether a one-element tensor is nonzero (RuntimeError otherwise)."""
    _check_tensor(input, "is_nonzero")
    if input._arr.size == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if input._arr.size > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is "
                           "ambiguous")
    return bool(input._arr.reshape(()).item() != 0)
