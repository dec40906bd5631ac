"""cygrad: automatic differentiation with PyTorch's API and compiled kernels."""

from cygrad.dtypes import (  # noqa: F401
    bool, double, float, float16, float32, float64, half, int8, int16, int32, int64,
    long, uint8,
)
from cygrad._tensor import Size, Tensor  # noqa: F401
from cygrad import ops as _ops  # noqa: F401  (attaches Tensor methods)
from cygrad.ops import OPS  # noqa: F401
from cygrad.creation import (  # noqa: F401
    Generator, arange, as_tensor, default_generator, empty, empty_like, eye,
    from_numpy, full, full_like, get_default_dtype, initial_seed, linspace,
    manual_seed, ones, ones_like, rand, rand_like, randint, randn, randn_like,
    seed, set_default_dtype, tensor, zeros, zeros_like,
)
from cygrad.autograd.grad_mode import (  # noqa: F401
    enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled,
)
from cygrad import autograd  # noqa: F401
from cygrad import viz  # noqa: F401
from cygrad import nn, optim  # noqa: F401
from cygrad import distributed, multiprocessing  # noqa: F401  (no MPI until used)
from cygrad.serialization import load, save  # noqa: F401
from cygrad._kernels.threads import get_num_threads, set_num_threads  # noqa: F401


def _export_ops():
    g = globals()
    for name, spec in OPS.items():
        g.setdefault(name, spec.fn)
    for alias in ("multiply", "divide", "true_divide", "negative", "subtract", "mm",
                  "t", "sum_to_shape", "logical_not"):
        g.setdefault(alias, getattr(_ops, alias))


_export_ops()
del _export_ops

is_tensor = lambda obj: isinstance(obj, Tensor)  # noqa: E731

__version__ = "0.1.0"
