"""Selection: ``where`` (compiled branch-free selects) and ``clamp``."""

import math

import numpy as np

from cygrad._kernels import engine as _engine
from cygrad._kernels import select as _select_k
from cygrad._kernels.engine import TensorBase, _wrap
from cygrad.autograd.function import Function
from cygrad.creation import get_default_dtype
from cygrad.creation import tensor as _make_tensor
from cygrad.ops.registry import _as_dtype, _ns, _NumpyNS, named, op, xp_helper

# --- selection ---------------------------------------------------------------------------

class Where(Function):
    """out = x where cond else y; grad_x = g * cond, grad_y = g * ~cond.

    The gradients are exact zeros on the unselected side, even where g is
    inf or NaN (torch's where(cond, grad, 0)).  Float inputs of the output's
    shape, or of one element, go through the compiled branch-free select
    (``_kernels/select.pyx``); other broadcasting and other dtypes use
    np.where.
    """

    _half_native = True     # exact in float16 (see registry: float16)

    _node_name = "WhereBackward0"

    @staticmethod
    def forward(ctx, cond, x, y):
        c, a, b = cond._arr, x._arr, y._arr
        ctx.cond = c
        ctx.flat = None
        if _where_fits(c, a, b):
            ctx.flat = c.reshape(-1).view(np.uint8)
            out = np.empty(c.shape, a.dtype)
            _select_k.where_fwd(ctx.flat, a.reshape(-1), b.reshape(-1),
                                out.reshape(-1))
            return _wrap(out)
        try:
            return _wrap(np.asarray(np.where(c, a, b)))
        except ValueError:
            raise RuntimeError(
                f"where: the shapes of condition {list(cond._arr.shape)}, input "
                f"{list(x._arr.shape)} and other {list(y._arr.shape)} do not "
                "broadcast") from None

    @staticmethod
    def backward(ctx, g):
        xp = _ns()
        need_x, need_y = ctx.needs_input_grad[1], ctx.needs_input_grad[2]
        if xp is _NumpyNS and ctx.flat is not None:
            garr = g._arr
            if garr.shape == ctx.cond.shape and garr.flags.c_contiguous and \
                    garr.dtype.type in _SELECT_DTYPES:
                gx = np.empty(garr.shape, garr.dtype) if need_x else None
                gy = np.empty(garr.shape, garr.dtype) if need_y else None
                _select_k.where_bwd(ctx.flat, garr.reshape(-1),
                                    None if gx is None else gx.reshape(-1),
                                    None if gy is None else gy.reshape(-1))
                return None, _NumpyNS.out(gx), _NumpyNS.out(gy)
        c = ctx.cond if xp is _NumpyNS else _wrap(ctx.cond)
        gv = xp.val(g)
        # torch's where(cond, grad, 0): an exact zero, even where grad is
        # inf or NaN; on arrays a scalar (no 4M-element zero array to fill).
        zero = gv.dtype.type(0) if xp is _NumpyNS else gv * 0
        gx = xp.out(_select(xp, c, gv, zero)) if need_x else None
        gy = xp.out(_select(xp, c, zero, gv)) if need_y else None
        return None, gx, gy


_SELECT_DTYPES = (np.float32, np.float64)   # the kernels' real_t


def _where_fits(c, a, b):
    """Whether the compiled select takes where(c, a, b): a C-contiguous bool
    mask of the output's shape, float a and b of one dtype, each C-contiguous
    with the mask's shape or a single element that does not add dimensions."""
    if c.dtype != np.bool_ or not c.flags.c_contiguous or a.dtype != b.dtype or \
            a.dtype.type not in _SELECT_DTYPES:
        return False
    shape, nd = c.shape, c.ndim
    for v in (a, b):        # a loop, not all() of a generator (0.6 us a call)
        if not ((v.shape == shape and v.flags.c_contiguous)
                or (v.size == 1 and v.ndim <= nd)):
            return False
    return True


def _select(xp, c, a, b):
    if xp is _NumpyNS:
        return np.where(c, a, b)
    return where(c, a, b)


_TORCH_NAMES = {"float16": "Half", "float32": "Float", "float64": "Double",
                "int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long"}


def _where_dtype(input, other):
    """torch's result type of where(c, input, other): tensors decide within
    their category; a Python scalar of a higher category (bool < int <
    float) gives that category's default (int64; the default float)."""
    if isinstance(input, TensorBase) and isinstance(other, TensorBase) and \
            input._arr.dtype == other._arr.dtype:
        return input._arr.dtype                         # the usual case
    tensors = [t._arr.dtype for t in (input, other) if isinstance(t, TensorBase)]
    scalars = [v for v in (input, other) if not isinstance(v, TensorBase)]
    rank = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}

    def scalar_rank(v):
        return 0 if isinstance(v, (bool, np.bool_)) else (
            1 if isinstance(v, (int, np.integer)) else 2)

    if tensors:
        hi = max(rank[d.kind] for d in tensors)       # float beats int, int bool
        dt = np.result_type(*[d for d in tensors if rank[d.kind] == hi])
        top = max((scalar_rank(v) for v in scalars), default=-1)
        if top > rank[dt.kind]:
            dt = np.dtype(np.int64) if top == 1 else get_default_dtype()
        return np.dtype(dt)
    top = max(scalar_rank(v) for v in scalars)
    return np.dtype((np.bool_, np.int64)[top]) if top < 2 else get_default_dtype()


@op("where", primitive=True, kind="select")
def where(condition, input=None, other=None):
    """Pick ``input`` where ``condition`` holds, else ``other`` (broadcasting).
    ``where(condition)`` alone is ``nonzero(condition, as_tuple=True)``."""
    if input is None and other is None:
        c = condition._arr if isinstance(condition, TensorBase) else np.asarray(
            condition)
        return tuple(_wrap(a) for a in np.nonzero(c.reshape(1) if c.ndim == 0 else c))
    if not isinstance(condition, TensorBase):
        condition = _make_tensor(condition)
    cdt = condition._arr.dtype
    if cdt != np.bool_:
        if cdt != np.uint8:       # torch also takes uint8 masks (deprecated)
            raise RuntimeError(
                "where expected condition to be a boolean tensor, but got a tensor "
                f"with dtype {_TORCH_NAMES.get(cdt.name, cdt)}")
        condition = _wrap(condition._arr.astype(bool))
    dt = _where_dtype(input, other)
    x = input if isinstance(input, TensorBase) else _wrap(np.asarray(input, dt))
    y = other if isinstance(other, TensorBase) else _wrap(np.asarray(other, dt))
    if x._arr.dtype != dt:
        x = x.to(dt)
    if y._arr.dtype != dt:
        y = y.to(dt)
    return Where.apply(condition, x, y)


xp_helper("where", np.where, where)


# --- clamp and integer-aware unary ops ------------------------------------------------------

def _int_clip(input, min, max):
    """clamp of an integer tensor by integer bounds: exact, no gradient."""
    lo = min._arr if isinstance(min, TensorBase) else min
    hi = max._arr if isinstance(max, TensorBase) else max
    out = input._arr
    if lo is not None:
        out = np.maximum(out, lo)
    if hi is not None:
        out = np.minimum(out, hi)
    return _wrap(np.asarray(out, dtype=np.result_type(out)))


def _is_int_bound(b):
    if b is None:
        return True
    if isinstance(b, TensorBase):
        return b._arr.dtype.kind in "iub"
    return isinstance(b, (int, np.integer)) and not isinstance(b, bool) or \
        isinstance(b, bool)


@op("clamp", methods=("clamp", "clip"), kind="unary", aliases=("clip",))
def clamp(input, min=None, max=None):
    """out = min(max(x, min), max); grad = g where min <= x <= max, else 0.

    Either bound may be None (not both), a number or a broadcastable tensor.
    At a bound the gradient passes (torch's rule); with min > max every
    element is ``max`` and no gradient reaches x.
    """
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not "
                           "be None")
    if input._arr.dtype.kind != "f" and _is_int_bound(min) and _is_int_bound(max):
        return _int_clip(input, min, max)
    if input._arr.dtype.kind == "f" and _plain_bound(min) and _plain_bound(max):
        # one number bound: the table's compiled op (0.5 us, the Function 3.8)
        if max is None:
            return named(_engine.binary("clamp_min", input, float(min)), "ClampBackward1")
        if min is None:
            return named(_engine.binary("clamp_max", input, float(max)), "ClampBackward1")
        return Clamp.apply(input, float(min), float(max))
    out = input
    if min is not None:
        out = _engine.binary("clamp_min", out, min)
    if max is not None:
        out = _engine.binary("clamp_max", out, max)
    return named(out, "ClampBackward0")


clip = clamp


def _plain_bound(b):
    return b is None or (isinstance(b, (int, float, np.integer, np.floating))
                         and not math.isnan(b))


class Clamp(Function):
    """out = min(max(x, lo), hi) for number bounds, one fused compiled pass;
    grad = g where lo <= x <= hi, else 0 (torch's boundary rule)."""

    _node_name = "ClampBackward1"

    @staticmethod
    def forward(ctx, x, lo, hi):
        arr = x._arr
        ctx.lo, ctx.hi = lo, hi
        src = np.ascontiguousarray(arr)
        out = np.empty(arr.shape, arr.dtype)
        _select_k.clamp_fwd(src.reshape(-1), lo, hi, out.reshape(-1))
        ctx.save_for_backward(x)
        return _wrap(out)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        xp = _ns()
        return xp.out(xp.clamp_grad(xp.val(x), xp.val(g), ctx.lo, ctx.hi)), None, None


def _clamp_grad_arrays(x, g, lo, hi):
    x = np.ascontiguousarray(x)
    g = np.ascontiguousarray(_as_dtype(g, x.dtype))
    out = np.empty(x.shape, x.dtype)
    _select_k.clamp_bwd(x.reshape(-1), g.reshape(-1), lo, hi, out.reshape(-1))
    return out


def _clamp_grad_tensors(x, g, lo, hi):
    return where((x >= lo) & (x <= hi), g, 0.0)


# grad = g where lo <= x <= hi, else 0 (one compiled pass on arrays).
xp_helper("clamp_grad", _clamp_grad_arrays, _clamp_grad_tensors)
