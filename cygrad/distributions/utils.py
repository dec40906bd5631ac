"""Helpers the distributions share (torch's ``torch.distributions.utils``):
``broadcast_all``, the probs/logits conversions, ``clamp_probs``,
``lazy_property`` and the packing of lower triangles into vectors."""

import numpy as np

from cygrad._kernels.engine import TensorBase
from cygrad._typeinfo import finfo
from cygrad.autograd.function import Function
from cygrad.autograd.grad_mode import enable_grad
from cygrad.creation import get_default_dtype, rand, randn, tensor
from cygrad.ops import OPS
from cygrad.ops.arrange import broadcast_shapes
from cygrad.ops.select import Where
from cygrad.ops.special import xlogy as _xlogy_op

__all__ = [
    "broadcast_all",
    "clamp_probs",
    "lazy_property",
    "logits_to_probs",
    "probs_to_logits",
    "tril_matrix_to_vec",
    "vec_to_tril_matrix",
]

euler_constant = 0.57721566490153286060  # the Euler-Mascheroni constant

_broadcast_tensors = OPS["broadcast_tensors"].fn


def _is_number(v):
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(
        v, bool) or isinstance(v, bool)


def broadcast_all(*values):
    """The values broadcast to one shape, as tensors.

    Numbers become tensors of the dtype of the first tensor among the values
    (the default dtype when there is none); tensors keep theirs.

    Raises
    ------
    ValueError
        If a value is neither a number nor a tensor.
    """
    if not all(isinstance(v, TensorBase) or _is_number(v) for v in values):
        raise ValueError("Input arguments must all be instances of Number, "
                         "torch.Tensor or objects implementing __torch_function__.")
    dtype = next((v.dtype for v in values if isinstance(v, TensorBase)),
                 get_default_dtype())
    ts = [v if isinstance(v, TensorBase) else tensor(v, dtype=dtype) for v in values]
    return tuple(_broadcast_tensors(*ts))


def _standard_shape(shape):
    return tuple(int(s) for s in shape)


def _sum_rightmost(value, dim):
    """``value`` summed over its ``dim`` last dimensions."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:value.ndim - dim]) + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary=False):
    """Probabilities from logits: the sigmoid when ``is_binary``, else the
    softmax over the last dimension."""
    if is_binary:
        return logits.sigmoid()
    return logits.softmax(-1)


def clamp_probs(probs):
    """``probs`` clamped into ``[eps, 1 - eps]`` (eps of its dtype), so that
    their logarithms and those of ``1 - probs`` are finite."""
    eps = finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    """Logits from probabilities (clamped first): ``log(p) - log1p(-p)`` when
    ``is_binary``, else ``log(p)``."""
    p = clamp_probs(probs)
    if is_binary:
        return p.log() - (-p).log1p()
    return p.log()


class lazy_property:
    """A property computed on first access and then stored in the instance's
    ``__dict__`` (later reads are plain attribute reads).  Read on the class,
    it gives the descriptor itself."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__
        self.__name__ = wrapped.__name__

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _LazyPropertyAndProperty(self.wrapped)
        with enable_grad():     # derived parameters keep their graph
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _LazyPropertyAndProperty(lazy_property, property):
    """What a ``lazy_property`` looks like on its class: a property too, so
    tools that list properties see it."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)
        lazy_property.__init__(self, wrapped)


def tril_matrix_to_vec(mat, diag=0):
    """The entries of ``mat``'s lower triangle (offset ``diag``), row by row,
    as the last dimension of a vector."""
    n = mat.shape[-1]
    if not (-n <= diag < n):
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    rows, cols = np.tril_indices(n, k=diag)
    keep = rows < mat.shape[-2]
    flat = mat.reshape(tuple(mat.shape[:-2]) + (-1,))
    idx = tensor((rows[keep] * n + cols[keep]).astype(np.int64))
    return flat.index_select(-1, idx)


def vec_to_tril_matrix(vec, diag=0):
    """The inverse of ``tril_matrix_to_vec``: an ``n x n`` matrix whose lower
    triangle (offset ``diag``) holds ``vec``'s last dimension, zeros above."""
    m = vec.shape[-1]
    # m = n(n+1)/2 + diag*n - (diag^2 + diag)/2 (entries of the offset triangle)
    n = int(round((-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * m
                                      + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2))
    if n * (n + 1) // 2 + diag * n - (diag * diag + diag) // 2 != m:
        raise ValueError(f"vec_to_tril_matrix: a last dimension of {m} is not the "
                         f"size of a triangle with diag={diag}")
    rows, cols = np.tril_indices(n, k=diag)
    batch = tuple(vec.shape[:-1])
    zero = vec.new_zeros(batch + (1,))
    padded = OPS["cat"].fn([zero, vec], -1)
    # every matrix entry reads position 0 (a zero) or its entry of vec
    where = np.zeros(n * n, dtype=np.int64)
    where[rows * n + cols] = np.arange(1, m + 1)
    out = padded.index_select(-1, tensor(where))
    return out.reshape(batch + (n, n))


def _broadcast_shape(*shapes):
    return tuple(broadcast_shapes(*shapes))


def _standard_normal(shape, dtype):
    return randn(*shape, dtype=dtype)


def _uniform(shape, dtype):
    return rand(*shape, dtype=dtype)


def _tiny(dtype):
    return finfo(dtype).tiny


def _eps(dtype):
    return finfo(dtype).eps


def _softplus(x):
    """torch's ``softplus`` (beta 1, threshold 20): ``log(1 + exp(x))``, and
    ``x`` itself above 20; the unused branch never sees a large argument,
    so no gradient turns NaN."""
    soft = x.clamp(max=20).exp().log1p()
    return Where.apply(x > 20, x, soft)


class _LogSigmoid(Function):
    """out = min(x, 0) - log1p(exp(-|x|));  grad_x = g * sigmoid(-x) (smooth
    at 0, as torch's log_sigmoid)."""

    _node_name = "LogSigmoidBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(max=0) - (-x.abs()).exp().log1p()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (-x).sigmoid()


def _log_sigmoid(x):
    """``log(sigmoid(x))``."""
    return _LogSigmoid.apply(x)


class _BCEWithLogits(Function):
    """out = (1 - t) x - log_sigmoid(x) (torch's
    ``binary_cross_entropy_with_logits``, no reduction, in torch's order of
    operations, so float32 results round alike);
    grad_x = g * (sigmoid(x) - t), grad_t = -g * x."""

    _node_name = "BinaryCrossEntropyWithLogitsBackward0"

    @staticmethod
    def forward(ctx, x, t):
        ctx.save_for_backward(x, t)
        log_sigmoid = x.clamp(max=0) - (-x.abs()).exp().log1p()
        return (1 - t) * x - log_sigmoid

    @staticmethod
    def backward(ctx, grad):
        x, t = ctx.saved_tensors
        grad_x = grad * (x.sigmoid() - t) if ctx.needs_input_grad[0] else None
        grad_t = -grad * x if ctx.needs_input_grad[1] else None
        return grad_x, grad_t


def _bce_with_logits(logits, target):
    """Elementwise binary cross entropy of ``target`` given ``logits``."""
    return _BCEWithLogits.apply(*broadcast_all(logits, target))


def _xlogy(x, y):
    """``x * log(y)`` with torch's conventions and gradients, broadcast."""
    return _xlogy_op(*broadcast_all(x, y))


def _one_of(probs, logits):
    """torch's refusal of neither or both of ``probs`` and ``logits``."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


class _ProbsOrLogits:
    """A distribution given by ``probs`` or by ``logits``: the given one is
    ``_param``, the other is derived on first use (``_binary``: through the
    sigmoid, else normalised over the last dimension)."""

    _binary = True

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=self._binary)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=self._binary)

    @property
    def param_shape(self):
        return self._param.size()

    def _expanded_from(self, other):
        self._param = self.__dict__.get("probs", self.__dict__.get("logits"))
