"""Shape ops: dtype casts and copies, reshape/view, permute/transpose,
expand, squeeze/unsqueeze, flatten, cat and stack."""

import numpy as np

from cygrad import dtypes as _dt
from cygrad._device import check_device, device
from cygrad._kernels.engine import TensorBase, _wrap
from cygrad._tensor import Tensor, _canon_dim
from cygrad.autograd.function import Function
from cygrad.ops.registry import _dims, _ns, _view_of, op

# --- dtype cast, clone, copy ---------------------------------------------------------------

class Cast(Function):
    """out = x as another dtype; grad = g cast back to x's dtype."""

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
    nothing changes; see ``parse_to`` for the arguments."""
    dtype, copy = parse_to(args, kwargs)
    if dtype is None or dtype == self._arr.dtype:
        return self.clone() if copy else self
    return cast(self, dtype)


Tensor.to = to


class Clone(Function):
    """out = copy of x; grad = g."""

    _node_name = "CloneBackward0"

    @staticmethod
    def forward(ctx, x):
        return _wrap(np.array(x._arr, order="C", copy=True))

    @staticmethod
    def backward(ctx, g):
        return g


@op("clone", methods=("clone",), primitive=True, kind="shape")
def clone(input, memory_format=None):
    """A copy with its own storage; the gradient flows through unchanged."""
    return Clone.apply(input)


@op("contiguous", methods=("contiguous",), kind="shape")
def contiguous(input, memory_format=None):
    """``input`` itself when C-contiguous, else a contiguous copy (grad = g)."""
    if input._arr.flags.c_contiguous:
        return input
    return Clone.apply(input)


def _infer_shape(shape, n):
    shape = list(shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise RuntimeError(f"invalid shape dimension {s}")
            known *= s
    if neg:
        if known == 0 or n % known:
            raise RuntimeError(f"shape '{shape}' is invalid for input of size {n}")
        shape[neg[0]] = n // known
    elif known != n:
        raise RuntimeError(f"shape '{shape}' is invalid for input of size {n}")
    return tuple(shape)


def _shape_args(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return tuple(int(s) for s in shape)


class Reshape(Function):
    """out = x with a new shape (a view when possible); grad = g reshaped back."""

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


@op("reshape", methods=("reshape",), primitive=True, kind="shape")
def reshape(input, *shape):
    """out = x with shape ``shape`` (-1 inferred); a view when the layout allows."""
    shape = _infer_shape(_shape_args(shape), input._arr.size)
    if shape == input._arr.shape:
        return Reshape.apply(input, shape, False)
    return Reshape.apply(input, shape, False)


@op("view", methods=("view",), kind="shape")
def view(input, *shape):
    """Like reshape but always a view; error if the layout does not allow one."""
    if len(shape) == 1 and not isinstance(shape[0], (tuple, list, int)):
        return input.to(shape[0])
    shape = _infer_shape(_shape_args(shape), input._arr.size)
    return Reshape.apply(input, shape, True)


class Permute(Function):
    """out = x with axes permuted (a view); grad = g with the inverse permutation."""

    _node_name = "PermuteBackward0"

    @staticmethod
    def forward(ctx, x, axes):
        ctx.inv = tuple(np.argsort(axes))
        return _view_of(x, np.transpose(x._arr, axes))

    @staticmethod
    def backward(ctx, g):
        xp = _ns()
        return xp.out(xp.transpose(xp.val(g), ctx.inv)), None


@op("permute", methods=("permute",), primitive=True, kind="shape")
def permute(input, *dims):
    """Reorder the axes (a view); grad = g with the inverse permutation."""
    dims = _shape_args(dims)
    nd = input._arr.ndim
    if len(dims) != nd:
        raise RuntimeError(
            f"permute(sparse_coo): number of dimensions in the tensor input does not "
            f"match the length of the desired ordering of dimensions i.e. input.dim() "
            f"= {nd} is not equal to len(dims) = {len(dims)}")
    axes = tuple(_canon_dim(d, nd) for d in dims)
    if len(set(axes)) != nd:
        raise RuntimeError(f"permute(): duplicate dims are not allowed: {list(dims)}")
    return Permute.apply(input, axes)


@op("transpose", methods=("transpose", "swapaxes"), kind="shape")
def transpose(input, dim0, dim1):
    """Swap two axes (a view)."""
    nd = input._arr.ndim
    if nd == 0:
        return input
    d0, d1 = _canon_dim(dim0, nd), _canon_dim(dim1, nd)
    axes = list(range(nd))
    axes[d0], axes[d1] = axes[d1], axes[d0]
    return Permute.apply(input, tuple(axes))


def _t(input):
    nd = input._arr.ndim
    if nd > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{nd}D")
    return transpose(input, 0, 1) if nd == 2 else input


Tensor.t = _t
t = _t


def _T(self):
    nd = self._arr.ndim
    if nd < 2:
        return self
    return Permute.apply(self, tuple(reversed(range(nd))))


Tensor.T = property(_T)
Tensor.mT = property(lambda self: transpose(self, -2, -1))


class Expand(Function):
    """out = x broadcast to ``shape`` (a view); grad = g summed back to x's shape."""

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
    sizes = _shape_args(sizes)
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
    return Reshape.apply(input, new, False)


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
    return Reshape.apply(input, tuple(shape), False)


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

    _node_name = "CatBackward0"

    @staticmethod
    def forward(ctx, dim, *xs):
        ctx.dim = dim
        ctx.sizes = [x._arr.shape[dim] for x in xs]
        return _wrap(np.concatenate([x._arr for x in xs], axis=dim))

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


@op("cat", primitive=True, kind="join")
def cat(tensors, dim=0):
    """Join tensors along an existing ``dim`` (dtypes promoted as torch);
    each input's gradient is its slice of g.  1-D empty tensors are skipped,
    as torch's legacy rule."""
    tensors = _as_tensor_list(tensors, "cat")
    ref = next((t for t in tensors if t._arr.shape != (0,)), tensors[0])
    nd = ref._arr.ndim
    if nd == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be "
                           "concatenated")
    d = _canon_dim(dim, nd)
    keep = []
    for i, t in enumerate(tensors):
        s = t._arr.shape
        if s == (0,) and nd != 1:
            continue
        if len(s) != nd:
            raise RuntimeError(
                f"Tensors must have same number of dimensions: got {nd} and {len(s)} "
                f"(tensor number {i} in the list)")
        for k in range(nd):
            if k != d and s[k] != ref._arr.shape[k]:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {d}. Expected "
                    f"size {ref._arr.shape[k]} but got size {s[k]} for tensor number "
                    f"{i} in the list.")
        keep.append(t)
    keep = _promote_all(keep)
    return Cat.apply(d, *keep)


concat = concatenate = cat


@op("stack", kind="join")
def stack(tensors, dim=0):
    """Join equal-shaped tensors along a new ``dim`` (unsqueeze, then cat)."""
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
    return Cat.apply(d, *[unsqueeze(t, d) for t in _promote_all(tensors)])
