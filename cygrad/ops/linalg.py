"""Matrix products (BLAS through NumPy)."""

import numpy as np

from cygrad import dtypes as _dt
from cygrad._kernels import engine as _engine
from cygrad._kernels.engine import TensorBase, _wrap
from cygrad._tensor import Tensor
from cygrad.autograd.function import Function
from cygrad.ops.registry import _ns, _TensorNS, op

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
            out = np.matmul(x, y)
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
Tensor.dot = matmul
Tensor.__matmul__ = matmul
Tensor.__rmatmul__ = lambda self, other: matmul(other, self)
