"""Sampling beyond ``rand``/``randn``/``randint``: ``multinomial``,
``randperm``, ``normal``, ``bernoulli``, ``poisson``, ``randint_like``, the
generator state as a ByteTensor, and the Tensor's in-place samplers
(``normal_``, ``uniform_``, ``random_``, ``bernoulli_``, ``exponential_``,
``geometric_``, ``cauchy_``, ``log_normal_``).

Every function takes ``generator=`` (default: the default generator, torch's
MT19937 stream, ``_kernels/cg_rng.h``).  ``rand``, ``randn``, ``randint``,
``randperm``, ``normal``, ``bernoulli``, ``multinomial`` and the in-place
``normal_``/``uniform_``/``random_``/``bernoulli_``/``exponential_`` follow
torch's recipes, so after the same seed they give torch's numbers; the
others (``poisson``, ``geometric_``, ``cauchy_``, ``log_normal_`` and the
distributions' gamma-based samplers) draw from a NumPy generator seeded by
the stream: reproducible, not torch's numbers.  As in torch, the
samplers' results have a gradient of zero with respect to their parameters
(``normal(mean, std)``, ``bernoulli(p)``, ``poisson(rate)``).

The in-place samplers draw a fresh array and write it with ``copy_``, so
they obey the in-place rules (a leaf that requires grad is refused outside
``no_grad``; the version counter advances).
"""

from __future__ import annotations

import contextlib
import math
import numbers
from typing import TYPE_CHECKING, Any

import numpy as np

from cygrad import dtypes as _dt
from cygrad._kernels.engine import TensorBase, _wrap, is_grad_enabled
from cygrad._tensor import Tensor
from cygrad.autograd.function import Function
from cygrad.creation import (
    _dtype_or_default,
    _exponential_array,
    _factory,
    _in_layout,
    _int_array,
    _make,
    _mt,
    _normal_array,
    _rng,
    _shape_arg,
    _uniform_array,
    default_generator,
    initial_seed,
    manual_seed,
    randint,
    seed,
)
from cygrad.ops.inplace import copy_

if TYPE_CHECKING:
    from collections.abc import Sequence

    from cygrad._typing import Device, DType
    from cygrad.creation import Generator

__all__ = [
    "bernoulli", "fork_rng", "get_rng_state", "initial_seed", "manual_seed",
    "multinomial", "normal", "poisson", "randint_like", "randperm", "seed",
    "set_rng_state",
]


class _Sampled(Function):
    """A sample drawn from distributions parametrised by the inputs; as in
    torch, its gradient with respect to every parameter is zero."""

    @staticmethod
    def forward(ctx, sample, *params):
        ctx.is_tensor = [isinstance(p, TensorBase) for p in params]
        return _wrap(sample._arr.copy())

    @staticmethod
    def backward(ctx, grad):
        zero = grad * 0
        return (None,) + tuple(zero if t else None for t in ctx.is_tensor)


def _zero_grad_node(name):
    return type(name, (_Sampled,), {"_node_name": name})


_NormalNode = _zero_grad_node("NormalBackward")
_BernoulliNode = _zero_grad_node("BernoulliBackward0")
_PoissonNode = _zero_grad_node("PoissonBackward0")


def _record(node, arr, *params):
    out = _wrap(arr)
    if is_grad_enabled() and any(isinstance(p, TensorBase) and p._requires_grad
                                 for p in params):
        return node.apply(out, *params)
    return out


# --- multinomial, randperm ----------------------------------------------------------

def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,
                generator: Generator | None = None,
                out: Tensor | None = None) -> Tensor:
    """Draw ``num_samples`` category indices from each row of ``input``.

    ``input`` (1-D or 2-D, float) holds non-negative weights per category (not
    necessarily normalised).  Without replacement no index repeats in a row
    (sequential sampling from the renormalised weights; ``num_samples`` may
    not exceed the number of categories).  Returns int64 of shape
    ``(num_samples,)`` or ``(rows, num_samples)``.
    """
    if out is not None:
        raise TypeError("multinomial(): out= is not supported by cygrad")
    if not isinstance(input, TensorBase):
        raise TypeError(f"multinomial(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    p = input._arr
    if p.dtype.kind != "f":
        raise RuntimeError(f"multinomial only supports floating-point dtypes for "
                           f"input, got: {_dt.name(p.dtype)}")
    if p.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    num_samples = int(num_samples)
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    n_cat = p.shape[-1]
    if not replacement and num_samples > n_cat:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples "
                           "without replacement")
    rows = p.reshape(-1, n_cat)
    # torch's checks: max < inf and min >= 0 (a NaN fails the first), then
    # no row summing to 0
    if rows.size and not (rows.max() < np.inf and rows.min() >= 0):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or "
                           "element < 0")
    if (rows.sum(axis=1) <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities "
                           "<= 0)")
    work = rows if rows.dtype.itemsize >= 4 else rows.astype(np.float32)
    if not replacement or num_samples == 1:
        # torch's draw: the largest p / q for exponential q (Gumbel's trick
        # without the logarithms), one q per category in row order (q is 0
        # with probability 2**-53; then p / q is inf or nan, as in torch)
        keys = work / _exponential_array(work.shape, work.dtype, 1.0, generator)
        if num_samples == 1:
            idx = keys.argmax(axis=1)[:, None]
        else:
            idx = np.argsort(-keys, axis=1, kind="stable")[:, :num_samples]
    else:
        # torch's draw with replacement: per row the running sum (in the
        # row's dtype) divided by the total, then for each sample the first
        # category whose cumulative share reaches a uniform double
        cdf = np.cumsum(work, axis=1, dtype=work.dtype)
        cdf /= cdf[:, -1:]
        u = _mt(generator).units(rows.shape[0] * num_samples).reshape(
            rows.shape[0], num_samples)
        idx = np.empty(u.shape, np.int64)
        for r in range(rows.shape[0]):
            idx[r] = np.searchsorted(cdf[r].astype(np.float64), u[r], side="left")
        np.minimum(idx, n_cat - 1, out=idx)
    idx = np.ascontiguousarray(idx, dtype=np.int64)
    return _wrap(idx.reshape(p.shape[:-1] + (num_samples,)))


@_factory()
def randperm(n: int, *, generator: Generator | None = None, dtype: DType | None = None,
             device: Device | None = None, requires_grad: bool = False,
             pin_memory: bool = False, layout: Any = None) -> Tensor:
    """A random permutation of ``0 .. n-1`` (int64 unless ``dtype`` is given)."""
    n = _shape_arg((n,))[0]
    d = _dt.int64 if dtype is None else _dt.to_numpy(dtype)
    if n < 2 ** 32 // 20:
        perm = _mt(generator).randperm(n)     # torch's Fisher-Yates pass
    else:
        perm = _rng(generator).permutation(n)
    return _make(perm.astype(d, copy=False), requires_grad)


# --- normal, bernoulli, poisson -------------------------------------------------

def _tensor_or_number(x, name):
    if isinstance(x, TensorBase):
        return x
    if isinstance(x, numbers.Real) and not isinstance(x, bool):
        return float(x)
    raise TypeError(f"normal(): argument '{name}' must be Tensor or float, not "
                    f"{type(x).__name__}")


def normal(mean: float | Tensor = 0.0, std: float | Tensor = 1.0,
           size: Sequence[int] | None = None, *, generator: Generator | None = None,
           dtype: DType | None = None, device: Device | None = None,
           requires_grad: bool = False, out: Tensor | None = None, layout: Any = None,
           pin_memory: bool = False) -> Tensor:
    """Normal samples with ``mean`` and ``std`` (each a tensor or a float).

    Tensor arguments broadcast together and give the result's shape and
    dtype; with two floats, ``size`` gives the shape (default dtype unless
    ``dtype``).  The gradient with respect to a tensor mean or std is zero,
    as in torch.
    """
    if out is not None:
        raise TypeError("normal(): out= is not supported by cygrad")
    mean = _tensor_or_number(mean, "mean")
    std = _tensor_or_number(std, "std")
    if isinstance(std, float):
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    elif std._arr.size and not np.all(std._arr >= 0):
        raise RuntimeError("normal expects all elements of std >= 0.0")
    if isinstance(mean, float) and isinstance(std, float):
        if size is None:
            raise TypeError("normal() with float mean and std needs size=")
        shape = _shape_arg((size,))
        d = _dtype_or_default(dtype)
        return _make(_normal_array(shape, d, mean, std, generator), requires_grad)
    arrs = [m._arr for m in (mean, std) if isinstance(m, TensorBase)]
    d = np.result_type(*arrs)
    if d.kind != "f":
        raise NotImplementedError(f'"normal_kernel_cpu" not implemented for '
                                  f"'{_dt.name(d)}'")
    mv = mean._arr if isinstance(mean, TensorBase) else mean
    sv = std._arr if isinstance(std, TensorBase) else std
    try:
        shape = np.broadcast_shapes(np.shape(mv), np.shape(sv))
    except ValueError:
        raise RuntimeError(f"normal(): the shapes of mean {list(np.shape(mv))} and "
                           f"std {list(np.shape(sv))} do not broadcast") from None
    # torch: normal_(0, std) (or (0, 1) then times the std tensor), plus mean
    z = _normal_array(shape, d, 0.0, sv if isinstance(sv, float) else 1.0, generator)
    if not isinstance(sv, float):
        z = z * np.asarray(sv, d)
    arr = (z + np.asarray(mv, d)).astype(d, copy=False)
    return _record(_NormalNode, np.asarray(arr, order="C"), mean, std)


def _check_float(t, kernel):
    if t._arr.dtype.kind != "f":
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{_dt.name(t._arr.dtype)}'")


def bernoulli(input: Tensor, p: float | Tensor | None = None, *,
              generator: Generator | None = None, out: Tensor | None = None) -> Tensor:
    """0/1 samples (in ``input``'s dtype): with probability ``input[i]``, or
    with the one probability ``p`` for every element when it is given."""
    if out is not None:
        raise TypeError("bernoulli(): out= is not supported by cygrad")
    if not isinstance(input, TensorBase):
        raise TypeError(f"bernoulli(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if p is not None:
        p = _check_p(p, "bernoulli_")
        arr = _mt(generator).bernoulli(input._arr.size, p)
        return _wrap(arr.reshape(input._arr.shape).astype(input._arr.dtype))
    _check_float(input, "bernoulli_tensor_cpu_p_")
    probs = input._arr
    if probs.size and not (np.all(probs >= 0) and np.all(probs <= 1)):
        raise RuntimeError("bernoulli expects all elements of input in [0, 1] (torch: "
                           "Expected p_in >= 0 && p_in <= 1 to be true)")
    arr = _bernoulli_draws(probs, generator).astype(probs.dtype)
    return _record(_BernoulliNode, arr, input)


def poisson(input: Tensor, generator: Generator | None = None) -> Tensor:
    """Poisson samples with rates ``input`` (non-negative floats)."""
    if not isinstance(input, TensorBase):
        raise TypeError(f"poisson(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    _check_float(input, "poisson_cpu")
    rate = input._arr
    if rate.size and not np.all(rate >= 0):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    arr = _rng(generator).poisson(rate.astype(np.float64)).astype(rate.dtype)
    return _record(_PoissonNode, np.asarray(arr, order="C"), input)


def randint_like(input: Tensor, low: int = 0, high: int | None = None, *,
                 dtype: DType | None = None, generator: Generator | None = None,
                 requires_grad: bool = False, device: Device | None = None,
                 layout: Any = None, memory_format: Any = None) -> Tensor:
    """``randint`` with ``input``'s shape (and dtype unless ``dtype``):
    ``randint_like(x, high)`` or ``randint_like(x, low, high)``."""
    if high is None:
        low, high = 0, low
    d = input._arr.dtype if dtype is None else _dt.to_numpy(dtype)
    return randint(low, high, tuple(input._arr.shape), dtype=d, generator=generator,
                   requires_grad=requires_grad, device=device)


# --- generator state ----------------------------------------------------------------

def get_rng_state() -> Tensor:
    """The default generator's state, a uint8 tensor (for ``set_rng_state``)."""
    return default_generator.get_state()


def set_rng_state(new_state: Tensor) -> None:
    """Restore the default generator from a ``get_rng_state()`` tensor."""
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices: Any = None, enabled: bool = True,
             device_type: str = "cpu") -> Any:
    """Restore the default generator's state on exit (draws inside the block
    do not change the numbers drawn after it)."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)


# --- in-place samplers on Tensor ------------------------------------------------

def _fill_sample(self, arr):
    """Write ``arr`` into ``self`` in place (copy_: in-place rules, versions)."""
    arr = np.asarray(arr)
    if arr.dtype != self._arr.dtype:
        arr = arr.astype(self._arr.dtype)
    return copy_(self, _wrap(np.asarray(arr, order="C")))


def _check_p(p, opname, open_interval=False):
    p = float(p)
    ok = 0 < p < 1 if open_interval else 0 <= p <= 1
    if not ok:
        interval = "(0, 1)" if open_interval else "[0, 1]"
        raise RuntimeError(f"{opname} expects p to be in {interval}, but got p={p:g}")
    return p


def _in_memory_order(self, make):
    """Write ``make(shape, contiguous)``'s values into ``self`` in the order
    torch's samplers visit it (memory order), through copy_."""
    return _fill_sample(self, _in_layout(self._arr, make))


def _bernoulli_draws(probs, generator=None):
    """One 0/1 draw per probability, in C order: a uniform double below a
    float64 p, a uniform float below a float32 (or float16) one."""
    flat = np.ascontiguousarray(probs).reshape(-1)
    if flat.dtype != np.float64:
        flat = flat.astype(np.float32, copy=False)
    return _mt(generator).bernoulli_p(flat).reshape(probs.shape)


def normal_(self, mean: float | Tensor = 0.0, std: float | Tensor = 1.0, *,
            generator: Generator | None = None) -> Tensor:
    """Fill with normal samples of ``mean`` and ``std`` (floating tensors)."""
    _check_float(self, "normal_kernel_cpu")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    d = self._arr.dtype
    return _in_memory_order(self, lambda shape, contig: _normal_array(
        shape, d, float(mean), float(std), generator, contig))


def uniform_(self, a: float = 0.0, b: float = 1.0, *,
             generator: Generator | None = None, **kw: Any) -> Tensor:
    """Fill with samples uniform on ``[from, to)`` (``a``/``b`` positionally)."""
    a, b = kw.pop("from", a), kw.pop("to", b)
    if kw:
        raise TypeError(f"uniform_() got unexpected keyword arguments {sorted(kw)}")
    _check_float(self, "check_uniform_bounds")
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={a:g} > to={b:g}")
    d = self._arr.dtype
    return _in_memory_order(self, lambda shape, contig: _uniform_array(
        shape, d, float(a), float(b), generator))


def _random_upper(dtype):
    """The default upper bound (inclusive) of ``random_()`` for ``dtype``:
    every integer a float's mantissa holds exactly, an int type's maximum."""
    if dtype.kind == "f":
        return 2 ** (np.finfo(dtype).nmant + 1)
    if dtype.kind == "b":
        return 1
    return int(np.iinfo(dtype).max)


def random_(self, *args: Any, generator: Generator | None = None, **kw: Any) -> Tensor:
    """Fill with integers uniform on ``[from, to)``: ``random_(to)``,
    ``random_(from, to)``, ``random_(from, None)`` (up to the dtype's max) or
    ``random_()`` (0 to the largest exactly representable integer)."""
    if "from" in kw:
        args = (kw.pop("from"),) + args
    if "to" in kw:
        args = args + (kw.pop("to"),) if args else (0, kw.pop("to"))
    if kw:
        raise TypeError(f"random_() got unexpected keyword arguments {sorted(kw)}")
    d = self._arr.dtype
    if len(args) == 0:
        low, high = 0, _random_upper(d) + 1
    elif len(args) == 1:
        low, high = 0, int(args[0])
    elif len(args) == 2:
        low = int(args[0])
        high = _random_upper(d) + 1 if args[1] is None else int(args[1])
    else:
        raise TypeError(f"random_() takes at most 2 positional arguments "
                        f"({len(args)} given)")
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                           f"from={low} >= to={high}")
    return _in_memory_order(self, lambda shape, contig: _int_array(
        shape, low, high, d, generator))


def bernoulli_(self, p: float = 0.5, *, generator: Generator | None = None) -> Tensor:
    """Fill with 0/1: probability ``p`` (a float, or a tensor broadcast to self)."""
    if isinstance(p, TensorBase):
        probs = p._arr
        if probs.size and not (np.all(probs >= 0) and np.all(probs <= 1)):
            raise RuntimeError("bernoulli_ expects all elements of p in [0, 1]")
        full = np.broadcast_to(probs, self._arr.shape)
        return _in_memory_order(self, lambda shape, contig: _bernoulli_draws(
            full if contig else full.ravel(order="K"), generator))
    p = _check_p(p, "bernoulli_")
    return _in_memory_order(self, lambda shape, contig: _mt(generator).bernoulli(
        math.prod(shape), p).reshape(shape))


def exponential_(self, lambd: float = 1.0, *,
                 generator: Generator | None = None) -> Tensor:
    """Fill with exponential samples of rate ``lambd``."""
    if self._arr.dtype.kind != "f":
        raise RuntimeError(
            "Exponential distribution is a continuous probability distribution. "
            f"dtype must be a floating point but you specified "
            f"{_dt.name(self._arr.dtype)}")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found "
                           f"lambda={lambd:g}")
    d = self._arr.dtype
    return _in_memory_order(self, lambda shape, contig: _exponential_array(
        shape, d, float(lambd), generator))


def geometric_(self, p: float, *, generator: Generator | None = None) -> Tensor:
    """Fill with the number of Bernoulli(p) trials up to the first success
    (1, 2, ...)."""
    p = _check_p(p, "geometric_", open_interval=True)
    return _fill_sample(self, _rng(generator).geometric(p, self._arr.shape))


def cauchy_(self, median: float = 0.0, sigma: float = 1.0, *,
            generator: Generator | None = None) -> Tensor:
    """Fill with Cauchy samples (``median + sigma * tan(pi * (u - 1/2))``)."""
    _check_float(self, "cauchy_cpu")
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma:g}")
    return _fill_sample(self, median + sigma * _rng(generator).standard_cauchy(
        self._arr.shape))


def log_normal_(self, mean: float | Tensor = 1.0, std: float | Tensor = 2.0, *,
                generator: Generator | None = None) -> Tensor:
    """Fill with ``exp(N(mean, std))`` samples."""
    _check_float(self, "log_normal_cpu")
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std:g}")
    z = _rng(generator).standard_normal(self._arr.shape)
    return _fill_sample(self, np.exp(mean + std * z))


def _multinomial_method(self, num_samples, replacement=False, *, generator=None):
    return multinomial(self, num_samples, replacement, generator=generator)


def _bernoulli_method(self, p=None, *, generator=None):
    return bernoulli(self, p, generator=generator)


Tensor.normal_ = normal_
Tensor.uniform_ = uniform_
Tensor.random_ = random_
Tensor.bernoulli_ = bernoulli_
Tensor.exponential_ = exponential_
Tensor.geometric_ = geometric_
Tensor.cauchy_ = cauchy_
Tensor.log_normal_ = log_normal_
Tensor.multinomial = _multinomial_method
Tensor.bernoulli = _bernoulli_method
