"""Array code of the 3-d convolutions: ``vol2col`` lowering plus one BLAS
product, the three maps of ``_functional_conv`` (``B``, ``B_x^T``, ``B_w^T``)
on ``(N, C, D, H, W)`` volumes.

``_functional_conv``'s Functions call these when their arrays are 5-d, so
the 3-d layers share the 2-d layers' autograd (every derivative order is a
convolution again).  The layout choice is the 2-d one (``_ROWS_MIN_K``):
for ``K = C*kd*kh*kw >= 64`` (a 3x3x3 kernel over 3 or more channels) one
product ``(N*L, K) @ (K, O)`` over the batch matrix, else a per-sample
(per-group) stack.  Grouped layers (depthwise too) take the stack: there is
no 3-d direct depthwise kernel.
"""

import numpy as np

from cygrad._kernels import conv as _k

from . import _conv_products as _products

_ROWS_MIN_K = 64


def out_size(spatial, ks, geo):
    s, p, d, _ = geo
    return tuple(_k.conv_out_size(n, k, st, pp, dd)
                 for n, k, st, pp, dd in zip(spatial, ks, s, p, d))


def _lower(x, ks, geo, rows_first):
    n, c = x.shape[:2]
    outs = out_size(x.shape[2:], ks, geo)
    length = outs[0] * outs[1] * outs[2]
    kk = c * ks[0] * ks[1] * ks[2]
    shape = (kk, n, length) if rows_first else (n, kk, length)
    cols = _products.scratch(shape, x.dtype)
    _k.vol2col(np.ascontiguousarray(x), tuple(ks), geo[0], geo[1], geo[2], cols,
               rows_first)
    return cols, outs


def _big(w_shape, groups):
    return groups == 1 and w_shape[1] * w_shape[2] * w_shape[3] * w_shape[4] >= \
        _ROWS_MIN_K


def pad_to(g, outs):
    """g (N, O, *s) zero-extended at the far ends to (N, O, *outs) (see
    ``_functional_conv._pad_to``)."""
    if tuple(g.shape[2:]) == tuple(outs):
        return g
    out = np.zeros(g.shape[:2] + tuple(outs), dtype=g.dtype)
    out[:, :, :g.shape[2], :g.shape[3], :g.shape[4]] = g
    return out


def conv_arr(x, w, b, geo, cols=None):
    """y = B(x, w) + b for x (N, C, D, H, W), w (O, C/G, kd, kh, kw); returns
    (y, cols) with cols in the layout ``_big`` picks."""
    n = x.shape[0]
    o, cg = w.shape[:2]
    ks = tuple(w.shape[2:])
    groups = geo[3]
    big = _big(w.shape, groups)
    if cols is None:
        cols, outs = _lower(x, ks, geo, big)
    else:
        outs = out_size(x.shape[2:], ks, geo)
    length = outs[0] * outs[1] * outs[2]
    k = cg * ks[0] * ks[1] * ks[2]
    y = _products.forward(cols, w, b, n, k, length, groups, big)
    return y.reshape((n, o) + outs), cols


def conv_t_arr(g, w, x_shape, geo):
    """x' = B_x^T(g, w): the (N, C, D, H, W) input gradient of a convolution."""
    groups = geo[3]
    cg = w.shape[1]
    ks = tuple(w.shape[2:])
    g = np.ascontiguousarray(pad_to(g, out_size(x_shape[2:], ks, geo)))
    n = g.shape[0]
    k = cg * ks[0] * ks[1] * ks[2]
    length = g.shape[2] * g.shape[3] * g.shape[4]
    gcols = _products.input_grad_cols(
        g, w, n, k, length, groups, _products.scratch((n, groups * k, length), g.dtype))
    x = np.empty(tuple(x_shape), dtype=g.dtype)
    _k.col2vol(gcols, ks, geo[0], geo[1], geo[2], x)
    _products.recycle(gcols)
    return x


def conv_w_arr(x, g, w_shape, geo, cols=None):
    """w' = B_w^T(x, g) of shape ``w_shape``; ``cols`` are the forward's
    (x may then be None)."""
    o, cg = w_shape[:2]
    ks = tuple(w_shape[2:])
    groups = geo[3]
    big = _big(w_shape, groups)
    if x is not None:
        g = pad_to(g, out_size(x.shape[2:], ks, geo))
    own = cols is None  # lowered here, so recycled here
    if own:
        cols = _lower(x, ks, geo, big)[0]
    g = np.ascontiguousarray(g)
    n = g.shape[0]
    k = cg * ks[0] * ks[1] * ks[2]
    gw = _products.weight_grad(cols, g, n, o, k, groups, big)
    if own:
        _products.recycle(cols)
    return np.ascontiguousarray(gw).reshape(w_shape)
