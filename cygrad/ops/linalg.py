"""Matrix products (BLAS through NumPy): ``matmul`` and the named products
built on it (``dot``, ``mv``, ``outer``, ``bmm``, the ``add*`` family,
``kron``, ``tensordot``, ``cross``, ``matrix_power``), ``einsum`` (one
Function for any equation), ``cdist`` and ``linalg.vector_norm``.

The named products are composites of ``matmul`` and the elementwise ops, so
their gradients (and second derivatives) are those of the primitives.
``einsum``, ``cdist`` and ``vector_norm`` are primitives: their backwards
are written once against ``xp``.  The decompositions are in ``decomp``."""

import math
import warnings

import numpy as np

from cygrad import dtypes as _dt
from cygrad._kernels import engine as _engine
from cygrad._kernels.bmm import matmul as _bmm_matmul
from cygrad._kernels.engine import TensorBase, _wrap
from cygrad._kernels.optim import vector_norm as _flat_norm
from cygrad._tensor import Tensor, _canon_dim
from cygrad.autograd.function import Function
from cygrad.ops.registry import OPS, _ns, _NumpyNS, _TensorNS, op, xp_helper

# --- matmul ---------------------------------------------------------------------------------

class Matmul(Function):
    """out = a @ b (BLAS); grad_a = g @ b^T, grad_b = a^T @ g (batch dims summed)."""

    _node_name = "MmBackward0"

    @staticmethod
    def forward(ctx, a, b):
        x, y = a._arr, b._arr
        if x.ndim == 0 or y.ndim == 0:
            raise RuntimeError(
                "both arguments to matmul need to be at least 1D, but they are "
                f"{x.ndim}D and {y.ndim}D")
        k_a = x.shape[-1]
        k_b = y.shape[-2] if y.ndim > 1 else y.shape[0]
        if k_a != k_b:
            sa = "x".join(map(str, x.shape))
            sb = "x".join(map(str, y.shape))
            raise RuntimeError(
                f"mat1 and mat2 shapes cannot be multiplied ({sa} and {sb}): the "
                f"inner sizes {k_a} and {k_b} differ")
        try:
            if x.ndim > 2 and y.ndim == 2:   # a stack times a matrix: one GEMM
                out = np.matmul(x.reshape(-1, k_a), y).reshape(
                    x.shape[:-1] + y.shape[1:])
            else:
                out = _bmm_matmul(x, y)     # stacks of small matrices compiled
        except ValueError as e:
            raise RuntimeError(f"matmul: batch dimensions do not broadcast: shapes "
                               f"{list(x.shape)} and {list(y.shape)} ({e})") from None
        # Save only what backward reads (as torch): a for grad_b, b for grad_a;
        # else an in-place change of an input that needs no gradient raised
        # the version error where torch does not.
        needs = ctx.needs_input_grad
        ctx.save_for_backward(a if needs[1] else None, b if needs[0] else None)
        ctx.shapes = (x.shape, y.shape)
        return _wrap(np.asarray(out))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return _matmul_grads(_ns(), g, a, b, *ctx.shapes, *ctx.needs_input_grad)


def _matmul_grads(xp, g, a, b, sx, sy, need_a, need_b):
    """grad_a = g @ b^T, grad_b = a^T @ g for a @ b of shapes ``sx`` and
    ``sy``: vectors taken as matrices (a (k,) as (1, k), b (k,) as (k, 1)),
    broadcast batch dimensions summed back.  ``a`` is read only for grad_b,
    ``b`` only for grad_a.  The one matmul backward: Matmul's, and the
    compiled 2-D node's under create_graph (its fast path is this rule's
    2-D case as two BLAS calls)."""
    if len(sx) > 2 and len(sy) == 2:
        # a stack times a matrix, folded into one GEMM each way (as torch
        # does), instead of one GEMM per matrix and a sum over the stack
        g2 = xp.reshape(xp.val(g), (-1, sy[1]))
        ga = gb = None
        if need_a:
            ga = xp.reshape(xp.matmul(g2, xp.swapaxes(xp.val(b), 0, 1)), sx)
        if need_b:
            x2 = xp.reshape(xp.val(a), (-1, sx[-1]))
            gb = xp.matmul(xp.swapaxes(x2, 0, 1), g2)
        return xp.out(ga), xp.out(gb)
    sx2 = (1,) + sx if len(sx) == 1 else sx
    sy2 = sy + (1,) if len(sy) == 1 else sy
    out_shape = np.broadcast_shapes(sx2[:-2], sy2[:-2]) + (sx2[-2], sy2[-1])
    g2 = xp.reshape(xp.val(g), out_shape)
    ga = gb = None
    if need_a:
        y2 = xp.reshape(xp.val(b), sy2)
        ga = xp.matmul(g2, xp.swapaxes(y2, -1, -2))
        ga = xp.reshape(xp.sum_to_shape(ga, sx2), sx)
    if need_b:
        x2 = xp.reshape(xp.val(a), sx2)
        gb = xp.matmul(xp.swapaxes(x2, -1, -2), g2)
        gb = xp.reshape(xp.sum_to_shape(gb, sy2), sy)
    return xp.out(ga), xp.out(gb)


@op("matmul", methods=("matmul",), primitive=True, kind="matmul")
def matmul(input, other):
    """Matrix product with torch's 1-D and batched-broadcast rules (BLAS)."""
    if not isinstance(other, TensorBase) or not isinstance(input, TensorBase):
        raise TypeError("matmul(): arguments must be Tensors, got "
                        f"{type(input).__name__} and {type(other).__name__}")
    res = _engine.matmul_2d(input, other)       # 2-D floats: compiled
    if res is not None:
        return res
    if input._arr.dtype != other._arr.dtype:
        if input._arr.dtype.kind == "f" and other._arr.dtype.kind == "f":
            raise RuntimeError(
                f"expected m1 and m2 to have the same dtype, but got: "
                f"{_dt.name(input._arr.dtype)} != {_dt.name(other._arr.dtype)}")
    return Matmul.apply(input, other)


def _matmul_graph_backward(g, a, b, need_a, need_b):
    """The compiled 2-D node's backward over Tensors (create_graph=True);
    it saves a only when b needs a gradient, b only when a does."""
    m, n = g.shape
    sx = tuple(a.shape) if a is not None else (m, b.shape[0])
    sy = tuple(b.shape) if b is not None else (a.shape[1], n)
    return _matmul_grads(_TensorNS, g, a, b, sx, sy, need_a, need_b)


mm = matmul
Tensor.mm = matmul
Tensor.__matmul__ = matmul
Tensor.__rmatmul__ = lambda self, other: matmul(other, self)


# --- named products (composites of matmul) ------------------------------------------

def _check_tensors(fname, **named):
    for name, t in named.items():
        if not isinstance(t, TensorBase):
            raise TypeError(f"{fname}(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")


def _check_same_dtype(fname, a, b):
    if a._arr.dtype != b._arr.dtype:
        raise RuntimeError(
            f"{fname}: expected both arguments to have the same dtype, but found "
            f"{_dt.name(a._arr.dtype)} and {_dt.name(b._arr.dtype)}")


@op("dot", methods=("dot",), kind="linalg")
def dot(input, tensor):
    """Inner product of two 1-D tensors of equal length and dtype."""
    _check_tensors("dot", input=input, tensor=tensor)
    a, b = input._arr, tensor._arr
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D "
                           "tensors")
    if a.shape != b.shape:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{a.size}] and src "
            f"[{b.size}] to have the same number of elements, but got {a.size} and "
            f"{b.size} elements respectively")
    if a.dtype != b.dtype:
        raise RuntimeError(
            f"dot : expected both vectors to have same dtype, but found "
            f"{_dt.name(a.dtype)} and {_dt.name(b.dtype)}")
    return matmul(input, tensor)


@op("vdot", methods=("vdot",), kind="linalg")
def vdot(input, other):
    """``dot`` (cygrad has no complex numbers to conjugate)."""
    return dot(input, other)


@op("mv", methods=("mv",), kind="linalg")
def mv(input, vec):
    """Matrix (n, m) times vector (m,)."""
    _check_tensors("mv", input=input, vec=vec)
    a, v = input._arr, vec._arr
    if a.ndim != 2 or v.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {a.ndim}, "
                           f"{v.ndim}")
    if a.shape[1] != v.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({a.shape[0]}), mat "
                           f"({a.shape[0]}x{a.shape[1]}), vec ({v.shape[0]})")
    _check_same_dtype("mv", input, vec)
    return matmul(input, vec)


@op("outer", methods=("outer", "ger"), kind="linalg", aliases=("ger",))
def outer(input, vec2):
    """Outer product of two 1-D tensors: out[i, j] = input[i] * vec2[j]."""
    _check_tensors("outer", input=input, vec2=vec2)
    for name, t in (("input", input), ("vec2", vec2)):
        if t._arr.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got "
                               f"{t._arr.ndim}-D")
    return input.unsqueeze(1) * vec2.unsqueeze(0)


def _check_bmm(fname, b1, b2):
    x, y = b1._arr, b2._arr
    if x.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if y.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if y.shape[:2] != (x.shape[0], x.shape[2]):
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: "
            f"[{x.shape[0]}, {x.shape[2]}] but got: [{y.shape[0]}, {y.shape[1]}].")
    _check_same_dtype(fname, b1, b2)


@op("bmm", methods=("bmm",), kind="linalg")
def bmm(input, mat2):
    """Batched matrix product: (b, n, m) @ (b, m, p) -> (b, n, p), no broadcasting."""
    _check_tensors("bmm", input=input, mat2=mat2)
    _check_bmm("bmm", input, mat2)
    return matmul(input, mat2)


def _scaled_sum(fname, input, prod, beta, alpha):
    """beta * input + alpha * prod, ``input`` broadcast to ``prod``'s shape;
    beta == 0 ignores input (its NaN and inf too), as torch."""
    shape = tuple(prod._arr.shape)
    try:
        if np.broadcast_shapes(input._arr.shape, shape) != shape:
            raise ValueError
    except ValueError:
        raise RuntimeError(
            f"{fname}: the expanded size of the tensor ({list(input._arr.shape)}) "
            f"must match the product's size {list(shape)} (torch: The expanded size "
            f"of the tensor must match the existing size)") from None
    out = prod if alpha == 1 else prod * alpha
    if beta == 0:
        return out
    return out + (input if beta == 1 else input * beta)


@op("addmm", methods=("addmm",), kind="linalg")
def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """beta * input + alpha * (mat1 @ mat2); ``input`` broadcasts to (n, p)."""
    _check_tensors("addmm", input=input, mat1=mat1, mat2=mat2)
    if mat1._arr.ndim != 2 or mat2._arr.ndim != 2:
        raise RuntimeError(f"addmm: mat1 and mat2 must be matrices, got "
                           f"{mat1._arr.ndim}-D and {mat2._arr.ndim}-D")
    return _scaled_sum("addmm", input, mm(mat1, mat2), beta, alpha)


@op("addmv", methods=("addmv",), kind="linalg")
def addmv(input, mat, vec, *, beta=1, alpha=1):
    """beta * input + alpha * (mat @ vec)."""
    _check_tensors("addmv", input=input, mat=mat, vec=vec)
    return _scaled_sum("addmv", input, mv(mat, vec), beta, alpha)


@op("baddbmm", methods=("baddbmm",), kind="linalg")
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * bmm(batch1, batch2); ``input`` broadcasts."""
    _check_tensors("baddbmm", input=input, batch1=batch1, batch2=batch2)
    return _scaled_sum("baddbmm", input, bmm(batch1, batch2), beta, alpha)


@op("addbmm", methods=("addbmm",), kind="linalg")
def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * sum_b batch1[b] @ batch2[b]."""
    _check_tensors("addbmm", input=input, batch1=batch1, batch2=batch2)
    return _scaled_sum("addbmm", input, bmm(batch1, batch2).sum(0), beta, alpha)


@op("kron", methods=("kron",), kind="linalg")
def kron(input, other):
    """Kronecker product; the shorter shape is padded with leading ones."""
    _check_tensors("kron", input=input, other=other)
    nd = max(input._arr.ndim, other._arr.ndim)
    a = input.reshape((1,) * (nd - input._arr.ndim) + tuple(input._arr.shape))
    b = other.reshape((1,) * (nd - other._arr.ndim) + tuple(other._arr.shape))
    sa, sb = a._arr.shape, b._arr.shape
    # a[i0, 1, i1, 1, ...] * b[1, j0, 1, j1, ...] then merge each (i, j) pair
    a2 = a.reshape(tuple(x for s in sa for x in (s, 1)))
    b2 = b.reshape(tuple(x for s in sb for x in (1, s)))
    return (a2 * b2).reshape(tuple(x * y for x, y in zip(sa, sb)))


def _tensordot_dims(dims, na, nb):
    if isinstance(dims, TensorBase):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > na or dims > nb:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got "
                               f"dims={dims}")
        return list(range(na - dims, na)), list(range(dims))
    da, db = dims
    da = [da] if isinstance(da, int) else list(da)
    db = [db] if isinstance(db, int) else list(db)
    if len(da) != len(db):
        raise RuntimeError(f"both dimension lists should have same length, got "
                           f"{len(da)} and {len(db)}")
    return [d % na for d in da], [d % nb for d in db]


@op("tensordot", methods=(), kind="linalg")
def tensordot(a, b, dims=2, out=None):
    """Contract the dims ``dims`` of ``a`` with those of ``b`` (an int: the
    last ``dims`` of a with the first of b; or two lists)."""
    _check_tensors("tensordot", a=a, b=b)
    sa, sb = a._arr.shape, b._arr.shape
    da, db = _tensordot_dims(dims, len(sa), len(sb))
    for i, j in zip(da, db):
        if sa[i] != sb[j]:
            raise RuntimeError(f"contracted dimensions need to match, but first has "
                               f"size {sa[i]} in dim {i} and second has size {sb[j]} "
                               f"in dim {j}")
    free_a = [i for i in range(len(sa)) if i not in da]
    free_b = [j for j in range(len(sb)) if j not in db]
    k = math.prod(sa[i] for i in da)
    a2 = a.permute(free_a + da).reshape(math.prod(sa[i] for i in free_a), k)
    b2 = b.permute(db + free_b).reshape(k, math.prod(sb[j] for j in free_b))
    out_shape = tuple(sa[i] for i in free_a) + tuple(sb[j] for j in free_b)
    return matmul(a2, b2).reshape(out_shape)


def _cross_along(input, other, dim):
    """a x b along ``dim`` of the broadcast shape (which must have size 3)."""
    shape = np.broadcast_shapes(input._arr.shape, other._arr.shape)
    d = _canon_dim(dim, len(shape))
    if input._arr.shape[d] != 3 or other._arr.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length "
                           f"3. Got {input._arr.shape[d]} and {other._arr.shape[d]}")
    a, b = input.expand(shape), other.expand(shape)

    def part(t, i):
        return t[(slice(None),) * d + (slice(i, i + 1),)]

    a0, a1, a2 = part(a, 0), part(a, 1), part(a, 2)
    b0, b1, b2 = part(b, 0), part(b, 1), part(b, 2)
    return OPS["cat"].fn([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], d)


@op("cross", methods=("cross",), kind="linalg")
def cross(input, other, dim=None):
    """Cross product of 3-vectors along ``dim`` (default: the first dim of
    size 3, as torch's deprecated default; ``linalg.cross`` uses -1)."""
    _check_tensors("cross", input=input, other=other)
    if input._arr.ndim != other._arr.ndim:
        raise RuntimeError(f"linalg.cross: inputs must have the same number of "
                           f"dimensions. Got {input._arr.ndim} and {other._arr.ndim}")
    try:
        shape = np.broadcast_shapes(input._arr.shape, other._arr.shape)
    except ValueError:
        raise RuntimeError(f"linalg.cross: the shapes {list(input._arr.shape)} and "
                           f"{list(other._arr.shape)} do not broadcast") from None
    if dim is None:
        warnings.warn(
            "Using torch.cross without specifying the dim arg is deprecated.\nPlease "
            "either pass the dim explicitly or simply use torch.linalg.cross.\nThe "
            "default value of dim will change to agree with that of linalg.cross in "
            "a future release.", UserWarning, stacklevel=2)
        sizes3 = [i for i, s in enumerate(shape) if s == 3]
        if not sizes3:
            raise RuntimeError("no dimension of size 3 in input")
        dim = sizes3[0]
    return _cross_along(input, other, dim)


# --- einsum ---------------------------------------------------------------------------

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


class Einsum(Function):
    """out = einsum(spec, *xs), ``spec`` explicit (no ellipsis, sizes equal).

    grad_i = einsum of the gradient with every other operand, written to
    operand i's subscripts: a subscript repeated in operand i (a diagonal)
    gets a fresh letter tied to the first by an identity matrix, and one
    that appears nowhere else (summed out) gets a vector of ones.  The same
    rule serves every equation, and over Tensors it is einsum again, so
    second derivatives follow."""

    @staticmethod
    def forward(ctx, spec, *xs):
        ctx.spec = spec
        ctx.save_for_backward(*xs)
        ctx.sizes = {}
        ins = spec.split("->")[0].split(",")
        for sub, x in zip(ins, xs):
            ctx.sizes.update(zip(sub, x._arr.shape))
        arrs = [x._arr for x in xs]
        out = np.asarray(np.einsum(spec, *arrs, optimize=True), order="C")
        ctx.out_shape = out.shape
        return _wrap(out)

    @staticmethod
    def backward(ctx, g):
        xp = _ns()
        xs = ctx.saved_tensors
        ins, out_sub = ctx.spec.split("->")
        ins = ins.split(",")
        used = set(ctx.spec)
        grads = [None]
        for i, sub in enumerate(ins):
            if not ctx.needs_input_grad[i + 1]:
                grads.append(None)
                continue
            fresh = iter(c for c in _LETTERS if c not in used)
            terms, ops = [out_sub], [xp.reshape(xp.val(g), ctx.out_shape)]
            for j, other in enumerate(ins):
                if j != i:
                    terms.append(other)
                    ops.append(xp.val(xs[j]))
            elsewhere = set(out_sub).union(*(ins[j] for j in range(len(ins)) if j != i))
            dtype = xs[i]._arr.dtype
            target, seen = [], set()
            for c in sub:
                if c in seen:                 # a diagonal: delta(c, new)
                    new = next(fresh)
                    target.append(new)
                    terms.append(c + new)
                    ops.append(xp.const(np.eye(ctx.sizes[c], dtype=dtype)))
                    continue
                seen.add(c)
                target.append(c)
                if c not in elsewhere:        # summed out: broadcast back
                    terms.append(c)
                    ops.append(xp.const(np.ones(ctx.sizes[c], dtype=dtype)))
            eq = ",".join(terms) + "->" + "".join(target)
            grads.append(xp.out(xp.einsum(eq, *ops)))
        return tuple(grads)


def _np_einsum(eq, *arrs):
    return np.asarray(np.einsum(eq, *arrs, optimize=True), order="C")


xp_helper("einsum", _np_einsum, lambda eq, *ts: einsum(eq, *ts))


def _sublist_equation(args):
    """einsum(op0, sub0, op1, sub1, ..., [out]) -> (equation, operands)."""
    ops, subs = list(args[0::2]), list(args[1::2])
    out = None
    if len(ops) > len(subs):       # the trailing output sublist
        out = ops.pop()
        if isinstance(out, TensorBase):
            ops.append(out)
            out = None

    def letters(sub):
        return "".join("..." if s is Ellipsis else _LETTERS[int(s)] for s in sub)

    eq = ",".join(letters(s) for s in subs)
    if out is not None:
        eq += "->" + letters(out)
    return eq, ops


def _parse_einsum(equation, n_ops, shapes):
    """The explicit equation (ellipses spelled out) and each letter's size."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) > n_ops:
        raise RuntimeError("einsum(): fewer operands were provided than specified "
                           "in the equation")
    if len(terms) < n_ops:
        raise RuntimeError("einsum(): more operands were provided than specified "
                           "in the equation")
    for c in eq:
        if c not in _LETTERS and c not in ".,->":
            raise RuntimeError(f"einsum(): invalid subscript given at index "
                               f"{eq.index(c)} in the equation string, subscripts "
                               "must be in [a-zA-Z]")
    used = {c for c in eq if c in _LETTERS}
    spare = [c for c in _LETTERS if c not in used]
    ell_len = 0
    for t, shape in zip(terms, shapes):
        n_sub = len(t.replace("...", ""))
        if "..." in t:
            ell_len = max(ell_len, len(shape) - n_sub)
        elif n_sub != len(shape):
            raise RuntimeError(
                f"einsum(): the number of subscripts in the equation ({n_sub}) does "
                f"not match the number of dimensions ({len(shape)}) for operand "
                f"{terms.index(t)} and no ellipsis was given")
    if ell_len > len(spare):
        raise RuntimeError("einsum(): too many dimensions for the subscripts a-zA-Z")
    ell = "".join(spare[:ell_len])
    explicit = []
    for t, shape in zip(terms, shapes):
        if "..." in t:
            k = len(shape) - len(t.replace("...", ""))
            if k < 0:
                raise RuntimeError(
                    f"einsum(): the number of subscripts in the equation "
                    f"({len(t) - 3}) is more than the number of dimensions "
                    f"({len(shape)}) for operand {len(explicit)}")
            t = t.replace("...", ell[ell_len - k:])
        explicit.append(t)
    if arrow:
        out = rhs.replace("...", ell)
        for c in out:
            if out.count(c) > 1:
                raise RuntimeError(f"einsum(): output subscript {c} appears more "
                                   "than once in the output")
            if not any(c in t for t in explicit):
                raise RuntimeError(f"einsum(): output subscript {c} does not appear "
                                   "in the equation for any input operand")
    else:
        counts = {}
        for t in terms:
            for c in t.replace("...", ""):
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, k in counts.items() if k == 1))
    sizes = {}
    for i, (t, shape) in enumerate(zip(explicit, shapes)):
        mine = {}
        for c, s in zip(t, shape):
            if c in mine and mine[c] != s:
                raise RuntimeError(f"einsum(): subscript {c} is repeated for operand "
                                   f"{i} but the sizes don't match, {s} != {mine[c]}")
            mine[c] = s
            prev = sizes.get(c, 1)
            if s != prev and s != 1 and prev != 1:
                raise RuntimeError(
                    f"einsum(): subscript {c} has size {s} for operand {i} which "
                    f"does not broadcast with previously seen size {prev}")
            sizes[c] = max(prev, s)
    return ",".join(explicit) + "->" + out, explicit, sizes


@op("einsum", kind="linalg", primitive=True)
def einsum(*args):
    """Einstein summation: ``einsum("ij,jk->ik", a, b)``, also with the
    operands in one list, with ``...`` (broadcast batch dims), implicit
    output (the letters used once, sorted), repeated letters (diagonals) and
    the sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])``.  Subscripts of
    size 1 broadcast.  Forward: NumPy's einsum (contraction order optimised);
    backward: einsum again, one rule for any equation (see ``Einsum``)."""
    if not args:
        raise TypeError("einsum(): missing the equation")
    if isinstance(args[0], str):
        equation, ops = args[0], list(args[1:])
        if len(ops) == 1 and isinstance(ops[0], (list, tuple)):
            ops = list(ops[0])
    else:
        equation, ops = _sublist_equation(args)
    for k, t in enumerate(ops):
        if not isinstance(t, TensorBase):
            raise TypeError(f"einsum(): operand {k} must be a Tensor, not "
                            f"{type(t).__name__}")
    if len({t._arr.dtype for t in ops}) > 1:
        names = [_dt.name(t._arr.dtype) for t in ops]
        raise RuntimeError(f"einsum(): expected all operands to have the same dtype, "
                           f"but got {names}")
    spec, terms, sizes = _parse_einsum(equation, len(ops), [t._arr.shape for t in ops])
    expanded = []
    for t, sub in zip(ops, terms):
        want = tuple(sizes[c] for c in sub)
        expanded.append(t if tuple(t._arr.shape) == want else t.expand(want))
    return Einsum.apply(spec, *expanded)


# --- cdist, vector_norm ----------------------------------------------------------

def _norm_grad(xp, diff, diff_v, n_arr, n_v, ord, g_keep):
    """d ||diff||_ord / d diff times g, broadcast over the reduced dims; 0
    where the norm is 0 (torch's subgradient).  ``diff``/``n_arr`` are the
    arrays (for masks and signs), ``diff_v``/``n_v`` the values the formula
    differentiates (Tensors under create_graph), ``n`` in kept shape."""
    dtype = diff.dtype
    nz = n_arr != 0
    sign = xp.const(np.sign(diff).astype(dtype))
    if ord == 0:
        return diff_v * 0.0
    if ord == 1:
        return sign * g_keep
    if math.isinf(ord):
        hit = (np.abs(diff) == n_arr) & nz
        axes = tuple(i for i, s in enumerate(n_arr.shape)
                     if s == 1 and diff.shape[i] != 1)
        count = np.maximum(hit.sum(axis=axes, keepdims=True), 1)
        return sign * xp.const((hit / count).astype(dtype)) * g_keep
    safe_n = n_v + xp.const((~nz).astype(dtype))
    mask = xp.const(nz.astype(dtype))
    if ord == 2:
        return diff_v / safe_n * g_keep * mask
    a = abs(diff_v)
    if ord < 2:     # |x|^(p-2) blows up at 0, where sign(x) |x|^(p-1) is 0
        safe_a = a + xp.const((np.abs(diff) == 0).astype(dtype))
        term = sign * safe_a ** (ord - 1)
    else:
        term = diff_v * a ** (ord - 2)
    return term / safe_n ** (ord - 1) * g_keep * mask


class VectorNorm(Function):
    """n = (sum |x|^p)^(1/p) over ``dims`` (p = inf: max |x|, 0: count of
    nonzeros);  grad = g sign(x) |x|^(p-1) / n^(p-1), 0 where n is 0; for
    inf the gradient is split among the tied maxima."""

    _node_name = "LinalgVectorNormBackward0"

    @staticmethod
    def forward(ctx, x, ord, dims, keepdim):
        xa = x._arr
        if (len(dims) == xa.ndim and xa.dtype.type in (np.float32, np.float64)
                and xa.flags.c_contiguous):
            # every element: one compiled pass summing in double (NumPy's
            # |x|, power and sum took three passes and 2.7x torch's time)
            with np.errstate(over="ignore"):
                n = np.full((1,) * xa.ndim, _flat_norm(xa.reshape(-1), ord), xa.dtype)
            return VectorNorm._finish(ctx, x, n, ord, dims, keepdim)
        if ord == 2:
            n = _sum_squares(xa, dims)
            np.sqrt(n, out=n)
            return VectorNorm._finish(ctx, x, n, ord, dims, keepdim)
        a = np.abs(xa)
        if ord == math.inf:
            n = a.max(axis=dims, keepdims=True) if a.size else np.zeros(
                _kept(a.shape, dims), a.dtype)
        elif ord == -math.inf:
            n = a.min(axis=dims, keepdims=True)
        elif ord == 0:
            n = (a != 0).sum(axis=dims, keepdims=True).astype(a.dtype)
        elif ord == 1:
            n = a.sum(axis=dims, keepdims=True)
        elif ord == 2:
            n = np.sqrt(np.sum(a * a, axis=dims, keepdims=True))
        else:
            with np.errstate(divide="ignore"):
                n = np.sum(a ** ord, axis=dims, keepdims=True) ** (1.0 / ord)
        return VectorNorm._finish(ctx, x, n, ord, dims, keepdim)

    @staticmethod
    def _finish(ctx, x, n, ord, dims, keepdim):
        n = n.astype(x._arr.dtype, copy=False)
        ctx.ord, ctx.dims, ctx.n_keep = ord, dims, n
        out = _wrap(np.asarray(n if keepdim else np.squeeze(n, axis=dims), order="C"))
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        xp = _ns()
        x, out = ctx.saved_tensors
        kept = ctx.n_keep.shape
        g_keep = xp.reshape(xp.val(g), kept)
        n_v = xp.reshape(xp.val(out), kept)
        if ctx.ord == 0:        # a count: no gradient at all (torch: None)
            return None, None, None, None
        return (xp.out(_norm_grad(xp, x._arr, xp.val(x), ctx.n_keep, n_v, ctx.ord,
                                  g_keep)), None, None, None)


def _sum_squares(a, dims):
    """sum(a * a) over ``dims``, keepdims, in a's dtype: one BLAS dot for a
    whole contiguous float64 array (pairwise sums otherwise, so float32
    keeps its accuracy)."""
    if len(dims) == a.ndim and a.dtype == np.float64 and a.flags.c_contiguous:
        flat = a.reshape(-1)
        return np.full((1,) * a.ndim, np.dot(flat, flat), a.dtype)
    return np.sum(a * a, axis=dims, keepdims=True)


def _kept(shape, dims):
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


def _vector_dims(dim, ndim):
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, int):
        dim = (dim,)
    out = tuple(_canon_dim(d, ndim) for d in dim)
    if len(set(out)) != len(out):
        raise RuntimeError(f"dim {list(dim)} appears multiple times in the list of "
                           "dims")
    return out


@op("linalg_vector_norm", kind="linalg")
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """The ``ord``-norm of ``x`` over ``dim`` (default: all elements as one
    vector): ord a number, ``inf`` or ``-inf``."""
    return _vector_norm(VectorNorm, x, ord, dim, keepdim, dtype)


class DistNorm(VectorNorm):
    """``torch.dist``'s norm of the difference: VectorNorm's node, under the
    name torch gives dist's (``DistBackward0``)."""

    _node_name = "DistBackward0"


def _vector_norm(node, x, ord, dim, keepdim, dtype):
    _check_tensors("linalg.vector_norm", x=x)
    if isinstance(ord, (str, bool)) or not isinstance(ord, (int, float)):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' must be Number, not "
                        f"{type(ord).__name__}")
    if dtype is not None:
        x = x.to(dtype)
    if x._arr.dtype.kind != "f":
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex "
                           f"tensor as input. Got {_dt.name(x._arr.dtype)}")
    dims = _vector_dims(dim, x._arr.ndim)
    if x._arr.ndim == 0:
        dims = ()
    if ord < 0 and any(x._arr.shape[d] == 0 for d in dims) or (
            x._arr.size == 0 and ord == -math.inf):
        raise RuntimeError(f"linalg.vector_norm cannot compute the {ord} norm on an "
                           "empty tensor because the operation does not have an "
                           "identity")
    return node.apply(x, float(ord), dims, bool(keepdim))


class Cdist(Function):
    """out[.., i, j] = ||x1[.., i] - x2[.., j]||_p;  the gradient is the
    vector norm's, summed over the other set of points.  (Once
    differentiable, as torch's.)"""

    _node_name = "CdistBackward0"

    @staticmethod
    def forward(ctx, x1, x2, p, use_mm):
        ctx.use_mm = use_mm
        if use_mm:
            # |a|^2 - 2 a.b + |b|^2 through BLAS (torch's rule for p = 2);
            # rounding can take it below 0 for near points: clamped
            a, b = x1._arr, x2._arr
            sq = (np.sum(a * a, -1)[..., :, None] + np.sum(b * b, -1)[..., None, :]
                  - 2 * np.matmul(a, np.swapaxes(b, -1, -2)))
            d = np.sqrt(np.maximum(sq, 0))
            ctx.x1, ctx.x2, ctx.d = a, b, d
            return _wrap(np.asarray(d, order="C"))
        diff = x1._arr[..., :, None, :] - x2._arr[..., None, :, :]
        a = np.abs(diff)
        if p == 2:
            d = np.sqrt(np.einsum("...k,...k->...", diff, diff))
        elif p == math.inf:
            d = a.max(axis=-1) if a.shape[-1] else np.zeros(a.shape[:-1], a.dtype)
        elif p == 0:
            d = (a != 0).sum(-1).astype(a.dtype)
        elif p == 1:
            d = a.sum(-1)
        else:
            d = (a ** p).sum(-1) ** (1.0 / p)
        ctx.diff, ctx.p = diff, p
        ctx.n_keep = d[..., None]
        return _wrap(np.asarray(d, order="C"))

    @staticmethod
    def backward(ctx, g):
        # Once differentiable (torch's _cdist_backward has no derivative):
        # computed on arrays, its result carries no history.
        xp = _NumpyNS
        ga = g._arr if isinstance(g, TensorBase) else np.asarray(g)
        if ctx.use_mm:
            # d/da_i sum_j w_ij |a_i - b_j| = sum_j w_ij (a_i - b_j) / d_ij
            with np.errstate(divide="ignore", invalid="ignore"):
                w = np.where(ctx.d > 0, ga / ctx.d, 0.0).astype(ctx.d.dtype)
            a, b = ctx.x1, ctx.x2
            g1 = w.sum(-1)[..., None] * a - np.matmul(w, b)
            g2 = np.swapaxes(w, -1, -2)
            g2 = w.sum(-2)[..., None] * b - np.matmul(g2, a)
            return xp.out(g1), xp.out(g2), None, None
        diff = ctx.diff
        gk = ga[..., None]
        gd = _norm_grad(xp, diff, diff, ctx.n_keep, ctx.n_keep, ctx.p, gk)
        return xp.out(gd.sum(-2)), xp.out(-gd.sum(-3)), None, None


@op("cdist", kind="linalg")
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """Pairwise ``p``-norm distances between the rows of ``x1`` (.., P, M)
    and ``x2`` (.., R, M): shape (.., P, R); batch dims broadcast."""
    _check_tensors("cdist", x1=x1, x2=x2)
    a, b = x1._arr, x2._arr
    for name, t in (("X1", a), ("X2", b)):
        if t.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: "
                               f"{t.ndim}D")
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{a.shape[-1]} X2: {b.shape[-1]}")
    if a.dtype.kind != "f" or b.dtype.kind != "f":
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: "
                           f"{_dt.name(a.dtype)}")
    _check_same_dtype("cdist", x1, x2)
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    modes = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
             "donot_use_mm_for_euclid_dist")
    if compute_mode not in modes:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    use_mm = p == 2 and (compute_mode == modes[1] or (
        compute_mode == modes[0] and (a.shape[-2] > 25 or b.shape[-2] > 25)))
    return Cdist.apply(x1, x2, float(p), use_mm)
