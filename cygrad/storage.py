"""Storages: the memory a tensor's elements live in, as torch exposes it.

A cygrad tensor's elements are a NumPy array; a view shares its base
tensor's array.  The *storage* is the whole memory of that base array,
from its lowest to its highest byte: ``UntypedStorage`` shows it as bytes,
``TypedStorage`` (what the deprecated ``Tensor.storage()`` returns) as
elements of one dtype.  Both are views: writing through them writes the
tensors that share the memory, as in torch.  ``FloatStorage``,
``DoubleStorage``, ... are the legacy typed classes (``isinstance`` of a
float32 tensor's ``storage()`` and ``FloatStorage`` holds, as in torch).

Storages here are not resizable: ``Tensor.set_`` with sizes that reach past
the storage raises instead of growing it."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from cygrad import dtypes as _dt
from cygrad._device import device as _device
from cygrad.creation import get_default_dtype

__all__ = ["TypedStorage", "UntypedStorage"]

_DEPRECATED = (
    "TypedStorage is deprecated. It will be removed in the future and "
    "UntypedStorage will be the only storage class. This should only matter to "
    "you if you are using storages directly.  To access UntypedStorage directly, "
    "use tensor.untyped_storage() instead of tensor.storage()")


def _warn_typed() -> None:
    warnings.warn(_DEPRECATED, UserWarning, stacklevel=3)


class _Span:
    """An ``__array_interface__`` over ``nbytes`` bytes at ``address``,
    keeping ``owner`` (the array that holds them) alive."""

    def __init__(self, owner: np.ndarray, address: int, nbytes: int) -> None:
        self.owner = owner
        self.__array_interface__ = {
            "data": (address, not owner.flags.writeable), "shape": (nbytes,),
            "typestr": "|u1", "version": 3}


def _extent(arr: np.ndarray) -> tuple[int, int]:
    """The lowest address and the byte count ``arr``'s elements span."""
    lo = arr.__array_interface__["data"][0]
    if arr.size == 0:
        return lo, 0
    hi = lo + arr.itemsize
    for size, stride in zip(arr.shape, arr.strides):
        if stride < 0:
            lo += (size - 1) * stride
        else:
            hi += (size - 1) * stride
    return lo, hi - lo


def memory_of(arr: np.ndarray) -> np.ndarray:
    """The array whose memory ``arr`` lives in: the end of its chain of
    NumPy bases (views, reshapes, ``detach``, ``.data`` and ``set_`` all
    share it), which is what a tensor's storage is."""
    root = arr
    while True:
        base = root.base
        if isinstance(base, _Span):             # a storage's bytes
            base = base.owner
        elif not isinstance(base, np.ndarray):  # as_strided's wrapper
            base = getattr(base, "base", None)
        if not isinstance(base, np.ndarray):
            return root
        root = base


def storage_bytes(arr: np.ndarray) -> tuple[np.ndarray, int]:
    """(the uint8 view of the storage ``arr`` lives in, ``arr``'s first
    element's byte offset in it)."""
    root = memory_of(arr)
    lo, nbytes = _extent(root)
    if root.size == 0:
        return np.empty(0, np.uint8), 0
    return np.asarray(_Span(root, lo, nbytes)), arr.__array_interface__["data"][0] - lo


def _index(i: Any, n: int) -> int:
    if not isinstance(i, (int, np.integer)):
        raise TypeError(f"can't index a storage with {type(i).__name__}")
    j = int(i) + n if i < 0 else int(i)
    if not 0 <= j < n:
        raise IndexError(f"index {int(i)} out of range for storage of size {n}")
    return j


class _OnTheCpu:
    """Where a storage lives: the CPU's ordinary memory, always."""

    @property
    def device(self) -> Any:
        return _device("cpu")

    @property
    def is_cuda(self) -> bool:
        return False

    def is_pinned(self, device: Any = None) -> bool:
        return False

    def is_shared(self) -> bool:
        return False

    def share_memory_(self) -> Any:
        return self

    def pin_memory(self, device: Any = None) -> Any:
        return self

    def cpu(self) -> Any:
        return self


class UntypedStorage(_OnTheCpu):
    """Bytes of memory (``torch.UntypedStorage``).

    ``UntypedStorage(n)`` holds ``n`` new bytes (zeros), ``UntypedStorage(seq)``
    the bytes of a sequence of ints; ``tensor.untyped_storage()`` is the
    memory the tensor lives in, shared with it."""

    def __init__(self, *args: Any, device: Any = None) -> None:
        if len(args) > 1:
            raise TypeError("UntypedStorage(): expected at most one argument "
                            f"(a size or a sequence), got {len(args)}")
        if not args:
            data = np.empty(0, np.uint8)
        elif isinstance(args[0], (int, np.integer)):
            if args[0] < 0:
                raise RuntimeError(f"Storage size must be non-negative, got {args[0]}")
            data = np.zeros(int(args[0]), np.uint8)
        else:
            data = np.array(list(args[0]), dtype=np.int64)
            if data.size and (data.min() < 0 or data.max() > 255):
                raise RuntimeError("UntypedStorage(): bytes must be in [0, 255]")
            data = data.astype(np.uint8)
        self._bytes = data

    @classmethod
    def _wrap(cls, data: np.ndarray) -> UntypedStorage:
        s = cls.__new__(cls)
        s._bytes = data
        return s

    # --- size and place ----------------------------------------------------
    def nbytes(self) -> int:
        return int(self._bytes.size)

    size = nbytes

    def __len__(self) -> int:
        return int(self._bytes.size)

    def element_size(self) -> int:
        return 1

    def data_ptr(self) -> int:
        return int(self._bytes.__array_interface__["data"][0]) if self._bytes.size else 0

    def type(self, dtype: Any = None) -> str:
        return "torch.storage.UntypedStorage"

    # --- values ------------------------------------------------------------
    def __getitem__(self, i: Any) -> int:
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if step != 1:
                raise RuntimeError("Trying to slice with a step of "
                                   f"{step}, but only a step of 1 is supported")
            return UntypedStorage._wrap(self._bytes[start:max(start, stop)])
        return int(self._bytes[_index(i, len(self))])

    def __setitem__(self, i: Any, value: Any) -> None:
        if isinstance(i, slice):
            self._bytes[i] = value
        else:
            self._bytes[_index(i, len(self))] = value

    def __iter__(self) -> Any:
        return iter(self.tolist())

    def tolist(self) -> list[int]:
        return [int(b) for b in self._bytes]

    def fill_(self, value: int) -> UntypedStorage:
        self._bytes[...] = value
        return self

    def copy_(self, source: UntypedStorage, non_blocking: bool = False) -> UntypedStorage:
        if source.nbytes() != self.nbytes():
            raise RuntimeError(f"size mismatch: {self.nbytes()} bytes, source has "
                               f"{source.nbytes()}")
        self._bytes[...] = source._bytes
        return self

    def clone(self) -> UntypedStorage:
        return UntypedStorage._wrap(self._bytes.copy())

    def __deepcopy__(self, memo: Any) -> UntypedStorage:
        return self.clone()

    def __repr__(self) -> str:
        body = "".join(f" {b}\n" for b in self._bytes.tolist())
        return f"{body}[cygrad.storage.UntypedStorage(device=cpu) of size {len(self)}]"

    __str__ = __repr__


class _LegacyMeta(type):
    """``isinstance(s, FloatStorage)`` holds for a float32 TypedStorage."""

    def __instancecheck__(cls, obj: Any) -> bool:
        want = cls.__dict__.get("_legacy_dtype")
        if want is None:
            return type.__instancecheck__(cls, obj)
        return isinstance(obj, TypedStorage) and obj.dtype == want


class TypedStorage(_OnTheCpu, metaclass=_LegacyMeta):
    """Elements of one dtype over an ``UntypedStorage`` (``torch.TypedStorage``,
    deprecated in torch: its constructor and ``Tensor.storage()`` warn).

    ``TypedStorage(n, dtype=...)``: ``n`` new elements (zeros);
    ``TypedStorage(seq, dtype=...)``: the elements of a sequence;
    ``TypedStorage(wrap_storage=untyped, dtype=...)``: a view of those bytes."""

    _legacy_dtype: Any = None

    def __init__(self, *args: Any, dtype: Any = None, device: Any = None,
                 wrap_storage: UntypedStorage | None = None,
                 _internal: bool = False) -> None:
        if not _internal:
            _warn_typed()
        dtype = self._legacy_dtype or dtype or get_default_dtype()
        self.dtype = dtype
        npd = _dt.to_numpy(dtype)
        if wrap_storage is not None:
            if args:
                raise RuntimeError("TypedStorage(): no positional arguments may be "
                                   "given with wrap_storage")
            if wrap_storage.nbytes() % npd.itemsize:
                raise RuntimeError(
                    f"Expected wrap_storage's size ({wrap_storage.nbytes()} bytes) "
                    f"to be a multiple of the element size ({npd.itemsize})")
            self._untyped = wrap_storage
            return
        if len(args) > 1:
            raise TypeError("TypedStorage(): expected at most one positional "
                            f"argument (a size or a sequence), got {len(args)}")
        if not args:
            data = np.empty(0, npd)
        elif isinstance(args[0], (int, np.integer)):
            if args[0] < 0:
                raise RuntimeError(f"Storage size must be non-negative, got {args[0]}")
            data = np.zeros(int(args[0]), npd)
        else:
            data = np.array(list(args[0])).astype(npd)
        self._untyped = UntypedStorage._wrap(data.view(np.uint8))

    @classmethod
    def _of(cls, untyped: UntypedStorage, dtype: Any) -> TypedStorage:
        return cls(wrap_storage=untyped, dtype=dtype, _internal=True)

    def _elements(self) -> np.ndarray:
        return self._untyped._bytes.view(_dt.to_numpy(self.dtype))

    # --- size and place ----------------------------------------------------
    def size(self) -> int:
        return self.nbytes() // self.element_size()

    def __len__(self) -> int:
        return self.size()

    def nbytes(self) -> int:
        return self._untyped.nbytes()

    def element_size(self) -> int:
        return int(_dt.to_numpy(self.dtype).itemsize)

    def data_ptr(self) -> int:
        return self._untyped.data_ptr()

    def untyped(self) -> UntypedStorage:
        return self._untyped

    _untyped_storage = property(untyped)

    def type(self, dtype: Any = None) -> str:
        return f"torch.{_LEGACY_NAMES[self.dtype]}" if self.dtype in _LEGACY_NAMES \
            else "torch.storage.TypedStorage"

    # --- values ------------------------------------------------------------
    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            raise RuntimeError("slices are only supported in UntypedStorage.__getitem__")
        return self._elements()[_index(i, len(self))].item()

    def __setitem__(self, i: Any, value: Any) -> None:
        elems = self._elements()
        if isinstance(i, slice):
            elems[i] = value
        else:
            elems[_index(i, len(self))] = value

    def __iter__(self) -> Any:
        return iter(self.tolist())

    def tolist(self) -> list[Any]:
        return self._elements().tolist()

    def fill_(self, value: Any) -> TypedStorage:
        self._elements()[...] = value
        return self

    def copy_(self, source: Any, non_blocking: bool = False) -> TypedStorage:
        src = source._elements() if isinstance(source, TypedStorage) else \
            np.asarray(source)
        if src.size != self.size():
            raise RuntimeError(f"size mismatch: {self.size()} elements, source has "
                               f"{src.size}")
        self._elements()[...] = src
        return self

    def clone(self) -> TypedStorage:
        return TypedStorage._of(self._untyped.clone(), self.dtype)

    def __deepcopy__(self, memo: Any) -> TypedStorage:
        return self.clone()

    def __repr__(self) -> str:
        vals = self._elements()
        body = "".join(f" {v!r}\n" for v in vals.tolist())
        return (f"{body}[cygrad.storage.TypedStorage(dtype=cygrad.{_dt.name(self.dtype)}, "
                f"device=cpu) "
                f"of size {len(self)}]")

    __str__ = __repr__


def _legacy(name: str, dtype: Any) -> type:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        TypedStorage.__init__(self, *args, **kwargs)

    cls = _LegacyMeta(name, (TypedStorage,), {
        "_legacy_dtype": dtype, "__init__": __init__, "__module__": "cygrad",
        "__doc__": f"The legacy typed storage of {dtype} (``torch.{name}``)."})
    return cls


_LEGACY = {
    "FloatStorage": _dt.float32, "DoubleStorage": _dt.float64,
    "HalfStorage": _dt.float16, "BFloat16Storage": _dt.bfloat16,
    "LongStorage": _dt.int64, "IntStorage": _dt.int32, "ShortStorage": _dt.int16,
    "CharStorage": _dt.int8, "ByteStorage": _dt.uint8, "BoolStorage": _dt.bool,
}
_LEGACY_NAMES = {d: n for n, d in _LEGACY.items()}
FloatStorage = _legacy("FloatStorage", _dt.float32)
DoubleStorage = _legacy("DoubleStorage", _dt.float64)
HalfStorage = _legacy("HalfStorage", _dt.float16)
BFloat16Storage = _legacy("BFloat16Storage", _dt.bfloat16)
LongStorage = _legacy("LongStorage", _dt.int64)
IntStorage = _legacy("IntStorage", _dt.int32)
ShortStorage = _legacy("ShortStorage", _dt.int16)
CharStorage = _legacy("CharStorage", _dt.int8)
ByteStorage = _legacy("ByteStorage", _dt.uint8)
BoolStorage = _legacy("BoolStorage", _dt.bool)
Storage = FloatStorage
