"""Scans and products: cumsum, cumprod (and their in-place forms) and prod,
which is the last element of a cumprod (so its gradient is right for inputs
with zeros)."""

import numpy as np

from cygrad import dtypes as _dt
from cygrad._kernels import scan as _scan_k
from cygrad._kernels.engine import _wrap, is_grad_enabled
from cygrad._kernels.reductions import prod_all as _prod_all
from cygrad._tensor import Tensor, _canon_dim
from cygrad.autograd.function import Function
from cygrad.ops.reductions import sum as _sum
from cygrad.ops.registry import (
    _KERNEL_FLOATS,
    _ns,
    _NumpyNS,
    _prod,
    np_aliases,
    op,
    xp_helper,
)
from cygrad.ops.select import where
from cygrad.ops.shape import flip, movedim, reshape, unsqueeze


def _scan_dtype(arr, dtype):
    """torch's result dtype of a scan: integers and bool go to int64."""
    if dtype is not None:
        return np.dtype(_dt.to_numpy(dtype))
    return arr.dtype if arr.dtype.kind in "fc" else np.dtype(np.int64)


def _scan(arr, dim, ufunc, out_dtype, reverse=False):
    """Running sum/product along ``dim`` in ``out_dtype``: floats accumulate
    in double and round once (torch's CPU scan), in the compiled kernel."""
    if out_dtype.type in _KERNEL_FLOATS:
        x = np.ascontiguousarray(arr, dtype=out_dtype)
        out = np.empty(x.shape, out_dtype)
        shape = x.shape
        _scan_k.scan(x.reshape(-1), out.reshape(-1), _prod(shape[:dim]), shape[dim],
                     _prod(shape[dim + 1:]), ufunc is np.multiply, reverse)
        return out
    if reverse:
        return np.ascontiguousarray(np.flip(_scan(np.flip(arr, dim), dim, ufunc,
                                                  out_dtype), dim))
    acc = np.float64 if out_dtype.kind == "f" else out_dtype
    return np.ascontiguousarray(ufunc.accumulate(arr, axis=dim, dtype=acc),
                                dtype=out_dtype)


class CumSum(Function):
    """out[i] = sum_{j <= i} x[j] along ``dim``; grad[j] = sum_{i >= j} g[i]
    (a reversed cumsum)."""

    _node_name = "CumsumBackward0"

    @staticmethod
    def forward(ctx, x, dim, dtype):
        ctx.dim = dim
        ctx.src = x._arr.dtype
        return _wrap(_scan(x._arr, dim, np.add, dtype))

    @staticmethod
    def backward(ctx, g):
        xp = _ns()
        gx = xp.rev_cumsum(xp.val(g), ctx.dim)
        if xp is _NumpyNS:
            gx = xp.out(gx.astype(ctx.src, copy=False))
        elif gx.dtype != ctx.src:
            gx = gx.to(ctx.src)
        return gx, None, None


def _rev_cumsum_arrays(g, dim):
    return _scan(g, dim, np.add, g.dtype, reverse=True)


def _rev_cumsum_tensors(g, dim):
    return flip(cumsum(flip(g, dim), dim), dim)


xp_helper("rev_cumsum", _rev_cumsum_arrays, _rev_cumsum_tensors)


def _dim_arg(input, dim, name):
    if dim is None:
        raise TypeError(f'{name}() missing 1 required positional arguments: "dim"')
    return _canon_dim(dim, input._arr.ndim)


@op("cumsum", methods=("cumsum",), primitive=True, kind="reduce")
@np_aliases
def cumsum(input, dim=None, *, dtype=None):
    """Running sum along ``dim`` (integers and bool give int64); grad = the
    reversed running sum of g."""
    d = _dim_arg(input, dim, "cumsum")
    out_dtype = _scan_dtype(input._arr, dtype)
    if out_dtype.kind == "f" and input._arr.dtype != out_dtype:
        input = input.to(out_dtype)
    if input._arr.ndim == 0:
        return input.to(out_dtype).clone()
    return CumSum.apply(input, d, out_dtype)


class CumProd(Function):
    """out[i] = prod_{j <= i} x[j] along ``dim``; grad[k] = sum_{i >= k} g[i]
    * prod_{j <= i, j != k} x[j], exact with zeros in x (torch's rule: before
    the first zero as the quotient form, at it the product of the others, 0
    after it)."""

    _node_name = "CumprodBackward0"

    @staticmethod
    def forward(ctx, x, dim, dtype):
        ctx.dim = dim
        out = _wrap(_scan(x._arr, dim, np.multiply, dtype))
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        xp = _ns()
        return xp.out(xp.cumprod_grad(xp.val(x), xp.val(out), xp.val(g),
                                      ctx.dim)), None, None


def _cumprod_grad_arrays(x, out, g, dim):
    if x.size == 0:
        return np.zeros(x.shape, x.dtype)
    x2 = np.moveaxis(x, dim, -1).reshape(-1, x.shape[dim])
    o2 = np.moveaxis(out, dim, -1).reshape(x2.shape)
    g2 = np.moveaxis(g.astype(x.dtype, copy=False), dim, -1).reshape(x2.shape)
    n = x2.shape[1]
    zero = x2 == 0
    safe = np.where(zero, 1, x2)
    res = _scan(g2 * o2, 1, np.add, g2.dtype, reverse=True) / safe
    rows = np.flatnonzero(zero.any(1))
    if rows.size:
        z = zero[rows].argmax(1)                         # the first zero
        pos = np.arange(n)
        after = pos[None, :] > z[:, None]
        xr = x2[rows]
        # prod_{z < j <= i} x[j] for i >= z, the factor that skips x[z]
        tail = np.cumprod(np.where(after, xr, 1), 1)
        s = np.sum(np.where(pos[None, :] >= z[:, None], g2[rows] * tail, 0), 1)
        left = np.where(z > 0, o2[rows, np.maximum(z - 1, 0)], 1)
        r = np.where(after, 0, res[rows])
        r[np.arange(rows.size), z] = left * s
        res[rows] = r
    moved = res.astype(x.dtype, copy=False).reshape(
        np.moveaxis(x, dim, -1).shape)
    return np.ascontiguousarray(np.moveaxis(moved, -1, dim))


def _cumprod_grad_tensors(x, out, g, dim):
    # The n x n form over Tensors (create_graph): row k of m is x with x[k]
    # replaced by 1, so cumprod(m)[k, i] = prod_{j <= i, j != k} x[j].
    n = x.shape[dim]
    xm = movedim(x, dim, -1)
    eye = np.eye(n, dtype=bool)
    m = where(_wrap(eye), 1.0, unsqueeze(xm, -2))
    c = cumprod(m, -1)
    gm = unsqueeze(movedim(g, dim, -1), -2)
    upper = _wrap(np.triu(np.ones((n, n), x.dtype)))
    return movedim(_sum(c * gm * upper, -1), -1, dim)


xp_helper("cumprod_grad", _cumprod_grad_arrays, _cumprod_grad_tensors)


@op("cumprod", methods=("cumprod",), primitive=True, kind="reduce")
@np_aliases
def cumprod(input, dim=None, *, dtype=None):
    """Running product along ``dim`` (integers and bool give int64); the
    gradient is exact where x has zeros."""
    d = _dim_arg(input, dim, "cumprod")
    out_dtype = _scan_dtype(input._arr, dtype)
    if out_dtype.kind == "f" and input._arr.dtype != out_dtype:
        input = input.to(out_dtype)
    if input._arr.ndim == 0:
        return input.to(out_dtype).clone()
    return CumProd.apply(input, d, out_dtype)


def _cumsum_(self, dim, *, dtype=None):
    """In-place ``cumsum`` along ``dim``."""
    return self.copy_(cumsum(self, dim, dtype=dtype))


def _cumprod_(self, dim, *, dtype=None):
    """In-place ``cumprod`` along ``dim``."""
    return self.copy_(cumprod(self, dim, dtype=dtype))


Tensor.cumsum_ = _cumsum_
Tensor.cumprod_ = _cumprod_


class Prod(Function):
    """out = the product over ``dim`` (None: every element), NumPy's
    product loop.  grad = g (out / x) where the reduced row holds no zero
    (torch's formula); a row with zeros gets the exact products of the
    others (``_prod_zero_grad``): at a single zero the product of the
    rest, 0 elsewhere."""

    _node_name = "ProdBackward0"

    @staticmethod
    def forward(ctx, x, dim, keepdim):
        arr = x._arr
        if dim is None and arr.flags.c_contiguous and arr.dtype.type in (np.float32,
                                                                         np.float64):
            out = np.full((1,) * arr.ndim, _prod_all(arr.reshape(-1)), arr.dtype)
        else:
            out = np.prod(arr, axis=dim, keepdims=True)
        ctx.dim, ctx.out = dim, out
        ctx.save_for_backward(x)
        if dim is None:
            return _wrap(np.asarray(out.reshape(())))
        return _wrap(out if keepdim else out.reshape(arr.shape[:dim] + arr.shape[dim + 1:]))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        dim = ctx.dim
        if is_grad_enabled():
            return _prod_grad_tensors(x, g, dim), None, None
        arr, out = x._arr, ctx.out
        gk = np.asarray(g._arr, dtype=arr.dtype).reshape(out.shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            grad = gk * (out / arr)
        zero = arr == 0
        if zero.any():
            rows = zero.any(axis=dim, keepdims=True)
            grad = np.where(rows, _prod_zero_grad(arr, gk, dim), grad)
        return _wrap(np.ascontiguousarray(grad)), None, None


class _ProdDim(Prod):
    _node_name = "ProdBackward1"


def _prod_zero_grad(arr, g, dim):
    """g times the product of the other elements along ``dim`` (every
    element when None), exact with zeros: the gradient of cumprod's last
    entry."""
    flat = arr.reshape(-1) if dim is None else arr
    d = 0 if dim is None else dim
    cum = np.cumprod(flat, axis=d)
    gl = np.zeros(flat.shape, arr.dtype)
    last = (slice(None),) * d + (slice(-1, None),)
    gl[last] = g.reshape(gl[last].shape)
    return _cumprod_grad_arrays(flat, cum, gl, d).reshape(arr.shape)


def _prod_grad_tensors(x, g, dim):
    """The same gradient over Tensors (create_graph): the product of the
    others as the last entry of a cumprod of x with each element in turn
    replaced by 1 (the n x n form of ``_cumprod_grad_tensors``) where the
    row holds a zero, g (out / x) elsewhere."""
    flat = reshape(x, (-1,)) if dim is None else x
    d = 0 if dim is None else dim
    n = flat.shape[d]
    xm = movedim(flat, d, -1)
    others = cumprod(where(_wrap(np.eye(n, dtype=bool)), 1.0, unsqueeze(xm, -2)), -1)
    others = movedim(others[..., -1], -1, d)
    gk = g if dim is None or g.dim() == x.dim() else unsqueeze(g, d)
    return reshape(gk * others, tuple(x.shape))


@op("prod", methods=("prod",), kind="reduce")
@np_aliases
def prod(input, dim=None, keepdim=False, *, dtype=None):
    """Product over ``dim`` (all elements when None; integers and bool give
    int64); the gradient is exact with zeros (the product of the others at
    a single zero, 0 elsewhere)."""
    arr = input._arr
    out_dtype = _scan_dtype(arr, dtype)
    if out_dtype.kind != "f":
        axis = None if dim is None else _canon_dim(dim, arr.ndim)
        return _wrap(np.asarray(np.prod(arr, axis=axis, dtype=out_dtype,
                                        keepdims=bool(keepdim) and axis is not None)))
    if arr.dtype != out_dtype:
        input = input.to(out_dtype)
    if dim is None:
        return Prod.apply(input, None, False)
    d = _canon_dim(dim, arr.ndim)
    if arr.ndim == 0:
        return input.clone()
    return _ProdDim.apply(input, d, bool(keepdim))
