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

/* Bias-shaped work on a C-contiguous (rows, K) matrix x, over the columns
   k0 <= k < k1: cg_colsum adds each column into acc[k] in double, row after
   row (the order of a running sum, so every SIMD level gives the same
   bits; the vector lanes run across columns, four rows per pass over acc); cg_addrow adds b[k] to every
   row in place (a linear layer's bias).  The baseline build's two-double
   SSE2 loop took a (512, 256) bias gradient 34 us, NumPy's broadcast add
   of the bias 27 us. */
#define CG_COLSUM_BODY                                              \
    Py_ssize_t a = 0, k;                                            \
    for (; a + 4 <= rows; a += 4) {    /* acc[k] loaded once per 4 rows */ \
        const T *r0 = x + a * K, *r1 = r0 + K, *r2 = r1 + K, *r3 = r2 + K; \
        for (k = k0; k < k1; k++) {                                 \
            double s = acc[k];                                      \
            s += (double)r0[k];                                     \
            s += (double)r1[k];                                     \
            s += (double)r2[k];                                     \
            s += (double)r3[k];                                     \
            acc[k] = s;                                             \
        }                                                           \
    }                                                               \
    for (; a < rows; a++) {                                         \
        const T *row = x + a * K;                                   \
        for (k = k0; k < k1; k++) acc[k] += (double)row[k];         \
    }
#define T float
CG_SIMD_FN(void, cg_colsum_f32, (const float *x, Py_ssize_t rows, Py_ssize_t K,
                                 Py_ssize_t k0, Py_ssize_t k1, double *acc),
           (x, rows, K, k0, k1, acc), { CG_COLSUM_BODY })
#undef T
#define T double
CG_SIMD_FN(void, cg_colsum_f64, (const double *x, Py_ssize_t rows, Py_ssize_t K,
                                 Py_ssize_t k0, Py_ssize_t k1, double *acc),
           (x, rows, K, k0, k1, acc), { CG_COLSUM_BODY })
#undef T

#define CG_ADDROW_BODY                                              \
    Py_ssize_t a, k;                                                \
    for (a = 0; a < rows; a++) {                                    \
        T *row = x + a * K;                                         \
        for (k = 0; k < K; k++) row[k] += b[k];                     \
    }
#define T float
CG_SIMD_FN(void, cg_addrow_f32, (float *restrict x, const float *restrict b,
                                 Py_ssize_t rows, Py_ssize_t K),
           (x, b, rows, K), { CG_ADDROW_BODY })
#undef T
#define T double
CG_SIMD_FN(void, cg_addrow_f64, (double *restrict x, const double *restrict b,
                                 Py_ssize_t rows, Py_ssize_t K),
           (x, b, rows, K), { CG_ADDROW_BODY })
#undef T

#endif
