/* The dropout mask loop (dropout.pyx) as a CG_SIMD_FN helper, float and
 * double.  splitmix64's state after k steps is seed + k * GAMMA, so output
 * k is a function of k alone: a block of outputs is computed as independent
 * lanes (vectorized, the 64-bit products emulated on AVX2) instead of one
 * serial stream, with the same bits as the serial loop.  Output j gives
 * element 2j its low 32-bit word and element 2j + 1 its high one. */
#ifndef CG_DROPOUT_H
#define CG_DROPOUT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "cg_simd.h"

#define CG_DROP_GAMMA 0x9E3779B97F4A7C15ULL
#define CG_DROP_BLOCK 256 /* outputs a block: 512 elements */

/* words[2j], words[2j + 1] = the low and high halves of outs64[j]: on a
   little-endian CPU that is the outputs' own memory layout, a copy (the
   lane-by-lane split cost the vector loop a third of its time in
   permutes) */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define CG_DROP_WORDS(words, outs64, outs)                                     \
    memcpy((words), (outs64), (size_t)(outs) * sizeof(uint64_t))
#else
#define CG_DROP_WORDS(words, outs64, outs)                                     \
    do {                                                                       \
        ptrdiff_t j_;                                                          \
        for (j_ = 0; j_ < (outs); j_++) {                                      \
            (words)[2 * j_] = (uint32_t)(outs64)[j_];                          \
            (words)[2 * j_ + 1] = (uint32_t)((outs64)[j_] >> 32);              \
        }                                                                      \
    } while (0)
#endif

#define CG_DROPOUT(S, T)                                                       \
CG_SIMD_FN(void, cg_dropout_mask_##S, (T *mask, ptrdiff_t n, uint32_t thr,     \
                                       T scale, uint64_t seed),                \
           (mask, n, thr, scale, seed), {                                      \
    uint32_t words[2 * CG_DROP_BLOCK];                                         \
    uint64_t outs64[CG_DROP_BLOCK];                                            \
    ptrdiff_t i0, j, k, m, outs;                                               \
    uint64_t z, base;                                                          \
    for (i0 = 0; i0 < n; i0 += 2 * CG_DROP_BLOCK) {                            \
        m = n - i0 < 2 * CG_DROP_BLOCK ? n - i0 : 2 * CG_DROP_BLOCK;           \
        outs = (m + 1) / 2;                                                    \
        base = seed + (uint64_t)(i0 / 2) * CG_DROP_GAMMA;                      \
        for (j = 0; j < outs; j++) {                                           \
            z = base + (uint64_t)(j + 1) * CG_DROP_GAMMA;                      \
            z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;                       \
            z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;                       \
            outs64[j] = z ^ (z >> 31);                                         \
        }                                                                      \
        CG_DROP_WORDS(words, outs64, outs);                                    \
        for (k = 0; k < m; k++)                                                \
            mask[i0 + k] = words[k] >= thr ? scale : (T)0;                     \
    }                                                                          \
})

CG_DROPOUT(f, float)
CG_DROPOUT(d, double)

#endif
