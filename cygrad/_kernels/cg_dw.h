/* The per-plane loops of the depthwise convolution (conv.pyx), float and
 * double, as CG_SIMD_FN helpers: conv.pyx is compiled for the baseline
 * (SSE2), and these loops are all of a depthwise layer's arithmetic.  Also
 * im2col's block copy of a stride-1 "same" convolution (plain C: it only
 * moves data).
 *
 * Each reads (or, for the input gradient, writes) the input plane through a
 * zero-bordered copy `xp` of row pitch `pitch` (W + 2 pw): every kernel tap
 * is then an unclipped window, a stride-1 output row is whole vectors, and
 * no row loop branches on the padding.  (The clipped rows of the earlier
 * loops, 30-32 wide with a scalar tail, ran at a quarter of this speed.)
 *
 * Summation order is fixed (taps in order, the rows of a plane in order),
 * so a result depends on the SIMD level only through FMA contraction.
 * Outputs never alias inputs. */
#ifndef CG_DW_H
#define CG_DW_H

#include <stddef.h>
#include <string.h>
#include "cg_simd.h"

/* The weight gradient sums products in T, at most 16 a lane (CG_DW_ROWS
   rows of the strided loop; a block of CG_DW_BLOCK entries over
   CG_DW_LANES lanes in the stride-1 dot), then in double. */
#define CG_DW_ROWS 16
#define CG_DW_LANES 16 /* the pairwise sum of the lanes assumes 16 */
#define CG_DW_BLOCK 256

#define CG_DW_PLANES(S, T)                                                     \
/* Stride 1: y (oh, ow) = [add ? y : bias] + sum over taps (i, j) of           \
   wk[i, j] xp[r + i dh, q + j dw].  Computed on the wide grid of pitch        \
   `pitch` (the padded plane's): each tap row is then one flat loop over       \
   (oh - 1) pitch + ow entries instead of oh loops of ow (their setup cost     \
   more than their arithmetic at 32 columns); the pitch - ow extra columns     \
   of each row are discarded.  wide: scratch of oh * pitch entries. */        \
CG_SIMD_FN(void, cg_dw_fwd1_##S, (const T *xp, ptrdiff_t pitch, const T *wk,   \
                                  T bias, ptrdiff_t kh, ptrdiff_t kw,          \
                                  ptrdiff_t dh, ptrdiff_t dw, ptrdiff_t oh,    \
                                  ptrdiff_t ow, T *wide, T *y, int add),       \
           (xp, pitch, wk, bias, kh, kw, dh, dw, oh, ow, wide, y, add), {     \
    ptrdiff_t t, i, j, r, q, n = (oh - 1) * pitch + ow;                        \
    T *__restrict yw = wide;                                                   \
    for (t = 0; t < n; t++) yw[t] = add ? 0 : bias;                            \
    for (i = 0; i < kh; i++) {                                                 \
        const T *xr = xp + i * dh * pitch;                                     \
        const T *wr = wk + i * kw;                                             \
        if (kw == 3) {                                                         \
            /* the three taps of a row in one pass (same order) */             \
            const T *__restrict a = xr, *__restrict b = xr + dw;               \
            const T *__restrict c = xr + 2 * dw;                               \
            T w0 = wr[0], w1 = wr[1], w2 = wr[2];                              \
            for (t = 0; t < n; t++)                                            \
                yw[t] = ((yw[t] + w0 * a[t]) + w1 * b[t]) + w2 * c[t];         \
        } else {                                                               \
            for (j = 0; j < kw; j++) {                                         \
                const T *__restrict a = xr + j * dw;                           \
                T wv = wr[j];                                                  \
                for (t = 0; t < n; t++) yw[t] += wv * a[t];                    \
            }                                                                  \
        }                                                                      \
    }                                                                          \
    for (r = 0; r < oh; r++) {                                                 \
        T *__restrict yr = y + r * ow;                                         \
        const T *__restrict src = wide + r * pitch;                            \
        if (add)                                                               \
            for (q = 0; q < ow; q++) yr[q] += src[q];                          \
        else                                                                   \
            memcpy(yr, src, (size_t)ow * sizeof(T));                           \
    }                                                                          \
})                                                                             \
/* Any stride: y[r, q] = bias + sum over taps of wk[i, j] xp[r sh + i dh,      \
   q sw + j dw], row by row */                                                 \
CG_SIMD_FN(void, cg_dw_fwd_##S, (const T *xp, ptrdiff_t pitch, const T *wk,    \
                                 T bias, ptrdiff_t kh, ptrdiff_t kw,           \
                                 ptrdiff_t sh, ptrdiff_t sw, ptrdiff_t dh,     \
                                 ptrdiff_t dw, ptrdiff_t oh, ptrdiff_t ow,     \
                                 T *y),                                        \
           (xp, pitch, wk, bias, kh, kw, sh, sw, dh, dw, oh, ow, y), {        \
    ptrdiff_t r, i, j, q;                                                      \
    for (r = 0; r < oh; r++) {                                                 \
        T *__restrict yr = y + r * ow;                                         \
        for (q = 0; q < ow; q++) yr[q] = bias;                                 \
        for (i = 0; i < kh; i++) {                                             \
            const T *xr = xp + (r * sh + i * dh) * pitch;                      \
            for (j = 0; j < kw; j++) {                                         \
                const T *__restrict a = xr + j * dw;                           \
                T wv = wk[i * kw + j];                                         \
                for (q = 0; q < ow; q++) yr[q] += wv * a[q * sw];              \
            }                                                                  \
        }                                                                      \
    }                                                                          \
})                                                                             \
/* Any stride: xp[r sh + i dh, q sw + j dw] += wk[i, j] g[r, q], the adjoint   \
   in x (for stride 1 the caller runs cg_dw_fwd1 on the padded g with the      \
   flipped kernel instead) */                                                  \
CG_SIMD_FN(void, cg_dw_data_##S, (T *xp, ptrdiff_t pitch, const T *wk,         \
                                  ptrdiff_t kh, ptrdiff_t kw, ptrdiff_t sh,    \
                                  ptrdiff_t sw, ptrdiff_t dh, ptrdiff_t dw,    \
                                  ptrdiff_t oh, ptrdiff_t ow, const T *g),     \
           (xp, pitch, wk, kh, kw, sh, sw, dh, dw, oh, ow, g), {              \
    ptrdiff_t r, i, j, q;                                                      \
    for (r = 0; r < oh; r++) {                                                 \
        const T *__restrict gr = g + r * ow;                                   \
        for (i = 0; i < kh; i++) {                                             \
            T *xr = xp + (r * sh + i * dh) * pitch;                            \
            for (j = 0; j < kw; j++) {                                         \
                T *__restrict a = xr + j * dw;                                 \
                T wv = wk[i * kw + j];                                         \
                for (q = 0; q < ow; q++) a[q * sw] += wv * gr[q];              \
            }                                                                  \
        }                                                                      \
    }                                                                          \
})                                                                             \
/* Stride 1: gw[i, j] += sum over (r, q) of g[r, q] xp[r + i dh, q + j dw]; g  \
   is on the wide grid of pitch `pitch` with zeros in its extra columns, so    \
   each tap is one flat dot product: CG_DW_LANES partial sums in T over        \
   blocks of CG_DW_BLOCK entries, the blocks summed in double (fixed order) */ \
CG_SIMD_FN(void, cg_dw_weight1_##S, (const T *xp, ptrdiff_t pitch,             \
                                     const T *gwide, ptrdiff_t kh,             \
                                     ptrdiff_t kw, ptrdiff_t dh, ptrdiff_t dw, \
                                     ptrdiff_t oh, ptrdiff_t ow, double *gw),  \
           (xp, pitch, gwide, kh, kw, dh, dw, oh, ow, gw), {                  \
    ptrdiff_t i, j, t0, t, end, n = (oh - 1) * pitch + ow;                     \
    ptrdiff_t full = n - n % CG_DW_LANES;                                      \
    T lane[CG_DW_LANES];                                                       \
    double tot, half[8];                                                       \
    int k;                                                                     \
    for (i = 0; i < kh; i++)                                                   \
        for (j = 0; j < kw; j++) {                                             \
            const T *__restrict a = gwide;                                     \
            const T *__restrict b = xp + i * dh * pitch + j * dw;              \
            tot = 0.0;                                                         \
            for (t0 = 0; t0 < full; t0 += CG_DW_BLOCK) {                       \
                end = t0 + CG_DW_BLOCK < full ? t0 + CG_DW_BLOCK : full;       \
                for (k = 0; k < CG_DW_LANES; k++) lane[k] = 0;                 \
                for (t = t0; t < end; t += CG_DW_LANES)                        \
                    for (k = 0; k < CG_DW_LANES; k++)                          \
                        lane[k] += a[t + k] * b[t + k];                        \
                /* the lanes pairwise (a short dependency chain) */            \
                for (k = 0; k < 8; k++) half[k] = (double)lane[k] + lane[k + 8]; \
                for (k = 0; k < 4; k++) half[k] += half[k + 4];                \
                tot += (half[0] + half[2]) + (half[1] + half[3]);              \
            }                                                                  \
            for (t = full; t < n; t++) tot += (double)(a[t] * b[t]);           \
            gw[i * kw + j] += tot;                                             \
        }                                                                      \
})                                                                             \
/* Any stride: dacc[tap, q] += sum over r of g[r, q] xp[r sh + i dh,           \
   q sw + j dw], per tap and output column; acc is T scratch of kh * kw * ow   \
   entries, flushed into dacc every CG_DW_ROWS rows */                         \
CG_SIMD_FN(void, cg_dw_weight_##S, (const T *xp, ptrdiff_t pitch, const T *g,  \
                                    ptrdiff_t kh, ptrdiff_t kw, ptrdiff_t sh,  \
                                    ptrdiff_t sw, ptrdiff_t dh, ptrdiff_t dw,  \
                                    ptrdiff_t oh, ptrdiff_t ow, T *acc,        \
                                    double *dacc),                             \
           (xp, pitch, g, kh, kw, sh, sw, dh, dw, oh, ow, acc, dacc), {       \
    ptrdiff_t r0, r, i, j, q, n = kh * kw * ow;                                \
    for (r0 = 0; r0 < oh; r0 += CG_DW_ROWS) {                                  \
        memset(acc, 0, (size_t)n * sizeof(T));                                 \
        for (r = r0; r < oh && r < r0 + CG_DW_ROWS; r++) {                     \
            const T *__restrict gr = g + r * ow;                               \
            for (i = 0; i < kh; i++) {                                         \
                const T *xr = xp + (r * sh + i * dh) * pitch;                  \
                for (j = 0; j < kw; j++) {                                     \
                    T *__restrict a = acc + (i * kw + j) * ow;                 \
                    const T *__restrict b = xr + j * dw;                       \
                    for (q = 0; q < ow; q++) a[q] += gr[q] * b[q * sw];        \
                }                                                              \
            }                                                                  \
        }                                                                      \
        for (q = 0; q < n; q++) dacc[q] += (double)acc[q];                     \
    }                                                                          \
})

/* im2col's column block of one (channel, tap) from one (h, w) plane at
   stride 1 when the output rows are as wide as the input's (ow == w: a
   "same" convolution such as 3x3 with padding 1).  Output entry o w + q
   then reads the flat input entry o w + q + shift, shift = (row_tap - ph) w
   + off, so the block is one copy from its first valid entry to its last;
   the entries that wrapped into a neighbouring row (q outside [lo, hi)) and
   the rows outside the plane (o outside [o0, o1)) are zeroed after.  Row by
   row (a memcpy and up to two memsets per 32-float row) im2col took 107 us
   a 32-channel 32x32 sample on AMD Zen 2, this 47 us.  The copy goes in
   32-byte moves: glibc's memcpy moves 2 KB and more with `rep movsb`, slower
   here (53 us), and GCC turns an element loop back into that call.  The copy
   reads inside the plane only: its first source entry is (o0 + row_tap - ph)
   w + lo + off >= 0, its last (o1 - 1 + row_tap - ph) w + hi - 1 + off
   <= h w - 1.  src and dst do not overlap. */
#define CG_IM2COL_BLOCK(S, T)                                                  \
static inline void cg_im2col_block_##S(const T *src, ptrdiff_t h, ptrdiff_t w, \
                                       ptrdiff_t oh, ptrdiff_t ph,             \
                                       ptrdiff_t row_tap, ptrdiff_t off,       \
                                       ptrdiff_t lo, ptrdiff_t hi, T *dst) {   \
    ptrdiff_t o0 = ph - row_tap, o1 = h + ph - row_tap, o, q, a, b;            \
    const ptrdiff_t step = 32 / (ptrdiff_t)sizeof(T);                          \
    const T *s;                                                                \
    if (o0 < 0) o0 = 0;                                                        \
    if (o1 > oh) o1 = oh;                                                      \
    if (o1 <= o0 || hi <= lo) {                                                \
        memset(dst, 0, (size_t)(oh * w) * sizeof(T));                          \
        return;                                                                \
    }                                                                          \
    if (o0 > 0) memset(dst, 0, (size_t)(o0 * w) * sizeof(T));                  \
    a = o0 * w + lo;                                                           \
    b = (o1 - 1) * w + hi;                                                     \
    s = src + (row_tap - ph) * w + off;                                        \
    for (q = a; q + step <= b; q += step) __builtin_memcpy(dst + q, s + q, 32); \
    for (; q < b; q++) dst[q] = s[q];                                          \
    for (q = 0; q < lo; q++)                                                   \
        for (o = o0; o < o1; o++) dst[o * w + q] = (T)0;                       \
    for (q = hi; q < w; q++)                                                   \
        for (o = o0; o < o1; o++) dst[o * w + q] = (T)0;                       \
    if (o1 < oh) memset(dst + o1 * w, 0, (size_t)((oh - o1) * w) * sizeof(T)); \
}

/* The other im2col blocks (a stride, or ow != w): row by row, the entries
   [lo, hi) of each row gathered at stride sw from input row o sh - ph +
   row_tap (rows outside the plane zero), the rest zeroed.  In C rather than
   conv.pyx's row loop of memcpy/memset calls: a stride-2 block of 16-wide
   rows (ConvTranspose2d(32, 16, 4, stride=2) backward) spent more in the
   calls than in the copying. */
#define CG_IM2COL_ROWS(S, T)                                                   \
static inline void cg_im2col_rows_##S(const T *src, ptrdiff_t h, ptrdiff_t w,  \
                                      ptrdiff_t oh, ptrdiff_t ow,              \
                                      ptrdiff_t sh, ptrdiff_t ph,              \
                                      ptrdiff_t row_tap, ptrdiff_t off,        \
                                      ptrdiff_t sw, ptrdiff_t lo,              \
                                      ptrdiff_t hi, T *dst) {                  \
    ptrdiff_t o, q, ih;                                                        \
    for (o = 0; o < oh; o++, dst += ow) {                                      \
        const T *r;                                                            \
        ih = o * sh - ph + row_tap;                                            \
        if (ih < 0 || ih >= h || hi <= lo) {                                   \
            memset(dst, 0, (size_t)ow * sizeof(T));                            \
            continue;                                                          \
        }                                                                      \
        r = src + ih * w;                                                      \
        for (q = 0; q < lo; q++) dst[q] = (T)0;                                \
        if (sw == 1)                                                           \
            for (q = lo; q < hi; q++) dst[q] = r[q + off];                     \
        else if (sw == 2)                                                      \
            for (q = lo; q < hi; q++) dst[q] = r[2 * q + off];                 \
        else                                                                   \
            for (q = lo; q < hi; q++) dst[q] = r[q * sw + off];                \
        for (q = hi; q < ow; q++) dst[q] = (T)0;                               \
    }                                                                          \
}

CG_IM2COL_BLOCK(f32, float)
CG_IM2COL_BLOCK(f64, double)
CG_IM2COL_ROWS(f32, float)
CG_IM2COL_ROWS(f64, double)

CG_DW_PLANES(f32, float)
CG_DW_PLANES(f64, double)

#endif
