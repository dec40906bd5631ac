"""cygrad: automatic differentiation with PyTorch's API and compiled kernels.

The package imports its layers bottom up (compiled kernels, the autograd
core, tensor and ops, then everything built on them) and connects the
Python layers to the compiled engine in one call, ``engine.install``.
"""
# The imports go bottom up, layer by layer: keep their order.
# isort: skip_file

import os as _os
import typing as _ty

from cygrad._kernels import engine as _engine
from cygrad.dtypes import (  # noqa: F401
    bool, double, float, float16, float32, float64, half, int8, int16, int32, int64,
    long, uint8,
)
from cygrad.dtypes import bfloat16  # noqa: F401  (named, and refused at creation)
from cygrad.dtypes import dtype  # noqa: F401  (the type, for annotations and isinstance)
from cygrad._tensor import Size, Tensor, is_tensor  # noqa: F401
from cygrad._memory_format import (  # noqa: F401
    channels_last, channels_last_3d, contiguous_format, memory_format, preserve_format,
)
from cygrad._device import device, get_default_device, set_default_device  # noqa: F401
from cygrad._legacy import (  # noqa: F401
    BoolTensor, ByteTensor, CharTensor, DoubleTensor, FloatTensor, HalfTensor,
    IntTensor, LongTensor, ShortTensor, set_default_tensor_type,
)
from cygrad import ops as _ops
from cygrad.ops import OPS
from cygrad.creation import (  # noqa: F401
    Generator, arange, as_tensor, default_generator, empty, empty_like, empty_strided,
    eye,
    from_numpy, full, full_like, get_default_dtype, initial_seed, linspace, logspace,
    manual_seed, ones, ones_like, rand, rand_like, randint, randn, randn_like,
    seed, set_default_dtype, tensor, zeros, zeros_like,
)
from cygrad.random import (  # noqa: F401
    bernoulli, get_rng_state, multinomial, normal, poisson, randint_like, randperm,
    set_rng_state,
)
from cygrad import random  # noqa: F401
from cygrad._typeinfo import (  # noqa: F401
    can_cast, finfo, iinfo, is_complex, is_floating_point, is_nonzero, numel,
    promote_types, result_type,
)
from cygrad._printing import get_printoptions, set_printoptions  # noqa: F401
from cygrad._config import (  # noqa: F401
    are_deterministic_algorithms_enabled, get_float32_matmul_precision,
    is_deterministic_algorithms_warn_only_enabled, set_float32_matmul_precision,
    use_deterministic_algorithms,
)
from cygrad import linalg  # noqa: F401
from cygrad import testing  # noqa: F401
from cygrad.autograd.grad_mode import (  # noqa: F401
    enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled,
)
from cygrad.autograd.grad_mode import is_inference_mode_enabled  # noqa: F401
from cygrad.autograd.anomaly import (  # noqa: F401
    is_anomaly_check_nan_enabled, is_anomaly_enabled, set_anomaly_enabled,
)
from cygrad import autograd  # noqa: F401
from cygrad.autograd import backward as _backward, diagnostics as _diagnostics
from cygrad.autograd import functional as _functional  # noqa: F401
from cygrad.autograd import gradcheck as _gradcheck  # noqa: F401
from cygrad import viz  # noqa: F401
from cygrad import nn, optim  # noqa: F401
from cygrad import utils  # noqa: F401
from cygrad import distributed, multiprocessing  # noqa: F401  (no MPI until used)
from cygrad import backends, cpu, cuda  # noqa: F401
from cygrad import distributions  # noqa: F401
from cygrad import func  # noqa: F401
from cygrad.func import vmap  # noqa: F401
from cygrad import accelerator, onnx  # noqa: F401
from cygrad import amp, compiler, hub, jit, profiler, version  # noqa: F401
from cygrad.amp import autocast  # noqa: F401
from cygrad.compiler import compile  # noqa: F401
from cygrad.serialization import load, save  # noqa: F401
from cygrad._threads import get_num_threads, set_num_threads  # noqa: F401
# torch's top-level forms of some nn.functional layers (the same functions;
# torch.adaptive_max_pool1d returns the indices too)
from cygrad.nn.functional import (  # noqa: F401
    adaptive_avg_pool1d, avg_pool1d, conv1d, conv2d, conv3d, conv_transpose1d,
    conv_transpose2d, conv_transpose3d, max_pool1d, max_pool1d_with_indices,
    max_pool2d, max_pool3d,
)
from cygrad.nn.functional import (  # noqa: F401
    adaptive_max_pool1d_with_indices as adaptive_max_pool1d,
)

_engine.install(tensor_cls=Tensor, backward=_backward,
                grad_warning=_diagnostics.grad_warning,
                stale_hint=_diagnostics.stale_hint,
                pkg_dir=_os.path.dirname(_os.path.abspath(__file__)) + _os.sep,
                **_ops.engine_hooks())

# Every op of the registry, and its aliases, as cygrad.<name>.
for _spec in OPS.values():
    _fn = _ops.public(_spec)         # one function for the name and its aliases
    for _name in (_spec.name,) + _spec.aliases:
        globals().setdefault(_name, _fn)
for _name in ("mm", "t", "sum_to_shape", "logical_not"):
    globals().setdefault(_name, getattr(_ops, _name))
del _spec, _name, _fn
if _ty.TYPE_CHECKING:
    # The names the loop above installs, typed for mypy (a stub written by
    # tools/gen_stubs.py from the registry; there is no module to import).
    from cygrad._typed_ops import *  # noqa: F401,F403

from math import e, inf, nan, pi  # noqa: F401  (torch.inf, torch.pi, ...)
from cygrad import functional  # noqa: F401  (torch.functional)
from cygrad import special  # noqa: F401
from cygrad.ops.arrange import broadcast_shapes, unravel_index  # noqa: F401
from cygrad.ops.misc import (  # noqa: F401  (range shadows the builtin here)
    asarray, frombuffer, get_num_interop_threads, is_same_size, range, scalar_tensor,
    set_num_interop_threads, typename,
)
from cygrad.ops.misc import get_device, is_inference, is_signed  # noqa: F401
from cygrad.ops.inplace_functions import functions as _inplace_functions
from cygrad.ops.misc import (  # noqa: F401
    conj, conj_physical, imag, layout, real, resolve_conj, resolve_neg, strided,
)
from cygrad.dtypes import int16 as short, int32 as int  # noqa: F401
from cygrad import storage  # noqa: F401
from cygrad.storage import (  # noqa: F401
    BFloat16Storage, BoolStorage, ByteStorage, CharStorage, DoubleStorage,
    FloatStorage, HalfStorage, IntStorage, LongStorage, ShortStorage, Storage,
    TypedStorage, UntypedStorage,
)
newaxis = None
# torch.exp_(x) and the other function forms of in-place methods (those
# defined above, such as relu_, stay)
for _name, _fn in _inplace_functions().items():
    globals().setdefault(_name, _fn)
del _name, _fn

__version__ = "0.1.0"

# torch.<name> forms of nn.functional operations, with torch's native signatures.
from cygrad.nn._torch_aliases import (  # noqa: F401
    alpha_dropout, alpha_dropout_, batch_norm, bilinear,
    binary_cross_entropy_with_logits, celu, celu_, channel_shuffle, constant_pad_nd,
    cosine_embedding_loss, cosine_similarity, ctc_loss, dropout, dropout_, embedding,
    embedding_bag,
    feature_alpha_dropout, feature_alpha_dropout_, feature_dropout, feature_dropout_,
    group_norm, hinge_embedding_loss, instance_norm, kl_div, layer_norm,
    margin_ranking_loss, native_batch_norm, native_channel_shuffle, native_dropout,
    native_group_norm, native_layer_norm, pairwise_distance, pdist, pixel_shuffle,
    pixel_unshuffle, poisson_nll_loss, relu_, rms_norm, rrelu, rrelu_, selu_,
    threshold, threshold_, triplet_margin_loss,
)
from cygrad.nn._torch_aliases import (  # noqa: F401
    affine_grid_generator, conv_tbc, grid_sampler, grid_sampler_2d, grid_sampler_3d,
)
