"""torch's legacy tensor types: ``FloatTensor([1, 2])``, ``LongTensor(3)``,
``isinstance(x, torch.FloatTensor)``.  Each builds a cygrad Tensor of its
dtype through ``Tensor``'s legacy constructor (sizes or data) and is true
in ``isinstance`` for any tensor of that dtype; ``set_default_tensor_type``
is torch's deprecated setter of the default dtype through them."""

import warnings

from cygrad import dtypes as _dt
from cygrad._kernels.engine import TensorBase
from cygrad._tensor import Tensor
from cygrad.creation import set_default_dtype

__all__ = [
    "BoolTensor",
    "ByteTensor",
    "CharTensor",
    "DoubleTensor",
    "FloatTensor",
    "HalfTensor",
    "IntTensor",
    "LongTensor",
    "ShortTensor",
    "set_default_tensor_type",
]


class _LegacyType(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, TensorBase) and obj._arr.dtype == cls.dtype

    def __call__(cls, *args, device=None, requires_grad=False):
        return Tensor(*args, dtype=cls.dtype, device=device,
                      requires_grad=requires_grad)

    def __repr__(cls):
        return f"<class 'cygrad.{cls.__name__}'>"


def _legacy(d):
    name = _dt.type_name(d).rpartition(".")[2]
    return _LegacyType(name, (), {"dtype": d, "__doc__": f"Tensors of dtype {d}."})


FloatTensor = _legacy(_dt.float32)
DoubleTensor = _legacy(_dt.float64)
HalfTensor = _legacy(_dt.float16)
LongTensor = _legacy(_dt.int64)
IntTensor = _legacy(_dt.int32)
ShortTensor = _legacy(_dt.int16)
CharTensor = _legacy(_dt.int8)
ByteTensor = _legacy(_dt.uint8)
BoolTensor = _legacy(_dt.bool)


_BY_NAME = {f"torch.{cls.__name__}": cls for cls in (
    FloatTensor, DoubleTensor, HalfTensor, LongTensor, IntTensor, ShortTensor,
    CharTensor, ByteTensor, BoolTensor)}


def set_default_tensor_type(t):
    """torch's deprecated way to set the default dtype: a floating legacy type
    (``torch.DoubleTensor``) or its name (``"torch.DoubleTensor"``)."""
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, "
                  "please use torch.set_default_dtype() and "
                  "torch.set_default_device() as alternatives.", UserWarning,
                  stacklevel=2)
    if isinstance(t, str):
        key = t if t.startswith("torch.") else f"torch.{t}"
        if key not in _BY_NAME:
            raise TypeError(f"invalid type: '{t}'")
        t = _BY_NAME[key]
    if not isinstance(t, _LegacyType):
        raise TypeError(f"invalid type object: only floating-point types are "
                        f"supported as the default type, got {t!r}")
    if t.dtype.kind != "f":
        raise TypeError("only floating-point types are supported as the default "
                        "type")
    set_default_dtype(t.dtype)
