"""The elementwise ops: every row of the op table (``_kernels/optable.py``)
registered in one loop, their derivatives over Tensors for
``create_graph=True``, and the comparisons and logical ops (no gradient)."""

import numpy as np

from cygrad import dtypes as _dt
from cygrad._kernels import engine as _engine
from cygrad._kernels import optable as _optable
from cygrad._kernels import select as _select_k
from cygrad._kernels.engine import TensorBase, _wrap, _wrap_int
from cygrad._tensor import Tensor
from cygrad.autograd.function import Function
from cygrad.ops.registry import _no_grad, op
from cygrad.ops.select import where

# --- elementwise ops from the op table -----------------------------------------------

def _table_function(row):
    """The public function of an op-table row (compiled where it can be)."""
    if row.arity == 1:
        fn = _engine.unary_method(row.name)
    elif row.alpha:
        binary = _engine.binary

        def fn(input, other, *, alpha=1):
            if alpha != 1:
                if _same_float_pair(input, other) and isinstance(alpha, (int, float)):
                    a = -float(alpha) if row.name == "sub" else float(alpha)
                    if _engine.is_grad_enabled() and (input._requires_grad
                                                      or other._requires_grad):
                        return (_SubAlpha if row.name == "sub" else _AddAlpha).apply(
                            input, other, a)
                    return _wrap(_add_alpha(input._arr, other._arr, a))
                other = other * alpha
            return binary(row.name, input, other)
        fn.__name__ = fn.__qualname__ = row.name
    else:
        fn = _engine.binary_method(row.name)
    fn.__doc__ = row.summary()
    if row.name in _KEYWORD_FORMS:
        fn = _KEYWORD_FORMS[row.name](fn)
    return fn


def _same_float_pair(a, b):
    """Two tensors of one float dtype (float32 or float64) and shape.  (With
    broadcasting torch's loops round as the vectorized kernel or not,
    depending on the strides; those cases keep the composed ops.)"""
    return (isinstance(a, TensorBase) and isinstance(b, TensorBase)
            and a._arr.dtype == b._arr.dtype and a._arr.shape == b._arr.shape
            and a._arr.dtype.type in (np.float32, np.float64))


def _add_alpha(a, b, alpha, out=None):
    """``a + alpha * b`` of two arrays of one float dtype and shape as torch
    rounds it, fma(b, alpha, a), into ``out`` (a new array when None; may be
    ``a`` itself)."""
    if out is None:
        out = np.empty(a.shape, a.dtype)
    _select_k.axpy_fwd(np.ascontiguousarray(a).reshape(-1),
                       np.ascontiguousarray(b).reshape(-1), alpha, False, out.reshape(-1))
    return out


class _AddAlpha(Function):
    """``input + alpha * other`` of two float tensors of one dtype and shape
    with gradients: torch's kernel, fma(other, alpha, input), one rounding
    (scaling first and adding rounded twice: ~18% of float32 elements an
    ulp off torch's); grad_input = g, grad_other = g alpha."""

    _node_name = "AddBackward0"

    @staticmethod
    def forward(ctx, a, b, alpha):
        ctx.alpha = alpha
        return _wrap(_add_alpha(a._arr, b._arr, alpha))

    @staticmethod
    def backward(ctx, g):
        needs = ctx.needs_input_grad
        return g if needs[0] else None, g * ctx.alpha if needs[1] else None, None


class _SubAlpha(_AddAlpha):
    """``input - alpha * other``: _AddAlpha with alpha negated (torch's sub)."""

    _node_name = "SubBackward0"


# Rows whose torch function takes a keyword beyond the row's operands: the
# compiled function wrapped once (the operators still call the kernels).
def _with_decimals(kernel):
    def round(input, *, decimals=0):
        if decimals == 0:
            return kernel(input)
        if input._arr.dtype.kind != "f":
            raise NotImplementedError(
                f'"round_cpu" not implemented for \'{_scalar_type(input._arr.dtype)}\'')
        # torch: nearbyint(x * 10**d) / 10**d, or for d < 0
        # nearbyint(x / 10**-d) * 10**-d, in the tensor's dtype; the
        # gradient stays round's 0.
        if decimals > 0:
            scale = 10.0 ** decimals
            return kernel(input * scale) / scale
        scale = 10.0 ** -decimals
        return kernel(input / scale) * scale
    round.__doc__ = kernel.__doc__[:-2] + "; ``decimals=d`` rounds to d decimal " \
        "digits (negative: to tens, hundreds...)."
    return round


def _with_rounding_mode(kernel):
    def div(input, other, *, rounding_mode=None):
        if rounding_mode is None:
            return kernel(input, other)
        if rounding_mode == "floor":
            return floor_divide(input, other)  # noqa: F821 - a row of the table
        if rounding_mode == "trunc":
            return _trunc_divide(input, other)
        raise RuntimeError("div expected rounding_mode to be one of None, 'trunc', "
                           f"or 'floor' but found '{rounding_mode}'")
    div.__doc__ = kernel.__doc__[:-2] + "; ``rounding_mode='floor'`` is " \
        "``floor_divide``, ``'trunc'`` rounds toward zero (zero gradient), and " \
        "integer operands then stay integers."
    return div


def _trunc_divide(a, b):
    """a / b rounded toward zero: torch's trunc(a / b) for floats, exact for
    integers (a zero integer divisor raises, as torch)."""
    x = a._arr if isinstance(a, TensorBase) else a
    y = b._arr if isinstance(b, TensorBase) else b
    kinds = {np.asarray(x).dtype.kind, np.asarray(y).dtype.kind}
    if kinds == {"b"}:
        raise NotImplementedError('"div_trunc_cpu" not implemented for \'Bool\'')
    if kinds <= {"i", "u", "b"}:
        # floor division gives torch's integer dtype (and the zero check);
        # a nonzero remainder of operands of opposite signs moves it up one.
        q = floor_divide(a, b)._arr  # noqa: F821 - a row of the table
        up = (np.remainder(x, y) != 0) & ((np.asarray(x) < 0) != (np.asarray(y) < 0))
        return _wrap(np.asarray(q + up.astype(q.dtype), q.dtype))
    with _no_grad():
        q = trunc(_engine.binary("div", a, b))  # noqa: F821 - a row of the table
    if not _engine.is_grad_enabled() or not any(
            isinstance(v, TensorBase) and v._requires_grad for v in (a, b)):
        return q
    # A zero gradient for a and b, as torch's: through the side of a select
    # that is never taken (floor_divide's own gradient is exactly 0), so no
    # 0 / b from div's backward can make it NaN.
    never = _wrap(np.zeros(q._arr.shape, bool))
    return where(never, floor_divide(a, b), q)  # noqa: F821 - a row of the table


def _scalar_type(dtype):
    """torch's name of a dtype in its kernel errors: 'Long', 'Float', 'Bool'."""
    return _dt.short_name(dtype)


_KEYWORD_FORMS = {"round": _with_decimals, "div": _with_rounding_mode}


for _row in _optable.UNARY + _optable.BINARY:
    globals()[_row.name] = op(_row.name, methods=_row.methods + _row.aliases,
                              primitive=True, domain=_row.domain,
                              kind="unary" if _row.arity == 1 else "binary",
                              aliases=_row.aliases, row=_row)(_table_function(_row))
    for _other in _row.aliases:
        globals()[_other] = globals()[_row.name]


# The helpers the table's derivative expressions call, over Tensors.
def _sign(x):
    with _no_grad():
        return _wrap(np.sign(x._arr))


def _pow_grad_base(g, a, b, y):
    # y (the forward output) serves the float32 kernel's a**b / a; the
    # graph keeps b * a**(b - 1), differentiable in a and b.
    b_t = b if isinstance(b, TensorBase) else _wrap(np.asarray(b))
    return where(b_t == 0, 0.0, g * (b * pow(a, b - 1)))


def _pow_grad_exp(g, a, b, y):
    mask = (a == 0) & (b >= 0)
    return g * where(mask, 0.0, y * log(a))  # noqa: F821 - a row of the table


class _Erf(Function):
    """erf over Tensors for the graph rules (gelu's derivative):
    out = erf(x); grad = g * 2 / sqrt(pi) * exp(-x * x)."""

    _node_name = "ErfBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _wrap(_optable._erf(x._arr).astype(x._arr.dtype))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (exp(-(x * x)) * 1.1283791670955126)  # noqa: F821 - a row


def _graph_rules():
    """Each row's derivatives as functions over Tensors (create_graph)."""
    ns = {r.name: globals()[r.name] for r in _optable.UNARY + _optable.BINARY}
    ns.update(keep=lambda g, c: where(c, g, 0.0), fabs=ns["abs"], sign=_sign,
              pow_grad_base=_pow_grad_base, pow_grad_exp=_pow_grad_exp, powk=ns["pow"])
    ns.setdefault("erf", _Erf.apply)   # unless the table has an erf row
    ns["phi"] = lambda x: 0.5 + 0.5 * ns["erf"](x * 0.7071067811865476)
    missing = set(_optable.HELPERS) - set(ns) - {"pick"}
    if missing:
        raise ImportError(f"op table helpers without a Tensor form: {missing}")
    unary = {r.name: eval(f"lambda g, x, y: {r.graph[0]}", ns)
             for r in _optable.UNARY + _optable.POWERS}
    binary = {r.name: tuple(eval(f"lambda g, a, b, y: {e}", ns) for e in r.graph)
              for r in _optable.BINARY + _optable.POWERS_BINARY}
    return unary, binary


# --- comparisons and logical ops (no gradient) -------------------------------------------

def compare(a, other, ufunc):
    """Elementwise comparison with broadcasting; a bool tensor, never a gradient."""
    x = a._arr
    if isinstance(other, TensorBase):
        y = other._arr
    elif isinstance(other, (int, float, bool, np.number)):
        y = _wrap_int(other, x.dtype)
    else:
        return NotImplemented
    try:
        res = ufunc(x, y)
    except ValueError:
        raise RuntimeError(
            f"The size of tensor a must match the size of tensor b: shapes "
            f"{list(x.shape)} and {list(np.shape(y))} do not broadcast") from None
    return _wrap(np.asarray(res))


for _name, _uf in (("lt", np.less), ("le", np.less_equal), ("gt", np.greater),
                   ("ge", np.greater_equal), ("eq", np.equal), ("ne", np.not_equal)):
    def _mk(uf, name):
        def fn(input, other):
            return compare(input, other, uf)
        fn.__name__ = name
        fn.__doc__ = f"Elementwise ``{name}`` comparison; a bool tensor."
        return fn
    globals()[_name] = op(_name, methods=(_name, f"__{_name}__"), kind="compare")(
        _mk(_uf, _name))


# The bitwise ops of integer and bool tensors (& | ^ ~), and the logical
# ops of any dtype (nonzero is True): bool or integer results, no gradient.
def _operand(v, name, arg):
    if isinstance(v, TensorBase):
        return v._arr
    if isinstance(v, (bool, int, float, np.number)):
        return v
    raise TypeError(f"{name}(): argument '{arg}' must be Tensor or Number, not "
                    f"{type(v).__name__}")


def _bitwise(ufunc, name):
    def fn(input, other):
        if not isinstance(other, (TensorBase, bool, int, float, np.number)):
            return NotImplemented
        x, y = _operand(input, name, "input"), _operand(other, name, "other")
        if isinstance(x, np.ndarray) and not isinstance(y, np.ndarray):
            y = _wrap_int(y, x.dtype)
        elif isinstance(y, np.ndarray) and not isinstance(x, np.ndarray):
            x = _wrap_int(x, y.dtype)
        for v in (x, y):
            if isinstance(v, float) or np.asarray(v).dtype.kind == "f":
                dname = _scalar_type(v.dtype) if isinstance(v, np.ndarray) else "Float"
                raise NotImplementedError(
                    f'"{name}_cpu" not implemented for \'{dname}\'')
        return _wrap(np.asarray(_broadcasting(ufunc, x, y)))
    fn.__name__ = name
    fn.__doc__ = (f"Elementwise ``{name}`` of integer or bool tensors "
                  "(broadcasting); no gradient.")
    return fn


def _broadcasting(ufunc, x, y):
    try:
        return ufunc(x, y)
    except ValueError:
        raise RuntimeError(
            f"The size of tensor a must match the size of tensor b: shapes "
            f"{list(np.shape(x))} and {list(np.shape(y))} do not broadcast") from None


for _name, _uf, _dunder in (("bitwise_and", np.bitwise_and, "and"),
                            ("bitwise_or", np.bitwise_or, "or"),
                            ("bitwise_xor", np.bitwise_xor, "xor")):
    _fn = _bitwise(_uf, _name)
    globals()[_name] = op(_name, methods=(_name, f"__{_dunder}__", f"__r{_dunder}__"),
                          kind="compare")(_fn)


def _invert(a):
    if a._arr.dtype.kind == "f":
        raise NotImplementedError(
            f'"bitwise_not_cpu" not implemented for \'{_scalar_type(a._arr.dtype)}\'')
    return _wrap(np.invert(a._arr))


Tensor.__invert__ = _invert


def _logical(ufunc, name):
    def fn(input, other):
        if not isinstance(other, TensorBase):
            raise TypeError(f"{name}(): argument 'other' (position 2) must be Tensor, "
                            f"not {type(other).__name__}")
        return _wrap(np.asarray(_broadcasting(ufunc, input._arr, other._arr)))
    fn.__name__ = name
    fn.__doc__ = (f"Elementwise ``{name}`` (nonzero is True; broadcasting); a "
                  "bool tensor, no gradient.")
    return fn


for _name, _uf in (("logical_and", np.logical_and), ("logical_or", np.logical_or),
                   ("logical_xor", np.logical_xor)):
    globals()[_name] = op(_name, methods=(_name,), kind="compare")(_logical(_uf, _name))


@op("logical_not", methods=("logical_not",), kind="compare")
def logical_not(input):
    """Elementwise not (zero is True); a bool tensor, no gradient."""
    return _wrap(np.logical_not(input._arr))


def _classify(ufunc, name, what):
    def fn(input):
        return _wrap(np.asarray(ufunc(input._arr)))
    fn.__name__ = name
    fn.__doc__ = f"Whether each element {what}; a bool tensor, no gradient."
    return fn


for _name, _uf, _what in (("isnan", np.isnan, "is NaN"),
                          ("isinf", np.isinf, "is infinite"),
                          ("isfinite", np.isfinite, "is finite (not NaN or infinite)")):
    globals()[_name] = op(_name, methods=(_name,), kind="compare")(
        _classify(_uf, _name, _what))


@op("nan_to_num", methods=("nan_to_num",), kind="unary")
def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """NaN, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf``
    (default 0 and the dtype's largest and lowest finite values); grad =
    g where x is finite, else 0.  An integer tensor is returned as a copy."""
    x = input._arr
    if x.dtype.kind != "f":
        return _wrap(np.array(x, copy=True))
    info = np.finfo(x.dtype)
    fill = np.where(np.isnan(x), np.asarray(nan if nan is not None else 0.0, x.dtype),
                    np.where(x > 0, np.asarray(info.max if posinf is None else posinf,
                                               x.dtype),
                             np.asarray(info.min if neginf is None else neginf,
                                        x.dtype)))
    return where(_wrap(np.isfinite(x)), input, _wrap(np.asarray(fill, x.dtype)))


# --- ternary composites --------------------------------------------------------------

def _float_only(name, kernel, *ts):
    for t in ts:
        if isinstance(t, TensorBase) and t._arr.dtype.kind != "f":
            raise NotImplementedError(
                f'"{kernel}" not implemented for \'{_scalar_type(t._arr.dtype)}\'')


class _LerpScalar(Function):
    """lerp of two tensors of one float dtype and shape with a number
    weight: one compiled pass with torch's fma roundings (``cg_ternary.h``);
    grad_input = g (1 - weight), grad_end = g weight, as torch's."""

    _node_name = "LerpBackward0"

    @staticmethod
    def forward(ctx, a, b, w):
        out = np.empty(a._arr.shape, a._arr.dtype)
        _select_k.axpy_fwd(np.ascontiguousarray(a._arr).reshape(-1),
                           np.ascontiguousarray(b._arr).reshape(-1), w, True,
                           out.reshape(-1))
        ctx.w = w
        return _wrap(out)

    @staticmethod
    def backward(ctx, g):
        w = ctx.w
        needs = ctx.needs_input_grad
        return (g * (1.0 - w) if needs[0] else None, g * w if needs[1] else None, None)


class _LerpTensor(Function):
    """lerp of three float tensors of one dtype and shape (a weight per
    element): torch's kernel and roundings (``cg_ternary.h``); grad_input =
    g (1 - weight), grad_end = g weight, grad_weight = g (end - input), as
    torch's."""

    _node_name = "LerpBackward1"

    @staticmethod
    def forward(ctx, a, b, w):
        out = np.empty(a._arr.shape, a._arr.dtype)
        flat = [np.ascontiguousarray(t._arr).reshape(-1) for t in (a, b, w)]
        _select_k.lerp_tensor_fwd(*flat, out.reshape(-1))
        needs = ctx.needs_input_grad
        ctx.save_for_backward(a if needs[2] else None, b if needs[2] else None,
                              w if needs[0] or needs[1] else None)
        return _wrap(out)

    @staticmethod
    def backward(ctx, g):
        a, b, w = ctx.saved_tensors
        needs = ctx.needs_input_grad
        return (g * (1 - w) if needs[0] else None, g * w if needs[1] else None,
                g * (b - a) if needs[2] else None)


@op("lerp", methods=("lerp",), kind="other")
def lerp(input, end, weight):
    """out = input + weight * (end - input) (weight a number or a tensor);
    grad_input = g * (1 - weight), grad_end = g * weight, grad_weight =
    g * (end - input).  torch switches to end - (end - input) * (1 - weight)
    where |weight| >= 0.5, for an exact end at weight 1; so does cygrad.
    Float tensors of one shape and a number weight or a weight tensor of
    that shape: torch's kernel (one fma per element, the same bits); anything
    else composes table ops."""
    _float_only("lerp", "lerp_kernel_scalar" if not isinstance(weight, TensorBase)
                else "lerp_kernel_tensor", input, end, weight)
    if isinstance(weight, (int, float)) and _same_float_pair(input, end):
        return _LerpScalar.apply(input, end, float(weight))
    if _same_float_pair(input, end) and _same_float_pair(input, weight):
        return _LerpTensor.apply(input, end, weight)
    diff = end - input
    if isinstance(weight, TensorBase):
        big = weight.abs() >= 0.5
        return where(big, end - diff * (1 - weight), input + weight * diff)
    if -0.5 < weight < 0.5:  # (abs is the row here)
        return input + weight * diff
    return end - diff * (1 - weight)


class _Addc(Function):
    """addcmul (addcdiv when ``div``) of three tensors of one float dtype and
    shape with a number value: one compiled pass with torch's roundings
    (``cg_ternary.h``); the gradients in torch's formulas and order."""

    @staticmethod
    def forward(ctx, s, t1, t2, value, div):
        out = np.empty(s._arr.shape, s._arr.dtype)
        flat = [np.ascontiguousarray(t._arr).reshape(-1) for t in (s, t1, t2)]
        _select_k.addc_fwd(*flat, value, div, out.reshape(-1))
        ctx.value, ctx.div = value, div
        # what the backward reads; torch's addcdiv node keeps tensor2 always
        # (its in-place change then fails backward, as torch's does)
        ctx.save_for_backward(t1 if ctx.needs_input_grad[2] else None,
                              t2 if ctx.needs_input_grad[1] or div else None)
        return _wrap(out)

    @staticmethod
    def backward(ctx, g):
        t1, t2 = ctx.saved_tensors
        v = ctx.value
        needs = ctx.needs_input_grad
        g1 = g2 = None
        if ctx.div:
            if needs[1]:
                g1 = g * (v / t2)
            if needs[2]:
                g2 = -g * ((v * t1) / (t2 * t2))
        else:
            if needs[1]:
                g1 = g * (t2 * v)
            if needs[2]:
                g2 = g * (t1 * v)
        return g if needs[0] else None, g1, g2, None, None


class _Addcmul(_Addc):
    _node_name = "AddcmulBackward0"


class _Addcdiv(_Addc):
    _node_name = "AddcdivBackward0"


def _fused_addc(input, tensor1, tensor2, value):
    """Three tensors of one float dtype and shape and a number value."""
    return (isinstance(value, (int, float)) and _same_float_pair(input, tensor1)
            and _same_float_pair(input, tensor2))


@op("addcmul", methods=("addcmul",), kind="other")
def addcmul(input, tensor1, tensor2, *, value=1):
    """out = input + value * tensor1 * tensor2 (broadcasting); the gradients
    are those of that expression.  Three float tensors of one shape and a
    number value: torch's kernel, fma(value * tensor1, tensor2, input)."""
    if _fused_addc(input, tensor1, tensor2, value):
        return _Addcmul.apply(input, tensor1, tensor2, float(value), False)
    prod = tensor1 * tensor2
    return input + (prod * value if value != 1 else prod)


@op("addcdiv", methods=("addcdiv",), kind="other")
def addcdiv(input, tensor1, tensor2, *, value=1):
    """out = input + value * tensor1 / tensor2 (broadcasting); integer
    tensor1 and tensor2 are refused, as torch refuses them.  Three float
    tensors of one shape and a number value: torch's kernel and order,
    input + (value * tensor1) / tensor2."""
    if all(isinstance(t, TensorBase) and t._arr.dtype.kind in "biu"
           for t in (tensor1, tensor2)):
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future "
            "release addcdiv will perform a true division of tensor1 and tensor2. "
            "The historic addcdiv behavior can be implemented as (input + value * "
            "torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and "
            "as (input + value * tensor1 / tensor2) for float inputs. The future "
            "addcdiv behavior is just the latter implementation: (input + value * "
            "tensor1 / tensor2), for all dtypes.")
    if _fused_addc(input, tensor1, tensor2, value):
        return _Addcdiv.apply(input, tensor1, tensor2, float(value), True)
    quot = tensor1 / tensor2
    return input + (quot * value if value != 1 else quot)
