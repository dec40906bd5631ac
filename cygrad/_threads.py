"""``set_num_threads``: cygrad's own kernels and the BLAS under NumPy.

torch's ``set_num_threads(n)`` bounds every intra-op thread torch runs,
its matrix products included; cygrad's matrix products are NumPy's BLAS, so
the same call sets both cygrad's kernel threads and the BLAS's (OpenBLAS,
as NumPy's wheels bundle it, or MKL).  A script's ``torch.set_num_threads(1)``
therefore keeps every product on one thread, as it does under torch (and a
small product on a busy machine no longer waits for a second BLAS thread).

The BLAS is found among the libraries this process has loaded (never
loaded here); a BLAS without a thread setting (Apple's Accelerate) is left
alone.
"""

import ctypes
import os

import numpy  # noqa: F401  (loads NumPy's BLAS, which the search looks for)

from cygrad._kernels import threads as _kernel_threads

__all__ = ["get_num_threads", "set_num_threads"]

get_num_threads = _kernel_threads.get_num_threads

# (library-name fragment, setter symbols to try in order)
_SETTERS = (
    ("openblas", ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
                  "openblas_set_num_threads64_", "openblas_set_num_threads")),
    ("mkl_rt", ("MKL_Set_Num_Threads",)),
)
_blas_setter = None
_searched = False


def _loaded_libraries():
    try:
        with open("/proc/self/maps") as f:
            return {line.split(maxsplit=5)[5].strip() for line in f
                    if len(line.split(maxsplit=5)) == 6 and ".so" in line}
    except OSError:            # not Linux: nothing found, the BLAS keeps its own
        return set()


def _find_blas_setter():
    global _blas_setter, _searched
    if _searched:
        return _blas_setter
    _searched = True
    # NumPy's own BLAS first (torch or SciPy may have loaded others)
    for path in sorted(_loaded_libraries(), key=lambda p: ("numpy" not in p, p)):
        name = os.path.basename(path)
        for fragment, symbols in _SETTERS:
            if fragment not in name:
                continue
            try:
                lib = ctypes.CDLL(path)
            except OSError:
                continue
            for sym in symbols:
                fn = getattr(lib, sym, None)
                if fn is not None:
                    fn.argtypes, fn.restype = [ctypes.c_int], None
                    _blas_setter = fn
                    return fn
    return None


def set_num_threads(n):
    """Set the number of threads of cygrad's large kernels and of the BLAS
    its matrix products run on (see the module's note).

    Raises ``TypeError`` for a non-integer ``n`` (bools too) and
    ``ValueError`` for ``n < 1``, as torch's."""
    _kernel_threads.set_num_threads(n)
    setter = _find_blas_setter()
    if setter is not None:
        setter(get_num_threads())

