"""Activations that keep intermediates for their backward (``cg_act.h``).

``gelu_keep`` computes float32 GELU and stores, per element, Phi(x) and the
density term that the derivative ``Phi(x) + x phi(x)`` needs, so that
``gelu_bwd_kept`` is one multiply-add per element instead of a second
Gaussian and CDF.  Both give the op table's gelu bits (see the header).

Layout: flat C-contiguous float32 arrays of one length (the caller checks
the dtype; lengths are checked here).  Threading: serial.
"""


cdef extern from "cg_act.h":
    void cg_gelu_keep_f(const float* x, float* y, float* phi, float* dens,
                        Py_ssize_t n) noexcept nogil
    void cg_gelu_bwd_kept_f(const float* g, const float* x, const float* phi,
                            const float* dens, float* out, Py_ssize_t n) noexcept nogil


cdef inline void _same(str name, Py_ssize_t n, Py_ssize_t m, str what) except *:
    if m != n:
        raise ValueError(f"{name}: {what} has length {m}, expected {n}")


def gelu_keep(const float[::1] x,      # in
              float[::1] y,            # out: x Phi(x)
              float[::1] phi,          # out: Phi(x)
              float[::1] dens):        # out: phi(x), the density
    """``y = gelu(x)``, keeping Phi(x) and phi(x) for ``gelu_bwd_kept``."""
    cdef Py_ssize_t n = x.shape[0]
    _same("gelu_keep", n, y.shape[0], "y")
    _same("gelu_keep", n, phi.shape[0], "phi")
    _same("gelu_keep", n, dens.shape[0], "dens")
    if n == 0:
        return
    with nogil:
        cg_gelu_keep_f(&x[0], &y[0], &phi[0], &dens[0], n)


def gelu_bwd_kept(const float[::1] g,      # in: the incoming gradient
                  const float[::1] x,      # in
                  const float[::1] phi,    # in: from gelu_keep
                  const float[::1] dens,   # in: from gelu_keep
                  float[::1] out):         # out: g (Phi(x) + x phi(x))
    """GELU's backward from what ``gelu_keep`` kept."""
    cdef Py_ssize_t n = x.shape[0]
    _same("gelu_bwd_kept", n, g.shape[0], "g")
    _same("gelu_bwd_kept", n, phi.shape[0], "phi")
    _same("gelu_bwd_kept", n, dens.shape[0], "dens")
    _same("gelu_bwd_kept", n, out.shape[0], "out")
    if n == 0:
        return
    with nogil:
        cg_gelu_bwd_kept_f(&g[0], &x[0], &phi[0], &dens[0], &out[0], n)
