"""The ``Optimizer`` base class: parameter groups, state, and its (de)serialisation.

Subclasses implement ``_validate(group)`` (raise ``ValueError`` on a bad
hyperparameter) and ``_update(group, items)`` (one step over the group's
parameters that have gradients, ``items`` = ``(param, flat param, flat
grad)``, all checked by ``param_arrays`` before any group is updated; called
under ``no_grad``).  The arithmetic lives in ``cygrad._kernels.optim``:
one compiled, in-place pass per parameter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import copy
import warnings
from collections import defaultdict

import numpy as np

from cygrad.autograd import diagnostics as _diagnostics
from cygrad.autograd.grad_mode import enable_grad, no_grad
from cygrad.creation import from_numpy, get_default_dtype
from cygrad._tensor import Tensor

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from cygrad._typing import Hook, Params

__all__ = [
    "Optimizer",
    "register_optimizer_step_post_hook",
    "register_optimizer_step_pre_hook",
    "required",
]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.float16))
_F16 = np.dtype(np.float16)


class _RequiredParameter:
    """Marks a default that every parameter group must set itself."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def check_torch_only_options(capturable=False, differentiable=False):
    """torch options that make no sense here: accepted when off, refused when on."""
    if capturable:
        raise NotImplementedError(
            "capturable=True is for CUDA graphs; cygrad runs on the CPU only"
        )
    if differentiable:
        raise NotImplementedError(
            "differentiable=True is not supported: cygrad's updates run in place "
            "under no_grad"
        )


def _check_param_layout(p):
    """Refuse what the kernels cannot update in place: raise, never crash."""
    arr = p._arr
    if arr.dtype not in _FLOATS:
        raise TypeError(
            "cygrad.optim can only update float32 or float64 (or float16) "
            f"parameters, but got a parameter of dtype {arr.dtype}"
        )
    if not arr.flags.c_contiguous or not arr.flags.writeable:
        raise ValueError(
            "cygrad.optim updates parameters in place and needs them C-contiguous "
            f"and writeable; got a parameter of shape {tuple(arr.shape)} that is "
            "not (make it with .clone() or a creation function)"
        )


_PHRASES = {"lr": "Invalid learning rate", "eps": "Invalid epsilon value"}


def check_nonnegative(group, *keys):
    """torch's ``ValueError`` for a hyperparameter below 0 (or NaN), in the
    order of ``keys``: "Invalid learning rate: ...", "Invalid epsilon value:
    ...", "Invalid <key> value: ..."."""
    for key in keys:
        if not 0.0 <= group[key]:
            phrase = _PHRASES.get(key, f"Invalid {key} value")
            raise ValueError(f"{phrase}: {group[key]}")


def check_betas(betas):
    """torch's checks of Adam-style ``betas``: two values in ``[0, 1)``."""
    if len(betas) != 2:
        raise ValueError(f"Invalid betas: expected two values, got {betas!r}")
    for i, beta in enumerate(betas):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {beta}")


def param_arrays(p):
    """``(p, flat param, flat grad)`` for a parameter that has a gradient.

    Checks the layout first, so no kernel ever sees an array it cannot handle.
    A non-contiguous gradient is copied (it is only read).
    """
    _check_param_layout(p)
    arr = p._arr
    grad = p.grad._arr
    if grad.dtype != arr.dtype:
        raise TypeError(
            f"a parameter of dtype {arr.dtype} has a gradient of dtype {grad.dtype}; "
            "cygrad.optim needs them equal"
        )
    if grad.shape != arr.shape:
        raise RuntimeError(
            f"a parameter of shape {tuple(arr.shape)} has a gradient of shape "
            f"{tuple(grad.shape)}"
        )
    if not grad.flags.c_contiguous:
        grad = np.ascontiguousarray(grad)
    return p, arr.ravel(), grad.ravel()


def flat_state(t):
    """The flat view of a state tensor that a kernel updates in place.

    Refuses a non-contiguous array (``ravel`` would hand the kernel a copy and
    the update would be lost) instead of silently dropping the update.
    """
    arr = t._arr
    if not arr.flags.c_contiguous:
        raise ValueError(
            "optimizer state must be C-contiguous arrays; got one of shape "
            f"{tuple(arr.shape)} that is not"
        )
    return arr.ravel()


def zeros_state(p, fill=0.0):
    """A state buffer: a new C-contiguous tensor shaped and typed like ``p``."""
    return from_numpy(np.full(p._arr.shape, fill, dtype=p._arr.dtype))


def _scalar_dtype():
    return np.float64 if get_default_dtype() == np.float64 else np.float32


def round_to_default(value):
    """``value`` rounded to the default dtype, as ``torch.as_tensor(value)``."""
    return float(_scalar_dtype()(value))


def step_state(value=0.0):
    """torch's ``step`` (and other scalar state: NAdam's ``mu_product``, ASGD's
    ``eta`` and ``mu``): a 0-d float tensor in the default dtype (float32
    unless the default is float64), holding ``value`` rounded to it."""
    return from_numpy(np.array(value, dtype=_scalar_dtype()))


def advance_step(step_t):
    """``step += 1`` in place; returns the new count as a Python float."""
    arr = step_t._arr
    step = float(arr) + 1  # exact: counts stay far below 2**24
    arr[()] = step
    step_t._bump_version()
    return step


def set_scalar_state(t, value):
    """Store ``value`` in a 0-d state tensor (rounded to its dtype), in place;
    returns the stored value as a Python float (what torch's ``.item()`` reads)."""
    arr = t._arr
    arr[()] = value
    t._bump_version()
    return float(arr)


def _copy_value(value, dtype=None):
    """Deep copy of a state value; floating tensors cast to ``dtype`` if given."""
    if isinstance(value, Tensor):
        arr = value._arr
        if dtype is None or arr.dtype.kind != "f":
            dtype = arr.dtype
        return from_numpy(np.array(arr, dtype=dtype, order="C", copy=True))
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, dict):
        return {k: _copy_value(v, dtype) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_copy_value(v, dtype) for v in value)
    return copy.deepcopy(value)


_global_step_pre_hooks = {}
_global_step_post_hooks = {}


class _RemovableHandle:
    """What the ``register_*_hook`` methods return: ``remove()`` takes the hook
    out again (also as a context manager)."""

    _next_id = 0

    def __init__(self, hooks):
        self._hooks = hooks
        self.id = _RemovableHandle._next_id
        _RemovableHandle._next_id += 1

    def remove(self):
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _add_hook(hooks, hook):
    handle = _RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle


def register_optimizer_step_pre_hook(hook: Hook) -> Any:
    """A pre-hook of every optimizer's ``step``: ``hook(optimizer, args, kwargs)``
    (``args`` starts with the optimizer, as torch's) returns None or
    ``(new_args, new_kwargs)``; runs before per-optimizer hooks."""
    return _add_hook(_global_step_pre_hooks, hook)


def register_optimizer_step_post_hook(hook: Hook) -> Any:
    """A post-hook of every optimizer's ``step``: ``hook(optimizer, args, kwargs)``."""
    return _add_hook(_global_step_post_hooks, hook)


def _with_step_hooks(step):
    """``step`` wrapped so that the step hooks run around the outermost call."""

    def wrapper(self, *args, **kwargs):
        d = self.__dict__
        if d.get("_in_step"):
            return step(self, *args, **kwargs)  # a subclass calling super().step
        if not (_global_step_pre_hooks or _global_step_post_hooks
                or d.get("_step_pre_hooks") or d.get("_step_post_hooks")):
            # No hook anywhere (the training loop's case): no lists to build.
            d["_in_step"] = True
            try:
                return step(self, *args, **kwargs)
            finally:
                d["_in_step"] = False
        args = (self,) + args  # as torch, the hooks see self among the args
        pre = list(_global_step_pre_hooks.values())
        pre += list(self.__dict__.get("_step_pre_hooks", {}).values())
        for hook in pre:
            result = hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(
                        f"{hook} must return None or a tuple of (new_args, "
                        f"new_kwargs), but got {result}."
                    )
                args, kwargs = result
        self._in_step = True
        try:
            out = step(*args, **kwargs)
        finally:
            self._in_step = False
        post = list(self.__dict__.get("_step_post_hooks", {}).values())
        post += list(_global_step_post_hooks.values())
        for hook in post:
            hook(self, args, kwargs)
        return out

    wrapper.__name__ = step.__name__
    wrapper.__qualname__ = step.__qualname__
    wrapper.__doc__ = step.__doc__
    wrapper.__wrapped__ = step
    return wrapper


class Optimizer:
    """Base class of all optimizers (torch's ``torch.optim.Optimizer``).

    Parameters
    ----------
    params : iterable of Tensor, of (name, Tensor) or of dict
        The tensors to optimise (``model.parameters()``; the names of
        ``model.named_parameters()`` are kept in the group's ``param_names``),
        or parameter groups: dicts with a ``"params"`` entry and any options
        that override ``defaults`` for that group.
    defaults : dict
        Default options of every group.

    Attributes
    ----------
    param_groups : list of dict
        Each group's ``"params"`` (a list of tensors) and options.
    state : defaultdict
        Per-parameter state (dicts of tensors with torch's keys), keyed by
        the parameter tensor.  Created at a parameter's first step.
    defaults : dict
    """

    # state keys that hold a 0-d tensor whatever the parameter's shape
    _scalar_keys = ()

    def _state_shape(self, key, shape):
        """The shape a loaded state tensor ``key`` must have for a parameter of
        ``shape``: 0-d for the ``_scalar_keys``, the parameter's otherwise."""
        return () if key in self._scalar_keys else shape

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not hasattr(step, "__wrapped__"):
            cls.step = _with_step_hooks(step)

    # ----------------------------------------------------------------- hooks

    def register_step_pre_hook(self, hook: Hook) -> Any:
        """``hook(optimizer, args, kwargs)`` before each ``step``; it may return
        ``(new_args, new_kwargs)``.  Returns a handle with ``remove()``."""
        return _add_hook(self.__dict__.setdefault("_step_pre_hooks", {}), hook)

    def register_step_post_hook(self, hook: Hook) -> Any:
        """``hook(optimizer, args, kwargs)`` after each ``step``.  Returns a
        handle with ``remove()``."""
        return _add_hook(self.__dict__.setdefault("_step_post_hooks", {}), hook)

    def __init__(self, params: Params, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self.state = defaultdict(dict)
        self.param_groups = []
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of "
                f"Tensors or dicts, but got {type(params).__name__}"
            )
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    # ------------------------------------------------------------------ groups

    def _validate(self, group):
        """Raise ``ValueError`` naming a bad hyperparameter of ``group``."""

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters, with options defaulting to ``defaults``.

        Raises
        ------
        TypeError
            If the group is not a dict, its params are a set or not tensors.
        ValueError
            On a non-leaf tensor, a parameter already in another group, a
            missing required option or an invalid hyperparameter.
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, (set, frozenset)):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but "
                "the ordering of tensors in sets will change between runs. Please use "
                "a list instead."
            )
        else:
            params = list(params)
        names = None
        named = [isinstance(p, tuple) for p in params]
        if any(named):  # model.named_parameters(): (name, tensor) pairs, as torch
            if not all(named):
                raise ValueError(
                    "all optimizer params should be with/without names. Some param "
                    "names are missing"
                )
            names = [name for name, _ in params]
            params = [p for _, p in params]
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(
                    "optimizer can only optimize Tensors, but one of the params is "
                    f"{type(p).__name__}"
                )
            if not (p.is_leaf or getattr(p, "retains_grad", False)):
                raise ValueError("can't optimize a non-leaf Tensor")
            _check_param_layout(p)
        group = dict(param_group)
        group["params"] = params
        if names is not None:
            group["param_names"] = names
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(
                    "parameter group didn't specify a value of required optimization "
                    f"parameter {name}"
                )
            group.setdefault(name, default)
        self._validate(group)
        if len({id(p) for p in params}) != len(params):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; "
                "in future, this will cause an error",
                UserWarning,
                stacklevel=3,
            )
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    # -------------------------------------------------------------- stepping

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's gradient: to ``None`` (default) or to zeros."""
        _diagnostics.optimizer_zero_grad(self)
        for group in self.param_groups:
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                    continue
                if grad.grad_fn is not None:
                    grad = grad.detach()
                    p.grad = grad
                grad._arr[...] = 0
                grad._bump_version()

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient.

        Parameters
        ----------
        closure : callable, optional
            Re-evaluates the model and returns the loss; called with grad
            mode on, before the update.

        Returns
        -------
        The closure's loss, or None.
        """
        _diagnostics.optimizer_step(self)
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            # every parameter with a gradient is checked before any is
            # updated, so a bad one raises with nothing changed
            prepared = [
                (group, [param_arrays(p) for p in group["params"]
                         if p.grad is not None])
                for group in self.param_groups
            ]
            for group, items in prepared:
                if any(arr.dtype == _F16 for _, arr, _ in items):
                    self._update_half(group, items)
                else:
                    self._update(group, items)
        return loss

    def _update_half(self, group, items):
        """``_update`` with float16 parameters, as torch's CPU float16: the
        kernels run in float32 on float32 copies of each float16 parameter,
        gradient and state buffer, rounded back to float16 after the step
        (the state stays float16, as torch keeps it in the parameter's dtype).
        """
        swapped, work, halves = [], [], []
        for p, arr, grad in items:
            if arr.dtype != _F16:
                work.append((p, arr, grad))
                continue
            halves.append(p)
            for t in self.state.get(p, {}).values():
                if isinstance(t, Tensor) and t._arr.dtype == _F16:
                    swapped.append((t, t._arr))
                    t._arr = t._arr.astype(np.float32)
            swapped.append((p, p._arr))
            p._arr = p._arr.astype(np.float32)
            work.append((p, p._arr.ravel(), grad.astype(np.float32)))
        try:
            self._update(group, work)
        finally:
            done = {id(t) for t, _ in swapped}
            for t, a16 in swapped:
                np.copyto(a16, t._arr, casting="unsafe")
                t._arr = a16
            for p in halves:        # buffers this step created, from the copy
                for key, t in self.state.get(p, {}).items():
                    if (key != "step" and isinstance(t, Tensor) and id(t) not in done
                            and t._arr.dtype == np.float32):
                        t._arr = t._arr.astype(_F16)

    def _update(self, group, items):
        """One step over ``items``: ``(param, flat param, flat grad)`` for each
        parameter of ``group`` that has a gradient, already checked."""
        raise NotImplementedError

    # ----------------------------------------------------------- state dicts

    def state_dict(self) -> dict[str, Any]:
        """A deep copy of the state: ``{"state": {index: {...}}, "param_groups":
        [{..., "params": [indices]}]}``, parameters numbered in order across groups.
        """
        index = {}
        groups = []
        for group in self.param_groups:
            packed = {k: _copy_value(v) for k, v in group.items() if k != "params"}
            ids = []
            for p in group["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            packed["params"] = ids
            groups.append(packed)
        state = {
            index[id(p)]: _copy_value(s)
            for p, s in self.state.items()
            if id(p) in index
        }
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Load a state made by :meth:`state_dict` (deep-copied, validated).

        Groups are matched by order and must have the same sizes; floating
        state tensors are cast to their parameter's dtype (``step`` is kept).
        On any error nothing is changed.

        Raises
        ------
        ValueError
            On a different number of groups, a group of another size, state
            for a parameter index that does not exist, a state tensor whose
            shape is not its parameter's, or an invalid hyperparameter.
        """
        if not isinstance(state_dict, dict) or not {"state", "param_groups"} <= set(
            state_dict
        ):
            raise ValueError(
                "loaded state dict must be a dict with 'state' and 'param_groups'"
            )
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(
                "loaded state dict has a different number of parameter groups"
            )
        for group, saved in zip(self.param_groups, saved_groups):
            if len(group["params"]) != len(saved["params"]):
                raise ValueError(
                    "loaded state dict contains a parameter group that doesn't match "
                    "the size of optimizer's group"
                )
        by_index = {}
        for group, saved in zip(self.param_groups, saved_groups):
            for i, p in zip(saved["params"], group["params"]):
                by_index[i] = p

        state = defaultdict(dict)
        for i, value in state_dict["state"].items():
            if i not in by_index:
                raise ValueError(
                    f"loaded state dict has state for parameter {i!r}, which is not "
                    "in any of its parameter groups"
                )
            p = by_index[i]
            entry = {}
            for key, v in value.items():
                if key == "step":
                    entry[key] = _copy_value(v)
                    continue
                # 0-d scalar state (NAdam's mu_product, ASGD's eta, mu) is cast
                # to the parameter's dtype like the rest, as torch casts it
                want = self._state_shape(key, tuple(p.shape))
                if isinstance(v, Tensor) and tuple(v.shape) != want:
                    raise ValueError(
                        f"loaded state dict has a state {key!r} of shape "
                        f"{tuple(v.shape)} for a parameter of shape {tuple(p.shape)}"
                        + (" (it must be 0-d)" if want == () else "")
                    )
                # Unlike torch, refuse what step() would choke on later with an
                # unrelated error; an integer or bool tensor is cast (as torch).
                if not isinstance(v, (Tensor, int, float)):
                    raise ValueError(
                        f"loaded state dict has a state {key!r} of type "
                        f"{type(v).__name__} for parameter {i!r}; expected a Tensor"
                    )
                if isinstance(v, Tensor) and v._arr.dtype.kind in "biu":
                    v = v.to(p._arr.dtype)
                entry[key] = _copy_value(v, p._arr.dtype)
            state[p] = entry

        groups = []
        for group, saved in zip(self.param_groups, saved_groups):
            new = {k: _copy_value(v) for k, v in saved.items() if k != "params"}
            new["params"] = group["params"]
            for name, default in self.defaults.items():
                new.setdefault(name, group.get(name, default))
            self._validate(new)
            groups.append(new)

        self.state = state
        self.param_groups = groups

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            if i:
                lines.append("")        # torch separates the groups by a blank line
            lines.append(f"Parameter Group {i}")
            for key in sorted(k for k in group if k != "params"):
                lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)


Optimizer.step = _with_step_hooks(Optimizer.step)
