# distutils: extra_compile_args = -fno-math-errno
# (sqrt must not set errno, or GCC will not vectorise a loop that calls it;
# results are unchanged, and ATen is built with the same flag.)

"""Fused optimizer updates and the gradient-norm kernels of clip_grad_norm_.

Layout: every array is a flat, C-contiguous view of one parameter (the caller
passes ``arr.ravel()``); a parameter, its gradient and its state buffers
have the same length and the same dtype.

Dtypes: ``real_t`` (float32 or float64).  Each update makes one pass over the
parameter and its state, reading and writing every element once.

Order of operations: the updates repeat PyTorch's single-tensor path
(``torch/optim/*.py``, ``foreach=False``) operation by operation, in the
parameter's dtype.  Scalars (``lr``, ``1 - beta1``, bias corrections, ...) are
formed in double as Python forms them and rounded to ``real_t`` once before the
loop, as ATen does when a float32 tensor op takes a Python scalar.  Two things
keep the result from being bitwise equal to torch's: ATen's AVX2 kernels fuse
some ``a * b + c`` into one FMA, and its vectorised ``sqrt`` is not correctly
rounded (1 ulp away on ~20% of float32 inputs).  We round every operation
(no FMA, IEEE ``sqrt``), so trajectories agree to a few ulps per step.

Aliasing: no two arguments of one call may share memory (the wrappers check
that the parameter is not its own gradient or state).  Buffers that an option
does not use may be ``None``.

Threading: the ``def`` wrappers validate lengths and dtypes with the GIL, then
release it for the loop; nothing in a ``nogil`` loop raises.

Vectorisation: each update has one loop body, a ``cdef inline`` function whose
options are arguments.  The dispatcher calls it with literal flags for the
common configurations, so GCC compiles each of those into its own branch-free,
vectorised loop (check with ``-fopt-info-vec``), and once with the flags as
variables for every other combination (a correct, scalar loop).  ``maximize``
is a multiplication by -1 or 1, which is exact and needs no flag.

Speed: SGD is bound by memory.  Adam, RMSprop and Adagrad are bound by the
divide/sqrt unit (two divisions and a sqrt per element; exact parity forbids
multiplying by reciprocals), so the SSE2 baseline build runs at about a third
of the memory bandwidth; the same source built with ``-mavx2`` (no FMA, so
still bitwise equal) halves Adam's time.
"""

from libc.math cimport INFINITY, NAN, fabs, pow, sqrt, sqrtf

from cygrad._kernels._types cimport real_t


cdef inline real_t _sqrt(real_t x) noexcept nogil:
    # sqrtf for float32: sqrt() would round-trip through double for nothing.
    if real_t is float:
        return sqrtf(x)
    else:
        return sqrt(x)


cdef inline real_t _lerp(
    real_t start, real_t end, real_t weight, bint small
) noexcept nogil:
    # ATen's lerp: ``start + w * (end - start)`` when |w| < 0.5 (``small``),
    # else ``end - (end - start) * (1 - w)``, so both ends are exact.
    if small:
        return start + weight * (end - start)
    return end - (end - start) * (<real_t>1 - weight)


cdef inline real_t _max_nan(real_t a, real_t b) noexcept nogil:
    # torch.maximum: NaN from either side wins.
    return a if (a > b) | (a != a) else b


cdef int _check(str name, Py_ssize_t n, Py_ssize_t m, str what) except -1:
    if m != n:
        raise ValueError(f"{name}: {what} has {m} elements, the parameter {n}")
    return 0


# --------------------------------------------------------------------------
# SGD


def sgd(
    real_t[::1] param,                # in/out
    const real_t[::1] grad,           # in
    real_t[::1] momentum_buffer,      # in/out, or None when momentum == 0
    double lr,
    double weight_decay,
    double momentum,
    double dampening,
    bint nesterov,
    bint maximize,
    bint first_step,
):
    """One SGD step, in place (torch's ``_single_tensor_sgd``).

    ``g = -grad if maximize else grad; g = g + wd * p``; with momentum,
    ``buf = g`` on ``first_step`` (the buffer's first use) else
    ``buf = mu * buf + (1 - dampening) * g``, and ``g = g + mu * buf`` (nesterov)
    or ``g = buf``; finally ``p = p - lr * g``.
    """
    cdef Py_ssize_t n = param.shape[0]
    cdef int mode = 0 if momentum == 0 else (1 if first_step else 2)
    _check("sgd", n, grad.shape[0], "grad")
    if mode:
        if momentum_buffer is None:
            raise ValueError("sgd: momentum != 0 needs a momentum_buffer")
        _check("sgd", n, momentum_buffer.shape[0], "momentum_buffer")
    if n == 0:
        return
    if &param[0] == &grad[0]:
        raise ValueError("sgd: param and grad share memory")
    with nogil:
        _sgd(
            &param[0], &grad[0], &momentum_buffer[0] if mode else NULL, n,
            <real_t>(-lr), <real_t>weight_decay, <real_t>momentum,
            <real_t>(1.0 - dampening), <real_t>(-1.0 if maximize else 1.0),
            mode, nesterov,
        )


cdef void _sgd(
    real_t* p, const real_t* grad, real_t* buf, Py_ssize_t n, real_t neg_lr,
    real_t wd, real_t mu, real_t damp1, real_t sign, int mode, bint nesterov,
) noexcept nogil:
    cdef bint l2 = wd != 0
    if mode == 0 and not l2:
        _sgd_loop(p, grad, buf, n, neg_lr, wd, mu, damp1, sign, 0, False, False)
    elif mode == 0:
        _sgd_loop(p, grad, buf, n, neg_lr, wd, mu, damp1, sign, 0, False, True)
    elif mode == 2 and not nesterov and not l2:
        _sgd_loop(p, grad, buf, n, neg_lr, wd, mu, damp1, sign, 2, False, False)
    elif mode == 2 and not nesterov:
        _sgd_loop(p, grad, buf, n, neg_lr, wd, mu, damp1, sign, 2, False, True)
    else:
        _sgd_loop(p, grad, buf, n, neg_lr, wd, mu, damp1, sign, mode, nesterov, l2)


cdef inline void _sgd_loop(
    real_t* p, const real_t* grad, real_t* buf, Py_ssize_t n, real_t neg_lr,
    real_t wd, real_t mu, real_t damp1, real_t sign, int mode, bint nesterov,
    bint l2,
) noexcept nogil:
    # mode: 0 no momentum, 1 the buffer starts as g, 2 the buffer update.
    cdef Py_ssize_t i
    cdef real_t g, b, pi
    for i in range(n):
        pi = p[i]
        g = sign * grad[i]
        if l2:
            g = g + wd * pi
        if mode == 1:
            b = g
            buf[i] = b
            g = g + mu * b if nesterov else b
        elif mode == 2:
            b = buf[i] * mu + damp1 * g
            buf[i] = b
            g = g + mu * b if nesterov else b
        p[i] = pi + neg_lr * g


# --------------------------------------------------------------------------
# Adam and AdamW


def adam(
    real_t[::1] param,                # in/out
    const real_t[::1] grad,           # in
    real_t[::1] exp_avg,              # in/out
    real_t[::1] exp_avg_sq,           # in/out
    real_t[::1] max_exp_avg_sq,       # in/out, or None unless amsgrad
    double step,
    double lr,
    double beta1,
    double beta2,
    double eps,
    double weight_decay,
    bint decoupled,
    bint maximize,
):
    """One Adam (or AdamW when ``decoupled``) step, in place; ``step`` >= 1.

    ``g = -grad if maximize else grad``; weight decay is ``p = p * (1 - lr*wd)``
    when decoupled, else ``g = g + wd * p``; ``m = lerp(m, g, 1 - b1)``;
    ``v = b2 * v + ((1 - b2) * g) * g``; ``vmax = max(vmax, v)`` (amsgrad);
    ``denom = sqrt(v or vmax) / sqrt(1 - b2**step) + eps``;
    ``p = p + (-(lr / (1 - b1**step)) * m) / denom``.
    """
    cdef Py_ssize_t n = param.shape[0]
    cdef bint amsgrad = max_exp_avg_sq is not None
    _check("adam", n, grad.shape[0], "grad")
    _check("adam", n, exp_avg.shape[0], "exp_avg")
    _check("adam", n, exp_avg_sq.shape[0], "exp_avg_sq")
    if amsgrad:
        _check("adam", n, max_exp_avg_sq.shape[0], "max_exp_avg_sq")
    if n == 0:
        return
    if &param[0] == &grad[0] or &param[0] == &exp_avg[0]:
        raise ValueError("adam: param shares memory with grad or state")
    # The scalars, in double, as torch's Python code forms them.
    cdef double bias_correction1 = 1.0 - pow(beta1, step)
    cdef double bias_correction2 = 1.0 - pow(beta2, step)
    cdef double step_size = lr / bias_correction1
    cdef double bias_correction2_sqrt = pow(bias_correction2, 0.5)
    # AdamW multiplies by 1 - lr*wd; ``p * 1`` is exact, so Adam passes 1.
    cdef double decay = 1.0 - lr * weight_decay if decoupled else 1.0
    with nogil:
        _adam(
            &param[0], &grad[0], &exp_avg[0], &exp_avg_sq[0],
            &max_exp_avg_sq[0] if amsgrad else NULL, n,
            <real_t>(1.0 - beta1), <real_t>beta2, <real_t>(1.0 - beta2),
            <real_t>bias_correction2_sqrt, <real_t>eps, <real_t>(-step_size),
            <real_t>(0.0 if decoupled else weight_decay), <real_t>decay,
            <real_t>(-1.0 if maximize else 1.0),
        )


cdef void _adam(
    real_t* p, const real_t* grad, real_t* m, real_t* v, real_t* vmax,
    Py_ssize_t n, real_t b1c, real_t b2, real_t b2c, real_t bc2_sqrt,
    real_t eps, real_t neg_step_size, real_t wd, real_t decay, real_t sign,
) noexcept nogil:
    cdef bint ams = vmax != NULL
    cdef bint l2 = wd != 0
    cdef bint small = fabs(b1c) < 0.5
    if small and not ams and not l2:
        _adam_loop(p, grad, m, v, vmax, n, b1c, b2, b2c, bc2_sqrt, eps,
                   neg_step_size, wd, decay, sign, False, False, True)
    elif small and not ams:
        _adam_loop(p, grad, m, v, vmax, n, b1c, b2, b2c, bc2_sqrt, eps,
                   neg_step_size, wd, decay, sign, False, True, True)
    elif small and not l2:
        _adam_loop(p, grad, m, v, vmax, n, b1c, b2, b2c, bc2_sqrt, eps,
                   neg_step_size, wd, decay, sign, True, False, True)
    else:
        _adam_loop(p, grad, m, v, vmax, n, b1c, b2, b2c, bc2_sqrt, eps,
                   neg_step_size, wd, decay, sign, ams, l2, small)


cdef inline void _adam_loop(
    real_t* p, const real_t* grad, real_t* m, real_t* v, real_t* vmax,
    Py_ssize_t n, real_t b1c, real_t b2, real_t b2c, real_t bc2_sqrt,
    real_t eps, real_t neg_step_size, real_t wd, real_t decay, real_t sign,
    bint ams, bint l2, bint small,
) noexcept nogil:
    cdef Py_ssize_t i
    cdef real_t g, pi, mi, vi, denom
    for i in range(n):
        pi = p[i] * decay
        g = sign * grad[i]
        if l2:
            g = g + wd * pi
        mi = _lerp(m[i], g, b1c, small)
        m[i] = mi
        vi = v[i] * b2 + (b2c * g) * g
        v[i] = vi
        if ams:
            vi = _max_nan(vmax[i], vi)
            vmax[i] = vi
        denom = _sqrt(vi) / bc2_sqrt + eps
        p[i] = pi + (neg_step_size * mi) / denom


# --------------------------------------------------------------------------
# RMSprop


def rmsprop(
    real_t[::1] param,                # in/out
    const real_t[::1] grad,           # in
    real_t[::1] square_avg,           # in/out
    real_t[::1] grad_avg,             # in/out, or None unless centered
    real_t[::1] momentum_buffer,      # in/out, or None unless momentum > 0
    double lr,
    double alpha,
    double eps,
    double weight_decay,
    double momentum,
    bint maximize,
):
    """One RMSprop step, in place (torch's ``_single_tensor_rmsprop``).

    ``g = -grad if maximize else grad; g = g + wd * p``;
    ``v = alpha * v + ((1 - alpha) * g) * g``; centered:
    ``ga = lerp(ga, g, 1 - alpha)``, ``avg = sqrt(v - ga * ga) + eps``, else
    ``avg = sqrt(v) + eps``; with momentum ``buf = mu * buf + g / avg`` and
    ``p = p - lr * buf``, else ``p = p + (-lr * g) / avg``.
    """
    cdef Py_ssize_t n = param.shape[0]
    cdef bint centered = grad_avg is not None
    cdef bint use_buf = momentum > 0
    _check("rmsprop", n, grad.shape[0], "grad")
    _check("rmsprop", n, square_avg.shape[0], "square_avg")
    if centered:
        _check("rmsprop", n, grad_avg.shape[0], "grad_avg")
    if use_buf:
        if momentum_buffer is None:
            raise ValueError("rmsprop: momentum > 0 needs a momentum_buffer")
        _check("rmsprop", n, momentum_buffer.shape[0], "momentum_buffer")
    if n == 0:
        return
    if &param[0] == &grad[0] or &param[0] == &square_avg[0]:
        raise ValueError("rmsprop: param shares memory with grad or state")
    with nogil:
        _rmsprop(
            &param[0], &grad[0], &square_avg[0],
            &grad_avg[0] if centered else NULL,
            &momentum_buffer[0] if use_buf else NULL, n,
            <real_t>(-lr), <real_t>alpha, <real_t>(1.0 - alpha), <real_t>eps,
            <real_t>weight_decay, <real_t>momentum,
            <real_t>(-1.0 if maximize else 1.0),
        )


cdef void _rmsprop(
    real_t* p, const real_t* grad, real_t* v, real_t* ga, real_t* buf,
    Py_ssize_t n, real_t neg_lr, real_t alpha, real_t alpha_c, real_t eps,
    real_t wd, real_t mu, real_t sign,
) noexcept nogil:
    cdef bint centered = ga != NULL
    cdef bint use_buf = buf != NULL
    cdef bint l2 = wd != 0
    cdef bint small = fabs(alpha_c) < 0.5
    if small and not l2 and not centered and not use_buf:
        _rmsprop_loop(p, grad, v, ga, buf, n, neg_lr, alpha, alpha_c, eps, wd,
                      mu, sign, False, False, False, True)
    elif small and not l2 and not centered:
        _rmsprop_loop(p, grad, v, ga, buf, n, neg_lr, alpha, alpha_c, eps, wd,
                      mu, sign, False, True, False, True)
    elif small and not l2 and not use_buf:
        _rmsprop_loop(p, grad, v, ga, buf, n, neg_lr, alpha, alpha_c, eps, wd,
                      mu, sign, True, False, False, True)
    else:
        _rmsprop_loop(p, grad, v, ga, buf, n, neg_lr, alpha, alpha_c, eps, wd,
                      mu, sign, centered, use_buf, l2, small)


cdef inline void _rmsprop_loop(
    real_t* p, const real_t* grad, real_t* v, real_t* ga, real_t* buf,
    Py_ssize_t n, real_t neg_lr, real_t alpha, real_t alpha_c, real_t eps,
    real_t wd, real_t mu, real_t sign, bint centered, bint use_buf, bint l2,
    bint small,
) noexcept nogil:
    cdef Py_ssize_t i
    cdef real_t g, pi, vi, gai, avg, b
    for i in range(n):
        pi = p[i]
        g = sign * grad[i]
        if l2:
            g = g + wd * pi
        vi = v[i] * alpha + (alpha_c * g) * g
        v[i] = vi
        if centered:
            gai = _lerp(ga[i], g, alpha_c, small)
            ga[i] = gai
            # torch's addcmul(value=-1): v + (-1 * ga) * ga == v - ga * ga
            vi = vi - gai * gai
        avg = _sqrt(vi) + eps
        if use_buf:
            b = buf[i] * mu + g / avg
            buf[i] = b
            p[i] = pi + neg_lr * b
        else:
            p[i] = pi + (neg_lr * g) / avg


# --------------------------------------------------------------------------
# Adagrad


def adagrad(
    real_t[::1] param,                # in/out
    const real_t[::1] grad,           # in
    real_t[::1] state_sum,            # in/out
    double clr,
    double eps,
    double weight_decay,
    bint maximize,
):
    """One Adagrad step with the decayed rate ``clr``, in place.

    ``g = -grad if maximize else grad; g = g + wd * p``; ``s = s + g * g``;
    ``p = p + (-clr * g) / (sqrt(s) + eps)``.
    """
    cdef Py_ssize_t n = param.shape[0]
    _check("adagrad", n, grad.shape[0], "grad")
    _check("adagrad", n, state_sum.shape[0], "sum")
    if n == 0:
        return
    if &param[0] == &grad[0] or &param[0] == &state_sum[0]:
        raise ValueError("adagrad: param shares memory with grad or state")
    with nogil:
        _adagrad(
            &param[0], &grad[0], &state_sum[0], n, <real_t>(-clr),
            <real_t>eps, <real_t>weight_decay,
            <real_t>(-1.0 if maximize else 1.0),
        )


cdef void _adagrad(
    real_t* p, const real_t* grad, real_t* s, Py_ssize_t n, real_t neg_clr,
    real_t eps, real_t wd, real_t sign,
) noexcept nogil:
    if wd == 0:
        _adagrad_loop(p, grad, s, n, neg_clr, eps, wd, sign, False)
    else:
        _adagrad_loop(p, grad, s, n, neg_clr, eps, wd, sign, True)


cdef inline void _adagrad_loop(
    real_t* p, const real_t* grad, real_t* s, Py_ssize_t n, real_t neg_clr,
    real_t eps, real_t wd, real_t sign, bint l2,
) noexcept nogil:
    cdef Py_ssize_t i
    cdef real_t g, pi, si
    for i in range(n):
        pi = p[i]
        g = sign * grad[i]
        if l2:
            g = g + wd * pi
        si = s[i] + g * g
        s[i] = si
        p[i] = pi + (neg_clr * g) / (_sqrt(si) + eps)


# --------------------------------------------------------------------------
# gradient norms and clipping (cygrad.nn.utils)


def vector_norm(const real_t[::1] x, double ord):    # x: in
    """``torch.linalg.vector_norm(x, ord)`` of a flat array, as a double.

    Sums accumulate in double (float32 gradients lose no digits); ``ord`` is
    ``inf`` (max ``|x|``), ``-inf`` (min ``|x|``), ``0`` (count of non-zeros;
    NaN counts), ``1``, ``2`` or any other real.  A NaN element makes every
    norm but the 0-norm NaN, as torch's.  An empty array has norm 0 (``inf``
    for ``ord=-inf``).
    """
    cdef Py_ssize_t n = x.shape[0]
    cdef double result
    cdef int kind
    if ord == 2.0:
        kind = 2
    elif ord == 1.0:
        kind = 1
    elif ord == 0.0:
        kind = 0
    elif ord == INFINITY:
        kind = 3
    elif ord == -INFINITY:
        kind = 4
    else:
        kind = 5
    if n == 0:
        return INFINITY if kind == 4 else 0.0
    with nogil:
        result = _vector_norm(&x[0], n, ord, kind)
    return result


cdef double _vector_norm(
    const real_t* x, Py_ssize_t n, double ord, int kind
) noexcept nogil:
    # Four partial sums: independent chains the compiler keeps in flight,
    # summed in a fixed order, so the result is deterministic.  max/min track
    # NaN with a flag, so the loops have no early exit.
    cdef Py_ssize_t i
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    cdef double a, best
    cdef bint nan = False
    if kind == 2:
        for i in range(0, n - 3, 4):
            s0 += <double>x[i] * <double>x[i]
            s1 += <double>x[i + 1] * <double>x[i + 1]
            s2 += <double>x[i + 2] * <double>x[i + 2]
            s3 += <double>x[i + 3] * <double>x[i + 3]
        for i in range(n - n % 4, n):
            a = x[i]
            s0 += a * a
        return sqrt((s0 + s1) + (s2 + s3))
    if kind == 1:
        for i in range(n):
            s0 += fabs(<double>x[i])
        return s0
    if kind == 0:
        for i in range(n):
            s0 += 1.0 if x[i] != 0 else 0.0
        return s0
    if kind == 3 or kind == 4:
        best = fabs(<double>x[0])
        for i in range(n):
            a = fabs(<double>x[i])
            nan = nan | (a != a)
            if kind == 3:
                best = a if a > best else best
            else:
                best = a if a < best else best
        return NAN if nan else best
    for i in range(n):
        s0 += pow(fabs(<double>x[i]), ord)
    return pow(s0, 1.0 / ord)


def scale(real_t[::1] x, double coef):    # x: in/out
    """``x *= coef`` in place, ``coef`` rounded to ``real_t`` first."""
    cdef Py_ssize_t n = x.shape[0]
    if n == 0:
        return
    with nogil:
        _scale(&x[0], n, <real_t>coef)


cdef void _scale(real_t* x, Py_ssize_t n, real_t coef) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        x[i] = x[i] * coef


def clamp(real_t[::1] x, double lo, double hi):    # x: in/out
    """``x = min(max(x, lo), hi)`` in place (torch's ``clamp_``; NaN stays NaN).

    ``lo`` and ``hi`` are rounded to ``real_t`` first.
    """
    cdef Py_ssize_t n = x.shape[0]
    if n == 0:
        return
    with nogil:
        _clamp(&x[0], n, <real_t>lo, <real_t>hi)


cdef void _clamp(real_t* x, Py_ssize_t n, real_t lo, real_t hi) noexcept nogil:
    cdef Py_ssize_t i
    cdef real_t a
    for i in range(n):
        a = x[i]
        a = lo if a < lo else a
        x[i] = hi if a > hi else a
