"""Tensor creation functions and cygrad's random generator."""

from __future__ import annotations

import collections.abc
import functools
import inspect
import math
import numbers
import os
import sys
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from cygrad import _memory_format as _mf
from cygrad import dtypes as _dt
from cygrad._device import CPU, check_device
from cygrad._kernels import engine as _engine
from cygrad._kernels.engine import TensorBase, _mark_inplace, _wrap, is_grad_enabled
from cygrad._kernels import rng as _rngk
from cygrad._kernels import scan as _scan
from cygrad._kernels import threads as _kernel_threads

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import TypeVar

    from numpy.typing import NDArray

    from cygrad._tensor import Tensor
    from cygrad._typing import ArrayLike, Device, DType, Number, Shape

    _F = TypeVar("_F", bound=Callable[..., Any])

__all__ = [
    "tensor", "as_tensor", "from_numpy", "zeros", "ones", "full", "empty",
    "zeros_like", "ones_like", "full_like", "empty_like", "rand", "randn",
    "randint", "rand_like", "randn_like", "arange", "linspace", "logspace", "eye",
    "manual_seed", "seed", "initial_seed", "Generator", "default_generator",
    "get_default_dtype", "set_default_dtype", "empty_strided",
]

_default_dtype = _dt.float32


def get_default_dtype() -> np.dtype[Any]:
    return _default_dtype


def set_default_dtype(d: DType) -> None:
    """Set the dtype of Python floats (float32 or float64)."""
    global _default_dtype
    d = _dt.to_numpy(d)
    if d.kind != "f":
        raise TypeError(f"only floating-point types are supported as the default "
                        f"type, got {d}")
    _default_dtype = d
    from cygrad._kernels import engine
    engine._set_default_dtype(d)


def _infer_dtype(obj):
    """torch's inference for nested data.

    Python bools give bool, ints int64, floats the default dtype; NumPy
    scalars, arrays and tensors inside the data keep their own dtype.  The
    result promotes them all: any float wins over ints, ints over bools
    (``[np.float64(1), 2.0]`` is float64, ``[np.int32(1), 2]`` int64).
    """
    t = type(obj)
    if t is float:
        return _default_dtype
    if t is int:
        return _dt.int64
    floats, ints, any_bool = set(), set(), False
    stack = [obj]
    while stack:
        x = stack.pop()
        t = type(x)             # the plain Python numbers first (no ABC checks)
        if t is float:
            floats.add(_default_dtype)
            continue
        if t is int:
            ints.add(_dt.int64)
            continue
        if t is list or t is tuple:
            stack.extend(x)
            continue
        if isinstance(x, TensorBase):
            x = x._arr
        if isinstance(x, (np.ndarray, np.generic)):
            k = x.dtype.kind
            if k not in "biuf":
                # else an object array [1, None] nested in a list became bool
                raise TypeError(f"can't convert np.ndarray of type {x.dtype} "
                                "inside tensor() data")
            if k == "f":
                floats.add(x.dtype)
            elif k in "iu":
                ints.add(x.dtype)
            else:
                any_bool = True
            continue
        if isinstance(x, (list, tuple)):
            stack.extend(x)
            continue
        if isinstance(x, bool):
            any_bool = True
            continue
        if isinstance(x, numbers.Integral):
            ints.add(_dt.int64)
            continue
        if isinstance(x, numbers.Real):
            floats.add(_default_dtype)
            continue
        if isinstance(x, numbers.Complex):
            raise TypeError("cygrad does not support complex numbers in tensor()")
        if _is_sequence(x):
            stack.extend(x)
            continue
        if isinstance(x, str):
            raise TypeError(f"new(): invalid data type '{type(x).__name__}'")
        raise RuntimeError(      # torch's type, though TypeError would fit better
            f"Could not infer dtype of {type(x).__name__}: tensor() takes numbers, "
            "(nested) lists or tuples of numbers, NumPy arrays or tensors")
    if floats:
        return floats.pop() if len(floats) == 1 else np.result_type(*floats)
    if ints:
        return ints.pop() if len(ints) == 1 else np.result_type(*ints)
    if any_bool:
        return _dt.bool
    return _default_dtype        # no element at all: torch.tensor([]) is float


def _is_sequence(x):
    """Any other object with the sequence protocol (a deque, a range, an
    array.array): torch reads it as a list; text, mappings and sets are not."""
    cls = type(x)
    return (hasattr(cls, "__getitem__") and hasattr(cls, "__len__")
            and not isinstance(x, (str, bytes, collections.abc.Mapping)))


_PKG_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_warned_ndarray_list = False


def _warn_ndarray_list():
    """torch's one-per-process warning for a (nested) sequence holding
    arrays of one or more dimensions, pointed at the caller's line."""
    global _warned_ndarray_list
    if _warned_ndarray_list:
        return
    _warned_ndarray_list = True
    f, level = sys._getframe(1), 2
    while f is not None and f.f_code.co_filename.startswith(_PKG_DIR):
        f, level = f.f_back, level + 1
    warnings.warn(
        "Creating a tensor from a list of numpy.ndarrays is extremely slow. Please "
        "consider converting the list to a single numpy.ndarray with numpy.array() "
        "before converting to a tensor.", UserWarning, stacklevel=level)


def _unwrap_nested(obj):
    """``obj`` with each tensor inside replaced by its array; a list or tuple
    of plain Python numbers is returned as it is, any other sequence (a deque
    of returns, in pytorch/examples' REINFORCE) as a list.  Called on the
    elements of a sequence only: an array of one or more dimensions met here
    sits inside one (torch warns, once)."""
    if isinstance(obj, TensorBase):
        return obj._arr
    if isinstance(obj, np.ndarray) and obj.ndim:
        _warn_ndarray_list()
        return obj
    if (not isinstance(obj, (list, tuple, np.ndarray, np.generic))
            and _is_sequence(obj)):
        return [_unwrap_nested(x) for x in obj]
    if isinstance(obj, (list, tuple)):
        for x in obj:
            t = type(x)
            if t is not float and t is not int and t is not bool:
                return [_unwrap_nested(x) for x in obj]
    return obj


def _to_array(data, dtype=None):
    """A fresh C-contiguous array from Python/NumPy data, validated."""
    if isinstance(data, TensorBase):
        arr = data._arr
        d = arr.dtype if dtype is None else _dt.to_numpy(dtype)
        return np.array(arr, dtype=d, order="C", copy=True)
    if isinstance(data, np.generic):
        data = np.asarray(data)      # a NumPy scalar keeps its dtype (torch)
    if isinstance(data, np.ndarray):
        if data.dtype.kind not in "biuf":
            raise TypeError(
                f"can't convert np.ndarray of type {data.dtype}. The only supported "
                "types are: float64, float32, float16, int64, int32, int16, int8, "
                "uint8, and bool.")
        d = data.dtype.newbyteorder("=") if dtype is None else _dt.to_numpy(dtype)
        return np.array(data, dtype=_dt.to_numpy(d), order="C", copy=True)
    if isinstance(data, (str, bytes)):
        raise TypeError(f"tensor() does not accept text data ({type(data).__name__})")
    d = _infer_dtype(data) if dtype is None else _dt.to_numpy(dtype)
    try:
        arr = np.array(_unwrap_nested(data), dtype=d, order="C")
    except ValueError as e:
        raise ValueError(
            f"tensor(): data is not a rectangular array of numbers (ragged nested "
            f"sequences are not allowed): {e}") from None
    except TypeError as e:
        raise TypeError(f"tensor(): data has entries that are not numbers: {e}") \
            from None
    if arr.dtype == object:
        raise TypeError("tensor(): data is not a rectangular array of numbers")
    return arr


def _factory(*, size: bool = False, out: bool = True) -> Callable[[_F], _F]:
    """A creation function's keyword handling in one wrapper: ``device=``
    must be the CPU (cygrad's only device; anything else raises
    AssertionError, as torch's CPU build), ``size=`` names the varargs shape
    (``zeros(size=(2, 3))``, when ``size``) and ``out=`` writes the result
    into a tensor (``_with_out``, when ``out``).  A call without keywords
    goes straight to the function: the three separate wrappers of before
    cost 0.45 us of a 1.9 us ``zeros(3)``."""
    def decorate(fn: _F) -> _F:
        with_out = _with_out(fn)
        params = inspect.signature(fn).parameters
        # torch's data constructors take neither (tensor takes pin_memory).
        own = () if fn.__name__ in ("tensor", "as_tensor") else tuple(
            k for k in ("layout", "pin_memory") if k not in params)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if not kwargs:
                return fn(*args)
            for key in own:
                if key in kwargs:
                    _check_layout_or_pin(fn.__name__, key, kwargs.pop(key))
            if size and "size" in kwargs:
                if args:
                    raise TypeError(f"{fn.__name__}() got multiple values for "
                                    "argument 'size'")
                args = (kwargs.pop("size"),)
            check_device(kwargs.get("device"))
            if out and "out" in kwargs:
                return with_out(*args, **kwargs)
            return fn(*args, **kwargs)
        return wrapper  # type: ignore[return-value]
    return decorate


def _check_layout_or_pin(name: str, key: str, value: Any) -> None:
    """torch's ``layout=`` and ``pin_memory=`` of a factory: cygrad's only
    layout is strided (dense arrays) and, with no accelerator, nothing is
    pinned; ``pin_memory=True`` raises RuntimeError as torch's CPU build."""
    if key == "pin_memory":
        if value:
            raise RuntimeError(
                "pin_memory=True requires a CUDA or other accelerator backend; "
                f"cygrad runs on the CPU only ({name})")
        return
    if value is not None and getattr(value, "_name", None) != "strided":
        raise NotImplementedError(
            f"{name}: layout {value!r} is not supported; cygrad's tensors are "
            "dense (torch.strided)")


def _legacy(d):
    """torch's short type name of a dtype (``Float``), as its messages say."""
    return _dt.short_name(d)


_RANGES = ("arange", "linspace", "logspace")


def _with_out(fn: _F) -> _F:
    """torch's ``out=`` of a factory.  The values are made in ``out``'s dtype
    (a ``dtype=`` must be that one) and written into ``out``, which takes the
    result's shape (without the resize warning of the other ops, as torch's
    factories; ``arange``, ``linspace`` and ``logspace`` keep ``out``'s shape
    when it has as many elements, and ``arange`` warns when it resizes a
    non-empty ``out``); ``out`` is returned.  ``requires_grad=True`` sets it
    on ``out``."""
    name = fn.__name__

    @functools.wraps(fn)
    def wrapper(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        if not isinstance(out, TensorBase):
            raise TypeError(f"{name}(): argument 'out' must be Tensor, not "
                            f"{type(out).__name__}")
        d = out._arr.dtype
        given = kwargs.get("dtype")
        if given is not None and _dt.to_numpy(given) != d:
            raise RuntimeError(f"dtype {_legacy(_dt.to_numpy(given))} does not match "
                               f"dtype of out parameter ({_legacy(d)})")
        if out.requires_grad and is_grad_enabled():
            raise RuntimeError(
                f"{name}(): functions with out=... arguments don't support automatic "
                "differentiation, but one of the arguments requires grad.")
        requires_grad = kwargs.pop("requires_grad", False)
        arr = fn(*args, **dict(kwargs, dtype=d))._arr
        if name in _RANGES and out._arr.size == arr.size:
            arr = arr.reshape(out._arr.shape)   # torch's ranges keep out's shape
        elif name == "arange" and out._arr.size:
            warnings.warn(
                f"The number of elements in the out tensor of shape "
                f"{list(out._arr.shape)} is {out._arr.size} which does not match the "
                f"computed number of elements {arr.size}. Note that this may occur as "
                "a result of rounding error. The out tensor will be resized to a "
                f"tensor of shape ({arr.size},).", UserWarning, stacklevel=3)
        if out._arr.shape != arr.shape:
            out.resize_(arr.shape)
        np.copyto(out._arr, arr)
        _mark_inplace(out, name)
        if requires_grad:
            out.requires_grad_(True)
        return out
    return wrapper  # type: ignore[return-value]


def _floating_kernel(d, kernel):
    """torch's refusal of an integer or bool dtype by a float sampler."""
    if d.kind != "f":
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_legacy(d)}\'')
    return d


@_factory(out=False)
def tensor(data: ArrayLike, dtype: DType | None = None, device: Device | None = None,
           requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data``.

    Python floats give float32 (the default dtype), ints int64, bools bool;
    a NumPy array keeps its dtype.
    """
    t = _wrap(_to_array(data, dtype))
    if requires_grad:
        t.requires_grad_(True)
    return t


@_factory(out=False)
def as_tensor(data: ArrayLike, dtype: DType | None = None,
              device: Device | None = None) -> Tensor:
    if isinstance(data, TensorBase) and (dtype is None or
                                          _dt.to_numpy(dtype) == data._arr.dtype):
        return data
    if isinstance(data, np.ndarray) and data.dtype.isnative and (
            dtype is None or _dt.to_numpy(dtype) == data.dtype):
        return from_numpy(data)
    return tensor(data, dtype=dtype)


def from_numpy(arr: NDArray[Any]) -> Tensor:
    """A tensor sharing ``arr``'s memory (no copy); writes show on both sides."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(arr).__name__})")
    if arr.dtype.kind not in "biuf":
        raise TypeError(
            f"can't convert np.ndarray of type {arr.dtype}. The only supported types "
            "are: float64, float32, float16, int64, int32, int16, int8, uint8, and "
            "bool.")
    if not arr.flags.aligned:
        raise ValueError("from_numpy: the array is not aligned; copy it first")
    if not arr.dtype.isnative:
        # The kernels read native byte order: a big-endian array was misread.
        raise ValueError(
            "given numpy array has byte order different from the native byte "
            "order. Conversion between byte orders is currently not supported "
            "(cygrad.tensor(arr) copies it into native order).")
    return _wrap(arr)


def _shape_arg(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for s in size:              # the usual shape: plain non-negative ints
        if type(s) is not int or s < 0:
            break
    else:
        if math.prod(size) <= 2 ** 62:
            return tuple(size)
    shape = []
    for s in size:
        if isinstance(s, TensorBase):
            s = int(s)
        if not isinstance(s, (numbers.Integral,)) or isinstance(s, bool):
            raise TypeError(f"size must be a tuple of ints, but got {type(s).__name__}")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"{list(size)}")
        shape.append(int(s))
    n = 1
    for s in shape:
        n *= s
    if n > 2 ** 62:
        raise RuntimeError(f"tensor of shape {shape} has too many elements ({n})")
    return tuple(shape)


def _dtype_or_default(dtype):
    return _default_dtype if dtype is None else _dt.to_numpy(dtype)


_FLOAT_MAX = {np.dtype(t): float(np.finfo(t).max) for t in (np.float16, np.float32,
                                                            np.float64)}


def _fill_scalar(value, d, numel):
    """torch's conversion of a fill value to ``d`` (c10's checked cast):
    RuntimeError for a value the dtype cannot hold (infinities and NaN fit
    a float), a negative int wraps into an unsigned dtype down to -max
    (``full((2,), -1, uint8)`` is 255), bool takes any value, and an int
    beyond 64 bits is an OverflowError.  A float16 tensor of one element
    takes any value, as torch's one-element fill (70000 gives inf)."""
    if type(value) is float and d.kind == "f" and abs(value) <= _FLOAT_MAX[d]:
        return value                                    # the usual case
    if isinstance(value, TensorBase):
        value = value.item()
    if isinstance(value, (bool, np.bool_)):
        return value
    if d == np.float16 and numel == 1 and not (isinstance(value, numbers.Integral)
                                               and not -2 ** 63 <= value < 2 ** 64):
        with np.errstate(over="ignore"):
            return np.float16(value)
    if isinstance(value, numbers.Integral):
        value = int(value)
        if not -2 ** 63 <= value < 2 ** 64:
            raise OverflowError("int too big to convert")
        if d.kind == "b":
            return value
        if d.kind == "f":
            ok = abs(value) <= float(np.finfo(d).max)
        else:
            info = np.iinfo(d)
            if d.kind == "u" and -info.max <= value < 0:
                return value + info.max + 1
            ok = info.min <= value <= info.max
    elif isinstance(value, numbers.Real):
        value = float(value)
        if d.kind == "b":
            return value
        if d.kind == "f":
            ok = not math.isfinite(value) or abs(value) <= float(np.finfo(d).max)
        else:
            info = np.iinfo(d)
            ok = info.min <= value <= info.max          # False for NaN
    else:
        return value
    if not ok:
        ctype = {"float16": "c10::Half", "float32": "float", "float64": "double",
                 "int32": "int"}.get(
            d.name, f"{'u' if d.kind == 'u' else ''}int{d.itemsize * 8}_t")
        raise RuntimeError(f"value cannot be converted to type {ctype} without overflow")
    return value


def _filled(shape, value, d):
    """``np.full(shape, value, d)`` without its Python layers (a third of a
    small ``ones``): the same unsafe cast of ``value``."""
    arr = np.empty(shape, d)
    arr.fill(value)
    return arr


def _make(arr, requires_grad):
    t = _wrap(arr)
    if requires_grad:
        t.requires_grad_(True)
    return t


@_factory(size=True)
def zeros(*size: Shape, dtype: DType | None = None, device: Device | None = None,
          requires_grad: bool = False) -> Tensor:
    return _make(np.zeros(_shape_arg(size), _dtype_or_default(dtype)), requires_grad)


@_factory(size=True)
def ones(*size: Shape, dtype: DType | None = None, device: Device | None = None,
         requires_grad: bool = False) -> Tensor:
    return _make(_filled(_shape_arg(size), 1, _dtype_or_default(dtype)), requires_grad)


@_factory(size=True)
def empty(*size: Shape, dtype: DType | None = None, device: Device | None = None,
          requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    shape, d = _shape_arg(size), _dtype_or_default(dtype)
    if memory_format is None:
        return _make(np.empty(shape, d), requires_grad)
    return _make(_mf.empty_in(shape, memory_format, d), requires_grad)


@_factory()
def full(size: Sequence[int], fill_value: Number, dtype: DType | None = None,
         device: Device | None = None, requires_grad: bool = False) -> Tensor:
    if dtype is None:
        dtype = _infer_dtype(fill_value)
    d, shape = _dt.to_numpy(dtype), _shape_arg((size,))
    return _make(_filled(shape, _fill_scalar(fill_value, d, math.prod(shape)), d),
                 requires_grad)


def _like_dtype(t, dtype):
    return t._arr.dtype if dtype is None else _dt.to_numpy(dtype)


def _like(t, dtype, memory_format, fill):
    """An array shaped like ``t`` (laid out in ``memory_format`` when given),
    filled by ``fill(arr)``."""
    d = _like_dtype(t, dtype)
    if memory_format is None:
        arr = np.empty(t._arr.shape, d)
    else:
        arr = _mf.empty_as(t._arr, memory_format, d)
    fill(arr)
    return arr


def _fill_with(value):
    def fill(arr):
        arr[...] = value
    return fill


@_factory(out=False)
def zeros_like(input: Tensor, dtype: DType | None = None, device: Device | None = None,
               requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    if memory_format is None:
        arr = np.zeros(input._arr.shape, _like_dtype(input, dtype))
        return _make(arr, requires_grad)
    return _make(_like(input, dtype, memory_format, _fill_with(0)), requires_grad)


@_factory(out=False)
def ones_like(input: Tensor, dtype: DType | None = None, device: Device | None = None,
              requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    return _make(_like(input, dtype, memory_format, _fill_with(1)), requires_grad)


@_factory(out=False)
def empty_like(input: Tensor, dtype: DType | None = None, device: Device | None = None,
               requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    return _make(_like(input, dtype, memory_format, lambda arr: None), requires_grad)


@_factory(out=False)
def full_like(input: Tensor, fill_value: Number, dtype: DType | None = None,
              device: Device | None = None, requires_grad: bool = False,
              memory_format: Any = None) -> Tensor:
    value = _fill_scalar(fill_value, _like_dtype(input, dtype), input._arr.size)
    return _make(_like(input, dtype, memory_format, _fill_with(value)), requires_grad)


# --- random numbers -------------------------------------------------------------

class Generator:
    """A seeded source of random numbers: torch's CPU generator (MT19937),
    so that a seed gives torch's numbers (``_kernels/cg_rng.h``)."""

    def __init__(self, device: Device = "cpu", seed: int | None = None) -> None:
        # torch's signature is Generator(device="cpu"); cygrad also takes the
        # seed, as a keyword or in place of the device (Generator(42))
        if isinstance(device, numbers.Integral) and not isinstance(device, bool):
            device, seed = "cpu", device
        check_device(device)
        self._mt = _rngk.MT(_rngk.DEFAULT_SEED)
        if seed is not None:
            self.manual_seed(seed)

    def manual_seed(self, seed: int) -> Generator:
        # torch's range: any 64-bit value, signed or not; a negative seed is
        # taken modulo 2**64 (so -1 seeds as 2**64 - 1, as in torch).
        seed = int(seed)
        if not -(2 ** 63) <= seed < 2 ** 64:
            raise ValueError(
                f"Overflow when unpacking long long: seed {seed} is outside "
                "[-2**63, 2**64)")
        self._mt.seed(seed % (2 ** 64))
        return self

    def initial_seed(self) -> int:
        return int(self._mt.initial_seed)

    def seed(self) -> int:
        """Reseed from fresh entropy; returns the new seed."""
        s = int(np.random.SeedSequence().entropy % (2 ** 63))
        self.manual_seed(s)
        return s

    @property
    def device(self) -> Any:
        return CPU

    @property
    def _rng(self) -> np.random.Generator:
        """A NumPy generator seeded by one 64-bit draw of this stream, for
        the samplers whose torch algorithm cygrad does not follow (gamma,
        binomial, poisson, ...): reproducible under a seed, not torch's."""
        return np.random.Generator(np.random.PCG64(self._mt.u64()))

    def get_state(self) -> Tensor:
        """The state as a uint8 tensor in torch's layout (5056 bytes), so a
        state from ``torch.get_rng_state()`` loads here and back."""
        return _wrap(self._mt.state_bytes())

    def set_state(self, new_state: Tensor) -> Generator:
        if not isinstance(new_state, TensorBase):
            raise TypeError(f"expected a torch.ByteTensor, but got "
                            f"{type(new_state).__name__}")
        arr = new_state._arr
        if arr.dtype != np.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        self._mt.set_state_bytes(np.ascontiguousarray(arr.reshape(-1)))
        return self

    def clone_state(self) -> Generator:
        """A new generator in this one's state (torch's ``Generator.clone_state``)."""
        other = Generator()
        other._mt = self._mt.copy()
        return other

    # copies and pickles carry the state and draw on their own, as torch's
    def __copy__(self) -> Generator:
        return self.clone_state()

    def __deepcopy__(self, memo: Any) -> Generator:
        return self.clone_state()

    def __getstate__(self) -> dict[str, Any]:
        return {"state": bytes(self._mt.state_bytes())}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._mt = _rngk.from_state(state["state"])


default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed the default generator: the same seed gives torch's numbers."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    s = int(np.random.SeedSequence().entropy % (2 ** 63))
    default_generator.manual_seed(s)
    return s


def initial_seed() -> int:
    return default_generator.initial_seed()


def _rng(generator):
    return (generator or default_generator)._rng


def _mt(generator):
    return (generator or default_generator)._mt


# --- torch's samplers over NumPy arrays -------------------------------------------

def _in_layout(arr, make):
    """``make(shape, contiguous)``'s values laid out as torch's in-place
    samplers visit ``arr``: in memory order (C order when it is contiguous)."""
    if arr.flags.c_contiguous:
        return make(arr.shape, True)
    vals = make((arr.size,), False)
    out = np.empty_like(arr, order="K", dtype=vals.dtype)
    out.ravel(order="K")[...] = vals
    return out


# Each returns a fresh C-contiguous array of `shape` whose values, taken in C
# order (memory order for the caller's layout), are torch's for the same draw.

_F4, _F8 = np.dtype(np.float32), np.dtype(np.float64)


def _uniform_array(shape, dtype, lo, hi, generator=None):
    """torch's uniform_(lo, hi) of a float tensor of ``shape`` and ``dtype``."""
    d = np.dtype(dtype)
    n = math.prod(shape)
    if d == _F8:
        out = np.empty(n, _F8)
        _mt(generator).uniform_d(out, lo, hi)
        return out.reshape(shape)
    out = np.empty(n, _F4)              # float16: drawn as float32, rounded
    _mt(generator).uniform_f(out, lo, hi)
    return out.reshape(shape) if d == _F4 else out.reshape(shape).astype(d)


def _normal_array(shape, dtype, mean, std, generator=None, contiguous=True):
    """torch's normal_(mean, std) of a float tensor of ``shape``: the block
    recipe for 16 or more contiguous elements, else one pair at a time."""
    d = np.dtype(dtype)
    n = math.prod(shape)
    mt = _mt(generator)
    if n < 16 or not contiguous:
        out = np.empty(n, _F8)
        mt.normal_serial(out, mean, std)
        return out.reshape(shape) if d == _F8 else out.astype(d).reshape(shape)
    if d == _F8:
        out = np.empty(n, _F8)
        mt.normal_fill_d(out, mean, std)
        return out.reshape(shape)
    out = np.empty(n, _F4)              # float16: float32's recipe, rounded
    mt.normal_fill_f(out, mean, std)
    return out.reshape(shape) if d == _F4 else out.astype(d).reshape(shape)


def _int_array(shape, low, high, dtype, generator=None):
    """torch's random_(low, high) of a tensor of ``dtype``: ``low + draw %
    (high - low)``, with 64-bit draws when the range needs 33 bits or more
    (for int64, float64 and float32 tensors)."""
    d = np.dtype(dtype)
    n = math.prod(shape)
    span = int(high) - int(low)
    mt = _mt(generator)
    if span >= 2 ** 64:
        vals = mt.raw64(n).view(np.int64)
    else:
        wide = span >= 2 ** 32 and d in (np.int64, np.float64, np.float32)
        vals = mt.ints(n, span, int(low), wide)
    return vals.reshape(shape).astype(d, copy=False)


def _exponential_array(shape, dtype, lambd, generator=None):
    """torch's exponential_(lambd): ``-1/lambd * log1p(-u)`` in double."""
    return _mt(generator).exponential(math.prod(shape), lambd).astype(dtype).reshape(shape)


@_factory(size=True)
def rand(*size: Shape, dtype: DType | None = None, generator: Generator | None = None,
         requires_grad: bool = False, device: Device | None = None) -> Tensor:
    """Uniform samples on [0, 1)."""
    d = _floating_kernel(_dtype_or_default(dtype), "check_uniform_bounds")
    return _make(_uniform_array(_shape_arg(size), d, 0.0, 1.0, generator), requires_grad)


@_factory(size=True)
def randn(*size: Shape, dtype: DType | None = None, generator: Generator | None = None,
          requires_grad: bool = False, device: Device | None = None) -> Tensor:
    """Standard normal samples."""
    d = _floating_kernel(_dtype_or_default(dtype), "normal_kernel_cpu")
    return _make(_normal_array(_shape_arg(size), d, 0.0, 1.0, generator), requires_grad)


def rand_like(input: Tensor, dtype: DType | None = None,
              generator: Generator | None = None, requires_grad: bool = False,
              memory_format: Any = None) -> Tensor:
    out = rand(*input._arr.shape, dtype=_like_dtype(input, dtype), generator=generator)
    return _laid_out(out, input, memory_format, requires_grad)


def randn_like(input: Tensor, dtype: DType | None = None,
               generator: Generator | None = None,
               requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    out = randn(*input._arr.shape, dtype=_like_dtype(input, dtype), generator=generator)
    return _laid_out(out, input, memory_format, requires_grad)


def _laid_out(out, like, memory_format, requires_grad):
    """The values of the fresh tensor ``out`` laid out in ``memory_format``
    (``preserve_format``: as ``like`` is)."""
    if memory_format is None:
        return _make(out._arr, requires_grad)
    arr = _mf.empty_as(like._arr, memory_format, out._arr.dtype)
    arr[...] = out._arr
    return _make(arr, requires_grad)


@_factory()
def randint(low: int, high: int | None = None, size: Sequence[int] | None = None,
            dtype: DType | None = None, generator: Generator | None = None,
            requires_grad: bool = False, device: Device | None = None) -> Tensor:
    """Integers uniform on [low, high) (``randint(high, size)`` also works)."""
    if high is None or (size is None and isinstance(high, (tuple, list))):
        if size is None and isinstance(high, (tuple, list)):
            size = high
        high, low = low, 0
    if size is None:
        raise TypeError("randint() missing required argument 'size'")
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                           f"from={low} >= to={high}")
    d = _dt.int64 if dtype is None else _dt.to_numpy(dtype)
    return _make(_int_array(_shape_arg((size,)), low, high, d, generator), requires_grad)


# --- ranges ---------------------------------------------------------------------
# torch's range kernels are compiled with fused multiply-adds and write arange
# a vector at a time; the values below repeat their arithmetic step for step,
# so that ``torch.linspace(-pi, pi, 2000)`` has torch's bits.

def _fma(a, b, c):
    """``a * b + c`` rounded once, over float64 arrays: Dekker's exact
    product ``p + e``, then ``p + c`` with its rounding error ``t``."""
    a, b, c = (np.asarray(v, np.float64) for v in (a, b, c))
    p = a * b

    def split(x):
        t = 134217729.0 * x     # 2**27 + 1
        hi = t - (t - x)
        return hi, x - hi

    (ah, al), (bh, bl) = split(a), split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s = p + c
    v = s - p
    t = (p - (s - v)) + (c - v)
    return s + (t + e)


def _vector_lanes(itemsize):
    """Elements per SIMD register in torch's arange kernel: 256-bit registers
    on every x86 CPU (the kernel is registered up to AVX2 only, so a CPU
    with AVX-512 runs the AVX2 build too; checked on a Zen 4)."""
    return 32 // itemsize


def _arange_values(start, step, n, d):
    """torch's arange: in float64 (float32 for float16) ``start + step * i``.
    Its ``parallel_for`` splits more than 32768 elements into equal chunks,
    one per thread; each chunk writes two registers of lanes at a time from
    ``start + step * i0`` rounded to the dtype, its remainder one by one."""
    lanes = _vector_lanes(d.itemsize)
    tasks = min(_kernel_threads.get_num_threads(), -(-n // 32768)) if n > 32768 else 1
    chunk = -(-n // tasks) if n else 1
    if d != np.float16:
        out = np.empty(n, d)
        _scan.arange_fill(out, float(start), float(step), chunk, lanes)
        return out
    # float16: steps in float32, each value rounded to float32, then half
    work = np.float32
    start, step = work(start), work(step)
    i = np.arange(n)
    first = i - i % chunk
    j = i - first
    length = np.minimum(chunk, n - first)
    vec = length - length % (2 * lanes)
    base = _fma(step, i - j % lanes, start).astype(work).astype(d)
    vals = np.where(j < vec, _fma(j % lanes, step, base.astype(np.float64)),
                    _fma(step, i, start))
    return vals.astype(work).astype(d)


@_factory()
def arange(start: Number, end: Number | None = None, step: Number = 1,
           dtype: DType | None = None, requires_grad: bool = False,
           device: Device | None = None) -> Tensor:
    """``start, start + step, ...`` below ``end``, with torch's rounding."""
    if end is None:
        start, end = 0, start
    vals = [start, end, step]
    vals = [v.item() if isinstance(v, TensorBase) else v for v in vals]
    if dtype is None:
        dtype = _infer_dtype(vals)
        if dtype == _dt.bool:
            dtype = _dt.int64
    if vals[2] == 0:
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(vals[0]) and math.isfinite(vals[1])):
        raise RuntimeError(f"unsupported range: {vals[0]} -> {vals[1]}")
    if (vals[1] - vals[0]) * vals[2] < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    d = _dt.to_numpy(dtype)
    if d.kind != "f":
        return _make(np.arange(*vals, dtype=d), requires_grad)
    start, end, step = (float(v) for v in vals)
    n = max(int(math.ceil((end - start) / step)), 0)
    return _make(_arange_values(start, step, n, d), requires_grad)


def _halves(steps):
    i = np.arange(steps)
    return i, i < steps // 2, (steps - 1 - i)


@_factory()
def linspace(start: Number, end: Number, steps: int, dtype: DType | None = None,
             requires_grad: bool = False, device: Device | None = None) -> Tensor:
    """``steps`` values from ``start`` to ``end``: ``start + step * i`` in the
    first half, ``end - step * (steps - 1 - i)`` in the second, with ``step``
    and the values in the dtype (float64 for integer dtypes, truncated)."""
    d = _dtype_or_default(dtype)
    steps = int(steps)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    if steps <= 1:
        return _make(np.full(steps, start).astype(d), requires_grad)
    if d == np.float16:
        i, first, back = _halves(steps)
        s, e = np.float16(start), np.float16(end)
        step = (e - s) / np.float16(steps - 1)
        lo = s + step * i.astype(np.float16)
        hi = e - step * back.astype(np.float16)
        return _make(np.where(first, lo, hi), requires_grad)
    work = d if d.kind == "f" else np.dtype(np.float64)
    s, e = work.type(start), work.type(end)
    if d.kind != "f":
        s, e = np.float64(d.type(start)), np.float64(d.type(end))
    step = work.type((e - s) / work.type(steps - 1))
    vals = np.empty(steps, work)
    _scan.linspace_fill(vals, s, e, step)
    return _make(vals.astype(d, copy=False), requires_grad)


@_factory()
def logspace(start: Number, end: Number, steps: int, base: float = 10.0,
             dtype: DType | None = None, requires_grad: bool = False,
             device: Device | None = None) -> Tensor:
    """``base ** x`` for ``x`` spaced as in ``linspace``; the exponents and
    the powers in float64 (``step`` from ``end - start`` in the dtype), the
    powers then cast (integers truncated)."""
    d = _dtype_or_default(dtype)
    steps = int(steps)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    if steps <= 1:
        vals = np.power(float(base), np.full(steps, float(start)))
    else:
        s, e = d.type(start), d.type(end)
        step = np.float64(e - s) / (steps - 1)
        i, first, back = _halves(steps)
        # (torch's logspace is not in a kernel file: no fused multiply-add)
        x = np.where(first, np.float64(s) + step * i, np.float64(e) - step * back)
        # C's pow, as torch's loop calls it (NumPy's AVX-512 pow can differ
        # from it in the last bit)
        vals = _engine.binary("pow", _wrap(np.float64(base)), _wrap(x))._arr
    if d.kind in "iu":
        vals = np.trunc(vals)
    with np.errstate(over="ignore", invalid="ignore"):
        return _make(vals.astype(d), requires_grad)


@_factory()
def eye(n: int, m: int | None = None, dtype: DType | None = None,
        requires_grad: bool = False, device: Device | None = None) -> Tensor:
    return _make(np.eye(n, m, dtype=_dtype_or_default(dtype)), requires_grad)


@_factory(out=False)
def empty_strided(size: Shape, stride: Sequence[int], *, dtype: DType | None = None,
                  device: Device | None = None, requires_grad: bool = False,
                  layout: Any = None, pin_memory: bool = False) -> Tensor:
    """An uninitialised tensor of ``size`` whose element strides are
    ``stride`` (a view of a fresh buffer just big enough)."""
    shape = _shape_arg((size,))
    stride = tuple(int(s) for s in stride)
    if len(stride) != len(shape):
        raise RuntimeError(f"dimensionality of sizes ({len(shape)}) must match "
                           f"dimensionality of strides ({len(stride)})")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"Storage size calculation overflowed with sizes="
                           f"{list(shape)} and strides={list(stride)} (empty_strided "
                           "takes non-negative strides)")
    d = _dtype_or_default(dtype)
    n = 1 + sum((s - 1) * st for s, st in zip(shape, stride)) if all(shape) else 0
    buf = np.empty(n, d)
    arr = np.lib.stride_tricks.as_strided(buf, shape, [st * d.itemsize for st in stride])
    return _make(arr, requires_grad)
