"""The C entry points of the BLAS that NumPy itself loaded, for compiled loops
that call a matrix product per step (the recurrent layers' time loop).

NumPy's wheels bundle OpenBLAS with 64-bit integers and suffixed names
(``scipy_cblas_sgemm64_`` in NumPy 2, ``cblas_sgemm64_`` in NumPy 1.26); an
OpenBLAS with plain names (a distribution's, conda-forge's, or
``scipy-openblas32``'s ``scipy_`` ones) says in ``openblas_get_config()``
whether its integers are 64-bit.
``gemm_addresses()`` finds the library among the process's mapped files and
returns ``(sgemm, dgemm, ilp64)``, the first two integer addresses, or
``None`` when it cannot tell which BLAS is loaded or how wide its integers
are (MKL, say): the kernels then multiply with their own portable loops
(correct, about 3x slower on an LSTM).
No new dependency: the library is already in the process, loaded by NumPy.
"""

import ctypes
import os

import numpy as np

# (sgemm, dgemm) names, each with 64-bit integers: only suffixed names say so
_ILP64_NAMES = (("scipy_cblas_sgemm64_", "scipy_cblas_dgemm64_"),
                ("cblas_sgemm64_", "cblas_dgemm64_"))


def _mapped_blas_libraries():
    """Paths of loaded shared libraries that look like NumPy's BLAS."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "blas" in line.lower()}
    except OSError:
        return []
    here = os.path.dirname(os.path.dirname(np.__file__))
    # NumPy's own bundled copy first
    return sorted((p for p in paths if ".so" in os.path.basename(p)),
                  key=lambda p: not p.startswith(here))


def gemm_addresses():
    np.matmul(np.ones((2, 2)), np.ones((2, 2)))       # make sure BLAS is loaded
    for path in _mapped_blas_libraries():
        try:
            lib = ctypes.CDLL(path, mode=getattr(os, "RTLD_NOLOAD", 0) | ctypes.RTLD_LOCAL)
        except OSError:
            continue
        for s_name, d_name in _ILP64_NAMES:
            try:
                s_fn, d_fn = getattr(lib, s_name), getattr(lib, d_name)
            except AttributeError:
                continue
            return _address(s_fn), _address(d_fn), True
        for prefix in ("scipy_", ""):
            try:
                config = getattr(lib, prefix + "openblas_get_config")
                s_fn = getattr(lib, prefix + "cblas_sgemm")
                d_fn = getattr(lib, prefix + "cblas_dgemm")
            except AttributeError:
                continue
            config.restype = ctypes.c_char_p
            return (_address(s_fn), _address(d_fn),
                    b"USE64BITINT" in (config() or b""))
    return None


def _address(fn):
    return ctypes.cast(fn, ctypes.c_void_p).value
