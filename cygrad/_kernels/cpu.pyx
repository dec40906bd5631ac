"""What this CPU runs: the AVX-512, the AVX2 + FMA or the portable copies of
the C helpers (``cg_simd.h``).

The level is read from the CPU (``__builtin_cpu_supports``) when a module is
loaded; ``CYGRAD_NO_SIMD=1`` (set before ``import cygrad``) turns every
SIMD path off, so one machine can test both.  Off x86-64 only the portable
copies exist.
"""

import os

cdef extern from "cg_simd.h":
    int cg_simd_level() noexcept nogil
    int cg_cpu_avx2() noexcept nogil


def simd_disabled():
    """True when ``CYGRAD_NO_SIMD`` is set to anything but "" or "0"."""
    return os.environ.get("CYGRAD_NO_SIMD", "0") not in ("", "0")


def simd_level():
    """2 when the AVX-512 copies of the C helpers run, 1 for the AVX2 + FMA
    copies, 0 for the portable ones (the value the compiled modules chose at
    load; they read the same environment: ``CYGRAD_NO_SIMD=1`` gives 0,
    ``CYGRAD_SIMD=avx2`` at most 1)."""
    return cg_simd_level()


def cpu_has_avx2():
    """True when this CPU has AVX2 (x86-64 only), whatever the environment."""
    return bool(cg_cpu_avx2())

