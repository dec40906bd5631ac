"""dtype names.  cygrad's dtypes *are* NumPy dtypes, so either spelling works."""

import numpy as np

float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
float16 = np.dtype(np.float16)
int64 = np.dtype(np.int64)
int32 = np.dtype(np.int32)
int16 = np.dtype(np.int16)
int8 = np.dtype(np.int8)
uint8 = np.dtype(np.uint8)
bool = np.dtype(np.bool_)   # noqa: A001 - torch's name
float = float32             # noqa: A001
double = float64
long = int64
half = float16


class _Refused:
    """A torch dtype cygrad names but refuses: NumPy has no bfloat16, and a
    half-working one would silently compute something else."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"cygrad.{self.name}"

    def error(self):
        return TypeError(
            f"cygrad does not support {self.name}: NumPy has no such type. Use "
            "float32 (the default) or float16 (stored as float16, computed in "
            "float32, as torch does on the CPU).")


bfloat16 = _Refused("bfloat16")


class _DTypeMeta(type):
    """Makes ``isinstance(x, cygrad.dtype)`` true for every dtype object cygrad
    names (NumPy dtypes and the refused ones), as scripts check it."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, (np.dtype, _Refused))

    def __subclasscheck__(cls, sub):
        return isinstance(sub, type) and issubclass(sub, (np.dtype, _Refused))


class dtype(metaclass=_DTypeMeta):  # noqa: N801 - torch's name
    """The type of cygrad's dtype objects, for annotations and ``isinstance``
    (``def f(dt: torch.dtype = torch.float32)``).  The objects themselves are
    NumPy dtypes; like torch's, this type makes none."""

    def __new__(cls, *args, **kwargs):
        raise TypeError("cannot create 'cygrad.dtype' instances")

_NAMES = {
    float32: "float32", float64: "float64", float16: "float16", int64: "int64",
    int32: "int32", int16: "int16", int8: "int8", uint8: "uint8", bool: "bool",
}
# torch's legacy type names, which scripts compare ``x.type()`` against.
_TYPE_NAMES = {
    float32: "torch.FloatTensor", float64: "torch.DoubleTensor",
    float16: "torch.HalfTensor", int64: "torch.LongTensor", int32: "torch.IntTensor",
    int16: "torch.ShortTensor", int8: "torch.CharTensor", uint8: "torch.ByteTensor",
    bool: "torch.BoolTensor",
}
SUPPORTED = frozenset(_NAMES)


def to_numpy(dtype):
    """Any accepted dtype spelling -> a NumPy dtype; TypeError if unsupported."""
    if dtype is None:
        return None
    if isinstance(dtype, np.dtype) and dtype in SUPPORTED:     # the usual case
        return dtype
    if isinstance(dtype, _Refused):
        raise dtype.error()
    try:
        d = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"cygrad does not understand dtype {dtype!r}") from None
    if d not in SUPPORTED:
        raise TypeError(
            f"cygrad does not support dtype {d} (supported: "
            f"{', '.join(sorted(_NAMES.values()))})")
    return d


def wrap(d):
    return d


def name(d):
    return _NAMES.get(np.dtype(d), str(d))


def type_name(d):
    return _TYPE_NAMES[np.dtype(d)]


# The C++ names torch's messages print for a dtype's element type (the ones
# its typeid-based checks show, e.g. "expected m1 and m2 to have the same
# dtype, but got: unsigned char != float").
_C_NAMES = {
    np.dtype(np.bool_): "bool", np.dtype(np.uint8): "unsigned char",
    np.dtype(np.int8): "signed char", np.dtype(np.int16): "short int",
    np.dtype(np.int32): "int", np.dtype(np.int64): "long int",
    np.dtype(np.float16): "c10::Half", np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
}


def short_name(d):
    """torch's scalar type name of a dtype (``Float``, ``Byte``)."""
    return type_name(d).rpartition(".")[2][:-len("Tensor")]


def c_name(d):
    """The C++ element type name torch's typeid-based messages print."""
    return _C_NAMES.get(np.dtype(d), str(d))


def from_type_name(type_name):
    """The dtype of a legacy type name (``'torch.FloatTensor'``; the
    ``cygrad.`` prefix works too)."""
    short = type_name.rpartition(".")[2]
    for d, n in _TYPE_NAMES.items():
        if n.rpartition(".")[2] == short:
            return d
    raise ValueError(f"invalid type: '{type_name}'")
