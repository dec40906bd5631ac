"""Dropout masks: ``mask[i] = scale`` with probability ``1 - p``, else 0.

Why a C loop: a mask is the whole cost of a dropout layer.  Drawing it with
NumPy (uniforms, a compare, a cast, a scale) took 1.5 ms for 131k float32
elements, 3.5x the multiply it feeds; this loop takes ~0.1 ms.

Randomness: a splitmix64 stream (Steele, Lea & Flood 2014) started from a
64-bit seed that the caller draws from cygrad's generator, so
``cygrad.manual_seed`` makes masks reproducible.  Each 64-bit output gives
two elements their 32-bit words; an element is kept when its word is at
least ``threshold`` (= p * 2**32 rounded down), i.e. with probability
1 - p to within 2^-32 (a float32 uniform resolves 2^-24).

Layout: ``mask`` is a flat C-contiguous output of length n.  Dtypes:
``real_t``.  Threading: serial (the stream is sequential).
"""

from libc.stdint cimport uint32_t, uint64_t

from cygrad._kernels._types cimport real_t


def dropout_mask(real_t[::1] mask,       # out
                 uint64_t threshold,     # keep when the 32-bit word >= this
                 double scale,           # the kept value, 1 / (1 - p)
                 uint64_t seed):
    """Fill ``mask`` with ``scale`` (kept) or 0 (dropped)."""
    cdef Py_ssize_t n = mask.shape[0]
    if threshold > 0xFFFFFFFF:
        raise ValueError(f"dropout_mask: threshold {threshold} exceeds 2**32 - 1")
    if n == 0:
        return
    with nogil:
        _dropout_mask(&mask[0], n, <uint32_t>threshold, <real_t>scale, seed)


cdef inline uint64_t _splitmix64(uint64_t* state) noexcept nogil:
    cdef uint64_t z
    state[0] += 0x9E3779B97F4A7C15ULL
    z = state[0]
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL
    return z ^ (z >> 31)


cdef void _dropout_mask(real_t* mask, Py_ssize_t n, uint32_t threshold,
                        real_t scale, uint64_t seed) noexcept nogil:
    cdef Py_ssize_t i = 0
    cdef uint64_t state = seed
    cdef uint64_t r
    while i + 1 < n:
        r = _splitmix64(&state)
        mask[i] = scale if <uint32_t>r >= threshold else 0
        mask[i + 1] = scale if <uint32_t>(r >> 32) >= threshold else 0
        i += 2
    if i < n:
        r = _splitmix64(&state)
        mask[i] = scale if <uint32_t>r >= threshold else 0
