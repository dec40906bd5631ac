# distutils: extra_compile_args = -fno-math-errno

"""Muon's elementwise work: momentum, bfloat16 rounding, the final update.

torch runs Muon's Newton-Schulz iteration in bfloat16: every tensor it
materialises (the cast gradient, its norm, the normalised matrix, each Gram
matrix, each ``addmm`` result) is rounded to bfloat16, while the products
accumulate in float32 and ``addmm``'s ``beta * C + alpha * (A @ B)`` is formed
in float32 before its one rounding.  Here bfloat16 values are stored in
float32 arrays (every bfloat16 is a float32), the matrix products are
NumPy's float32 ``matmul`` (BLAS), and these kernels do the roundings, the
``beta * C + alpha * P`` combinations and the passes over the parameter.

Rounding: to nearest, ties to even, from float32 bits, or from float64 bits
directly (one rounding, as torch's ``.bfloat16()`` of a float64 tensor).
NaN and infinity are left as they are (a NaN's payload may change).

The momentum lerps and the final ``p + alpha * O`` are fused multiply-adds,
as ATen's vectorised ``lerp`` and ``add(alpha=)`` are: Muon's trajectory is
sensitive to single ulps (a flipped bfloat16 rounding moves an element of
the update by 2**-8), so this file follows torch's FMAs, as optim_lbfgs does.

Layout: flat C-contiguous arrays; ``out`` may be ``x`` (in place) where a
kernel says so.  Threading: checks with the GIL, loops without it.
"""

from libc.math cimport fabs, fma, fmaf, sqrt
from libc.stdint cimport uint32_t, uint64_t
from libc.string cimport memcpy

from cygrad._kernels._types cimport real_t


cdef inline float _bf16_from_float(float x) noexcept nogil:
    cdef uint32_t u
    memcpy(&u, &x, 4)
    if (u & 0x7F800000u) != 0x7F800000u:  # finite: round the low 16 bits away
        u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u
    memcpy(&x, &u, 4)
    return x


cdef inline float _bf16_from_double(double x) noexcept nogil:
    # keep 7 of the 52 explicit mantissa bits, rounding to nearest even; the
    # result has 8 significant bits, so the cast to float is exact
    cdef uint64_t u
    memcpy(&u, &x, 8)
    if (u & 0x7FF0000000000000u) != 0x7FF0000000000000u:
        u = (u + ((<uint64_t>1 << 44) - 1) + ((u >> 45) & 1)) & ~((<uint64_t>1 << 45) - 1)
    memcpy(&x, &u, 8)
    return <float>x


cdef inline real_t _fma(real_t a, real_t b, real_t c) noexcept nogil:
    if real_t is float:
        return fmaf(a, b, c)
    else:
        return fma(a, b, c)


cdef inline real_t _lerp(real_t start, real_t end, real_t weight) noexcept nogil:
    # ATen's vectorised lerp, one FMA: start + w * (end - start), or
    # end + (w - 1) * (end - start) when |w| >= 0.5 (exact at both ends)
    if fabs(weight) < 0.5:
        return _fma(weight, end - start, start)
    return _fma(weight - <real_t>1, end - start, end)


cdef int _check(str name, Py_ssize_t n, Py_ssize_t m) except -1:
    if m != n:
        raise ValueError(f"{name}: arrays of {n} and {m} elements")
    return 0


def momentum(
    const real_t[::1] grad,           # in
    real_t[::1] buf,                  # in/out: the momentum buffer
    real_t[::1] update,               # out: what Newton-Schulz orthogonalises
    double momentum,
    bint nesterov,
):
    """``buf = lerp(buf, g, 1 - momentum)``; ``update = lerp(g, buf, momentum)``
    with ``nesterov``, else ``update = buf``."""
    cdef Py_ssize_t n = grad.shape[0]
    cdef Py_ssize_t i
    cdef real_t w = <real_t>(1.0 - momentum), mu = <real_t>momentum, b
    _check("momentum", n, buf.shape[0])
    _check("momentum", n, update.shape[0])
    with nogil:
        for i in range(n):
            b = _lerp(buf[i], grad[i], w)
            buf[i] = b
            update[i] = _lerp(grad[i], b, mu) if nesterov else b


def to_bf16(const real_t[::1] x, float[::1] out):    # x: in, out: out (may be x)
    """``out = bfloat16(x)`` (stored as float32), one rounding from x's dtype."""
    cdef Py_ssize_t n = x.shape[0]
    cdef Py_ssize_t i
    _check("to_bf16", n, out.shape[0])
    with nogil:
        for i in range(n):
            if real_t is float:
                out[i] = _bf16_from_float(x[i])
            else:
                out[i] = _bf16_from_double(x[i])


def bf16_norm(const float[::1] x):    # x: in
    """``bfloat16(norm(x))``: the sum of squares in double, its square root
    rounded to float32 and then to bfloat16."""
    cdef Py_ssize_t n = x.shape[0]
    cdef Py_ssize_t i
    cdef double acc = 0.0
    with nogil:
        for i in range(n):
            acc += <double>x[i] * <double>x[i]
    return _bf16_from_float(<float>sqrt(acc))


def bf16_div(float[::1] x, float denom):    # x: in/out
    """``x = bfloat16(x / denom)`` in place."""
    cdef Py_ssize_t n = x.shape[0]
    cdef Py_ssize_t i
    with nogil:
        for i in range(n):
            x[i] = _bf16_from_float(x[i] / denom)


def bf16_axpby(
    float[::1] out,                   # out (may be c)
    float beta,
    const float[::1] c,               # in
    float alpha,
    const float[::1] p,               # in: the float32 product A @ B
):
    """``out = bfloat16(beta * c + alpha * p)``, formed in float32 (addmm)."""
    cdef Py_ssize_t n = out.shape[0]
    cdef Py_ssize_t i
    _check("bf16_axpby", n, c.shape[0])
    _check("bf16_axpby", n, p.shape[0])
    with nogil:
        for i in range(n):
            out[i] = _bf16_from_float(beta * c[i] + alpha * p[i])


def apply(
    real_t[::1] param,                # in/out
    const float[::1] update,          # in: bfloat16 values
    double decay,
    double alpha,
):
    """``p = p * decay``, then ``p = p + alpha * update`` as one FMA (ATen's
    ``add(alpha=)``), in the parameter's dtype."""
    cdef Py_ssize_t n = param.shape[0]
    cdef Py_ssize_t i
    cdef real_t d = <real_t>decay, a = <real_t>alpha
    _check("apply", n, update.shape[0])
    with nogil:
        for i in range(n):
            param[i] = _fma(a, <real_t>update[i], param[i] * d)
