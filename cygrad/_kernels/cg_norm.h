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

/* 4 doubles (GCC/clang vector extensions): the row sums' lanes live in
   registers as four of these.  Plain `double a[16]` lanes (an earlier
   version) were zeroed with rep stos and spilled every iteration. */
typedef double cg_ln_v4d __attribute__((vector_size(32)));

/* The 4 values of the local vector type cg_ln_vT (4 of the row's T) at p,
   as they are, and any 4-vector v converted to double (macros: a function
   returning a 32-byte vector warns, -Wpsabi, in the baseline copy; and GCC
   12 lowers __builtin_convertvector from 4 floats to two 2-lane
   conversions, where this constructor is one vcvtps2pd). */
#define CG_LN_LDT(p) __extension__({                                          \
        cg_ln_vT t_;                                                          \
        memcpy(&t_, (p), sizeof t_);                                          \
        t_;                                                                   \
    })
#define CG_LN_CVT(v) __extension__({                                          \
        cg_ln_vT c_ = (v);                                                    \
        (cg_ln_v4d){c_[0], c_[1], c_[2], c_[3]};                              \
    })
#define CG_LN_LD(p) CG_LN_CVT(CG_LN_LDT(p))

/* out = the sum over j < n of E, where VE(j) is E for elements j..j+3 as a
   cg_ln_v4d and SE(j) for element j alone: 16 double lanes (lane k adds
   elements k, k + 16, ...), lanes k and k + 8 added, then the 8 pairwise,
   then the tail in order */
#define CG_LN_SUM16(out, n, VE, SE)                                           \
    do {                                                                      \
        cg_ln_v4d a0_ = {0}, a1_ = {0}, a2_ = {0}, a3_ = {0};                 \
        ptrdiff_t j_ = 0;                                                     \
        for (; j_ + 16 <= (n); j_ += 16) {                                    \
            a0_ += VE(j_);                                                    \
            a1_ += VE(j_ + 4);                                                \
            a2_ += VE(j_ + 8);                                                \
            a3_ += VE(j_ + 12);                                               \
        }                                                                     \
        CG_LN_TOTAL(out, a0_, a1_, a2_, a3_);                                 \
        for (; j_ < (n); j_++) (out) += SE(j_);                               \
    } while (0)

/* out = the total of 16 lanes held in a0..a3 (lanes 0-3, ..., 12-15), in
   CG_LN_SUM16's order */
#define CG_LN_TOTAL(out, a0, a1, a2, a3)                                      \
    do {                                                                      \
        cg_ln_v4d l_ = (a0) + (a2), h_ = (a1) + (a3);                         \
        (out) = ((l_[0] + l_[1]) + (l_[2] + l_[3]))                           \
                + ((h_[0] + h_[1]) + (h_[2] + h_[3]));                        \
    } while (0)

/* the sums' terms (p, m, q, wr: the row, its mean, its gradient and its
   weight, locals where they are used) */
#define CG_LN_VX(j) CG_LN_LD(p + (j))
#define CG_LN_SX(j) ((double)p[j])
#define CG_LN_VDEV(j) __extension__({                                         \
        cg_ln_v4d d_ = CG_LN_LD(p + (j)) - m;                                 \
        d_ * d_;                                                              \
    })
#define CG_LN_SDEV(j) (((double)p[j] - m) * ((double)p[j] - m))
/* the backward's two sums at elements j..j+3: t = g w (or g), s1 += t and
   s2 += t p */
#define CG_LN_GSUMS(j, S1, S2)                                                \
    do {                                                                      \
        cg_ln_v4d t_ = wr != NULL                                             \
            ? CG_LN_CVT(CG_LN_LDT(q + (j)) * CG_LN_LDT(wr + (j)))             \
            : CG_LN_LD(q + (j));                                              \
        (S1) += t_;                                                           \
        (S2) += t_ * CG_LN_LD(p + (j));                                       \
    } while (0)

/* DW[k] += the sum over rows I0..I1-1 of g (x - mean) rstd, and DB[k] += the
   sum of g (either NULL: not wanted), in double: four columns at a time,
   the rows added in registers, then one update of DW and DB (per row, the
   loads and stores of both arrays cost a fifth of the backward at 64
   columns).  The rows must share DW's and DB's channels. */
#define CG_LN_DWDB(G, X, I0, I1, N, MEAN, RSTD, DW, DB)                        \
    do {                                                                      \
        ptrdiff_t col_, row_;                                                 \
        for (col_ = 0; col_ + 4 <= (N); col_ += 4) {                          \
            cg_ln_v4d aw_ = {0}, ab_ = {0};                                   \
            for (row_ = (I0); row_ < (I1); row_++) {                          \
                const __typeof__(*(G)) *gr_ = (G) + row_ * (N) + col_;         \
                const __typeof__(*(X)) *xr_ = (X) + row_ * (N) + col_;         \
                cg_ln_v4d g4_ = CG_LN_LD(gr_);                                \
                aw_ += g4_ * ((CG_LN_LD(xr_) - (MEAN)[row_]) * (RSTD)[row_]);  \
                ab_ += g4_;                                                   \
            }                                                                 \
            for (row_ = 0; row_ < 4; row_++) {                                \
                if ((DW) != NULL) (DW)[col_ + row_] += aw_[row_];             \
                if ((DB) != NULL) (DB)[col_ + row_] += ab_[row_];             \
            }                                                                 \
        }                                                                     \
        for (; col_ < (N); col_++)                                            \
            for (row_ = (I0); row_ < (I1); row_++) {                          \
                double g1_ = (double)(G)[row_ * (N) + col_];                  \
                double x1_ = (double)(X)[row_ * (N) + col_];                  \
                if ((DW) != NULL)                                             \
                    (DW)[col_] += g1_ * ((x1_ - (MEAN)[row_]) * (RSTD)[row_]); \
                if ((DB) != NULL) (DB)[col_] += g1_;                          \
            }                                                                 \
    } while (0)

/* Q = (P - M) SD W + B over N elements (W, B may be NULL): the output of      \
   a row, written once for cg_ln_fwd_rows and cg_ln_out */                     \
#define CG_LN_OUT(P, N, M, SD, W, B, Q)                                        \
    do {                                                                       \
        ptrdiff_t k_;                                                          \
        if ((W) != NULL && (B) != NULL)                                        \
            for (k_ = 0; k_ < (N); k_++)                                       \
                (Q)[k_] = ((P)[k_] - (M)) * (SD) * (W)[k_] + (B)[k_];          \
        else if ((W) != NULL)                                                  \
            for (k_ = 0; k_ < (N); k_++) (Q)[k_] = ((P)[k_] - (M)) * (SD) * (W)[k_]; \
        else if ((B) != NULL)                                                  \
            for (k_ = 0; k_ < (N); k_++) (Q)[k_] = ((P)[k_] - (M)) * (SD) + (B)[k_]; \
        else                                                                   \
            for (k_ = 0; k_ < (N); k_++) (Q)[k_] = ((P)[k_] - (M)) * (SD);     \
    } while (0)                                                                \
/* O = G (A W) + P U + V (W NULL: G A + P U + V): the input gradient of a
   row, for cg_ln_bwd_rows and cg_ln_dx */
#define CG_LN_DX(G, P, N, A, W, U, V, O)                                       \
    do {                                                                       \
        ptrdiff_t k_;                                                          \
        if ((W) != NULL)                                                       \
            for (k_ = 0; k_ < (N); k_++)                                       \
                (O)[k_] = (G)[k_] * ((A) * (W)[k_]) + (P)[k_] * (U) + (V);     \
        else                                                                   \
            for (k_ = 0; k_ < (N); k_++) (O)[k_] = (G)[k_] * (A) + (P)[k_] * (U) + (V); \
    } while (0)                                                                \

#define CG_NORM_ROWS(S, T)                                                     \
/* sum(p) in 16 double lanes added pairwise, for rows shorter than          \
   row_sum's 512-entry blocks (below those it adds serially: 64-wide rows     \
   spent a third of their layer norm in that chain of 64 adds) */            \
CG_SIMD_FN(double, cg_ln_sum_##S, (const T *p, ptrdiff_t n), (p, n), {         \
    typedef T cg_ln_vT __attribute__((vector_size(4 * sizeof(T))));            \
    double s;                                                                  \
    CG_LN_SUM16(s, n, CG_LN_VX, CG_LN_SX);                                     \
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
    typedef T cg_ln_vT __attribute__((vector_size(4 * sizeof(T))));           \
    ptrdiff_t i0, i1, i;                                                       \
    double s, m;                                                               \
    for (i0 = 0; i0 < r; i0 += CG_LN_CHUNK) {                                  \
        i1 = i0 + CG_LN_CHUNK < r ? i0 + CG_LN_CHUNK : r;                      \
        for (i = i0; i < i1; i++) {                                            \
            const T *p = x + i * n;                                            \
            if (rms) {                                                         \
                mean[i] = 0.0;                                                 \
                continue;                                                      \
            }                                                                  \
            CG_LN_SUM16(s, n, CG_LN_VX, CG_LN_SX);                             \
            mean[i] = s;                                                       \
        }                                                                      \
        if (!rms)                                                              \
            for (i = i0; i < i1; i++) mean[i] /= n;  /* vector divisions */    \
        for (i = i0; i < i1; i++) {                                            \
            const T *p = x + i * n;                                            \
            m = mean[i];                                                       \
            CG_LN_SUM16(s, n, CG_LN_VDEV, CG_LN_SDEV);                         \
            rstd[i] = s;                                                       \
        }                                                                      \
        for (i = i0; i < i1; i++) rstd[i] = 1.0 / sqrt(rstd[i] / n + eps);    \
        for (i = i0; i < i1; i++) {                                            \
            const T *p = x + i * n;                                            \
            const T *wr = w != NULL ? w + (i % groups) * n : NULL;             \
            const T *br = b != NULL ? b + (i % groups) * n : NULL;             \
            T *q = y + i * n, mr = (T)mean[i], sr = (T)rstd[i];                \
            CG_LN_OUT(p, n, mr, sr, wr, br, q);                                \
        }                                                                      \
    }                                                                          \
})                                                                             \
/* The backward of cg_ln_fwd_rows (same rows and chunks): per row t = g w      \
   (or g), s1 = sum(t) and s2 = (sum(t p) - m s1) sd in one pass of 16         \
   double lanes each, for all the chunk's rows; then per row                   \
   o = g (sd w) + p u + v with the u, v of norm.pyx's row backward (rms: no    \
   mean term), and g xhat and g added into per-chunk sums in T (8 rows at      \
   most), which go into the double dw and db once a chunk: adding every row    \
   into dw and db in double (two conversions, a load and a store per element   \
   and array) took a third of the backward at 64 columns. */                   \
CG_SIMD_FN(void, cg_ln_bwd_rows_##S, (const T *g, const T *x, ptrdiff_t r,     \
                                      ptrdiff_t n, ptrdiff_t groups,           \
                                      const T *w, int rms, const double *mean, \
                                      const double *rstd, double *dw,          \
                                      double *db, T *dx),                      \
           (g, x, r, n, groups, w, rms, mean, rstd, dw, db, dx), {             \
    typedef T cg_ln_vT __attribute__((vector_size(4 * sizeof(T))));           \
    ptrdiff_t i0, i1, i, k, j;                                                 \
    double s1, s2, m, sd, u, v, t1[CG_LN_CHUNK], t2[CG_LN_CHUNK];              \
    /* a chunk's dw/db sums share one channel offset: one row a chunk when    \
       the rows cycle through groups */                                        \
    ptrdiff_t chunk = groups == 1 ? CG_LN_CHUNK : 1;                           \
    for (i0 = 0; i0 < r; i0 += chunk) {                                        \
        i1 = i0 + chunk < r ? i0 + chunk : r;                                  \
        for (i = i0; i < i1; i++) {                                            \
            const T *p = x + i * n, *q = g + i * n;                            \
            const T *wr = w != NULL ? w + (i % groups) * n : NULL;             \
            cg_ln_v4d a10 = {0}, a11 = {0}, a12 = {0}, a13 = {0};              \
            cg_ln_v4d a20 = {0}, a21 = {0}, a22 = {0}, a23 = {0};              \
            for (j = 0; j + 16 <= n; j += 16) {                                \
                CG_LN_GSUMS(j, a10, a20);                                      \
                CG_LN_GSUMS(j + 4, a11, a21);                                  \
                CG_LN_GSUMS(j + 8, a12, a22);                                  \
                CG_LN_GSUMS(j + 12, a13, a23);                                 \
            }                                                                  \
            CG_LN_TOTAL(s1, a10, a11, a12, a13);                               \
            CG_LN_TOTAL(s2, a20, a21, a22, a23);                               \
            for (k = j; k < n; k++) {                                          \
                double tk = wr != NULL ? (double)(q[k] * wr[k]) : (double)q[k]; \
                s1 += tk;                                                      \
                s2 += tk * p[k];                                               \
            }                                                                  \
            t1[i - i0] = s1;                                                   \
            t2[i - i0] = s2;                                                   \
        }                                                                      \
        for (i = i0; i < i1; i++) {                                            \
            const T *p = x + i * n, *q = g + i * n;                            \
            const T *wr = w != NULL ? w + (i % groups) * n : NULL;             \
            T *o = dx + i * n, sr, ur, vr;                                     \
            m = mean[i];                                                       \
            sd = rstd[i];                                                      \
            s1 = t1[i - i0];                                                   \
            s2 = (t2[i - i0] - m * s1) * sd;                                   \
            s1 = rms ? 0.0 : s1 / n;                                           \
            s2 = s2 / n;                                                       \
            u = -sd * sd * s2;                                                 \
            v = -sd * s1 + sd * sd * s2 * m;                                   \
            sr = (T)sd;                                                        \
            ur = (T)u;                                                         \
            vr = (T)v;                                                         \
            CG_LN_DX(q, p, n, sr, wr, ur, vr, o);                              \
        }                                                                      \
        if (dw != NULL || db != NULL)                                          \
            CG_LN_DWDB(g, x, i0, i1, n, mean, rstd,                            \
                       dw != NULL ? dw + (i0 % groups) * n : NULL,             \
                       db != NULL ? db + (i0 % groups) * n : NULL);            \
    }                                                                          \
})                                                                             \
/* sum((p - m)^2) */                                                           \
CG_SIMD_FN(double, cg_sqdev_##S, (const T *p, ptrdiff_t n, double m), (p, n, m), { \
    typedef T cg_ln_vT __attribute__((vector_size(4 * sizeof(T))));            \
    double s;                                                                  \
    CG_LN_SUM16(s, n, CG_LN_VDEV, CG_LN_SDEV);                                 \
    return s;                                                                  \
})                                                                             \
/* q = (p - m) sd w + b */                                                     \
CG_SIMD_FN(void, cg_ln_out_##S, (const T *p, ptrdiff_t n, T m, T sd,           \
                                 const T *w, const T *b, T *q),                \
           (p, n, m, sd, w, b, q), {                                           \
    CG_LN_OUT(p, n, m, sd, w, b, q);                                           \
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
    typedef T cg_ln_vT __attribute__((vector_size(4 * sizeof(T))));           \
    CG_LN_DWDB(g, p, 0, 1, n, &m, &sd, dw, db);                                \
})                                                                             \
/* o = g (a w) + p u + v  (w NULL: g a + p u + v) */                           \
CG_SIMD_FN(void, cg_ln_dx_##S, (const T *g, const T *p, ptrdiff_t n, T a,      \
                                const T *w, T u, T v, T *o),                   \
           (g, p, n, a, w, u, v, o), {                                         \
    CG_LN_DX(g, p, n, a, w, u, v, o);                                          \
})

CG_NORM_ROWS(f, float)
CG_NORM_ROWS(d, double)

#endif
