"""``Tensor``: the Python face of cygrad's compiled ``TensorBase``.

Arithmetic operators live in the compiled base (they are the hot path); the
math methods (``exp``, ``sum``, ...) are attached from the op registry in
``cygrad.ops``.  This module holds attributes, conversions, autograd entry
points and ``repr``.  It never loops over elements.
"""

from __future__ import annotations

import builtins
import math
import sys
import warnings
import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from cygrad import _copying
from cygrad import dtypes as _dt
from cygrad._kernels import engine as _engine
from cygrad._kernels.engine import TensorBase
from cygrad._device import CPU, check_device
from cygrad._memory_format import is_format as _is_format
from cygrad._printing import tensor_repr
from cygrad.creation import _shape_arg, _to_array, get_default_dtype

if TYPE_CHECKING:
    from collections.abc import Iterator

    from numpy.typing import NDArray

    from cygrad._typing import DType, Device, Hook
    # The methods the op modules attach at import, typed for mypy
    # (cygrad/_typed_ops.pyi, written by tools/gen_stubs.py): at run time
    # Tensor's base is the compiled TensorBase itself.
    from cygrad._typed_ops import _TensorMethods as _TypedBase
else:
    _TypedBase = TensorBase

__all__ = ["Size", "Tensor", "is_tensor"]


def is_tensor(obj: object) -> bool:
    """Whether ``obj`` is a cygrad Tensor (torch.is_tensor)."""
    return isinstance(obj, TensorBase)


class Tensor(_TypedBase):
    """An n-dimensional array that can record operations for autograd.

    Values live in a NumPy array (float32 by default).  ``requires_grad=True``
    on a leaf makes operations on it build a graph; ``backward()`` fills the
    ``.grad`` of leaves that require grad.
    """

    # ``type(t)`` prints <class 'cygrad.Tensor'> (torch: 'torch.Tensor'), the
    # name scripts use; pickles find the class there too.
    __module__ = "cygrad"
    __array_priority__ = 1000
    __hash__ = object.__hash__

    def __init__(self, *args: Any, dtype: DType | None = None,
                 device: Device | None = None, requires_grad: bool = False) -> None:
        # torch's legacy constructor: Tensor(2, 3) is a (2, 3) float32 tensor
        # (zeros here; torch leaves it uninitialised), Tensor(data) a float32
        # copy of data, Tensor() empty.
        check_device(device)
        d = dtype if dtype is not None else _dt.float32
        if len(args) == 1 and isinstance(args[0], Size):
            args = tuple(args[0])
        if len(args) == 1 and isinstance(args[0], TensorBase) and dtype is None:
            # torch.Tensor(t) aliases t: same storage, t's dtype
            self._arr, self._ver = args[0]._arr, args[0]._ver
            return
        if len(args) == 1 and isinstance(args[0], (bool, float, np.generic)):
            raise TypeError(f"new(): data must be a sequence (got "
                            f"{type(args[0]).__name__})")
        if args and all(isinstance(a, int) and not isinstance(a, bool) for a in args):
            self._arr = np.zeros(args, _dt.to_numpy(d))
        elif len(args) <= 1:
            self._arr = _to_array(args[0] if args else (), d)
        else:
            raise TypeError(f"Tensor(): expected sizes (ints) or one sequence of "
                            f"data, got {len(args)} arguments")
        self._ver = _engine.Version()
        if requires_grad:
            self.requires_grad = True

    # --- attributes -----------------------------------------------------------
    @property
    def data(self) -> Tensor:
        """A tensor sharing storage but outside autograd (no version tracking)."""
        return _engine._alias(self, None, False)

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, TensorBase):
            raise TypeError(f"data must be a Tensor, got {type(value).__name__}")
        self._arr = value._arr

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        self.requires_grad_(flag, _attr=True)

    def requires_grad_(self, requires_grad: bool = True, _attr: bool = False) -> Tensor:
        """Set ``requires_grad`` in place (leaves only); returns self."""
        flag = bool(requires_grad)
        if self._grad_fn is not None:
            if flag and _attr:
                # torch: the attribute refuses both values on a non-leaf,
                # while requires_grad_(True) is a silent no-op.
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables.")
            if flag:
                return self
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you "
                "want to use a computed variable in a subgraph that doesn't require "
                "differentiation use var_no_grad = var.detach().")
        if flag and self._arr.dtype.kind not in "fc":
            raise RuntimeError(
                "only Tensors of floating point dtype can require gradients "
                f"(this tensor is {_dt.name(self._arr.dtype)})")
        self._requires_grad = flag
        return self

    @property
    def is_leaf(self) -> bool:
        return self._grad_fn is None

    @property
    def grad_fn(self) -> Any:
        return self._grad_fn

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    @property
    def shape(self) -> Size:
        return Size(self._arr.shape)

    @property
    def dtype(self) -> np.dtype[Any]:
        return _dt.wrap(self._arr.dtype)

    @property
    def device(self) -> Any:
        return CPU

    @property
    def is_cpu(self) -> bool:
        return True

    @property
    def ndim(self) -> builtins.int:
        return self._arr.ndim

    @property
    def is_cuda(self) -> bool:
        return False

    @property
    def is_mps(self) -> bool:
        return False

    @property
    def is_xpu(self) -> bool:
        return False

    def pin_memory(self, device: Device | None = None) -> Tensor:
        """Itself: pinned memory only matters for copies to a GPU (torch's
        CPU build raises here; cygrad lets DataLoader-style code run)."""
        return self

    def is_pinned(self, device: Device | None = None) -> bool:
        return False

    def share_memory_(self) -> Tensor:
        """Itself (a no-op): see ``Module.share_memory``."""
        return self

    def is_shared(self) -> bool:
        return False

    # --- new_* : creation with this tensor's dtype -------------------------------
    def _new(self, fill, size, dtype, requires_grad):
        arr = fill(_shape_arg(size),
                   self._arr.dtype if dtype is None else _dt.to_numpy(dtype))
        t = _engine._wrap(arr)
        if requires_grad:
            t.requires_grad_(True)
        return t

    def new_zeros(self, *size: Any, dtype: DType | None = None,
                  device: Device | None = None, requires_grad: bool = False,
                  layout: Any = None, pin_memory: bool = False) -> Tensor:
        """Zeros of ``size``, with this tensor's dtype unless ``dtype``."""
        check_device(device)
        return self._new(np.zeros, size, dtype, requires_grad)

    def new_ones(self, *size: Any, dtype: DType | None = None,
                 device: Device | None = None, requires_grad: bool = False,
                 layout: Any = None, pin_memory: bool = False) -> Tensor:
        check_device(device)
        return self._new(np.ones, size, dtype, requires_grad)

    def new_empty(self, *size: Any, dtype: DType | None = None,
                  device: Device | None = None, requires_grad: bool = False,
                  layout: Any = None, pin_memory: bool = False) -> Tensor:
        check_device(device)
        return self._new(np.empty, size, dtype, requires_grad)

    def new_full(self, size: Any, fill_value: Any, *, dtype: DType | None = None,
                 device: Device | None = None, requires_grad: bool = False,
                 layout: Any = None, pin_memory: bool = False) -> Tensor:
        """``fill_value`` everywhere; ``size`` a tuple (as torch)."""
        check_device(device)
        if not isinstance(size, (tuple, list, Size)):
            raise TypeError(f"new_full(): argument 'size' (position 1) must be tuple "
                            f"of ints, not {type(size).__name__}")
        return self._new(lambda shape, d: np.full(shape, fill_value, d), (size,),
                         dtype, requires_grad)

    def new_tensor(self, data: Any, *, dtype: DType | None = None,
                   device: Device | None = None, requires_grad: bool = False,
                   layout: Any = None, pin_memory: bool = False) -> Tensor:
        """A copy of ``data`` with this tensor's dtype unless ``dtype`` (never
        attached to ``data``'s graph)."""
        check_device(device)
        if isinstance(data, TensorBase):
            warnings.warn(
                "To copy construct from a tensor, it is recommended to use "
                "sourceTensor.detach().clone() or sourceTensor.detach().clone()."
                "requires_grad_(True), rather than tensor.new_tensor(sourceTensor).",
                UserWarning, stacklevel=2)
        t = _engine._wrap(_to_array(data, self._arr.dtype if dtype is None else dtype))
        if requires_grad:
            t.requires_grad_(True)
        return t

    @property
    def itemsize(self) -> builtins.int:
        return self._arr.itemsize

    @property
    def nbytes(self) -> builtins.int:
        return self._arr.nbytes

    def size(self, dim: builtins.int | None = None) -> Any:
        if dim is None:
            return Size(self._arr.shape)
        return self._arr.shape[_canon_dim(dim, self._arr.ndim)]

    def numel(self) -> builtins.int:
        return self._arr.size

    nelement = numel

    def dim(self) -> builtins.int:
        return self._arr.ndim

    def element_size(self) -> builtins.int:
        return self._arr.itemsize

    def is_contiguous(self, memory_format: Any = None) -> builtins.bool:
        if memory_format is None:
            return self._arr.flags.c_contiguous
        return _is_format(self._arr, memory_format)

    def is_floating_point(self) -> builtins.bool:
        return self._arr.dtype.kind == "f"

    def stride(self, dim: builtins.int | None = None) -> Any:
        if self._arr.size == 0 and not any(self._arr.strides):
            # NumPy gives an empty array zero strides; torch the contiguous
            # ones, each size counted as at least 1 (an empty array made with
            # a layout, e.g. channels_last, keeps the strides it was given)
            acc, rev = 1, []
            for s in reversed(self._arr.shape):
                rev.append(acc)
                acc *= max(s, 1)
            st = tuple(reversed(rev))
        else:
            st = tuple(s // self._arr.itemsize for s in self._arr.strides)
        return st if dim is None else st[_canon_dim(dim, self._arr.ndim)]

    def data_ptr(self) -> builtins.int:
        return self._arr.__array_interface__["data"][0]

    # --- conversion -------------------------------------------------------------
    def numpy(self, force: builtins.bool = False) -> NDArray[Any]:
        """The underlying array (shared memory). Refused when it requires grad."""
        if self._requires_grad and not force:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use "
                "tensor.detach().numpy() instead.")
        return self._arr

    def tolist(self) -> Any:
        return self._arr.tolist()

    def __array__(self, dtype: Any = None,
                  copy: builtins.bool | None = None) -> NDArray[Any]:
        if self._requires_grad:
            # As torch: NumPy would otherwise compute on the values and drop
            # the graph silently (x + ndarray returned an ndarray, no grad).
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use "
                "tensor.detach().numpy() instead.")
        arr = self._arr
        if dtype is not None:
            return arr.astype(dtype, copy=bool(copy))
        return arr.copy() if copy else arr

    def __float__(self) -> builtins.float:
        if self._requires_grad:
            _warn_scalar_conversion()
        return float(self.item())

    def __complex__(self) -> builtins.complex:
        if self._requires_grad:
            _warn_scalar_conversion()
        return complex(self.item())

    def __int__(self) -> builtins.int:
        return int(self.item())

    def __index__(self) -> builtins.int:
        if self._arr.dtype.kind not in "iub":
            raise TypeError("only integer tensors of a single element can be "
                            "converted to an index")
        return int(self.item())

    def __bool__(self) -> builtins.bool:
        if self._arr.size != 1:
            raise RuntimeError(
                f"Boolean value of Tensor with more than one value is ambiguous "
                f"(it has {self._arr.size} elements)")
        return bool(self._arr.reshape(()).item())

    def __len__(self) -> builtins.int:
        if self._arr.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._arr.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if self._arr.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._arr.shape[0]))

    def __format__(self, spec: str) -> str:
        if self._arr.ndim == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    # copy / deepcopy / pickle with torch's rules (see cygrad/_copying.py)
    def __copy__(self) -> Tensor:
        return _copying.copy_tensor(self)

    def __deepcopy__(self, memo: dict[builtins.int, Any]) -> Tensor:
        return _copying.deepcopy_tensor(self, memo)

    def __reduce_ex__(self, proto: Any) -> Any:
        return _copying.reduce_tensor(self)

    def type(self, dtype: Any = None, non_blocking: builtins.bool = False) -> Any:
        """torch's type name (``'torch.FloatTensor'``), or a cast to ``dtype``
        (a dtype or such a name)."""
        if dtype is None:
            return _dt.type_name(self._arr.dtype)
        if isinstance(dtype, str):
            dtype = _dt.from_type_name(dtype)
        return self.to(dtype)

    def float(self) -> Tensor:
        return self.to(np.float32)

    def double(self) -> Tensor:
        return self.to(np.float64)

    def half(self) -> Tensor:
        return self.to(np.float16)

    def bfloat16(self) -> Tensor:
        raise _dt.bfloat16.error()

    def long(self) -> Tensor:
        return self.to(np.int64)

    def int(self) -> Tensor:
        return self.to(np.int32)

    def bool(self) -> Tensor:
        return self.to(np.bool_)

    def cpu(self, memory_format: Any = None) -> Tensor:
        return self

    def cuda(self, device: Device | None = None, non_blocking: builtins.bool = False,
             memory_format: Any = None) -> Tensor:
        check_device("cuda" if device is None else device)
        return self

    def __repr__(self) -> str:
        return _format_tensor(self)

    # --- autograd ------------------------------------------------------------------
    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf during backward (no-op on leaves)."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._grad_fn is None or self._retains_grad:
            return
        node = self._grad_fn
        if node._retained is None:
            node._retained = []
        node._retained.append((self._out_nr, weakref.ref(self)))
        self._retains_grad = True

    def register_hook(self, hook: Hook) -> Any:
        """Call ``hook(grad)`` when this tensor's gradient is computed.

        A non-None return value replaces the gradient.  Returns a handle with
        ``remove()``.
        """
        if not self._requires_grad:
            raise RuntimeError(
                "cannot register a hook on a tensor that doesn't require gradient")
        if self._grad_fn is not None:
            node = self._grad_fn
            if node._pre_hooks is None:
                node._pre_hooks = []
            entry = (self._out_nr, hook)
            # retain_grad's effect always comes after user hooks (torch 2.x).
            node._pre_hooks.append(entry)
            return _engine._make_handle(node._pre_hooks, entry)
        if self._hooks is None:
            self._hooks = []
        self._hooks.append(hook)
        return _engine._make_handle(self._hooks, hook)

    def register_post_accumulate_grad_hook(self, hook: Hook) -> Any:
        """Call ``hook(tensor)`` after ``.grad`` of this leaf was accumulated."""
        if not self._requires_grad:
            raise RuntimeError(
                "cannot register a hook on a tensor that doesn't require gradient")
        if self._grad_fn is not None:
            raise RuntimeError(
                "post accumulate grad hooks cannot be registered on non-leaf tensors")
        if self._post_hooks is None:
            self._post_hooks = []
        self._post_hooks.append(hook)
        return _engine._make_handle(self._post_hooks, hook)

    def detach(self) -> Tensor:
        """A new leaf sharing storage and version counter, outside the graph."""
        t = _engine._alias(self)
        t._origin = ("detach", _engine.user_site())
        return t

    def detach_(self) -> Tensor:
        """Detach this tensor from the graph in place (it becomes a leaf)."""
        if self._base is not None and self._grad_fn is not None:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead.")
        self._grad_fn = None
        self._out_nr = 0
        self._requires_grad = False
        self._origin = ("detach", _engine.user_site())
        return self

    # --- in-place basics ---------------------------------------------------------------
    def _writable_check(self, opname):
        if not self._arr.flags.writeable:
            raise ValueError(
                f"{opname}: the tensor's memory is read-only (it wraps a read-only "
                "NumPy array); copy it first")

    def __abs__(self) -> Tensor:
        return self.abs()

    def __pos__(self) -> Tensor:
        return self


class Size(tuple):
    """A tensor's shape: a tuple that prints like PyTorch's ``torch.Size``."""

    __module__ = "cygrad"

    def __repr__(self) -> str:
        return f"cygrad.Size({list(self)})"

    def numel(self) -> int:
        return math.prod(self)


def _canon_dim(dim, ndim):
    """Turn a possibly negative ``dim`` into an index; IndexError names both."""
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
            f"but got {dim}) for a tensor with {ndim} dimensions")
    return dim % n


_SCALAR_WARNED = []


def _warn_scalar_conversion():
    """torch warns once per process when float() or complex() takes the value
    of a tensor that requires grad (int() and item() do not warn), and only
    while grad mode is on: under no_grad (LBFGS's step reads its loss with
    float()) it stays silent and the one warning is still to come."""
    if not _SCALAR_WARNED and _engine.is_grad_enabled():
        _SCALAR_WARNED.append(True)
        warnings.warn("Converting a tensor with requires_grad=True to a scalar may "
                      "lead to unexpected behavior.\nConsider using tensor.detach() "
                      "first.", UserWarning, stacklevel=3)


def _format_tensor(t):
    if t._grad_fn is not None:
        tail = (f"grad_fn=<{t._grad_fn.name()}>",)
    elif t._requires_grad:
        tail = ("requires_grad=True",)
    else:
        tail = ()
    # cygrad's own subclasses (Parameter, Buffer) print as tensors
    cls = type(t)
    name = "tensor" if cls.__module__.partition(".")[0] == "cygrad" else cls.__name__
    return tensor_repr(t._arr, get_default_dtype(), tail, name)
