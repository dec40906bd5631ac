"""Branch-free selects: fused clamp with scalar bounds, one pass each way.

Why not the kernel table: ``clamp(x, min, max)`` with two numbers composes
two table rows (clamp_min, clamp_max), i.e. two passes each way plus a
temporary; issue 3 asks for NumPy speed (np.clip is one SIMD pass), so the
common scalar-bound case gets this kernel.  Tensor bounds still use the
table rows.

Layout: flat C-contiguous arrays of equal length (the caller ravels).
Dtypes: ``real_t``; the arithmetic stays in ``real_t`` (a compare and a
select, no rounding).  Bounds are doubles: a missing bound is -inf / +inf.

Branch-free: selects go through an integer mask (see ``cg_pick``); GCC turns
``c ? a : b`` on floats into a jump under the default -ftrapping-math, which
random data mispredicts half the time.  With masks the loops vectorize.

NaN: a NaN element stays NaN and gets gradient 0 (torch).  Aliasing: ``out``
may be ``x`` (in-place clamp_), each element is read before it is written.
Threading: the wrappers check lengths with the GIL, then release it.
"""

from cygrad._kernels._types cimport real_t

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    static inline float cg_pickf(float a, float b, int c) {
        uint32_t ua, ub, m = (uint32_t)0 - (uint32_t)(c != 0);
        float r;
        memcpy(&ua, &a, 4);
        memcpy(&ub, &b, 4);
        ua = (ua & m) | (ub & ~m);
        memcpy(&r, &ua, 4);
        return r;
    }
    static inline double cg_pickd(double a, double b, int c) {
        uint64_t ua, ub, m = (uint64_t)0 - (uint64_t)(c != 0);
        double r;
        memcpy(&ua, &a, 8);
        memcpy(&ub, &b, 8);
        ua = (ua & m) | (ub & ~m);
        memcpy(&r, &ua, 8);
        return r;
    }
    """
    float cg_pickf(float a, float b, int c) noexcept nogil
    double cg_pickd(double a, double b, int c) noexcept nogil


cdef inline real_t _pick(real_t a, real_t b, bint c) noexcept nogil:
    # a where c holds, else b, without a branch.
    if real_t is float:
        return cg_pickf(a, b, c)
    else:
        return cg_pickd(a, b, c)


cdef void _clamp_fwd(const real_t* x, real_t lo, real_t hi, real_t* out,
                     Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    cdef real_t v
    for i in range(n):
        v = x[i]
        v = _pick(lo, v, v < lo)
        out[i] = _pick(hi, v, v > hi)


cdef void _clamp_bwd(const real_t* x, const real_t* g, real_t lo, real_t hi,
                     real_t* out, Py_ssize_t n) noexcept nogil:
    # torch's rule: the gradient passes where lo <= x <= hi (bounds included).
    cdef Py_ssize_t i
    cdef real_t v
    for i in range(n):
        v = x[i]
        out[i] = _pick(g[i], 0, (v >= lo) & (v <= hi))


def clamp_fwd(const real_t[::1] x,     # in
              double lo, double hi,
              real_t[::1] out):        # out, may be x
    """out = min(max(x, lo), hi) elementwise (NaN stays NaN)."""
    cdef Py_ssize_t n = x.shape[0]
    if out.shape[0] != n:
        raise ValueError(f"clamp_fwd: out has length {out.shape[0]}, expected {n}")
    if n == 0:
        return
    with nogil:
        _clamp_fwd(&x[0], <real_t>lo, <real_t>hi, &out[0], n)


def clamp_bwd(const real_t[::1] x,     # in  forward input
              const real_t[::1] g,     # in  incoming gradient
              double lo, double hi,
              real_t[::1] out):        # out
    """out = g where lo <= x <= hi, else 0."""
    cdef Py_ssize_t n = x.shape[0]
    if g.shape[0] != n or out.shape[0] != n:
        raise ValueError(f"clamp_bwd: lengths {g.shape[0]}/{out.shape[0]}, "
                         f"expected {n}")
    if n == 0:
        return
    with nogil:
        _clamp_bwd(&x[0], &g[0], <real_t>lo, <real_t>hi, &out[0], n)
