"""``skip_init``: build a module without spending its initialisation, as
``torch.nn.utils.skip_init``.

torch builds the module on its ``meta`` device and allocates uninitialised
storage.  cygrad has no meta device: it builds the module as usual and then
restores the default generator, so that, as in torch, the call draws no
random numbers (the parameters' values are unspecified either way)."""

import inspect

from cygrad import random as _random

from ..module import Module

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """``module_cls(*args, **kwargs)`` with its parameter initialisation
    skipped; ``module_cls`` must take a ``device`` argument."""
    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    state = _random.get_rng_state()
    try:
        return module_cls(*args, **kwargs)
    finally:
        _random.set_rng_state(state)
