# distutils: extra_compile_args = -fno-math-errno
# (sqrt must not set errno, or GCC will not vectorise a loop that calls it.)

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
``addcdiv(s, a, b, value=v)`` is ``s + (v * a) / b`` and ``addcmul`` is
``s + (v * a) * b``; ``x.add(y, alpha=a)`` is ``x + a * y``; a Python scalar
divided by a tensor is ``reciprocal(t) * scalar``.  Every operation is
rounded (no FMA, IEEE ``sqrt``), so trajectories agree with torch's to a few
ulps per step.

Aliasing: no two arguments of one call may share memory (the wrappers check
the parameter against its gradient and first state buffer).

Threading: the ``def`` wrappers validate lengths with the GIL held, then
release it for the loop; nothing in a ``nogil`` loop raises.

Vectorisation: the options are ``bint`` arguments of one ``cdef inline`` loop
body; at ``-O3`` GCC unswitches the loop on them, so each combination runs
its own branch-free loop.
"""

from libc.math cimport fabs, fabsf, sqrt, sqrtf
from libc.stdlib cimport free, malloc

from cygrad._kernels._types cimport real_t


cdef inline real_t _sqrt(real_t x) noexcept nogil:
    if real_t is float:
        return sqrtf(x)
    else:
        return sqrt(x)


cdef inline real_t _lerp(
    real_t start, real_t end, real_t weight, bint small
) noexcept nogil:
    # ATen's lerp: exact at both ends; ``small`` is |weight| < 0.5.
    if small:
        return start + weight * (end - start)
    return end - (end - start) * (<real_t>1 - weight)


cdef inline real_t _max_nan(real_t a, real_t b) noexcept nogil:
    # torch.maximum: NaN from either side wins.
    return a if (a > b) | (a != a) else b


cdef inline real_t _fabs(real_t x) noexcept nogil:
    # fabsf for float32: fabs() would widen to double and back
    if real_t is float:
        return fabsf(x)
    else:
        return fabs(x)


cdef inline real_t _sign(real_t x) noexcept nogil:
    # torch.sign: -1, 0 or 1, and 0 for NaN.
    return <real_t>(x > 0) - <real_t>(x < 0)


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
    (decoupled) or ``g = g + wd * p``; ``m = lerp(m, g, 1 - b1)``;
    ``v = b2 * v + ((1 - b2) * g) * g``; ``d = sqrt(v / bc2) + eps``;
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
    with nogil:
        _nadam(
            &param[0], &grad[0], &exp_avg[0], &exp_avg_sq[0], n,
            <real_t>(1.0 - beta1), <real_t>beta2, <real_t>(1.0 - beta2),
            <real_t>bias_correction2, <real_t>eps,
            <real_t>weight_decay, <real_t>(1.0 - lr * weight_decay),
            <real_t>coef_g, <real_t>coef_m, <real_t>(-1.0 if maximize else 1.0),
            weight_decay != 0 and not decoupled, decay,
            fabs(1.0 - beta1) < 0.5,
        )


cdef void _nadam(
    real_t* p, const real_t* grad, real_t* m, real_t* v, Py_ssize_t n,
    real_t b1c, real_t b2, real_t b2c, real_t bc2, real_t eps, real_t wd,
    real_t decay, real_t coef_g, real_t coef_m, real_t sign, bint l2,
    bint decoupled, bint small,
) noexcept nogil:
    # literal flags for the default options: a branch-free, vectorised loop
    if small and not l2 and not decoupled:
        _nadam_loop(p, grad, m, v, n, b1c, b2, b2c, bc2, eps, wd, decay, coef_g,
                    coef_m, sign, False, False, True)
    else:
        _nadam_loop(p, grad, m, v, n, b1c, b2, b2c, bc2, eps, wd, decay, coef_g,
                    coef_m, sign, l2, decoupled, small)


cdef inline void _nadam_loop(
    real_t* p, const real_t* grad, real_t* m, real_t* v, Py_ssize_t n,
    real_t b1c, real_t b2, real_t b2c, real_t bc2, real_t eps, real_t wd,
    real_t decay, real_t coef_g, real_t coef_m, real_t sign, bint l2,
    bint decoupled, bint small,
) noexcept nogil:
    cdef Py_ssize_t i
    cdef real_t g, pi, mi, vi, denom
    for i in range(n):
        pi = p[i]
        if decoupled:
            pi = pi * decay
        g = sign * grad[i]
        if l2:
            g = g + wd * pi
        mi = _lerp(m[i], g, b1c, small)
        m[i] = mi
        vi = v[i] * b2 + (b2c * g) * g
        v[i] = vi
        denom = _sqrt(vi / bc2) + eps
        pi = pi + (coef_g * g) / denom
        p[i] = pi + (coef_m * mi) / denom


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
    with nogil:
        _radam(
            &param[0], &grad[0], &exp_avg[0], &exp_avg_sq[0], n,
            <real_t>(1.0 - beta1), <real_t>beta2, <real_t>(1.0 - beta2),
            <real_t>bias_correction1, <real_t>(bias_correction2 ** 0.5),
            <real_t>eps, <real_t>lr, <real_t>rect,
            <real_t>weight_decay, <real_t>(1.0 - lr * weight_decay),
            <real_t>(-1.0 if maximize else 1.0),
            weight_decay != 0 and not decoupled, decay,
            fabs(1.0 - beta1) < 0.5, rectify,
        )


cdef void _radam(
    real_t* p, const real_t* grad, real_t* m, real_t* v, Py_ssize_t n,
    real_t b1c, real_t b2, real_t b2c, real_t bc1, real_t bc2_sqrt, real_t eps,
    real_t lr, real_t rect, real_t wd, real_t decay, real_t sign, bint l2,
    bint decoupled, bint small, bint rectify,
) noexcept nogil:
    if small and not l2 and not decoupled and rectify:
        _radam_loop(p, grad, m, v, n, b1c, b2, b2c, bc1, bc2_sqrt, eps, lr, rect,
                    wd, decay, sign, False, False, True, True)
    elif small and not l2 and not decoupled:
        _radam_loop(p, grad, m, v, n, b1c, b2, b2c, bc1, bc2_sqrt, eps, lr, rect,
                    wd, decay, sign, False, False, True, False)
    else:
        _radam_loop(p, grad, m, v, n, b1c, b2, b2c, bc1, bc2_sqrt, eps, lr, rect,
                    wd, decay, sign, l2, decoupled, small, rectify)


cdef inline void _radam_loop(
    real_t* p, const real_t* grad, real_t* m, real_t* v, Py_ssize_t n,
    real_t b1c, real_t b2, real_t b2c, real_t bc1, real_t bc2_sqrt, real_t eps,
    real_t lr, real_t rect, real_t wd, real_t decay, real_t sign, bint l2,
    bint decoupled, bint small, bint rectify,
) noexcept nogil:
    cdef Py_ssize_t i
    cdef real_t g, pi, mi, vi, b
    for i in range(n):
        pi = p[i]
        if decoupled:
            pi = pi * decay
        g = sign * grad[i]
        if l2:
            g = g + wd * pi
        mi = _lerp(m[i], g, b1c, small)
        m[i] = mi
        vi = v[i] * b2 + (b2c * g) * g
        v[i] = vi
        b = (mi / bc1) * lr
        if rectify:
            b = (b * ((<real_t>1 / (_sqrt(vi) + eps)) * bc2_sqrt)) * rect
        p[i] = pi - b


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

    ``g = -grad if maximize else grad; g = g + wd * p``; ``m = lerp(m, g,
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
    with nogil:
        _adamax(
            &param[0], &grad[0], &exp_avg[0], &exp_inf[0], n,
            <real_t>(1.0 - beta1), <real_t>beta2, <real_t>eps, <real_t>(-clr),
            <real_t>weight_decay, <real_t>(-1.0 if maximize else 1.0),
            weight_decay != 0, fabs(1.0 - beta1) < 0.5,
        )


cdef void _adamax(
    real_t* p, const real_t* grad, real_t* m, real_t* u, Py_ssize_t n,
    real_t b1c, real_t b2, real_t eps, real_t neg_clr, real_t wd, real_t sign,
    bint l2, bint small,
) noexcept nogil:
    if small and not l2:
        _adamax_loop(p, grad, m, u, n, b1c, b2, eps, neg_clr, wd, sign, False, True)
    else:
        _adamax_loop(p, grad, m, u, n, b1c, b2, eps, neg_clr, wd, sign, l2, small)


cdef inline void _adamax_loop(
    real_t* p, const real_t* grad, real_t* m, real_t* u, Py_ssize_t n,
    real_t b1c, real_t b2, real_t eps, real_t neg_clr, real_t wd, real_t sign,
    bint l2, bint small,
) noexcept nogil:
    cdef Py_ssize_t i
    cdef real_t g, pi, mi, ui
    for i in range(n):
        pi = p[i]
        g = sign * grad[i]
        if l2:
            g = g + wd * pi
        mi = _lerp(m[i], g, b1c, small)
        m[i] = mi
        ui = _max_nan(u[i] * b2, _fabs(g) + eps)
        u[i] = ui
        p[i] = pi + (neg_clr * mi) / ui


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

    ``g = -grad if maximize else grad; g = g + wd * p``;
    ``v = rho * v + ((1 - rho) * g) * g``;
    ``d = (sqrt(a + eps) / sqrt(v + eps)) * g``;
    ``a = rho * a + ((1 - rho) * d) * d``; ``p = p - lr * d``.
    """
    cdef Py_ssize_t n = param.shape[0]
    _check("adadelta", n, grad.shape[0], "grad")
    _check("adadelta", n, square_avg.shape[0], "square_avg")
    _check("adadelta", n, acc_delta.shape[0], "acc_delta")
    if n == 0:
        return
    _check_alias("adadelta", &param[0], &grad[0], &square_avg[0])
    with nogil:
        if weight_decay == 0:
            _adadelta_loop(
                &param[0], &grad[0], &square_avg[0], &acc_delta[0], n,
                <real_t>rho, <real_t>(1.0 - rho), <real_t>eps, <real_t>(-lr),
                <real_t>weight_decay, <real_t>(-1.0 if maximize else 1.0), False,
            )
        else:
            _adadelta_loop(
                &param[0], &grad[0], &square_avg[0], &acc_delta[0], n,
                <real_t>rho, <real_t>(1.0 - rho), <real_t>eps, <real_t>(-lr),
                <real_t>weight_decay, <real_t>(-1.0 if maximize else 1.0), True,
            )


cdef inline void _adadelta_loop(
    real_t* p, const real_t* grad, real_t* v, real_t* a, Py_ssize_t n,
    real_t rho, real_t rho_c, real_t eps, real_t neg_lr, real_t wd, real_t sign,
    bint l2,
) noexcept nogil:
    cdef Py_ssize_t i
    cdef real_t g, pi, vi, d
    for i in range(n):
        pi = p[i]
        g = sign * grad[i]
        if l2:
            g = g + wd * pi
        vi = v[i] * rho + (rho_c * g) * g
        v[i] = vi
        d = (_sqrt(a[i] + eps) / _sqrt(vi + eps)) * g
        a[i] = a[i] * rho + (rho_c * d) * d
        p[i] = pi + neg_lr * d


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
    with nogil:
        _rprop_loop(
            &param[0], &grad[0], &prev[0], &step_size[0], n,
            <real_t>etaminus, <real_t>etaplus, <real_t>step_size_min,
            <real_t>step_size_max, <real_t>(-1.0 if maximize else 1.0),
        )


cdef inline void _rprop_loop(
    real_t* p, const real_t* grad, real_t* prev, real_t* step_size, Py_ssize_t n,
    real_t etaminus, real_t etaplus, real_t lo, real_t hi, real_t sign,
) noexcept nogil:
    cdef Py_ssize_t i
    cdef real_t g, s, f, sz
    for i in range(n):
        g = sign * grad[i]
        s = g * prev[i]
        f = etaplus if s > 0 else (etaminus if s < 0 else <real_t>1)
        sz = step_size[i] * f
        sz = lo if sz < lo else sz
        sz = hi if sz > hi else sz
        step_size[i] = sz
        g = 0 if f == etaminus else g
        p[i] = p[i] - _sign(g) * sz
        prev[i] = g


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

    ``g = -grad if maximize else grad; g = g + wd * p``;
    ``p = p * (1 - lambd * eta)``; ``p = p - eta * g``;
    ``ax = ax + (p - ax) * mu`` (``ax = p`` when ``mu == 1``).
    """
    cdef Py_ssize_t n = param.shape[0]
    _check("asgd", n, grad.shape[0], "grad")
    _check("asgd", n, ax.shape[0], "ax")
    if n == 0:
        return
    _check_alias("asgd", &param[0], &grad[0], &ax[0])
    with nogil:
        _asgd(
            &param[0], &grad[0], &ax[0], n, <real_t>(1.0 - lambd * eta),
            <real_t>(-eta), <real_t>mu, <real_t>weight_decay,
            <real_t>(-1.0 if maximize else 1.0), weight_decay != 0, mu != 1.0,
        )


cdef void _asgd(
    real_t* p, const real_t* grad, real_t* ax, Py_ssize_t n, real_t decay,
    real_t neg_eta, real_t mu, real_t wd, real_t sign, bint l2, bint average,
) noexcept nogil:
    if not l2 and not average:
        _asgd_loop(p, grad, ax, n, decay, neg_eta, mu, wd, sign, False, False)
    elif not l2:
        _asgd_loop(p, grad, ax, n, decay, neg_eta, mu, wd, sign, False, True)
    else:
        _asgd_loop(p, grad, ax, n, decay, neg_eta, mu, wd, sign, l2, average)


cdef inline void _asgd_loop(
    real_t* p, const real_t* grad, real_t* ax, Py_ssize_t n, real_t decay,
    real_t neg_eta, real_t mu, real_t wd, real_t sign, bint l2, bint average,
) noexcept nogil:
    cdef Py_ssize_t i
    cdef real_t g, pi, ai
    for i in range(n):
        pi = p[i]
        g = sign * grad[i]
        if l2:
            g = g + wd * pi
        pi = pi * decay
        pi = pi + neg_eta * g
        p[i] = pi
        if average:
            ai = ax[i]
            ax[i] = ai + (pi - ai) * mu
        else:
            ax[i] = pi


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
    ``p = p - alpha / max(1, |u| / (sqrt(numel) * d)) * u``.  Norms
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


cdef inline real_t _adafactor_u(
    real_t g, real_t v, real_t clamp_min
) noexcept nogil:
    v = clamp_min if v < clamp_min else v
    return (<real_t>1 / _sqrt(v)) * g


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
    else:
        for i in range(n):
            g = sign * grad[i]
            var[i] = _lerp(var[i], g * g, w, small)
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
    cdef Py_ssize_t i, j
    cdef double s[8]
    for j in range(8):
        s[j] = 0.0
    for i in range(0, n - 7, 8):
        for j in range(8):
            s[j] += <double>x[i + j] * <double>x[i + j]
    for i in range(n - n % 8, n):
        s[0] += <double>x[i] * <double>x[i]
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))


# u is formed in chunks of _CHUNK on the stack: a vectorised loop (sqrt and
# divide) fills the chunk, then its squares are summed or it is applied.
cdef enum:
    _CHUNK = 256


cdef inline double _factored_row(
    real_t* p, const real_t* g, real_t rvr, const real_t* cv, Py_ssize_t cols,
    real_t mean, real_t sign, real_t vmin, real_t coef, real_t decay, bint apply,
) noexcept nogil:
    # one row of a factored update: the sum of u*u, or (apply) p += coef * u
    cdef Py_ssize_t c0 = 0, c, m
    cdef double acc = 0.0
    cdef real_t u[_CHUNK]
    while c0 < cols:
        m = cols - c0 if cols - c0 < _CHUNK else _CHUNK
        for c in range(m):
            u[c] = _adafactor_u(sign * g[c0 + c], (rvr * cv[c0 + c]) / mean, vmin)
        if apply:
            for c in range(m):
                p[c0 + c] = p[c0 + c] * decay + coef * u[c]
        else:
            acc += _sumsq(u, m)
        c0 += m
    return acc


cdef inline double _vector_pass(
    real_t* p, const real_t* grad, const real_t* var, Py_ssize_t n, real_t sign,
    real_t vmin, real_t coef, real_t decay, bint apply,
) noexcept nogil:
    cdef Py_ssize_t i0 = 0, i, m
    cdef double acc = 0.0
    cdef real_t u[_CHUNK]
    while i0 < n:
        m = n - i0 if n - i0 < _CHUNK else _CHUNK
        for i in range(m):
            u[i] = _adafactor_u(sign * grad[i0 + i], var[i0 + i], vmin)
        if apply:
            for i in range(m):
                p[i0 + i] = p[i0 + i] * decay + coef * u[i]
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
