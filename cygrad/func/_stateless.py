"""Modules as functions of their state: ``functional_call`` runs a module
with some of its parameters and buffers replaced for one call, and
``stack_module_state`` stacks the state of equal models (for ``vmap`` over
an ensemble).

``functional_call`` swaps the given tensors into the modules' parameter and
buffer tables, calls the module and puts the originals back (also when the
call raises).  It reads only ``named_parameters``/``named_buffers`` and the
tables, so any ``cygrad.nn.Module`` works.
"""

from __future__ import annotations

import contextlib
from typing import Any

from cygrad._kernels.engine import TensorBase
from cygrad.nn.modules.normalization import _BatchNorm
from cygrad.ops.shape import stack

__all__ = ["functional_call", "replace_all_batch_norm_modules_",
           "stack_module_state"]

_MISSING = object()     # an attribute the module did not have before the call


def _merge(dicts):
    if isinstance(dicts, dict):
        return dict(dicts)
    if isinstance(dicts, (tuple, list)):
        if not all(isinstance(d, dict) for d in dicts):
            raise ValueError(f"Expected all elements of parameter_and_buffer_dicts "
                             f"to be dictionaries, got "
                             f"{[type(d) for d in dicts]}")
        merged = {}
        seen = {}
        for d in dicts:
            for k, v in d.items():
                seen[k] = seen.get(k, 0) + 1
                merged[k] = v
        repeated = [k for k, n in seen.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; "
                             "behavior of functional call is ambiguous")
        return merged
    raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a "
                     f"list/tuple of dicts, but got {type(dicts)}")


def _state_names(module):
    """Every name of a parameter or buffer (tied ones under each name) and the
    groups of names that share one tensor."""
    names, groups = [], {}
    for getter in (module.named_parameters, module.named_buffers):
        for name, t in getter(remove_duplicate=False):
            names.append(name)
            groups.setdefault(id(t), []).append(name)
    return names, [g for g in groups.values() if len(g) > 1]


def _tie(values, groups):
    """Give every name of a tied group the one value passed for the group."""
    for group in groups:
        given = [n for n in group if n in values]
        if not given:
            continue
        if len({id(values[n]) for n in given}) > 1:
            raise ValueError(f"functional_call got multiple values for keys "
                             f"{sorted(given)}, which are tied. Consider using "
                             "tie_weights=False")
        for n in group:
            values[n] = values[given[0]]


def _locate(module, name):
    *path, attr = name.split(".")
    owner = module
    for part in path:
        owner = getattr(owner, part)
    return owner, attr


@contextlib.contextmanager
def _swapped(module, values):
    undo = []
    try:
        for name, value in values.items():
            owner, attr = _locate(module, name)
            for table in ("_parameters", "_buffers"):
                entries = owner.__dict__.get(table)
                if entries is not None and attr in entries:
                    undo.append((entries, attr, entries[attr]))
                    entries[attr] = value
                    break
            else:
                old = owner.__dict__.get(attr, _MISSING)
                undo.append((owner.__dict__, attr, old))
                owner.__dict__[attr] = value
        yield
    finally:
        for entries, attr, old in reversed(undo):
            if old is _MISSING:
                entries.pop(attr, None)
            else:
                entries[attr] = old


def functional_call(module: Any, parameter_and_buffer_dicts: Any, args: Any = None,
                    kwargs: dict[str, Any] | None = None, *, tie_weights: bool = True,
                    strict: bool = False) -> Any:
    """Call ``module`` with some parameters and buffers replaced.

    Parameters
    ----------
    module : cygrad.nn.Module
    parameter_and_buffer_dicts : dict or tuple of dicts
        ``{dotted name: Tensor}``; several dicts are merged (a key in two of
        them is an error).
    args : tuple or single value, optional
        Positional arguments of the call (a non-tuple is one argument).
    kwargs : dict, optional
    tie_weights : bool
        A tensor registered under several names (tied weights) takes the
        value given for any of them.
    strict : bool
        Every parameter and buffer must be given, and nothing else.

    Returns
    -------
    What ``module(*args, **kwargs)`` returns; the module is unchanged
    afterwards.
    """
    values = _merge(parameter_and_buffer_dicts)
    names, groups = _state_names(module)
    if tie_weights:
        _tie(values, groups)
    if strict:
        unexpected = [k for k in values if k not in names]
        missing = [n for n in names if n not in values]
        if unexpected or missing:
            msg = f"Error(s) in reparametrizing for {type(module).__name__}:"
            if unexpected:
                msg += ("\n\tUnexpected key(s): "
                        + ", ".join(repr(k) for k in unexpected) + ".")
            if missing:
                msg += "\n\tMissing key(s): " + ", ".join(repr(k) for k in missing) \
                    + "."
            raise RuntimeError(msg)
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _swapped(module, values):
        return module(*args, **(kwargs or {}))


def stack_module_state(models: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(params, buffers)``: for each name, the models' tensors stacked along a
    new first dimension; the stacked parameters are new leaves that require
    grad as the originals do (the buffers never do).

    The models must be of one class and all in training or all in eval mode.
    """
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the "
                           "same training/eval mode.")
    if len({type(m) for m in models}) > 1:
        raise RuntimeError("stack_module_state: Expected all models to be of the "
                           "same class.")

    def stacked(getter, leaf):
        tables = [dict(getattr(m, getter)()) for m in models]
        out = {}
        for name, first in tables[0].items():
            t = stack([tab[name] for tab in tables]).detach()
            if leaf and isinstance(first, TensorBase) and first._requires_grad:
                t.requires_grad_(True)
            out[name] = t
        return out

    return stacked("named_parameters", True), stacked("named_buffers", False)


def replace_all_batch_norm_modules_(root: Any) -> Any:
    """Make every batch norm in ``root`` normalize by its batch's statistics
    always: running statistics None and ``track_running_stats`` False (what
    ``vmap`` over a model with batch norms needs).  In place; returns
    ``root``."""
    for module in root.modules():
        if isinstance(module, _BatchNorm):
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root
