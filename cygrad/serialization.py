"""``cygrad.save`` / ``cygrad.load``: a format that never executes code on load.

A file is an uncompressed ``.npz`` archive (a zip of ``.npy`` members written
as :func:`numpy.savez` with ``allow_pickle=False`` writes them).  One member,
``__cygrad__.npy``, holds a UTF-8 JSON manifest as a uint8 array::

    {"magic": "cygrad.save", "version": 1, "root": <node>}

and every other member holds one array.  A node is a small JSON object tagged
by ``"t"``: ``tensor`` (member name, ``requires_grad``, ``parameter``),
``ndarray``, ``dict`` / ``odict`` (a list of ``[key, value]`` pairs, keys
being nodes too, so the integer keys of an optimizer's state survive),
``list``, ``tuple``, ``size`` (a ``Size``), ``int``, ``float`` (stored with
``float.hex`` so the value survives bit for bit, infinities and NaN
included), ``bool``, ``str``, ``none``.  A tensor stored twice in one object is written once and loaded
as one tensor.

Loading parses the ``.npy`` headers itself instead of calling ``np.load``:
object dtypes (pickles) are refused before any data is read, and an array's
declared size must match the bytes stored for it, so a corrupt or hostile
header cannot make the loader allocate an absurd amount of memory.
"""

from __future__ import annotations

import collections
import contextlib
import io
import json
import math
import os
import pickle
import sys
import types
import zipfile
import zlib
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.lib.format as npy_format

from cygrad._tensor import Size, Tensor
from cygrad.creation import from_numpy
from cygrad.nn.module import _HOOK_TABLES, Module
from cygrad.nn.parameter import Parameter

if TYPE_CHECKING:
    from cygrad._typing import FileLike

__all__ = ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "load",
           "safe_globals", "save"]

# Classes besides cygrad's own that ``load`` may construct (a whole saved
# module of a user's class), keyed by "module.qualname".
_SAFE_GLOBALS = {}


def _qualified(cls):
    return f"{cls.__module__}.{cls.__qualname__}"


def add_safe_globals(safe_globals: list[Any]) -> None:
    """Let ``load`` construct these classes (``nn.Module`` subclasses of the
    user's own, saved whole with ``save(model)``) and use these functions
    (a layer's ``activation``)."""
    for cls in safe_globals:
        if isinstance(cls, tuple):
            cls = cls[0]
        _SAFE_GLOBALS[_qualified(cls)] = cls


def get_safe_globals() -> list[Any]:
    """The classes ``add_safe_globals`` allowed."""
    return list(_SAFE_GLOBALS.values())


def clear_safe_globals() -> None:
    _SAFE_GLOBALS.clear()


@contextlib.contextmanager
def safe_globals(safe_globals: list[Any]) -> Any:
    """``add_safe_globals`` for the duration of a ``with`` block."""
    saved = dict(_SAFE_GLOBALS)
    add_safe_globals(safe_globals)
    try:
        yield
    finally:
        _SAFE_GLOBALS.clear()
        _SAFE_GLOBALS.update(saved)

MAGIC = "cygrad.save"
VERSION = 1
MANIFEST = "__cygrad__"
#: Largest manifest accepted on load (bytes).
MAX_MANIFEST_BYTES = 64 << 20
#: Largest single array accepted on load (bytes).
MAX_ARRAY_BYTES = 1 << 36
#: Deepest nesting of containers accepted on save and load.
MAX_DEPTH = 200
_DTYPES = frozenset(
    np.dtype(d)
    for d in (
        "float16",
        "float32",
        "float64",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "bool",
        "complex64",
        "complex128",
    )
)


def save(obj: object, f: FileLike, pickle_module: Any = None, pickle_protocol: int = 2,
         _use_new_zipfile_serialization: bool = True,
         _disable_byteorder_record: Any = False) -> None:
    """Write ``obj`` to ``f`` in cygrad's ``.npz``-based format.

    torch's other arguments (``pickle_module``, ``pickle_protocol``, ...) are
    accepted and change nothing: nothing is pickled.

    Parameters
    ----------
    obj : Tensor, ndarray, nn.Module, or dict / list / tuple / set nesting of
        those and of ``int``, ``float``, ``bool``, ``str``, ``None``
        What to store: typically ``model.state_dict()``,
        ``optimizer.state_dict()`` or a dict bundling them.  A whole module
        is stored as its class's name and its attributes (no code); loading
        it needs the class to be cygrad's or allowed (``add_safe_globals``).
    f : str, os.PathLike or binary file object
        Destination.  A path is written as given (no ``.npz`` suffix added).

    Raises
    ------
    TypeError
        For an object of any other type (a function, a module with hooks
        registered, ...).
    """
    arrays = {}
    memo = {}
    root = _encode(obj, arrays, memo, 0)
    manifest = json.dumps(
        {"magic": MAGIC, "version": VERSION, "root": root}, allow_nan=False
    ).encode("utf-8")
    arrays[MANIFEST] = np.frombuffer(manifest, dtype=np.uint8)
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            _write_npz(fh, arrays)
    else:
        _write_npz(f, arrays)


def _write_npz(fh, arrays):
    """What ``np.savez(fh, allow_pickle=False, **arrays)`` writes on NumPy 2,
    written member by member: NumPy 1.x's ``savez`` has no ``allow_pickle``
    and would store the flag itself as an array named ``allow_pickle``."""
    with zipfile.ZipFile(fh, mode="w", compression=zipfile.ZIP_STORED,
                         allowZip64=True) as zf:
        for name, arr in arrays.items():
            with zf.open(name + ".npy", "w", force_zip64=True) as member:
                npy_format.write_array(member, np.asanyarray(arr), allow_pickle=False)


def load(f: FileLike, map_location: Any = None, pickle_module: Any = None, *,
         weights_only: bool | None = True, mmap: bool | None = None,
         **pickle_load_args: Any) -> Any:
    """Read an object written by :func:`save`.

    Parameters
    ----------
    f : str, os.PathLike or binary file object
    map_location : None, "cpu", ``cygrad.device("cpu")`` or a dict mapping
        locations to "cpu"
        Accepted for PyTorch compatibility; cygrad only has the CPU.
    weights_only : bool
        A whole saved module is rebuilt only from cygrad's own classes and
        those of ``add_safe_globals`` (default True, as torch 2.6+); False
        also allows any ``nn.Module`` class of an already imported module.
        Loading never imports or runs code either way.

    Returns
    -------
    The stored object, with tensors as ``cygrad.Tensor`` (``nn.Parameter``
    where one was saved) and plain containers.

    Raises
    ------
    ValueError
        The file is not a cygrad file (wrong magic, a pickle such as a
        ``torch.save`` file, not a zip), is truncated or corrupt, or declares
        sizes that do not match its contents.
    RuntimeError
        The file was written by a newer format version.
    pickle.UnpicklingError
        A saved module's class is not allowed (torch's error type; the
        message names the class and ``add_safe_globals``).
    """
    if not _is_cpu_location(map_location):
        raise ValueError(
            f"cygrad.load: map_location must be None or 'cpu', got "
            f"{map_location!r} (cygrad runs on the CPU only)"
        )
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return _load_stream(fh, os.fspath(f), weights_only)
    return _load_stream(f, getattr(f, "name", "<stream>"), weights_only)


def _is_cpu_location(loc):
    if isinstance(loc, dict):
        return all(_is_cpu_location(v) for v in loc.values())
    return loc is None or str(loc) in ("cpu", "cpu:0")


# ---------------------------------------------------------------------------
# encoding


def _encode(obj, arrays, memo, depth):
    if depth > MAX_DEPTH:
        raise ValueError(f"cygrad.save: object nested deeper than {MAX_DEPTH} levels")
    if obj is None:
        return {"t": "none"}
    if isinstance(obj, (bool, np.bool_)):
        return {"t": "bool", "v": bool(obj)}
    if isinstance(obj, (int, np.integer)):
        return {"t": "int", "v": int(obj)}
    if isinstance(obj, (float, np.floating)):
        return {"t": "float", "v": float(obj).hex()}
    if isinstance(obj, str):
        return {"t": "str", "v": obj}
    if isinstance(obj, Tensor):
        key = memo.get(id(obj))
        if key is None:
            key = f"a{len(memo)}"
            memo[id(obj)] = key
            # keep obj alive in memo so that id() stays unique while saving
            memo[key] = obj
            arrays[key] = np.asarray(obj.detach()._arr, order="C")
        return {
            "t": "tensor",
            "a": key,
            "requires_grad": bool(obj.requires_grad),
            "parameter": _is_parameter(obj),
        }
    if isinstance(obj, np.ndarray):
        if obj.dtype not in _DTYPES:
            raise TypeError(f"cygrad.save: cannot store an array of dtype {obj.dtype}")
        key = f"a{len(memo)}"
        memo[key] = obj
        arrays[key] = np.asarray(obj, order="C")  # keeps 0-d
        return {"t": "ndarray", "a": key}
    if isinstance(obj, dict):
        tag = "odict" if isinstance(obj, collections.OrderedDict) else "dict"
        items = [
            [_encode(k, arrays, memo, depth + 1), _encode(v, arrays, memo, depth + 1)]
            for k, v in obj.items()
        ]
        return {"t": tag, "items": items}
    if isinstance(obj, (list, tuple)):
        tag = ("list" if isinstance(obj, list) else "size" if isinstance(obj, Size)
               else "tuple")
        return {"t": tag, "items": [_encode(v, arrays, memo, depth + 1) for v in obj]}
    if isinstance(obj, Module):
        return _encode_module(obj, arrays, memo, depth)
    if isinstance(obj, (set, frozenset)):
        return {"t": "set", "items": [_encode(v, arrays, memo, depth + 1)
                                      for v in sorted(obj, key=repr)]}
    if isinstance(obj, np.dtype) and obj in _DTYPES:
        return {"t": "dtype", "v": obj.name}
    if isinstance(obj, slice):
        return {"t": "slice", "items": [_encode(v, arrays, memo, depth + 1)
                                        for v in (obj.start, obj.stop, obj.step)]}
    if _is_function(obj):
        return {"t": "function", "v": _function_name(obj)}
    hint = ""
    if hasattr(obj, "state_dict"):
        hint = " (save its state_dict() instead; cygrad never pickles objects)"
    raise TypeError(
        f"cygrad.save: cannot store an object of type {type(obj).__name__}{hint}; "
        "supported: Tensor, ndarray, dict, list, tuple, int, float, bool, str, None"
    )


def _is_function(obj):
    """A plain, built-in or Cython-compiled function (not a class, a bound
    method or another callable object)."""
    return isinstance(obj, (types.FunctionType, types.BuiltinFunctionType)) or (
        type(obj).__name__ == "cython_function_or_method")


def _function_name(fn):
    """The importable name a function is stored by (``activation=F.relu``
    in a layer): it must lead back to the function itself, so a lambda or a
    nested function has none."""
    qual = getattr(fn, "__qualname__", "")
    mod = getattr(fn, "__module__", None) or ""
    # the op table's compiled functions live in the engine but are reached
    # as cygrad.<name>
    names = [f"{mod}.{qual}"] + ([f"cygrad.{qual}"] if mod.startswith("cygrad.") else [])
    for name in names:
        if "<" not in qual and _global(name, weights_only=False) is fn:
            return name
    raise TypeError(
        f"cygrad.save: cannot store the function {qual or fn!r}: only functions "
        "defined at the top level of a module are stored (by name), not lambdas "
        "or nested functions")


def _encode_module(m, arrays, memo, depth):
    """A module: its class name and its ``__dict__`` (parameters, buffers,
    children, settings, functions by name), hooks excluded."""
    key = memo.get(id(m))
    if key is not None:
        return {"t": "moduleref", "k": key}
    key = f"m{len(memo)}"
    memo[id(m)] = key
    memo[key] = m
    for table in _HOOK_TABLES:
        if m.__dict__.get(table):
            raise TypeError(
                f"cygrad.save: {type(m).__name__} has {table.strip('_')} registered; "
                "hooks are functions, which cygrad never stores. Remove them "
                "(handle.remove()) before saving")
    state = {k: v for k, v in m.__dict__.items()
             if k not in _HOOK_TABLES and k != "_hooked"}
    try:
        body = _encode(state, arrays, memo, depth + 1)
    except TypeError as e:
        raise TypeError(f"cygrad.save: cannot store module {type(m).__name__}: {e}"
                        ) from None
    return {"t": "module", "k": key, "cls": _qualified(type(m)), "state": body}


def _global(name, weights_only):
    """The object a saved name refers to, if loading may use it: an allowed
    one, one of cygrad's, or (``weights_only=False``) any in a module already
    imported (never importing, that is running, code); else None."""
    obj = _SAFE_GLOBALS.get(name)
    if obj is None and (name.startswith("cygrad.") or not weights_only):
        modname, _, qual = name.rpartition(".")
        while modname and modname not in sys.modules:
            modname, _, head = modname.rpartition(".")
            qual = f"{head}.{qual}"
        obj = sys.modules.get(modname)
        for part in qual.split("."):
            obj = getattr(obj, part, None)
    return obj


def _function(name, weights_only):
    fn = _global(name, weights_only)
    if not _is_function(fn):
        short = name.rpartition(".")[2]
        raise pickle.UnpicklingError(
            f"Weights only load failed: the function {name} is not one of cygrad's "
            "and was not allowed (or its module is not imported). Use "
            f"`cygrad.serialization.add_safe_globals([{short}])` if you trust it, "
            "or load with weights_only=False after importing its module.")
    return fn


def _module_class(name, weights_only):
    """The class a saved module names, if loading may construct it."""
    cls = _global(name, weights_only)
    if not (isinstance(cls, type) and issubclass(cls, Module)):
        short = name.rpartition(".")[2]
        raise pickle.UnpicklingError(
            "Weights only load failed. In cygrad (as in torch 2.6+) `weights_only` "
            "defaults to True: only cygrad's own classes and those you allow are "
            f"constructed. Unsupported global: GLOBAL {name} was not an allowed "
            "global by default. Please use "
            f"`cygrad.serialization.add_safe_globals([{short}])` or the "
            f"`cygrad.serialization.safe_globals([{short}])` context manager to "
            "allowlist this global if you trust this class.")
    return cls


def _is_parameter(t):
    return isinstance(t, Parameter)


# ---------------------------------------------------------------------------
# decoding


def _load_stream(fh, name, weights_only=True):
    head = fh.read(4)
    fh.seek(-len(head), io.SEEK_CUR)
    if head[:1] == b"\x80":
        raise ValueError(
            f"cygrad.load: {name} is a pickle; cygrad refuses to unpickle (it can "
            "run arbitrary code). Re-save the object with cygrad.save"
        )
    if head != b"PK\x03\x04":
        what = "empty" if not head else "not a zip archive"
        raise ValueError(
            f"cygrad.load: {name} is not a cygrad file (wrong magic: {what})"
        )
    try:
        zf = zipfile.ZipFile(fh)
    except (zipfile.BadZipFile, EOFError, OSError) as e:
        raise ValueError(f"cygrad.load: {name} is truncated or corrupt ({e})") from None
    with zf:
        members = {info.filename: info for info in zf.infolist()}
        if any(n.endswith(".pkl") for n in members):
            raise ValueError(
                f"cygrad.load: {name} holds a pickle (a torch.save file?); "
                "cygrad refuses to unpickle. Convert it to NumPy arrays and save "
                "them with cygrad.save"
            )
        info = members.get(MANIFEST + ".npy")
        if info is None:
            raise ValueError(
                f"cygrad.load: {name} is not a cygrad file (wrong magic: no "
                f"{MANIFEST} manifest)"
            )
        raw = _read_member(zf, info, name, MAX_MANIFEST_BYTES)
        if raw.dtype != np.uint8 or raw.ndim != 1:
            raise ValueError(f"cygrad.load: {name} has a malformed manifest")
        try:
            manifest = json.loads(raw.tobytes().decode("utf-8"))
        except (ValueError, RecursionError) as e:
            raise ValueError(
                f"cygrad.load: {name} has a corrupt manifest ({e})"
            ) from None
        if not isinstance(manifest, dict) or manifest.get("magic") != MAGIC:
            raise ValueError(f"cygrad.load: {name} is not a cygrad file (wrong magic)")
        version = manifest.get("version")
        if not isinstance(version, int) or version < 1:
            raise ValueError(f"cygrad.load: {name} has an invalid version {version!r}")
        if version > VERSION:
            raise RuntimeError(
                f"cygrad.load: {name} uses format version {version}; this cygrad "
                f"reads versions up to {VERSION}. Upgrade cygrad"
            )
        if "root" not in manifest:
            raise ValueError(f"cygrad.load: {name} has a manifest without a root")
        loaded = {"__weights_only__": weights_only}
        return _decode(manifest["root"], zf, members, loaded, name, 0)


def _decode(node, zf, members, loaded, name, depth):
    if depth > MAX_DEPTH or not isinstance(node, dict):
        raise ValueError(f"cygrad.load: {name} has a malformed manifest node")
    t = node.get("t")
    try:
        if t == "none":
            return None
        if t == "bool":
            return _typed(node["v"], bool)
        if t == "int":
            return _typed(node["v"], int)
        if t == "float":
            return float.fromhex(_typed(node["v"], str))
        if t == "str":
            return _typed(node["v"], str)
        if t in ("dict", "odict"):
            out = collections.OrderedDict() if t == "odict" else {}
            for k, v in node["items"]:
                key = _decode(k, zf, members, loaded, name, depth + 1)
                if isinstance(key, (list, dict)):
                    raise TypeError("unhashable dict key")
                out[key] = _decode(v, zf, members, loaded, name, depth + 1)
            return out
        if t in ("list", "tuple", "size"):
            items = [
                _decode(v, zf, members, loaded, name, depth + 1) for v in node["items"]
            ]
            if t == "size":
                if not all(type(i) is int for i in items):
                    raise TypeError("a saved Size holds something other than ints")
                return Size(items)
            return items if t == "list" else tuple(items)
        if t == "ndarray":
            return _array(node["a"], zf, members, name).copy()
        if t == "set":
            return set(_decode(v, zf, members, loaded, name, depth + 1)
                       for v in node["items"])
        if t == "dtype":
            dt = np.dtype(_typed(node["v"], str))
            if dt not in _DTYPES:
                raise TypeError(f"dtype {dt}")
            return dt
        if t == "slice":
            return slice(*[_decode(v, zf, members, loaded, name, depth + 1)
                           for v in node["items"]])
        if t == "module":
            cls = _module_class(_typed(node["cls"], str), loaded["__weights_only__"])
            m = cls.__new__(cls)
            loaded[_typed(node["k"], str)] = m
            state = _decode(node["state"], zf, members, loaded, name, depth + 1)
            if not isinstance(state, dict):
                raise TypeError("module state")
            m.__dict__.update(state)
            m._init_hooks()
            return m
        if t == "function":
            return _function(_typed(node["v"], str), loaded["__weights_only__"])
        if t == "moduleref":
            return loaded[_typed(node["k"], str)]
        if t == "tensor":
            key = node["a"]
            if key not in loaded:
                loaded[key] = _tensor(_array(key, zf, members, name), node)
            return loaded[key]
    except (KeyError, TypeError) as e:
        raise ValueError(
            f"cygrad.load: {name} has a malformed manifest ({e!r})"
        ) from None
    raise ValueError(f"cygrad.load: {name} has an unknown manifest node type {t!r}")


def _typed(v, kind):
    if type(v) is not kind:
        raise TypeError(f"expected {kind.__name__}, got {type(v).__name__}")
    return v


def _tensor(arr, node):
    requires_grad = _typed(node.get("requires_grad", False), bool)
    t = from_numpy(arr)
    if node.get("parameter"):
        return Parameter(t, requires_grad=requires_grad)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _array(key, zf, members, name):
    info = members.get(_typed(key, str) + ".npy")
    if info is None or key == MANIFEST:
        raise ValueError(f"cygrad.load: {name} is missing array {key!r} (truncated?)")
    return _read_member(zf, info, name, MAX_ARRAY_BYTES)


def _read_member(zf, info, name, cap):
    """Read one ``.npy`` member, checking its header before reading any data."""
    what = f"{name}: member {info.filename}"
    # cygrad.save stores members uncompressed: a compressed member can inflate
    # without bound (a zip bomb), and a stored one must fit in the real file,
    # else its declared size alone would make the reader allocate that much.
    if info.compress_type != zipfile.ZIP_STORED:
        raise ValueError(f"cygrad.load: {what} is compressed; cygrad files store "
                         "arrays uncompressed (refused: it could inflate without "
                         "bound)")
    size = zf.fp.seek(0, io.SEEK_END)
    if info.header_offset + info.compress_size > size:
        raise ValueError(f"cygrad.load: {what} declares {info.compress_size} bytes "
                         f"but the file holds {size} (truncated or corrupt)")
    try:
        with zf.open(info) as fp:
            version = npy_format.read_magic(fp)
            if version == (1, 0):
                shape, fortran, dtype = npy_format.read_array_header_1_0(fp)
            elif version == (2, 0):
                shape, fortran, dtype = npy_format.read_array_header_2_0(fp)
            else:
                raise ValueError(f"unsupported .npy version {version}")
            if dtype.hasobject:
                raise ValueError("holds Python objects (a pickle); refused")
            if dtype not in _DTYPES:
                raise ValueError(f"has unsupported dtype {dtype}")
            count = math.prod(shape)
            nbytes = count * dtype.itemsize
            stored = info.file_size - fp.tell()
            if nbytes > cap:
                raise ValueError(f"declares {nbytes} bytes, over the {cap}-byte limit")
            if nbytes != stored:
                raise ValueError(
                    f"declares shape {shape} ({nbytes} bytes) but stores "
                    f"{stored} bytes (truncated or corrupt)"
                )
            data = fp.read(nbytes)
    except ValueError as e:
        raise ValueError(f"cygrad.load: {what} {e}") from None
    except (zipfile.BadZipFile, EOFError, OSError, zlib.error) as e:
        raise ValueError(f"cygrad.load: {what} is truncated or corrupt ({e})") from None
    if len(data) != nbytes:
        raise ValueError(f"cygrad.load: {what} is truncated")
    arr = np.frombuffer(data, dtype=dtype, count=count)
    arr = arr.reshape(shape, order="F" if fortran else "C")
    return np.array(arr, order="C", copy=True)
