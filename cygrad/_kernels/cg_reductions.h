/* The row reductions' C loops (softmax, logsumexp, max/min with indices; see
 * reductions.pyx for layout and accuracy). */
#ifndef CG_REDUCTIONS_H
#define CG_REDUCTIONS_H

#include <math.h>
#include <stdint.h>
#include <string.h>
/* Every helper below is compiled for AVX2 + FMA and for the baseline
   (CG_SIMD_FN: see cg_simd.h). */
#include "cg_simd.h"
/* cg_expf_le0 and cg_exp_le0, the softmax family's exp. */
#include "cg_math.h"

/* log1p(u) for 0 <= u <= 1 (u = exp(-|x|) in the logistic losses), as
   2 atanh(s) with s = u / (2 + u) <= 1/3: an odd series in s, whose
   truncation after s^15 (float) or s^33 (double) is below half an ulp.
   No cancellation for small u (s ~ u/2), no branch. */
static inline float cg_log1pf_01(float u) {
    float s = u / (2.0f + u), z = s * s;
    float p = 1.0f / 13 + z * (1.0f / 15);
    p = 1.0f / 11 + z * p;
    p = 1.0f / 9 + z * p;
    p = 1.0f / 7 + z * p;
    p = 1.0f / 5 + z * p;
    p = 1.0f / 3 + z * p;
    return 2.0f * s * (1.0f + z * p);
}
static inline double cg_log1p_01(double u) {
    double s = u / (2.0 + u), z = s * s, p = 1.0 / 33;
    int k;
    for (k = 31; k >= 3; k -= 2) p = 1.0 / k + z * p;
    return 2.0 * s * (1.0 + z * p);
}

/* Four-lane vectors (GCC/clang vector extensions): 16 bytes of floats,
   32 of doubles; plain SSE2 in the baseline clone, VEX-encoded in the
   AVX2 one.  With four accumulators a row's vector loop takes 16 elements
   a step.  Eight float lanes (32 a step) sped up rows of 1000 by a fifth
   but slowed rows of 100 or fewer by a third (a longer scalar tail); two
   double lanes held double rows to ~60% of the four-lane rate. */
typedef float cg_v4f __attribute__((vector_size(16)));
typedef int32_t cg_v4i __attribute__((vector_size(16)));
typedef double cg_v4d __attribute__((vector_size(32)));
typedef int64_t cg_v4l __attribute__((vector_size(32)));
/* v OP a ? v : a lane by lane (OP is > for max, < for min), so a
   wherever either is NaN (a bitwise select: C has no ?: on vectors). */
#define CG_VPICK(VT, VI, a, v, OP) \
    ((VT)((((VI)(v)) & ((v) OP (a))) | (((VI)(a)) & ~((v) OP (a)))))

/* Ask for the cache lines 1 KB ahead of the m elements at p.  The loops
   that read a row from memory for the first time are long (an exp is
   ~25 instructions per 8 floats, a double sum converts every float), so
   the out-of-order window alone keeps few misses in flight: with this,
   a row sum of 4M floats went from 1.2 to 0.9 ms. */
#define CG_PREFETCH(p, m) do {                                           \
        int b_;                                                          \
        for (b_ = 0; b_ < (m) * (int)sizeof(*(p)); b_ += 64)             \
            __builtin_prefetch((const char *)(p) + 1024 + b_);           \
    } while (0)

/* Row helpers, one set per dtype (S: suffix, T: type, VT/VI: float and
   int vectors of T's width, EXP, LOG1P: the exp and log1p above).  Sums
   keep independent double lanes (16 in cg_lanes, whose loop is short
   enough for the add latency to bound it; 8 elsewhere), each a plain
   sequential sum (no reassociation, so no -ffast-math): the fixed lane
   loop vectorizes, and float32 keeps its digits.
   cg_max, cg_min: max(x), min(x), NaN if x holds one (torch); 4 vector
   accumulators.  cg_find: the first i with x[i] == m (x[i] NaN when m
   is), 0 if none.
   cg_lanes: sum(x) (y == NULL) or dot(x, y).
   cg_prod: the product of x in 4 L lanes.
   cg_softmax_rows: softmax along each of rows rows of n (the max or
   rowmax[r], cg_exp_sum, the scale), the steps inlined in one loop: a
   call per step and row reloaded the exp's constants every time.
   cg_exp_sum: sum(exp(x - shift)); also stores each exp in y unless y is
   NULL (summed while still in registers).  No prefetch: the row is in L1
   after the max; a prefetch in this loop stops GCC vectorizing it, and
   a variant prefetching per 64 elements measured 5-13% slower.
   cg_exp_axpy: y = a * exp(x - shift) + b (b == NULL: no addend); y
   must not alias x or b (restrict: no run-time overlap checks).
   cg_sub2, cg_mul_sub, cg_sub_mul: y = (x - a) - b, x * (g - d),
   c * (x - a), elementwise (y may alias x).
   cg_sqdev: sum((x - mean)^2), the second pass of var.
   cg_softplus, cg_sigmoid: y = log1p(exp(-|x|)) and 1 / (1 + exp(-x))
   (as e / (1 + e) for x < 0), the logistic losses' elementwise parts;
   exp only ever sees -|x| <= 0.  y must not alias x. */
#define CG_ROW_HELPERS(S, T, VT, VI, EXP, LOG1P)                                \
static inline T cg_extreme_##S(const T *x, Py_ssize_t n, int is_min) {   \
    /* Rows of at least L elements run in vectors only: four accumulators  \
       over 4 L, one over L, then the last L elements again (a max or min  \
       may see an element twice); rows of 27 or 32 floats ran a scalar     \
       compare chain of ~1 ns an element (softmax's and cross-entropy's    \
       row max at a classifier's or an attention's width). */            \
    const Py_ssize_t L = sizeof(VT) / sizeof(T);                         \
    VT a0, a1, a2, a3, v0, v1, v2, v3;                                   \
    VI bad = {0};                                                        \
    Py_ssize_t i = 0;                                                    \
    T m = x[0];                                                          \
    int k, anybad = 0;                                                   \
    if (n >= L) {                                                        \
        memcpy(&a0, x, sizeof(VT));                                      \
        a1 = a2 = a3 = a0;                                               \
        for (; i + 4 * L <= n; i += 4 * L) {                             \
            CG_PREFETCH(x + i, 4 * L);                                   \
            memcpy(&v0, x + i, sizeof(VT));                              \
            memcpy(&v1, x + i + L, sizeof(VT));                          \
            memcpy(&v2, x + i + 2 * L, sizeof(VT));                      \
            memcpy(&v3, x + i + 3 * L, sizeof(VT));                      \
            if (is_min) {                                                \
                a0 = CG_VPICK(VT, VI, a0, v0, <);                        \
                a1 = CG_VPICK(VT, VI, a1, v1, <);                        \
                a2 = CG_VPICK(VT, VI, a2, v2, <);                        \
                a3 = CG_VPICK(VT, VI, a3, v3, <);                        \
            } else {                                                     \
                a0 = CG_VPICK(VT, VI, a0, v0, >);                        \
                a1 = CG_VPICK(VT, VI, a1, v1, >);                        \
                a2 = CG_VPICK(VT, VI, a2, v2, >);                        \
                a3 = CG_VPICK(VT, VI, a3, v3, >);                        \
            }                                                            \
            bad |= (v0 != v0) | (v1 != v1) | (v2 != v2) | (v3 != v3);    \
        }                                                                \
        for (; i < n; i += L) {                                          \
            memcpy(&v0, x + (i + L <= n ? i : n - L), sizeof(VT));       \
            if (is_min)                                                  \
                a0 = CG_VPICK(VT, VI, a0, v0, <);                        \
            else                                                         \
                a0 = CG_VPICK(VT, VI, a0, v0, >);                        \
            bad |= v0 != v0;                                             \
        }                                                                \
        for (k = 0; k < L; k++) {                                        \
            anybad |= bad[k] != 0;                                       \
            m = (is_min ? a0[k] < m : a0[k] > m) ? a0[k] : m;            \
            m = (is_min ? a1[k] < m : a1[k] > m) ? a1[k] : m;            \
            m = (is_min ? a2[k] < m : a2[k] > m) ? a2[k] : m;            \
            m = (is_min ? a3[k] < m : a3[k] > m) ? a3[k] : m;            \
        }                                                                \
        return anybad ? (T)NAN : m;                                      \
    }                                                                    \
    for (; i < n; i++) {                                                 \
        m = (is_min ? x[i] < m : x[i] > m) ? x[i] : m;                   \
        anybad |= x[i] != x[i];                                          \
    }                                                                    \
    return anybad ? (T)NAN : m;                                          \
}                                                                        \
/* the product of x in 4 L lanes (4 vector accumulators), then the lanes  \
   and the tail in order: a multiply chain per element ran at 1 ns an     \
   element (NumPy's float32 product loop). */                             \
CG_SIMD_FN(T, cg_prod_##S, (const T *x, Py_ssize_t n), (x, n), {         \
    const Py_ssize_t L = sizeof(VT) / sizeof(T);                         \
    VT a0, a1, a2, a3, v0, v1, v2, v3;                                   \
    Py_ssize_t i = 0;                                                    \
    int k;                                                               \
    T p = 1;                                                             \
    for (k = 0; k < L; k++) a0[k] = 1;                                   \
    a1 = a2 = a3 = a0;                                                   \
    for (; i + 4 * L <= n; i += 4 * L) {                                 \
        memcpy(&v0, x + i, sizeof(VT));                                  \
        memcpy(&v1, x + i + L, sizeof(VT));                              \
        memcpy(&v2, x + i + 2 * L, sizeof(VT));                          \
        memcpy(&v3, x + i + 3 * L, sizeof(VT));                          \
        a0 *= v0;                                                        \
        a1 *= v1;                                                        \
        a2 *= v2;                                                        \
        a3 *= v3;                                                        \
    }                                                                    \
    a0 = (a0 * a1) * (a2 * a3);                                          \
    for (k = 0; k < L; k++) p *= a0[k];                                  \
    for (; i < n; i++) p *= x[i];                                        \
    return p;                                                            \
})                                                                       \
CG_SIMD_FN(T, cg_max_##S, (const T *x, Py_ssize_t n), (x, n), {          \
    return cg_extreme_##S(x, n, 0);                                      \
})                                                                       \
CG_SIMD_FN(T, cg_min_##S, (const T *x, Py_ssize_t n), (x, n), {          \
    return cg_extreme_##S(x, n, 1);                                      \
})                                                                       \
CG_SIMD_FN(Py_ssize_t, cg_find_##S, (const T *x, T m, Py_ssize_t n), (x, m, n), { \
    const Py_ssize_t L = sizeof(VT) / sizeof(T);                         \
    VT v0, v1, v2, v3;                                                   \
    VI hit;                                                              \
    Py_ssize_t i = 0;                                                    \
    int k, any;                                                          \
    int nan = m != m;                                                    \
    for (; i + 4 * L <= n; i += 4 * L) {                                 \
        memcpy(&v0, x + i, sizeof(VT));                                  \
        memcpy(&v1, x + i + L, sizeof(VT));                              \
        memcpy(&v2, x + i + 2 * L, sizeof(VT));                          \
        memcpy(&v3, x + i + 3 * L, sizeof(VT));                          \
        if (nan)                                                         \
            hit = (v0 != v0) | (v1 != v1) | (v2 != v2) | (v3 != v3);     \
        else                                                             \
            hit = (v0 == m) | (v1 == m) | (v2 == m) | (v3 == m);         \
        any = 0;                                                         \
        for (k = 0; k < L; k++) any |= hit[k] != 0;                      \
        if (any) break;                                                  \
    }                                                                    \
    for (; i < n; i++)                                                   \
        if (nan ? x[i] != x[i] : x[i] == m) return i;                    \
    return 0;                                                            \
})                                                                       \
CG_SIMD_FN(double, cg_lanes_##S, (const T *x, const T *y, Py_ssize_t n), (x, y, n), { \
    double acc[16] = {0}, s;                                             \
    Py_ssize_t i = 0;                                                    \
    int k;                                                               \
    if (y == NULL) {                                                     \
        for (; i + 16 <= n; i += 16) {                                   \
            CG_PREFETCH(x + i, 16);                                          \
            for (k = 0; k < 16; k++) acc[k] += (double)x[i + k];         \
        }                                                                \
    } else {                                                             \
        for (; i + 16 <= n; i += 16) {                                   \
            CG_PREFETCH(x + i, 16);                                          \
            CG_PREFETCH(y + i, 16);                                          \
            for (k = 0; k < 16; k++)                                     \
                acc[k] += (double)x[i + k] * (double)y[i + k];           \
        }                                                                \
    }                                                                    \
    for (k = 0; k < 8; k++) acc[k] += acc[k + 8];                        \
    s = ((acc[0] + acc[1]) + (acc[2] + acc[3]))                          \
        + ((acc[4] + acc[5]) + (acc[6] + acc[7]));                       \
    for (; i < n; i++)                                                   \
        s += y == NULL ? (double)x[i] : (double)x[i] * (double)y[i];     \
    return s;                                                            \
})                                                                       \
static inline double cg_exp_sum_row_##S(const T *x, T shift, T *y, Py_ssize_t n) { \
    /* the eight lane sums in two double vectors: a double acc[8] was     \
       kept on the stack, each step a store and a reload on the sums'     \
       dependency chain (rows of 32 ran at 1.1 ns an element) */         \
    cg_v4d a0 = {0, 0, 0, 0}, a1 = {0, 0, 0, 0};                         \
    double s;                                                            \
    Py_ssize_t i = 0;                                                    \
    int k;                                                               \
    T e, ev[8];                                                          \
    VT v0, v1;                                                           \
    for (; i + 8 <= n; i += 8) {                                         \
        for (k = 0; k < 8; k++)                                          \
            ev[k] = EXP(x[i + k] - shift);                               \
        if (y != NULL)                                                   \
            memcpy(y + i, ev, sizeof(ev));                               \
        memcpy(&v0, ev, sizeof(VT));                                     \
        memcpy(&v1, ev + 4, sizeof(VT));                                 \
        a0 += __builtin_convertvector(v0, cg_v4d);                       \
        a1 += __builtin_convertvector(v1, cg_v4d);                       \
    }                                                                    \
    s = ((a0[0] + a0[1]) + (a0[2] + a0[3]))                              \
        + ((a1[0] + a1[1]) + (a1[2] + a1[3]));                           \
    for (; i < n; i++) {                                                 \
        e = EXP(x[i] - shift);                                           \
        if (y != NULL) y[i] = e;                                         \
        s += (double)e;                                                  \
    }                                                                    \
    return s;                                                            \
}                                                                        \
CG_SIMD_FN(double, cg_exp_sum_##S, (const T *x, T shift, T *y, Py_ssize_t n), (x, shift, y, n), { \
    return cg_exp_sum_row_##S(x, shift, y, n);                           \
})                                                                       \
CG_SIMD_FN(void, cg_softmax_rows_##S, (const T *x, const T *rowmax, T *y, Py_ssize_t rows, Py_ssize_t n), (x, rowmax, y, rows, n), { \
    Py_ssize_t r, i;                                                     \
    for (r = 0; r < rows; r++) {                                         \
        T m = rowmax != NULL ? rowmax[r] : cg_extreme_##S(x, n, 0);      \
        T a = (T)(1.0 / cg_exp_sum_row_##S(x, m, y, n));                 \
        for (i = 0; i < n; i++) y[i] = y[i] * a;                         \
        x += n;                                                          \
        y += n;                                                          \
    }                                                                    \
})                                                                       \
CG_SIMD_FN(void, cg_exp_axpy_##S, (const T *restrict x, T shift, T a, const T *restrict b, T *restrict y, Py_ssize_t n), (x, shift, a, b, y, n), { \
    Py_ssize_t i;                                                        \
    if (b == NULL)                                                       \
        for (i = 0; i < n; i++) y[i] = a * EXP(x[i] - shift);            \
    else                                                                 \
        for (i = 0; i < n; i++) y[i] = b[i] + a * EXP(x[i] - shift);     \
})                                                                       \
CG_SIMD_FN(void, cg_sub2_##S, (const T *x, T a, T b, T *y, Py_ssize_t n), (x, a, b, y, n), { \
    Py_ssize_t i;                                                        \
    for (i = 0; i < n; i++) y[i] = (x[i] - a) - b;                       \
})                                                                       \
CG_SIMD_FN(void, cg_mul_sub_##S, (const T *x, const T *g, T d, T *y, Py_ssize_t n), (x, g, d, y, n), { \
    Py_ssize_t i;                                                        \
    for (i = 0; i < n; i++) y[i] = x[i] * (g[i] - d);                    \
})                                                                       \
CG_SIMD_FN(void, cg_sub_mul_##S, (const T *x, T a, T c, T *y, Py_ssize_t n), (x, a, c, y, n), { \
    Py_ssize_t i;                                                        \
    for (i = 0; i < n; i++) y[i] = c * (x[i] - a);                       \
})                                                                       \
CG_SIMD_FN(double, cg_sqdev_##S, (const T *x, double mean, Py_ssize_t n), (x, mean, n), { \
    double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0}, s, d;                     \
    Py_ssize_t i = 0;                                                    \
    int k;                                                               \
    for (; i + 8 <= n; i += 8)                                           \
        for (k = 0; k < 8; k++) {                                        \
            d = (double)x[i + k] - mean;                                 \
            acc[k] += d * d;                                             \
        }                                                                \
    s = ((acc[0] + acc[1]) + (acc[2] + acc[3]))                          \
        + ((acc[4] + acc[5]) + (acc[6] + acc[7]));                       \
    for (; i < n; i++) {                                                 \
        d = (double)x[i] - mean;                                         \
        s += d * d;                                                      \
    }                                                                    \
    return s;                                                            \
})                                                                       \
CG_SIMD_FN(void, cg_softplus_##S, (const T *restrict x, T *restrict y, Py_ssize_t n), (x, y, n), { \
    Py_ssize_t i;                                                        \
    for (i = 0; i < n; i++) {                                            \
        T a = x[i] < 0 ? -x[i] : x[i];                                   \
        y[i] = LOG1P(EXP(-a));                                           \
    }                                                                    \
})                                                                       \
CG_SIMD_FN(void, cg_sigmoid_##S, (const T *restrict x, T *restrict y, Py_ssize_t n), (x, y, n), { \
    Py_ssize_t i;                                                        \
    for (i = 0; i < n; i++) {                                            \
        T a = x[i] < 0 ? -x[i] : x[i];                                   \
        T e = EXP(-a);                                                   \
        T top = x[i] >= 0 ? (T)1 : e;                                    \
        y[i] = top / (1 + e);                                            \
    }                                                                    \
})
CG_ROW_HELPERS(f, float, cg_v4f, cg_v4i, cg_expf_le0, cg_log1pf_01)
CG_ROW_HELPERS(d, double, cg_v4d, cg_v4l, cg_exp_le0, cg_log1p_01)

#endif
