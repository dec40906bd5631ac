"""``weight_norm``, ``spectral_norm`` and ``orthogonal`` (``_orthogonal.py``)
as parametrizations, with torch's names: ``parametrizations.weight.original0``
/ ``original1`` (g and v) for weight norm; ``parametrizations.weight.original``
and the power-iteration buffers ``parametrizations.weight.0._u`` / ``_v`` for
spectral norm."""

from cygrad import ops
from cygrad.autograd.grad_mode import no_grad
from cygrad.creation import randn

from .._functional_loss import normalize
from ..module import Module
from ..modules.conv import ConvTranspose1d, ConvTranspose2d
from ._orthogonal import orthogonal
from .parametrize import register_parametrization

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def _norm_except_dim(v, dim):
    """The 2-norm over every dim but ``dim`` (keepdim); ``dim=None``: all."""
    if dim is None or dim == -1 and v.ndim == 0:
        return ops.sqrt((v * v).sum())
    dims = tuple(d for d in range(v.ndim) if d != dim % v.ndim)
    if not dims:
        return ops.abs(v)
    return ops.sqrt((v * v).sum(dim=dims, keepdim=True))


class _WeightNorm(Module):
    """``weight = g * v / ||v||`` (the norm over all dims but ``dim``)."""

    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        dim = None if self.dim == -1 else self.dim
        return weight_v * (weight_g / _norm_except_dim(weight_v, dim))

    def right_inverse(self, weight):
        dim = None if self.dim == -1 else self.dim
        return _norm_except_dim(weight, dim).detach(), weight


def weight_norm(module, name="weight", dim=0):
    """Reparametrize ``module.<name>`` as magnitude ``original0`` (g) times
    direction ``original1`` (v); returns the module."""
    register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    """``weight / sigma``, sigma the largest singular value of the weight
    (as a matrix with ``dim`` first), estimated by power iteration: one
    step per training-mode call (15 at construction), ``u`` and ``v`` kept
    as buffers."""

    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(
                "Dimension out of range (expected to be in range of "
                f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            mat = self._matrix(weight)
            h, w = mat.shape
            dt = weight.dtype
            self.register_buffer("_u", normalize(randn(h, dtype=dt), dim=0, eps=eps))
            self.register_buffer("_v", normalize(randn(w, dtype=dt), dim=0, eps=eps))
            self._power_method(mat, 15)

    def _matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *[d for d in range(weight.ndim)
                                                if d != self.dim])
        return weight.reshape(weight.shape[0], -1)

    def _power_method(self, mat, n):
        with no_grad():
            m = mat.detach()
            for _ in range(n):
                u = normalize(ops.matmul(m, self._v), dim=0, eps=self.eps)
                self._u.copy_(u)
                v = normalize(ops.matmul(m.t(), self._u), dim=0, eps=self.eps)
                self._v.copy_(v)

    def forward(self, weight):
        if weight.ndim == 1:
            return normalize(weight, dim=0, eps=self.eps)
        mat = self._matrix(weight)
        if self.training:
            self._power_method(mat, self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = (u * ops.matmul(mat, v)).sum()
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12,
                  dim=None):
    """Divide ``module.<name>`` by its spectral norm (power iteration);
    ``dim`` defaults to 1 for transposed convolutions, else 0."""
    weight = getattr(module, name, None)
    if weight is None:
        raise ValueError(f"Module '{module}' has no parameter or buffer with name "
                         f"'{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d)) else 0
    register_parametrization(module, name,
                             _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
