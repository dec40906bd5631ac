"""Elementwise ops composed of the op table's rows (so their gradients come
from the rows'): frac, logit, copysign, sgn, signbit, positive, heaviside,
fmax/fmin, gcd/lcm, ldexp, logaddexp2, float_power, isposinf/isneginf/isreal,
rad2deg/deg2rad, hardshrink, nextafter, frexp, and torch's comparison
aliases (not_equal, greater, ...) with the in-place compares (eq_, lt_, ...).
"""

import math

import numpy as np

from cygrad._kernels.engine import TensorBase, _wrap
from cygrad._tensor import Tensor
from cygrad._typeinfo import result_type
from cygrad.autograd.function import Function
from cygrad.creation import get_default_dtype
from cygrad.ops import elementwise as _ew
from cygrad.ops.inplace import _inplace_apply, _shaped_inplace
from cygrad.ops.out import _torch_name
from cygrad.ops.registry import op, return_type
from cygrad.ops.select import clamp, where


def _tensor_arg(x, fname, arg="input", pos=1):
    """``x`` itself; torch's TypeError naming the argument when it is not a
    Tensor (also for special, stats and linalg_extra)."""
    if not isinstance(x, TensorBase):
        raise TypeError(f"{fname}(): argument '{arg}' (position {pos}) must be "
                        f"Tensor, not {type(x).__name__}")
    return x


def _floating(x):
    """Integer and bool inputs compute in the default float dtype (torch)."""
    if x._arr.dtype.kind != "f":
        return x.to(get_default_dtype())
    return x


def _operands(fname, input, other, floating=False):
    """Both operands as Tensors of torch's promoted dtype (float if asked)."""
    if not isinstance(input, TensorBase) and not isinstance(other, TensorBase):
        raise TypeError(f"{fname}(): expected at least one Tensor argument")
    dt = result_type(input, other)
    if floating and dt.kind != "f":
        dt = np.dtype(get_default_dtype())
    a = input.to(dt) if isinstance(input, TensorBase) else _wrap(np.asarray(input, dt))
    b = other.to(dt) if isinstance(other, TensorBase) else _wrap(np.asarray(other, dt))
    return a, b


def float_inplace(name, fn):
    """The in-place form of an op with a float result: refused on integer
    tensors with torch's message, else ``fn`` written into self."""
    method = _shaped_inplace(name, fn)

    def inplace(self, *args, **kwargs):
        if self._arr.dtype.kind != "f":
            raise RuntimeError(
                f"result type {_torch_name(np.dtype(get_default_dtype()))} can't be "
                f"cast to the desired output type {_torch_name(self._arr.dtype)}")
        return method(self, *args, **kwargs)
    inplace.__name__, inplace.__doc__ = method.__name__, method.__doc__
    return inplace


def broadcast_message(a, b):
    """torch's message for shapes that do not broadcast (or None)."""
    for i in range(1, min(len(a), len(b)) + 1):
        if a[-i] != b[-i] and 1 not in (a[-i], b[-i]):
            return (f"The size of tensor a ({a[-i]}) must match the size of tensor b "
                    f"({b[-i]}) at non-singleton dimension {max(len(a), len(b)) - i}")
    return None


def _not_implemented(fname, dtype):
    raise NotImplementedError(f'"{fname}" not implemented for '
                              f"'{_torch_name(np.dtype(dtype))}'")


# --- frac, logit, sgn, positive, signbit ------------------------------------------------

@op("frac", methods=("frac",), kind="special")
def frac(input):
    """out = x - trunc(x), with x's sign; grad = g."""
    _tensor_arg(input, "frac")
    if input._arr.dtype.kind != "f":
        _not_implemented("frac_cpu", input._arr.dtype)
    return input - input.trunc()


@op("logit", methods=("logit",), kind="special")
def logit(input, eps=None):
    """out = log(z / (1 - z)), z = x clamped to [eps, 1 - eps] when eps is given;
    grad = g / (z (1 - z)) (0 outside [eps, 1 - eps])."""
    x = _floating(_tensor_arg(input, "logit"))
    if eps is not None:
        x = clamp(x, eps, 1 - eps)
    return (x / (1 - x)).log()


@op("sgn", methods=("sgn",), kind="special")
def sgn(input):
    """out = sign(x) for real tensors (x / |x| for complex ones); grad = 0."""
    return _tensor_arg(input, "sgn").sign()


@op("positive", methods=("positive",), kind="special")
def positive(input):
    """out = x itself (torch returns the input); refuses bool tensors."""
    _tensor_arg(input, "positive")
    if input._arr.dtype == np.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


@op("signbit", methods=("signbit",), kind="compare")
def signbit(input):
    """out = whether x's sign bit is set (True for -0.0); bool, no gradient."""
    return _wrap(np.signbit(_tensor_arg(input, "signbit")._arr))


# --- copysign, heaviside, fmax/fmin -----------------------------------------------------

class CopySign(Function):
    """out = |a| with b's sign; grad_a = g * out / a (0 where a == 0), grad_b = 0."""

    _node_name = "CopysignBackward0"

    @staticmethod
    def forward(ctx, a, b):
        out = np.copysign(a._arr, b._arr)
        ctx.save_for_backward(a)
        ctx.sign = _wrap(np.copysign(np.ones_like(out), out))
        return _wrap(out)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        ratio = where(a == 0, 0.0, a.sign() * ctx.sign)
        grad_b = g * 0 if ctx.needs_input_grad[1] else None
        return (g * ratio if ctx.needs_input_grad[0] else None), grad_b


@op("copysign", methods=("copysign",), kind="special")
def copysign(input, other):
    """out = |input| with other's sign (-0.0 counts as negative); grad_input =
    g * sign(input) * sign(out) (0 where input == 0), grad_other = 0."""
    a, b = _operands("copysign", input, other, floating=True)
    return CopySign.apply(a, b)


@op("heaviside", methods=("heaviside",), kind="compare")
def heaviside(input, values):
    """out = 0 where x < 0, values where x == 0, 1 where x > 0 (no gradient)."""
    _tensor_arg(input, "heaviside")
    _tensor_arg(values, "heaviside", "values", 2)
    if input._arr.dtype != values._arr.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with "
                           "different dtypes")
    x, v = np.broadcast_arrays(input._arr, values._arr)
    return _wrap(np.where(x == 0, v, (x > 0).astype(x.dtype)).astype(x.dtype))


class _FMax(Function):
    """out = fmax(a, b) (nan only where both are nan); grad_a = g where a >= b
    or b is nan, grad_b = g elsewhere (ties go to a, as torch)."""

    _node_name = "FmaxBackward0"
    _np = staticmethod(np.fmax)

    @classmethod
    def _to_a(cls, a, b):
        return (a >= b) | b.isnan()

    @classmethod
    def forward(cls, ctx, a, b):
        ctx.save_for_backward(a, b)
        return _wrap(cls._np(a._arr, b._arr))

    @classmethod
    def backward(cls, ctx, g):
        a, b = ctx.saved_tensors
        m = cls._to_a(a, b)
        return (where(m, g, 0.0) if ctx.needs_input_grad[0] else None,
                where(m, 0.0, g) if ctx.needs_input_grad[1] else None)


class _FMin(_FMax):
    _node_name = "FminBackward0"
    _np = staticmethod(np.fmin)

    @classmethod
    def _to_a(cls, a, b):
        return (a <= b) | b.isnan()


@op("fmax", methods=("fmax",), kind="special")
def fmax(input, other):
    """out = the larger of a and b, ignoring a nan in one of them; grad to the
    larger (ties to input)."""
    _tensor_arg(input, "fmax")
    _tensor_arg(other, "fmax", "other", 2)
    return _FMax.apply(*_operands("fmax", input, other))


@op("fmin", methods=("fmin",), kind="special")
def fmin(input, other):
    """out = the smaller of a and b, ignoring a nan in one of them; grad to the
    smaller (ties to input)."""
    _tensor_arg(input, "fmin")
    _tensor_arg(other, "fmin", "other", 2)
    return _FMin.apply(*_operands("fmin", input, other))


# --- integer ops: gcd, lcm ---------------------------------------------------------------

def _integer_op(fname, kernel, input, other):
    a, b = _operands(fname, input, other)
    if a._arr.dtype.kind not in "iu":
        _not_implemented(f"{fname}_cpu", a._arr.dtype)
    return _wrap(kernel(a._arr, b._arr))


@op("gcd", methods=("gcd",), kind="compare")
def gcd(input, other):
    """out = the greatest common divisor (non-negative) of integer tensors."""
    return _integer_op("gcd", np.gcd, input, other)


@op("lcm", methods=("lcm",), kind="compare")
def lcm(input, other):
    """out = the least common multiple (non-negative) of integer tensors."""
    return _integer_op("lcm", np.lcm, input, other)


# --- ldexp, logaddexp2, float_power, angle conversions -----------------------------------

@op("ldexp", methods=("ldexp",), kind="special")
def ldexp(input, other):
    """out = input * 2 ** other (float); grad_input = g * 2 ** other, grad_other =
    g * out * log(2)."""
    a, b = _operands("ldexp", input, other, floating=True)
    return a * b.exp2()


@op("logaddexp2", methods=("logaddexp2",), kind="special")
def logaddexp2(input, other):
    """out = log2(2 ** a + 2 ** b), stable; grad_a = g * 2 ** (a - out)."""
    a, b = _operands("logaddexp2", input, other, floating=True)
    ln2 = math.log(2.0)
    return _ew.logaddexp(a * ln2, b * ln2) / ln2


@op("float_power", methods=("float_power",), kind="special")
def float_power(input, exponent):
    """out = input ** exponent computed in float64; grads those of pow."""
    if not isinstance(input, TensorBase) and not isinstance(exponent, TensorBase):
        raise TypeError("float_power(): expected at least one Tensor argument")
    base = input.to(np.float64) if isinstance(input, TensorBase) else float(input)
    exp = exponent.to(np.float64) if isinstance(exponent, TensorBase) else \
        float(exponent)
    if not isinstance(base, TensorBase):
        return _wrap(np.asarray(base, np.float64)) ** exp
    return base ** exp


def _float_power_(self, exponent):
    """In-place ``float_power``: self must be float64."""
    if self._arr.dtype != np.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype "
                           f"{_torch_name(self._arr.dtype)} but the operation's "
                           f"result requires dtype Double")
    return _shaped_inplace("float_power", float_power)(self, exponent)


_DEG = 180.0 / math.pi


@op("rad2deg", methods=("rad2deg",), kind="special")
def rad2deg(input):
    """out = x * 180 / pi; grad = g * 180 / pi."""
    return _floating(_tensor_arg(input, "rad2deg")) * _DEG


@op("deg2rad", methods=("deg2rad",), kind="special")
def deg2rad(input):
    """out = x * pi / 180; grad = g * pi / 180."""
    return _floating(_tensor_arg(input, "deg2rad")) * (math.pi / 180.0)


@op("hardshrink", methods=("hardshrink",), kind="special")
def hardshrink(input, lambd=0.5):
    """out = x where |x| > lambd, else 0; grad = g where |x| > lambd, else 0."""
    _tensor_arg(input, "hardshrink")
    if input._arr.dtype.kind != "f":
        _not_implemented("hardshrink_cpu", input._arr.dtype)
    return where(input.abs() > lambd, input, 0.0)


# --- classification --------------------------------------------------------------------------

@op("isposinf", methods=("isposinf",), kind="compare")
def isposinf(input):
    """out = whether x is +inf (bool)."""
    return _wrap(np.isposinf(_tensor_arg(input, "isposinf")._arr))


@op("isneginf", methods=("isneginf",), kind="compare")
def isneginf(input):
    """out = whether x is -inf (bool)."""
    return _wrap(np.isneginf(_tensor_arg(input, "isneginf")._arr))


@op("isreal", methods=("isreal",), kind="compare")
def isreal(input):
    """out = whether x has no imaginary part: True everywhere (real tensors)."""
    return _wrap(np.ones(_tensor_arg(input, "isreal")._arr.shape, bool))


# --- nextafter, frexp -----------------------------------------------------------------------

@op("nextafter", methods=("nextafter",), kind="compare")
def nextafter(input, other):
    """out = the next float after input towards other (no gradient)."""
    _tensor_arg(input, "nextafter")
    _tensor_arg(other, "nextafter", "other", 2)
    a, b = _operands("nextafter", input, other)
    if a._arr.dtype.kind != "f":
        _not_implemented("nextafter_cpu", a._arr.dtype)
    return _wrap(np.nextafter(a._arr, b._arr))


frexp_result = return_type("frexp", ["mantissa", "exponent"])


@op("frexp", methods=("frexp",), kind="compare")
def frexp(input):
    """(mantissa, exponent) with input = mantissa * 2 ** exponent, |mantissa| in
    [0.5, 1); exponent int32 (no gradient)."""
    _tensor_arg(input, "frexp")
    if input._arr.dtype.kind != "f":
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    m, e = np.frexp(input._arr)
    return frexp_result(_wrap(m), _wrap(e.astype(np.int32)))


# --- comparison aliases and the in-place compares ------------------------------------------

_COMPARE_ALIASES = (("not_equal", "ne"), ("greater", "gt"), ("greater_equal", "ge"),
                    ("less", "lt"), ("less_equal", "le"))


def _alias_of(alias, name):
    fn = getattr(Tensor, name)

    def compare(input, other):
        return fn(input, other)
    compare.__name__ = compare.__qualname__ = alias
    compare.__doc__ = f"Alias of ``{name}``: elementwise comparison, bool result."
    return compare


for _alias, _name in _COMPARE_ALIASES:
    op(_alias, methods=(_alias,), kind="compare")(_alias_of(_alias, _name))


def _compare_inplace(name):
    fn = getattr(Tensor, name)

    def method(self, other):
        if isinstance(other, TensorBase):
            msg = broadcast_message(self._arr.shape, other._arr.shape)
            if msg:
                raise RuntimeError(msg)
            shape = np.broadcast_shapes(self._arr.shape, other._arr.shape)
            if shape != self._arr.shape:
                raise RuntimeError(
                    f"output with shape {list(self._arr.shape)} doesn't match the "
                    f"broadcast shape {list(shape)}")
        return _inplace_apply(self, lambda t: fn(t, other).to(t.dtype), name + "_")
    method.__name__ = name + "_"
    method.__doc__ = f"In-place ``{name}``: self becomes 1 where true, 0 elsewhere."
    return method


def _install():
    for name in ("eq", "ne", "lt", "le", "gt", "ge"):
        setattr(Tensor, name + "_", _compare_inplace(name))
    for alias, name in _COMPARE_ALIASES:
        setattr(Tensor, alias + "_", getattr(Tensor, name + "_"))
    for name, fn in (("sgn", sgn), ("heaviside", heaviside), ("gcd", gcd),
                     ("lcm", lcm), ("nextafter", nextafter), ("frac", frac)):
        setattr(Tensor, name + "_", _shaped_inplace(name, fn))
    for name, fn in (("logit", logit), ("copysign", copysign), ("ldexp", ldexp),
                     ("rad2deg", rad2deg), ("deg2rad", deg2rad)):
        setattr(Tensor, name + "_", float_inplace(name, fn))
    Tensor.float_power_ = _float_power_


_install()
