"""Shape ops: dtype casts and copies, reshape/view, permute/transpose/movedim,
expand/broadcast_to, squeeze/unsqueeze (and their in-place forms), flatten,
flip, roll, cat and stack."""

import numpy as np

from cygrad import _memory_format as _mf
from cygrad import dtypes as _dt
from cygrad._device import check_device, device
from cygrad._kernels import engine as _engine
from cygrad._kernels.engine import TensorBase, _wrap
from cygrad._kernels.engine import permute_view as _permute_view
from cygrad._kernels.engine import view_shape as _view_shape
from cygrad._tensor import Tensor, _canon_dim
from cygrad.autograd.function import Function
from cygrad.ops.registry import (
    _dims,
    _ns,
    _register_view,
    _view_of,
    apply_named,
    named,
    op,
)

# --- dtype cast, clone, copy ---------------------------------------------------------------

class Cast(Function):
    """out = x as another dtype; grad = g cast back to x's dtype."""

    _half_native = True     # exact in float16 (see registry: float16)

    _node_name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx, x, dtype):
        ctx.src = x._arr.dtype
        return _wrap(x._arr.astype(dtype))

    @staticmethod
    def backward(ctx, g):
        if ctx.src.kind != "f":
            return None, None
        return g.to(ctx.src), None


def cast(x, dtype):
    return Cast.apply(x, _dt.to_numpy(dtype))


def parse_to(args, kwargs, name="to"):
    """torch's ``to`` arguments, for tensors and modules: ``to(dtype)``,
    ``to(device)``, ``to(device, dtype)``, ``to(tensor)`` (its dtype), the
    keywords ``device=``, ``dtype=``, ``non_blocking=``, ``copy=``,
    ``memory_format=``.  Returns ``(dtype or None, copy)``; a device other
    than the CPU raises AssertionError (cygrad runs on the CPU)."""
    kwargs = dict(kwargs)
    dtype = kwargs.pop("dtype", None)
    check_device(kwargs.pop("device", None))
    flags = [kwargs.pop("non_blocking", False), kwargs.pop("copy", False)]
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"{name}() got an unexpected keyword argument "
                        f"'{next(iter(kwargs))}'")
    positional_flags = []
    for a in args:
        if isinstance(a, TensorBase):
            dtype = a._arr.dtype
        elif isinstance(a, bool):
            positional_flags.append(a)
        elif isinstance(a, (str, int, device)):
            check_device(a)
        elif a is not None:
            dtype = a
    flags[:len(positional_flags)] = positional_flags
    return _dt.to_numpy(dtype) if dtype is not None else None, bool(flags[1])


def to(self, *args, **kwargs):
    """A copy in another dtype (differentiable), or the tensor itself when
    nothing changes; see ``parse_to`` for the arguments.  ``memory_format``
    lays the result out in that format (``cygrad._memory_format``)."""
    fmt = kwargs.get("memory_format")
    dtype, copy = parse_to(args, kwargs)
    alias = (dtype is None or dtype == self._arr.dtype) and not copy
    if alias and fmt is not None and _mf.suggest(self._arr) is fmt:
        fmt = None          # already in that format, as torch judges it
    if dtype is None or dtype == self._arr.dtype:
        out = self.clone(memory_format=fmt) if copy else self
    else:
        out = cast(self, dtype)
    if fmt is None or fmt is _mf.preserve_format:
        return out
    return contiguous(out, memory_format=fmt)


Tensor.to = to


class Clone(Function):
    """out = copy of x; grad = g."""

    _half_native = True     # exact in float16 (see registry: float16)

    _node_name = "CloneBackward0"

    @staticmethod
    def forward(ctx, x):
        return _wrap(np.array(x._arr, order="C", copy=True))

    @staticmethod
    def backward(ctx, g):
        return g


class Relayout(Function):
    """out = a copy of x laid out in a memory format; grad = g."""

    _node_name = "CloneBackward0"

    @staticmethod
    def forward(ctx, x, fmt):
        return _wrap(_mf.as_format(x._arr, fmt))

    @staticmethod
    def backward(ctx, g):
        return g, None


@op("clone", methods=("clone",), primitive=True, kind="shape")
def clone(input, memory_format=None):
    """A copy with its own storage; the gradient flows through unchanged.
    Row-major unless ``memory_format`` says otherwise (``preserve_format``
    keeps a dense tensor's stride order)."""
    if memory_format is None or memory_format is _mf.contiguous_format:
        return Clone.apply(input)
    return Relayout.apply(input, memory_format)


@op("contiguous", methods=("contiguous",), kind="shape")
def contiguous(input, memory_format=None):
    """``input`` itself when already laid out in ``memory_format`` (default
    row-major), else such a copy (grad = g)."""
    if memory_format in (None, _mf.contiguous_format, _mf.preserve_format):
        if input._arr.flags.c_contiguous:
            return input
        if memory_format is None or memory_format is _mf.contiguous_format:
            return Clone.apply(input)
        raise RuntimeError("preserve memory format is unsupported by the "
                           "contiguous operator")
    if _mf.is_format(input._arr, memory_format):
        return input
    return Relayout.apply(input, memory_format)


def _infer_shape(shape, n):
    if -1 not in shape:
        # the common case (every size given): one pass, no list copies
        known = 1
        for s in shape:
            if s < 0:
                raise RuntimeError(f"invalid shape dimension {s}")
            known *= s
        if known != n:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {n}")
        return tuple(shape)
    neg = -1
    known = 1
    for i, s in enumerate(shape):
        if s == -1:
            if neg >= 0:
                raise RuntimeError("only one dimension can be inferred")
            neg = i
        elif s < 0:
            raise RuntimeError(f"invalid shape dimension {s}")
        else:
            known *= s
    if known == 0 or n % known:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {n}")
    return shape[:neg] + (n // known,) + shape[neg + 1:]


def _shape_args(shape, name="view"):
    """The sizes of ``op(*shape)`` (or ``op(shape)``) as ints: ints and
    integer scalars (``__index__``), never floats or bools, as torch."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    try:
        sizes = tuple(map(_size_index, shape))     # map: no generator per call
    except TypeError:
        pos = next(i for i, s in enumerate(shape) if _bad_size(s))
        raise TypeError(
            f"{name}(): argument 'size' must be tuple of ints, but found element of "
            f"type {type(shape[pos]).__name__} at pos {pos}") from None
    for i, s in enumerate(sizes):
        if not -2 ** 63 <= s < 2 ** 63:
            raise TypeError(f"{name}(): argument 'size' failed to unpack the object at "
                            f"pos {i}: overflow when unpacking long long")
    return sizes


def _bad_size(s):
    return isinstance(s, bool) or not hasattr(type(s), "__index__")


def _size_index(s):
    if type(s) is int:
        return s
    if _bad_size(s):
        raise TypeError
    return s.__index__()


class Reshape(Function):
    """out = x with a new shape (a view when possible); grad = g reshaped back."""

    _half_native = True     # exact in float16 (see registry: float16)

    _node_name = "ViewBackward0"

    @staticmethod
    def forward(ctx, x, shape, strict_view):
        arr = x._arr
        ctx.in_shape = arr.shape
        if strict_view:
            # reshape copies exactly when no view has the new shape; setting
            # .shape (which refuses instead) is deprecated from NumPy 2.5.
            v = arr.reshape(shape)
            if v.size and not np.may_share_memory(v, arr):
                raise RuntimeError(
                    f"view size is not compatible with input tensor's size and "
                    f"stride (shape {list(arr.shape)} to {list(shape)}): at least "
                    "one dimension spans across two contiguous subspaces. Use "
                    ".reshape(...) instead.") from None
            return _view_of(x, v)
        v = arr.reshape(shape)
        if np.shares_memory(v, arr) if v.size else False:
            return _view_of(x, v)
        return _wrap(v)

    @staticmethod
    def backward(ctx, g):
        xp = _ns()
        return xp.out(xp.reshape(xp.val(g), ctx.in_shape)), None, None


def _sizes_keyword(shape, kwargs, key, name):
    """The sizes given positionally, or as the one keyword ``key``."""
    if not kwargs:
        return shape
    extra = [k for k in kwargs if k != key]
    if extra or shape:
        raise TypeError(f"{name}() got an unexpected keyword argument "
                        f"'{extra[0] if extra else key}'")
    return (kwargs[key],)


def _reshape(input, *shape, **kwargs):
    """out = x with shape ``shape`` (-1 inferred); a view when the layout allows."""
    shape = _sizes_keyword(shape, kwargs, "shape", "reshape")
    shape = _infer_shape(_shape_args(shape, "reshape"), input._arr.size)
    res = _view_shape(input, shape, None, _register_view)     # compiled, when a view
    if res is not None:
        return res
    res = Reshape.apply(input, shape, False)
    # a copy: torch's node is _unsafe_view's
    if res._base is None and input._arr.size:
        named(res, "UnsafeViewBackward0")
    return res


def _view(input, *shape, dtype=None, **kwargs):
    """Like reshape but always a view; error if the layout does not allow one.
    ``view(dtype)`` reinterprets the bytes as ``dtype`` (a view that does
    not require grad, as torch's); the last dim scales when the element
    sizes differ."""
    if dtype is not None or (len(shape) == 1 and isinstance(shape[0], (_dt.dtype, type,
                                                                   str))):
        if shape and dtype is not None:
            raise TypeError("view() received both sizes and a dtype")
        return _view_dtype(input, shape[0] if dtype is None else dtype)
    shape = _sizes_keyword(shape, kwargs, "size", "view")
    shape = _infer_shape(_shape_args(shape), input._arr.size)
    res = _view_shape(input, shape, None, _register_view)     # compiled, when a view
    return Reshape.apply(input, shape, True) if res is None else res


def _view_dtype(input, dtype):
    arr = input._arr
    d = _dt.to_numpy(dtype)
    src, dst = arr.dtype.itemsize, d.itemsize
    if src != dst:
        what = (f"to view {_dt.type_name(arr.dtype)[6:-6]} as "
                f"{_dt.type_name(d)[6:-6]} (different element sizes)")
        if arr.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 {what}")
        step = arr.strides[-1] // src
        if step != 1 and arr.shape[-1] != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {step}")
        if dst > src and arr.shape[-1] * src % dst:
            raise RuntimeError(f"self.size(-1) must be divisible by {dst // src} "
                               f"{what}, but got {arr.shape[-1]}")
        if step != 1:       # a last dim of 1 with another stride: NumPy wants 1
            arr = np.lib.stride_tricks.as_strided(
                arr, arr.shape, arr.strides[:-1] + (src,))
    return _engine.view_result(input, arr.view(d), _register_view)


# compiled for the common call (plain int sizes, a layout that allows a view)
_reshape.__name__ = _reshape.__qualname__ = "reshape"
_view.__name__ = _view.__qualname__ = "view"
reshape = op("reshape", methods=("reshape",), primitive=True, kind="shape")(
    _engine.shape_method(_reshape, _register_view))
view = op("view", methods=("view",), kind="shape")(
    _engine.shape_method(_view, _register_view))


@op("permute", methods=("permute",), primitive=True, kind="shape")
def permute(input, *dims):
    """Reorder the axes (a view); grad = g with the inverse permutation."""
    dims = _shape_args(dims, "permute")
    nd = input._arr.ndim
    if len(dims) != nd:
        raise RuntimeError(
            f"permute(sparse_coo): number of dimensions in the tensor input does not "
            f"match the length of the desired ordering of dimensions i.e. input.dim() "
            f"= {nd} is not equal to len(dims) = {len(dims)}")
    axes = tuple(_canon_dim(d, nd) for d in dims)
    if len(set(axes)) != nd:
        raise RuntimeError(f"permute(): duplicate dims are not allowed: {list(dims)}")
    return _permute_view(input, axes, None, _register_view)     # compiled


@op("transpose", methods=("transpose", "swapaxes", "swapdims"), kind="shape",
    aliases=("swapaxes", "swapdims"))
def transpose(input, dim0, dim1):
    """Swap two axes (a view)."""
    nd = input._arr.ndim
    if nd == 0:
        return input
    d0, d1 = _canon_dim(dim0, nd), _canon_dim(dim1, nd)
    axes = list(range(nd))
    axes[d0], axes[d1] = axes[d1], axes[d0]
    return _permute_view(input, tuple(axes), "TransposeBackward0", _register_view)


def _t(input):
    nd = input._arr.ndim
    if nd > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{nd}D")
    return _permute_view(input, (1, 0), "TBackward0", _register_view) if nd == 2 else input


Tensor.t = _t
t = _t


def _T(self):
    nd = self._arr.ndim
    if nd < 2:
        return self
    return _permute_view(self, tuple(reversed(range(nd))), None, _register_view)


Tensor.T = property(_T)
Tensor.mT = property(lambda self: transpose(self, -2, -1))


class Expand(Function):
    """out = x broadcast to ``shape`` (a view); grad = g summed back to x's shape."""

    _half_native = True     # exact in float16 (see registry: float16)

    _node_name = "ExpandBackward0"

    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = x._arr.shape
        return _view_of(x, np.broadcast_to(x._arr, shape))

    @staticmethod
    def backward(ctx, g):
        xp = _ns()
        return xp.out(xp.sum_to_shape(xp.val(g), ctx.in_shape)), None


@op("expand", methods=("expand",), primitive=True, kind="shape")
def expand(input, *sizes):
    """Broadcast size-1 axes to ``sizes`` (-1 keeps a size; a view); grad = g
    summed back to the input's shape."""
    sizes = _shape_args(sizes, "expand")
    shape = input._arr.shape
    if len(sizes) < len(shape):
        raise RuntimeError(
            f"expand: the number of sizes provided ({len(sizes)}) must be greater or "
            f"equal to the number of dimensions in the tensor ({len(shape)})")
    lead = len(sizes) - len(shape)
    out = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise RuntimeError(f"expand: -1 is not allowed in a leading, "
                                   f"non-existing dimension {i}")
            out.append(s)
            continue
        cur = shape[i - lead]
        if s == -1:
            s = cur
        if cur != s and cur != 1:
            raise RuntimeError(
                f"The expanded size of the tensor ({s}) must match the existing size "
                f"({cur}) at non-singleton dimension {i}.  Target sizes: "
                f"{list(sizes)}.  Tensor sizes: {list(shape)}")
        out.append(s)
    out = tuple(out)
    if out == shape:
        return input if not input._requires_grad else Expand.apply(input, out)
    return Expand.apply(input, out)


def expand_as(input, other):
    return expand(input, other._arr.shape)


Tensor.expand_as = expand_as


@op("squeeze", methods=("squeeze",), kind="shape")
def squeeze(input, dim=None):
    """Drop size-1 axes (all, or those in ``dim``); a view; grad = g reshaped."""
    shape = input._arr.shape
    if dim is None:
        new = tuple(s for s in shape if s != 1)
    else:
        axes = _dims(dim, input._arr.ndim) if input._arr.ndim else ()
        new = tuple(s for i, s in enumerate(shape) if not (i in axes and s == 1))
    name = "SqueezeBackward0" if dim is None else "SqueezeBackward1"
    res = _view_shape(input, new, name, _register_view)      # compiled, when a view
    return apply_named(Reshape, name, input, new, False) if res is None else res


@op("unsqueeze", methods=("unsqueeze",), kind="shape")
def unsqueeze(input, dim):
    """Insert a size-1 axis at ``dim`` (a view); grad = g reshaped."""
    nd = input._arr.ndim + 1
    if not -nd <= dim < nd:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], "
            f"but got {dim}) for unsqueeze of a tensor with {nd - 1} dimensions")
    d = dim % nd
    shape = list(input._arr.shape)
    shape.insert(d, 1)
    res = _view_shape(input, tuple(shape), "UnsqueezeBackward0", _register_view)
    if res is None:         # an empty tensor
        return apply_named(Reshape, "UnsqueezeBackward0", input, tuple(shape), False)
    return res


@op("flatten", methods=("flatten",), kind="shape")
def flatten(input, start_dim=0, end_dim=-1):
    """Merge axes ``start_dim..end_dim`` into one (a view when the layout
    allows); grad = g reshaped back."""
    shape = input._arr.shape
    if not shape:
        return Reshape.apply(input, (1,), False)
    s = _canon_dim(start_dim, len(shape))
    e = _canon_dim(end_dim, len(shape))
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after "
                           "end_dim")
    n = 1
    for d in shape[s:e + 1]:
        n *= d
    return Reshape.apply(input, shape[:s] + (n,) + shape[e + 1:], False)


# --- cat and stack -----------------------------------------------------------------------------

class Cat(Function):
    """out = the inputs joined along ``dim``; grad_i = the matching slice of g."""

    _half_native = True     # exact in float16 (see registry: float16)

    _node_name = "CatBackward0"

    @staticmethod
    def forward(ctx, dim, *xs):
        arrs = [x._arr for x in xs]
        ctx.dim = dim
        ctx.sizes = [a.shape[dim] for a in arrs]
        return _wrap(np.concatenate(arrs, axis=dim))

    @staticmethod
    def backward(ctx, g):
        dim = ctx.dim
        grads = []
        start = 0
        xp = _ns()
        for n in ctx.sizes:
            sl = (slice(None),) * dim + (slice(start, start + n),)
            grads.append(xp.out(xp.val(g)[sl]))
            start += n
        return (None, *grads)


def _as_tensor_list(tensors, name):
    if isinstance(tensors, TensorBase) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}(): argument 'tensors' must be a tuple or list of "
                        f"Tensors, not {type(tensors).__name__}")
    if len(tensors) == 0:
        raise RuntimeError(f"{name}(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if not isinstance(t, TensorBase):
            raise TypeError(f"{name}(): expected Tensor as element {i} in argument "
                            f"0, but got {type(t).__name__}")
    return list(tensors)


def _promote_all(tensors):
    dt = tensors[0]._arr.dtype
    for t in tensors:
        if t._arr.dtype != dt:
            break
    else:
        return tensors                  # one dtype (the usual case): no work
    for t in tensors[1:]:
        other = t._arr.dtype
        if other == dt:
            continue
        ck, ok = dt.kind == "f", other.kind == "f"
        if ck != ok:
            dt = dt if ck else other
        else:
            dt = np.result_type(dt, other)
    return [t if t._arr.dtype == dt else t.to(dt) for t in tensors]


def _cat(tensors, dim=0):
    """Join tensors along an existing ``dim`` (dtypes promoted as torch);
    each input's gradient is its slice of g.  1-D empty tensors are skipped,
    as torch's legacy rule."""
    tensors = _as_tensor_list(tensors, "cat")
    ref = tensors[0]
    if ref._arr.shape == (0,):
        for t in tensors:
            if t._arr.shape != (0,):
                ref = t
                break
    nd = ref._arr.ndim
    if nd == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be "
                           "concatenated")
    d = _canon_dim(dim, nd)
    rs = ref._arr.shape
    before, after = rs[:d], rs[d + 1:]
    keep = []
    for i, t in enumerate(tensors):
        s = t._arr.shape
        if s == (0,) and nd != 1:
            continue
        if len(s) != nd:
            raise RuntimeError(
                f"Tensors must have same number of dimensions: got {nd} and {len(s)} "
                f"(tensor number {i} in the list)")
        if s[:d] != before or s[d + 1:] != after:     # (tuple compares, no loop)
            k = next(k for k in range(nd) if k != d and s[k] != rs[k])
            raise RuntimeError(
                f"Sizes of tensors must match except in dimension {d}. Expected "
                f"size {rs[k]} but got size {s[k]} for tensor number {i} in the list.")
        keep.append(t)
    keep = _promote_all(keep)
    return Cat.apply(d, *keep)


_cat.__name__ = _cat.__qualname__ = "cat"
cat = op("cat", primitive=True, kind="join", aliases=("concat", "concatenate"))(
    _engine.join_method(_cat, False))     # compiled for the common call


class Stack(Function):
    """out = the inputs joined along a new axis ``dim``; grad_i = g[..., i, ...]
    (one node however many inputs: unsqueeze-then-cat made one per input)."""

    _node_name = "StackBackward0"

    @staticmethod
    def forward(ctx, dim, *xs):
        ctx.dim, ctx.n = dim, len(xs)
        return _wrap(np.stack([x._arr for x in xs], axis=dim))

    @staticmethod
    def backward(ctx, g):
        xp = _ns()
        gv = xp.val(g)
        lead = (slice(None),) * ctx.dim
        return (None, *[xp.out(gv[lead + (i,)]) for i in range(ctx.n)])


def _stack(tensors, dim=0):
    """Join equal-shaped tensors along a new ``dim``; grad_i = g's slice i."""
    tensors = _as_tensor_list(tensors, "stack")
    shape0 = tensors[0]._arr.shape
    for i, t in enumerate(tensors[1:], 1):
        if t._arr.shape != shape0:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got "
                f"{list(shape0)} at entry 0 and {list(t._arr.shape)} at entry {i}")
    nd = len(shape0) + 1
    if not -nd <= dim < nd:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], "
            f"but got {dim}) for stack of tensors with {nd - 1} dimensions")
    d = dim % nd
    return Stack.apply(d, *_promote_all(tensors))


_stack.__name__ = _stack.__qualname__ = "stack"
stack = op("stack", primitive=True, kind="join")(_engine.join_method(_stack, True))


# --- moving axes, broadcasting -------------------------------------------------------------

def _dim_list(dims, ndim):
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    return tuple(_canon_dim(d, ndim) for d in dims)


@op("movedim", methods=("movedim", "moveaxis"), kind="shape", aliases=("moveaxis",))
def movedim(input, source, destination):
    """Move the axes ``source`` to the positions ``destination`` (a view);
    the other axes keep their order."""
    nd = input._arr.ndim
    src, dst = _dim_list(source, nd), _dim_list(destination, nd)
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({list(src)} dims)"
            f" should contain the same number of dims as destination ({list(dst)} "
            "dims)")
    for name, ds in (("source", src), ("destination", dst)):
        if len(set(ds)) != len(ds):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({list(ds)})")
    order = [d for d in range(nd) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _permute_view(input, tuple(order), None, _register_view)


def _broadcast_shape(shapes):
    out = ()
    for shape in shapes:
        nd = max(len(out), len(shape))
        a = (1,) * (nd - len(out)) + tuple(out)
        b = (1,) * (nd - len(shape)) + tuple(shape)
        for i, (p, q) in enumerate(zip(a, b)):
            if p != q and p != 1 and q != 1:
                raise RuntimeError(f"The size of tensor a ({p}) must match the size "
                                   f"of tensor b ({q}) at non-singleton dimension {i}")
        out = tuple(q if p == 1 else p for p, q in zip(a, b))
    return out


@op("broadcast_to", methods=("broadcast_to",), kind="shape")
def broadcast_to(input, size):
    """``input`` expanded to ``size`` (a view; -1 keeps a size); grad = g
    summed back."""
    return expand(input, tuple(size))


@op("broadcast_tensors", kind="shape")
def broadcast_tensors(*tensors):
    """The tensors expanded to their common broadcast shape (views)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = _broadcast_shape([t._arr.shape for t in tensors])
    return tuple(expand(t, shape) for t in tensors)


def view_as(self, other):
    """``self.view(other.shape)``."""
    return view(self, other._arr.shape)


def reshape_as(self, other):
    """``self.reshape(other.shape)``."""
    return reshape(self, other._arr.shape)


def type_as(self, other):
    """``self`` in ``other``'s dtype (itself when it matches)."""
    return self.to(other._arr.dtype)


Tensor.view_as = view_as
Tensor.reshape_as = reshape_as
Tensor.type_as = type_as


# --- in-place metadata changes: squeeze_, unsqueeze_, t_, transpose_ ----------------------

def _restride_(self, make):
    """Give ``self`` the shape of ``make(self)`` in place (same storage); a
    non-leaf takes over the new node, so its history goes through the view."""
    from_grad = self._requires_grad and _engine.is_grad_enabled()
    if from_grad and self._grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an "
                           "in-place operation.")
    new = make(self)
    if from_grad:
        self._grad_fn = new._grad_fn
        self._out_nr = new._out_nr
    self._arr = new._arr
    return self


def _squeeze_(self, dim=None):
    """In-place ``squeeze``: the tensor itself with size-1 axes removed."""
    return _restride_(self, lambda t: squeeze(t, dim))


def _unsqueeze_(self, dim):
    """In-place ``unsqueeze``: the tensor itself with a size-1 axis at ``dim``."""
    return _restride_(self, lambda t: unsqueeze(t, dim))


def _t_(self):
    """In-place ``t()``: a 2-D tensor transposed (0-D and 1-D unchanged)."""
    return _restride_(self, _t)


def _transpose_(self, dim0, dim1):
    """In-place ``transpose``: ``dim0`` and ``dim1`` swapped."""
    return _restride_(self, lambda t: transpose(t, dim0, dim1))


Tensor.squeeze_ = _squeeze_
Tensor.unsqueeze_ = _unsqueeze_
Tensor.t_ = _t_
Tensor.transpose_ = _transpose_
Tensor.swapaxes_ = Tensor.swapdims_ = _transpose_


# --- flip and roll ---------------------------------------------------------------------------

class Flip(Function):
    """out = x reversed along ``axes`` (a copy, as torch); grad = g flipped back."""

    _node_name = "FlipBackward0"

    @staticmethod
    def forward(ctx, x, axes):
        ctx.axes = axes
        return _wrap(np.ascontiguousarray(np.flip(x._arr, axes)))

    @staticmethod
    def backward(ctx, g):
        return Flip.apply(g, ctx.axes), None


@op("flip", methods=("flip",), primitive=True, kind="shape")
def flip(input, dims):
    """Reverse the order of elements along ``dims`` (a copy); grad = g flipped."""
    nd = input._arr.ndim
    axes = _dim_list(dims, nd) if nd else ()
    for d in axes:
        if axes.count(d) > 1:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return Flip.apply(input, axes)


@op("fliplr", methods=("fliplr",), kind="shape")
def fliplr(input):
    """Reverse the columns (dim 1) of a tensor of at least 2 dims."""
    if input._arr.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


@op("flipud", methods=("flipud",), kind="shape")
def flipud(input):
    """Reverse the rows (dim 0) of a tensor of at least 1 dim."""
    if input._arr.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


class Roll(Function):
    """out = x rolled by ``shifts`` along ``axes`` (a copy); grad = g rolled back."""

    _node_name = "RollBackward0"

    @staticmethod
    def forward(ctx, x, shifts, axes):
        ctx.shifts, ctx.axes = shifts, axes
        return _wrap(np.roll(x._arr, shifts, axes))

    @staticmethod
    def backward(ctx, g):
        return Roll.apply(g, tuple(-s for s in ctx.shifts), ctx.axes), None, None


@op("roll", methods=("roll",), primitive=True, kind="shape")
def roll(input, shifts, dims=None):
    """Shift elements circularly by ``shifts`` along ``dims`` (int or tuple; the
    flattened tensor when None); grad = g rolled back."""
    shifts = (shifts,) if isinstance(shifts, int) else tuple(int(s) for s in shifts)
    if dims is None or (not isinstance(dims, int) and len(dims) == 0):
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: "
                               f"{len(shifts)}, dims:0")
        shape = input._arr.shape
        return reshape(Roll.apply(reshape(input, (-1,)), shifts, (0,)), shape)
    axes = _dim_list(dims, input._arr.ndim)
    if len(axes) != len(shifts):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}"
                           f", dims:{len(axes)}")
    return Roll.apply(input, shifts, axes)
