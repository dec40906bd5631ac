"""Parameters as one flat vector and back, as torch's
``parameters_to_vector`` / ``vector_to_parameters``."""

from cygrad import ops
from cygrad._tensor import Tensor
from cygrad.autograd.grad_mode import no_grad

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters):
    """One 1-D tensor of every parameter's values, in order (differentiable,
    as torch's ``cat`` of views)."""
    return ops.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Copy consecutive slices of the 1-D ``vec`` into the parameters' data."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    offset = 0
    with no_grad():
        for p in parameters:
            n = p.numel()
            # a view of vec, as torch (the parameters share its memory)
            p.data = vec[offset:offset + n].reshape(tuple(p.shape)).detach()
            offset += n
