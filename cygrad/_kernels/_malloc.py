"""glibc malloc tuning for NumPy's work arrays, applied once at import.

NumPy allocates every array with ``malloc``.  Past glibc's (dynamic)
mmap threshold an allocation is a fresh mapping, and when a step's
temporaries are freed together the top of the heap is trimmed back to the
system; either way the next step's arrays are fresh pages, and their page
faults (and ``clear_page``) cost more than the arithmetic on them.  A
transformer block forward at batch 16 x 32 x 64 took 512 page faults and
4.9 ms per call, 2.8 ms with none (torch's allocator keeps its pages: 8
faults, 2.2 ms).  Here the mmap threshold is fixed at 16 MB and the trim
threshold at 64 MB: up to 64 MB of freed heap stay with the process for the
next step; larger arrays are still mapped and unmapped.

Not applied when the process set ``MALLOC_MMAP_THRESHOLD_`` or
``MALLOC_TRIM_THRESHOLD_`` itself, when ``CYGRAD_MALLOC_TUNE=0``, or off
glibc (no ``mallopt``).
"""

import os

__all__ = ["tune_malloc"]

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 16 << 20
TRIM_THRESHOLD = 64 << 20


def tune_malloc():
    """Set glibc's mmap and trim thresholds (see the module docstring);
    True when they were set."""
    env = os.environ
    if env.get("CYGRAD_MALLOC_TUNE", "1") in ("0", ""):
        return False
    if "MALLOC_MMAP_THRESHOLD_" in env or "MALLOC_TRIM_THRESHOLD_" in env:
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
        # gnu_get_libc_version exists only in glibc: other C libraries'
        # mallopt (musl has a stub) take other parameter numbers
        getattr(libc, "gnu_get_libc_version")  # noqa: B009
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
