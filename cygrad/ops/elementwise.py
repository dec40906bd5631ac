"""The elementwise ops: every row of the op table (``_kernels/optable.py``)
registered in one loop, their derivatives over Tensors for
``create_graph=True``, and the comparisons and logical ops (no gradient)."""

import numpy as np

from cygrad._kernels import engine as _engine
from cygrad._kernels import optable as _optable
from cygrad._kernels.engine import TensorBase, _wrap
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
                other = other * alpha
            return binary(row.name, input, other)
        fn.__name__ = fn.__qualname__ = row.name
    else:
        fn = _engine.binary_method(row.name)
    fn.__doc__ = row.summary()
    return fn


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
              pow_grad_base=_pow_grad_base, pow_grad_exp=_pow_grad_exp)
    ns.setdefault("erf", _Erf.apply)   # unless the table has an erf row
    ns["phi"] = lambda x: 0.5 + 0.5 * ns["erf"](x * 0.7071067811865476)
    missing = set(_optable.HELPERS) - set(ns) - {"pick"}
    if missing:
        raise ImportError(f"op table helpers without a Tensor form: {missing}")
    unary = {r.name: eval(f"lambda g, x, y: {r.graph[0]}", ns) for r in _optable.UNARY}
    binary = {r.name: tuple(eval(f"lambda g, a, b, y: {e}", ns) for e in r.graph)
              for r in _optable.BINARY}
    return unary, binary


# --- comparisons and logical ops (no gradient) -------------------------------------------

def compare(a, other, ufunc):
    """Elementwise comparison with broadcasting; a bool tensor, never a gradient."""
    x = a._arr
    if isinstance(other, TensorBase):
        y = other._arr
    elif isinstance(other, (int, float, bool, np.number)):
        y = other
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


def _logical(ufunc, name):
    def fn(a, b):
        x = a._arr
        y = b._arr if isinstance(b, TensorBase) else b
        if x.dtype.kind == "f" or np.asarray(y).dtype.kind == "f":
            raise TypeError(f"{name} is only supported for integer and bool tensors")
        return _wrap(np.asarray(ufunc(x, y)))
    return fn


Tensor.__and__ = Tensor.__rand__ = _logical(np.bitwise_and, "&")
Tensor.__or__ = Tensor.__ror__ = _logical(np.bitwise_or, "|")
Tensor.__xor__ = Tensor.__rxor__ = _logical(np.bitwise_xor, "^")


def _invert(a):
    if a._arr.dtype.kind == "f":
        raise TypeError("~ (bitwise not) is only supported for integer and bool tensors")
    return _wrap(np.invert(a._arr))


Tensor.__invert__ = _invert


def logical_not(a):
    return _wrap(np.logical_not(a._arr))


Tensor.logical_not = logical_not
