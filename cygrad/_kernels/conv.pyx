"""Convolution lowering: im2col / col2im, and index gathers for padding.

Layout: images are C-contiguous ``(N, C, H, W)`` (a 1-d signal is ``H = 1``).
``im2col`` writes the column matrices as ``(N, C * kh * kw, OH * OW)``: row
``(c * kh + i) * kw + j`` of sample ``n`` holds, for every output position,
the input pixel that kernel tap ``(i, j)`` of channel ``c`` sees (zero where
it falls in the padding); or, with ``rows_first``, as one matrix
``(C * kh * kw, N * OH * OW)`` for the whole batch.  The caller does the
products with NumPy's BLAS: a per-sample stack ``weight @ cols[n]`` (small
K: its result is already ``(N, C_out, L)``), or one product ``weight @``
the batch matrix (large K; see ``_functional_conv``).  ``col2im`` is
its adjoint: it adds each column entry back into the pixel it came from (the
gradient of im2col), so it overwrites ``out`` and then accumulates.

``vol2col`` / ``col2vol`` are the same pair for volumes ``(N, C, D, H, W)``
(rows ``((c * kd + a) * kh + i) * kw + j``, columns ``OD * OH * OW``): the
one loop nest of ``_im2col`` with the depth taps outside the rows, so a 3-d
convolution is one BLAS product as well (a depth tap in the padding is a
zeroed block of ``OH * OW`` columns).

``depthwise_*`` are the direct loops of ``groups == C_in`` layers (their
per-plane arithmetic in ``cg_dw.h``, compiled per SIMD level): each input
plane is copied into a zero-bordered scratch plane, so no tap is clipped.

``gather2d`` / ``scatter2d`` move ``(B, H, W)`` planes through two index
maps, one per axis (``-1``: the constant ``value``): constant, reflect,
replicate and circular padding and nearest interpolation are all such maps;
``scatter2d`` (the adjoint, adding into ``out``) is their gradient.

Dtypes: ``real_t`` (float32, float64).  Bounds: every wrapper checks shapes
and index ranges with the GIL held before the unchecked loop runs.
Aliasing: outputs must not alias inputs.  Threading: single-threaded loops
with the GIL released; the BLAS call in the caller does the heavy work.
"""

from libc.string cimport memcpy, memset

import numpy as np

from cygrad._kernels._types cimport real_t


cdef extern from "cg_dw.h":
    void cg_im2col_rows_f32(const float* src, Py_ssize_t h, Py_ssize_t w,
                            Py_ssize_t oh, Py_ssize_t ow, Py_ssize_t sh,
                            Py_ssize_t ph, Py_ssize_t row_tap, Py_ssize_t off,
                            Py_ssize_t sw, Py_ssize_t lo, Py_ssize_t hi,
                            float* dst) noexcept nogil
    void cg_im2col_rows_f64(const double* src, Py_ssize_t h, Py_ssize_t w,
                            Py_ssize_t oh, Py_ssize_t ow, Py_ssize_t sh,
                            Py_ssize_t ph, Py_ssize_t row_tap, Py_ssize_t off,
                            Py_ssize_t sw, Py_ssize_t lo, Py_ssize_t hi,
                            double* dst) noexcept nogil
    void cg_im2col_block_f32(const float* src, Py_ssize_t h, Py_ssize_t w,
                             Py_ssize_t oh, Py_ssize_t ph, Py_ssize_t row_tap,
                             Py_ssize_t off, Py_ssize_t lo, Py_ssize_t hi,
                             float* dst) noexcept nogil
    void cg_im2col_block_f64(const double* src, Py_ssize_t h, Py_ssize_t w,
                             Py_ssize_t oh, Py_ssize_t ph, Py_ssize_t row_tap,
                             Py_ssize_t off, Py_ssize_t lo, Py_ssize_t hi,
                             double* dst) noexcept nogil
    void cg_dw_fwd1_f32(const float* xp, Py_ssize_t pitch, const float* wk,
                        float bias, Py_ssize_t kh, Py_ssize_t kw, Py_ssize_t dh,
                        Py_ssize_t dw, Py_ssize_t oh, Py_ssize_t ow, float* wide,
                        float* y, int add) noexcept nogil
    void cg_dw_fwd1_f64(const double* xp, Py_ssize_t pitch, const double* wk,
                        double bias, Py_ssize_t kh, Py_ssize_t kw, Py_ssize_t dh,
                        Py_ssize_t dw, Py_ssize_t oh, Py_ssize_t ow, double* wide,
                        double* y, int add) noexcept nogil
    void cg_dw_fwd_f32(const float* xp, Py_ssize_t pitch, const float* wk, float bias,
                       Py_ssize_t kh, Py_ssize_t kw, Py_ssize_t sh, Py_ssize_t sw,
                       Py_ssize_t dh, Py_ssize_t dw, Py_ssize_t oh, Py_ssize_t ow,
                       float* y) noexcept nogil
    void cg_dw_fwd_f64(const double* xp, Py_ssize_t pitch, const double* wk,
                       double bias, Py_ssize_t kh, Py_ssize_t kw, Py_ssize_t sh,
                       Py_ssize_t sw, Py_ssize_t dh, Py_ssize_t dw, Py_ssize_t oh,
                       Py_ssize_t ow, double* y) noexcept nogil
    void cg_dw_data_f32(float* xp, Py_ssize_t pitch, const float* wk, Py_ssize_t kh,
                        Py_ssize_t kw, Py_ssize_t sh, Py_ssize_t sw, Py_ssize_t dh,
                        Py_ssize_t dw, Py_ssize_t oh, Py_ssize_t ow,
                        const float* g) noexcept nogil
    void cg_dw_data_f64(double* xp, Py_ssize_t pitch, const double* wk,
                        Py_ssize_t kh, Py_ssize_t kw, Py_ssize_t sh, Py_ssize_t sw,
                        Py_ssize_t dh, Py_ssize_t dw, Py_ssize_t oh, Py_ssize_t ow,
                        const double* g) noexcept nogil
    void cg_dw_weight1_f32(const float* xp, Py_ssize_t pitch, const float* gwide,
                           Py_ssize_t kh, Py_ssize_t kw, Py_ssize_t dh, Py_ssize_t dw,
                           Py_ssize_t oh, Py_ssize_t ow, double* gw) noexcept nogil
    void cg_dw_weight1_f64(const double* xp, Py_ssize_t pitch, const double* gwide,
                           Py_ssize_t kh, Py_ssize_t kw, Py_ssize_t dh, Py_ssize_t dw,
                           Py_ssize_t oh, Py_ssize_t ow, double* gw) noexcept nogil
    void cg_dw_weight_f32(const float* xp, Py_ssize_t pitch, const float* g,
                          Py_ssize_t kh, Py_ssize_t kw, Py_ssize_t sh, Py_ssize_t sw,
                          Py_ssize_t dh, Py_ssize_t dw, Py_ssize_t oh, Py_ssize_t ow,
                          float* acc, double* dacc) noexcept nogil
    void cg_dw_weight_f64(const double* xp, Py_ssize_t pitch, const double* g,
                          Py_ssize_t kh, Py_ssize_t kw, Py_ssize_t sh, Py_ssize_t sw,
                          Py_ssize_t dh, Py_ssize_t dw, Py_ssize_t oh, Py_ssize_t ow,
                          double* acc, double* dacc) noexcept nogil


def conv_out_size(Py_ssize_t size, Py_ssize_t k, Py_ssize_t s, Py_ssize_t p,
                  Py_ssize_t d):
    """Output length of a convolution window ``k`` (dilation ``d``) over
    ``size + 2p`` samples at stride ``s``; may be <= 0 (caller raises)."""
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


cdef _check_geometry(str name, Py_ssize_t n, Py_ssize_t c, Py_ssize_t h,
                     Py_ssize_t w, Py_ssize_t kh, Py_ssize_t kw, Py_ssize_t sh,
                     Py_ssize_t sw, Py_ssize_t ph, Py_ssize_t pw, Py_ssize_t dh,
                     Py_ssize_t dw, Py_ssize_t nc, Py_ssize_t rows,
                     Py_ssize_t cols):
    if kh < 1 or kw < 1 or sh < 1 or sw < 1 or dh < 1 or dw < 1 or ph < 0 or pw < 0:
        raise ValueError(
            f"{name}: kernel ({kh}, {kw}), stride ({sh}, {sw}) and dilation "
            f"({dh}, {dw}) must be positive and padding ({ph}, {pw}) >= 0"
        )
    oh = conv_out_size(h, kh, sh, ph, dh)
    ow = conv_out_size(w, kw, sw, pw, dw)
    if oh < 1 or ow < 1:
        raise ValueError(f"{name}: output size ({oh}, {ow}) is empty")
    if nc != n or rows != c * kh * kw or cols != oh * ow:
        raise ValueError(
            f"{name}: columns have shape ({nc}, {rows}, {cols}), expected "
            f"({n}, {c * kh * kw}, {oh * ow})"
        )
    return oh, ow


def im2col(
    const real_t[:, :, :, ::1] x,     # in  (N, C, H, W)
    Py_ssize_t kh, Py_ssize_t kw, Py_ssize_t sh, Py_ssize_t sw,
    Py_ssize_t ph, Py_ssize_t pw, Py_ssize_t dh, Py_ssize_t dw,
    real_t[:, :, ::1] cols,           # out (N, C*kh*kw, OH*OW), or (C*kh*kw, N, ..)
    bint rows_first=False,
):
    """Write the column matrices of ``x`` for the given window (module doc).

    ``rows_first=True`` writes them as ``(C*kh*kw, N, OH*OW)``: one matrix
    ``(K, N*L)`` for the whole batch, whose transpose BLAS reads directly."""
    cdef Py_ssize_t n = x.shape[0], c = x.shape[1], h = x.shape[2], w = x.shape[3]
    cdef Py_ssize_t oh, ow
    if rows_first:
        oh, ow = _check_geometry("im2col", n, c, h, w, kh, kw, sh, sw, ph, pw, dh,
                                 dw, cols.shape[1], cols.shape[0], cols.shape[2])
    else:
        oh, ow = _check_geometry("im2col", n, c, h, w, kh, kw, sh, sw, ph, pw, dh,
                                 dw, cols.shape[0], cols.shape[1], cols.shape[2])
    if n == 0 or c == 0:
        return
    with nogil:
        _im2col(<real_t*>&x[0, 0, 0, 0], n, c, h, w, kh, kw, sh, sw, ph, pw, dh,
                dw, oh, ow, &cols[0, 0, 0], 0, rows_first)


def col2im(
    const real_t[:, :, ::1] cols,     # in  (N, C*kh*kw, OH*OW)
    Py_ssize_t kh, Py_ssize_t kw, Py_ssize_t sh, Py_ssize_t sw,
    Py_ssize_t ph, Py_ssize_t pw, Py_ssize_t dh, Py_ssize_t dw,
    real_t[:, :, :, ::1] x,           # out (N, C, H, W), overwritten
):
    """``x = im2col^T(cols)``: every column entry added back to its pixel."""
    cdef Py_ssize_t n = x.shape[0], c = x.shape[1], h = x.shape[2], w = x.shape[3]
    cdef Py_ssize_t oh, ow
    oh, ow = _check_geometry("col2im", n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw,
                             cols.shape[0], cols.shape[1], cols.shape[2])
    if n == 0 or c == 0:
        return
    with nogil:
        memset(&x[0, 0, 0, 0], 0, n * c * h * w * sizeof(real_t))
        _im2col(<real_t*>&x[0, 0, 0, 0], n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw,
                oh, ow, <real_t*>&cols[0, 0, 0], 1, 0)


cdef inline void _ow_range(Py_ssize_t ow, Py_ssize_t w, Py_ssize_t sw,
                           Py_ssize_t off, Py_ssize_t* lo,
                           Py_ssize_t* hi) noexcept nogil:
    # Output columns whose input column o * sw + off lies in [0, w).
    cdef Py_ssize_t a = 0, b
    if off < 0:
        a = (-off + sw - 1) // sw
    if w - 1 - off < 0:
        b = 0
    else:
        b = (w - 1 - off) // sw + 1
    if b > ow:
        b = ow
    if a > b:
        a = b
    lo[0] = a
    hi[0] = b


cdef inline void _plane_rows(real_t* src, Py_ssize_t h, Py_ssize_t w,
                             Py_ssize_t oh, Py_ssize_t ow, Py_ssize_t sh,
                             Py_ssize_t ph, Py_ssize_t row_tap, Py_ssize_t off,
                             Py_ssize_t sw, Py_ssize_t lo, Py_ssize_t hi,
                             real_t* dst, bint adjoint) noexcept nogil:
    """The oh rows of one tap's column block from one (H, W) plane (rows
    outside the plane are zeros), or, adjoint, those rows added back into
    it; the one row loop of _im2col and _vol2col."""
    cdef Py_ssize_t o, ih
    if not adjoint and sh == 1 and sw == 1 and ow == w:
        # a stride-1 "same" row: the whole block is one shifted copy
        if real_t is float:
            cg_im2col_block_f32(src, h, w, oh, ph, row_tap, off, lo, hi, dst)
        else:
            cg_im2col_block_f64(src, h, w, oh, ph, row_tap, off, lo, hi, dst)
        return
    if not adjoint:
        if real_t is float:
            cg_im2col_rows_f32(src, h, w, oh, ow, sh, ph, row_tap, off, sw, lo, hi,
                               dst)
        else:
            cg_im2col_rows_f64(src, h, w, oh, ow, sh, ph, row_tap, off, sw, lo, hi,
                               dst)
        return
    for o in range(oh):
        ih = o * sh - ph + row_tap
        if 0 <= ih < h:
            _add_row(src + ih * w, off, sw, dst, lo, hi)
        dst += ow


cdef void _im2col(real_t* x, Py_ssize_t n, Py_ssize_t c, Py_ssize_t h,
                  Py_ssize_t w, Py_ssize_t kh, Py_ssize_t kw, Py_ssize_t sh,
                  Py_ssize_t sw, Py_ssize_t ph, Py_ssize_t pw, Py_ssize_t dh,
                  Py_ssize_t dw, Py_ssize_t oh, Py_ssize_t ow, real_t* cols,
                  bint adjoint, bint rows_first) noexcept nogil:
    # adjoint = 0: cols[s, row, pos] = x[pixel]; adjoint = 1: x[pixel] += cols[..]
    # (one loop nest for both, so the two can never disagree on the geometry).
    # Each input plane is read for its kh * kw taps while it is in L1.  The
    # per-sample columns are then written front to back; the rows-first ones
    # are walked channel-outermost, written as kh * kw sequential streams
    # (sample-outermost, jumping between rows, took 1.3-1.5x as long).
    cdef Py_ssize_t t, s, ci, tap, rest, i, j, off, lo, hi
    cdef Py_ssize_t plane = oh * ow, k = c * kh * kw, taps = kh * kw
    cdef real_t* dst
    cdef real_t* src
    for t in range(n * k):
        tap = t % taps
        rest = t // taps
        if rows_first:
            ci = rest // n
            s = rest - ci * n
            dst = cols + ((ci * taps + tap) * n + s) * plane
        else:
            s = rest // c
            ci = rest - s * c
            dst = cols + t * plane
        i = tap // kw
        j = tap - i * kw
        src = x + (s * c + ci) * h * w
        off = j * dw - pw
        _ow_range(ow, w, sw, off, &lo, &hi)
        _plane_rows(src, h, w, oh, ow, sh, ph, i * dh, off, sw, lo, hi, dst, adjoint)


cdef inline void _zero(real_t* d, Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    if hi > lo:
        memset(d + lo, 0, (hi - lo) * sizeof(real_t))


cdef inline void _add_row(real_t* srow, Py_ssize_t off, Py_ssize_t sw,
                          const real_t* d, Py_ssize_t lo,
                          Py_ssize_t hi) noexcept nogil:
    # srow[q * sw + off] += d[q] for q in [lo, hi); srow and d never overlap.
    cdef Py_ssize_t q
    cdef real_t* r
    if sw == 1:
        r = srow + off
        for q in range(lo, hi):
            r[q] += d[q]
    else:
        for q in range(lo, hi):
            srow[q * sw + off] += d[q]


# --------------------------------------------------------------------------
# depthwise convolution (groups == C_in): direct loops, no lowering


cdef _check_dw(str name, Py_ssize_t n, Py_ssize_t c, Py_ssize_t h, Py_ssize_t w,
               Py_ssize_t o, Py_ssize_t taps, Py_ssize_t kh, Py_ssize_t kw,
               Py_ssize_t sh, Py_ssize_t sw, Py_ssize_t ph, Py_ssize_t pw,
               Py_ssize_t dh, Py_ssize_t dw, Py_ssize_t n2, Py_ssize_t o2,
               Py_ssize_t oh2, Py_ssize_t ow2):
    if kh < 1 or kw < 1 or sh < 1 or sw < 1 or dh < 1 or dw < 1 or ph < 0 or pw < 0:
        raise ValueError(f"{name}: bad window geometry")
    if c == 0 or o % c != 0 or taps != kh * kw:
        raise ValueError(
            f"{name}: weight ({o}, {taps}) does not fit {c} channels and a "
            f"{kh}x{kw} kernel"
        )
    oh = conv_out_size(h, kh, sh, ph, dh)
    ow = conv_out_size(w, kw, sw, pw, dw)
    if n2 != n or o2 != o or oh2 != oh or ow2 != ow:
        raise ValueError(
            f"{name}: output ({n2}, {o2}, {oh2}, {ow2}), expected ({n}, {o}, {oh}, "
            f"{ow})"
        )


cdef tuple _dw_scratch(Py_ssize_t h, Py_ssize_t w, Py_ssize_t ph, Py_ssize_t pw,
                       Py_ssize_t oh, Py_ssize_t ow, Py_ssize_t kh, Py_ssize_t kw,
                       Py_ssize_t sh, Py_ssize_t sw, Py_ssize_t dh, Py_ssize_t dw,
                       Py_ssize_t m, int mode, dtype):
    # Zeroed scratch of _depthwise: (padded plane, second plane, acc, dacc),
    # sized for the direction `mode` (see there).
    cdef Py_ssize_t pitch = w + 2 * pw, rows = (h + 2 * ph) * pitch
    one = sh == 1 and sw == 1
    if mode == 1 and one:
        # the output gradient with a border of the kernel's extent less one
        pitch = ow + 2 * (kw - 1) * dw
        rows = (oh + 2 * (kh - 1) * dh) * pitch
    xp = np.zeros(rows, dtype=dtype)
    second = np.zeros(max(oh, h) * pitch if one else 1, dtype=dtype)
    strided_w = mode == 2 and not one
    acc = np.zeros(kh * kw * ow if strided_w else 1, dtype=dtype)
    dacc = np.zeros(m * kh * kw * ow if strided_w else 1)
    return xp, second, acc, dacc


def depthwise_fwd(
    const real_t[:, :, :, ::1] x,     # in  (N, C, H, W)
    const real_t[:, ::1] wt,          # in  (C * m, kh * kw)
    Py_ssize_t kh, Py_ssize_t kw, Py_ssize_t sh, Py_ssize_t sw,
    Py_ssize_t ph, Py_ssize_t pw, Py_ssize_t dh, Py_ssize_t dw,
    real_t[:, :, :, ::1] y,           # out (N, C * m, OH, OW)
    const real_t[::1] bias=None,      # in  (C * m,) or None
):
    """Depthwise convolution: output channel ``k`` is input channel ``k // m``
    correlated with its own kernel (``groups == C``, channel multiplier m),
    plus ``bias[k]``.

    Direct loops (``cg_dw.h``): measured 40x faster than the per-group
    lowering, whose products are (1 x kh*kw) @ (kh*kw x L), a stack of
    thousands of BLAS calls."""
    cdef Py_ssize_t n = x.shape[0], c = x.shape[1], h = x.shape[2], w = x.shape[3]
    cdef Py_ssize_t o = wt.shape[0]
    _check_dw("depthwise_fwd", n, c, h, w, o, wt.shape[1], kh, kw, sh, sw, ph, pw,
              dh, dw, y.shape[0], y.shape[1], y.shape[2], y.shape[3])
    if bias is not None and bias.shape[0] != o:
        raise ValueError(f"depthwise_fwd: bias has {bias.shape[0]} entries, not {o}")
    if n == 0 or o == 0 or y.shape[2] <= 0 or y.shape[3] <= 0:
        return
    cdef Py_ssize_t oh = y.shape[2], ow = y.shape[3]
    xp_a, second_a, acc_a, dacc_a = _dw_scratch(h, w, ph, pw, oh, ow, kh, kw, sh, sw,
                                                dh, dw, o // c, 0, np.asarray(x).dtype)
    cdef real_t[::1] xp = xp_a, second = second_a
    with nogil:
        _depthwise(<real_t*>&x[0, 0, 0, 0], n, c, h, w, o, &wt[0, 0],
                   &bias[0] if bias is not None else NULL, kh, kw, sh, sw, ph, pw,
                   dh, dw, oh, ow, &y[0, 0, 0, 0], &xp[0], &second[0], NULL, NULL,
                   NULL, 0)


def depthwise_bwd_data(
    const real_t[:, :, :, ::1] g,     # in  (N, C * m, OH, OW)
    const real_t[:, ::1] wt,          # in  (C * m, kh * kw)
    Py_ssize_t kh, Py_ssize_t kw, Py_ssize_t sh, Py_ssize_t sw,
    Py_ssize_t ph, Py_ssize_t pw, Py_ssize_t dh, Py_ssize_t dw,
    real_t[:, :, :, ::1] dx,          # out (N, C, H, W), overwritten
):
    """The input gradient of ``depthwise_fwd`` (its adjoint in x)."""
    cdef Py_ssize_t n = dx.shape[0], c = dx.shape[1], h = dx.shape[2], w = dx.shape[3]
    cdef Py_ssize_t o = wt.shape[0]
    _check_dw("depthwise_bwd_data", n, c, h, w, o, wt.shape[1], kh, kw, sh, sw, ph,
              pw, dh, dw, g.shape[0], g.shape[1], g.shape[2], g.shape[3])
    if n == 0 or c == 0 or h * w == 0:
        return
    if o == 0 or g.shape[2] <= 0 or g.shape[3] <= 0:
        dx[:, :, :, :] = 0
        return
    cdef Py_ssize_t oh = g.shape[2], ow = g.shape[3]
    xp_a, second_a, acc_a, dacc_a = _dw_scratch(h, w, ph, pw, oh, ow, kh, kw, sh, sw,
                                                dh, dw, o // c, 1, np.asarray(dx).dtype)
    cdef real_t[::1] xp = xp_a, second = second_a
    cdef const real_t[:, ::1] wk = wt
    if sh == 1 and sw == 1:
        # the correlation of the zero-bordered g with the flipped kernel
        wk = np.ascontiguousarray(np.asarray(wt)[:, ::-1])
    with nogil:
        _depthwise(&dx[0, 0, 0, 0], n, c, h, w, o, &wk[0, 0], NULL, kh, kw, sh, sw,
                   ph, pw, dh, dw, oh, ow, <real_t*>&g[0, 0, 0, 0], &xp[0],
                   &second[0], NULL, NULL, NULL, 1)


def depthwise_bwd_weight(
    const real_t[:, :, :, ::1] x,     # in  (N, C, H, W)
    const real_t[:, :, :, ::1] g,     # in  (N, C * m, OH, OW)
    Py_ssize_t kh, Py_ssize_t kw, Py_ssize_t sh, Py_ssize_t sw,
    Py_ssize_t ph, Py_ssize_t pw, Py_ssize_t dh, Py_ssize_t dw,
    double[:, ::1] gw,                # out (C * m, kh * kw), overwritten
):
    """The weight gradient of ``depthwise_fwd``: per tap, the dot product of
    the output gradient with the shifted input (``cg_dw.h``: at most 16
    products a lane summed in the input's dtype, then in double)."""
    cdef Py_ssize_t n = x.shape[0], c = x.shape[1], h = x.shape[2], w = x.shape[3]
    cdef Py_ssize_t o = gw.shape[0]
    _check_dw("depthwise_bwd_weight", n, c, h, w, o, gw.shape[1], kh, kw, sh, sw,
              ph, pw, dh, dw, g.shape[0], g.shape[1], g.shape[2], g.shape[3])
    if o == 0:
        return
    gw[:, :] = 0.0
    if n == 0 or g.shape[2] <= 0 or g.shape[3] <= 0:
        return
    cdef Py_ssize_t oh = g.shape[2], ow = g.shape[3]
    xp_a, second_a, acc_a, dacc_a = _dw_scratch(h, w, ph, pw, oh, ow, kh, kw, sh, sw,
                                                dh, dw, o // c, 2, np.asarray(x).dtype)
    cdef real_t[::1] xp = xp_a, second = second_a, acc = acc_a
    cdef double[::1] dacc = dacc_a
    with nogil:
        _depthwise(<real_t*>&x[0, 0, 0, 0], n, c, h, w, o, NULL, NULL, kh, kw, sh,
                   sw, ph, pw, dh, dw, oh, ow, <real_t*>&g[0, 0, 0, 0], &xp[0],
                   &second[0], &acc[0], &dacc[0], &gw[0, 0], 2)


cdef void _depthwise(real_t* x, Py_ssize_t n, Py_ssize_t c, Py_ssize_t h,
                     Py_ssize_t w, Py_ssize_t o, const real_t* wt,
                     const real_t* bias, Py_ssize_t kh, Py_ssize_t kw,
                     Py_ssize_t sh, Py_ssize_t sw, Py_ssize_t ph, Py_ssize_t pw,
                     Py_ssize_t dh, Py_ssize_t dw, Py_ssize_t oh, Py_ssize_t ow,
                     real_t* y, real_t* xp, real_t* second, real_t* acc,
                     double* dacc, double* gw, int mode) noexcept nogil:
    # One loop nest for the three directions (they cannot disagree on the
    # geometry); xp is a zero-bordered copy of one plane (cg_dw.h):
    # mode 0  y[out] = bias + sum w * x[in]; xp holds the x plane, second is
    #         the wide-grid output of the stride-1 loop
    # mode 1  x[in] = sum w * y[out] (y: the output gradient).  Stride 1: the
    #         correlation of the y plane, copied into xp with a border of
    #         (kh - 1) dh rows and (kw - 1) dw columns, with the flipped
    #         kernel (wt, flipped by the caller), one x plane per pass; else
    #         scattered into the padded x plane xp
    # mode 2  gw[k, tap] = sum y[out] * x[in].  Stride 1: flat dot products
    #         of the y plane on the wide grid (second, zero extra columns)
    #         with the shifted xp; else per output column into dacc
    #         (m * taps * ow doubles: the m outputs of channel ci) over the
    #         batch, then over the columns
    cdef Py_ssize_t t, s, ci, k, r, q, m = o // c, taps = kh * kw
    cdef Py_ssize_t pitch = w + 2 * pw, plane = h * w, oplane = oh * ow
    cdef Py_ssize_t rows = (h + 2 * ph) * pitch
    cdef Py_ssize_t gpitch = ow + 2 * (kw - 1) * dw
    cdef bint one = sh == 1 and sw == 1
    cdef double tot
    cdef real_t* src
    cdef real_t* yk
    cdef real_t b
    cdef bint by_channel = mode == 2 and not one
    for t in range(n * c):
        # planes in memory order; the strided weight gradient channel by
        # channel (dacc holds one channel's sums)
        if by_channel:
            ci = t // n
            s = t - ci * n
            if s == 0:
                memset(dacc, 0, m * taps * ow * sizeof(double))
        else:
            s = t // c
            ci = t - s * c
        src = x + (s * c + ci) * plane
        if mode == 1 and not one:
            memset(xp, 0, rows * sizeof(real_t))
        elif mode != 1:
            for r in range(h):
                memcpy(xp + (r + ph) * pitch + pw, src + r * w, w * sizeof(real_t))
        for k in range(ci * m, (ci + 1) * m):
            yk = y + (s * o + k) * oplane
            if mode == 0:
                b = bias[k] if bias != NULL else 0
                if one:
                    if real_t is float:
                        cg_dw_fwd1_f32(xp, pitch, wt + k * taps, b, kh, kw, dh,
                                       dw, oh, ow, second, yk, 0)
                    else:
                        cg_dw_fwd1_f64(xp, pitch, wt + k * taps, b, kh, kw, dh,
                                       dw, oh, ow, second, yk, 0)
                elif real_t is float:
                    cg_dw_fwd_f32(xp, pitch, wt + k * taps, b, kh, kw, sh, sw,
                                  dh, dw, oh, ow, yk)
                else:
                    cg_dw_fwd_f64(xp, pitch, wt + k * taps, b, kh, kw, sh, sw,
                                  dh, dw, oh, ow, yk)
            elif mode == 1 and one:
                for r in range(oh):
                    memcpy(xp + (r + (kh - 1) * dh) * gpitch + (kw - 1) * dw,
                           yk + r * ow, ow * sizeof(real_t))
                if real_t is float:
                    cg_dw_fwd1_f32(xp + ph * gpitch + pw, gpitch, wt + k * taps,
                                   0, kh, kw, dh, dw, h, w, second, src,
                                   k > ci * m)
                else:
                    cg_dw_fwd1_f64(xp + ph * gpitch + pw, gpitch, wt + k * taps,
                                   0, kh, kw, dh, dw, h, w, second, src,
                                   k > ci * m)
            elif mode == 1:
                if real_t is float:
                    cg_dw_data_f32(xp, pitch, wt + k * taps, kh, kw, sh, sw, dh,
                                   dw, oh, ow, yk)
                else:
                    cg_dw_data_f64(xp, pitch, wt + k * taps, kh, kw, sh, sw, dh,
                                   dw, oh, ow, yk)
            elif one:
                for r in range(oh):
                    memcpy(second + r * pitch, yk + r * ow, ow * sizeof(real_t))
                if real_t is float:
                    cg_dw_weight1_f32(xp, pitch, second, kh, kw, dh, dw, oh, ow,
                                      gw + k * taps)
                else:
                    cg_dw_weight1_f64(xp, pitch, second, kh, kw, dh, dw, oh, ow,
                                      gw + k * taps)
            else:
                if real_t is float:
                    cg_dw_weight_f32(xp, pitch, yk, kh, kw, sh, sw, dh, dw, oh,
                                     ow, acc, dacc + (k - ci * m) * taps * ow)
                else:
                    cg_dw_weight_f64(xp, pitch, yk, kh, kw, sh, sw, dh, dw, oh,
                                     ow, acc, dacc + (k - ci * m) * taps * ow)
        if mode == 1 and not one:
            for r in range(h):
                memcpy(src + r * w, xp + (r + ph) * pitch + pw, w * sizeof(real_t))
        if by_channel and s == n - 1:
            for r in range(m * taps):
                tot = 0.0
                for q in range(ow):
                    tot += dacc[r * ow + q]
                gw[ci * m * taps + r] = tot


# --------------------------------------------------------------------------
# gathers through per-axis index maps (padding, nearest interpolation)


cdef _check_maps(str name, const Py_ssize_t[::1] ih, const Py_ssize_t[::1] iw,
                 Py_ssize_t h, Py_ssize_t w):
    cdef Py_ssize_t k
    for k in range(ih.shape[0]):
        if ih[k] < -1 or ih[k] >= h:
            raise IndexError(f"{name}: row index {ih[k]} outside [-1, {h})")
    for k in range(iw.shape[0]):
        if iw[k] < -1 or iw[k] >= w:
            raise IndexError(f"{name}: column index {iw[k]} outside [-1, {w})")


def gather2d(
    const real_t[:, :, ::1] x,        # in  (B, H, W)
    const Py_ssize_t[::1] ih,         # in  (OH,) row of x, or -1 for value
    const Py_ssize_t[::1] iw,         # in  (OW,) column of x, or -1 for value
    double value,
    real_t[:, :, ::1] out,            # out (B, OH, OW)
):
    """``out[b, i, j] = x[b, ih[i], iw[j]]`` (``value`` where either is -1)."""
    cdef Py_ssize_t b = x.shape[0], h = x.shape[1], w = x.shape[2]
    cdef Py_ssize_t oh = ih.shape[0], ow = iw.shape[0]
    if out.shape[0] != b or out.shape[1] != oh or out.shape[2] != ow:
        raise ValueError(
            f"gather2d: out has shape ({out.shape[0]}, {out.shape[1]}, "
            f"{out.shape[2]}), expected ({b}, {oh}, {ow})"
        )
    _check_maps("gather2d", ih, iw, h, w)
    if b == 0 or oh == 0 or ow == 0:
        return
    with nogil:
        _gather2d(&x[0, 0, 0] if h * w > 0 else NULL, b, h, w, &ih[0], oh, &iw[0],
                  ow, <real_t>value, &out[0, 0, 0])


cdef void _gather2d(const real_t* x, Py_ssize_t b, Py_ssize_t h, Py_ssize_t w,
                    const Py_ssize_t* ih, Py_ssize_t oh, const Py_ssize_t* iw,
                    Py_ssize_t ow, real_t value, real_t* out) noexcept nogil:
    cdef Py_ssize_t s, i, j
    cdef const real_t* src
    cdef real_t* dst
    for s in range(b):
        for i in range(oh):
            dst = out + (s * oh + i) * ow
            if ih[i] < 0:
                for j in range(ow):
                    dst[j] = value
                continue
            src = x + (s * h + ih[i]) * w
            for j in range(ow):
                dst[j] = src[iw[j]] if iw[j] >= 0 else value


def scatter2d(
    const real_t[:, :, ::1] g,        # in  (B, OH, OW)
    const Py_ssize_t[::1] ih,         # in  (OH,)
    const Py_ssize_t[::1] iw,         # in  (OW,)
    real_t[:, :, ::1] out,            # out (B, H, W), overwritten
):
    """Adjoint of ``gather2d``: ``out[b, ih[i], iw[j]] += g[b, i, j]``."""
    cdef Py_ssize_t b = out.shape[0], h = out.shape[1], w = out.shape[2]
    cdef Py_ssize_t oh = ih.shape[0], ow = iw.shape[0]
    if g.shape[0] != b or g.shape[1] != oh or g.shape[2] != ow:
        raise ValueError(
            f"scatter2d: g has shape ({g.shape[0]}, {g.shape[1]}, {g.shape[2]}), "
            f"expected ({b}, {oh}, {ow})"
        )
    _check_maps("scatter2d", ih, iw, h, w)
    if b == 0 or h == 0 or w == 0:
        return
    with nogil:
        memset(&out[0, 0, 0], 0, b * h * w * sizeof(real_t))
        if oh > 0 and ow > 0:
            _scatter2d(&g[0, 0, 0], b, h, w, &ih[0], oh, &iw[0], ow, &out[0, 0, 0])


cdef void _scatter2d(const real_t* g, Py_ssize_t b, Py_ssize_t h, Py_ssize_t w,
                     const Py_ssize_t* ih, Py_ssize_t oh, const Py_ssize_t* iw,
                     Py_ssize_t ow, real_t* out) noexcept nogil:
    cdef Py_ssize_t s, i, j
    cdef const real_t* src
    cdef real_t* dst
    for s in range(b):
        for i in range(oh):
            if ih[i] < 0:
                continue
            src = g + (s * oh + i) * ow
            dst = out + (s * h + ih[i]) * w
            for j in range(ow):
                if iw[j] >= 0:
                    dst[iw[j]] += src[j]


# --------------------------------------------------------------------------
# 3-d lowering: vol2col / col2vol (the depth axis added to im2col)


cdef _check_geometry3(str name, Py_ssize_t n, Py_ssize_t c, Py_ssize_t d,
                      Py_ssize_t h, Py_ssize_t w, tuple k, tuple s, tuple p,
                      tuple dil, Py_ssize_t nc, Py_ssize_t rows, Py_ssize_t cols):
    if len(k) != 3 or len(s) != 3 or len(p) != 3 or len(dil) != 3:
        raise ValueError(f"{name}: kernel, stride, padding and dilation need 3 entries")
    if min(k) < 1 or min(s) < 1 or min(dil) < 1 or min(p) < 0:
        raise ValueError(
            f"{name}: kernel {k}, stride {s} and dilation {dil} must be positive "
            f"and padding {p} >= 0"
        )
    od = conv_out_size(d, k[0], s[0], p[0], dil[0])
    oh = conv_out_size(h, k[1], s[1], p[1], dil[1])
    ow = conv_out_size(w, k[2], s[2], p[2], dil[2])
    if od < 1 or oh < 1 or ow < 1:
        raise ValueError(f"{name}: output size ({od}, {oh}, {ow}) is empty")
    kk = c * k[0] * k[1] * k[2]
    if nc != n or rows != kk or cols != od * oh * ow:
        raise ValueError(
            f"{name}: columns have shape ({nc}, {rows}, {cols}), expected "
            f"({n}, {kk}, {od * oh * ow})"
        )
    return od, oh, ow


def vol2col(
    const real_t[:, :, :, :, ::1] x,  # in  (N, C, D, H, W)
    tuple kernel, tuple stride, tuple padding, tuple dilation,
    real_t[:, :, ::1] cols,           # out (N, C*kd*kh*kw, OD*OH*OW), or (K, N, ..)
    bint rows_first=False,
):
    """``im2col`` of volumes: row ``((c * kd + a) * kh + i) * kw + j`` holds
    what kernel tap ``(a, i, j)`` of channel ``c`` sees at every output
    position (zero in the padding); ``rows_first`` as in ``im2col``."""
    cdef Py_ssize_t n = x.shape[0], c = x.shape[1], d = x.shape[2]
    cdef Py_ssize_t h = x.shape[3], w = x.shape[4]
    cdef Py_ssize_t od, oh, ow
    if rows_first:
        od, oh, ow = _check_geometry3("vol2col", n, c, d, h, w, kernel, stride,
                                      padding, dilation, cols.shape[1], cols.shape[0],
                                      cols.shape[2])
    else:
        od, oh, ow = _check_geometry3("vol2col", n, c, d, h, w, kernel, stride,
                                      padding, dilation, cols.shape[0], cols.shape[1],
                                      cols.shape[2])
    if n == 0 or c == 0:
        return
    cdef Py_ssize_t g[12]
    _pack(g, kernel, stride, padding, dilation)
    with nogil:
        _vol2col(<real_t*>&x[0, 0, 0, 0, 0], n, c, d, h, w, g, od, oh, ow,
                 &cols[0, 0, 0], 0, rows_first)


def col2vol(
    const real_t[:, :, ::1] cols,     # in  (N, C*kd*kh*kw, OD*OH*OW)
    tuple kernel, tuple stride, tuple padding, tuple dilation,
    real_t[:, :, :, :, ::1] x,        # out (N, C, D, H, W), overwritten
):
    """``x = vol2col^T(cols)``: every column entry added back to its voxel."""
    cdef Py_ssize_t n = x.shape[0], c = x.shape[1], d = x.shape[2]
    cdef Py_ssize_t h = x.shape[3], w = x.shape[4]
    cdef Py_ssize_t od, oh, ow
    od, oh, ow = _check_geometry3("col2vol", n, c, d, h, w, kernel, stride, padding,
                                  dilation, cols.shape[0], cols.shape[1],
                                  cols.shape[2])
    if n == 0 or c == 0:
        return
    cdef Py_ssize_t g[12]
    _pack(g, kernel, stride, padding, dilation)
    with nogil:
        memset(&x[0, 0, 0, 0, 0], 0, n * c * d * h * w * sizeof(real_t))
        _vol2col(&x[0, 0, 0, 0, 0], n, c, d, h, w, g, od, oh, ow,
                 <real_t*>&cols[0, 0, 0], 1, 0)


cdef void _pack(Py_ssize_t* g, tuple k, tuple s, tuple p, tuple dil):
    cdef int i
    for i in range(3):
        g[i] = k[i]
        g[3 + i] = s[i]
        g[6 + i] = p[i]
        g[9 + i] = dil[i]


cdef void _vol2col(real_t* x, Py_ssize_t n, Py_ssize_t c, Py_ssize_t d,
                   Py_ssize_t h, Py_ssize_t w, const Py_ssize_t* g,
                   Py_ssize_t od, Py_ssize_t oh, Py_ssize_t ow, real_t* cols,
                   bint adjoint, bint rows_first) noexcept nogil:
    # g = kernel (kd, kh, kw), stride, padding, dilation, 3 entries each.
    # The same loop nest as _im2col with the depth taps outside the rows
    # (block t of OD * OH * OW entries, walked front to back in both layouts).
    cdef Py_ssize_t kd = g[0], kh = g[1], kw = g[2]
    cdef Py_ssize_t sd = g[3], sh = g[4], sw = g[5]
    cdef Py_ssize_t pd = g[6], ph = g[7], pw = g[8]
    cdef Py_ssize_t dd = g[9], dh = g[10], dw = g[11]
    cdef Py_ssize_t t, s, ci, a, i, j, z, iz, off, lo, hi, row, rest
    cdef Py_ssize_t plane = oh * ow, length = od * oh * ow, k = c * kd * kh * kw
    cdef Py_ssize_t taps = kd * kh * kw
    cdef real_t* dst
    cdef real_t* src
    cdef real_t* vol
    for t in range(n * k):
        if rows_first:
            row = t // n
            s = t - row * n
        else:
            s = t // k
            row = t - s * k
        ci = row // taps
        rest = row - ci * taps
        a = rest // (kh * kw)
        rest = rest - a * kh * kw
        i = rest // kw
        j = rest - i * kw
        vol = x + (s * c + ci) * d * h * w
        dst = cols + t * length
        off = j * dw - pw
        _ow_range(ow, w, sw, off, &lo, &hi)
        for z in range(od):
            iz = z * sd - pd + a * dd
            if iz < 0 or iz >= d:
                if not adjoint:
                    _zero(dst, 0, plane)
                dst += plane
                continue
            src = vol + iz * h * w
            _plane_rows(src, h, w, oh, ow, sh, ph, i * dh, off, sw, lo, hi, dst,
                        adjoint)
            dst += plane
