"""torch's legacy ``nn.utils.weight_norm``: parameters ``<name>_g`` and
``<name>_v``, and a forward pre-hook that sets ``module.<name> = g * v /
||v||`` before each call (deprecated in torch in favour of
``parametrizations.weight_norm``, with its warning)."""

import warnings

from ..parameter import Parameter
from .parametrizations import _norm_except_dim

__all__ = ["remove_weight_norm", "weight_norm"]


class WeightNorm:
    """The pre-hook: recomputes the weight from g and v."""

    def __init__(self, name, dim):
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return v * (g / _norm_except_dim(v, None if self.dim == -1 else self.dim))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """Split ``module.<name>`` into magnitude ``<name>_g`` and direction
    ``<name>_v``; returns the module."""
    warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                  "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning,
                  stacklevel=2)
    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, WeightNorm) and hook.name == name:
            raise RuntimeError(f"Cannot register two weight_norm hooks on the same "
                               f"parameter {name}")
    fn = WeightNorm(name, dim)
    weight = getattr(module, name)
    g = _norm_except_dim(weight.detach(), None if fn.dim == -1 else fn.dim)
    del module._parameters[name]
    module.register_parameter(name + "_g", Parameter(g.detach().clone()))
    module.register_parameter(name + "_v", Parameter(weight.detach()))
    setattr(module, name, fn.compute_weight(module))
    module.register_forward_pre_hook(fn)
    return module


def remove_weight_norm(module, name="weight"):
    """Fold g and v back into one parameter ``<name>``."""
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, WeightNorm) and hook.name == name:
            weight = hook.compute_weight(module).detach()
            del module._forward_pre_hooks[k]
            module._refresh_hooked()
            del module._parameters[name + "_g"]
            del module._parameters[name + "_v"]
            module.__dict__.pop(name, None)
            module.register_parameter(name, Parameter(weight.clone()))
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
