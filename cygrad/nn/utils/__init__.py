"""``cygrad.nn.utils``: gradient clipping, parameter vectors, weight and
spectral normalisation (the parametrizations and torch's legacy hooks),
``parametrize``, and ``rnn`` (packed sequences)."""

from . import parametrizations, parametrize, rnn
from .clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm

__all__ = [
    "clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_",
    "get_total_norm", "parameters_to_vector", "parametrizations", "parametrize", "rnn",
    "remove_spectral_norm", "remove_weight_norm", "spectral_norm",
    "vector_to_parameters", "weight_norm",
]
from .fusion import (  # noqa: E402
    fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from .init import skip_init  # noqa: E402
from . import fusion, init  # noqa: E402

__all__ += fusion.__all__ + ["skip_init"]
from . import prune, stateless  # noqa: E402  (torch's submodules of nn.utils)

__all__ += ["prune", "stateless"]
from .memory_format import (  # noqa: E402
    convert_conv2d_weight_memory_format, convert_conv3d_weight_memory_format,
)

__all__ += ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]
