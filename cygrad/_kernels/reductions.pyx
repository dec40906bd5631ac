"""Row reductions of cygrad: softmax, log_softmax, logsumexp, var.

Layout: every kernel works on C-contiguous rows, ``x`` of shape ``(rows, n)``;
the reduced axis is the last one.  ``cygrad.ops`` moves the reduced axes of a
tensor to the end (a copy only when they are not already there) and reshapes
to two dimensions.  Per-row results have shape ``(rows,)``.

Dtypes: ``real_t`` (float32 or float64).  Sums and means accumulate in double
(four independent accumulators), so float32 keeps its digits; results are
rounded to ``real_t`` once when stored.

Stability: softmax, log_softmax and logsumexp subtract the row maximum before
``exp``, so every argument of ``exp`` is <= 0: nothing overflows, and logits of
1e4 give the right answer.  ``var`` is two-pass (mean, then squared
deviations), never ``E[x^2] - E[x]^2``.

Speed: ``exp`` of a non-positive argument is the C helper ``cg_exp_shift``
below, a range-reduced polynomial (Cody-Waite split of ln 2, degree 7 for
float, degree 13 for double; max relative error about 1e-7 and 2e-16
against libm) written without branches so that GCC vectorizes the loop with
the baseline SSE2 instruction set.  libm's ``exp`` is a call per element and
costs 5-7x more; the whole point of a compiled softmax is this loop.

NaN propagates as in torch (a NaN in a row makes that row's softmax NaN); a
row of all ``-inf`` gives NaN softmax, as torch.  (max/min with indices use
NumPy's SIMD argmax/argmin, which measured faster than a scalar scan here.)

Aliasing: outputs must not alias inputs.
Threading: each ``def`` wrapper checks shapes with the GIL held, then
releases it for the loop; nothing inside ``nogil`` raises.
"""

from libc.math cimport log

from cygrad._kernels._types cimport real_t

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    /* y[i] = exp(x[i] - shift) for x[i] - shift <= 0 (the only use here).
       Cody-Waite reduction x = k ln2 + r, |r| <= ln2/2, Taylor polynomial in
       r, 2^k built in the exponent bits.  Rounding k uses the 1.5*2^23
       (1.5*2^52) trick so that everything stays in SIMD registers; the
       bit casts go through memcpy (no aliasing UB).  Results below the
       smallest normal number are flushed to 0. */
    /* Compiled twice, for AVX2+FMA and for the baseline; the loader picks
       one per machine (GCC target_clones, an ifunc), so the wheel stays
       portable (no -march flag) and AVX2 machines get 8 floats per op. */
    #if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
    #define CG_CLONES __attribute__((target_clones("avx2,fma", "default")))
    #else
    #define CG_CLONES
    #endif
    CG_CLONES
    static void cg_exp_shift_f(const float *x, float shift, float *y,
                               Py_ssize_t n) {
        const float magic = 12582912.0f;
        uint32_t mb;
        memcpy(&mb, &magic, 4);
        for (Py_ssize_t i = 0; i < n; i++) {
            float v = x[i] - shift;
            float t = v * 1.44269504088896341f + magic;
            float k = t - magic;
            float r = v - k * 0.693359375f;
            r = r - k * -2.12194440e-4f;
            float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.66666667e-1f
                      + r * (4.16666667e-2f + r * (8.33333333e-3f
                      + r * (1.38888889e-3f + r * 1.98412698e-4f))))));
            uint32_t tb, sb, yb, keep;
            float s, out;
            memcpy(&tb, &t, 4);
            sb = (tb - mb + 127u) << 23;
            memcpy(&s, &sb, 4);
            out = p * s;
            memcpy(&yb, &out, 4);
            keep = (uint32_t)(v < -87.33654f) - 1u;
            yb &= keep;
            memcpy(&out, &yb, 4);
            y[i] = out;
        }
    }
    CG_CLONES
    static void cg_exp_shift_d(const double *x, double shift, double *y,
                               Py_ssize_t n) {
        const double magic = 6755399441055744.0;
        uint64_t mb;
        memcpy(&mb, &magic, 8);
        for (Py_ssize_t i = 0; i < n; i++) {
            double v = x[i] - shift;
            double t = v * 1.4426950408889634074 + magic;
            double k = t - magic;
            double r = v - k * 6.93147180369123816490e-01;
            r = r - k * 1.90821492927058770002e-10;
            double p = 1.0 + r * (1.0 + r * (1.0 / 2 + r * (1.0 / 6
                + r * (1.0 / 24 + r * (1.0 / 120 + r * (1.0 / 720
                + r * (1.0 / 5040 + r * (1.0 / 40320 + r * (1.0 / 362880
                + r * (1.0 / 3628800 + r * (1.0 / 39916800
                + r * (1.0 / 479001600 + r * (1.0 / 6227020800.0)))))))))))));
            uint64_t tb, sb;
            double s;
            memcpy(&tb, &t, 8);
            sb = (tb - mb + 1023u) << 52;
            memcpy(&s, &sb, 8);
            y[i] = p * s;
        }
        /* SSE2 has no 64-bit compare to build a mask, so the underflow
           flush is a second (rarely taken) pass. */
        for (Py_ssize_t i = 0; i < n; i++) {
            if (x[i] - shift < -708.3964185322641) y[i] = 0.0;
        }
    }
    /* Sums and dot products in double with 8 independent lanes: each lane
       is a plain sequential sum (no reassociation, so no -ffast-math), and
       the fixed lane loop vectorizes, 4 doubles per AVX2 register. */
    #define CG_LANES(NAME, T)                                                \
    CG_CLONES static double NAME(const T *x, const T *y, Py_ssize_t n) {     \
        double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0}, s;                        \
        Py_ssize_t i = 0;                                                    \
        int k;                                                               \
        if (y == NULL) {                                                     \
            for (; i + 8 <= n; i += 8)                                       \
                for (k = 0; k < 8; k++) acc[k] += (double)x[i + k];          \
        } else {                                                             \
            for (; i + 8 <= n; i += 8)                                       \
                for (k = 0; k < 8; k++)                                      \
                    acc[k] += (double)x[i + k] * (double)y[i + k];           \
        }                                                                    \
        s = ((acc[0] + acc[1]) + (acc[2] + acc[3]))                          \
            + ((acc[4] + acc[5]) + (acc[6] + acc[7]));                       \
        for (; i < n; i++)                                                   \
            s += y == NULL ? (double)x[i] : (double)x[i] * (double)y[i];     \
        return s;                                                            \
    }
    CG_LANES(cg_lanes_f, float)
    CG_LANES(cg_lanes_d, double)
    """
    double cg_lanes_f(const float* x, const float* y, Py_ssize_t n) noexcept nogil
    double cg_lanes_d(const double* x, const double* y,
                      Py_ssize_t n) noexcept nogil
    void cg_exp_shift_f(const float* x, float shift, float* y,
                        Py_ssize_t n) noexcept nogil
    void cg_exp_shift_d(const double* x, double shift, double* y,
                        Py_ssize_t n) noexcept nogil


# --- scalar building blocks ---------------------------------------------------

cdef inline void _exp_shift(const real_t* x, real_t shift, real_t* y,
                            Py_ssize_t n) noexcept nogil:
    if real_t is float:
        cg_exp_shift_f(x, shift, y, n)
    else:
        cg_exp_shift_d(x, shift, y, n)


cdef inline real_t _row_max(const real_t* x, Py_ssize_t n) noexcept nogil:
    # Four running maxima; a NaN anywhere makes the result NaN (torch).
    cdef real_t m0 = x[0], m1 = x[0], m2 = x[0], m3 = x[0]
    cdef Py_ssize_t i = 0
    cdef bint nan = False
    while i + 4 <= n:
        m0 = x[i] if x[i] > m0 else m0
        m1 = x[i + 1] if x[i + 1] > m1 else m1
        m2 = x[i + 2] if x[i + 2] > m2 else m2
        m3 = x[i + 3] if x[i + 3] > m3 else m3
        nan = nan | (x[i] != x[i]) | (x[i + 1] != x[i + 1]) | (
            x[i + 2] != x[i + 2]) | (x[i + 3] != x[i + 3])
        i += 4
    while i < n:
        m0 = x[i] if x[i] > m0 else m0
        nan = nan | (x[i] != x[i])
        i += 1
    if nan:
        return _nan(x[0])
    m0 = m1 if m1 > m0 else m0
    m2 = m3 if m3 > m2 else m2
    return m2 if m2 > m0 else m0


cdef inline real_t _nan(real_t like) noexcept nogil:
    cdef double z = 0.0
    return <real_t>(z / z)


cdef inline double _row_sum(const real_t* x, Py_ssize_t n) noexcept nogil:
    if real_t is float:
        return cg_lanes_f(x, NULL, n)
    else:
        return cg_lanes_d(x, NULL, n)


cdef inline double _row_dot(const real_t* x, const real_t* y,
                            Py_ssize_t n) noexcept nogil:
    if real_t is float:
        return cg_lanes_f(x, y, n)
    else:
        return cg_lanes_d(x, y, n)


cdef inline double _row_sqdev(const real_t* x, double mean,
                              Py_ssize_t n) noexcept nogil:
    cdef double s0 = 0, s1 = 0, s2 = 0, s3 = 0, d0, d1, d2, d3
    cdef Py_ssize_t i = 0
    while i + 4 <= n:
        d0 = x[i] - mean
        d1 = x[i + 1] - mean
        d2 = x[i + 2] - mean
        d3 = x[i + 3] - mean
        s0 += d0 * d0
        s1 += d1 * d1
        s2 += d2 * d2
        s3 += d3 * d3
        i += 4
    while i < n:
        d0 = x[i] - mean
        s0 += d0 * d0
        i += 1
    return (s0 + s1) + (s2 + s3)


cdef void _check_rows(Py_ssize_t r0, Py_ssize_t n0, Py_ssize_t r1, Py_ssize_t n1,
                      str name) except *:
    if r0 != r1 or n0 != n1:
        raise ValueError(f"{name}: shapes [{r0}, {n0}] and [{r1}, {n1}] differ")


DEF CHUNK = 512


# --- softmax and log_softmax ------------------------------------------------------

cdef void _softmax_rows(const real_t* x, const real_t* rowmax, real_t* y,
                        Py_ssize_t rows, Py_ssize_t n, bint take_log) noexcept nogil:
    cdef Py_ssize_t i, r
    cdef real_t m, shift
    cdef double s
    cdef real_t inv
    for r in range(rows):
        m = rowmax[r] if rowmax != NULL else _row_max(x, n)
        if take_log:
            # exp is only summed: stage it in an L1-sized buffer, so y is
            # written once.
            s = _exp_sum(x, m, n)
        else:
            _exp_shift(x, m, y, n)
            s = _row_sum(y, n)
        if take_log:
            # (x - m) - log(s), in this order, as torch: x - m is exact
            # near the maximum, so entries close to 0 keep their digits.
            shift = <real_t>log(s)
            for i in range(n):
                y[i] = (x[i] - m) - shift
        else:
            inv = <real_t>(1.0 / s)
            for i in range(n):
                y[i] = y[i] * inv
        x += n
        y += n


def softmax_fwd(const real_t[:, ::1] x,     # in  (rows, n)
                real_t[:, ::1] out,         # out (rows, n)
                bint take_log=False,
                const real_t[::1] rowmax=None):  # in  (rows,) or None
    """out = softmax(x) (or log_softmax when ``take_log``) along each row.

    ``rowmax``, when given, is each row's maximum (NaN if the row has one):
    the caller may compute it with NumPy's SIMD max, which beats the
    portable scalar scan of this module.
    """
    cdef Py_ssize_t rows = x.shape[0], n = x.shape[1]
    _check_rows(x.shape[0], x.shape[1], out.shape[0], out.shape[1], "softmax_fwd")
    if rowmax is not None and rowmax.shape[0] != rows:
        raise ValueError(f"softmax_fwd: rowmax has length {rowmax.shape[0]}, "
                         f"expected {rows}")
    if rows == 0 or n == 0:
        return
    with nogil:
        _softmax_rows(&x[0, 0], &rowmax[0] if rowmax is not None else NULL,
                      &out[0, 0], rows, n, take_log)


cdef void _softmax_bwd_rows(const real_t* y, const real_t* g, real_t* out,
                            Py_ssize_t rows, Py_ssize_t n) noexcept nogil:
    # grad_x = y * (g - sum(g * y))
    cdef Py_ssize_t i
    cdef real_t d
    for _ in range(rows):
        d = <real_t>_row_dot(g, y, n)
        for i in range(n):
            out[i] = y[i] * (g[i] - d)
        y += n
        g += n
        out += n


cdef void _log_softmax_bwd_rows(const real_t* y, const real_t* g, real_t* out,
                                Py_ssize_t rows, Py_ssize_t n) noexcept nogil:
    # grad_x = g - exp(y) * sum(g);  y = log_softmax(x) <= 0.
    cdef Py_ssize_t i
    cdef real_t sg
    for _ in range(rows):
        sg = <real_t>_row_sum(g, n)
        _exp_shift(y, 0, out, n)
        for i in range(n):
            out[i] = g[i] - out[i] * sg
        y += n
        g += n
        out += n


def softmax_bwd(const real_t[:, ::1] y,     # in  (rows, n) softmax output
                const real_t[:, ::1] g,     # in  (rows, n) incoming gradient
                real_t[:, ::1] out,         # out (rows, n)
                bint take_log=False):
    """Gradient of softmax (or of log_softmax when ``take_log``) given its output."""
    cdef Py_ssize_t rows = y.shape[0], n = y.shape[1]
    _check_rows(y.shape[0], y.shape[1], g.shape[0], g.shape[1], "softmax_bwd")
    _check_rows(y.shape[0], y.shape[1], out.shape[0], out.shape[1], "softmax_bwd")
    if rows == 0 or n == 0:
        return
    with nogil:
        if take_log:
            _log_softmax_bwd_rows(&y[0, 0], &g[0, 0], &out[0, 0], rows, n)
        else:
            _softmax_bwd_rows(&y[0, 0], &g[0, 0], &out[0, 0], rows, n)


# --- logsumexp ---------------------------------------------------------------------

cdef double _exp_sum(const real_t* x, real_t m, Py_ssize_t n) noexcept nogil:
    # sum(exp(x - m)) in double, through a stack buffer of CHUNK elements.
    cdef real_t buf[CHUNK]
    cdef Py_ssize_t j = 0, m_len
    cdef double s = 0
    while j < n:
        m_len = n - j if n - j < CHUNK else CHUNK
        _exp_shift(x + j, m, buf, m_len)
        s += _row_sum(buf, m_len)
        j += m_len
    return s


cdef void _logsumexp_rows(const real_t* x, const real_t* rowmax, real_t* out,
                          Py_ssize_t rows, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t r
    cdef real_t m
    for r in range(rows):
        m = rowmax[r] if rowmax != NULL else _row_max(x, n)
        if m - m != 0:
            # +-inf or NaN maximum: exp(x - m) would be NaN; torch gives m.
            out[r] = m
            x += n
            continue
        out[r] = <real_t>(m + log(_exp_sum(x, m, n)))
        x += n


def logsumexp_fwd(const real_t[:, ::1] x,    # in  (rows, n)
                  real_t[::1] out,           # out (rows,)
                  const real_t[::1] rowmax=None):  # in  (rows,) or None
    """out[r] = log(sum(exp(x[r]))), max-subtracted (``rowmax`` as softmax_fwd)."""
    cdef Py_ssize_t rows = x.shape[0], n = x.shape[1], r
    if out.shape[0] != rows or (rowmax is not None and rowmax.shape[0] != rows):
        raise ValueError(f"logsumexp_fwd: out has length {out.shape[0]}, "
                         f"expected {rows}")
    if rows == 0:
        return
    if n == 0:
        for r in range(rows):
            out[r] = -float("inf")
        return
    with nogil:
        _logsumexp_rows(&x[0, 0], &rowmax[0] if rowmax is not None else NULL,
                        &out[0], rows, n)


cdef void _logsumexp_bwd_rows(const real_t* x, const real_t* lse, const real_t* g,
                              real_t* out, Py_ssize_t rows,
                              Py_ssize_t n) noexcept nogil:
    # grad_x = g * exp(x - lse), every exponent <= 0.
    cdef Py_ssize_t r, i
    cdef real_t gr
    for r in range(rows):
        gr = g[r]
        _exp_shift(x, lse[r], out, n)
        for i in range(n):
            out[i] = out[i] * gr
        x += n
        out += n


def logsumexp_bwd(const real_t[:, ::1] x,    # in  (rows, n)
                  const real_t[::1] lse,     # in  (rows,) forward result
                  const real_t[::1] g,       # in  (rows,) incoming gradient
                  real_t[:, ::1] out):       # out (rows, n)
    """out = g[:, None] * exp(x - lse[:, None])."""
    cdef Py_ssize_t rows = x.shape[0], n = x.shape[1]
    _check_rows(x.shape[0], x.shape[1], out.shape[0], out.shape[1], "logsumexp_bwd")
    if lse.shape[0] != rows or g.shape[0] != rows:
        raise ValueError(f"logsumexp_bwd: lse/g have lengths {lse.shape[0]}/"
                         f"{g.shape[0]}, expected {rows}")
    if rows == 0 or n == 0:
        return
    with nogil:
        _logsumexp_bwd_rows(&x[0, 0], &lse[0], &g[0], &out[0, 0], rows, n)


# --- variance ----------------------------------------------------------------------

def var_fwd(const real_t[:, ::1] x,     # in  (rows, n)
            double correction,
            real_t[::1] out,            # out (rows,) variance
            real_t[::1] mean):          # out (rows,) mean, kept for backward
    """Two-pass variance with ``sum((x - mean)^2) / (n - correction)``.

    A non-positive denominator gives inf (or NaN for an empty row), as torch.
    """
    cdef Py_ssize_t rows = x.shape[0], n = x.shape[1], r
    cdef double mu, ss, denom = n - correction
    if out.shape[0] != rows or mean.shape[0] != rows:
        raise ValueError(f"var_fwd: out/mean have lengths {out.shape[0]}/"
                         f"{mean.shape[0]}, expected {rows}")
    if rows == 0:
        return
    with nogil:
        for r in range(rows):
            if n == 0:
                mu = 0.0
                ss = 0.0
            else:
                mu = _row_sum(&x[r, 0], n) / n
                ss = _row_sqdev(&x[r, 0], mu, n)
            mean[r] = <real_t>mu
            out[r] = <real_t>(ss / denom) if denom > 0 else <real_t>(
                ss / 0.0 if ss != 0 else _nan(<real_t>0))


def var_bwd(const real_t[:, ::1] x,     # in  (rows, n)
            const real_t[::1] mean,     # in  (rows,)
            const real_t[::1] g,        # in  (rows,)
            double scale,               # 2 / (n - correction)
            real_t[:, ::1] out):        # out (rows, n)
    """out = g[:, None] * scale * (x - mean[:, None])."""
    cdef Py_ssize_t rows = x.shape[0], n = x.shape[1], r, i
    cdef real_t c, mu
    _check_rows(x.shape[0], x.shape[1], out.shape[0], out.shape[1], "var_bwd")
    if mean.shape[0] != rows or g.shape[0] != rows:
        raise ValueError("var_bwd: mean/g must have one value per row")
    if rows == 0 or n == 0:
        return
    with nogil:
        for r in range(rows):
            c = <real_t>(g[r] * scale)
            mu = mean[r]
            for i in range(n):
                out[r, i] = c * (x[r, i] - mu)
