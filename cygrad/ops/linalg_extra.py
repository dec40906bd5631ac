"""Linear algebra composed of matmul, the decompositions and the solves:
inner, addr, logdet, matrix_exp, cholesky_solve, cholesky_inverse,
chain_matmul, prelu and the in-place addmm_/addmv_/baddbmm_/addbmm_/addr_.

matrix_exp is a Function (scaling and squaring of a Taylor series) whose
backward is matrix_exp again, of the block matrix [[A^T, G], [0, A^T]]
(its upper-right block is the gradient), so it is twice differentiable.
"""

import math
import warnings

import numpy as np

from cygrad._kernels.engine import _wrap
from cygrad._tensor import Tensor
from cygrad.autograd.function import Function
from cygrad.ops.decomp import slogdet, solve
from cygrad.ops.inplace import _inplace_apply
from cygrad.ops.linalg import addbmm, addmm, addmv, baddbmm, matmul, outer
from cygrad.ops.mathextra import _tensor_arg
from cygrad.ops.out import _torch_name
from cygrad.ops.registry import op
from cygrad.ops.select import where
from cygrad.ops.shape import cat


@op("inner", methods=("inner",), kind="linalg")
def inner(input, other):
    """out = the sum over the last dims of input and other of their products
    (shape input.shape[:-1] + other.shape[:-1]; a scalar operand multiplies)."""
    _tensor_arg(input, "inner")
    _tensor_arg(other, "inner", "other", 2)
    if input._arr.ndim == 0 or other._arr.ndim == 0:
        return input * other
    if input._arr.shape[-1] != other._arr.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input "
                           f"tensors but got shapes {list(input._arr.shape)} and "
                           f"{list(other._arr.shape)}")
    a = input.reshape(-1, input._arr.shape[-1])
    b = other.reshape(-1, other._arr.shape[-1])
    return matmul(a, b.t()).reshape(input._arr.shape[:-1] + other._arr.shape[:-1])


@op("addr", methods=("addr",), kind="linalg")
def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """out = beta * input + alpha * outer(vec1, vec2) (beta == 0 ignores input)."""
    for name, v, pos in (("vec1", vec1, 2), ("vec2", vec2, 3)):
        _tensor_arg(v, "addr", name, pos)
        if v._arr.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got "
                               f"{v._arr.ndim}-D")
    prod = outer(vec1, vec2)
    shape = tuple(prod._arr.shape)
    try:
        ok = np.broadcast_shapes(input._arr.shape, shape) == shape
    except ValueError:
        ok = False
    if not ok:
        raise RuntimeError(f"The expanded size of the tensor ({shape[-1]}) must match "
                           f"the existing size ({input._arr.shape[-1]}) at non-"
                           f"singleton dimension 1.  Target sizes: {list(shape)}.  "
                           f"Tensor sizes: {list(input._arr.shape)}")
    out = prod if alpha == 1 else prod * alpha
    if beta == 0:
        return out
    return out + (input if beta == 1 else input * beta)


@op("logdet", methods=("logdet",), kind="linalg")
def logdet(input):
    """out = log(det(A)): nan for a negative determinant, -inf for a singular
    matrix; grad = g * A^-T (slogdet's)."""
    sign, logabs = slogdet(input)
    return where(sign < 0, math.nan, logabs)


def _np_expm(a):
    """exp of each square matrix: scale by 2^-s to norm <= 1/2, 18 Taylor terms
    (error below 1e-19 relative), square s times."""
    norm = np.abs(a).sum(axis=-2).max(axis=-1) if a.size else np.zeros(a.shape[:-2])
    s = np.maximum(0, np.ceil(np.log2(np.maximum(norm, 1e-300) / 0.5))).astype(int)
    s = np.where(np.isfinite(norm), s, 0)
    smax = int(s.max()) if s.size else 0
    scale = (2.0 ** -s)[..., None, None]
    x = a * scale
    eye = np.broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), a.shape)
    term = eye.copy()
    out = eye.copy()
    for k in range(1, 19):
        term = np.matmul(term, x) / k
        out = out + term
    for i in range(smax):
        sq = np.matmul(out, out)
        out = np.where((s > i)[..., None, None], sq, out)
    return out


class MatrixExp(Function):
    """out = exp(A) = sum A^k / k!;  grad_A = the upper-right block of
    exp([[A^T, G], [0, A^T]])."""

    _node_name = "LinalgMatrixExpBackward0"

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        arr = a._arr
        with np.errstate(all="ignore"):
            out = _np_expm(arr.astype(np.float64)).astype(arr.dtype)
        return _wrap(out)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        n = a._arr.shape[-1]
        at = a.transpose(-2, -1)
        zeros = at * 0
        top = cat([at, g], -1)
        bottom = cat([zeros, at], -1)
        big = MatrixExp.apply(cat([top, bottom], -2))
        return big[..., :n, n:]


@op("matrix_exp", methods=("matrix_exp",), kind="linalg")
def matrix_exp(A):
    """out = the matrix exponential of each square matrix of A (..., n, n);
    grad from exp of the block matrix [[A^T, G], [0, A^T]]."""
    _tensor_arg(A, "matrix_exp", "A")
    arr = A._arr
    if arr.ndim < 2 or arr.shape[-1] != arr.shape[-2]:
        raise RuntimeError(f"linalg.matrix_exp: A must be batches of square matrices, "
                           f"but they are {arr.shape[-2] if arr.ndim > 1 else 1} by "
                           f"{arr.shape[-1] if arr.ndim else 1} matrices")
    if arr.dtype.kind != "f":
        raise RuntimeError(f"linalg.matrix_exp: Expected a floating point or complex "
                           f"tensor as input. Got {_torch_name(arr.dtype)}")
    return MatrixExp.apply(A)


def _chol_factor(fname, L, upper):
    _tensor_arg(L, fname)
    arr = L._arr
    if arr.ndim < 2 or arr.shape[-1] != arr.shape[-2]:
        raise RuntimeError(f"{fname}: A must be batches of square matrices, but they "
                           f"are {arr.shape[-2] if arr.ndim > 1 else 1} by "
                           f"{arr.shape[-1] if arr.ndim else 1} matrices")
    # the triangle's values, but every entry of L gets the gradient of
    # L L^T (or U^T U), as torch's backward gives it
    tri = L - (L - (L.triu() if upper else L.tril())).detach()
    return tri.transpose(-2, -1).matmul(tri) if upper else \
        tri.matmul(tri.transpose(-2, -1))


@op("cholesky_solve", methods=("cholesky_solve",), kind="linalg")
def cholesky_solve(B, L, upper=False):
    """X with A X = B, where A = L L^T (or U^T U with ``upper``) from the
    Cholesky factor; only L's triangle is read; grads through the solve."""
    _tensor_arg(B, "cholesky_solve")
    _tensor_arg(L, "cholesky_solve", "input2", 2)
    if B._arr.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has "
                           f"{B._arr.ndim} dimensions instead")
    if L._arr.ndim < 2:
        raise RuntimeError(f"u should have at least 2 dimensions, but has "
                           f"{L._arr.ndim} dimensions instead")
    A = _chol_factor("cholesky_solve", L, upper)
    return solve(A, B)


@op("cholesky_inverse", methods=("cholesky_inverse",), kind="linalg")
def cholesky_inverse(L, upper=False):
    """out = (L L^T)^-1 (or (U^T U)^-1) from the Cholesky factor; only its
    triangle is read."""
    A = _chol_factor("cholesky_inverse", L, upper)
    return A.inverse()


@op("chain_matmul", kind="linalg")
def chain_matmul(*matrices):
    """out = the product of the 2-D matrices, left to right (deprecated in
    torch for ``linalg.multi_dot``)."""
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future "
                  "PyTorch release. Use torch.linalg.multi_dot instead, which accepts "
                  "a list of two or more tensors rather than multiple parameters.",
                  UserWarning, stacklevel=2)
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for m in matrices:
        if m._arr.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {m._arr.ndim}, expected 2 "
                               "instead.")
    res = matrices[0]
    if len(matrices) == 1:
        res = res.clone()
    for m in matrices[1:]:
        res = matmul(res, m)
    return res


@op("prelu", methods=("prelu",), kind="linalg")
def prelu(input, weight):
    """out = x where x > 0, else weight * x, weight per channel (dim 1) or one
    for all; grad_x = g or g * weight, grad_weight = sum of g * x where x <= 0."""
    _tensor_arg(input, "prelu")
    _tensor_arg(weight, "prelu", "weight", 2)
    n = weight._arr.size
    nd = input._arr.ndim
    if weight._arr.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, "
                           f"but got: ndim = {weight._arr.ndim}")
    channels = input._arr.shape[1] if nd >= 2 else 1
    if n != 1 and n != channels:
        raise RuntimeError(f"Mismatch of parameter numbers and input channel size. "
                           f"Found parameter numbers = {n} and channel size = "
                           f"{channels}.")
    w = weight.reshape(-1)
    if n != 1 and nd >= 2:
        w = w.reshape((1, n) + (1,) * (nd - 2))
    elif nd == 0 or n == 1:
        w = w.reshape(())
    return where(input > 0, input, w * input)


# --- the in-place matrix products ---------------------------------------------------------

# the result's shape of each product, from its two operands
_PRODUCT_SHAPES = {
    "addmm": lambda a, b: (a[0], b[-1]), "addmv": lambda a, b: (a[0],),
    "baddbmm": lambda a, b: (a[0], a[1], b[-1]), "addbmm": lambda a, b: (a[1], b[-1]),
    "addr": lambda a, b: (a[0], b[0]),
}


def _inplace_product(name, fn):
    opname = name + "_"
    product_shape = _PRODUCT_SHAPES[name]

    def method(self, a, b, *, beta=1, alpha=1):
        try:
            res_shape = product_shape(a._arr.shape, b._arr.shape)
        except IndexError:      # bad ranks: the op's own error
            res_shape = fn(self.detach(), a.detach(), b.detach())._arr.shape
        if tuple(res_shape) != tuple(self._arr.shape):
            raise RuntimeError(f"Bad in-place call: input tensor size "
                               f"{list(self._arr.shape)} and output tensor size "
                               f"{list(res_shape)} should match")
        other = a if a._requires_grad else b
        return _inplace_apply(self, lambda t: fn(t, a, b, beta=beta, alpha=alpha),
                              opname, other)
    method.__name__ = opname
    method.__doc__ = f"In-place ``{name}``: self = beta * self + alpha * product."
    return method


def _install():
    Tensor.addmm_ = _inplace_product("addmm", addmm)
    Tensor.addmv_ = _inplace_product("addmv", addmv)
    Tensor.baddbmm_ = _inplace_product("baddbmm", baddbmm)
    Tensor.addbmm_ = _inplace_product("addbmm", addbmm)
    Tensor.addr_ = _inplace_product("addr", addr)


_install()
