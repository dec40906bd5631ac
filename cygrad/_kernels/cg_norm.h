/* The per-row loops of layer norm (norm.pyx's row norms with L = 1), float and
 * double, as CG_SIMD_FN helpers: norm.pyx is compiled for the baseline
 * (SSE2: 4 floats or 2 doubles a lane), and its layer norm ran at 2.06x
 * torch at (4096, 1024) (issue 18), its backward at 2.6 ns an element.
 * Statistics stay in double (16 independent accumulators, fixed order, so
 * a row's sums do not depend on the SIMD level beyond FMA contraction);
 * the output passes are real_t arithmetic.  w / b / dw / db may be NULL
 * (no affine parameter, or no gradient asked); outputs never alias inputs. */
#ifndef CG_NORM_H
#define CG_NORM_H

#include <stddef.h>
#include "cg_simd.h"

#define CG_NORM_ROWS(S, T)                                                     \
/* sum(p) in 16 double lanes added pairwise, for rows shorter than          \
   row_sum's 512-entry blocks (below those it adds serially: 64-wide rows     \
   spent a third of their layer norm in that chain of 64 adds) */            \
CG_SIMD_FN(double, cg_ln_sum_##S, (const T *p, ptrdiff_t n), (p, n), {        \
    double acc[16] = {0}, s;                                                   \
    ptrdiff_t i = 0;                                                           \
    int k;                                                                     \
    for (; i + 16 <= n; i += 16)                                               \
        for (k = 0; k < 16; k++) acc[k] += (double)p[i + k];                   \
    for (k = 0; k < 8; k++) acc[k] += acc[k + 8];                              \
    s = ((acc[0] + acc[1]) + (acc[2] + acc[3]))                                \
        + ((acc[4] + acc[5]) + (acc[6] + acc[7]));                             \
    for (; i < n; i++) s += p[i];                                              \
    return s;                                                                  \
})                                                                             \
/* One short row's whole backward (t = g w, or g without w): s1 = sum(t),    \
   s2 = sum(t (p - m)) sd = (sum(t p) - m s1) sd in 16 double lanes each,     \
   dw += g (p - m) sd, db += g, then o = g (sd w) + p u + v with the u, v of  \
   norm.pyx's row backward (rms: no mean term).  One call a row instead of    \
   five (t was a separate pass into scratch). */                              \
CG_SIMD_FN(void, cg_ln_bwd_row_##S, (const T *g, const T *p, ptrdiff_t n,     \
                                     const T *w, double m, double sd, int rms, \
                                     double *dw, double *db, T *o),            \
           (g, p, n, w, m, sd, rms, dw, db, o), {                             \
    double a[16] = {0}, b[16] = {0}, s1, s2, u, v;                             \
    ptrdiff_t i = 0;                                                           \
    int k;                                                                     \
    T t, ur, vr, sr = (T)sd;                                                   \
    for (; i + 16 <= n; i += 16)                                               \
        for (k = 0; k < 16; k++) {                                             \
            t = w != NULL ? g[i + k] * w[i + k] : g[i + k];                    \
            a[k] += (double)t;                                                 \
            b[k] += (double)t * p[i + k];                                      \
        }                                                                      \
    for (k = 0; k < 8; k++) {                                                  \
        a[k] += a[k + 8];                                                      \
        b[k] += b[k + 8];                                                      \
    }                                                                          \
    s1 = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));    \
    s2 = ((b[0] + b[1]) + (b[2] + b[3])) + ((b[4] + b[5]) + (b[6] + b[7]));    \
    for (; i < n; i++) {                                                       \
        t = w != NULL ? g[i] * w[i] : g[i];                                    \
        s1 += t;                                                               \
        s2 += (double)t * p[i];                                                \
    }                                                                          \
    s2 = (s2 - m * s1) * sd;                                                   \
    if (dw != NULL)                                                            \
        for (i = 0; i < n; i++) dw[i] += (double)g[i] * ((double)p[i] - m) * sd; \
    if (db != NULL)                                                            \
        for (i = 0; i < n; i++) db[i] += (double)g[i];                         \
    s1 = rms ? 0.0 : s1 / n;                                                   \
    s2 = s2 / n;                                                               \
    u = -sd * sd * s2;                                                         \
    v = -sd * s1 + sd * sd * s2 * m;                                           \
    ur = (T)u;                                                                 \
    vr = (T)v;                                                                 \
    if (w != NULL)                                                             \
        for (i = 0; i < n; i++) o[i] = g[i] * (sr * w[i]) + p[i] * ur + vr;    \
    else                                                                       \
        for (i = 0; i < n; i++) o[i] = g[i] * sr + p[i] * ur + vr;             \
})                                                                             \
/* sum((p - m)^2) */                                                           \
CG_SIMD_FN(double, cg_sqdev_##S, (const T *p, ptrdiff_t n, double m), (p, n, m), { \
    double acc[16] = {0}, s, d;                                                \
    ptrdiff_t i = 0;                                                           \
    int k;                                                                     \
    for (; i + 16 <= n; i += 16)                                               \
        for (k = 0; k < 16; k++) {                                             \
            d = (double)p[i + k] - m;                                          \
            acc[k] += d * d;                                                   \
        }                                                                      \
    for (k = 0; k < 8; k++) acc[k] += acc[k + 8];                              \
    s = ((acc[0] + acc[1]) + (acc[2] + acc[3]))                                \
        + ((acc[4] + acc[5]) + (acc[6] + acc[7]));                             \
    for (; i < n; i++) {                                                       \
        d = (double)p[i] - m;                                                  \
        s += d * d;                                                            \
    }                                                                          \
    return s;                                                                  \
})                                                                             \
/* q = (p - m) sd w + b */                                                     \
CG_SIMD_FN(void, cg_ln_out_##S, (const T *p, ptrdiff_t n, T m, T sd,           \
                                 const T *w, const T *b, T *q),                \
           (p, n, m, sd, w, b, q), {                                           \
    ptrdiff_t k;                                                               \
    if (w != NULL && b != NULL)                                                \
        for (k = 0; k < n; k++) q[k] = (p[k] - m) * sd * w[k] + b[k];          \
    else if (w != NULL)                                                        \
        for (k = 0; k < n; k++) q[k] = (p[k] - m) * sd * w[k];                 \
    else if (b != NULL)                                                        \
        for (k = 0; k < n; k++) q[k] = (p[k] - m) * sd + b[k];                 \
    else                                                                       \
        for (k = 0; k < n; k++) q[k] = (p[k] - m) * sd;                        \
})                                                                             \
/* t = g w */                                                                  \
CG_SIMD_FN(void, cg_ln_gw_##S, (const T *g, const T *w, ptrdiff_t n, T *t),    \
           (g, w, n, t), {                                                     \
    for (ptrdiff_t k = 0; k < n; k++) t[k] = g[k] * w[k];                      \
})                                                                             \
/* dw += g (p - m) sd, db += g, in double */                                   \
CG_SIMD_FN(void, cg_ln_dwdb_##S, (const T *g, const T *p, ptrdiff_t n, double m, \
                                  double sd, double *dw, double *db),          \
           (g, p, n, m, sd, dw, db), {                                         \
    ptrdiff_t k;                                                               \
    if (dw != NULL)                                                            \
        for (k = 0; k < n; k++) dw[k] += (double)g[k] * ((double)p[k] - m) * sd; \
    if (db != NULL)                                                            \
        for (k = 0; k < n; k++) db[k] += (double)g[k];                         \
})                                                                             \
/* o = g (a w) + p u + v  (w NULL: g a + p u + v) */                           \
CG_SIMD_FN(void, cg_ln_dx_##S, (const T *g, const T *p, ptrdiff_t n, T a,      \
                                const T *w, T u, T v, T *o),                   \
           (g, p, n, a, w, u, v, o), {                                         \
    ptrdiff_t k;                                                               \
    if (w != NULL)                                                             \
        for (k = 0; k < n; k++) o[k] = g[k] * (a * w[k]) + p[k] * u + v;       \
    else                                                                       \
        for (k = 0; k < n; k++) o[k] = g[k] * a + p[k] * u + v;                \
})

CG_NORM_ROWS(f, float)
CG_NORM_ROWS(d, double)

#endif
