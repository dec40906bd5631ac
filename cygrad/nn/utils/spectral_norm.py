"""torch's legacy ``nn.utils.spectral_norm``: parameter ``<name>_orig``,
buffers ``<name>_u`` / ``<name>_v``, and a forward pre-hook that sets
``module.<name> = <name>_orig / sigma`` (one power-iteration step per
training-mode call)."""

from cygrad import ops
from cygrad.autograd.grad_mode import no_grad
from cygrad.creation import randn

from .._functional_loss import normalize
from ..modules.conv import ConvTranspose1d, ConvTranspose2d
from ..parameter import Parameter

__all__ = ["remove_spectral_norm", "spectral_norm"]


class SpectralNorm:
    """The pre-hook: recomputes the normalised weight."""

    def __init__(self, name, n_power_iterations, dim, eps):
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name = name
        self.n_power_iterations = n_power_iterations
        self.dim = dim
        self.eps = eps

    def matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *[d for d in range(weight.ndim)
                                                if d != self.dim])
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module, do_power_iteration):
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        mat = self.matrix(weight)
        if do_power_iteration:
            with no_grad():
                m = mat.detach()
                for _ in range(self.n_power_iterations):
                    v.copy_(normalize(ops.matmul(m.t(), u), dim=0, eps=self.eps))
                    u.copy_(normalize(ops.matmul(m, v), dim=0, eps=self.eps))
                u = u.clone()
                v = v.clone()
        sigma = (u * ops.matmul(mat, v)).sum()
        return weight / sigma

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, module.training))


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Divide ``module.<name>`` by its spectral norm before every call."""
    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, SpectralNorm) and hook.name == name:
            raise RuntimeError(f"Cannot register two spectral_norm hooks on the same "
                               f"parameter {name}")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d)) else 0
    fn = SpectralNorm(name, n_power_iterations, dim, eps)
    weight = module._parameters[name]
    h, w = fn.matrix(weight).shape
    dt = weight.dtype
    u = normalize(randn(h, dtype=dt), dim=0, eps=eps)
    v = normalize(randn(w, dtype=dt), dim=0, eps=eps)
    del module._parameters[name]
    module.register_parameter(name + "_orig", weight)
    setattr(module, name, weight.detach())
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    module.register_forward_pre_hook(fn)
    return module


def remove_spectral_norm(module, name="weight"):
    """Fold the normalisation back into one parameter ``<name>``."""
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, SpectralNorm) and hook.name == name:
            weight = hook.compute_weight(module, False).detach()
            del module._forward_pre_hooks[k]
            module._refresh_hooked()
            del module._parameters[name + "_orig"]
            del module._buffers[name + "_u"]
            del module._buffers[name + "_v"]
            module.__dict__.pop(name, None)
            module.register_parameter(name, Parameter(weight.clone()))
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
