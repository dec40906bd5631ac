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
loop, as ATen does when a float32 tensor op takes a Python scalar.  Where
ATen's kernel rounds a multiply-add once, so do we (an explicit ``fma``):
``x.add(y, alpha=a)`` is ``fma(y, a, x)``, ``addcmul(s, a, b, value=v)`` is
``fma(v * a, b, s)``, ``lerp`` is ``fma(w, end - start, start)`` (or its
mirror for ``|w| >= 0.5``); ``addcdiv(s, a, b, value=v)`` is ``s + (v * a) /
b``.  Every other operation is rounded on its own, and ``sqrt`` is IEEE's.
Given IEEE square roots, the updates are torch's bit for bit
(tests/test_optim_torch_bits.py); torch's own vector ``sqrt`` goes through
MKL, which on some CPUs is an ulp off on ~17% of float32 inputs, so there
trajectories agree to a few ulps per step.

Aliasing: no two arguments of one call may share memory (the wrappers check
that the parameter is not its own gradient or state).  Buffers that an option
does not use may be ``None``.

Threading: the ``def`` wrappers validate lengths and dtypes with the GIL, then
release it for the loop; nothing in a ``nogil`` loop raises.

Vectorisation: the update loops are C, in ``cg_optim.h``: each is compiled
for AVX-512, for AVX2 + FMA and for the baseline (``CG_SIMD_FN``), and the
widest copy this CPU runs is chosen when the module loads (``CYGRAD_SIMD=avx2``
caps it, ``CYGRAD_NO_SIMD=1`` forces the baseline).  All three give the same
bits: the module is compiled with ``-ffp-contract=off`` (setup.py), so no
``a * b + c`` becomes an FMA that torch does not have, the explicit ones are
an instruction in the SIMD copies and the C library's (equally rounded) fma
in the baseline, and vector division and sqrt are IEEE.  Each
loop body takes its options as flags, and is called with literal flags for
the common configurations, so that each of those is its own branch-free loop.
``maximize`` is a multiplication by -1 or 1, which is exact and needs no flag.

Speed: SGD is bound by memory.  Adam, RMSprop and Adagrad are bound by the
divide/sqrt unit (a sqrt and two divisions per element; exact parity forbids
multiplying by reciprocals, but Adam's division by the scalar
``sqrt(1 - b2**t)`` is a product and two fmas that round as the division
does, cg_o_div_unit in cg_optim_t.h), whose throughput grows with the vector width:
the SSE2 baseline runs Adam at about a third of the memory bandwidth, the
AVX2 copy halves its time (104 -> 55 us per 100,000 float32 elements).
"""

from libc.math cimport INFINITY, NAN, fabs, pow, sqrt

from cygrad._kernels._types cimport real_t


cdef extern from "cg_optim.h":
    # The update loops, one per dtype (_f: float32, _d: float64), each compiled
    # for AVX-512, AVX2 + FMA and the baseline (CG_SIMD_FN in cg_simd.h).
    void cg_sgd_f(float* p, const float* grad, float* buf, Py_ssize_t n,
                  float neg_lr, float wd, float mu, float damp1, float sign,
                  int mode, int nesterov) noexcept nogil
    void cg_sgd_d(double* p, const double* grad, double* buf, Py_ssize_t n,
                  double neg_lr, double wd, double mu, double damp1, double sign,
                  int mode, int nesterov) noexcept nogil
    void cg_adam_f(float* p, const float* grad, float* m, float* v, float* vmax,
                   Py_ssize_t n, float b1c, float b2, float b2c, float bc2_sqrt,
                   float eps, float neg_step_size, float wd, float decay,
                   float sign) noexcept nogil
    void cg_adam_d(double* p, const double* grad, double* m, double* v,
                   double* vmax, Py_ssize_t n, double b1c, double b2, double b2c,
                   double bc2_sqrt, double eps, double neg_step_size, double wd,
                   double decay, double sign) noexcept nogil
    void cg_rmsprop_f(float* p, const float* grad, float* v, float* ga, float* buf,
                      Py_ssize_t n, float neg_lr, float alpha, float alpha_c,
                      float eps, float wd, float mu, float sign) noexcept nogil
    void cg_rmsprop_d(double* p, const double* grad, double* v, double* ga,
                      double* buf, Py_ssize_t n, double neg_lr, double alpha,
                      double alpha_c, double eps, double wd, double mu,
                      double sign) noexcept nogil
    void cg_adagrad_f(float* p, const float* grad, float* s, Py_ssize_t n,
                      float neg_clr, float eps, float wd, float sign) noexcept nogil
    void cg_adagrad_d(double* p, const double* grad, double* s, Py_ssize_t n,
                      double neg_clr, double eps, double wd,
                      double sign) noexcept nogil
    double cg_sumsq4_f(const float* x, Py_ssize_t n) noexcept nogil
    double cg_sumsq4_d(const double* x, Py_ssize_t n) noexcept nogil
    void cg_scale_f(float* x, Py_ssize_t n, float coef) noexcept nogil
    void cg_scale_d(double* x, Py_ssize_t n, double coef) noexcept nogil
    void cg_clamp_f(float* x, Py_ssize_t n, float lo, float hi) noexcept nogil
    void cg_clamp_d(double* x, Py_ssize_t n, double lo, double hi) noexcept nogil


include "simd_level.pxi"


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

    ``g = -grad if maximize else grad; g = fma(p, wd, g)``; with momentum,
    ``buf = g`` on ``first_step`` (the buffer's first use) else
    ``buf = fma(g, 1 - dampening, buf * mu)``, and ``g = fma(buf, mu, g)``
    (nesterov) or ``g = buf``; finally ``p = fma(g, -lr, p)``.
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
    cdef real_t* buf = &momentum_buffer[0] if mode else NULL
    with nogil:
        if real_t is float:
            cg_sgd_f(&param[0], &grad[0], buf, n, <float>(-lr),
                     <float>weight_decay, <float>momentum,
                     <float>(1.0 - dampening), <float>(-1.0 if maximize else 1.0),
                     mode, nesterov)
        else:
            cg_sgd_d(&param[0], &grad[0], buf, n, -lr, weight_decay, momentum,
                     1.0 - dampening, -1.0 if maximize else 1.0, mode, nesterov)


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
    when decoupled, else ``g = fma(p, wd, g)``; ``m = lerp(m, g, 1 - b1)``;
    ``v = fma((1 - b2) * g, g, v * b2)``; ``vmax = max(vmax, v)`` (amsgrad);
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
    cdef real_t* vmax = &max_exp_avg_sq[0] if amsgrad else NULL
    cdef double wd = 0.0 if decoupled else weight_decay
    cdef double sign = -1.0 if maximize else 1.0
    with nogil:
        if real_t is float:
            cg_adam_f(&param[0], &grad[0], &exp_avg[0], &exp_avg_sq[0], vmax, n,
                      <float>(1.0 - beta1), <float>beta2, <float>(1.0 - beta2),
                      <float>bias_correction2_sqrt, <float>eps,
                      <float>(-step_size), <float>wd, <float>decay, <float>sign)
        else:
            cg_adam_d(&param[0], &grad[0], &exp_avg[0], &exp_avg_sq[0], vmax, n,
                      1.0 - beta1, beta2, 1.0 - beta2, bias_correction2_sqrt, eps,
                      -step_size, wd, decay, sign)


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

    ``g = -grad if maximize else grad; g = fma(p, wd, g)``;
    ``v = fma((1 - alpha) * g, g, v * alpha)``; centered:
    ``ga = lerp(ga, g, 1 - alpha)``, ``avg = sqrt(fma(-ga, ga, v)) + eps``,
    else ``avg = sqrt(v) + eps``; with momentum ``buf = buf * mu + g / avg``
    and ``p = fma(buf, -lr, p)``, else ``p = p + (-lr * g) / avg``.
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
    cdef real_t* ga = &grad_avg[0] if centered else NULL
    cdef real_t* buf = &momentum_buffer[0] if use_buf else NULL
    cdef double sign = -1.0 if maximize else 1.0
    with nogil:
        if real_t is float:
            cg_rmsprop_f(&param[0], &grad[0], &square_avg[0], ga, buf, n,
                         <float>(-lr), <float>alpha, <float>(1.0 - alpha),
                         <float>eps, <float>weight_decay, <float>momentum,
                         <float>sign)
        else:
            cg_rmsprop_d(&param[0], &grad[0], &square_avg[0], ga, buf, n, -lr,
                         alpha, 1.0 - alpha, eps, weight_decay, momentum, sign)


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

    ``g = -grad if maximize else grad; g = fma(p, wd, g)``; ``s = fma(g, g, s)``;
    ``p = p + (-clr * g) / (sqrt(s) + eps)``.
    """
    cdef Py_ssize_t n = param.shape[0]
    _check("adagrad", n, grad.shape[0], "grad")
    _check("adagrad", n, state_sum.shape[0], "sum")
    if n == 0:
        return
    if &param[0] == &grad[0] or &param[0] == &state_sum[0]:
        raise ValueError("adagrad: param shares memory with grad or state")
    cdef double sign = -1.0 if maximize else 1.0
    with nogil:
        if real_t is float:
            cg_adagrad_f(&param[0], &grad[0], &state_sum[0], n, <float>(-clr),
                         <float>eps, <float>weight_decay, <float>sign)
        else:
            cg_adagrad_d(&param[0], &grad[0], &state_sum[0], n, -clr, eps,
                         weight_decay, sign)


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
    # The 2-norm: four partial sums (cg_sumsq4), independent chains in flight,
    # summed in a fixed order, so the result is deterministic.  max/min track
    # NaN with a flag, so the loops have no early exit.
    cdef Py_ssize_t i
    cdef double s0 = 0.0
    cdef double a, best
    cdef bint nan = False
    if kind == 2:
        if real_t is float:
            return sqrt(cg_sumsq4_f(x, n))
        else:
            return sqrt(cg_sumsq4_d(x, n))
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
        if real_t is float:
            cg_scale_f(&x[0], n, <float>coef)
        else:
            cg_scale_d(&x[0], n, coef)




def clamp(real_t[::1] x, double lo, double hi):    # x: in/out
    """``x = min(max(x, lo), hi)`` in place (torch's ``clamp_``; NaN stays NaN).

    ``lo`` and ``hi`` are rounded to ``real_t`` first.
    """
    cdef Py_ssize_t n = x.shape[0]
    if n == 0:
        return
    with nogil:
        if real_t is float:
            cg_clamp_f(&x[0], n, <float>lo, <float>hi)
        else:
            cg_clamp_d(&x[0], n, lo, hi)
