"""``torch.nn.utils.stateless``: run a module with some of its parameters and
buffers replaced for one call (``functional_call``, deprecated in torch for
``torch.func.functional_call``).

The substitution is ``_reparametrize_module``, a context manager that the
functional API (``cygrad.func``) can import: it writes the given tensors
straight into the owning modules' ``_parameters``/``_buffers`` tables (so a
plain Tensor may stand in for a Parameter, as torch allows here), and on
exit puts the originals back, also when the body raises, after copying
into the caller's dict whatever the module left in the swapped slots (a
buffer rebound during the call, as torch does).  Names not registered as a
parameter or buffer become plain attributes for the call.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Any

__all__ = ["functional_call"]

_MISSING = object()


def _tied_groups(module: Any) -> dict[str, list[str]]:
    """{name: every name of the same tensor} for tensors held under several
    names (tied weights)."""
    by_tensor: dict[int, list[str]] = {}
    for getter in (module.named_parameters, module.named_buffers):
        for name, t in getter(remove_duplicate=False):
            by_tensor.setdefault(id(t), []).append(name)
    return {n: g for g in by_tensor.values() if len(g) > 1 for n in g}


def _untie(module: Any, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with a value given for one name of a tied tensor copied to
    all its names (one value per tied tensor, or a ValueError)."""
    groups = _tied_groups(module)
    out = dict(values)
    for name in [n for n in values if n in groups]:
        given = [n for n in groups[name] if n in values]
        if len({id(values[n]) for n in given}) > 1:
            raise ValueError(
                f"functional_call got multiple values for keys {sorted(groups[name])}"
                ", which are tied. Consider using tie_weights=False")
        for n in groups[name]:
            out[n] = values[name]
    return out


def _check_keys(module: Any, values: dict[str, Any]) -> None:
    names = [n for n, _ in module.named_parameters(remove_duplicate=False)]
    names += [n for n, _ in module.named_buffers(remove_duplicate=False)]
    unexpected = [k for k in values if k not in names]
    missing = [n for n in names if n not in values]
    msgs = []
    if unexpected:
        msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
    if missing:
        msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
    if msgs:
        raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}:"
                           "\n\t" + "\n\t".join(msgs))


def _slot(module: Any, name: str) -> tuple[dict[str, Any], str]:
    """The table (``_parameters``, ``_buffers`` or ``__dict__``) and key that
    hold the dotted ``name``."""
    *path, attr = name.split(".")
    owner = module
    for part in path:
        owner = getattr(owner, part)
    for table in ("_parameters", "_buffers"):
        entries = owner.__dict__.get(table)
        if entries is not None and attr in entries:
            return entries, attr
    return owner.__dict__, attr


@contextlib.contextmanager
def _reparametrize_module(module: Any, parameters_and_buffers: dict[str, Any],
                          tie_weights: bool = False, strict: bool = False,
                          stack_weights: bool = False) -> Iterator[None]:
    """Inside the block, ``module``'s parameters and buffers named in
    ``parameters_and_buffers`` are the given tensors (see module doc);
    ``stack_weights`` restores in reverse order (torch's flag)."""
    values = (_untie(module, parameters_and_buffers) if tie_weights
              else dict(parameters_and_buffers))
    if strict:
        _check_keys(module, values)
    undo = []
    try:
        for name, value in values.items():
            table, key = _slot(module, name)
            undo.append((name, table, key, table.get(key, _MISSING)))
            table[key] = value
        yield
    finally:
        now = {}
        for name, table, key, old in reversed(undo):
            now[name] = table.get(key)
            if old is _MISSING:
                table.pop(key, None)
            else:
                table[key] = old
        parameters_and_buffers.update(
            {k: now[k] for k in parameters_and_buffers if k in now})


def functional_call(module: Any, parameters_and_buffers: dict[str, Any],
                    args: Any = None, kwargs: dict[str, Any] | None = None, *,
                    tie_weights: bool = True, strict: bool = False) -> Any:
    """``module(*args, **kwargs)`` with the named parameters and buffers
    replaced by ``parameters_and_buffers`` for the call (deprecated: warns
    torch's FutureWarning).

    Parameters
    ----------
    module : cygrad.nn.Module
    parameters_and_buffers : dict
        ``{dotted name: Tensor}``.
    args : tuple or one value, optional
    kwargs : dict, optional
    tie_weights : bool
        A value given for one name of tied weights is used for all of them.
    strict : bool
        The names must be exactly the module's parameters and buffers.

    Returns
    -------
    What the module returns; the module itself is unchanged afterwards.
    """
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of "
                  "PyTorch 2.0 and will be removed in a future version of PyTorch. "
                  "Please use `torch.func.functional_call` instead which is a "
                  "drop-in replacement.", FutureWarning, stacklevel=2)
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize_module(module, parameters_and_buffers, tie_weights=tie_weights,
                               strict=strict):
        return module(*args, **kwargs)
