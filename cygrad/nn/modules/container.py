"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict``,
``ParameterList``, ``ParameterDict``; children and parameters register under
their position or key, and reprs print as torch's (a ``ModuleList`` groups
equal consecutive children: ``(0-2): 3 x Linear(...)``)."""

from __future__ import annotations

import collections
import collections.abc
import operator
from typing import TYPE_CHECKING, Any

from cygrad._tensor import Tensor
from cygrad.dtypes import name as _dtype_name
from cygrad.dtypes import type_name as _type_name

from ..module import Module
from ..parameter import Parameter

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from typing_extensions import Self

__all__ = ["ModuleDict", "ModuleList", "ParameterDict", "ParameterList",
           "Sequential"]


def _index(idx, n):
    idx = operator.index(idx)
    if not -n <= idx < n:
        raise IndexError(f"index {idx} is out of range")
    return idx % n


class Sequential(Module):
    """Modules applied in order: ``Sequential(Linear(2, 8), ReLU(), Linear(8, 1))``.

    Also accepts one ``OrderedDict`` of named modules.  Indexing returns a
    layer (or a new ``Sequential`` for a slice); ``len``, iteration,
    ``append``, ``insert``, ``extend``, ``pop`` and ``+`` work as in torch.
    """

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], collections.OrderedDict):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def __getitem__(self, idx: int | slice) -> Module:
        if isinstance(idx, slice):
            return type(self)(collections.OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[_index(idx, len(self))]

    def __setitem__(self, idx: int, module: Module) -> None:
        key = list(self._modules)[_index(idx, len(self))]
        self.add_module(key, module)

    def __delitem__(self, idx: int | slice) -> None:
        keys = list(self._modules)
        for k in keys[idx] if isinstance(idx, slice) else [keys[_index(idx, len(keys))]]:
            del self._modules[k]
        # torch renumbers the remaining children
        items = list(self._modules.values())
        self._modules.clear()
        for i, m in enumerate(items):
            self._modules[str(i)] = m

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __add__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError("add operator supports only objects of Sequential class, "
                             f"but {type(other)} is given.")
        return Sequential(*self, *other)

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        if index < 0:
            index += n
        items = list(self._modules.values())
        items.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(items):
            self._modules[str(i)] = m
        return self

    def extend(self, sequential: Iterable[Module]) -> Sequential:
        for m in sequential:
            self.append(m)
        return self

    def pop(self, key: int | slice) -> Module:
        v = self[key]
        del self[key]
        return v

    def forward(self, input: Tensor) -> Any:
        for m in self._modules.values():
            input = m(input)
        return input


class ModuleList(Module):
    """A list of modules whose parameters are registered (``0``, ``1``, ...)."""

    def __init__(self, modules: Any = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return list(self._modules.values())[_index(idx, len(self))]

    def __setitem__(self, idx: int, module: Module) -> None:
        self.add_module(str(_index(idx, len(self))), module)

    def __delitem__(self, idx: int | slice) -> None:
        keys = list(self._modules)
        for k in keys[idx] if isinstance(idx, slice) else [keys[_index(idx, len(keys))]]:
            del self._modules[k]
        items = list(self._modules.values())
        self._modules.clear()
        for i, m in enumerate(items):
            self._modules[str(i)] = m

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __iadd__(self, modules: Iterable[Module]) -> Self:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        return ModuleList(list(self) + list(other))

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> Self:
        if not isinstance(modules, collections.abc.Iterable):
            raise TypeError("ModuleList.extend should be called with an iterable, but "
                            f"got {type(modules).__name__}")
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> None:
        items = list(self._modules.values())
        items.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(items):
            self.add_module(str(i), m)

    def pop(self, key: int | slice) -> Module:
        v = self[key]
        del self[key]
        return v

    def __repr__(self) -> str:
        if not self._modules:
            return f"{self._get_name()}()"
        reprs = [repr(m) for m in self._modules.values()]
        lines = []
        start = 0
        for i in range(1, len(reprs) + 1):
            if i < len(reprs) and reprs[i] == reprs[start]:
                continue
            body = reprs[start].replace("\n", "\n  ")
            if i - start == 1:
                lines.append(f"({start}): {body}")
            else:
                lines.append(f"({start}-{i - 1}): {i - start} x {body}")
            start = i
        return f"{self._get_name()}(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """A dict of modules registered under their (string) keys, in order."""

    def __init__(self, modules: Any = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def clear(self) -> None:
        self._modules.clear()

    def pop(self, key: str) -> Module:
        v = self[key]
        del self[key]
        return v

    def keys(self) -> Iterable[str]:
        return self._modules.keys()

    def items(self) -> Iterable[tuple[str, Module]]:
        return self._modules.items()

    def values(self) -> Iterable[Module]:
        return self._modules.values()

    def update(self, modules: Any) -> None:
        if not isinstance(modules, collections.abc.Iterable):
            raise TypeError("ModuleDict.update should be called with an iterable of "
                            f"key/value pairs, but got {type(modules).__name__}")
        if isinstance(modules, (collections.abc.Mapping, ModuleDict)):
            for k, m in modules.items():
                self[k] = m
            return
        for j, m in enumerate(modules):
            if not isinstance(m, collections.abc.Iterable):
                raise TypeError(f"ModuleDict update sequence element #{j} should be "
                                f"Iterable; is{type(m).__name__}")
            if len(m) != 2:
                raise ValueError(f"ModuleDict update sequence element #{j} has length "
                                 f"{len(m)}; 2 is required")
            self[m[0]] = m[1]


def _param_line(p, legacy):
    """torch's one-line description of a parameter inside a ParameterList/Dict."""
    if not isinstance(p, Tensor):
        return f"Object of type: {type(p).__name__}"
    kind = "Parameter containing" if isinstance(p, Parameter) else "Tensor"
    size = "x".join(str(int(s)) for s in p.shape)
    what = _type_name(p.dtype) if legacy else f"torch.{_dtype_name(p.dtype)}"
    return f"{kind}: [{what} of size {size}]"


def _as_param(value):
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


class ParameterList(Module):
    """A list of parameters registered under ``0``, ``1``, ...; a plain tensor
    is wrapped into a ``Parameter`` (as torch)."""

    def __init__(self, values: Any = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return ParameterList([self[i] for i in range(len(self))[idx]])
        return getattr(self, str(_index(idx, len(self))))

    def __setitem__(self, idx: int, param: Any) -> None:
        idx = _index(idx, len(self))
        setattr(self, str(idx), _as_param(param))

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return iter(self[i] for i in range(len(self)))

    def __iadd__(self, parameters: Iterable[Any]) -> Self:
        return self.extend(parameters)

    def append(self, value: Any) -> ParameterList:
        new_idx = len(self)
        self._size += 1
        setattr(self, str(new_idx), _as_param(value))
        return self

    def extend(self, values: Iterable[Any]) -> Self:
        if not isinstance(values, collections.abc.Iterable) or isinstance(values,
                                                                          Tensor):
            raise TypeError("ParameterList.extend should be called with an iterable, "
                            f"but got {type(values).__name__}")
        for v in values:
            self.append(v)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"  ({i}): {_param_line(p, False)}" for i, p in
                         enumerate(self))



class ParameterDict(Module):
    """A dict of parameters registered under their keys, in order; a plain
    tensor is wrapped into a ``Parameter``."""

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        if not isinstance(key, str):
            raise TypeError(f"parameter name should be a string. Got "
                            f"{type(key).__name__}")
        self._keys[key] = None
        setattr(self, key, _as_param(value))

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def keys(self) -> Iterable[str]:
        return self._keys.keys()

    def items(self) -> Iterable[tuple[str, Any]]:
        return ((k, self[k]) for k in self._keys)

    def values(self) -> Iterable[Any]:
        return (self[k] for k in self._keys)

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default

    def pop(self, key: str) -> Any:
        v = self[key]
        del self[key]
        return v

    def clear(self) -> None:
        for k in list(self._keys):
            del self[k]

    def update(self, parameters: Any) -> None:
        if isinstance(parameters, (collections.abc.Mapping, ParameterDict)):
            pairs = list(parameters.items())
        else:
            pairs = list(parameters)
        for k, v in pairs:
            self[k] = v

    def extra_repr(self) -> str:
        return "\n".join(f"  ({k}): {_param_line(p, True)}" for k, p in self.items())

