"""Small torch functions and Tensor methods: the casts byte/char/short, the
queries (is_same_size, is_signed, is_complex, is_nonzero, ndimension,
get_device), new_empty_strided, Tensor.where, and the torch-level
detach, fill, rsub, scalar_tensor, asarray, range, frombuffer, typename and
the interop-thread settings."""

import warnings

import numpy as np

from cygrad import dtypes as _dt
from cygrad._kernels.engine import TensorBase, _wrap
from cygrad._tensor import Tensor
from cygrad._typeinfo import is_complex, is_nonzero
from cygrad.creation import (
    arange,
    as_tensor,
    empty_strided,
    full_like,
    get_default_dtype,
    tensor,
)
from cygrad.ops.registry import op
from cygrad.ops.select import where


def _byte(self, memory_format=None):
    return self.to(np.uint8)


def _char(self, memory_format=None):
    return self.to(np.int8)


def _short(self, memory_format=None):
    return self.to(np.int16)


def is_same_size(input, other):
    """Whether the two tensors have the same shape."""
    return tuple(input._arr.shape) == tuple(other._arr.shape)


def is_signed(input):
    """Whether the tensor's dtype is signed (floats and int8..int64)."""
    return input._arr.dtype.kind in "fi"


def get_device(input):
    """The device index: -1, the CPU's."""
    return -1


def _ndimension(self):
    return self._arr.ndim


def _new_empty_strided(self, size, stride, *, dtype=None, device=None,
                       requires_grad=False, layout=None, pin_memory=False):
    return empty_strided(size, stride, dtype=self._arr.dtype if dtype is None
                         else dtype, requires_grad=requires_grad)


def _where_method(self, condition, other):
    """``where(condition, self, other)``."""
    return where(condition, self, other)


@op("detach", kind="shape")
def detach(input):
    """``input.detach()``: the same data, cut from the graph."""
    return input.detach()


@op("fill", kind="shape")
def fill(input, value):
    """out = a tensor like ``input`` filled with ``value`` (a number or a 0-d
    tensor); grad to a 0-d tensor value = the sum of g."""
    if isinstance(value, TensorBase):
        if value._arr.ndim:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got "
                               f"tensor with {value._arr.ndim} dimensions.")
        value = value.to(input.dtype)
    elif not input._requires_grad:
        return full_like(input, value)
    # where(False, input, value): input's gradient is zeros, as torch's
    keep = _wrap(np.zeros(input._arr.shape, bool))
    return where(keep, input, value).to(input.dtype)


@op("rsub", kind="other")
def rsub(input, other, *, alpha=1):
    """out = other - alpha * input; grads -alpha * g and g."""
    return other - (input if alpha == 1 else input * alpha)


def scalar_tensor(s, *, dtype=None, device=None, layout=None, pin_memory=False,
                  requires_grad=False):
    """A 0-d tensor holding ``s``, in the default float dtype unless ``dtype``."""
    t = tensor(s, dtype=get_default_dtype() if dtype is None else dtype)
    if requires_grad:
        t.requires_grad_(True)
    return t


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """``obj`` as a tensor, sharing memory with it when it is a tensor or an
    array of the right dtype and ``copy`` is not True."""
    if copy:
        t = tensor(obj._arr if isinstance(obj, TensorBase) else obj, dtype=dtype)
    else:
        if copy is False and isinstance(obj, (list, tuple, int, float)):
            raise ValueError("can't alias arbitrary sequence into a tensor.")
        if isinstance(obj, (np.ndarray, TensorBase)):
            t = as_tensor(obj, dtype=dtype)
        else:
            t = tensor(obj, dtype=dtype)
    if requires_grad:
        t = t if t._requires_grad else t.requires_grad_(True)
    return t


def range(start=0, end=None, step=1, *, dtype=None, layout=None, device=None,
          requires_grad=False):
    """Deprecated: the values start, start + step, ... up to and including
    ``end`` (default float dtype)."""
    warnings.warn("torch.range is deprecated and will be removed in a future release "
                  "because its behavior is inconsistent with Python's range builtin. "
                  "Instead, use torch.arange, which produces values in [start, end).",
                  UserWarning, stacklevel=2)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    n = int(np.floor((end - start) / step)) + 1
    dt = get_default_dtype() if dtype is None else dtype
    return arange(0, max(n, 0), dtype=np.float64) \
        .mul(step).add(start).to(dt).requires_grad_(requires_grad)


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor over the bytes of ``buffer`` (sharing its memory)."""
    arr = np.frombuffer(buffer, dtype=_dt.to_numpy(dtype), count=count, offset=offset)
    t = _wrap(arr)
    if requires_grad:
        t.requires_grad_(True)
    return t


def typename(obj):
    """torch's type name of a tensor (``'torch.FloatTensor'``), else the
    object's qualified class name."""
    if isinstance(obj, TensorBase):
        return obj.type()
    cls = type(obj)
    module = cls.__module__
    if module in ("builtins", "__builtin__", None):
        return cls.__qualname__
    return f"{module}.{cls.__qualname__}"


_INTEROP = [1]


def get_num_interop_threads():
    """The number of threads for running independent ops (cygrad runs ops one
    after another: the setting is kept, not used)."""
    return _INTEROP[0]


def set_num_interop_threads(n):
    """Set the number returned by ``get_num_interop_threads`` (n >= 1)."""
    if int(n) < 1:
        raise RuntimeError("Expected positive number of threads")
    _INTEROP[0] = int(n)


def _install():
    Tensor.byte = _byte
    Tensor.char = _char
    Tensor.short = _short
    Tensor.is_same_size = is_same_size
    Tensor.is_signed = is_signed
    Tensor.is_complex = is_complex
    Tensor.is_nonzero = is_nonzero
    Tensor.get_device = get_device
    Tensor.ndimension = _ndimension
    Tensor.new_empty_strided = _new_empty_strided
    Tensor.where = _where_method


_install()
