"""Convolutions, their transposes, ``unfold``/``fold`` and ``pad``, as autograd
Functions on the compiled lowering of ``cygrad._kernels.conv``.

A convolution is the bilinear map ``y = B(x, w)``.  Its two partial adjoints
are the transposed convolution ``x' = B_x^T(g, w)`` (the input gradient) and
the weight gradient ``w' = B_w^T(x, g)``.  The three are the Functions
``_Conv``, ``_ConvTransposeData`` and ``_ConvWeight``, and the backward of
each is made of the other two:

- ``_Conv``:               grad_x = B_x^T(g, w),  grad_w = B_w^T(x, g)
- ``_ConvTransposeData``:  grad_g = B(h, w),      grad_w = B_w^T(h, g)
- ``_ConvWeight``:         grad_x = B_x^T(g, u),  grad_g = B(x, u)

so every order of derivative is a convolution again.  Without
``create_graph`` a backward calls the array code directly (no graph is
built); with it, the Functions themselves.  Each forward lowers the batch to
patch matrices (``im2col``) and does the arithmetic as BLAS products through
NumPy: for large patches (``_batch_matrix``) a chunk of samples at a time,
each chunk one product with its batch matrix (``_conv_products``), for small
ones a per-sample (per-group) stack; a stride-1 input gradient is itself a
convolution (``_conv_t_flipped``); depthwise layers run the direct loops of
``conv.depthwise_*`` instead.

Every shape is 2-d spatial inside: a 1-d signal ``(N, C, L)`` is the image
``(N, C, 1, L)`` and a 1-d kernel ``(O, I, k)`` is ``(O, I, 1, k)``.  3-d
volumes ``(N, C, D, H, W)`` stay 5-d: the three array maps hand them to
``_conv3d_arrays`` (the ``vol2col`` lowering), so the Functions are shared.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from cygrad.dtypes import c_name, short_name
from cygrad._kernels import conv as _k
from cygrad._tensor import Tensor
from cygrad.autograd.function import Function
from cygrad.autograd.grad_mode import is_grad_enabled
from cygrad.creation import from_numpy

from . import _conv3d_arrays as _a3
from . import _conv_products as _products
from ._conv_products import recycle as _recycle
from ._conv_products import scratch as _scratch

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "conv1d",
    "conv2d",
    "conv_transpose1d",
    "conv_transpose2d",
    "fold",
    "pad",
    "unfold",
    "conv3d",
    "conv_transpose3d",
]

_REAL = (np.dtype(np.float32), np.dtype(np.float64))


def _size_str(shape):
    return "[" + ", ".join(str(int(s)) for s in shape) + "]"


def _tuple(value, n, name):
    """``value`` as a tuple of ``n`` Python ints (an int is repeated)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),) * n
    try:
        out = tuple(int(v) for v in value)
    except TypeError:
        raise TypeError(f"{name} must be an int or a tuple of {n} ints, got "
                        f"{value!r}") from None
    if len(out) == 1:
        return out * n
    if len(out) != n:
        raise ValueError(f"{name} must be an int or a tuple of {n} ints, got {value!r}")
    return out


def _geo(nd, stride, padding, dilation, groups):
    """Normalised geometry: (stride, padding, dilation) tuples of 2 entries
    (1-d and 2-d; a 1-d signal is one row) or 3 (3-d), and the group count."""
    s = _tuple(stride, nd, "stride")
    p = _tuple(padding, nd, "padding")
    d = _tuple(dilation, nd, "dilation")
    if nd == 1:
        s, p, d = (1,) + s, (0,) + p, (1,) + d
    return s, p, d, int(groups)


def _arr4(a):
    """An (N, C, ...) array as a contiguous 4-d array (1-d: height 1)."""
    a = np.ascontiguousarray(a)
    if a.ndim == 3:
        return a.reshape(a.shape[0], a.shape[1], 1, a.shape[2])
    return a


def _check_real(*tensors):
    """One floating dtype with a kernel for every tensor given (None skipped);
    a mismatch names the second tensor's (the weight's) dtype as expected,
    as torch does."""
    present = [t for t in tensors if t is not None]
    ref = np.dtype(present[1].dtype if len(present) > 1 else present[0].dtype)
    for t in present:
        d = np.dtype(t.dtype)
        if d != ref:
            raise RuntimeError(
                f"expected scalar type {_tname(ref)} but found {_tname(d)}"
            )
    if ref not in _REAL:
        raise NotImplementedError(
            f"no kernel for dtype {ref}; use float32 or float64 inputs"
        )


def _check_conv_dtypes(input, weight, bias, transposed):
    """torch's words for an input whose dtype is not the weight's: the bias
    is compared first (C type names), then the weight (expected = the
    input's type)."""
    d = input.dtype
    if not transposed and bias is not None and d != bias.dtype:
        raise RuntimeError(
            f"Input type ({c_name(d)}) and bias type ({c_name(bias.dtype)}) "
            "should be the same")
    if d != weight.dtype:
        raise RuntimeError(f"expected scalar type {short_name(d)} but found "
                           f"{short_name(weight.dtype)}")


def _tname(dt):
    return {"float32": "Float", "float64": "Double", "int64": "Long", "int32": "Int",
            "bool": "Bool"}.get(str(dt), str(dt))


# ---------------------------------------------------------------------------
# array code (2-d spatial, contiguous)


def _out_hw(h, w, kh, kw, geo):
    (sh, sw), (ph, pw), (dh, dw), _ = geo
    return (_k.conv_out_size(h, kh, sh, ph, dh), _k.conv_out_size(w, kw, sw, pw, dw))


def _cols(x, kh, kw, geo, rows_first=False):
    """im2col of x (N, C, H, W): (N, C*kh*kw, OH*OW), or with ``rows_first``
    the batch matrix (C*kh*kw, N, OH*OW)."""
    (sh, sw), (ph, pw), (dh, dw), _ = geo
    n, c, h, w = x.shape
    oh, ow = _out_hw(h, w, kh, kw, geo)
    shape = (c * kh * kw, n, oh * ow) if rows_first else (n, c * kh * kw, oh * ow)
    cols = _scratch(shape, x.dtype)
    _k.im2col(x, kh, kw, sh, sw, ph, pw, dh, dw, cols, rows_first)
    return cols, oh, ow


# Patch-matrix layout by size (measured, one thread, float32): for
# K = C*kh*kw >= 64 (a 16 -> 32 channel 3x3 layer on 14x14 maps, batch 128)
# products with batch matrices (K, m*L) -- now a chunk of m samples at a
# time, ``_conv_products.forward_chunked`` -- beat the per-sample
# (O, K) @ (K, L) stack 1.8x over forward and weight gradient; for small K
# (1 -> 16 channels, K = 9; 8x8 images) the per-sample stack is 2.5x faster
# (the transposing copies cost more than BLAS saves).
_ROWS_MIN_K = 64


def _batch_matrix(w_shape, groups):
    return groups == 1 and w_shape[1] * w_shape[2] * w_shape[3] >= _ROWS_MIN_K


def _depthwise(c, w_shape, groups):
    """groups == C_in > 1: the direct depthwise kernels, not the lowering."""
    return groups > 1 and groups == c and w_shape[1] == 1


def _geo_args(kh, kw, geo):
    (sh, sw), (ph, pw), (dh, dw), _ = geo
    return kh, kw, sh, sw, ph, pw, dh, dw


def _depthwise_arr(x, w, b, geo):
    o, _, kh, kw = w.shape
    n, _, h, wd = x.shape
    oh, ow = _out_hw(h, wd, kh, kw, geo)
    y = np.empty((n, o, oh, ow), dtype=x.dtype)
    _k.depthwise_fwd(x, np.ascontiguousarray(w).reshape(o, kh * kw),
                     *_geo_args(kh, kw, geo), y,
                     None if b is None else np.ascontiguousarray(b))
    return y


def _conv_arr(x, w, b, geo, cols=None):
    """y = B(x, w) + b for x (N, C, H, W), w (O, C/G, kh, kw); returns (y, cols)
    (cols in the layout ``_batch_matrix`` picks, None for depthwise)."""
    if x.ndim == 5:
        return _a3.conv_arr(x, w, b, geo, cols)
    n = x.shape[0]
    o, cg, kh, kw = w.shape
    groups = geo[3]
    if _depthwise(x.shape[1], w.shape, groups):
        return _depthwise_arr(x, w, b, geo), None
    big = _batch_matrix(w.shape, groups)
    k = cg * kh * kw
    if big and cols is None:
        oh, ow = _out_hw(x.shape[2], x.shape[3], kh, kw, geo)
        y = _products.forward_chunked(_lowering(x, kh, kw, geo), w, b, n, k, oh * ow,
                                      x.dtype)
        return y.reshape(n, o, oh, ow), None
    if cols is None:
        cols, oh, ow = _cols(x, kh, kw, geo, rows_first=big)
    else:
        oh, ow = _out_hw(x.shape[2], x.shape[3], kh, kw, geo)
    length = oh * ow
    y = _products.forward(cols, w, b, n, k, length, groups, big)
    return y.reshape(n, o, oh, ow), cols


def _lowering(x, kh, kw, geo):
    """``lower(s, m, out)`` of ``_products.forward_chunked``: the batch-matrix
    im2col of samples s .. s+m of x."""
    args = _geo_args(kh, kw, geo)

    def lower(s, m, out):
        _k.im2col(x[s:s + m], *args, out, True)

    return lower


def _pad_to(g, oh, ow):
    """g (N, O, h, w) zero-extended at the bottom/right to (N, O, oh, ow).

    A transposed convolution with output_padding >= stride (allowed while it
    is below the dilation) has an input of fewer positions than the
    convolution of its output gives: it is the adjoint of that convolution
    cropped, and the adjoint of the crop is this zero extension."""
    if g.shape[2:] == (oh, ow):
        return g
    out = np.zeros(g.shape[:2] + (oh, ow), dtype=g.dtype)
    out[:, :, :g.shape[2], :g.shape[3]] = g
    return out


def _crop_like(y, shape):
    """The convolution output y cropped to ``shape`` (see ``_pad_to``)."""
    shape = tuple(shape)
    if tuple(y.shape) == shape:
        return y
    return y[(slice(None), slice(None)) + tuple(slice(0, s) for s in shape[2:])]


def _conv_t_arr(g, w, x_shape, geo):
    """x' = B_x^T(g, w): the (N, C, H, W) input gradient of a convolution."""
    if g.ndim == 5:
        return _a3.conv_t_arr(g, w, x_shape, geo)
    (sh, sw), (ph, pw), (dh, dw), groups = geo
    o, cg, kh, kw = w.shape
    g = _pad_to(g, *_out_hw(x_shape[2], x_shape[3], kh, kw, geo))
    n = g.shape[0]
    g = np.ascontiguousarray(g)
    k = cg * kh * kw
    if _depthwise(x_shape[1], w.shape, groups):
        x = np.empty(x_shape, dtype=g.dtype)
        _k.depthwise_bwd_data(g, np.ascontiguousarray(w).reshape(o, kh * kw),
                              *_geo_args(kh, kw, geo), x)
        return x
    if _flipped(w.shape, geo):
        return _conv_t_flipped(g, w, x_shape, geo)
    length = g.shape[2] * g.shape[3]
    gcols = _products.input_grad_cols(g, w, n, k, length, groups,
                                      _scratch((n, groups * k, length), g.dtype))
    x = np.empty(x_shape, dtype=g.dtype)
    _k.col2im(gcols, kh, kw, sh, sw, ph, pw, dh, dw, x)
    _recycle(gcols)
    return x


def _flipped(w_shape, geo):
    """Whether ``_conv_t_flipped`` computes this input gradient: stride 1, one
    group, padding within the dilated kernel's extent, and both the forward's
    and the flipped kernel's patches large (``_batch_matrix``)."""
    (sh, sw), (ph, pw), (dh, dw), groups = geo
    o, cg, kh, kw = w_shape
    return (sh == 1 and sw == 1 and groups == 1 and ph <= dh * (kh - 1)
            and pw <= dw * (kw - 1) and _batch_matrix(w_shape, groups)
            and o * kh * kw >= _ROWS_MIN_K)


def _conv_t_flipped(g, w, x_shape, geo):
    """x' = B_x^T(g, w) at stride 1 as a convolution: the correlation of g,
    padded by d (k - 1) - p, with the kernel turned 180 degrees and its two
    channel axes swapped, (C, O, kh, kw).  Its products are the forward's
    shape, ``(C, O*kh*kw) @ (O*kh*kw, L)`` on a patch matrix of g, instead of
    ``w^T (K, O) @ g (O, L)`` (a BLAS product over only O terms, about half
    the speed) whose (K, L) columns col2im then scatters back (measured on
    AMD Zen 2, one thread, Conv2d(32, 32, 3) on 16x32x32x32, min of 15:
    8.7 -> 6.5 ms; the layer's forward + backward 26.5 -> 20.3 ms against
    torch's 16.0-16.6)."""
    (_, _), (ph, pw), (dh, dw), _ = geo
    o, c, kh, kw = w.shape
    n = g.shape[0]
    wf = np.ascontiguousarray(w.transpose(1, 0, 2, 3)[:, :, ::-1, ::-1])
    args = (kh, kw, 1, 1, dh * (kh - 1) - ph, dw * (kw - 1) - pw, dh, dw)

    def lower(s, m, out):
        _k.im2col(g[s:s + m], *args, out, True)

    x = _products.forward_chunked(lower, wf, None, n, o * kh * kw,
                                  x_shape[2] * x_shape[3], g.dtype)
    return x.reshape(x_shape)


def _shared_lowering(x, w_shape, geo):
    """Whether ``_conv_and_w_arr`` applies: 2-d, not depthwise, and the
    chunked batch-matrix products (``_batch_matrix``)."""
    return (x.ndim == 4 and not _depthwise(x.shape[1], w_shape, geo[3])
            and _batch_matrix(w_shape, geo[3]))


def _conv_and_w_arr(x, w, g, geo):
    """``(B(x, w), B_w^T(x, g))`` on one lowering of x (the backward of a
    transposed convolution needs both): each chunk's patch matrix feeds
    both products, as the forward's kept batch matrix did before the
    products were chunked (lowering it twice took ConvTranspose2d(32, 16, 4,
    stride=2) on 16x32x16x16 from 1.12x to 1.18x torch)."""
    o, cg, kh, kw = w.shape
    oh, ow = _out_hw(x.shape[2], x.shape[3], kh, kw, geo)
    g = np.ascontiguousarray(_pad_to(g, oh, ow))
    y, gw = _products.forward_weight_chunked(
        _lowering(x, kh, kw, geo), w, g, x.shape[0], cg * kh * kw, oh * ow, x.dtype)
    return y.reshape(x.shape[0], o, oh, ow), np.ascontiguousarray(gw).reshape(w.shape)


def _conv_w_arr(x, g, w_shape, geo, cols=None):
    """w' = B_w^T(x, g) = sum_n g[n] (O, L) @ cols[n]^T, of shape w_shape (4-d);
    ``cols`` are the forward's when it kept them."""
    if len(w_shape) == 5:
        return _a3.conv_w_arr(x, g, w_shape, geo, cols)
    o, cg, kh, kw = w_shape
    groups = geo[3]
    if cols is None and _depthwise(x.shape[1], w_shape, groups):
        g = _pad_to(g, *_out_hw(x.shape[2], x.shape[3], kh, kw, geo))
        gw = np.empty((o, kh * kw))
        _k.depthwise_bwd_weight(np.ascontiguousarray(x), np.ascontiguousarray(g),
                                *_geo_args(kh, kw, geo), gw)
        return gw.astype(x.dtype).reshape(w_shape)
    big = _batch_matrix(w_shape, groups)
    if x is not None:
        g = _pad_to(g, *_out_hw(x.shape[2], x.shape[3], kh, kw, geo))
    if big and cols is None:
        g = np.ascontiguousarray(g)
        gw = _products.weight_grad_chunked(_lowering(x, kh, kw, geo), g, g.shape[0], o,
                                           cg * kh * kw, g.shape[2] * g.shape[3])
        return np.ascontiguousarray(gw).reshape(w_shape)
    own = cols is None  # lowered here, so recycled here
    if own:
        cols = _cols(x, kh, kw, geo, rows_first=big)[0]
    g = np.ascontiguousarray(g)
    n = g.shape[0]
    k = cg * kh * kw
    gw = _products.weight_grad(cols, g, n, o, k, groups, big)
    if own:
        _recycle(cols)
    return np.ascontiguousarray(gw).reshape(w_shape)


def _bias_grad(g):
    return g.sum(axis=(0,) + tuple(range(2, g.ndim)))


def _bias_grad_t(grad):
    return grad.sum(dim=(0,) + tuple(range(2, grad.ndim)))


def _wrap_like(a, shape):
    return from_numpy(a.reshape(shape))


# ---------------------------------------------------------------------------
# the three Functions


class _Conv(Function):
    """``y = B(x, w) + b``;  grad_x = B_x^T(g, w), grad_w = B_w^T(x, g),
    grad_b = sum(g) over batch and space."""

    _node_name = "ConvolutionBackward0"

    @staticmethod
    def forward(ctx, x, w, b, geo):
        x4, w4 = _arr4(x._arr), _arr4(w._arr)
        y, cols = _conv_arr(x4, w4, None if b is None else b._arr, geo)
        ctx.save_for_backward(x, w)
        if w.requires_grad:
            ctx.cols = cols
        else:
            ctx.cols = None
            _recycle(cols)
        ctx.geo = geo
        if x.ndim == 3:
            y = y.reshape(y.shape[0], y.shape[1], y.shape[3])
        return from_numpy(y)

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        needs = ctx.needs_input_grad
        geo = ctx.geo
        gx = gw = gb = None
        if is_grad_enabled():
            if needs[0]:
                gx = _ConvTransposeData.apply(grad, w, None, tuple(x.shape), geo)
            if needs[1]:
                gw = _ConvWeight.apply(x, grad, tuple(w.shape), geo)
            if needs[2]:
                gb = _bias_grad_t(grad)
            return gx, gw, gb, None
        g4 = _arr4(grad._arr)
        w4 = _arr4(w._arr)
        if needs[0]:
            x4_shape = _shape4(x.shape)
            gx = _wrap_like(_conv_t_arr(g4, w4, x4_shape, geo), tuple(x.shape))
        if needs[1]:
            cols = ctx.cols
            x4 = None if cols is not None else _arr4(x._arr)
            gw = _wrap_like(_conv_w_arr(x4, g4, w4.shape, geo, cols), tuple(w.shape))
        if needs[2]:
            gb = from_numpy(np.ascontiguousarray(_bias_grad(g4)))
        _recycle(ctx.cols)
        ctx.cols = None
        return gx, gw, gb, None


def _shape4(shape):
    shape = tuple(int(s) for s in shape)
    return shape[:2] + (1,) + shape[2:] if len(shape) == 3 else shape


class _ConvTransposeData(Function):
    """``z = B_x^T(g, w) + b`` of shape ``x_shape``;  grad_g = B(h, w),
    grad_w = B_w^T(h, g), grad_b = sum(h)."""

    _node_name = "ConvolutionBackward0"

    @staticmethod
    def forward(ctx, g, w, b, x_shape, geo):
        z = _conv_t_arr(_arr4(g._arr), _arr4(w._arr), _shape4(x_shape), geo)
        if b is not None:
            z += b._arr.reshape((1, -1) + (1,) * (z.ndim - 2))
        ctx.save_for_backward(g, w)
        ctx.geo = geo
        return from_numpy(z.reshape(x_shape))

    @staticmethod
    def backward(ctx, h):
        g, w = ctx.saved_tensors
        needs = ctx.needs_input_grad
        geo = ctx.geo
        gg = gw = gb = None
        if is_grad_enabled():
            if needs[0]:
                gg = _crop_like(_Conv.apply(h, w, None, geo), g.shape)
            if needs[1]:
                gw = _ConvWeight.apply(h, g, tuple(w.shape), geo)
            if needs[2]:
                gb = _bias_grad_t(h)
            return gg, gw, gb, None, None
        h4 = _arr4(h._arr)
        w4 = _arr4(w._arr)
        cols = None
        if needs[0] and needs[1] and _shared_lowering(h4, w4.shape, geo):
            y, gwa = _conv_and_w_arr(h4, w4, _arr4(g._arr), geo)
            gg = _wrap_like(np.ascontiguousarray(_crop_like(y, _shape4(g.shape))),
                            tuple(g.shape))
            gw = _wrap_like(gwa, tuple(w.shape))
            needs = (False, False) + tuple(needs[2:])
        if needs[0]:
            y, cols = _conv_arr(h4, w4, None, geo)
            y = np.ascontiguousarray(_crop_like(y, _shape4(g.shape)))
            gg = _wrap_like(y, tuple(g.shape))
        if needs[1]:
            gw = _wrap_like(_conv_w_arr(h4, _arr4(g._arr), w4.shape, geo, cols),
                            tuple(w.shape))
        _recycle(cols)
        if needs[2]:
            gb = from_numpy(np.ascontiguousarray(_bias_grad(h4)))
        return gg, gw, gb, None, None


class _ConvWeight(Function):
    """``v = B_w^T(x, g)``;  grad_x = B_x^T(g, u), grad_g = B(x, u)."""

    _node_name = "ConvolutionBackwardBackward0"

    @staticmethod
    def forward(ctx, x, g, w_shape, geo):
        v = _conv_w_arr(_arr4(x._arr), _arr4(g._arr), _shape4(w_shape), geo)
        ctx.save_for_backward(x, g)
        ctx.geo = geo
        return from_numpy(v.reshape(w_shape))

    @staticmethod
    def backward(ctx, u):
        x, g = ctx.saved_tensors
        needs = ctx.needs_input_grad
        geo = ctx.geo
        gx = gg = None
        if is_grad_enabled():
            if needs[0]:
                gx = _ConvTransposeData.apply(g, u, None, tuple(x.shape), geo)
            if needs[1]:
                gg = _crop_like(_Conv.apply(x, u, None, geo), g.shape)
            return gx, gg, None, None
        u4 = _arr4(u._arr)
        if needs[0]:
            gx = _wrap_like(
                _conv_t_arr(_arr4(g._arr), u4, _shape4(x.shape), geo), tuple(x.shape)
            )
        if needs[1]:
            y = _conv_arr(_arr4(x._arr), u4, None, geo)[0]
            gg = _wrap_like(np.ascontiguousarray(_crop_like(y, _shape4(g.shape))),
                            tuple(g.shape))
        return gx, gg, None, None


# ---------------------------------------------------------------------------
# checks (before any kernel runs) and the functional forms


def _check_input_dim(input, nd, name):
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, "
            f"but got input of size: {_size_str(input.shape)}"
        )


def _check_conv(input, weight, bias, nd, geo, transposed=False):
    strides, pads, dils, groups = geo
    if min(strides) < 1:
        raise RuntimeError("non-positive stride is not supported")
    if min(pads) < 0:
        raise RuntimeError("negative padding is not supported")
    if min(dils) < 1:
        raise RuntimeError("dilation should be greater than zero")
    if groups < 1:
        raise RuntimeError("non-positive groups is not supported")
    if weight.ndim != nd + 2:
        raise RuntimeError(
            f"Expected {nd + 2}-dimensional weight for {nd + 2}-dimensional input, "
            f"but got {weight.ndim}-dimensional weight of size "
            f"{_size_str(weight.shape)}"
        )
    _check_conv_dtypes(input, weight, bias, transposed)
    _check_real(input, weight, bias)
    batched = tuple(input.shape) if input.ndim == nd + 2 else (1, *input.shape)
    c = batched[1]
    if transposed:
        want = weight.shape[0]
        prefix = "Given transposed=1, "
    else:
        want = weight.shape[1] * groups
        prefix = f"Given groups={groups}, "
    if c != want:
        raise RuntimeError(
            f"{prefix}weight of size {_size_str(weight.shape)}, expected input"
            f"{_size_str(batched)} to have {want} channels, but got {c} channels "
            "instead"
        )
    if transposed and weight.shape[0] % groups:
        raise RuntimeError(
            f"Given transposed=1, weight of size {_size_str(weight.shape)}: its "
            f"{weight.shape[0]} input channels are not divisible by groups={groups}"
        )
    if not transposed and weight.shape[0] % groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at "
            f"dimension 0, but got weight of size {_size_str(weight.shape)} instead"
        )
    n_out = weight.shape[1] * groups if transposed else weight.shape[0]
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != n_out):
        raise RuntimeError(
            f"Given weight of size {_size_str(weight.shape)}, expected bias to be "
            f"1-dimensional with {n_out} elements, but got bias of size "
            f"{_size_str(bias.shape)} instead"
        )
    if transposed:
        return batched
    ks = tuple(weight.shape[2:])
    spatial = batched[2:]
    pads = pads[len(pads) - nd:]
    dils = dils[len(dils) - nd:]
    padded = tuple(s + 2 * p for s, p in zip(spatial, pads))
    eff = tuple(d * (k - 1) + 1 for k, d in zip(ks, dils))
    if any(e > p for e, p in zip(eff, padded)):
        raise RuntimeError(
            "Calculated padded input size per channel: "
            f"({' x '.join(map(str, padded))}). "
            f"Kernel size: ({' x '.join(map(str, eff))}). "
            "Kernel size can't be greater than actual input size"
        )
    return batched


def _same_padding(ks, dils):
    """torch's 'same': total d*(k-1) per axis, the odd unit on the right."""
    left, extra = [], []
    for k, d in zip(ks, dils):
        total = d * (k - 1)
        left.append(total // 2)
        extra.append(total - 2 * (total // 2))
    return tuple(left), tuple(extra)


def _conv(input, weight, bias, stride, padding, dilation, groups, nd, name):
    _check_input_dim(input, nd, name)
    if not isinstance(input, Tensor) or not isinstance(weight, Tensor):
        raise TypeError(f"{name}(): input and weight must be Tensors")
    unbatched = input.ndim == nd + 1
    if unbatched:
        input = input.unsqueeze(0)
    if isinstance(padding, str):
        if padding == "valid":
            padding = 0
        elif padding == "same":
            if any(s != 1 for s in _tuple(stride, nd, "stride")):
                raise RuntimeError(
                    "padding='same' is not supported for strided convolutions"
                )
            dils = _tuple(dilation, nd, "dilation")
            padding, extra = _same_padding(tuple(weight.shape[2:]), dils)
            if any(extra):
                spec = []
                for e in reversed(extra):
                    spec += [0, e]
                input = pad(input, spec)
        else:
            raise RuntimeError(
                f"Invalid padding string: {padding!r} (should be one of 'valid' or "
                "'same')"
            )
    geo = _geo(nd, stride, padding, dilation, groups)
    _check_conv(input, weight, bias, nd, geo)
    out = _Conv.apply(input, weight, bias, geo)
    return out.squeeze(0) if unbatched else out


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
           stride: int | tuple[int, ...] = 1, padding: int | tuple[int, ...] | str = 0,
           dilation: int | tuple[int, ...] = 1, groups: int = 1) -> Tensor:
    """2-d convolution (cross-correlation, as torch) over (N, C, H, W) input.

    Parameters
    ----------
    input : Tensor (N, C_in, H, W) or (C_in, H, W)
    weight : Tensor (C_out, C_in / groups, kH, kW)
    bias : Tensor (C_out,), optional
    stride, dilation : int or (int, int)
    padding : int, (int, int), 'valid' or 'same' (zeros)
    groups : int dividing C_in and C_out

    Returns
    -------
    Tensor (N, C_out, H_out, W_out), with
    ``H_out = (H + 2 pad - dil (kH - 1) - 1) // stride + 1``.
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
           stride: int | tuple[int, ...] = 1, padding: int | tuple[int, ...] | str = 0,
           dilation: int | tuple[int, ...] = 1, groups: int = 1) -> Tensor:
    """1-d convolution over (N, C, L) input; weight (C_out, C_in / groups, k)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def _conv_transpose_out(spatial, ks, geo, nd, output_padding, output_size):
    strides, pads, dils = (g[len(g) - nd:] for g in geo[:3])
    ops = _tuple(output_padding, nd, "output_padding")
    base = [
        (s - 1) * st - 2 * p + d * (k - 1) + 1
        for s, st, p, d, k in zip(spatial, strides, pads, dils, ks)
    ]
    if output_size is not None:
        size = tuple(int(v) for v in output_size)[-nd:]
        if len(size) != nd:
            raise ValueError(f"output_size must have {nd} or {nd + 2} elements "
                             f"(got {len(tuple(output_size))})")
        ops = []
        for want, b, st in zip(size, base, strides):
            if not b <= want < b + st:
                raise ValueError(
                    f"requested an output size of {list(size)}, but valid sizes "
                    f"range from {base} to {[b + s - 1 for b, s in zip(base, strides)]}"
                    f" (for an input of {list(spatial)})"
                )
            ops.append(want - b)
    for op, st, d in zip(ops, strides, dils):
        if op >= st and op >= d:
            raise RuntimeError(
                "output padding must be smaller than either stride or dilation, but "
                f"got output_padding={tuple(ops)}, stride={tuple(strides)}, "
                f"dilation={tuple(dils)}"
            )
    out = tuple(b + op for b, op in zip(base, ops))
    if any(o < 1 for o in out):
        raise RuntimeError(
            f"Given input size per channel: {list(spatial)}. Calculated output size "
            f"per channel: {list(out)}. Output size is too small"
        )
    return out


def _conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                    dilation, nd, name, output_size=None):
    _check_input_dim(input, nd, name)
    unbatched = input.ndim == nd + 1
    if unbatched:
        input = input.unsqueeze(0)
    geo = _geo(nd, stride, padding, dilation, groups)
    _check_conv(input, weight, bias, nd, geo, transposed=True)
    spatial = tuple(input.shape[2:])
    out_sp = _conv_transpose_out(spatial, tuple(weight.shape[2:]), geo, nd,
                                 output_padding, output_size)
    x_shape = (input.shape[0], weight.shape[1] * geo[3], *out_sp)
    out = _ConvTransposeData.apply(input, weight, bias, x_shape, geo)
    return out.squeeze(0) if unbatched else out


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: int | tuple[int, ...] = 1,
                     padding: int | tuple[int, ...] | str = 0,
                     output_padding: int | tuple[int, ...] = 0, groups: int = 1,
                     dilation: int | tuple[int, ...] = 1) -> Tensor:
    """Transposed 2-d convolution (the input gradient of ``conv2d``).

    weight : Tensor (C_in, C_out / groups, kH, kW); output
    ``H_out = (H - 1) stride - 2 pad + dil (kH - 1) + output_padding + 1``.
    """
    return _conv_transpose(input, weight, bias, stride, padding, output_padding,
                           groups, dilation, 2, "conv_transpose2d")


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: int | tuple[int, ...] = 1,
                     padding: int | tuple[int, ...] | str = 0,
                     output_padding: int | tuple[int, ...] = 0, groups: int = 1,
                     dilation: int | tuple[int, ...] = 1) -> Tensor:
    """Transposed 1-d convolution; weight (C_in, C_out / groups, k)."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding,
                           groups, dilation, 1, "conv_transpose1d")


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-d convolution over (N, C, D, H, W) input; weight (C_out, C_in / groups,
    kD, kH, kW); padding an int, 3 ints, 'valid' or 'same'."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """Transposed 3-d convolution; weight (C_in, C_out / groups, kD, kH, kW)."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding,
                           groups, dilation, 3, "conv_transpose3d")


# ---------------------------------------------------------------------------
# unfold / fold: im2col and col2im in torch's per-sample layout


class _Unfold(Function):
    """``cols = im2col(x)`` as (N, C*kh*kw, L);  grad_x = col2im(g)."""

    _node_name = "Im2ColBackward0"

    @staticmethod
    def forward(ctx, x, ks, geo):
        ctx.x_shape = tuple(x.shape)
        ctx.ks, ctx.geo = ks, geo
        return from_numpy(_unfold_arr(x._arr, ks, geo))

    @staticmethod
    def backward(ctx, grad):
        if not ctx.needs_input_grad[0]:
            return None, None, None
        if is_grad_enabled():
            return _Fold.apply(grad, ctx.x_shape, ctx.ks, ctx.geo), None, None
        gx = from_numpy(_fold_arr(grad._arr, ctx.x_shape, ctx.ks, ctx.geo))
        return gx, None, None


def _unfold_arr(x, ks, geo):
    return _cols(np.ascontiguousarray(x), ks[0], ks[1], geo)[0]


def _fold_arr(g, x_shape, ks, geo):
    (sh, sw), (ph, pw), (dh, dw), _ = geo
    x = np.empty(x_shape, dtype=g.dtype)
    _k.col2im(np.ascontiguousarray(g), ks[0], ks[1], sh, sw, ph, pw, dh, dw, x)
    return x


class _Fold(Function):
    """``x = col2im(cols)``;  grad_cols = im2col(g)."""

    _node_name = "Col2ImBackward0"

    @staticmethod
    def forward(ctx, cols, x_shape, ks, geo):
        ctx.ks, ctx.geo = ks, geo
        return from_numpy(_fold_arr(cols._arr, x_shape, ks, geo))

    @staticmethod
    def backward(ctx, grad):
        if not ctx.needs_input_grad[0]:
            return None, None, None, None
        if is_grad_enabled():
            return _Unfold.apply(grad, ctx.ks, ctx.geo), None, None, None
        return from_numpy(_unfold_arr(grad._arr, ctx.ks, ctx.geo)), None, None, None


def unfold(input: Tensor, kernel_size: int | tuple[int, ...],
           dilation: int | tuple[int, ...] = 1,
           padding: int | tuple[int, ...] | str = 0,
           stride: int | tuple[int, ...] = 1) -> Tensor:
    """Sliding local blocks of (N, C, H, W) input as (N, C*kh*kw, L) columns."""
    if input.ndim not in (3, 4):
        raise RuntimeError(
            "Input Error: Only 3D or 4D input Tensors are supported (got "
            f"{input.ndim}D)"
        )
    unbatched = input.ndim == 3
    if unbatched:
        input = input.unsqueeze(0)
    _check_real(input)
    ks = _tuple(kernel_size, 2, "kernel_size")
    geo = _geo(2, stride, padding, dilation, 1)
    if min(ks) < 1 or min(geo[0]) < 1 or min(geo[2]) < 1 or min(geo[1]) < 0:
        raise RuntimeError(
            f"unfold: kernel_size {ks}, stride {geo[0]} and dilation {geo[2]} must be "
            f"positive and padding {geo[1]} non-negative"
        )
    oh, ow = _out_hw(input.shape[2], input.shape[3], ks[0], ks[1], geo)
    if oh < 1 or ow < 1:
        raise RuntimeError(
            f"Given input with spatial size ({input.shape[2]}, {input.shape[3]}), "
            f"kernel_size={ks}, dilation={geo[2]}, padding={geo[1]}, calculated shape "
            f"of the array of sliding blocks as ({oh}, {ow}), but its components must "
            "be at least one."
        )
    out = _Unfold.apply(input, ks, geo)
    return out.squeeze(0) if unbatched else out


def fold(input: Tensor, output_size: int | tuple[int, ...],
         kernel_size: int | tuple[int, ...], dilation: int | tuple[int, ...] = 1,
         padding: int | tuple[int, ...] | str = 0,
         stride: int | tuple[int, ...] = 1) -> Tensor:
    """Sum (N, C*kh*kw, L) columns back into (N, C, H, W) images (unfold's
    adjoint)."""
    if input.ndim not in (2, 3):
        raise RuntimeError(
            "Input Error: Only unbatched (2D) or batched (3D) input Tensors are "
            f"supported (got {input.ndim}D)"
        )
    unbatched = input.ndim == 2
    if unbatched:
        input = input.unsqueeze(0)
    _check_real(input)
    ks = _tuple(kernel_size, 2, "kernel_size")
    size = _tuple(output_size, 2, "output_size")
    geo = _geo(2, stride, padding, dilation, 1)
    n, k, length = input.shape
    if k % (ks[0] * ks[1]):
        raise RuntimeError(
            "Expected size of input's dimension 1 to be divisible by the product of "
            f"kernel_size, but got input.size(1)={k} and kernel_size={ks}"
        )
    oh, ow = _out_hw(size[0], size[1], ks[0], ks[1], geo)
    if oh * ow != length or oh < 1 or ow < 1:
        raise RuntimeError(
            f"Given output_size={size}, kernel_size={ks}, dilation={geo[2]}, "
            f"padding={geo[1]}, stride={geo[0]}, expected size of input's dimension 2"
            f" to match the calculated number of sliding blocks {oh} * {ow} = "
            f"{oh * ow}, but got input.size(2)={length}."
        )
    out = _Fold.apply(input, (n, k // (ks[0] * ks[1]), *size), ks, geo)
    return out.squeeze(0) if unbatched else out


# ---------------------------------------------------------------------------
# pad: every mode is a gather through per-axis index maps


def _pad_map(size, before, after, mode):
    """Source index of each output position along one axis (-1: the constant)."""
    pos = np.arange(-before, size + after)
    if mode == "constant":
        return np.where((pos >= 0) & (pos < size), pos, -1).astype(np.intp)
    if mode == "reflect":
        period = 2 * (size - 1)
        r = np.mod(pos, period) if period else np.zeros_like(pos)
        return np.where(r < size, r, period - r).astype(np.intp)
    if mode == "replicate":
        return np.clip(pos, 0, size - 1).astype(np.intp)
    # circular: a negative amount crops first, then the kept part wraps
    lo, hi = max(0, -before), size - max(0, -after)
    if hi <= lo:
        return np.zeros(0, np.intp)
    kept = np.arange(-max(before, 0), hi - lo + max(after, 0))
    return (lo + np.mod(kept, hi - lo)).astype(np.intp)


class _Pad(Function):
    """``y = x[..., ih, iw]`` through index maps;  grad_x = scatter-add of g."""

    _node_name = "PadBackward0"

    @staticmethod
    def forward(ctx, x, ih, iw, value):
        a = np.ascontiguousarray(x._arr)
        h, w = a.shape[-2:]
        lead = a.shape[:-2]
        out = np.empty(lead + (len(ih), len(iw)), dtype=a.dtype)
        b = math.prod(lead)  # not -1: a plane may be empty
        _k.gather2d(a.reshape(b, h, w), ih, iw, value,
                    out.reshape(b, len(ih), len(iw)))
        ctx.x_shape = a.shape
        ctx.maps = (ih, iw)
        return from_numpy(out)

    @staticmethod
    def backward(ctx, grad):
        if not ctx.needs_input_grad[0]:
            return None, None, None, None
        ih, iw = ctx.maps
        if is_grad_enabled():
            return _PadGrad.apply(grad, ih, iw, ctx.x_shape), None, None, None
        return from_numpy(_scatter(grad._arr, ih, iw, ctx.x_shape)), None, None, None


def _scatter(g, ih, iw, x_shape):
    g = np.ascontiguousarray(g)
    out = np.empty(x_shape, dtype=g.dtype)
    h, w = x_shape[-2:]
    b = math.prod(x_shape[:-2])  # not -1: a plane may be empty
    _k.scatter2d(g.reshape(b, len(ih), len(iw)), ih, iw, out.reshape(b, h, w))
    return out


class _PadGrad(Function):
    """The scatter-add (adjoint of ``_Pad``); its gradient is the gather."""

    _node_name = "PadBackwardBackward0"

    @staticmethod
    def forward(ctx, g, ih, iw, x_shape):
        ctx.maps = (ih, iw)
        return from_numpy(_scatter(g._arr, ih, iw, x_shape))

    @staticmethod
    def backward(ctx, grad):
        if not ctx.needs_input_grad[0]:
            return None, None, None, None
        ih, iw = ctx.maps
        return _Pad.apply(grad, ih, iw, 0.0), None, None, None


_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant",
        value: float | None = None) -> Tensor:
    """Pad the last ``len(pad) // 2`` dimensions, as ``torch.nn.functional.pad``.

    ``pad = (left_last, right_last, left_second_last, ...)``; negative
    amounts crop.  Modes: 'constant' (``value``, default 0; any number of
    dimensions), 'reflect' (mirror without the edge), 'replicate' (repeat the
    edge), 'circular' (wrap around) -- these pad 1, 2 or 3 trailing
    dimensions of a 2-d to 5-d input.
    """
    spec = [int(p) for p in pad]
    if len(spec) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if mode not in _PAD_MODES:
        raise NotImplementedError(
            f"Unrecognised padding mode {mode}; expected one of {_PAD_MODES}"
        )
    k = len(spec) // 2
    if k > input.ndim:
        raise RuntimeError(
            "Padding length should be less than or equal to two times the input "
            f"dimension but got padding length {len(spec)} and input of dimension "
            f"{input.ndim}"
        )
    if mode != "constant":
        if value not in (None, 0, 0.0):
            raise RuntimeError(
                f"Padding mode \"{mode}\" doesn't take in value argument"
            )
        if k not in (1, 2, 3) or input.ndim not in (k + 1, k + 2):
            raise NotImplementedError(
                f"Padding size {len(spec)} is not supported for {input.ndim}D input "
                "tensor. Non-constant modes pad the last 1, 2 or 3 dimensions of a "
                "2D-3D, 3D-4D or 4D-5D input."
            )
    _check_real(input)
    if k == 0:
        return input.clone()
    shape = tuple(input.shape)
    for axis in range(k):
        dim = -1 - axis
        size = shape[dim]
        b, a = spec[2 * axis], spec[2 * axis + 1]
        if size + b + a < 0:
            raise RuntimeError(
                f"The input size {size}, plus negative padding {b} and {a} resulted in"
                f" a negative output size, which is invalid. Check dimension {dim} of "
                "your input."
            )
        if mode == "reflect" and (b >= size or a >= size):
            raise RuntimeError(
                f"Argument #{4 + 2 * axis}: Padding size should be less than the "
                f"corresponding input dimension, but got: padding ({b}, {a}) at "
                f"dimension {input.ndim + dim} of input {_size_str(shape)}"
            )
        if mode == "circular" and (b > size or a > size):
            raise RuntimeError(
                "Padding value causes wrapping around more than once."
            )
        if mode == "replicate" and size == 0:
            raise RuntimeError(f"pad: replicate padding of an empty dimension {dim}")
    val = 0.0 if value is None else float(value)
    iw = _pad_map(shape[-1], spec[0], spec[1], mode)
    if k >= 2:
        ih = _pad_map(shape[-2], spec[2], spec[3], mode)
        out = _Pad.apply(input, ih, iw, val)
    else:
        ih = np.zeros(1, np.intp)
        x = input.unsqueeze(-2) if input.ndim >= 2 else input.unsqueeze(0)
        out = _Pad.apply(x, ih, iw, val)
        out = out.squeeze(-2) if input.ndim >= 2 else out.squeeze(0)
    for axis in range(2, k):
        # each further axis: a gather of (lead, size, inner) rows, the inner
        # positions kept (separable modes, so the order does not matter)
        dim = out.ndim - 1 - axis
        cur = tuple(out.shape)
        lead, inner = math.prod(cur[:dim]), math.prod(cur[dim + 1:])
        m = _pad_map(cur[dim], spec[2 * axis], spec[2 * axis + 1], mode)
        y = _Pad.apply(out.reshape(lead, cur[dim], inner), m,
                       np.arange(inner, dtype=np.intp), val)
        out = y.reshape(cur[:dim] + (len(m),) + cur[dim + 1:])
    return out
