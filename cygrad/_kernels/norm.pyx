"""Normalisation kernels: batch norm over ``(N, C, L)``, and group/layer/RMS
norm over rows ``(R, Cg, L)``.

Batch norm: ``x`` is C-contiguous ``(N, C, L)`` (``L`` = the spatial size,
1 for ``BatchNorm1d`` on ``(N, C)``).  ``bn_stats`` gives each channel's mean
and biased variance (two passes in double: the mean, then squared deviations,
never ``E[x^2] - E[x]^2``); ``bn_affine`` writes ``y = a[c] * x + b[c]`` (the
caller folds mean, variance, weight and bias into ``a`` and ``b``: one pass,
train or eval); ``bn_bwd_sums`` gives ``sum(g)`` and ``sum(g * (x - mean))``
per channel, and ``bn_bwd_data`` writes ``dx = a[c] g + b[c] (x - mean[c]) +
c[c]``, into which the caller folds the training-mode formula
``dx = w rstd (g - mean(g) - xhat mean(g xhat))`` (or eval's ``w rstd g``).

Row norms: ``x`` is ``(R, Cg, L)``; each row ``r`` (``Cg * L`` values) is
normalised by its own mean and ``rstd = 1 / sqrt(var + eps)`` (RMS norm: no
mean, ``rstd = 1 / sqrt(mean(x^2) + eps)``).  The affine parameters are per
channel ``(r % G) * Cg + cg``: LayerNorm is ``G = 1, Cg = D, L = 1``
(weight over the normalised shape), GroupNorm ``R = N * G, Cg = C / G,
L = H * W``.  Backward: ``dx = rstd (gw - mean(gw) - xhat mean(gw xhat))``
with ``gw = g * w`` (RMS: without the ``mean(gw)`` term); ``dw``/``db``
accumulate ``g * xhat`` / ``g`` per channel in double.

Dtypes: ``real_t`` data; statistics and folded coefficients in double.
Shapes are checked in the ``def`` wrappers before the GIL is released.
Outputs must not alias inputs.  Single-threaded.
"""

from libc.math cimport sqrt

import numpy as np

from cygrad._kernels._types cimport real_t
from cygrad._kernels.reductions cimport row_dot, row_sum


# Sums of the statistics and gradients run in double with four independent
# accumulators (or the lane-split row_sum/row_dot of reductions.pyx): one
# accumulator chains every add on the last (4 cycles each) and made layer
# norm 13x torch.  No -ffast-math, so the compiler never reassociates these.

cdef inline double _sq_dev(const real_t* p, Py_ssize_t n, double m) noexcept nogil:
    """sum((p - m)^2)."""
    cdef double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0, d0, d1, d2, d3
    cdef Py_ssize_t k = 0
    while k + 4 <= n:
        d0 = p[k] - m
        d1 = p[k + 1] - m
        d2 = p[k + 2] - m
        d3 = p[k + 3] - m
        a0 += d0 * d0
        a1 += d1 * d1
        a2 += d2 * d2
        a3 += d3 * d3
        k += 4
    while k < n:
        d0 = p[k] - m
        a0 += d0 * d0
        k += 1
    return (a0 + a1) + (a2 + a3)


cdef inline double _dot_dev(const real_t* q, const real_t* p, Py_ssize_t n,
                            double m) noexcept nogil:
    """sum(q * (p - m))."""
    cdef double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0
    cdef Py_ssize_t k = 0
    while k + 4 <= n:
        a0 += q[k] * (p[k] - m)
        a1 += q[k + 1] * (p[k + 1] - m)
        a2 += q[k + 2] * (p[k + 2] - m)
        a3 += q[k + 3] * (p[k + 3] - m)
        k += 4
    while k < n:
        a0 += q[k] * (p[k] - m)
        k += 1
    return (a0 + a1) + (a2 + a3)


cdef extern from "cg_norm.h":
    double cg_ln_sum_f(const float* p, Py_ssize_t n) noexcept nogil
    double cg_ln_sum_d(const double* p, Py_ssize_t n) noexcept nogil
    void cg_ln_fwd_rows_f(const float* x, Py_ssize_t r, Py_ssize_t n,
                          Py_ssize_t groups, double eps, int rms, const float* w,
                          const float* b, float* y, double* mean,
                          double* rstd) noexcept nogil
    void cg_ln_fwd_rows_d(const double* x, Py_ssize_t r, Py_ssize_t n,
                          Py_ssize_t groups, double eps, int rms, const double* w,
                          const double* b, double* y, double* mean,
                          double* rstd) noexcept nogil
    void cg_ln_bwd_rows_f(const float* g, const float* x, Py_ssize_t r, Py_ssize_t n,
                          Py_ssize_t groups, const float* w, int rms,
                          const double* mean, const double* rstd, double* dw,
                          double* db, float* dx) noexcept nogil
    void cg_ln_bwd_rows_d(const double* g, const double* x, Py_ssize_t r,
                          Py_ssize_t n, Py_ssize_t groups, const double* w, int rms,
                          const double* mean, const double* rstd, double* dw,
                          double* db, double* dx) noexcept nogil
    double cg_sqdev_f(const float* p, Py_ssize_t n, double m) noexcept nogil
    double cg_sqdev_d(const double* p, Py_ssize_t n, double m) noexcept nogil
    void cg_ln_out_f(const float* p, Py_ssize_t n, float m, float sd, const float* w,
                     const float* b, float* q) noexcept nogil
    void cg_ln_out_d(const double* p, Py_ssize_t n, double m, double sd,
                     const double* w, const double* b, double* q) noexcept nogil
    void cg_ln_gw_f(const float* g, const float* w, Py_ssize_t n,
                    float* t) noexcept nogil
    void cg_ln_gw_d(const double* g, const double* w, Py_ssize_t n,
                    double* t) noexcept nogil
    void cg_ln_dwdb_f(const float* g, const float* p, Py_ssize_t n, double m,
                      double sd, double* dw, double* db) noexcept nogil
    void cg_ln_dwdb_d(const double* g, const double* p, Py_ssize_t n, double m,
                      double sd, double* dw, double* db) noexcept nogil
    void cg_ln_dx_f(const float* g, const float* p, Py_ssize_t n, float a,
                    const float* w, float u, float v, float* o) noexcept nogil
    void cg_ln_dx_d(const double* g, const double* p, Py_ssize_t n, double a,
                    const double* w, double u, double v, double* o) noexcept nogil


# A whole row's loops (the row norms) go to cg_norm.h's CG_SIMD_FN helpers
# (AVX2 / AVX-512 at load; this module is built for the baseline): layer norm
# at (4096, 1024) was 2.06x torch.  Batch norm's per-channel runs, often one
# element long, keep the inline loops above (a dispatched call per run would
# cost more than the run).

cdef inline double _sq_dev_row(const real_t* p, Py_ssize_t n, double m) noexcept nogil:
    if real_t is float:
        return cg_sqdev_f(p, n, m)
    else:
        return cg_sqdev_d(p, n, m)


# Rows shorter than this take cg_norm.h's 16-lane double sums (row_sum and
# row_dot add serially below their 512-entry blocks); layer norm's (L = 1)
# take its chunked whole-array loops.
cdef enum:
    _SHORT_ROW = 512


cdef inline double _row_sum(const real_t* p, Py_ssize_t n) noexcept nogil:
    if n >= _SHORT_ROW:
        return row_sum(p, n)
    if real_t is float:
        return cg_ln_sum_f(p, n)
    else:
        return cg_ln_sum_d(p, n)


cdef inline void _ln_out(const real_t* p, Py_ssize_t n, real_t m, real_t sd,
                         const real_t* w, const real_t* b, real_t* q) noexcept nogil:
    if real_t is float:
        cg_ln_out_f(p, n, m, sd, w, b, q)
    else:
        cg_ln_out_d(p, n, m, sd, w, b, q)


cdef inline void _ln_gw(const real_t* g, const real_t* w, Py_ssize_t n,
                        real_t* t) noexcept nogil:
    if real_t is float:
        cg_ln_gw_f(g, w, n, t)
    else:
        cg_ln_gw_d(g, w, n, t)


cdef inline void _ln_dwdb(const real_t* g, const real_t* p, Py_ssize_t n, double m,
                          double sd, double* dw, double* db) noexcept nogil:
    if real_t is float:
        cg_ln_dwdb_f(g, p, n, m, sd, dw, db)
    else:
        cg_ln_dwdb_d(g, p, n, m, sd, dw, db)


cdef inline void _ln_dx(const real_t* g, const real_t* p, Py_ssize_t n, real_t a,
                        const real_t* w, real_t u, real_t v, real_t* o) noexcept nogil:
    if real_t is float:
        cg_ln_dx_f(g, p, n, a, w, u, v, o)
    else:
        cg_ln_dx_d(g, p, n, a, w, u, v, o)


cdef _same3(str name, Py_ssize_t a0, Py_ssize_t a1, Py_ssize_t a2,
            Py_ssize_t b0, Py_ssize_t b1, Py_ssize_t b2):
    if a0 != b0 or a1 != b1 or a2 != b2:
        raise ValueError(f"{name}: shape ({b0}, {b1}, {b2}) != ({a0}, {a1}, {a2})")


cdef _len(str name, str what, Py_ssize_t got, Py_ssize_t want):
    if got != want:
        raise ValueError(f"{name}: {what} has length {got}, expected {want}")


# --------------------------------------------------------------------------
# batch norm


def bn_stats(
    const real_t[:, :, ::1] x,        # in  (N, C, L)
    double[::1] mean,                 # out (C,)
    double[::1] var,                  # out (C,) biased variance
):
    """Per-channel mean and biased variance over the N and L axes."""
    cdef Py_ssize_t n = x.shape[0], c = x.shape[1], l = x.shape[2]
    _len("bn_stats", "mean", mean.shape[0], c)
    _len("bn_stats", "var", var.shape[0], c)
    if c == 0:
        return
    if n * l == 0:
        raise ValueError("bn_stats: no values per channel")
    with nogil:
        _bn_stats(&x[0, 0, 0], n, c, l, &mean[0], &var[0])


cdef void _bn_stats(const real_t* x, Py_ssize_t n, Py_ssize_t c, Py_ssize_t l,
                    double* mean, double* var) noexcept nogil:
    cdef Py_ssize_t s, ch
    cdef double acc, m
    for ch in range(c):
        acc = 0.0
        for s in range(n):
            acc += row_sum(x + (s * c + ch) * l, l)
        m = acc / (n * l)
        acc = 0.0
        for s in range(n):
            acc += _sq_dev(x + (s * c + ch) * l, l, m)
        mean[ch] = m
        var[ch] = acc / (n * l)


def bn_affine(
    const real_t[:, :, ::1] x,        # in  (N, C, L)
    const double[::1] a,              # in  (C,)
    const double[::1] b,              # in  (C,)
    real_t[:, :, ::1] y,              # out (N, C, L)
):
    """``y = a[c] * x + b[c]``."""
    cdef Py_ssize_t n = x.shape[0], c = x.shape[1], l = x.shape[2]
    _same3("bn_affine", n, c, l, y.shape[0], y.shape[1], y.shape[2])
    _len("bn_affine", "a", a.shape[0], c)
    _len("bn_affine", "b", b.shape[0], c)
    if n * c * l == 0:
        return
    with nogil:
        _bn_affine(&x[0, 0, 0], n, c, l, &a[0], &b[0], &y[0, 0, 0])


cdef void _bn_affine(const real_t* x, Py_ssize_t n, Py_ssize_t c, Py_ssize_t l,
                     const double* a, const double* b, real_t* y) noexcept nogil:
    cdef Py_ssize_t s, ch, k
    cdef const real_t* p
    cdef real_t* q
    cdef real_t ac, bc
    for s in range(n):
        for ch in range(c):
            p = x + (s * c + ch) * l
            q = y + (s * c + ch) * l
            ac = <real_t>a[ch]
            bc = <real_t>b[ch]
            for k in range(l):
                q[k] = ac * p[k] + bc


def bn_bwd_sums(
    const real_t[:, :, ::1] x,        # in  (N, C, L)
    const real_t[:, :, ::1] g,        # in  (N, C, L)
    const double[::1] mean,           # in  (C,)
    double[::1] sum_g,                # out (C,)
    double[::1] sum_gx,               # out (C,) sum(g * (x - mean))
):
    """Per-channel ``sum(g)`` and ``sum(g * (x - mean))``."""
    cdef Py_ssize_t n = x.shape[0], c = x.shape[1], l = x.shape[2]
    _same3("bn_bwd_sums", n, c, l, g.shape[0], g.shape[1], g.shape[2])
    _len("bn_bwd_sums", "mean", mean.shape[0], c)
    _len("bn_bwd_sums", "sum_g", sum_g.shape[0], c)
    _len("bn_bwd_sums", "sum_gx", sum_gx.shape[0], c)
    if c == 0:
        return
    if n * l == 0:
        sum_g[:] = 0.0
        sum_gx[:] = 0.0
        return
    with nogil:
        _bn_bwd_sums(&x[0, 0, 0], &g[0, 0, 0], n, c, l, &mean[0], &sum_g[0],
                     &sum_gx[0])


cdef void _bn_bwd_sums(const real_t* x, const real_t* g, Py_ssize_t n,
                       Py_ssize_t c, Py_ssize_t l, const double* mean,
                       double* sum_g, double* sum_gx) noexcept nogil:
    cdef Py_ssize_t s, ch, off
    cdef double a, b
    for ch in range(c):
        a = 0.0
        b = 0.0
        for s in range(n):
            off = (s * c + ch) * l
            a += row_sum(g + off, l)
            b += _dot_dev(g + off, x + off, l, mean[ch])
        sum_g[ch] = a
        sum_gx[ch] = b


def bn_bwd_data(
    const real_t[:, :, ::1] x,        # in  (N, C, L)
    const real_t[:, :, ::1] g,        # in  (N, C, L)
    const double[::1] mean,           # in  (C,)
    const double[::1] a,              # in  (C,)
    const double[::1] b,              # in  (C,)
    const double[::1] c0,             # in  (C,)
    real_t[:, :, ::1] dx,             # out (N, C, L)
):
    """``dx = a[c] g + b[c] (x - mean[c]) + c0[c]``."""
    cdef Py_ssize_t n = x.shape[0], c = x.shape[1], l = x.shape[2]
    _same3("bn_bwd_data", n, c, l, g.shape[0], g.shape[1], g.shape[2])
    _same3("bn_bwd_data", n, c, l, dx.shape[0], dx.shape[1], dx.shape[2])
    for arr, what in ((mean, "mean"), (a, "a"), (b, "b"), (c0, "c0")):
        _len("bn_bwd_data", what, arr.shape[0], c)
    if n * c * l == 0:
        return
    with nogil:
        _bn_bwd_data(&x[0, 0, 0], &g[0, 0, 0], n, c, l, &mean[0], &a[0], &b[0],
                     &c0[0], &dx[0, 0, 0])


cdef void _bn_bwd_data(const real_t* x, const real_t* g, Py_ssize_t n,
                       Py_ssize_t c, Py_ssize_t l, const double* mean,
                       const double* a, const double* b, const double* c0,
                       real_t* dx) noexcept nogil:
    # coefficients folded per channel, so the element loop is two FMAs in real_t
    cdef Py_ssize_t s, ch, k, off
    cdef real_t ac, bc, cc
    for s in range(n):
        for ch in range(c):
            off = (s * c + ch) * l
            ac = <real_t>a[ch]
            bc = <real_t>b[ch]
            cc = <real_t>(c0[ch] - b[ch] * mean[ch])
            for k in range(l):
                dx[off + k] = ac * g[off + k] + bc * x[off + k] + cc


# --------------------------------------------------------------------------
# group / layer / RMS norm on rows


def row_norm_fwd(
    const real_t[:, :, ::1] x,        # in  (R, Cg, L)
    const real_t[::1] w,              # in  (G * Cg,) or length 0
    const real_t[::1] b,              # in  (G * Cg,) or length 0
    Py_ssize_t groups,
    double eps,
    bint rms,
    real_t[:, :, ::1] y,              # out (R, Cg, L)
    double[::1] mean,                 # out (R,)  (0 for rms)
    double[::1] rstd,                 # out (R,)
):
    """Normalise each row by its statistics, then ``* w[ch] + b[ch]``."""
    cdef Py_ssize_t r = x.shape[0], cg = x.shape[1], l = x.shape[2]
    _same3("row_norm_fwd", r, cg, l, y.shape[0], y.shape[1], y.shape[2])
    _check_rows("row_norm_fwd", r, cg, groups, w, b, mean, rstd)
    if r == 0:
        return
    with nogil:
        _row_norm_fwd(&x[0, 0, 0] if cg * l > 0 else NULL, r, cg, l,
                      &w[0] if w.shape[0] > 0 else NULL,
                      &b[0] if b.shape[0] > 0 else NULL,
                      groups, eps, rms, &y[0, 0, 0] if cg * l > 0 else NULL,
                      &mean[0], &rstd[0])


cdef _check_rows(str name, Py_ssize_t r, Py_ssize_t cg, Py_ssize_t groups,
                 const real_t[::1] w, const real_t[::1] b, const double[::1] mean,
                 const double[::1] rstd):
    if groups < 1 or r % groups != 0:
        raise ValueError(f"{name}: {r} rows do not split into {groups} groups")
    if w.shape[0] not in (0, groups * cg):
        raise ValueError(f"{name}: weight has length {w.shape[0]}, expected "
                         f"{groups * cg}")
    if b.shape[0] not in (0, groups * cg):
        raise ValueError(f"{name}: bias has length {b.shape[0]}, expected "
                         f"{groups * cg}")
    _len(name, "mean", mean.shape[0], r)
    _len(name, "rstd", rstd.shape[0], r)


cdef void _row_norm_fwd(const real_t* x, Py_ssize_t r, Py_ssize_t cg,
                        Py_ssize_t l, const real_t* w, const real_t* b,
                        Py_ssize_t groups, double eps, bint rms, real_t* y,
                        double* mean, double* rstd) noexcept nogil:
    # Statistics in double; the output pass in real_t as y = x * a + c with
    # a = rstd * w, c = b - mean * a folded per channel (one FMA an element,
    # vectorized; LayerNorm's L = 1 takes the per-element weight loop).
    cdef Py_ssize_t i, c, k, ch0, d = cg * l
    cdef const real_t* p
    cdef real_t* q
    cdef double acc, m, sd, wc, bc
    cdef real_t ar, cr
    if l == 1 and 0 < d < _SHORT_ROW:
        if real_t is float:
            cg_ln_fwd_rows_f(x, r, d, groups, eps, rms, w, b, y, mean, rstd)
        else:
            cg_ln_fwd_rows_d(x, r, d, groups, eps, rms, w, b, y, mean, rstd)
        return
    for i in range(r):
        p = x + i * d
        q = y + i * d
        ch0 = (i % groups) * cg
        m = 0.0
        if not rms and d > 0:
            m = _row_sum(p, d) / d
        acc = _sq_dev_row(p, d, m)
        sd = 1.0 / sqrt((acc / d if d > 0 else 0.0) + eps)
        mean[i] = m
        rstd[i] = sd
        if l == 1:
            _ln_out(p, d, <real_t>m, <real_t>sd, w + ch0 if w != NULL else NULL,
                    b + ch0 if b != NULL else NULL, q)
            continue
        for c in range(cg):
            wc = w[ch0 + c] if w != NULL else 1.0
            bc = b[ch0 + c] if b != NULL else 0.0
            ar = <real_t>(sd * wc)
            cr = <real_t>(bc - m * sd * wc)
            for k in range(c * l, (c + 1) * l):
                q[k] = p[k] * ar + cr


def row_norm_bwd(
    const real_t[:, :, ::1] x,        # in  (R, Cg, L)
    const real_t[:, :, ::1] g,        # in  (R, Cg, L)
    const real_t[::1] w,              # in  (G * Cg,) or length 0
    Py_ssize_t groups,
    bint rms,
    const double[::1] mean,           # in  (R,)
    const double[::1] rstd,           # in  (R,)
    real_t[:, :, ::1] dx,             # out (R, Cg, L)
    double[::1] dw,                   # out (G * Cg,) sum of g * xhat, or length 0
    double[::1] db,                   # out (G * Cg,) sum of g, or length 0
):
    """Gradients of ``row_norm_fwd`` (see module doc); dw/db overwritten."""
    cdef Py_ssize_t r = x.shape[0], cg = x.shape[1], l = x.shape[2]
    _same3("row_norm_bwd", r, cg, l, g.shape[0], g.shape[1], g.shape[2])
    _same3("row_norm_bwd", r, cg, l, dx.shape[0], dx.shape[1], dx.shape[2])
    _check_rows("row_norm_bwd", r, cg, groups, w, w, mean, rstd)
    if dw.shape[0] not in (0, groups * cg) or db.shape[0] not in (0, groups * cg):
        raise ValueError(f"row_norm_bwd: dw/db must have length {groups * cg} or 0")
    dw[:] = 0.0
    db[:] = 0.0
    if r == 0 or cg * l == 0:
        return
    cdef real_t[::1] tmp = np.empty(cg * l,
                                    dtype=np.float32 if real_t is float else np.float64)
    with nogil:
        _row_norm_bwd(&x[0, 0, 0], &g[0, 0, 0], r, cg, l,
                      &w[0] if w.shape[0] > 0 else NULL, groups, rms, &mean[0],
                      &rstd[0], &dx[0, 0, 0], &dw[0] if dw.shape[0] > 0 else NULL,
                      &db[0] if db.shape[0] > 0 else NULL, &tmp[0])


cdef void _row_norm_bwd(const real_t* x, const real_t* g, Py_ssize_t r,
                        Py_ssize_t cg, Py_ssize_t l, const real_t* w,
                        Py_ssize_t groups, bint rms, const double* mean,
                        const double* rstd, real_t* dx, double* dw, double* db,
                        real_t* tmp) noexcept nogil:
    # Two passes a row: the sums (in double), then dx in real_t as
    # dx = g * (rstd w) + x * u + v with u, v folded per row and channel.
    cdef Py_ssize_t i, c, k, ch0, d = cg * l
    cdef const real_t* p
    cdef const real_t* q
    cdef real_t* o
    cdef double m, sd, wc, s1, s2, gxh, gs, u, v
    cdef real_t ur, vr, ar
    if l == 1 and d < _SHORT_ROW:
        if real_t is float:
            cg_ln_bwd_rows_f(g, x, r, d, groups, w, rms, mean, rstd, dw, db, dx)
        else:
            cg_ln_bwd_rows_d(g, x, r, d, groups, w, rms, mean, rstd, dw, db, dx)
        return
    for i in range(r):
        p = x + i * d
        q = g + i * d
        o = dx + i * d
        m = mean[i]
        sd = rstd[i]
        ch0 = (i % groups) * cg
        s1 = 0.0
        s2 = 0.0
        if l == 1:
            if w != NULL:
                # t = g * w once (vectorized), then two lane-split sums;
                # sum(t (x - m)) = sum(t x) - m sum(t), as torch forms it
                _ln_gw(q, w + ch0, d, tmp)
                s1 = row_sum(tmp, d)
                s2 = (row_dot(tmp, p, d) - m * s1) * sd
            else:
                s1 = _row_sum(q, d)
                s2 = _dot_dev(q, p, d, m) * sd
            if dw != NULL or db != NULL:
                _ln_dwdb(q, p, d, m, sd, dw + ch0 if dw != NULL else NULL,
                         db + ch0 if db != NULL else NULL)
        else:
            for c in range(cg):
                wc = w[ch0 + c] if w != NULL else 1.0
                gs = row_sum(q + c * l, l)
                # sum(g (x - m)) = sum(g x) - m sum(g), as torch forms it: the
                # lane-split dot instead of a second scalar pass
                gxh = (row_dot(q + c * l, p + c * l, l) - m * gs) * sd
                s1 += wc * gs
                s2 += wc * gxh
                if dw != NULL:
                    dw[ch0 + c] += gxh
                if db != NULL:
                    db[ch0 + c] += gs
        s1 = 0.0 if rms else s1 / d
        s2 = s2 / d
        # dx = sd * (g w - s1 - xhat s2), xhat = (x - m) sd
        u = -sd * sd * s2
        v = -sd * s1 + sd * sd * s2 * m
        ur = <real_t>u
        vr = <real_t>v
        if l == 1:
            _ln_dx(q, p, d, <real_t>sd, w + ch0 if w != NULL else NULL, ur, vr, o)
            continue
        for c in range(cg):
            ar = <real_t>(sd * (w[ch0 + c] if w != NULL else 1.0))
            for k in range(c * l, (c + 1) * l):
                o[k] = q[k] * ar + p[k] * ur + vr
