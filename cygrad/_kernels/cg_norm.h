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

#include <math.h>
#include <stddef.h>
#include "cg_simd.h"

/* rows of cg_ln_fwd_rows / cg_ln_bwd_rows a pass */
#define CG_LN_CHUNK 8

/* out = the sum over q_ < n of E (an expression in the index q_), in 16
   double lanes added pairwise, then the tail */
#define CG_LN_SUM16(out, n, E)                                                 \
    do {                                                                       \
        double a_[16] = {0};                                                   \
        ptrdiff_t i_ = 0, q_;                                                  \
        int k_;                                                                \
        for (; i_ + 16 <= (n); i_ += 16)                                       \
            for (k_ = 0; k_ < 16; k_++) {                                      \
                q_ = i_ + k_;                                                  \
                a_[k_] += (E);                                                 \
            }                                                                  \
        for (k_ = 0; k_ < 8; k_++) a_[k_] += a_[k_ + 8];                       \
        (out) = ((a_[0] + a_[1]) + (a_[2] + a_[3]))                            \
                + ((a_[4] + a_[5]) + (a_[6] + a_[7]));                         \
        for (q_ = i_; q_ < (n); q_++) (out) += (E);                            \
    } while (0)

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
/* Layer norm over r short rows of n (L = 1, 0 < n < 512), the weight and    \
   bias of row i at (i % groups) n, CG_LN_CHUNK rows a pass: all their means,  \
   then all their rstds, then their outputs.  A row's statistics are a chain   \
   of dependent steps (lane sums, a division, sqrt); row by row those chains   \
   ran one after another, while a pass over a chunk of rows has independent    \
   iterations that the CPU overlaps.  Sums in 16 double lanes, pairwise. */    \
CG_SIMD_FN(void, cg_ln_fwd_rows_##S, (const T *x, ptrdiff_t r, ptrdiff_t n,    \
                                      ptrdiff_t groups, double eps, int rms,   \
                                      const T *w, const T *b, T *y,            \
                                      double *mean, double *rstd),             \
           (x, r, n, groups, eps, rms, w, b, y, mean, rstd), {                \
    ptrdiff_t i0, i1, i, k;                                                    \
    double s, m;                                                               \
    for (i0 = 0; i0 < r; i0 += CG_LN_CHUNK) {                                  \
        i1 = i0 + CG_LN_CHUNK < r ? i0 + CG_LN_CHUNK : r;                      \
        for (i = i0; i < i1; i++) {                                            \
            const T *p = x + i * n;                                            \
            if (rms) {                                                         \
                mean[i] = 0.0;                                                 \
                continue;                                                      \
            }                                                                  \
            CG_LN_SUM16(s, n, (double)p[q_]);                                  \
            mean[i] = s / n;                                                   \
        }                                                                      \
        for (i = i0; i < i1; i++) {                                            \
            const T *p = x + i * n;                                            \
            m = mean[i];                                                       \
            CG_LN_SUM16(s, n, ((double)p[q_] - m) * ((double)p[q_] - m));      \
            rstd[i] = 1.0 / sqrt(s / n + eps);                                 \
        }                                                                      \
        for (i = i0; i < i1; i++) {                                            \
            const T *p = x + i * n;                                            \
            const T *wr = w != NULL ? w + (i % groups) * n : NULL;             \
            const T *br = b != NULL ? b + (i % groups) * n : NULL;             \
            T *q = y + i * n, mr = (T)mean[i], sr = (T)rstd[i];                \
            if (wr != NULL && br != NULL)                                      \
                for (k = 0; k < n; k++) q[k] = (p[k] - mr) * sr * wr[k] + br[k]; \
            else if (wr != NULL)                                               \
                for (k = 0; k < n; k++) q[k] = (p[k] - mr) * sr * wr[k];       \
            else if (br != NULL)                                               \
                for (k = 0; k < n; k++) q[k] = (p[k] - mr) * sr + br[k];       \
            else                                                               \
                for (k = 0; k < n; k++) q[k] = (p[k] - mr) * sr;               \
        }                                                                      \
    }                                                                          \
})                                                                             \
/* The backward of cg_ln_fwd_rows (same rows, chunks and sums): per row        \
   t = g w (or g), s1 = sum(t), s2 = (sum(t p) - m s1) sd for all the chunk's  \
   rows, then dw += g (p - m) sd, db += g and o = g (sd w) + p u + v with the  \
   u, v of norm.pyx's row backward (rms: no mean term) */                      \
CG_SIMD_FN(void, cg_ln_bwd_rows_##S, (const T *g, const T *x, ptrdiff_t r,     \
                                      ptrdiff_t n, ptrdiff_t groups,           \
                                      const T *w, int rms, const double *mean, \
                                      const double *rstd, double *dw,          \
                                      double *db, T *dx),                      \
           (g, x, r, n, groups, w, rms, mean, rstd, dw, db, dx), {            \
    ptrdiff_t i0, i1, i, k;                                                    \
    double s1, s2, m, sd, u, v, t1[CG_LN_CHUNK], t2[CG_LN_CHUNK];              \
    for (i0 = 0; i0 < r; i0 += CG_LN_CHUNK) {                                  \
        i1 = i0 + CG_LN_CHUNK < r ? i0 + CG_LN_CHUNK : r;                      \
        for (i = i0; i < i1; i++) {                                            \
            const T *p = x + i * n, *q = g + i * n;                            \
            const T *wr = w != NULL ? w + (i % groups) * n : NULL;             \
            if (wr != NULL) {                                                  \
                CG_LN_SUM16(s1, n, (double)(q[q_] * wr[q_]));                  \
                CG_LN_SUM16(s2, n, (double)(q[q_] * wr[q_]) * p[q_]);          \
            } else {                                                           \
                CG_LN_SUM16(s1, n, (double)q[q_]);                             \
                CG_LN_SUM16(s2, n, (double)q[q_] * p[q_]);                     \
            }                                                                  \
            t1[i - i0] = s1;                                                   \
            t2[i - i0] = s2;                                                   \
        }                                                                      \
        for (i = i0; i < i1; i++) {                                            \
            const T *p = x + i * n, *q = g + i * n;                            \
            const T *wr = w != NULL ? w + (i % groups) * n : NULL;             \
            double *dwr = dw != NULL ? dw + (i % groups) * n : NULL;           \
            double *dbr = db != NULL ? db + (i % groups) * n : NULL;           \
            T *o = dx + i * n, sr, ur, vr;                                     \
            m = mean[i];                                                       \
            sd = rstd[i];                                                      \
            s1 = t1[i - i0];                                                   \
            s2 = (t2[i - i0] - m * s1) * sd;                                   \
            /* dw and db in one pass: g converted once (the two loops took  \
               a tenth of the backward more at 64 columns) */                 \
            if (dwr != NULL && dbr != NULL)                                    \
                for (k = 0; k < n; k++) {                                      \
                    double qk = (double)q[k];                                  \
                    dwr[k] += qk * ((double)p[k] - m) * sd;                    \
                    dbr[k] += qk;                                              \
                }                                                              \
            else if (dwr != NULL)                                              \
                for (k = 0; k < n; k++)                                        \
                    dwr[k] += (double)q[k] * ((double)p[k] - m) * sd;          \
            else if (dbr != NULL)                                              \
                for (k = 0; k < n; k++) dbr[k] += (double)q[k];                \
            s1 = rms ? 0.0 : s1 / n;                                           \
            s2 = s2 / n;                                                       \
            u = -sd * sd * s2;                                                 \
            v = -sd * s1 + sd * sd * s2 * m;                                   \
            sr = (T)sd;                                                        \
            ur = (T)u;                                                         \
            vr = (T)v;                                                         \
            if (wr != NULL)                                                    \
                for (k = 0; k < n; k++) o[k] = q[k] * (sr * wr[k]) + p[k] * ur + vr; \
            else                                                               \
                for (k = 0; k < n; k++) o[k] = q[k] * sr + p[k] * ur + vr;     \
        }                                                                      \
    }                                                                          \
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
    if (dw != NULL && db != NULL)                                              \
        for (k = 0; k < n; k++) {                                              \
            double gk = (double)g[k];                                          \
            dw[k] += gk * ((double)p[k] - m) * sd;                             \
            db[k] += gk;                                                       \
        }                                                                      \
    else if (dw != NULL)                                                       \
        for (k = 0; k < n; k++) dw[k] += (double)g[k] * ((double)p[k] - m) * sd; \
    else if (db != NULL)                                                       \
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
