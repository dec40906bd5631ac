"""Small torch functions and Tensor methods: the casts byte/char/short, the
queries (is_same_size, is_signed, is_complex, is_nonzero, ndimension,
get_device), new_empty_strided, Tensor.where, and the torch-level
detach, fill, rsub, scalar_tensor, asarray, range, frombuffer, typename and
the interop-thread settings; the complex-number API on real tensors (angle,
conj, real, imag...), bitwise_not and the shifts, fill_diagonal_."""

import math
import warnings

import numpy as np

from cygrad import dtypes as _dt
from cygrad._kernels.engine import TensorBase, _wrap
from cygrad._tensor import Tensor
from cygrad._typeinfo import is_complex, is_nonzero, result_type
from cygrad.autograd.function import Function
from cygrad.creation import (
    arange,
    as_tensor,
    empty_strided,
    full_like,
    get_default_dtype,
    tensor,
)
from cygrad.ops.inplace import _inplace_apply, _shaped_inplace
from cygrad.ops.out import _torch_name
from cygrad.ops.registry import _register_view, op
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


def is_inference(input):
    """Whether the tensor was made in inference mode
    (``input.is_inference()``)."""
    return input.is_inference()


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


# --- the complex-number API on real tensors ------------------------------------------------

class Angle(Function):
    """out = the argument of x: pi where x < 0, else 0 (nan for nan); grad = 0."""

    _node_name = "AngleBackward0"

    @staticmethod
    def forward(ctx, x):
        a = x._arr
        return _wrap(np.where(a < 0, math.pi, np.where(np.isnan(a), a, 0.0))
                     .astype(a.dtype))

    @staticmethod
    def backward(ctx, g):
        return g.new_zeros(tuple(g.shape))


@op("angle", methods=("angle",), kind="special")
def angle(input):
    """out = the argument of x: pi where x < 0, 0 where x >= 0, nan for nan
    (float results); grad = 0."""
    x = input if input._arr.dtype.kind == "f" else input.to(get_default_dtype())
    return Angle.apply(x)


def _itself(name, doc):
    def fn(input):
        return input
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


conj = _itself("conj", "The complex conjugate: the tensor itself for real tensors.")
conj_physical = _itself("conj_physical", "``conj`` materialized: the tensor itself "
                        "for real tensors.")
resolve_conj = _itself("resolve_conj", "The tensor itself (real tensors carry no "
                       "conjugate bit).")
resolve_neg = _itself("resolve_neg", "The tensor itself (real tensors carry no "
                      "negative bit).")


def real(input):
    """The real part: the tensor itself for real tensors."""
    return input


def imag(input):
    """The imaginary part: refused for real tensors, as torch."""
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


def _false(self):
    return False


# --- bitwise not and shifts ------------------------------------------------------------------

def _int_only(kernel, x):
    if x._arr.dtype.kind not in "iub":
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{_torch_name(x._arr.dtype)}'")


@op("bitwise_not", methods=("bitwise_not",), kind="compare")
def bitwise_not(input):
    """out = ~x for integer and bool tensors (no gradient)."""
    _int_only("bitwise_not_cpu", input)
    return _wrap(np.invert(input._arr))


def _shift(name, ufunc, input, other):
    if not isinstance(input, TensorBase):
        input = _wrap(np.asarray(input))
    dt = result_type(input, other)
    _int_only(f"{name}_cpu", _wrap(np.zeros(0, dt)))
    b = other._arr if isinstance(other, TensorBase) else np.asarray(other)
    return _wrap(ufunc(input._arr.astype(dt), b.astype(dt)).astype(dt))


@op("bitwise_left_shift", methods=("bitwise_left_shift", "__lshift__"),
    kind="compare")
def bitwise_left_shift(input, other):
    """out = x << other for integer tensors (no gradient)."""
    return _shift("lshift", np.left_shift, input, other)


@op("bitwise_right_shift", methods=("bitwise_right_shift", "__rshift__"),
    kind="compare")
def bitwise_right_shift(input, other):
    """out = x >> other (arithmetic) for integer tensors (no gradient)."""
    return _shift("rshift", np.right_shift, input, other)


# --- fill_diagonal_ ----------------------------------------------------------------------------

def _fill_diagonal_(self, fill_value, wrap=False):
    """Write ``fill_value`` on the main diagonal (in place); for a tall matrix
    with ``wrap`` the diagonal starts again after a blank row, as torch."""
    shape = self._arr.shape
    if len(shape) < 2:
        raise RuntimeError("dimensions must larger than 1")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    mask = np.zeros(self._arr.size, bool)
    strides = np.cumprod((1,) + shape[::-1])[:-1][::-1]
    step = int(strides.sum())
    n = min(shape)
    if wrap and len(shape) == 2 and shape[0] > shape[1]:
        mask[::step] = True
    else:
        mask[:step * n:step] = True
    keep = _wrap(mask.reshape(shape))
    return _inplace_apply(self, lambda t: where(keep, fill_value, t).to(t.dtype),
                          "fill_diagonal_")


# --- layout and backend flags ------------------------------------------------------------

class layout:
    """A tensor layout; cygrad has one, ``strided`` (dense NumPy arrays)."""

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"torch.{self._name}"

    def __reduce__(self):
        return self._name


strided = layout("strided")


def _layout(self):
    return strided


def _dim_order(self, *, ambiguity_check=False):
    """The dims from outermost to innermost in memory (by decreasing stride)."""
    strides = self._arr.strides
    # (np.argsort: this module's ``range`` is torch's)
    return tuple(int(d) for d in np.argsort([-st for st in strides], kind="stable"))


def _as_subclass(self, cls):
    """``self`` as an instance of the Tensor subclass ``cls``: an alias
    sharing its memory and, under autograd, its history (AliasBackward0).
    Ops on it return plain Tensors (cygrad has no ``__torch_function__``)."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError("Creating a Tensor subclass from a class that does not "
                        "inherit from Tensor is not possible. Make sure your class "
                        "inherits from Tensor.")
    alias = self[...]
    out = Tensor.__new__(cls)
    out._arr, out._ver, out._base = alias._arr, alias._ver, alias._base
    out._requires_grad = alias._requires_grad
    out._grad_fn, out._out_nr = alias._grad_fn, alias._out_nr
    if out._base is not None:
        _register_view(out._base, out)
    return out


_FLAGS = ("is_sparse", "is_sparse_csr", "is_quantized", "is_meta", "is_mkldnn",
          "is_nested", "is_vulkan", "is_xla", "is_ipu", "is_mtia", "is_maia")


def _install():
    for flag in _FLAGS:
        setattr(Tensor, flag, property(_false, doc="False: cygrad tensors are dense "
                                                   "CPU arrays."))
    Tensor.is_distributed = _false
    Tensor.layout = property(_layout)
    Tensor.dim_order = _dim_order
    Tensor.output_nr = property(lambda self: 0)
    Tensor.angle = angle
    Tensor.conj = conj
    Tensor.conj_physical = conj_physical
    Tensor.conj_physical_ = conj_physical
    Tensor.resolve_conj = resolve_conj
    Tensor.resolve_neg = resolve_neg
    Tensor.real = property(real)
    Tensor.imag = property(imag)
    Tensor.is_conj = _false
    Tensor.is_neg = _false
    Tensor.is_inference = _false
    Tensor.bitwise_not_ = _shaped_inplace("bitwise_not", bitwise_not)
    Tensor.bitwise_left_shift_ = _shaped_inplace("bitwise_left_shift",
                                                 bitwise_left_shift)
    Tensor.bitwise_right_shift_ = _shaped_inplace("bitwise_right_shift",
                                                  bitwise_right_shift)
    Tensor.fill_diagonal_ = _fill_diagonal_
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
    Tensor.as_subclass = _as_subclass


_install()
