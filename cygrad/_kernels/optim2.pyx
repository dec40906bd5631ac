"""Fused updates of NAdam, RAdam, Adamax, Adadelta, Rprop, ASGD and Adafactor.

The conventions of ``optim.pyx`` hold here unchanged:

Layout: every array is a flat, C-contiguous view of one parameter; a
parameter, its gradient and its state buffers have the same length and dtype.

Dtypes: ``real_t`` (float32 or float64).  One pass over the parameter and its
state, reading and writing every element once; no temporaries.  Adafactor is
the exception: its step needs the norms of the parameter and of the whole
update first, so it makes three passes (moments, update norm, update) and
forms the update twice rather than storing it; a factored matrix's column
sums go to a malloc'ed scratch row of doubles.

Order of operations: torch's single-tensor path (``foreach=False``) operation
by operation, in the parameter's dtype.  Scalars are formed in double as
torch's Python code forms them and rounded to ``real_t`` once, before the
loop, as ATen does when a tensor op takes a Python scalar.  ATen's
``addcdiv(s, a, b, value=v)`` is ``s + (v * a) / b``; ``addcmul`` is
``fma(v * a, b, s)``, ``x.add(y, alpha=a)`` is ``fma(y, a, x)`` and ``lerp``
one fma too, rounded once as ATen's kernels round them; a Python scalar
divided by a tensor is ``reciprocal(t) * scalar``.  Every other operation is
rounded on its own, with IEEE ``sqrt``: the updates are torch's bit for bit
given IEEE square roots (see ``optim.pyx`` on torch's own).

Aliasing: no two arguments of one call may share memory (the wrappers check
the parameter against its gradient and first state buffer).

Threading: the ``def`` wrappers validate lengths with the GIL held, then
release it for the loop; nothing in a ``nogil`` loop raises.

Vectorisation: the update loops are C, in ``cg_optim.h``, each compiled for
AVX-512, AVX2 + FMA and the baseline with the widest copy chosen at load and
the same bits from each (see ``optim.pyx``); the options are flags, passed
as literals for the default configuration so that it runs a branch-free
loop.  Adafactor keeps its row and column sums here; its elementwise passes
(forming ``u`` and applying it) and its sums of squares are C helpers too.
"""

from libc.math cimport fabs, fma, fmaf, sqrt
from libc.stdlib cimport free, malloc

from cygrad._kernels._types cimport real_t


cdef extern from "cg_optim.h":
    # The update loops, one per dtype (_f: float32, _d: float64), each compiled
    # for AVX-512, AVX2 + FMA and the baseline (CG_SIMD_FN in cg_simd.h).
    void cg_nadam_f(float* p, const float* grad, float* m, float* v, Py_ssize_t n,
                    float b1c, float b2, float b2c, float bc2, float eps, float wd,
                    float decay, float coef_g, float coef_m, float sign, int l2,
                    int decoupled, int small) noexcept nogil
    void cg_nadam_d(double* p, const double* grad, double* m, double* v,
                    Py_ssize_t n, double b1c, double b2, double b2c, double bc2,
                    double eps, double wd, double decay, double coef_g,
                    double coef_m, double sign, int l2, int decoupled,
                    int small) noexcept nogil
    void cg_radam_f(float* p, const float* grad, float* m, float* v, Py_ssize_t n,
                    float b1c, float b2, float b2c, float bc1, float bc2_sqrt,
                    float eps, float lr, float rect, float wd, float decay,
                    float sign, int l2, int decoupled, int small,
                    int rectify) noexcept nogil
    void cg_radam_d(double* p, const double* grad, double* m, double* v,
                    Py_ssize_t n, double b1c, double b2, double b2c, double bc1,
                    double bc2_sqrt, double eps, double lr, double rect, double wd,
                    double decay, double sign, int l2, int decoupled, int small,
                    int rectify) noexcept nogil
    void cg_adamax_f(float* p, const float* grad, float* m, float* u, Py_ssize_t n,
                     float b1c, float b2, float eps, float neg_clr, float wd,
                     float sign, int l2, int small) noexcept nogil
    void cg_adamax_d(double* p, const double* grad, double* m, double* u,
                     Py_ssize_t n, double b1c, double b2, double eps,
                     double neg_clr, double wd, double sign, int l2,
                     int small) noexcept nogil
    void cg_adadelta_f(float* p, const float* grad, float* v, float* a,
                       Py_ssize_t n, float rho, float rho_c, float eps,
                       float neg_lr, float wd, float sign) noexcept nogil
    void cg_adadelta_d(double* p, const double* grad, double* v, double* a,
                       Py_ssize_t n, double rho, double rho_c, double eps,
                       double neg_lr, double wd, double sign) noexcept nogil
    void cg_rprop_f(float* p, const float* grad, float* prev, float* step_size,
                    Py_ssize_t n, float etaminus, float etaplus, float lo,
                    float hi, float sign) noexcept nogil
    void cg_rprop_d(double* p, const double* grad, double* prev,
                    double* step_size, Py_ssize_t n, double etaminus,
                    double etaplus, double lo, double hi,
                    double sign) noexcept nogil
    void cg_asgd_f(float* p, const float* grad, float* ax, Py_ssize_t n,
                   float decay, float neg_eta, float mu, float wd, float sign,
                   int l2, int average) noexcept nogil
    void cg_asgd_d(double* p, const double* grad, double* ax, Py_ssize_t n,
                   double decay, double neg_eta, double mu, double wd, double sign,
                   int l2, int average) noexcept nogil
    void cg_adafactor_var_f(float* var, const float* grad, Py_ssize_t n, float w,
                            float sign, int small) noexcept nogil
    void cg_adafactor_var_d(double* var, const double* grad, Py_ssize_t n,
                            double w, double sign, int small) noexcept nogil
    void cg_adafactor_u_f(float* u, const float* grad, const float* var,
                          float rvr, const float* cv, float mean, Py_ssize_t n,
                          float sign, float vmin) noexcept nogil
    void cg_adafactor_u_d(double* u, const double* grad, const double* var,
                          double rvr, const double* cv, double mean, Py_ssize_t n,
                          double sign, double vmin) noexcept nogil
    void cg_adafactor_apply_f(float* p, const float* u, Py_ssize_t n, float coef,
                              float decay) noexcept nogil
    void cg_adafactor_apply_d(double* p, const double* u, Py_ssize_t n,
                              double coef, double decay) noexcept nogil
    double cg_sumsq8_f(const float* x, Py_ssize_t n) noexcept nogil
    double cg_sumsq8_d(const double* x, Py_ssize_t n) noexcept nogil


include "simd_level.pxi"


cdef inline real_t _lerp(
    real_t start, real_t end, real_t weight, bint small
) noexcept nogil:
    # ATen's lerp: exact at both ends, one fma; ``small`` is |weight| < 0.5.
    # (The C loops have their own, cg_o_lerp in cg_optim_t.h.)
    if real_t is float:
        if small:
            return fmaf(weight, end - start, start)
        return fmaf(-(end - start), <float>1 - weight, end)
    if small:
        return fma(weight, end - start, start)
    return fma(-(end - start), <double>1 - weight, end)


cdef int _check(str name, Py_ssize_t n, Py_ssize_t m, str what) except -1:
    if m != n:
        raise ValueError(f"{name}: {what} has {m} elements, the parameter {n}")
    return 0


cdef int _check_alias(str name, const void* p, const void* a, const void* b) except -1:
    if p == a or p == b:
        raise ValueError(f"{name}: param shares memory with grad or state")
    return 0


# --------------------------------------------------------------------------
# NAdam


def nadam(
    real_t[::1] param,                # in/out
    const real_t[::1] grad,           # in
    real_t[::1] exp_avg,              # in/out
    real_t[::1] exp_avg_sq,           # in/out
    double lr,
    double beta1,
    double beta2,
    double eps,
    double weight_decay,
    bint decoupled,
    double bias_correction2,
    double mu,
    double mu_product,
    double mu_next,
    bint maximize,
):
    """One NAdam step, in place; ``mu_product`` already includes ``mu``.

    ``g = -grad if maximize else grad``; weight decay ``p = p * (1 - lr*wd)``
    (decoupled) or ``g = fma(p, wd, g)``; ``m = lerp(m, g, 1 - b1)``;
    ``v = fma((1 - b2) * g, g, v * b2)``; ``d = sqrt(v / bc2) + eps``;
    ``p = p + (cg * g) / d``, then ``p = p + (cm * m) / d`` with
    ``cg = -lr * (1 - mu) / (1 - mu_product)`` and
    ``cm = -lr * mu_next / (1 - mu_product * mu_next)``.
    """
    cdef Py_ssize_t n = param.shape[0]
    _check("nadam", n, grad.shape[0], "grad")
    _check("nadam", n, exp_avg.shape[0], "exp_avg")
    _check("nadam", n, exp_avg_sq.shape[0], "exp_avg_sq")
    if n == 0:
        return
    _check_alias("nadam", &param[0], &grad[0], &exp_avg[0])
    cdef bint decay = decoupled and weight_decay != 0
    cdef double coef_g = -lr * (1.0 - mu) / (1.0 - mu_product)
    cdef double coef_m = (-lr * mu_next) / (1.0 - mu_product * mu_next)
    cdef bint l2 = weight_decay != 0 and not decoupled
    cdef bint small = fabs(1.0 - beta1) < 0.5
    cdef double sign = -1.0 if maximize else 1.0
    with nogil:
        if real_t is float:
            cg_nadam_f(&param[0], &grad[0], &exp_avg[0], &exp_avg_sq[0], n,
                       <float>(1.0 - beta1), <float>beta2, <float>(1.0 - beta2),
                       <float>bias_correction2, <float>eps, <float>weight_decay,
                       <float>(1.0 - lr * weight_decay), <float>coef_g,
                       <float>coef_m, <float>sign, l2, decay, small)
        else:
            cg_nadam_d(&param[0], &grad[0], &exp_avg[0], &exp_avg_sq[0], n,
                       1.0 - beta1, beta2, 1.0 - beta2, bias_correction2, eps,
                       weight_decay, 1.0 - lr * weight_decay, coef_g, coef_m,
                       sign, l2, decay, small)


# --------------------------------------------------------------------------
# RAdam


def radam(
    real_t[::1] param,                # in/out
    const real_t[::1] grad,           # in
    real_t[::1] exp_avg,              # in/out
    real_t[::1] exp_avg_sq,           # in/out
    double lr,
    double beta1,
    double beta2,
    double eps,
    double weight_decay,
    bint decoupled,
    double bias_correction1,
    double bias_correction2,
    double rect,
    bint rectify,
    bint maximize,
):
    """One RAdam step, in place.

    Weight decay and moments as in Adam; ``b = m / bc1``; when ``rectify``
    (``rho_t > 5``) ``p = p - ((b * lr) * ((1 / (sqrt(v) + eps)) * sqrt(bc2)))
    * rect``, else ``p = p - b * lr``.
    """
    cdef Py_ssize_t n = param.shape[0]
    _check("radam", n, grad.shape[0], "grad")
    _check("radam", n, exp_avg.shape[0], "exp_avg")
    _check("radam", n, exp_avg_sq.shape[0], "exp_avg_sq")
    if n == 0:
        return
    _check_alias("radam", &param[0], &grad[0], &exp_avg[0])
    cdef bint decay = decoupled and weight_decay != 0
    cdef bint l2 = weight_decay != 0 and not decoupled
    cdef bint small = fabs(1.0 - beta1) < 0.5
    cdef double sign = -1.0 if maximize else 1.0
    cdef double bc2_sqrt = bias_correction2 ** 0.5
    with nogil:
        if real_t is float:
            cg_radam_f(&param[0], &grad[0], &exp_avg[0], &exp_avg_sq[0], n,
                       <float>(1.0 - beta1), <float>beta2, <float>(1.0 - beta2),
                       <float>bias_correction1, <float>bc2_sqrt, <float>eps,
                       <float>lr, <float>rect, <float>weight_decay,
                       <float>(1.0 - lr * weight_decay), <float>sign, l2, decay,
                       small, rectify)
        else:
            cg_radam_d(&param[0], &grad[0], &exp_avg[0], &exp_avg_sq[0], n,
                       1.0 - beta1, beta2, 1.0 - beta2, bias_correction1,
                       bc2_sqrt, eps, lr, rect, weight_decay,
                       1.0 - lr * weight_decay, sign, l2, decay, small, rectify)


# --------------------------------------------------------------------------
# Adamax


def adamax(
    real_t[::1] param,                # in/out
    const real_t[::1] grad,           # in
    real_t[::1] exp_avg,              # in/out
    real_t[::1] exp_inf,              # in/out
    double clr,
    double beta1,
    double beta2,
    double eps,
    double weight_decay,
    bint maximize,
):
    """One Adamax step with ``clr = lr / (1 - beta1**t)``, in place.

    ``g = -grad if maximize else grad; g = fma(p, wd, g)``; ``m = lerp(m, g,
    1 - b1)``; ``u = max(b2 * u, |g| + eps)`` (NaN wins);
    ``p = p + (-clr * m) / u``.
    """
    cdef Py_ssize_t n = param.shape[0]
    _check("adamax", n, grad.shape[0], "grad")
    _check("adamax", n, exp_avg.shape[0], "exp_avg")
    _check("adamax", n, exp_inf.shape[0], "exp_inf")
    if n == 0:
        return
    _check_alias("adamax", &param[0], &grad[0], &exp_avg[0])
    cdef bint small = fabs(1.0 - beta1) < 0.5
    cdef double sign = -1.0 if maximize else 1.0
    with nogil:
        if real_t is float:
            cg_adamax_f(&param[0], &grad[0], &exp_avg[0], &exp_inf[0], n,
                        <float>(1.0 - beta1), <float>beta2, <float>eps,
                        <float>(-clr), <float>weight_decay, <float>sign,
                        weight_decay != 0, small)
        else:
            cg_adamax_d(&param[0], &grad[0], &exp_avg[0], &exp_inf[0], n,
                        1.0 - beta1, beta2, eps, -clr, weight_decay, sign,
                        weight_decay != 0, small)


# --------------------------------------------------------------------------
# Adadelta


def adadelta(
    real_t[::1] param,                # in/out
    const real_t[::1] grad,           # in
    real_t[::1] square_avg,           # in/out
    real_t[::1] acc_delta,            # in/out
    double lr,
    double rho,
    double eps,
    double weight_decay,
    bint maximize,
):
    """One Adadelta step, in place.

    ``g = -grad if maximize else grad; g = fma(p, wd, g)``;
    ``v = fma((1 - rho) * g, g, v * rho)``;
    ``d = (sqrt(a + eps) / sqrt(v + eps)) * g``;
    ``a = fma((1 - rho) * d, d, a * rho)``; ``p = fma(d, -lr, p)``.
    """
    cdef Py_ssize_t n = param.shape[0]
    _check("adadelta", n, grad.shape[0], "grad")
    _check("adadelta", n, square_avg.shape[0], "square_avg")
    _check("adadelta", n, acc_delta.shape[0], "acc_delta")
    if n == 0:
        return
    _check_alias("adadelta", &param[0], &grad[0], &square_avg[0])
    cdef double sign = -1.0 if maximize else 1.0
    with nogil:
        if real_t is float:
            cg_adadelta_f(&param[0], &grad[0], &square_avg[0], &acc_delta[0], n,
                          <float>rho, <float>(1.0 - rho), <float>eps, <float>(-lr),
                          <float>weight_decay, <float>sign)
        else:
            cg_adadelta_d(&param[0], &grad[0], &square_avg[0], &acc_delta[0], n,
                          rho, 1.0 - rho, eps, -lr, weight_decay, sign)


# --------------------------------------------------------------------------
# Rprop


def rprop(
    real_t[::1] param,                # in/out
    const real_t[::1] grad,           # in
    real_t[::1] prev,                 # in/out
    real_t[::1] step_size,            # in/out
    double etaminus,
    double etaplus,
    double step_size_min,
    double step_size_max,
    bint maximize,
):
    """One Rprop step, in place.

    ``g = -grad if maximize else grad``; ``f = etaplus, etaminus or 1`` as
    ``sign(g * prev)`` is 1, -1 or 0 (NaN: 0); ``s = clamp(s * f, min, max)``;
    ``g = 0`` where ``f == etaminus``; ``p = p - sign(g) * s``; ``prev = g``.
    """
    cdef Py_ssize_t n = param.shape[0]
    _check("rprop", n, grad.shape[0], "grad")
    _check("rprop", n, prev.shape[0], "prev")
    _check("rprop", n, step_size.shape[0], "step_size")
    if n == 0:
        return
    _check_alias("rprop", &param[0], &grad[0], &prev[0])
    cdef double sign = -1.0 if maximize else 1.0
    with nogil:
        if real_t is float:
            cg_rprop_f(&param[0], &grad[0], &prev[0], &step_size[0], n,
                       <float>etaminus, <float>etaplus, <float>step_size_min,
                       <float>step_size_max, <float>sign)
        else:
            cg_rprop_d(&param[0], &grad[0], &prev[0], &step_size[0], n,
                       etaminus, etaplus, step_size_min, step_size_max, sign)


# --------------------------------------------------------------------------
# ASGD


def asgd(
    real_t[::1] param,                # in/out
    const real_t[::1] grad,           # in
    real_t[::1] ax,                   # in/out
    double eta,
    double mu,
    double lambd,
    double weight_decay,
    bint maximize,
):
    """One ASGD step with the current ``eta`` and ``mu``, in place.

    ``g = -grad if maximize else grad; g = fma(p, wd, g)``;
    ``p = p * (1 - lambd * eta)``; ``p = fma(g, -eta, p)``;
    ``ax = ax + (p - ax) * mu`` (``ax = p`` when ``mu == 1``).
    """
    cdef Py_ssize_t n = param.shape[0]
    _check("asgd", n, grad.shape[0], "grad")
    _check("asgd", n, ax.shape[0], "ax")
    if n == 0:
        return
    _check_alias("asgd", &param[0], &grad[0], &ax[0])
    cdef double sign = -1.0 if maximize else 1.0
    with nogil:
        if real_t is float:
            cg_asgd_f(&param[0], &grad[0], &ax[0], n, <float>(1.0 - lambd * eta),
                      <float>(-eta), <float>mu, <float>weight_decay, <float>sign,
                      weight_decay != 0, mu != 1.0)
        else:
            cg_asgd_d(&param[0], &grad[0], &ax[0], n, 1.0 - lambd * eta, -eta, mu,
                      weight_decay, sign, weight_decay != 0, mu != 1.0)


# --------------------------------------------------------------------------
# Adafactor


def adafactor(
    real_t[::1] param,                # in/out, viewed as (batch, rows, cols)
    const real_t[::1] grad,           # in, same
    real_t[::1] row_var,              # in/out (batch, rows), or None
    real_t[::1] col_var,              # in/out (batch, cols), or None
    real_t[::1] variance,             # in/out (like param) when not factored
    Py_ssize_t rows,
    Py_ssize_t cols,
    double lr,
    double weight,                    # 1 - beta2_t = step ** beta2_decay
    double eps1,
    double eps2,
    double d,
    double rho,                       # min(lr, 1 / sqrt(step))
    double weight_decay,
    bint maximize,
):
    """One Adafactor step, in place; returns nothing.

    ``alpha = max(eps2, |p| / sqrt(numel)) * rho`` (norm before the decay);
    ``p = p * (1 - lr * wd)`` if wd; factored (``row_var`` given, a matrix or
    a batch of them): ``row_var = lerp(row_var, |g_row|**2 / cols, weight)``,
    ``col_var`` likewise over rows, ``v = row_var * col_var / max(mean(row_var),
    eps1)``; else ``variance = lerp(variance, g * g, weight)``, ``v =
    variance``; ``u = g / sqrt(max(v, eps1**2))`` (``rsqrt(.) * g``);
    ``p = fma(u, -alpha / max(1, |u| / (sqrt(numel) * d)), p)``.  Norms
    accumulate in double and are rounded to ``real_t`` as torch's are.
    """
    cdef Py_ssize_t n = param.shape[0]
    cdef bint factored = row_var is not None
    cdef Py_ssize_t batch = 0
    _check("adafactor", n, grad.shape[0], "grad")
    if factored:
        if col_var is None or rows <= 0 or cols <= 0 or n % (rows * cols):
            raise ValueError("adafactor: a factored update needs rows and cols")
        batch = n // (rows * cols)
        _check("adafactor", batch * rows, row_var.shape[0], "row_var")
        _check("adafactor", batch * cols, col_var.shape[0], "col_var")
    else:
        if variance is None:
            raise ValueError("adafactor: needs row_var and col_var, or variance")
        _check("adafactor", n, variance.shape[0], "variance")
    if n == 0:
        return
    _check_alias("adafactor", &param[0], &grad[0], &grad[0])
    cdef double* colsum = NULL
    if factored:
        colsum = <double*>malloc(cols * sizeof(double))
        if colsum == NULL:
            raise MemoryError()
    try:
        with nogil:
            _adafactor(
                &param[0], &grad[0], &row_var[0] if factored else NULL,
                &col_var[0] if factored else NULL,
                NULL if factored else &variance[0], colsum, n, batch, rows, cols,
                lr, <real_t>weight, eps1, eps2, d, rho, weight_decay,
                <real_t>(-1.0 if maximize else 1.0), fabs(weight) < 0.5,
            )
    finally:
        free(colsum)


cdef void _adafactor(
    real_t* p, const real_t* grad, real_t* rv, real_t* cv, real_t* var,
    double* colsum, Py_ssize_t n, Py_ssize_t batch, Py_ssize_t rows,
    Py_ssize_t cols, double lr, real_t w, double eps1, double eps2, double d,
    double rho, double wd, real_t sign, bint small,
) noexcept nogil:
    cdef Py_ssize_t i, b, r, c, base
    cdef double acc = 0.0
    cdef real_t g, nrm, mean, u, coef, decay, vmin = <real_t>(eps1 * eps1)
    cdef real_t rmin = <real_t>eps1
    cdef double alpha, denom
    acc = _sumsq(p, n)
    alpha = <double>(<real_t>sqrt(acc)) / sqrt(<double>n)
    alpha = (alpha if alpha > eps2 else eps2) * rho
    decay = <real_t>(1.0 - lr * wd)
    # the second moments
    if rv != NULL:
        for b in range(batch):
            base = b * rows * cols
            for c in range(cols):
                colsum[c] = 0.0
            for r in range(rows):
                acc = 0.0
                for c in range(cols):
                    g = sign * grad[base + r * cols + c]
                    acc += <double>g * <double>g
                    colsum[c] += <double>g * <double>g
                nrm = <real_t>sqrt(acc)
                rv[b * rows + r] = _lerp(
                    rv[b * rows + r], (nrm * nrm) / <real_t>cols, w, small
                )
            for c in range(cols):
                nrm = <real_t>sqrt(colsum[c])
                cv[b * cols + c] = _lerp(
                    cv[b * cols + c], (nrm * nrm) / <real_t>rows, w, small
                )
    elif real_t is float:
        cg_adafactor_var_f(var, grad, n, w, sign, small)
    else:
        cg_adafactor_var_d(var, grad, n, w, sign, small)
    # |u|, then the update with it (u is formed twice, the same way)
    acc = 0.0
    if rv != NULL:
        for b in range(batch):
            mean = _row_mean(rv, b, rows, rmin)
            base = b * rows * cols
            for r in range(rows):
                acc += _factored_row(p, grad + base + r * cols, rv[b * rows + r],
                                     cv + b * cols, cols, mean, sign, vmin, 0, 1,
                                     False)
    else:
        acc = _vector_pass(p, grad, var, n, sign, vmin, 0, 1, False)
    denom = <double>(<real_t>sqrt(acc)) / (sqrt(<double>n) * d)
    denom = denom if denom > 1.0 else 1.0
    coef = <real_t>(-alpha / denom)
    if rv != NULL:
        for b in range(batch):
            mean = _row_mean(rv, b, rows, rmin)
            base = b * rows * cols
            for r in range(rows):
                _factored_row(p + base + r * cols, grad + base + r * cols,
                              rv[b * rows + r], cv + b * cols, cols, mean, sign,
                              vmin, coef, decay, True)
    else:
        _vector_pass(p, grad, var, n, sign, vmin, coef, decay, True)


cdef inline double _sumsq(const real_t* x, Py_ssize_t n) noexcept nogil:
    # eight partial sums in double: independent chains in flight (a single
    # chain is bound by the add latency), combined in a fixed order
    if real_t is float:
        return cg_sumsq8_f(x, n)
    else:
        return cg_sumsq8_d(x, n)


cdef inline void _fill_u(
    real_t* u, const real_t* g, const real_t* var, real_t rvr, const real_t* cv,
    real_t mean, Py_ssize_t m, real_t sign, real_t vmin,
) noexcept nogil:
    # u = rsqrt(max(v, vmin)) * g, v = var (cv NULL) or (rvr * cv) / mean
    if real_t is float:
        cg_adafactor_u_f(u, g, var, rvr, cv, mean, m, sign, vmin)
    else:
        cg_adafactor_u_d(u, g, var, rvr, cv, mean, m, sign, vmin)


cdef inline void _apply_u(
    real_t* p, const real_t* u, Py_ssize_t m, real_t coef, real_t decay
) noexcept nogil:
    # p = p * decay + coef * u
    if real_t is float:
        cg_adafactor_apply_f(p, u, m, coef, decay)
    else:
        cg_adafactor_apply_d(p, u, m, coef, decay)


# u is formed in chunks of _CHUNK on the stack: a vectorised loop (sqrt and
# divide) fills the chunk, then its squares are summed or it is applied.
cdef enum:
    _CHUNK = 256


cdef inline double _factored_row(
    real_t* p, const real_t* g, real_t rvr, const real_t* cv, Py_ssize_t cols,
    real_t mean, real_t sign, real_t vmin, real_t coef, real_t decay, bint apply,
) noexcept nogil:
    # one row of a factored update: the sum of u*u, or (apply) p += coef * u
    cdef Py_ssize_t c0 = 0, m
    cdef double acc = 0.0
    cdef real_t u[_CHUNK]
    while c0 < cols:
        m = cols - c0 if cols - c0 < _CHUNK else _CHUNK
        _fill_u(u, g + c0, NULL, rvr, cv + c0, mean, m, sign, vmin)
        if apply:
            _apply_u(p + c0, u, m, coef, decay)
        else:
            acc += _sumsq(u, m)
        c0 += m
    return acc


cdef inline double _vector_pass(
    real_t* p, const real_t* grad, const real_t* var, Py_ssize_t n, real_t sign,
    real_t vmin, real_t coef, real_t decay, bint apply,
) noexcept nogil:
    cdef Py_ssize_t i0 = 0, m
    cdef double acc = 0.0
    cdef real_t u[_CHUNK]
    while i0 < n:
        m = n - i0 if n - i0 < _CHUNK else _CHUNK
        _fill_u(u, grad + i0, var + i0, 0, NULL, 1, m, sign, vmin)
        if apply:
            _apply_u(p + i0, u, m, coef, decay)
        else:
            acc += _sumsq(u, m)
        i0 += m
    return acc


cdef inline real_t _row_mean(
    const real_t* rv, Py_ssize_t b, Py_ssize_t rows, real_t rmin
) noexcept nogil:
    # row_var.mean(dim=-2) clamped below at eps1, in real_t
    cdef Py_ssize_t r
    cdef double acc = 0.0
    cdef real_t mean
    for r in range(rows):
        acc += rv[b * rows + r]
    mean = <real_t>acc / <real_t>rows
    return rmin if mean < rmin else mean
