"""Operations on a tensor's storage rather than its values: ``resize_``
(the deprecated ``resize``) and ``resize_as_``, and ``apply_`` (a Python
function on every element).  None is differentiable: as in torch, a tensor
that requires grad is refused."""

import warnings

import numpy as np

from cygrad import dtypes as _dt
from cygrad import storage as _storage
from cygrad._device import check_device
from cygrad._kernels import engine as _engine
from cygrad._tensor import Size, Tensor
from cygrad.ops.registry import _no_grad


def _sizes(sizes):
    if len(sizes) == 1 and not isinstance(sizes[0], (int, np.integer)):
        sizes = tuple(sizes[0])
    shape = tuple(int(s) for s in sizes)
    if any(s < 0 for s in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{min(shape)}: {list(shape)}")
    return shape


def resize_(self, *sizes, memory_format=None):
    """Give ``self`` the shape ``sizes`` in place, keeping its leading
    elements in row-major order (new elements, if it grows, are
    uninitialised: here zeros)."""
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    shape = _sizes(sizes)
    old = np.ascontiguousarray(self._arr).reshape(-1)
    n = int(np.prod(shape, dtype=np.int64))
    if n == old.size and self._arr.flags.c_contiguous:
        new = self._arr.reshape(shape)
    else:
        new = np.zeros(n, dtype=old.dtype)
        k = min(n, old.size)
        new[:k] = old[:k]
        new = new.reshape(shape)
    with _no_grad():
        self.data = _engine._wrap(new)
    return self


def resize(self, *sizes):
    """The deprecated non-in-place ``resize``: a resized copy (torch warns)."""
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    return resize_(self.detach().clone(), *sizes)


def resize_as_(self, other, memory_format=None):
    """``resize_`` to ``other``'s shape."""
    return resize_(self, tuple(other.shape))


def apply_(self, callable):
    """Replace every element ``x`` by ``callable(x)`` (a Python float or
    int), in place; slow by nature (one Python call per element)."""
    if self.requires_grad:
        raise RuntimeError("Can't call apply_() on Variable that requires grad. Use "
                           "var.detach().apply_() instead.")
    self._writable_check("apply_")
    with np.nditer(self._arr, op_flags=["readwrite"]) as it:
        for x in it:
            x[...] = callable(x.item())
    _engine._mark_inplace(self, "apply_")
    return self


Tensor.resize_ = resize_
Tensor.resize = resize
Tensor.resize_as_ = resize_as_
Tensor.apply_ = apply_


# --- storages, set_ and the legacy constructor new() ------------------------------

def untyped_storage(self):
    """The bytes of the memory ``self`` lives in (shared with it)."""
    data, _ = _storage.storage_bytes(self._arr)
    return _storage.UntypedStorage._wrap(data)


def storage(self):
    """The deprecated typed storage: ``untyped_storage()`` as elements of
    ``self``'s dtype (torch warns that TypedStorage is deprecated)."""
    _storage._warn_typed()
    return _storage.TypedStorage._of(untyped_storage(self), self._arr.dtype)


def _storage_type(self):
    return type(self.storage())


# torch names the element types of set_'s dtype error in C
_C_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
            "int64": "long int", "int32": "int", "int16": "short int",
            "int8": "signed char", "uint8": "unsigned char", "bool": "bool"}


def set_(self, source=None, storage_offset=None, size=None, stride=None):
    """Make ``self`` look at other memory, in place: ``set_()`` empties it,
    ``set_(tensor)`` shares that tensor's memory, shape and strides,
    ``set_(storage)`` views a whole storage (its bytes read as ``self``'s
    dtype, 1-D) and ``set_(storage or tensor, storage_offset, size,
    stride=None)`` a part of one (contiguous strides by default)."""
    if storage_offset is not None and size is None:
        raise TypeError("set_(): a storage_offset needs a size (set_(source, "
                        "storage_offset, size, stride=None))")
    dtype = self._arr.dtype
    if isinstance(source, Tensor) and source._arr.dtype != dtype:
        raise RuntimeError(
            f"Could not set tensor of type {_C_NAMES[source._arr.dtype.name]} to "
            f"a tensor of type {_C_NAMES[dtype.name]}")
    if source is None:
        new = np.empty(0, dtype)
    elif isinstance(source, Tensor) and size is None:
        new = source._arr.view()
    else:
        if isinstance(source, Tensor):
            source = untyped_storage(source)
        if isinstance(source, _storage.TypedStorage):
            if source.dtype != dtype:
                raise RuntimeError(
                    f"Expected a Storage of type {_dt.name(dtype)} but got type "
                    f"{_dt.name(source.dtype)} for argument 1 'storage'")
            source = source.untyped()
        if not isinstance(source, _storage.UntypedStorage):
            raise TypeError(f"set_(): argument 'source' must be Tensor or Storage, "
                            f"not {type(source).__name__}")
        new = _view_storage(source._bytes, dtype, int(storage_offset or 0), size, stride)
    _engine._mark_inplace(self, "set_")
    self._arr = new
    return self


def _view_storage(data, dtype, offset, size, stride):
    """``data`` (bytes) read as ``dtype`` elements at ``offset`` with the
    given sizes and element strides, after checking that they fit."""
    item = dtype.itemsize
    n = data.size // item
    if size is None:
        size = (n - offset,)
    size = tuple(int(s) for s in size)
    if stride is None:
        stride, acc = [], 1
        for s in reversed(size):
            stride.append(acc)
            acc *= max(s, 1)
        stride = tuple(reversed(stride))
    stride = tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if offset < 0 or any(s < 0 for s in size) or any(s < 0 for s in stride):
        raise RuntimeError(f"setStorage: negative storage offset, size or stride "
                           f"(offset {offset}, sizes {list(size)}, strides "
                           f"{list(stride)})")
    need = offset + 1 + sum((s - 1) * st for s, st in zip(size, stride)) \
        if all(size) else 0
    if need * item > data.size:
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset "
            f"{offset}, and itemsize {item} requiring a storage size of {need * item} "
            f"are out of bounds for storage of size {data.size}")
    if not all(size):
        return np.empty(size, dtype)
    elems = data[:data.size - data.size % item].view(dtype)
    return np.lib.stride_tricks.as_strided(
        elems[offset:], size, tuple(st * item for st in stride))


def is_set_to(self, tensor):
    """True when both tensors view the same memory with the same offset,
    shape and strides."""
    a, b = self._arr, tensor._arr
    return (_storage.memory_of(a) is _storage.memory_of(b)
            and a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
            and a.shape == b.shape and a.strides == b.strides)


def new(self, *args, device=None):
    """The legacy constructor, in ``self``'s dtype: ``new()`` is empty,
    ``new(2, 3)`` or ``new(cygrad.Size([2, 3]))`` uninitialised (here
    zeros) of that shape, ``new(sequence)`` a tensor of the data and
    ``new(tensor)`` shares that tensor's memory (same dtype only)."""
    dtype = self._arr.dtype
    if device is not None:
        check_device(device)
    if not args:
        return _engine._wrap(np.empty(0, dtype))
    if len(args) == 1 and isinstance(args[0], Tensor):
        other = args[0]
        if other._arr.dtype != dtype:
            raise TypeError(f"new(): expected a tensor of dtype {_dt.name(dtype)}, got "
                            f"{_dt.name(other._arr.dtype)}")
        return _engine._wrap(other._arr.view())
    if len(args) == 1 and isinstance(args[0], _storage.UntypedStorage):
        return set_(_engine._wrap(np.empty(0, dtype)), args[0])
    if all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args) \
            or (len(args) == 1 and isinstance(args[0], Size)):
        return _engine._wrap(np.zeros(_sizes(args), dtype))
    if len(args) == 1:
        data = args[0]
        if isinstance(data, (int, float, bool, complex, np.generic)):
            raise TypeError(f"new(): data must be a sequence (got "
                            f"{type(data).__name__})")
        return _engine._wrap(np.array(data).astype(dtype))
    raise TypeError(f"new(): expected sizes (ints), one sequence of data, a Tensor or "
                    f"a storage, got {tuple(type(a).__name__ for a in args)}")


Tensor.untyped_storage = untyped_storage
Tensor.storage = storage
Tensor.storage_type = _storage_type
Tensor.set_ = set_
Tensor.is_set_to = is_set_to
Tensor.new = new
