"""``Module``: the base class of layers, as ``torch.nn.Module``.

Parameters, buffers and submodules are registered by attribute assignment
and kept in insertion order; every traversal (``parameters()``,
``state_dict()``, ``repr``) follows that order, so two identically built
models enumerate their parameters identically.
"""

from __future__ import annotations

import collections
import collections.abc
import itertools
from typing import TYPE_CHECKING, Any

import numpy as np

from cygrad import dtypes as _dt
from cygrad._device import check_device
from cygrad._tensor import Tensor
from cygrad.creation import from_numpy
from cygrad.ops.shape import parse_to
from cygrad.utils.hooks import RemovableHandle

from . import _hooks
from ._buffer import Buffer
from .parameter import Parameter, is_lazy

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping

    from typing_extensions import Self

    from cygrad._typing import Device, Hook

__all__ = ["Module"]

def _predates(state_dict, key):
    """A norm layer's ``num_batches_tracked`` absent from a state dict of
    before the buffer (no version 2 in its ``_metadata``, as a plain dict):
    torch keeps the module's count and does not call the key missing."""
    mod_name, _, name = key.rpartition(".")
    if name != "num_batches_tracked":
        return False
    meta = getattr(state_dict, "_metadata", None)
    version = None if meta is None else meta.get(mod_name, {}).get("version")
    return version is None or version < 2


_KeysTuple = collections.namedtuple("_IncompatibleKeys",
                                    ["missing_keys", "unexpected_keys"])


class _IncompatibleKeys(_KeysTuple):
    """What ``load_state_dict`` returns; prints as torch's when all matched."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


# Hook tables of every module: id -> hook (and the ids registered with_kwargs).
_HOOK_TABLES = ("_forward_pre_hooks", "_forward_pre_hooks_with_kwargs",
                "_forward_hooks", "_forward_hooks_with_kwargs",
                "_forward_hooks_always_called", "_backward_pre_hooks",
                "_backward_hooks")


class Module:
    """Base class for all layers and models.

    Subclasses assign ``Parameter``s and ``Module``s as attributes in
    ``__init__`` (after calling ``super().__init__()``) and define
    ``forward``; calling the module calls ``forward``.
    """

    training: bool
    # the layout version of the module's state (torch's ``_version``), kept
    # in ``state_dict()._metadata`` so that loading can tell old checkpoints
    _version: int = 1

    def __init__(self) -> None:
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", {})
        self._init_hooks()

    def _init_hooks(self) -> None:
        for table in _HOOK_TABLES:
            object.__setattr__(self, table, collections.OrderedDict())
        object.__setattr__(self, "_hooked", False)

    # -- registration -----------------------------------------------------

    def __setattr__(self, name: str, value: Any) -> None:
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError(
                    "cannot assign parameters before Module.__init__() call"
                )
            self._forget(name, keep="_parameters")
            params[name] = value
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                    "(cygrad.nn.Parameter or None expected)"
                )
            params[name] = None
        elif isinstance(value, Module):
            modules = self.__dict__.get("_modules")
            if modules is None:
                raise AttributeError(
                    "cannot assign module before Module.__init__() call"
                )
            self._forget(name, keep="_modules")
            modules[name] = value
        elif name in self.__dict__.get("_modules", ()):
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as child module "
                    f"'{name}' (cygrad.nn.Module or None expected)"
                )
            self._modules[name] = None
        elif isinstance(value, Buffer):
            if self.__dict__.get("_buffers") is None:
                raise AttributeError(
                    "cannot assign buffer before Module.__init__() call")
            self.register_buffer(name, value, value.persistent)
        elif name in self.__dict__.get("_buffers", ()):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                    "(Tensor or None expected)"
                )
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name, keep=None):
        """Drop ``name`` from every table but ``keep``: reassigning an entry
        keeps its place in the order (as torch; optimizer order and
        state-dict keys depend on it)."""
        self.__dict__.pop(name, None)
        for table in ("_parameters", "_buffers", "_modules"):
            if table != keep:
                self.__dict__[table].pop(name, None)
        if keep != "_buffers":
            self._non_persistent.discard(name)

    def __getattr__(self, name: str) -> Any:
        # only called when normal lookup fails
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            if table in d and name in d[table]:
                return d[table][name]
        raise AttributeError(
            f"'{type(self).__name__}' object has no attribute '{name}'"
        )

    def __delattr__(self, name: str) -> None:
        for table in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(table, ()):
                del self.__dict__[table][name]
                self._non_persistent.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        extra = itertools.chain(self._parameters, self._buffers, self._modules)
        return sorted(set(super().__dir__()) | set(extra))

    def _check_name(self, name, kind):
        if not isinstance(name, str):
            raise TypeError(
                f"{kind} name should be a string. Got {type(name).__name__}"
            )
        if name == "" or "." in name:
            raise KeyError(f'{kind} name can\'t be empty or contain ".", got: {name!r}')
        if hasattr(self, name) and name not in getattr(self, f"_{kind}s", ()):
            raise KeyError(f"attribute '{name}' already exists")

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add ``param`` (a ``Parameter`` or None) under ``name``."""
        self._check_name(name, "parameter")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{type(param).__name__}' object to parameter "
                f"'{name}' (cygrad.nn.Parameter or None required)"
            )
        self._forget(name, keep="_parameters")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None,
                        persistent: bool = True) -> None:
        """Add a non-parameter tensor (saved in ``state_dict`` if persistent)."""
        self._check_name(name, "buffer")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{type(tensor).__name__}' object to buffer "
                f"'{name}' (Tensor or None required)"
            )
        self._forget(name, keep="_buffers")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent.discard(name)
        else:
            self._non_persistent.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module under ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "module")
        self._forget(name, keep="_modules")
        self._modules[name] = module

    register_module = add_module

    # -- traversal --------------------------------------------------------

    def named_modules(self, memo: set[Module] | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """Yield ``(dotted_name, module)`` for this module and every descendant."""
        memo = set() if memo is None else memo
        stack = [(prefix, self)]
        while stack:
            name, mod = stack.pop()
            if remove_duplicate:
                if id(mod) in memo:
                    continue
                memo.add(id(mod))
            yield name, mod
            children = [
                (f"{name}.{k}" if name else k, m)
                for k, m in mod._modules.items()
                if m is not None
            ]
            stack.extend(reversed(children))

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self) -> Iterator[Module]:
        for _, m in self.named_children():
            yield m

    def get_submodule(self, target: str) -> Module:
        """The submodule at dotted path ``target`` (``""``: self)."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def _get_leaf(self, target, table, kind):
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        if name not in getattr(mod, table):
            raise AttributeError(f"`{name}` is not {kind}")
        return getattr(mod, name)

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path ``target`` (``"0.weight"``)."""
        return self._get_leaf(target, "_parameters", "an nn.Parameter")

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at dotted path ``target``."""
        return self._get_leaf(target, "_buffers", "a buffer")

    def _named_members(self, table, prefix, recurse, remove_duplicate):
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
        if not recurse:
            mods = [(prefix, self)]
        for mod_name, mod in mods:
            for name, value in getattr(mod, table).items():
                if value is None:
                    continue
                if remove_duplicate:
                    if id(value) in seen:
                        continue
                    seen.add(id(value))
                yield (f"{mod_name}.{name}" if mod_name else name), value

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        """Yield ``(dotted_name, parameter)``, e.g. ``("0.weight", w)``."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Yield every parameter once, in registration order."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # -- calling ----------------------------------------------------------

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function'
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not self.__dict__.get("_hooked"):
            return self.forward(*args, **kwargs)
        return _hooks.call_with_hooks(self, args, kwargs)

    # -- hooks ------------------------------------------------------------

    def _refresh_hooked(self):
        hooked = bool(self._forward_pre_hooks or self._forward_hooks
                      or self._backward_pre_hooks or self._backward_hooks)
        object.__setattr__(self, "_hooked", hooked)

    def _add_hook(self, table, hook, prepend=False, flags=()):
        tables = [getattr(self, f) for f in flags]
        handle = RemovableHandle(getattr(self, table), extra_dict=tables,
                                 on_change=self._refresh_hooked)
        hooks = getattr(self, table)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        for t in tables:
            t[handle.id] = True
        self._refresh_hooked()
        return handle

    def register_forward_pre_hook(self, hook: Hook, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """Call ``hook(module, args)`` (``hook(module, args, kwargs)`` with
        ``with_kwargs``) before ``forward``; a non-None result replaces the
        args (a tuple, or ``(args, kwargs)``).  Returns a ``RemovableHandle``."""
        flags = ("_forward_pre_hooks_with_kwargs",) if with_kwargs else ()
        return self._add_hook("_forward_pre_hooks", hook, prepend, flags)

    def register_forward_hook(self, hook: Hook, *, prepend: bool = False,
                              with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """Call ``hook(module, args, output)`` (``hook(module, args, kwargs,
        output)`` with ``with_kwargs``) after ``forward``; a non-None result
        replaces the output.  ``always_call``: also when forward raised."""
        flags = ("_forward_hooks_with_kwargs",) if with_kwargs else ()
        if always_call:
            flags += ("_forward_hooks_always_called",)
        return self._add_hook("_forward_hooks", hook, prepend, flags)

    def register_full_backward_pre_hook(self, hook: Hook,
                                        prepend: bool = False) -> RemovableHandle:
        """Call ``hook(module, grad_output)`` when the gradients of the
        module's outputs are known; a non-None result replaces them."""
        return self._add_hook("_backward_pre_hooks", hook, prepend)

    def register_full_backward_hook(self, hook: Hook,
                                    prepend: bool = False) -> RemovableHandle:
        """Call ``hook(module, grad_input, grad_output)`` when the gradients
        of the module's tensor inputs are computed; a non-None result (a
        tuple as long as grad_input) replaces them."""
        return self._add_hook("_backward_hooks", hook, prepend)

    def register_backward_hook(self, hook: Hook) -> RemovableHandle:
        """Deprecated in torch: the same as ``register_full_backward_hook``."""
        return self.register_full_backward_hook(hook)

    # -- modes and gradients ----------------------------------------------

    def train(self, mode: bool = True) -> Self:
        """Set training mode on this module and its descendants; return self."""
        if not isinstance(mode, bool):
            raise ValueError(
                "training mode is expected to be boolean"
            )
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self) -> Self:
        """Same as ``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Self:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's ``.grad`` (to None by default, as torch)."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad._arr[...] = 0
                p.grad._bump_version()

    def apply(self, fn: Callable[[Module], None]) -> Self:
        """Call ``fn(m)`` on every submodule (children first) and on self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # -- dtype ------------------------------------------------------------

    def to(self, *args: Any, **kwargs: Any) -> Self:
        """Cast every floating parameter and buffer to a floating ``dtype``
        in place: ``to(dtype)``, ``to(device)``, ``to(device, dtype)``,
        ``to(tensor)``, with torch's keywords (the device must be the CPU).

        Parameters keep their identity (an optimizer built before still
        holds them); their ``.grad`` is cast too.
        """
        dtype, _ = parse_to(args, kwargs)
        if dtype is None:
            return self
        if not np.issubdtype(dtype, np.floating):
            raise TypeError("nn.Module.to only accepts floating point or complex "
                            f"dtypes, but got desired dtype={_dt.name(dtype)}")
        return self._cast_floats(dtype)

    def _cast_floats(self, dtype):
        for m in self.modules():
            for t in itertools.chain(m._parameters.values(), m._buffers.values()):
                if t is not None and is_lazy(t):
                    t._arr = t._arr.astype(dtype)       # shapeless: the dtype only
                elif t is not None and np.issubdtype(t.dtype, np.floating):
                    t.data = t.data.to(dtype)
                    if t.grad is not None:
                        t.grad = t.grad.to(dtype)
        return self

    def float(self) -> Self:
        return self._cast_floats(np.float32)

    def double(self) -> Self:
        return self._cast_floats(np.float64)

    def half(self) -> Self:
        return self._cast_floats(np.float16)

    def bfloat16(self) -> Self:
        raise _dt.bfloat16.error()

    def type(self, dst_type: Any) -> Self:
        """Cast every parameter and buffer to ``dst_type`` (a dtype or a
        legacy type name)."""
        if isinstance(dst_type, str):
            dst_type = _dt.from_type_name(dst_type)
        return self._cast_floats(_dt.to_numpy(dst_type))

    def cpu(self) -> Self:
        return self

    def compile(self, *args: Any, **kwargs: Any) -> None:
        """Nothing to do: cygrad's kernels are compiled already (see
        ``cygrad.compile``); the module runs as it is."""

    def share_memory(self) -> Self:
        """A no-op returning the module: cygrad's tensors live in the process's
        memory, and worker processes receive copies (there is no shared CPU
        storage to move them to)."""
        return self

    def cuda(self, device: Device | None = None) -> Self:
        check_device("cuda" if device is None else device)
        return self

    def to_empty(self, *, device: Device | None = None, recurse: bool = True) -> Self:
        """Give every parameter and buffer fresh uninitialised storage of its
        shape and dtype (on the CPU); parameters keep their identity."""
        if device is not None:
            check_device(device)
        mods = self.modules() if recurse else [self]
        for m in mods:
            for t in itertools.chain(m._parameters.values(), m._buffers.values()):
                if t is not None:
                    t.data = from_numpy(np.empty(t._arr.shape, t._arr.dtype))
        return self

    # -- state dict -------------------------------------------------------

    def state_dict(self, destination: dict[str, Any] | None = None, prefix: str = "",
                   keep_vars: bool = False) -> dict[str, Any]:
        """Ordered mapping of dotted names to parameters and persistent buffers.

        Values share storage with the module's tensors (detached unless
        ``keep_vars``), as in torch; ``cygrad.save`` writes them.
        """
        out = collections.OrderedDict() if destination is None else destination
        if destination is None:
            out._metadata = collections.OrderedDict()  # type: ignore[attr-defined]
        meta = getattr(out, "_metadata", None)
        for mod_name, mod in self.named_modules(prefix=prefix.rstrip(".")):
            dotted = f"{mod_name}." if mod_name else ""
            if meta is not None:
                meta[mod_name] = {"version": type(mod)._version}
            for name, p in mod._parameters.items():
                if p is not None:
                    out[dotted + name] = p if keep_vars or is_lazy(p) else p.detach()
            for name, b in mod._buffers.items():
                if b is not None and name not in mod._non_persistent:
                    out[dotted + name] = b if keep_vars or is_lazy(b) else b.detach()
        return out

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True,
                        assign: bool = False) -> Any:
        """Copy values from ``state_dict`` into this module's tensors.

        Parameters
        ----------
        state_dict : mapping of dotted names to Tensors (or arrays)
        strict : bool
            If True, keys missing from or unexpected in ``state_dict`` are
            errors.  A shape mismatch is an error in either case.
        assign : bool
            Accepted for torch compatibility; values are always copied (cast
            to the destination dtype), keeping parameter identity.

        Returns
        -------
        _IncompatibleKeys(missing_keys, unexpected_keys), printed
        ``<All keys matched successfully>`` when both are empty

        Raises
        ------
        RuntimeError
            ``Error(s) in loading state_dict for <Class>:`` followed by one
            line per problem; nothing is modified when it raises.
        """
        if not isinstance(state_dict, collections.abc.Mapping):
            raise TypeError(
                f"Expected state_dict to be dict-like, got {type(state_dict)}."
            )
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict
                   and not _predates(state_dict, k)]
        unexpected = [k for k in state_dict if k not in own]
        errors = []
        if strict:
            if unexpected:
                keys = ", ".join(f'"{k}"' for k in unexpected)
                errors.append(f"Unexpected key(s) in state_dict: {keys}. ")
            if missing:
                keys = ", ".join(f'"{k}"' for k in missing)
                errors.append(f"Missing key(s) in state_dict: {keys}. ")
        copies = []
        for key, dst in own.items():
            if key not in state_dict:
                continue
            src = state_dict[key]
            arr = src._arr if isinstance(src, Tensor) else src
            if not isinstance(arr, np.ndarray):
                errors.append(
                    f'While copying the parameter named "{key}", expected a Tensor '
                    f"from checkpoint but received {type(src).__name__}"
                )
                continue
            if is_lazy(dst):
                # a lazy layer's tensor takes the checkpoint's shape
                copies.append((key, dst, arr))
                continue
            if tuple(arr.shape) != tuple(dst.shape):
                errors.append(
                    f"size mismatch for {key}: copying a param with shape "
                    f"{_size(arr.shape)} from checkpoint, the shape in current "
                    f"model is {_size(dst.shape)}."
                )
                continue
            copies.append((key, dst, arr))
        if errors:
            body = "\n\t".join(errors)
            raise RuntimeError(
                f"Error(s) in loading state_dict for {type(self).__name__}:\n\t{body}"
            )
        for key, dst, arr in copies:
            if is_lazy(dst):
                dst = self._materialize_lazy(key, dst, arr.shape)
            if dst._arr is not arr:
                np.copyto(dst._arr, arr, casting="unsafe")
                dst._bump_version()
        return _IncompatibleKeys(missing, unexpected)

    def _materialize_lazy(self, key, t, shape):
        """Give the uninitialized tensor at ``key`` storage of ``shape``: a
        parameter in place, a buffer as a new exact Tensor in its slot."""
        mod_name, _, name = key.rpartition(".")
        mod = self.get_submodule(mod_name)
        if mod._buffers.get(name) is t:
            mod._buffers[name] = from_numpy(np.zeros(shape, t.dtype))
            return mod._buffers[name]
        t.materialize(shape)
        return t

    # -- repr -------------------------------------------------------------

    def extra_repr(self) -> str:
        """One line of the module's own settings, shown inside its repr."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        # torch's layout: one line when the module has one line of settings
        # and no children, else one line per setting and per child
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({name}): " + repr(m).replace("\n", "\n  ")
                       for name, m in self._modules.items()]
        lines = extra_lines + child_lines
        body = ""
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                body = extra_lines[0]
            else:
                body = "\n  " + "\n  ".join(lines) + "\n"
        return f"{self._get_name()}({body})"


def _size(shape):
    return f"cygrad.Size([{', '.join(str(int(s)) for s in shape)}])"
