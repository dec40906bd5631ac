"""torch's legacy tensor types: ``FloatTensor([1, 2])``, ``LongTensor(3)``,
``isinstance(x, torch.FloatTensor)``.  Each builds a cygrad Tensor of its
dtype through ``Tensor``'s legacy constructor (sizes or data) and is true
in ``isinstance`` for any tensor of that dtype."""

from cygrad import dtypes as _dt
from cygrad._kernels.engine import TensorBase
from cygrad._tensor import Tensor

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
