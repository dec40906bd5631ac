"""``cygrad.nn.utils.prune``: masking a module's parameters, as torch does it.

Pruning parameter ``name`` of a module moves the original to the parameter
``name + "_orig"``, stores the mask as the buffer ``name + "_mask"`` and
makes ``name`` a plain attribute ``orig * mask``, recomputed by a forward
pre-hook (the method object itself) before every call, so gradients reach
``name_orig`` through the mask.  Pruning the same parameter again combines
the methods in a ``PruningContainer``: the new method only chooses among
the entries (unstructured) or channels (structured) still unpruned.
``remove`` makes the pruning permanent: ``name`` becomes a Parameter holding
``orig * mask`` and the reparametrisation is gone.

Masks are computed on the NumPy arrays: the smallest-magnitude entries
(``L1Unstructured``, ties to the lower flat index, as a stable sort) or
channels by L-n norm (``LnStructured``), random entries or channels
(``RandomUnstructured``/``RandomStructured``: the same draws as torch's, one
uniform per entry in the tensor's dtype or one per channel in the default
dtype, so a seeded run prunes torch's choices), or a given mask.
``amount`` is a fraction of the entries (rounded half to even, as Python's
``round``) or a count.
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any

import numpy as np

from cygrad.creation import from_numpy, rand, rand_like

__all__ = [
    "BasePruningMethod", "CustomFromMask", "Identity", "L1Unstructured",
    "LnStructured", "PruningContainer", "RandomStructured", "RandomUnstructured",
    "custom_from_mask", "global_unstructured", "identity", "is_pruned",
    "l1_unstructured", "ln_structured", "random_structured", "random_unstructured",
    "remove",
]


def _arr(t):
    return np.asarray(t.detach()._arr if hasattr(t, "detach") else t)


class BasePruningMethod(ABC):
    """A way to compute a pruning mask; also the forward pre-hook that
    re-applies it.  Subclasses set ``PRUNING_TYPE`` ("unstructured",
    "structured" with a ``dim``, or "global") and write ``compute_mask``."""

    _tensor_name: str
    PRUNING_TYPE: str = "unstructured"

    def __call__(self, module: Any, inputs: Any) -> None:
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Any, default_mask: Any) -> Any:
        """The new mask (a Tensor of ``t``'s shape) given the current one."""

    def apply_mask(self, module: Any) -> Any:
        """``name_orig * name_mask`` of ``module`` (differentiable in the
        original)."""
        if not hasattr(self, "_tensor_name"):
            raise AssertionError(
                f"Module {module} has to be pruned")  # torch's words
        orig = getattr(module, self._tensor_name + "_orig")
        mask = getattr(module, self._tensor_name + "_mask")
        return orig * mask

    @classmethod
    def apply(cls, module: Any, name: str, *args: Any,
              importance_scores: Any = None, **kwargs: Any) -> BasePruningMethod:
        """Prune ``module.name`` with a new ``cls(*args, **kwargs)``, combined
        with the method already there (if any); returns the hook."""
        old = None
        found = 0
        for k, hook in module._forward_pre_hooks.items():
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
                old, old_key = hook, k
                found += 1
        if found > 1:
            raise AssertionError(
                f"Avoid adding multiple pruning hooks to the same tensor {name} of "
                f"module {module}. Use a PruningContainer.")
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if old is not None:
            container = old if isinstance(old, PruningContainer) else \
                PruningContainer(old)
            container.add_pruning_method(method)
            del module._forward_pre_hooks[old_key]
            method = container
        orig = getattr(module, name)
        scores = orig if importance_scores is None else importance_scores
        if tuple(scores.shape) != tuple(orig.shape):
            raise AssertionError(
                f"importance_scores should have the same shape as parameter {name} "
                f"of {module}")
        if old is None:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = np.ones_like(_arr(orig))
        else:
            default_mask = _arr(getattr(module, name + "_mask")).copy()
        mask = method.compute_mask(scores, default_mask=from_numpy(default_mask))
        mask = from_numpy(np.ascontiguousarray(_arr(mask), dtype=_arr(orig).dtype))
        module.register_buffer(name + "_mask", mask)
        setattr(module, name, method.apply_mask(module))
        module.register_forward_pre_hook(method)
        return method

    def prune(self, t: Any, default_mask: Any = None,
              importance_scores: Any = None) -> Any:
        """``t`` times the mask this method computes for it."""
        scores = t if importance_scores is None else importance_scores
        if tuple(scores.shape) != tuple(t.shape):
            raise AssertionError("importance_scores should have the same shape as "
                                 "tensor t")
        if default_mask is None:
            default_mask = from_numpy(np.ones_like(_arr(t)))
        return t * self.compute_mask(scores, default_mask=default_mask)

    def remove(self, module: Any) -> None:
        """Make the pruning permanent: ``name`` becomes a Parameter holding
        the pruned values; ``name_orig`` and ``name_mask`` go."""
        if not hasattr(self, "_tensor_name"):
            raise AssertionError(
                f"Module {module} has to be pruned before pruning can be removed")
        name = self._tensor_name
        weight = self.apply_mask(module)
        if hasattr(module, name):
            delattr(module, name)
        orig = module._parameters[name + "_orig"]
        orig.data = weight.data
        del module._parameters[name + "_orig"]
        del module._buffers[name + "_mask"]
        setattr(module, name, orig)


def _nparams(amount, size):
    if isinstance(amount, numbers.Integral):
        return int(amount)
    return round(amount * size)


def _check_amount_init(amount):
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral)
            and (float(amount) > 1.0 or float(amount) < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, "
                         "1] or a non-negative integer")


def _check_amount(amount, size):
    if isinstance(amount, numbers.Integral) and amount > size:
        raise ValueError(f"amount={amount} should be smaller than the number of "
                         f"parameters to prune={size}")


def _check_dim(t, dim):
    if dim >= t.ndim or dim < -t.ndim:
        raise IndexError(f"Invalid index {dim} for tensor of size {tuple(t.shape)}")


class PruningContainer(BasePruningMethod):
    """Several pruning methods applied one after the other to one parameter;
    each later one sees only what the earlier ones left."""

    def __init__(self, *args: Any) -> None:
        self._pruning_methods: tuple[BasePruningMethod, ...] = ()
        if len(args) == 1 and not isinstance(args[0], Iterable):
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        elif len(args) == 1 and isinstance(args[0], Iterable):
            for method in args[0]:
                self.add_pruning_method(method)
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method: BasePruningMethod) -> None:
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and not hasattr(self, "_tensor_name"):
            self._tensor_name = method._tensor_name
        elif method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(
                "Can only add pruning methods acting on the parameter named "
                f"'{self._tensor_name}' to PruningContainer {self}. Found "
                f"'{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self) -> Any:
        return iter(self._pruning_methods)

    def __getitem__(self, idx: int) -> BasePruningMethod:
        return self._pruning_methods[idx]

    def compute_mask(self, t: Any, default_mask: Any) -> Any:
        """The last method's mask, computed on the still-unpruned part."""
        method = self._pruning_methods[-1]
        mask = _arr(default_mask)
        new = mask.copy()
        if method.PRUNING_TYPE == "unstructured":
            keep = mask == 1
            part = method.compute_mask(from_numpy(np.ascontiguousarray(_arr(t)[keep])),
                                       from_numpy(np.ascontiguousarray(mask[keep])))
            new[keep] = _arr(part)
        elif method.PRUNING_TYPE == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError("Pruning methods of PRUNING_TYPE 'structured' "
                                     "need to have the attribute `dim` defined.")
            dim = method.dim % mask.ndim
            others = tuple(d for d in range(mask.ndim) if d != dim)
            alive = np.nonzero(mask.sum(axis=others) != 0)[0]
            take = [slice(None)] * mask.ndim
            take[dim] = alive
            part = method.compute_mask(
                from_numpy(np.ascontiguousarray(_arr(t)[tuple(take)])),
                from_numpy(np.ascontiguousarray(mask[tuple(take)])))
            new[tuple(take)] = _arr(part)
        elif method.PRUNING_TYPE == "global":
            new = _arr(method.compute_mask(t, default_mask))
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")
        return from_numpy(new)


class Identity(BasePruningMethod):
    """Prunes nothing (the mask stays)."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Any, default_mask: Any) -> Any:
        return default_mask

    @classmethod
    def apply(cls, module: Any, name: str) -> BasePruningMethod:  # type: ignore[override]
        return super().apply(module, name)


def _topk_mask(scores, k, default_mask, largest):
    """``default_mask`` with the ``k`` smallest (largest=False) flat entries
    of ``scores`` zeroed (stable: ties go to the lower index)."""
    mask = np.array(_arr(default_mask), copy=True)
    if k:
        flat = np.abs(_arr(scores)).reshape(-1)
        order = np.argsort(-flat if largest else flat, kind="stable")[:k]
        mask.reshape(-1)[order] = 0
    return from_numpy(mask)


class RandomUnstructured(BasePruningMethod):
    """Zeroes ``amount`` entries chosen at random."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount: float) -> None:
        _check_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t: Any, default_mask: Any) -> Any:
        size = int(np.prod(t.shape))
        _check_amount(self.amount, size)
        k = _nparams(self.amount, size)
        prob = rand_like(t) if size else None
        return _topk_mask(prob, k, default_mask, largest=True) if k else \
            from_numpy(np.array(_arr(default_mask), copy=True))

    @classmethod
    def apply(cls, module: Any, name: str, amount: float) -> BasePruningMethod:  # type: ignore[override]
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Zeroes the ``amount`` entries of smallest absolute value."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount: float) -> None:
        _check_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t: Any, default_mask: Any) -> Any:
        size = int(np.prod(t.shape))
        _check_amount(self.amount, size)
        return _topk_mask(t, _nparams(self.amount, size), default_mask, largest=False)

    @classmethod
    def apply(cls, module: Any, name: str, amount: float,  # type: ignore[override]
              importance_scores: Any = None) -> BasePruningMethod:
        return super().apply(module, name, amount=amount,
                             importance_scores=importance_scores)


def _channel_mask(t, keep, dim, default_mask):
    mask = np.zeros(t.shape, dtype=_arr(default_mask).dtype)
    take = [slice(None)] * len(t.shape)
    take[dim] = keep
    mask[tuple(take)] = 1
    return from_numpy(mask * _arr(default_mask))


class RandomStructured(BasePruningMethod):
    """Zeroes ``amount`` whole channels along ``dim``, chosen at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: float, dim: int = -1) -> None:
        _check_amount_init(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t: Any, default_mask: Any) -> Any:
        _check_dim(t, self.dim)
        size = t.shape[self.dim]
        _check_amount(self.amount, size)
        k = _nparams(self.amount, size)
        if k == 0:
            return default_mask
        prob = _arr(rand(size))
        keep = np.sort(np.argsort(prob, kind="stable")[k:])
        return _channel_mask(t, keep, self.dim, default_mask)

    @classmethod
    def apply(cls, module: Any, name: str, amount: float,  # type: ignore[override]
              dim: int = -1) -> BasePruningMethod:
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Zeroes the ``amount`` channels along ``dim`` of smallest L-``n`` norm
    (``n`` as ``torch.norm``'s ``p``: a number, ``inf``, ``-inf``, ``"fro"``,
    ``"nuc"`` is not supported)."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: float, n: Any, dim: int = -1) -> None:
        _check_amount_init(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t: Any, default_mask: Any) -> Any:
        _check_dim(t, self.dim)
        a = _arr(t)
        size = a.shape[self.dim]
        _check_amount(self.amount, size)
        k = _nparams(self.amount, size)
        if k == 0:
            return default_mask
        dim = self.dim % a.ndim
        rows = np.moveaxis(a, dim, 0).reshape(size, -1)
        norms = np.linalg.norm(rows, ord=2 if self.n == "fro" else self.n, axis=1)
        keep = np.sort(np.argsort(-norms, kind="stable")[:size - k])
        return _channel_mask(a, keep, dim, default_mask)

    @classmethod
    def apply(cls, module: Any, name: str, amount: float, n: Any,  # type: ignore[override]
              dim: int, importance_scores: Any = None) -> BasePruningMethod:
        return super().apply(module, name, amount=amount, n=n, dim=dim,
                             importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Multiplies the current mask by a given one."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Any) -> None:
        self.mask = mask

    def compute_mask(self, t: Any, default_mask: Any) -> Any:
        d = _arr(default_mask)
        if d.shape != tuple(self.mask.shape):
            raise AssertionError("the mask and the parameter differ in shape: "
                                 f"{tuple(self.mask.shape)} vs {d.shape}")
        return from_numpy(d * _arr(self.mask).astype(d.dtype))

    @classmethod
    def apply(cls, module: Any, name: str, mask: Any) -> BasePruningMethod:  # type: ignore[override]
        return super().apply(module, name, mask=mask)


def identity(module: Any, name: str) -> Any:
    """Reparametrise ``module.name`` with an all-ones mask; returns the module."""
    Identity.apply(module, name)
    return module


def random_unstructured(module: Any, name: str, amount: float) -> Any:
    """Prune ``amount`` random entries of ``module.name``; returns the module."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module: Any, name: str, amount: float,
                    importance_scores: Any = None) -> Any:
    """Prune the ``amount`` entries of ``module.name`` with the smallest
    ``|importance_scores|`` (default: the parameter); returns the module."""
    L1Unstructured.apply(module, name, amount=amount,
                         importance_scores=importance_scores)
    return module


def random_structured(module: Any, name: str, amount: float, dim: int) -> Any:
    """Prune ``amount`` random channels of ``module.name`` along ``dim``."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module: Any, name: str, amount: float, n: Any, dim: int,
                  importance_scores: Any = None) -> Any:
    """Prune the ``amount`` channels along ``dim`` of smallest L-``n`` norm."""
    LnStructured.apply(module, name, amount, n, dim,
                       importance_scores=importance_scores)
    return module


def custom_from_mask(module: Any, name: str, mask: Any) -> Any:
    """Prune ``module.name`` where ``mask`` is 0; returns the module."""
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters: Iterable[tuple[Any, str]], pruning_method: Any,
                        importance_scores: dict[tuple[Any, str], Any] | None = None,
                        **kwargs: Any) -> None:
    """Prune the ``(module, name)`` pairs together: ``pruning_method``
    (an unstructured method class, e.g. ``L1Unstructured``, with ``kwargs``
    such as ``amount``) chooses among all their (still unpruned) entries at
    once."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = importance_scores or {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    scores, masks = [], []
    for module, name in parameters:
        s = importance_scores.get((module, name), getattr(module, name))
        scores.append(_arr(s).reshape(-1))
        m = getattr(module, name + "_mask", None)
        masks.append(np.ones(scores[-1].shape) if m is None else _arr(m).reshape(-1))
    flat_scores = from_numpy(np.concatenate(scores))
    flat_mask = from_numpy(np.concatenate(masks).astype(np.float64))
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the '
                        f"`pruning_method`. Found method {pruning_method} of type "
                        f"{method.PRUNING_TYPE}")
    container = PruningContainer(method)
    container._tensor_name = "temp"
    new_mask = _arr(container.compute_mask(flat_scores, flat_mask))
    start = 0
    for (module, name), s in zip(parameters, scores):
        part = new_mask[start:start + s.size].reshape(tuple(getattr(module, name).shape))
        start += s.size
        custom_from_mask(module, name, mask=from_numpy(np.ascontiguousarray(part)))


def remove(module: Any, name: str) -> Any:
    """Make the pruning of ``module.name`` permanent; returns the module."""
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before "
                     "pruning can be removed")


def is_pruned(module: Any) -> bool:
    """Whether any submodule of ``module`` has a pruning hook."""
    for _, sub in module.named_modules():
        for hook in sub._forward_pre_hooks.values():
            if isinstance(hook, BasePruningMethod):
                return True
    return False

