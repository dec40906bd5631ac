"""Writes: ``copy_``, ``__setitem__``, the in-place ops, and the views of a
tensor that was rewritten."""

import numpy as np

from cygrad import dtypes as _dt
from cygrad._kernels import engine as _engine
from cygrad._kernels.optable import POWER_EXPONENTS as _POWER_EXPONENTS
from cygrad._kernels.engine import TensorBase, _alias, _wrap, is_grad_enabled
from cygrad._kernels.reduce import sum_to_shape as _np_sum_to_shape
from cygrad._tensor import Tensor
from cygrad.autograd.function import Function
from cygrad.creation import tensor as _make_tensor
from cygrad.ops import elementwise as _ew
from cygrad.ops.elementwise import clamp_max, clamp_min, relu
from cygrad.ops.indexing import GetItem, _adv_shape, _index_into, _norm_index
from cygrad.ops.registry import _no_grad, _ns, _prod, sum_to_shape, xp_helper
from cygrad.ops.select import clamp
from cygrad.ops.shape import clone, reshape


class CopyInto(Function):
    """self <- broadcast(src): grad_self = 0, grad_src = sum_to(g, src.shape)."""

    _half_native = True     # exact in float16 (see registry: float16)

    _node_name = "CopyBackwards"

    @staticmethod
    def forward(ctx, dst, src):
        ctx.src_shape = src._arr.shape
        ctx.src_dtype = src._arr.dtype
        np.copyto(dst._arr, src._arr, casting="unsafe")
        _engine._mark_inplace(dst, "copy_")
        ctx.mark_dirty(dst)
        return dst

    @staticmethod
    def backward(ctx, g):
        xp = _ns()
        gs = xp.sum_to_shape(xp.val(g), ctx.src_shape)
        zero = xp.val(g) * 0
        return xp.out(zero), xp.out(gs).to(ctx.src_dtype) if ctx.src_dtype.kind == "f" \
            else None


def copy_(dst, src):
    """Copy ``src`` into ``dst`` in place (broadcasting, casting)."""
    if not isinstance(src, TensorBase):
        src = _make_tensor(src, dtype=dst._arr.dtype)
    try:
        np.broadcast_shapes(src._arr.shape, dst._arr.shape)
        if np.broadcast_shapes(src._arr.shape, dst._arr.shape) != dst._arr.shape:
            raise ValueError
    except ValueError:
        raise RuntimeError(
            f"The size of tensor a ({list(dst._arr.shape)}) must match the size of "
            f"tensor b ({list(src._arr.shape)}): copy_ cannot broadcast the source "
            "to the destination") from None
    dst._writable_check("copy_")
    _engine._check_inplace(dst, "copy_")
    root = _root(dst)
    if is_grad_enabled() and (dst._requires_grad or src._requires_grad
                              or root._requires_grad):
        if root is not dst:
            return _write(dst, (Ellipsis,), None, src, "copy_")
        CopyInto.apply(dst, src)
        _regenerate_views(dst)
        return dst
    np.copyto(dst._arr, src._arr, casting="unsafe")
    _engine._mark_inplace(dst, "copy_")
    return dst


def full_like_const(t, value):
    return _wrap(np.full(t._arr.shape, value, t._arr.dtype))


def fill_(self, value):
    """Fill with ``value`` in place (a number or a one-element tensor)."""
    if isinstance(value, TensorBase):
        if value._arr.size != 1:
            raise RuntimeError(
                "fill_ only supports 0-dimension value tensor but got tensor "
                f"with {value._arr.ndim} dimensions")
        if value._requires_grad and _engine.is_grad_enabled():
            return copy_(self, value.expand(self.shape))
        value = value._arr.reshape(()).item()
    self._writable_check("fill_")
    _engine._check_inplace(self, "fill_")
    if _engine.is_grad_enabled() and self._requires_grad:
        return copy_(self, full_like_const(self, value))
    self._arr[...] = value
    _engine._mark_inplace(self, "fill_")
    return self

def _copy_method(self, src, non_blocking=False):
    """Copy ``src`` (broadcast) into this tensor in place."""
    return copy_(self, src)


Tensor.fill_ = fill_
Tensor.copy_ = _copy_method


def _view_ids(view_arr, root):
    """Flat C-order positions in ``root`` of every element of ``view_arr``."""
    base = root._arr
    if view_arr.size == 0:
        return np.zeros(view_arr.shape, np.int64)
    if not base.flags.c_contiguous:
        raise RuntimeError(
            "cygrad cannot differentiate an in-place write through a view of a "
            f"tensor whose storage is not C-contiguous (base shape {list(base.shape)},"
            " strides "
            f"{list(base.strides)}); clone() the base first")
    item = base.itemsize
    off = (view_arr.__array_interface__["data"][0]
           - base.__array_interface__["data"][0])
    strides = view_arr.strides
    if off % item or any(s % item for s in strides):
        raise RuntimeError("cygrad cannot map this view onto its base's elements")
    ids = np.arange(base.size, dtype=np.int64)
    return np.lib.stride_tricks.as_strided(
        ids[off // item:], view_arr.shape, tuple(s // item * 8 for s in strides),
        writeable=False)


class _Gather(Function):
    """out = x.flat[ids]; grad = zeros with g added at ids (scatter-add)."""

    _half_native = True     # exact in float16 (see registry: float16)

    _node_name = "AsStridedBackward0"

    @staticmethod
    def forward(ctx, x, ids, arr):
        ctx.ids, ctx.shape = ids, x._arr.shape
        return _wrap(arr if arr is not None else x._arr.reshape(-1)[ids])

    @staticmethod
    def backward(ctx, g):
        return _ScatterAdd.apply(g, ctx.ids, ctx.shape), None, None


class _ScatterAdd(Function):
    """out = zeros(shape); out.flat[ids] += g (repeats add); grad = gg.flat[ids]."""

    _half_native = True     # exact in float16 (see registry: float16)

    _node_name = "ScatterAddBackward0"

    @staticmethod
    def forward(ctx, g, ids, shape):
        ctx.ids = ids
        n = _prod(shape)
        flat = np.bincount(ids.reshape(-1), weights=g._arr.reshape(-1), minlength=n)
        return _wrap(flat.astype(g._arr.dtype, copy=False).reshape(shape))

    @staticmethod
    def backward(ctx, gg):
        return _Gather.apply(gg, ctx.ids, None), None, None


def _regenerate_views(root):
    """Point every live view of ``root`` at root's current history."""
    views = root.__dict__.get("_views")
    if not views or not root._requires_grad:
        return
    for ref in list(views):
        v = ref()
        if v is None:
            continue
        ids = _view_ids(v._arr, root)
        o = _Gather.apply(root, ids, v._arr)
        v._grad_fn = o._grad_fn
        v._out_nr = 0
        v._requires_grad = True


class IndexPut(Function):
    """self[idx] = value, in place (the last of repeated indices wins);
    grad_self = g with the written region zeroed, grad_value = g[idx] (every
    repeat gathered) summed to value's shape."""

    _half_native = True     # exact in float16 (see registry: float16)

    _node_name = "IndexPutBackward1"

    @staticmethod
    def forward(ctx, dst, value, basic, adv):
        ctx.basic, ctx.adv = basic, adv
        ctx.vshape = value._arr.shape
        ctx.shape = dst._arr.shape
        _assign(dst._arr, basic, adv, value._arr)
        _engine._mark_inplace(dst, "index_put_")
        ctx.mark_dirty(dst)
        return dst

    @staticmethod
    def backward(ctx, g):
        xp = _ns()
        gv = xp.val(g)
        kept = np.ones(ctx.shape, bool)      # False on the overwritten region
        _assign(kept, ctx.basic, ctx.adv, False)
        # A select, not g * mask: an inf or NaN gradient there gives 0.
        return (xp.out(xp.where(xp.const(kept), gv, 0.0)),
                xp.out(xp.index_sum_to(gv, ctx.basic, ctx.adv, ctx.vshape)), None,
                None)


def _assign(arr, basic, adv, value):
    """arr[basic][adv] = value (NumPy broadcasting; the last repeat wins)."""
    view = arr[basic]
    if adv is None:
        view[...] = value
    else:
        view[adv] = value


def _index_sum_to_arrays(g, basic, adv, shape):
    return _sum_to(_index_into(g, basic, adv), shape)


def _index_sum_to_tensors(g, basic, adv, shape):
    return sum_to_shape(GetItem.apply(g, basic, adv), shape)


# g[idx] summed to ``shape``: the gradient of the value written by
# ``x[idx] = value``.
xp_helper("index_sum_to", _index_sum_to_arrays, _index_sum_to_tensors)


class CopySlices(Function):
    """root.flat[region] = value (a write through a view), in place;
    grad_root = g with the region zeroed, grad_value = g.flat[region] summed
    to value's shape."""

    _half_native = True     # exact in float16 (see registry: float16)

    _node_name = "CopySlices"

    @staticmethod
    def forward(ctx, root, value, region):
        ctx.region = region
        ctx.vshape = value._arr.shape
        ctx.shape = root._arr.shape
        root._arr.reshape(-1)[region] = np.broadcast_to(value._arr, region.shape)
        _engine._mark_inplace(root, "copy_slices")
        ctx.mark_dirty(root)
        return root

    @staticmethod
    def backward(ctx, g):
        xp = _ns()
        gv = xp.val(g)
        kept = np.ones(_prod(ctx.shape), bool)    # False on the written region
        kept[ctx.region] = False
        return (xp.out(xp.where(xp.const(kept.reshape(ctx.shape)), gv, 0.0)),
                xp.out(xp.flat_sum_to(gv, ctx.region, ctx.vshape)), None)


def _flat_sum_to_arrays(g, region, shape):
    return _sum_to(g.reshape(-1)[region], shape)


def _flat_sum_to_tensors(g, region, shape):
    return sum_to_shape(_Gather.apply(reshape(g, -1), region, None), shape)


# g.flat[region] summed to ``shape``: the gradient of the value written
# through a view.
xp_helper("flat_sum_to", _flat_sum_to_arrays, _flat_sum_to_tensors)


def _sum_to(a, shape):
    """NumPy ``a`` summed to ``shape``, C-contiguous, 0-d kept 0-d."""
    return np.array(_np_sum_to_shape(np.asarray(a), tuple(shape)), order="C",
                    copy=True).reshape(shape)


def _value_tensor(value, dtype, shape):
    """``value`` as a tensor of ``dtype`` that broadcasts to ``shape``."""
    if isinstance(value, TensorBase):
        v = value
        if v._arr.dtype != dtype:
            v = v.to(dtype) if dtype.kind == "f" or not v._requires_grad else \
                _wrap(v._arr.astype(dtype))
    else:
        try:
            v = _wrap(np.asarray(value, dtype=dtype))
        except (TypeError, ValueError):
            raise TypeError(f"can't assign a {type(value).__name__} to a "
                            f"{_dt.name(dtype)} tensor") from None
    lead = 0
    while v._arr.ndim - lead > len(shape) and v._arr.shape[lead] == 1:
        lead += 1   # torch drops leading 1s: z[1] = t of shape (1,) is allowed
    if lead:
        v = reshape(v, v._arr.shape[lead:])
    try:
        ok = np.broadcast_shapes(v._arr.shape, shape) == tuple(shape)
    except ValueError:
        ok = False
    if not ok:
        raise RuntimeError(
            f"shape mismatch: value tensor of shape {list(v._arr.shape)} cannot be "
            f"broadcast to indexing result of shape {list(shape)}")
    return v


def _root(t):
    return t._base if t._base is not None else t


def _write(dst, basic, adv, value, opname):
    """dst[basic][adv] = value with every check done before anything is
    written (the index's bounds and mask shapes were checked by
    ``_norm_index``)."""
    arr = dst._arr
    view = arr[basic]
    shape = view.shape if adv is None else _adv_shape(view.shape, adv)
    v = _value_tensor(value, arr.dtype, shape)
    if v._ver is dst._ver:
        # The source aliases the destination (``x[i] += 1`` writes x[i] back
        # into itself): read it from a copy, with its history.
        v = clone(v)
    _check_overlap(dst)
    dst._writable_check(opname)
    _engine._check_inplace(dst, opname)
    root = _root(dst)
    need = is_grad_enabled() and (root._requires_grad or dst._requires_grad
                                  or v._requires_grad)
    if not need:
        _assign(arr, basic, adv, v._arr)
        _engine._mark_inplace(dst, opname)
        return dst
    if root is dst:
        IndexPut.apply(dst, v, basic, adv)
        _regenerate_views(dst)
        return dst
    region = _view_ids(dst._arr, root)[basic]
    if region.size and np.unique(region).size != region.size:
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor "
            "refers to a single memory location. Please clone() the tensor before "
            "performing the operation.")
    # Repeats of an advanced index may name one element twice: the last wins.
    region = np.ascontiguousarray(region if adv is None else region[adv])
    CopySlices.apply(root, v, region)
    _regenerate_views(root)
    return dst


def setitem(self, index, value):
    """``self[index] = value`` in place (value broadcast and cast to self's
    dtype), version-counted; differentiable as torch's index_put_/CopySlices.
    Any index ``getitem`` takes; with repeated indices the last write wins."""
    basic, adv = _norm_index(index, self._arr.shape)
    _write(self, basic, adv, value, "setitem")


Tensor.__setitem__ = setitem


def _snapshot(t):
    """A copy of t's values that carries t's current history (for an op
    computed out of place and written back)."""
    old = _alias(t, np.array(t._arr, copy=True), False)
    old._grad_fn = t._grad_fn
    old._out_nr = t._out_nr
    old._requires_grad = t._requires_grad
    if t._grad_fn is None:
        old._acc = t._acc
    return old


def _inplace_apply(t, fn, opname, other=None):
    """t <- fn(t) in place, with torch's autograd rules for bases and views.

    ``other``: the op's tensor operand, if any.  When it requires grad the
    write joins the graph even if neither ``t`` nor its base does (else
    ``view.add_(w)`` dropped w's gradient silently).
    """
    _check_overlap(t)
    t._writable_check(opname)
    root = _root(t)
    if is_grad_enabled() and (t._requires_grad or root._requires_grad or (
            isinstance(other, TensorBase) and other._requires_grad)):
        _engine._check_inplace(t, opname)
        res = fn(_snapshot(t))
        if res._arr.dtype != t._arr.dtype and res._arr.dtype.kind == "f" and \
                t._arr.dtype.kind != "f":
            raise RuntimeError(f"result type {_dt.name(res._arr.dtype)} can't be "
                               f"cast to the desired output type "
                               f"{_dt.name(t._arr.dtype)} ({opname})")
        return _write(t, (Ellipsis,), None, res, opname)
    with _no_grad():
        res = fn(t)
    if res._arr.dtype.kind == "f" and t._arr.dtype.kind != "f":
        raise RuntimeError(f"result type {_dt.name(res._arr.dtype)} can't be cast to "
                           f"the desired output type {_dt.name(t._arr.dtype)} "
                           f"({opname})")
    _engine._check_inplace(t, opname)
    np.copyto(t._arr, res._arr, casting="unsafe")
    _engine._mark_inplace(t, opname)
    return t


def clamp_(input, min=None, max=None):
    """In-place ``clamp`` (see ``clamp`` for the gradient)."""
    return _inplace_apply(input, lambda t: clamp(t, min, max), "clamp_")


def clamp_min_(input, min):
    return _inplace_apply(input, lambda t: clamp_min(t, min), "clamp_min_")


def clamp_max_(input, max):
    return _inplace_apply(input, lambda t: clamp_max(t, max), "clamp_max_")


def relu_(input):
    """In-place ``relu`` (relu'(0) = 0, as torch's ``relu_``)."""
    return _inplace_apply(input, relu, "relu_")


Tensor.clamp_ = Tensor.clip_ = clamp_
Tensor.relu_ = relu_
Tensor.clamp_min_ = clamp_min_
Tensor.clamp_max_ = clamp_max_


def _internal_overlap(arr):
    """True when two elements of ``arr`` share memory (an expanded view).

    An empty array has no elements to share (NumPy gives its copies 0 strides).
    """
    if arr.size <= 1 or arr.flags.c_contiguous:     # the common case, cheaply
        return False
    return any(st == 0 and n > 1 for st, n in zip(arr.strides, arr.shape))


def _check_overlap(t):
    if _internal_overlap(t._arr):
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor "
            "refers to a single memory location. Please clone() the tensor before "
            "performing the operation.")


def _through_view(self, other):
    """True when an in-place op on ``self`` must rebase a base's history."""
    root = self._base
    return root is not None and is_grad_enabled() and (
        root._requires_grad or self._requires_grad or (
            isinstance(other, TensorBase) and other._requires_grad))


def _after_inplace(self):
    # Cheap tests first: optimizer updates run under no_grad on plain leaves.
    if self._requires_grad and is_grad_enabled() and "_views" in self.__dict__:
        _regenerate_views(self)


def _view_aware_inplace(name, opname, self, other):
    """The in-place operators (``+= -= *= /=``) when the compiled one defers:
    writes through a view of a tensor in the graph go through CopySlices; a
    base's other views are regenerated."""
    if not isinstance(other, (TensorBase, int, float, bool, np.number)):
        return NotImplemented
    _check_overlap(self)
    if _through_view(self, other):
        return _inplace_apply(self, lambda t: _engine.binary(name, t, other),
                              opname, other)
    res = _engine.inplace_binary(name, self, other, opname)
    _after_inplace(self)
    return res


def _add_alpha_(self, other, alpha, name, opname):
    """``add_``/``sub_`` with alpha on two float tensors of one shape:
    torch's single rounding (``elementwise._add_alpha``), written straight
    into a contiguous self outside the graph (an optimizer's ``p.add_(g,
    alpha=-lr)``); else through the out-of-place op and the graph's rules."""
    a = -float(alpha) if name == "sub" else float(alpha)
    arr, src = self._arr, other._arr
    if (not _through_view(self, other) and arr.flags.c_contiguous
            and not (is_grad_enabled() and (self._requires_grad or other._requires_grad))
            and (src is arr or not np.may_share_memory(arr, src))):
        _check_overlap(self)
        self._writable_check(opname)
        _engine._check_inplace(self, opname)
        _ew._add_alpha(arr, src, a, out=arr)
        _engine._mark_inplace(self, opname)
        _after_inplace(self)
        return self
    return _inplace_apply(self, lambda t: getattr(_ew, name)(t, other, alpha=alpha),
                          opname, other)


def _view_aware_method(name, opname, alpha):
    """``add_``/``sub_``/``mul_``/``div_`` with the same view handling."""
    def method(self, other):
        if isinstance(other, (TensorBase, int, float, bool, np.number)):
            _check_overlap(self)
            if _through_view(self, other):
                return _inplace_apply(
                    self, lambda t: _engine.binary(name, t, other), opname, other)
        res = _engine.inplace_binary(name, self, other, opname)
        _after_inplace(self)
        return res

    if alpha:
        def fn(self, other, alpha=1):
            if alpha != 1:
                if _ew._same_float_pair(self, other) and isinstance(alpha, (int, float)):
                    return _add_alpha_(self, other, alpha, name, opname)
                other = other * alpha
            return method(self, other)
    else:
        fn = method
    fn.__name__ = opname
    fn.__doc__ = f"In-place ``{name}`` (broadcasting ``other`` to self's shape)."
    return fn
Tensor.add_ = _view_aware_method("add", "add_", True)
Tensor.sub_ = _view_aware_method("sub", "sub_", True)
Tensor.mul_ = _view_aware_method("mul", "mul_", False)
Tensor.div_ = _view_aware_method("div", "div_", False)


# --- in-place forms of the elementwise math ------------------------------------------
# Each is its out-of-place op written back through ``_inplace_apply`` (views,
# the graph's rules, the refusal of a float result in an integer tensor).

# The op table's unary rows (and aliases) that torch has an in-place form of.
UNARY_INPLACE = (
    "neg", "negative", "exp", "log", "log1p", "log2", "log10", "expm1", "rsqrt",
    "tanh", "sigmoid", "relu", "sqrt", "abs", "absolute", "sin", "cos", "square",
    "sinh", "cosh", "tan", "asin", "arcsin", "acos", "arccos", "atan", "arctan",
    "asinh", "arcsinh", "acosh", "arccosh", "atanh", "arctanh", "sign", "floor",
    "ceil", "round", "trunc", "fix", "reciprocal", "erf", "erfc", "erfinv", "exp2",
    "nan_to_num", "logical_not")
# Binary rows with an in-place form (add_/sub_/mul_/div_ are above): the
# method's name, the row and whether it takes alpha=.
BINARY_INPLACE = (("pow", "pow", False), ("remainder", "remainder", False),
                  ("fmod", "fmod", False), ("floor_divide", "floor_divide", False),
                  ("atan2", "atan2", False), ("arctan2", "atan2", False),
                  ("hypot", "hypot", False), ("subtract", "sub", True),
                  ("multiply", "mul", False), ("true_divide", "div", False))
# Ops outside the table that torch also writes in place.
OTHER_INPLACE = ("bitwise_and", "bitwise_or", "bitwise_xor", "logical_and",
                 "logical_or", "logical_xor", "lerp", "addcmul", "addcdiv")


def _unary_inplace(name, fn):
    opname = name + "_"

    def method(self, *args, **kwargs):
        return _inplace_apply(self, lambda t: fn(t, *args, **kwargs), opname)
    method.__name__ = opname
    method.__doc__ = f"In-place ``{name}``."
    return method


def _shaped_inplace(name, fn):
    """An op with operands broadcast to self's shape, written into self."""
    opname = name + "_"

    def method(self, *args, **kwargs):
        shapes = [tuple(a.shape) for a in args if isinstance(a, TensorBase)]
        shape = np.broadcast_shapes(self._arr.shape, *shapes)
        if shape != self._arr.shape:
            raise RuntimeError(
                f"output with shape {list(self._arr.shape)} doesn't match the "
                f"broadcast shape {list(shape)}")
        other = next((a for a in args if isinstance(a, TensorBase)
                      and a._requires_grad), None)
        return _inplace_apply(self, lambda t: fn(t, *args, **kwargs), opname, other)
    method.__name__ = opname
    method.__doc__ = f"In-place ``{name}`` (operands broadcast to self's shape)."
    return method


def _install_inplace():
    for name in UNARY_INPLACE:
        setattr(Tensor, name + "_", _unary_inplace(name, getattr(_ew, name)))
    for name, row, alpha in BINARY_INPLACE:
        setattr(Tensor, name + "_", _view_aware_method(row, name + "_", alpha))
    for name in OTHER_INPLACE:
        setattr(Tensor, name + "_", _shaped_inplace(name, getattr(_ew, name)))
    true_div_ = Tensor.div_
    rounded_div_ = _shaped_inplace("div", _ew.div)
    pow_tensor_ = Tensor.pow_

    def pow_(self, exponent):
        """In-place ``pow``; torch's special exponents (x ** 3 is x * x * x)
        as in ``x ** k``."""
        if type(exponent) in (int, float) and exponent in _POWER_EXPONENTS:
            return _inplace_apply(self, lambda t: t ** exponent, "pow_")
        return pow_tensor_(self, exponent)
    Tensor.pow_ = Tensor.__ipow__ = pow_

    def div_(self, other, *, rounding_mode=None):
        """In-place ``div`` (``rounding_mode`` as ``div``)."""
        if rounding_mode is None:
            return true_div_(self, other)
        return rounded_div_(self, other, rounding_mode=rounding_mode)
    Tensor.div_ = Tensor.divide_ = div_


_install_inplace()
