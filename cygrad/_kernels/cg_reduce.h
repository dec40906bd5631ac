/* Blocked sums (see reduce.pyx). */
#ifndef CG_REDUCE_H
#define CG_REDUCE_H

#include "cg_simd.h"
/* Blocks of 512: sixteen lanes of the input's own type (independent
   vector-add chains: the compiler vectorises the lane loops), each lane
   summing 32 values; the lanes are added pairwise and every block total
   goes into a double.  The error is that of NumPy's and torch's pairwise
   float32 sums.  4M float32, one thread: four scalar double accumulators
   took 2.1 ms, blocks of 128 with a serial lane total 1.4. */
#define CG_SUM_BODY(T)                                              \
    T lane[16];                                                     \
    double s = 0, b;                                                \
    Py_ssize_t i = 0, j;                                            \
    int k;                                                          \
    for (; i + 512 <= n; i += 512) {                                \
        for (k = 0; k < 16; k++) lane[k] = x[i + k];                \
        for (j = i + 16; j < i + 512; j += 16)                      \
            for (k = 0; k < 16; k++) lane[k] += x[j + k];           \
        for (k = 0; k < 8; k++) lane[k] += lane[k + 8];             \
        for (k = 0; k < 4; k++) lane[k] += lane[k + 4];             \
        b = ((double)lane[0] + lane[1]) + ((double)lane[2] + lane[3]); \
        s += b;                                                     \
    }                                                               \
    for (; i < n; i++) s += x[i];                                   \
    return s;
CG_SIMD_FN(double, cg_sum_f32, (const float *x, Py_ssize_t n), (x, n), {
    CG_SUM_BODY(float)
})
CG_SIMD_FN(double, cg_sum_f64, (const double *x, Py_ssize_t n), (x, n), {
    CG_SUM_BODY(double)
})

#endif
