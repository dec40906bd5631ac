# The SIMD level of one module's CG_SIMD_FN copies (cg_simd.h keeps it per
# module), read and set from Python: included by optim.pyx and optim2.pyx.

cdef extern from "cg_simd.h":
    int cg_simd_v3       # the copies this module runs (cg_simd.h), per module
    int cg_simd_level() noexcept nogil


cdef int _LOADED_LEVEL = cg_simd_level()


def simd_level():
    """The copies of this module's loops that run: 2 AVX-512, 1 AVX2 + FMA,
    0 portable (all give the same bits)."""
    return cg_simd_level()


def set_simd_level(int level):
    """Run this module's copies of ``level`` or, if the CPU (or
    ``CYGRAD_SIMD``/``CYGRAD_NO_SIMD`` at load) allows less, of the widest
    allowed; returns the level now running.  For tests and the legacy
    ``CYGRAD_NO_AVX2=1`` (``cygrad.optim._kernels``)."""
    global cg_simd_v3
    cg_simd_v3 = max(0, min(level, _LOADED_LEVEL))
    return cg_simd_v3
