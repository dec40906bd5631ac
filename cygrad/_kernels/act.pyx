"""Activations that keep intermediates for their backward (``cg_act.h``).

``gelu_keep`` computes float32 GELU and stores, per element, its derivative
``Phi(x) + x phi(x)``, so that ``gelu_bwd_kept`` is one multiply per element
instead of a second Gaussian and CDF.  Both give the op table's gelu bits (see the header).

Layout: flat C-contiguous float32 arrays of one length (the caller checks
the dtype; lengths are checked here).  Threading: serial.
"""


cdef extern from "cg_act.h":
    void cg_gelu_keep_f(const float* x, float* y, float* d, Py_ssize_t n) noexcept nogil
    void cg_gelu_bwd_kept_f(const float* g, const float* x, const float* d,
                            float* out, Py_ssize_t n) noexcept nogil


cdef inline void _same(str name, Py_ssize_t n, Py_ssize_t m, str what) except *:
    if m != n:
        raise ValueError(f"{name}: {what} has length {m}, expected {n}")


def gelu_keep(const float[::1] x,      # in
              float[::1] y,            # out: x Phi(x)
              float[::1] d):           # out: Phi(x) + x phi(x), the derivative
    """``y = gelu(x)``, keeping its derivative for ``gelu_bwd_kept``."""
    cdef Py_ssize_t n = x.shape[0]
    _same("gelu_keep", n, y.shape[0], "y")
    _same("gelu_keep", n, d.shape[0], "d")
    if n == 0:
        return
    with nogil:
        cg_gelu_keep_f(&x[0], &y[0], &d[0], n)


def gelu_bwd_kept(const float[::1] g,      # in: the incoming gradient
                  const float[::1] x,      # in
                  const float[::1] d,      # in: from gelu_keep
                  float[::1] out):         # out: g (Phi(x) + x phi(x))
    """GELU's backward from what ``gelu_keep`` kept."""
    cdef Py_ssize_t n = x.shape[0]
    _same("gelu_bwd_kept", n, g.shape[0], "g")
    _same("gelu_bwd_kept", n, d.shape[0], "d")
    _same("gelu_bwd_kept", n, out.shape[0], "out")
    if n == 0:
        return
    with nogil:
        cg_gelu_bwd_kept_f(&g[0], &x[0], &d[0], &out[0], n)
