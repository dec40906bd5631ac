"""torch's CPU random stream (``cg_rng.h``): an MT19937 state and the
samplers that turn its draws into torch's numbers.

``MT`` is one generator's state.  Its byte form (``state_bytes``) is the
layout of torch's ``get_rng_state()``: 5056 bytes, little-endian,

    0     uint64   the seed
    8     int32    words left before the next regeneration
    12    int32    seeded (1)
    16    uint64   the next word's index
    24    uint64[624]  the state words
    5016  double   (unused, 0)
    5024  double   the cached double normal sample
    5032  double   (unused, 0)
    5040  int32    whether that sample is valid
    5048  float    the cached float normal sample
    5052  uint8    whether that sample is valid

so a state taken from torch continues torch's stream here and back.

Every filler writes a flat C-contiguous array (the caller lays out the
result); lengths come from the arrays.  Threading: serial, like torch's
samplers, which hold the generator's lock while they draw.
"""

import numpy as np

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy


cdef extern from "cg_rng.h":
    ctypedef struct cg_mt:
        uint64_t seed
        int32_t left
        int32_t seeded
        uint32_t next
        uint32_t state[624]
        int32_t has_double_normal
        double double_normal
        int32_t has_float_normal
        float float_normal
    void cg_mt_seed(cg_mt* g, uint64_t seed) noexcept nogil
    uint32_t cg_mt_u32(cg_mt* g) noexcept nogil
    uint64_t cg_mt_u64(cg_mt* g) noexcept nogil
    void cg_mt_uniform_f(cg_mt* g, float* out, int64_t n, float lo,
                         float hi) noexcept nogil
    void cg_mt_uniform_d(cg_mt* g, double* out, int64_t n, double lo,
                         double hi) noexcept nogil
    void cg_mt_exponential_d(cg_mt* g, double* out, int64_t n,
                             double lambd) noexcept nogil
    void cg_mt_normal_fill_f(cg_mt* g, float* d, int64_t n, float mean,
                             float std) noexcept nogil
    void cg_mt_normal_fill_d(cg_mt* g, double* d, int64_t n, double mean,
                             double std) noexcept nogil
    void cg_mt_normal_serial(cg_mt* g, double* out, int64_t n, double mean,
                             double std) noexcept nogil
    void cg_mt_bernoulli_fill_u8(cg_mt* g, uint8_t* out, int64_t n, double p,
                                 uint8_t value) noexcept nogil
    void cg_mt_bernoulli_fill_f(cg_mt* g, float* out, int64_t n, double p,
                                float value) noexcept nogil
    void cg_mt_bernoulli_fill_d(cg_mt* g, double* out, int64_t n, double p,
                                double value) noexcept nogil
    void cg_mt_bernoulli_pd(cg_mt* g, uint8_t* out, const double* p,
                            int64_t n) noexcept nogil
    void cg_mt_bernoulli_pf(cg_mt* g, uint8_t* out, const float* p,
                            int64_t n) noexcept nogil
    void cg_mt_ints(cg_mt* g, int64_t* out, int64_t n, uint64_t range, int64_t base,
                    int wide) noexcept nogil
    void cg_mt_words(cg_mt* g, uint32_t* out, int64_t n) noexcept nogil
    void cg_mt_raw64(cg_mt* g, uint64_t* out, int64_t n) noexcept nogil
    void cg_mt_randperm(cg_mt* g, int64_t* out, int64_t n) noexcept nogil


STATE_BYTES = 5056
# torch's default seed for a Generator() that was never seeded
DEFAULT_SEED = 67280421310721


def from_state(state):
    """An ``MT`` in the state ``state`` (bytes in torch's layout)."""
    g = MT()
    g.set_state_bytes(np.frombuffer(state, np.uint8))
    return g


cdef class MT:
    """One MT19937 generator with torch's samplers."""

    cdef cg_mt g

    def __init__(self, seed=DEFAULT_SEED):
        self.seed(seed)

    def seed(self, seed):
        """Reset to ``seed`` (taken modulo 2**64); drops cached normals."""
        cg_mt_seed(&self.g, <uint64_t>(int(seed) % (1 << 64)))

    @property
    def initial_seed(self):
        return self.g.seed

    def copy(self):
        cdef MT other = MT.__new__(MT)
        other.g = self.g
        return other

    def __reduce__(self):
        return (from_state, (bytes(self.state_bytes()),))

    # --- state ----------------------------------------------------------------

    def state_bytes(self):
        """The state in torch's 5056-byte layout (module docstring)."""
        out = np.zeros(STATE_BYTES, np.uint8)
        cdef uint8_t[::1] b = out
        cdef uint64_t w
        cdef int32_t i32
        cdef double dz = 0.0
        cdef int i
        memcpy(&b[0], &self.g.seed, 8)
        memcpy(&b[8], &self.g.left, 4)
        memcpy(&b[12], &self.g.seeded, 4)
        w = self.g.next
        memcpy(&b[16], &w, 8)
        for i in range(624):
            w = self.g.state[i]
            memcpy(&b[24 + 8 * i], &w, 8)
        if self.g.has_double_normal:
            memcpy(&b[5024], &self.g.double_normal, 8)
            i32 = 1
            memcpy(&b[5040], &i32, 4)
        if self.g.has_float_normal:
            memcpy(&b[5048], &self.g.float_normal, 4)
            b[5052] = 1
        return out

    def set_state_bytes(self, const uint8_t[::1] b):
        """Load a state in torch's layout; refuses one torch would refuse."""
        if b.shape[0] != STATE_BYTES:
            raise RuntimeError(
                f"Expected a CPUGeneratorImplState of size {STATE_BYTES} but found "
                f"the input RNG state size to be {b.shape[0]}")
        cdef cg_mt g
        cdef uint64_t w
        cdef int32_t i32
        cdef int i
        memcpy(&g.seed, &b[0], 8)
        memcpy(&g.left, &b[8], 4)
        memcpy(&g.seeded, &b[12], 4)
        memcpy(&w, &b[16], 8)
        g.next = <uint32_t>w
        for i in range(624):
            memcpy(&w, &b[24 + 8 * i], 8)
            g.state[i] = <uint32_t>w
        if not (g.seeded and 0 < g.left <= 624 and g.next <= 624):
            raise RuntimeError("Invalid mt19937 state")
        memcpy(&i32, &b[5040], 4)
        g.has_double_normal = 1 if i32 else 0
        memcpy(&g.double_normal, &b[5024], 8)
        g.has_float_normal = 1 if b[5052] else 0
        memcpy(&g.float_normal, &b[5048], 4)
        self.g = g

    # --- raw draws --------------------------------------------------------------

    def u32(self):
        return cg_mt_u32(&self.g)

    def u64(self):
        return cg_mt_u64(&self.g)

    def raw32(self, Py_ssize_t n):
        out = np.empty(n, np.uint32)
        cdef uint32_t[::1] o = out
        if n:
            with nogil:
                cg_mt_words(&self.g, &o[0], n)
        return out

    def raw64(self, Py_ssize_t n):
        out = np.empty(n, np.uint64)
        cdef uint64_t[::1] o = out
        if n:
            with nogil:
                cg_mt_raw64(&self.g, &o[0], n)
        return out

    def units(self, Py_ssize_t n):
        """n uniform doubles on [0, 1) (53 bits each)."""
        out = np.empty(n, np.float64)
        cdef double[::1] o = out
        if n:
            with nogil:
                cg_mt_uniform_d(&self.g, &o[0], n, 0.0, 1.0)
        return out

    # --- samplers ---------------------------------------------------------------

    def uniform_f(self, float[::1] out, double lo, double hi):
        """torch's uniform_ of a float32 tensor (24 bits, computed in float;
        a float16 caller rounds ``out`` afterwards, as torch does)."""
        cdef float flo = <float>lo, fhi = <float>hi
        if out.shape[0]:
            with nogil:
                cg_mt_uniform_f(&self.g, &out[0], out.shape[0], flo, fhi)

    def uniform_d(self, double[::1] out, double lo, double hi):
        if out.shape[0]:
            with nogil:
                cg_mt_uniform_d(&self.g, &out[0], out.shape[0], lo, hi)

    def exponential(self, Py_ssize_t n, double lambd):
        """n draws of torch's exponential_(lambd), in double."""
        out = np.empty(n, np.float64)
        cdef double[::1] o = out
        if n:
            with nogil:
                cg_mt_exponential_d(&self.g, &o[0], n, lambd)
        return out

    def normal_fill_f(self, float[::1] out, double mean, double std):
        """torch's normal_ of a contiguous float32 tensor of 16 or more."""
        if out.shape[0] < 16:
            raise ValueError("normal_fill_f: needs 16 or more elements")
        with nogil:
            cg_mt_normal_fill_f(&self.g, &out[0], out.shape[0], <float>mean, <float>std)

    def normal_fill_d(self, double[::1] out, double mean, double std):
        """torch's normal_ of a contiguous float64 tensor of 16 or more."""
        if out.shape[0] < 16:
            raise ValueError("normal_fill_d: needs 16 or more elements")
        with nogil:
            cg_mt_normal_fill_d(&self.g, &out[0], out.shape[0], mean, std)

    def normal_serial(self, double[::1] out, double mean, double std):
        """torch's element-by-element normal_ (double Box-Muller, cached)."""
        if out.shape[0]:
            with nogil:
                cg_mt_normal_serial(&self.g, &out[0], out.shape[0], mean, std)

    def bernoulli(self, Py_ssize_t n, double p):
        """n draws of (uniform double < p) as uint8."""
        out = np.empty(n, np.uint8)
        cdef uint8_t[::1] o = out
        if n:
            with nogil:
                cg_mt_bernoulli_fill_u8(&self.g, &o[0], n, p, 1)
        return out

    def bernoulli_fill(self, out, double p, double value):
        """Fill the flat float32 or float64 ``out`` with ``value`` where a
        bernoulli(p) draw is 1 and 0 elsewhere (``bernoulli`` times value)."""
        cdef float[::1] of
        cdef double[::1] od
        cdef Py_ssize_t n = out.shape[0]
        cdef float fvalue = <float>value
        if n == 0:
            return
        if out.dtype == np.float32:
            of = out
            with nogil:
                cg_mt_bernoulli_fill_f(&self.g, &of[0], n, p, fvalue)
        elif out.dtype == np.float64:
            od = out
            with nogil:
                cg_mt_bernoulli_fill_d(&self.g, &od[0], n, p, value)
        else:
            raise TypeError(f"bernoulli_fill: out must be float32 or float64, "
                            f"got {out.dtype}")

    def bernoulli_p(self, p):
        """One draw per probability: double p draws doubles, float p floats."""
        cdef Py_ssize_t n = p.shape[0]
        out = np.empty(n, np.uint8)
        cdef uint8_t[::1] o = out
        cdef const double[::1] pd
        cdef const float[::1] pf
        if n == 0:
            return out
        if p.dtype == np.float64:
            pd = p
            with nogil:
                cg_mt_bernoulli_pd(&self.g, &o[0], &pd[0], n)
        elif p.dtype == np.float32:
            pf = p
            with nogil:
                cg_mt_bernoulli_pf(&self.g, &o[0], &pf[0], n)
        else:
            raise TypeError(f"bernoulli_p: p must be float32 or float64, got {p.dtype}")
        return out

    def ints(self, Py_ssize_t n, uint64_t span, int64_t base, bint wide):
        """n integers ``base + draw % span`` (64-bit draws when ``wide``)."""
        if span == 0:
            raise ValueError("ints: the range is empty")
        out = np.empty(n, np.int64)
        cdef int64_t[::1] o = out
        if n:
            with nogil:
                cg_mt_ints(&self.g, &o[0], n, span, base, wide)
        return out

    def randperm(self, Py_ssize_t n):
        out = np.empty(n, np.int64)
        cdef int64_t[::1] o = out
        if n:
            with nogil:
                cg_mt_randperm(&self.g, &o[0], n)
        return out
