"""``Parameter``: a tensor that a ``Module`` registers as learnable; the
uninitialized parameters and buffers of the lazy layers (``LazyLinear``...)."""

from __future__ import annotations

from typing import Any

import numpy as np

from cygrad import _copying
from cygrad._kernels import engine as _engine
from cygrad._tensor import Tensor
from cygrad._device import check_device
from cygrad.creation import _shape_arg, get_default_dtype
from cygrad.dtypes import to_numpy as _np_dtype
from cygrad.nn._buffer import Buffer

__all__ = ["Buffer", "Parameter", "UninitializedBuffer", "UninitializedParameter",
           "UninitializedTensorMixin", "is_lazy"]


class Parameter(Tensor):
    """A leaf tensor that requires grad (by default) and that modules register.

    Parameters
    ----------
    data : Tensor, optional
        Values; the parameter shares its storage and version counter (as
        ``torch.nn.Parameter``).  An empty float32 tensor when omitted.
    requires_grad : bool
        Default True.

    Assigning a ``Parameter`` as a ``Module`` attribute registers it, so it
    appears in ``parameters()`` and ``state_dict()``.
    """

    def __new__(cls, data: Tensor | None = None,
                requires_grad: bool = True) -> Parameter:
        return Tensor.__new__(cls)

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        if data is None:
            self._arr = np.empty(0, np.float32)
            self._ver = _engine.Version()
        elif isinstance(data, Tensor):
            self._arr = data._arr
            self._ver = data._ver
        else:
            raise TypeError(
                f"Parameter: data must be a Tensor, got {type(data).__name__}"
            )
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: dict[int, Any]) -> Parameter:
        # torch's Parameter copy: values and requires_grad, no .grad
        return _copying.deepcopy_tensor(self, memo, keep_grad=False, keep_attrs=False)


_NO_SHAPE = ("Can't access the shape of an uninitialized parameter or buffer. This "
             "error usually happens in `load_state_dict` when trying to load an "
             "uninitialized parameter into an initialized one. Call `forward` to "
             "initialize the parameters before accessing their attributes.")

# What an uninitialized tensor still answers, as torch's: its metadata, the
# dtype casts (which keep it uninitialized) and ``size()`` (``[0]``).
_ALLOWED = frozenset((
    "dtype", "device", "requires_grad", "grad", "is_leaf", "grad_fn", "layout",
    "size", "is_floating_point", "ndim", "data", "materialize", "cls_to_become",
    "to", "cpu", "float", "double", "half", "type", "get_device", "is_cuda",
    "is_sparse", "is_quantized", "is_meta", "is_complex", "_arr", "_ver",
    "_requires_grad", "_grad", "_grad_fn", "_bump_version", "__class__",
    "__dict__", "__repr__", "__deepcopy__", "__reduce_ex__", "__reduce__",
    "__hash__", "__eq__", "__ne__", "__init__", "__new__", "__setattr__",
    "__getattribute__", "__format__", "__str__", "__sizeof__", "__dir__",
    "__init_subclass__", "__subclasshook__", "__weakref__", "__module__",
    "__doc__", "__copy__", "requires_grad_", "share_memory_"))


def _uninitialized_use(name):
    def refuse(self, *args, **kwargs):
        raise ValueError(
            f"Attempted to use an uninitialized parameter in {name}: a lazy "
            f"module's {type(self).__name__} has no shape until its first "
            "forward. Call the module on a batch (or load a state_dict) first.")
    refuse.__name__ = name
    return refuse


class UninitializedTensorMixin:
    """A tensor without a shape yet: the parameters and buffers of a lazy
    layer before its first call.  ``materialize(shape)`` gives it storage and
    turns it into its ``cls_to_become`` (the same object); until then reading
    its shape raises ``RuntimeError`` and computing with it ``ValueError``,
    while its dtype, device, ``requires_grad`` and the dtype casts work."""

    cls_to_become: type = Tensor
    _requires_grad_default = False

    def __new__(cls, requires_grad: bool | None = None, device: Any = None,
                dtype: Any = None) -> Any:
        return Tensor.__new__(cls)

    def __init__(self, requires_grad: bool | None = None, device: Any = None,
                 dtype: Any = None) -> None:
        if device is not None:
            check_device(device)
        self._arr = np.empty(0, get_default_dtype() if dtype is None
                             else _np_dtype(dtype))
        self._ver = _engine.Version()
        if self._requires_grad_default if requires_grad is None else requires_grad:
            self.requires_grad_(True)

    def materialize(self, shape: Any, device: Any = None, dtype: Any = None) -> None:
        """Give the tensor (zeroed) storage of ``shape``; ``dtype`` defaults
        to the one it was made with."""
        shape = tuple(_shape_arg((shape,) if isinstance(shape, int) else tuple(shape)))
        dt = self._arr.dtype if dtype is None else _np_dtype(dtype)
        self._arr = np.zeros(shape, dt)
        self._bump_version()
        try:
            object.__setattr__(self, "__class__", self.cls_to_become)
        except TypeError:
            # CPython 3.11: Tensor's free list gives it its own deallocator, so
            # an object cannot become an exact Tensor; it becomes a Tensor
            # subclass that adds nothing (lazy layers replace their buffers
            # by exact Tensors instead, see LazyModuleMixin).
            object.__setattr__(self, "__class__", _MaterializedBuffer)

    @property
    def shape(self) -> Any:
        raise RuntimeError(_NO_SHAPE)

    def __getattribute__(self, name: str) -> Any:
        if name in _ALLOWED or name.startswith("__") or name in ("shape",):
            return object.__getattribute__(self, name)
        value = object.__getattribute__(self, name)
        if callable(value) and not isinstance(value, type):
            return _uninitialized_use(name).__get__(self)
        return value

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        if id(self) in memo:
            return memo[id(self)]
        out = type(self)(requires_grad=self.requires_grad, dtype=self.dtype)
        memo[id(self)] = out
        return out


# The operators are looked up on the type, so each is refused by name.
for _op in ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "pow",
            "radd", "rsub", "rmul", "rmatmul", "rtruediv", "rfloordiv", "rpow",
            "iadd", "isub", "imul", "itruediv", "neg", "pos", "abs", "lt", "le",
            "gt", "ge", "getitem", "setitem", "len", "iter", "float", "int", "bool",
            "index", "array"):
    setattr(UninitializedTensorMixin, f"__{_op}__", _uninitialized_use(f"__{_op}__"))
del _op


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A lazy layer's parameter before its first call; becomes a
    ``Parameter`` when materialized.  ``requires_grad`` defaults to True."""

    cls_to_become = Parameter
    _requires_grad_default = True


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A lazy layer's buffer (``running_mean``, ...) before its first call;
    becomes a plain ``Tensor`` when materialized.  ``requires_grad``
    defaults to False."""

    cls_to_become = Tensor
    _requires_grad_default = False


class _MaterializedBuffer(Tensor):
    """A materialized ``UninitializedBuffer`` where it cannot become an
    exact ``Tensor`` (CPython 3.11)."""


def is_lazy(param: Any) -> bool:
    """Whether ``param`` is an uninitialized parameter or buffer."""
    return isinstance(param, UninitializedTensorMixin)
