"""Row reductions of cygrad: softmax, log_softmax, logsumexp, var, sum, max/min.

Layout: every kernel works on C-contiguous rows, ``x`` of shape ``(rows, n)``;
the reduced axis is the last one.  ``cygrad.ops`` moves the reduced axes of a
tensor to the end (a copy only when they are not already there) and reshapes
to two dimensions.  Per-row results have shape ``(rows,)``.

Dtypes: ``real_t`` (float32 or float64).  Sums and means accumulate in double
(8 or 16 independent lanes), so float32 keeps its digits; results are rounded
to ``real_t`` once when stored.

Stability: softmax, log_softmax and logsumexp subtract the row maximum before
``exp``, so every argument of ``exp`` is <= 0: nothing overflows, and logits of
1e4 give the right answer.  ``var`` is two-pass (mean, then squared
deviations), never ``E[x^2] - E[x]^2``.

Speed: ``exp`` of a non-positive argument is ``cg_math.h``'s ``cg_expf_le0`` /
``cg_exp_le0``, a range-reduced polynomial (max relative error about
1e-7 and 2e-16 against libm) written without branches, so that the row
helpers built on it (max, sum of exps, scaled exps) vectorize; each helper
is compiled for AVX2+FMA and for the baseline, and picked at load.  libm's
``exp`` is a call per element and costs 5-7x more; the whole point of a
compiled softmax is this loop.  Each row (a few KB) is read from memory once,
by the max, and every later pass over it hits L1 (when the caller passes
``rowmax``, the exp pass reads the row from memory instead).  The row
helpers are exported to ``loss.pyx`` through ``reductions.pxd`` (one exp,
not two).

NaN propagates as in torch (a NaN in a row makes that row's softmax NaN, its
max/min NaN at the first NaN's index); a row of all ``-inf`` gives NaN
softmax, as torch.

Aliasing: outputs must not alias inputs.
Threading: each ``def`` wrapper checks shapes with the GIL held, then
releases it for the loop; nothing inside ``nogil`` raises.
"""

from libc.math cimport log
from libc.stdint cimport int64_t
from libc.string cimport memset

from cygrad._kernels._types cimport real_t

cdef extern from "cg_reductions.h":
    float cg_max_f(const float* x, Py_ssize_t n) noexcept nogil
    double cg_max_d(const double* x, Py_ssize_t n) noexcept nogil
    float cg_min_f(const float* x, Py_ssize_t n) noexcept nogil
    double cg_min_d(const double* x, Py_ssize_t n) noexcept nogil
    Py_ssize_t cg_find_f(const float* x, float m, Py_ssize_t n) noexcept nogil
    Py_ssize_t cg_find_d(const double* x, double m, Py_ssize_t n) noexcept nogil
    double cg_lanes_f(const float* x, const float* y, Py_ssize_t n) noexcept nogil
    double cg_lanes_d(const double* x, const double* y,
                      Py_ssize_t n) noexcept nogil
    double cg_exp_sum_f(const float* x, float shift, float* y,
                        Py_ssize_t n) noexcept nogil
    double cg_exp_sum_d(const double* x, double shift, double* y,
                        Py_ssize_t n) noexcept nogil
    void cg_exp_axpy_f(const float* x, float shift, float a, const float* b,
                       float* y, Py_ssize_t n) noexcept nogil
    void cg_exp_axpy_d(const double* x, double shift, double a, const double* b,
                       double* y, Py_ssize_t n) noexcept nogil
    float cg_prod_f(const float* x, Py_ssize_t n) noexcept nogil
    double cg_prod_d(const double* x, Py_ssize_t n) noexcept nogil
    void cg_softmax_rows_f(const float* x, const float* rowmax, float* y, Py_ssize_t rows,
                           Py_ssize_t n) noexcept nogil
    void cg_softmax_rows_d(const double* x, const double* rowmax, double* y,
                           Py_ssize_t rows, Py_ssize_t n) noexcept nogil
    void cg_sub2_f(const float* x, float a, float b, float* y,
                   Py_ssize_t n) noexcept nogil
    void cg_sub2_d(const double* x, double a, double b, double* y,
                   Py_ssize_t n) noexcept nogil
    void cg_mul_sub_f(const float* x, const float* g, float d, float* y,
                      Py_ssize_t n) noexcept nogil
    void cg_mul_sub_d(const double* x, const double* g, double d, double* y,
                      Py_ssize_t n) noexcept nogil
    void cg_sub_mul_f(const float* x, float a, float c, float* y,
                      Py_ssize_t n) noexcept nogil
    void cg_sub_mul_d(const double* x, double a, double c, double* y,
                      Py_ssize_t n) noexcept nogil
    double cg_sqdev_f(const float* x, double mean, Py_ssize_t n) noexcept nogil
    double cg_sqdev_d(const double* x, double mean, Py_ssize_t n) noexcept nogil
    void cg_softplus_f(const float* x, float* y, Py_ssize_t n) noexcept nogil
    void cg_softplus_d(const double* x, double* y, Py_ssize_t n) noexcept nogil
    void cg_sigmoid_f(const float* x, float* y, Py_ssize_t n) noexcept nogil
    void cg_sigmoid_d(const double* x, double* y, Py_ssize_t n) noexcept nogil


# --- row helpers (declared in reductions.pxd, used by loss.pyx too) --------------

cdef real_t row_max(const real_t* x, Py_ssize_t n) noexcept nogil:
    if real_t is float:
        return cg_max_f(x, n)
    else:
        return cg_max_d(x, n)


cdef double row_sum(const real_t* x, Py_ssize_t n) noexcept nogil:
    if real_t is float:
        return cg_lanes_f(x, NULL, n)
    else:
        return cg_lanes_d(x, NULL, n)


cdef double row_dot(const real_t* x, const real_t* y, Py_ssize_t n) noexcept nogil:
    if real_t is float:
        return cg_lanes_f(x, y, n)
    else:
        return cg_lanes_d(x, y, n)


cdef double exp_sum(const real_t* x, real_t shift, real_t* y,
                    Py_ssize_t n) noexcept nogil:
    if real_t is float:
        return cg_exp_sum_f(x, shift, y, n)
    else:
        return cg_exp_sum_d(x, shift, y, n)


cdef void exp_axpy(const real_t* x, real_t shift, real_t a, const real_t* b,
                   real_t* y, Py_ssize_t n) noexcept nogil:
    if real_t is float:
        cg_exp_axpy_f(x, shift, a, b, y, n)
    else:
        cg_exp_axpy_d(x, shift, a, b, y, n)


cdef void softplus_neg_abs(const real_t* x, real_t* y, Py_ssize_t n) noexcept nogil:
    if real_t is float:
        cg_softplus_f(x, y, n)
    else:
        cg_softplus_d(x, y, n)


cdef void sigmoid(const real_t* x, real_t* y, Py_ssize_t n) noexcept nogil:
    if real_t is float:
        cg_sigmoid_f(x, y, n)
    else:
        cg_sigmoid_d(x, y, n)


cdef inline void _sub2(const real_t* x, real_t a, real_t b, real_t* y,
                       Py_ssize_t n) noexcept nogil:
    if real_t is float:
        cg_sub2_f(x, a, b, y, n)
    else:
        cg_sub2_d(x, a, b, y, n)


cdef inline void _mul_sub(const real_t* x, const real_t* g, real_t d, real_t* y,
                          Py_ssize_t n) noexcept nogil:
    if real_t is float:
        cg_mul_sub_f(x, g, d, y, n)
    else:
        cg_mul_sub_d(x, g, d, y, n)


cdef inline real_t _nan(real_t like) noexcept nogil:
    cdef double z = 0.0
    return <real_t>(z / z)


cdef inline double _row_sqdev(const real_t* x, double mean,
                              Py_ssize_t n) noexcept nogil:
    if real_t is float:
        return cg_sqdev_f(x, mean, n)
    else:
        return cg_sqdev_d(x, mean, n)


cdef inline void _sub_mul(const real_t* x, real_t a, real_t c, real_t* y,
                          Py_ssize_t n) noexcept nogil:
    if real_t is float:
        cg_sub_mul_f(x, a, c, y, n)
    else:
        cg_sub_mul_d(x, a, c, y, n)


cdef void _check_rows(Py_ssize_t r0, Py_ssize_t n0, Py_ssize_t r1, Py_ssize_t n1,
                      str name) except *:
    if r0 != r1 or n0 != n1:
        raise ValueError(f"{name}: shapes [{r0}, {n0}] and [{r1}, {n1}] differ")


# --- softmax and log_softmax ------------------------------------------------------

cdef void softmax_rows(const real_t* x, const real_t* rowmax, real_t* y,
                       Py_ssize_t rows, Py_ssize_t n, bint take_log) noexcept nogil:
    cdef Py_ssize_t r
    cdef real_t m
    if not take_log:
        # max, exp and sum, scale: one compiled loop over the rows
        if real_t is float:
            cg_softmax_rows_f(x, rowmax, y, rows, n)
        else:
            cg_softmax_rows_d(x, rowmax, y, rows, n)
        return
    for r in range(rows):
        m = rowmax[r] if rowmax != NULL else row_max(x, n)
        # exp is only summed, never stored: y is written once.  Then
        # (x - m) - log(s), in this order, as torch: x - m is exact
        # near the maximum, so entries close to 0 keep their digits.
        _sub2(x, m, <real_t>log(exp_sum(x, m, NULL, n)), y, n)
        x += n
        y += n


def softmax_fwd(const real_t[:, ::1] x,     # in  (rows, n)
                real_t[:, ::1] out,         # out (rows, n)
                bint take_log=False,
                const real_t[::1] rowmax=None):  # in  (rows,) or None
    """out = softmax(x) (or log_softmax when ``take_log``) along each row.

    ``rowmax``, when given, is each row's maximum (NaN if the row has one);
    without it the kernel finds it, reading each row from memory once.
    """
    cdef Py_ssize_t rows = x.shape[0], n = x.shape[1]
    _check_rows(x.shape[0], x.shape[1], out.shape[0], out.shape[1], "softmax_fwd")
    if rowmax is not None and rowmax.shape[0] != rows:
        raise ValueError(f"softmax_fwd: rowmax has length {rowmax.shape[0]}, "
                         f"expected {rows}")
    if rows == 0 or n == 0:
        return
    with nogil:
        softmax_rows(&x[0, 0], &rowmax[0] if rowmax is not None else NULL,
                      &out[0, 0], rows, n, take_log)


cdef void _softmax_bwd_rows(const real_t* y, const real_t* g, real_t* out,
                            Py_ssize_t rows, Py_ssize_t n) noexcept nogil:
    # grad_x = y * (g - sum(g * y))
    for _ in range(rows):
        _mul_sub(y, g, <real_t>row_dot(g, y, n), out, n)
        y += n
        g += n
        out += n


cdef void _log_softmax_bwd_rows(const real_t* y, const real_t* g, real_t* out,
                                Py_ssize_t rows, Py_ssize_t n) noexcept nogil:
    # grad_x = g - exp(y) * sum(g);  y = log_softmax(x) <= 0.
    for _ in range(rows):
        exp_axpy(y, 0, -<real_t>row_sum(g, n), g, out, n)
        y += n
        g += n
        out += n


cdef void softmax_bwd_rows(const real_t* y, const real_t* g, real_t* out,
                           Py_ssize_t rows, Py_ssize_t n, bint take_log) noexcept nogil:
    if take_log:
        _log_softmax_bwd_rows(y, g, out, rows, n)
    else:
        _softmax_bwd_rows(y, g, out, rows, n)


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
        softmax_bwd_rows(&y[0, 0], &g[0, 0], &out[0, 0], rows, n, take_log)


# --- logsumexp ---------------------------------------------------------------------

cdef void _logsumexp_rows(const real_t* x, const real_t* rowmax, real_t* out,
                          Py_ssize_t rows, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t r
    cdef real_t m
    for r in range(rows):
        m = rowmax[r] if rowmax != NULL else row_max(x, n)
        if m - m != 0:
            # +-inf or NaN maximum: exp(x - m) would be NaN; torch gives m.
            out[r] = m
            x += n
            continue
        out[r] = <real_t>(m + log(exp_sum(x, m, NULL, n)))
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
    cdef Py_ssize_t r
    for r in range(rows):
        exp_axpy(x, lse[r], g[r], NULL, out, n)
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
                mu = row_sum(&x[r, 0], n) / n
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
    cdef Py_ssize_t rows = x.shape[0], n = x.shape[1], r
    _check_rows(x.shape[0], x.shape[1], out.shape[0], out.shape[1], "var_bwd")
    if mean.shape[0] != rows or g.shape[0] != rows:
        raise ValueError("var_bwd: mean/g must have one value per row")
    if rows == 0 or n == 0:
        return
    with nogil:
        for r in range(rows):
            _sub_mul(&x[r, 0], mean[r], <real_t>(g[r] * scale), &out[r, 0], n)


# --- sum, max and min along rows ---------------------------------------------------

def sum_fwd(const real_t[:, ::1] x,     # in  (rows, n)
            real_t[::1] out):           # out (rows,)
    """out[r] = sum(x[r]), accumulated in double (8 lanes)."""
    cdef Py_ssize_t rows = x.shape[0], n = x.shape[1], r
    if out.shape[0] != rows:
        raise ValueError(f"sum_fwd: out has length {out.shape[0]}, expected {rows}")
    if rows == 0:
        return
    if n == 0:                  # (no element to point at: empty rows sum to 0)
        for r in range(rows):
            out[r] = 0
        return
    with nogil:
        if n < 16:
            _short_row_sums(&x[0, 0], &out[0], rows, n)
        else:
            for r in range(rows):
                out[r] = <real_t>row_sum(&x[r, 0], n)


cdef void _short_row_sums(const real_t* x, real_t* out, Py_ssize_t rows,
                          Py_ssize_t n) noexcept nogil:
    # Rows shorter than one lane block, where row_sum adds the elements one
    # after another: four rows at a time, so that four chains of dependent
    # adds overlap (a call per row of 10 cost 8 ns, the adds' latency).
    # Each row's sum is the same sequence of double adds: the same bits.
    cdef Py_ssize_t r = 0, i
    cdef double s0, s1, s2, s3
    while r + 4 <= rows:
        s0 = s1 = s2 = s3 = 0.0
        for i in range(n):
            s0 = s0 + x[i]
            s1 = s1 + x[n + i]
            s2 = s2 + x[2 * n + i]
            s3 = s3 + x[3 * n + i]
        out[r] = <real_t>s0
        out[r + 1] = <real_t>s1
        out[r + 2] = <real_t>s2
        out[r + 3] = <real_t>s3
        x += 4 * n
        r += 4
    while r < rows:
        s0 = 0.0
        for i in range(n):
            s0 = s0 + x[i]
        out[r] = <real_t>s0
        x += n
        r += 1


cdef inline real_t _row_min(const real_t* x, Py_ssize_t n) noexcept nogil:
    if real_t is float:
        return cg_min_f(x, n)
    else:
        return cg_min_d(x, n)


cdef inline Py_ssize_t _find(const real_t* x, real_t m, Py_ssize_t n) noexcept nogil:
    if real_t is float:
        return cg_find_f(x, m, n)
    else:
        return cg_find_d(x, m, n)


def prod_all(const real_t[::1] x):
    """The product of every element of x (1 when empty), in lanes."""
    cdef real_t p
    if x.shape[0] == 0:
        return 1.0
    with nogil:
        p = cg_prod_f(&x[0], x.shape[0]) if real_t is float else cg_prod_d(&x[0], x.shape[0])
    return p


def extreme_dim_fwd(const real_t[:, ::1] x,     # in  (rows, n), n >= 1
                    real_t[::1] values,         # out (rows,)
                    int64_t[::1] indices,       # out (rows,)
                    bint is_min=False):
    """values[r] = max (min when ``is_min``) of x[r]; indices[r] = its first index.

    A row holding NaN gives NaN and the index of its first NaN (torch).  Two
    passes per row: a vectorized max, then a vectorized search for the first
    match in the row, which the first pass left in L1.
    """
    cdef Py_ssize_t rows = x.shape[0], n = x.shape[1], r
    cdef real_t m
    if values.shape[0] != rows or indices.shape[0] != rows:
        raise ValueError(f"extreme_dim_fwd: values/indices have lengths "
                         f"{values.shape[0]}/{indices.shape[0]}, expected {rows}")
    if rows == 0:
        return
    if n == 0:
        raise ValueError("extreme_dim_fwd: rows are empty")
    with nogil:
        if n < 16:
            _short_row_extremes(&x[0, 0], &values[0], &indices[0], rows, n, is_min)
        else:
            for r in range(rows):
                m = _row_min(&x[r, 0], n) if is_min else row_max(&x[r, 0], n)
                values[r] = m
                indices[r] = _find(&x[r, 0], m, n)


cdef void _short_row_extremes(const real_t* x, real_t* values, int64_t* indices,
                              Py_ssize_t rows, Py_ssize_t n,
                              bint is_min) noexcept nogil:
    # Rows shorter than a lane block: one scalar pass per row (two calls per
    # row cost 16 ns at n = 10).  The same answer as the two passes: the
    # first strictly larger (smaller) element replaces the best, so ties
    # keep the first index, and the first NaN ends the row.
    cdef Py_ssize_t r, i, bi
    cdef real_t best, v
    for r in range(rows):
        best = x[0]
        bi = 0
        if best == best:
            for i in range(1, n):
                v = x[i]
                if v != v:
                    best = v
                    bi = i
                    break
                if (v < best) if is_min else (v > best):
                    best = v
                    bi = i
        values[r] = best
        indices[r] = bi
        x += n


def extreme_dim_bwd(const int64_t[::1] indices,   # in  (rows,) from the forward
                    const real_t[::1] g,          # in  (rows,)
                    real_t[:, ::1] out):          # out (rows, n)
    """out = 0 except out[r, indices[r]] = g[r] (the gradient of max/min)."""
    cdef Py_ssize_t rows = out.shape[0], n = out.shape[1], r
    if indices.shape[0] != rows or g.shape[0] != rows:
        raise ValueError(f"extreme_dim_bwd: indices/g have lengths "
                         f"{indices.shape[0]}/{g.shape[0]}, expected {rows}")
    for r in range(rows):
        if indices[r] < 0 or indices[r] >= n:
            raise IndexError(f"extreme_dim_bwd: index {indices[r]} out of range "
                             f"for rows of {n}")
    if rows == 0 or n == 0:
        return
    with nogil:
        for r in range(rows):
            memset(&out[r, 0], 0, n * sizeof(real_t))
            out[r, indices[r]] = g[r]
