/* The dropout mask loop (dropout.pyx) as a CG_SIMD_FN helper, float and
 * double.  Element i's 32 random bits are
 *     word(i) = H(c + i a)   (mod 2^32),
 * a 32-bit integer hash with full avalanche (three xor-shifts and two odd
 * multipliers: the "lowbias32" constants found by Chris Wellons' hash
 * search, public domain) of a Weyl sequence that the 64-bit seed chooses:
 * c its low 32 bits, a its bits 31..63 with the lowest forced to 1.  Every
 * element is an independent 32-bit lane, so the compiler vectorizes the
 * loop eight (AVX2) or sixteen (AVX-512) elements at a time with native
 * 32-bit multiplies.
 * An earlier version drew 64-bit splitmix64 outputs (two elements each),
 * whose 64-bit products AVX2 emulates with three 32-bit ones: 131k elements
 * took 94 us.
 *
 * H is a bijection and a odd, so the words of 2^32 consecutive elements are
 * distinct; after that the sequence restarts at the next c of a Weyl
 * sequence (no mask on a CPU is that long in practice). */
#ifndef CG_DROPOUT_H
#define CG_DROPOUT_H

#include <stddef.h>
#include <stdint.h>
#include "cg_simd.h"

#define CG_DROPOUT(S, T)                                                       \
CG_SIMD_FN(void, cg_dropout_mask_##S, (T *mask, ptrdiff_t n, uint32_t thr,     \
                                       T scale, uint64_t seed),                \
           (mask, n, thr, scale, seed), {                                      \
    const uint32_t a = (uint32_t)(seed >> 31) | 1U;                            \
    ptrdiff_t i0, k, m;                                                        \
    for (i0 = 0; i0 < n; i0 += m) {                                            \
        const uint32_t c = (uint32_t)seed                                      \
                           + (uint32_t)((uint64_t)i0 >> 32) * 0x9E3779B9U;      \
        T *out = mask + i0;                                                    \
        m = n - i0;                                                            \
        if ((uint64_t)m > ((uint64_t)1 << 32))                                 \
            m = (ptrdiff_t)((uint64_t)1 << 32);                                \
        for (k = 0; k < m; k++) {                                              \
            uint32_t x = c + (uint32_t)k * a;                                  \
            x ^= x >> 16;                                                      \
            x *= 0x7feb352dU;                                                  \
            x ^= x >> 15;                                                      \
            x *= 0x846ca68bU;                                                  \
            x ^= x >> 16;                                                      \
            out[k] = x >= thr ? scale : (T)0;                                  \
        }                                                                      \
    }                                                                          \
})

CG_DROPOUT(f, float)
CG_DROPOUT(d, double)

#endif
