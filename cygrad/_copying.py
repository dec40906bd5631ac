"""Python's object protocols for tensors: ``copy.copy``, ``copy.deepcopy``
and ``pickle`` (through ``__reduce_ex__``), with torch's rules.

- ``copy.copy(t)`` is a new leaf sharing ``t``'s storage, with its
  ``requires_grad`` and attributes; no ``.grad`` (as torch).
- ``copy.deepcopy(t)`` of a leaf copies the values, ``requires_grad``,
  ``.grad`` and attributes.  Tensors viewing one array stay views of one
  new array within a deepcopy (the memo is keyed by the storage), as torch
  shares a storage between the copies of its views.  A non-leaf raises
  torch's ``RuntimeError``.
- ``pickle`` stores the values (the span of memory the tensor covers), the
  dtype, shape and strides (a transposed or strided view comes back with
  its strides, as torch's), ``requires_grad`` and attributes; not ``.grad``
  and not the graph (a non-leaf comes back as a leaf).  ``nn.Parameter``
  comes back as a ``Parameter``.

Pickle is for memory and processes (``multiprocessing``, joblib, deepcopy of
whole models).  ``cygrad.save``/``cygrad.load`` never pickle: files are data
only and loading one never runs code.
"""

import copy

import numpy as np

from cygrad._kernels import engine as _engine

__all__ = ["copy_tensor", "deepcopy_tensor", "reduce_tensor", "rebuild_tensor"]

_NON_LEAF_DEEPCOPY = (
    "Only Tensors created explicitly by the user (graph leaves) support the "
    "deepcopy protocol at the moment.  If you were attempting to deepcopy a "
    "module, this may be because of a torch.nn.utils.weight_norm usage, see "
    "https://github.com/pytorch/pytorch/pull/103001")


def _new(cls, arr, requires_grad):
    """A leaf of class ``cls`` holding ``arr`` (no constructor runs, so a
    subclass with its own ``__init__`` signature works too)."""
    t = cls.__new__(cls)
    t._arr = arr
    t._ver = _engine.Version()
    if requires_grad:
        t.requires_grad_(True)
    return t


def _attrs(t):
    """t's Python attributes, but not the views noted on it (a copy has none)."""
    d = getattr(t, "__dict__", None)
    return {k: v for k, v in d.items() if k != "_views"} if d else None


def copy_tensor(t):
    new = _new(type(t), t._arr, t._requires_grad)
    state = _attrs(t)
    if state:
        new.__dict__.update(state)
    return new


# --- deepcopy ----------------------------------------------------------------------


def _root(arr):
    while isinstance(arr.base, np.ndarray):
        arr = arr.base
    return arr


def _address(arr):
    return arr.__array_interface__["data"][0]


def _deepcopy_array(arr, memo):
    """A copy of ``arr``; views of one array become views of one copy."""
    root = _root(arr)
    if not (root.flags.c_contiguous or root.flags.f_contiguous):
        return arr.copy(order="K")
    key = ("cygrad-storage", id(root))
    new_root = memo.get(key)
    if new_root is None:
        new_root = root.copy(order="K")
        memo[key] = new_root
        memo.setdefault(id(memo), []).append(root)    # keep id(root) unique
    if root is arr:
        return new_root
    try:
        return np.ndarray(arr.shape, arr.dtype, buffer=new_root,
                          offset=_address(arr) - _address(root), strides=arr.strides)
    except (TypeError, ValueError):                   # not expressible: plain copy
        return arr.copy(order="K")


def deepcopy_tensor(t, memo, keep_grad=True, keep_attrs=True):
    """``copy.deepcopy`` of a leaf tensor (``keep_grad``/``keep_attrs``:
    torch's Parameter copies neither)."""
    if t._grad_fn is not None:
        raise RuntimeError(_NON_LEAF_DEEPCOPY)
    new = _new(type(t), _deepcopy_array(t._arr, memo), t._requires_grad)
    memo[id(t)] = new
    if keep_grad and t._grad is not None:
        new.grad = copy.deepcopy(t._grad, memo)
    state = _attrs(t) if keep_attrs else None
    if state:
        new.__dict__.update(copy.deepcopy(state, memo))
    return new


# --- pickle ------------------------------------------------------------------------


def _storage(arr):
    """(1-D array of the memory ``arr`` covers, its strides in bytes), or
    (C-ordered copy, None) when it has no plain span (negative strides)."""
    if arr.flags.c_contiguous or arr.size == 0:
        return np.ascontiguousarray(arr).reshape(-1).copy(), None
    item = arr.itemsize
    if any(s < 0 or s % item for s in arr.strides):
        return np.ascontiguousarray(arr).reshape(-1), None
    n = sum((d - 1) * s for d, s in zip(arr.shape, arr.strides)) // item + 1
    span = np.lib.stride_tricks.as_strided(arr, (n,), (item,))
    return span.copy(), tuple(arr.strides)


def reduce_tensor(t):
    data, strides = _storage(t._arr)
    return rebuild_tensor, (type(t), data, tuple(t._arr.shape), strides,
                            bool(t._requires_grad), _attrs(t))


def rebuild_tensor(cls, data, shape, strides, requires_grad, state):
    """The inverse of ``reduce_tensor`` (named in pickles: keep its path)."""
    if strides is None:
        arr = data.reshape(shape)
    else:
        arr = np.lib.stride_tricks.as_strided(data, shape, strides)
    t = _new(cls, arr, requires_grad)
    if state:
        t.__dict__.update(state)
    return t
