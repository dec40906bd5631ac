/* float32 forward gate arithmetic of the recurrent cells (rnn.pyx).
 *
 * The forward kernels are dominated by transcendentals (an LSTM unit has
 * three sigmoids and two tanhs).  libm's expf/tanhf are calls the compiler
 * cannot vectorize: an LSTM step at batch 16, hidden 128 cost 136 us, 3x
 * the step's BLAS product; cg_math.h's double-precision functions, 4 lanes
 * wide, still cost 25 us.  Here sigmoid and tanh are built on
 * cg_expf_le0 (float arithmetic, 8 lanes under AVX2, CG_SIMD_FN) of a
 * non-positive argument, so they never overflow and need no fallback:
 *
 *   sigmoid(x) = s or e s   (x >= 0 or x < 0),  e = exp(-|x|), s = 1 / (1 + e)
 *   tanh(x)    = sign(x) (1 - e) / (1 + e),     e = exp(-2|x|)
 *
 * and tanh's Taylor series below |x| = 1/16, where 1 - e would cancel.
 * Accuracy: a few float32 ulps (relative error < 1e-6), NaN propagates;
 * below exp's normal range e is 0 (sigmoid(-100) = 0, not a subnormal).
 * Branch-free (cg_pick_f), so each gate loop vectorizes.
 *
 * Pointers are restrict (rnn.pyx's contract: only c / dc are read and
 * written in place, no output aliases an input).  Without it GCC gave up
 * on the run-time overlap checks of the LSTM cell-update loop (seven
 * pointers) and ran it scalar: 29 us of a 16 x 128 step's 34 us.
 */
#ifndef CG_RNN_H
#define CG_RNN_H

#include <math.h>
#include <stddef.h>
#include <string.h>
#include "cg_math.h"
#include "cg_simd.h"

CG_INLINE float cg_rnn_sigmoid(float x) {
    float e = cg_expf_le0(-fabsf(x));
    float s = 1.0f / (1.0f + e);
    return cg_pick_f(s, e * s, x >= 0.0f);
}

CG_INLINE float cg_rnn_tanh(float x) {
    float ax = fabsf(x);
    float e = cg_expf_le0(-2.0f * ax);
    float big = (1.0f - e) / (1.0f + e);
    float z = ax * ax;
    float small = ax * (1.0f + z * (-1.0f / 3.0f + z * (2.0f / 15.0f
                  + z * (-17.0f / 315.0f))));
    return copysignf(cg_pick_f(small, big, ax < 0.0625f), x);
}

/* LSTM, gates [i | f | g | o]: c' = f c + i g, h = o tanh(c'). */
CG_SIMD_FN(void, cg_lstm_fwd_f, (const float* restrict gi,
                                    const float* restrict gh, float* restrict c,
                                    float* restrict gates, float* restrict cprev,
                                    float* restrict tc, float* restrict h,
                                    ptrdiff_t bs, ptrdiff_t hid), (gi, gh, c, gates, cprev, tc, h, bs, hid), {
    for (ptrdiff_t b = 0; b < bs; b++) {
        const float* x = gi + b * 4 * hid;
        const float* y = gh + b * 4 * hid;
        float* g = gates + b * 4 * hid;
        ptrdiff_t s = b * hid, j;
        for (j = 0; j < 2 * hid; j++)
            g[j] = cg_rnn_sigmoid(x[j] + y[j]);
        for (j = 2 * hid; j < 3 * hid; j++)
            g[j] = cg_rnn_tanh(x[j] + y[j]);
        for (j = 3 * hid; j < 4 * hid; j++)
            g[j] = cg_rnn_sigmoid(x[j] + y[j]);
        for (j = 0; j < hid; j++) {
            float cp = c[s + j];
            float cn = g[hid + j] * cp + g[j] * g[2 * hid + j];
            float t = cg_rnn_tanh(cn);
            cprev[s + j] = cp;
            c[s + j] = cn;
            tc[s + j] = t;
            h[s + j] = g[3 * hid + j] * t;
        }
    }
})

/* out[r] = w[r] . x (r < 4, rows ld apart) over n floats, in 8-float
   vector partial sums (GCC vector extensions: plain loops stayed scalar or
   spilled).  Four rows share the loads of x and give four independent FMA
   chains.  The summation order differs from BLAS's: results agree to float
   rounding, not bit for bit. */
typedef float cg_v8f __attribute__((vector_size(32)));

/* macros, not functions: a function passing an AVX vector by value warns
   (-Wpsabi) in the baseline copy */
#define CG_V8F_LOAD(v, p) memcpy(&(v), (p), sizeof(cg_v8f))
#define CG_V8F_SUM(a) \
    (((a)[0] + (a)[4]) + ((a)[1] + (a)[5])) + (((a)[2] + (a)[6]) + ((a)[3] + (a)[7]))

CG_INLINE void cg_rnn_dot4_f(const float* restrict w, ptrdiff_t ld,
                             const float* restrict x, ptrdiff_t n,
                             float* restrict out) {
    cg_v8f a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
    const float *w0 = w, *w1 = w + ld, *w2 = w + 2 * ld, *w3 = w + 3 * ld;
    ptrdiff_t k = 0;
    for (; k + 8 <= n; k += 8) {
        cg_v8f xv, v0, v1, v2, v3;
        CG_V8F_LOAD(xv, x + k);
        CG_V8F_LOAD(v0, w0 + k);
        CG_V8F_LOAD(v1, w1 + k);
        CG_V8F_LOAD(v2, w2 + k);
        CG_V8F_LOAD(v3, w3 + k);
        a0 += v0 * xv;
        a1 += v1 * xv;
        a2 += v2 * xv;
        a3 += v3 * xv;
    }
    float s0 = CG_V8F_SUM(a0), s1 = CG_V8F_SUM(a1);
    float s2 = CG_V8F_SUM(a2), s3 = CG_V8F_SUM(a3);
    for (; k < n; k++) {
        s0 += w0[k] * x[k];
        s1 += w1[k] * x[k];
        s2 += w2[k] * x[k];
        s3 += w3[k] * x[k];
    }
    out[0] = s0;
    out[1] = s1;
    out[2] = s2;
    out[3] = s3;
}

/* out[r] = w1[r] . x1 + w2[r] . x2 for eight rows r (rows n1 and n2 floats
   apart): eight independent FMA chains (cg_rnn_dot4_f's four left half the
   two FMA ports idle on a 4-cycle latency), both products summed in the
   same lanes, then one transposing reduction of the eight accumulators
   (three shuffle-and-add levels and one permutation) instead of eight
   horizontal sums.  At batch 1, hidden 64 the cell step went from 1.6 to
   1.3 us (Zen 4), which is about the time the weights take to stream from
   L2 (131 KB at 32 bytes a cycle). */
#define CG_V8F_SH(a, b, ...) __builtin_shufflevector((a), (b), __VA_ARGS__)
#define CG_DOT8_PASS(w, x, n)                                                 \
    do {                                                                      \
        const float* r0 = (w);                                                \
        for (k = 0; k + 8 <= (n); k += 8) {                                   \
            cg_v8f xv, v;                                                     \
            CG_V8F_LOAD(xv, (x) + k);                                         \
            CG_V8F_LOAD(v, r0 + k); a0 += v * xv;                             \
            CG_V8F_LOAD(v, r0 + (n) + k); a1 += v * xv;                       \
            CG_V8F_LOAD(v, r0 + 2 * (n) + k); a2 += v * xv;                   \
            CG_V8F_LOAD(v, r0 + 3 * (n) + k); a3 += v * xv;                   \
            CG_V8F_LOAD(v, r0 + 4 * (n) + k); a4 += v * xv;                   \
            CG_V8F_LOAD(v, r0 + 5 * (n) + k); a5 += v * xv;                   \
            CG_V8F_LOAD(v, r0 + 6 * (n) + k); a6 += v * xv;                   \
            CG_V8F_LOAD(v, r0 + 7 * (n) + k); a7 += v * xv;                   \
        }                                                                     \
        for (; k < (n); k++)                                                  \
            for (int r = 0; r < 8; r++)                                       \
                tail[r] += r0[r * (n) + k] * (x)[k];                          \
    } while (0)

CG_INLINE void cg_rnn_dot8x2_f(const float* restrict w1, const float* restrict x1,
                               ptrdiff_t n1, const float* restrict w2,
                               const float* restrict x2, ptrdiff_t n2,
                               float* restrict out) {
    cg_v8f a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, a4 = {0}, a5 = {0}, a6 = {0},
           a7 = {0};
    float tail[8] = {0};
    ptrdiff_t k;
    CG_DOT8_PASS(w1, x1, n1);
    CG_DOT8_PASS(w2, x2, n2);
    /* b01 = a0's lanes l + (l+4), then a1's; c0 = a0, a2, a1, a3 in pairs;
       d = a0, a2, a4, a6, a1, a3, a5, a7 */
    cg_v8f b01 = CG_V8F_SH(a0, a1, 0, 1, 2, 3, 8, 9, 10, 11)
               + CG_V8F_SH(a0, a1, 4, 5, 6, 7, 12, 13, 14, 15);
    cg_v8f b23 = CG_V8F_SH(a2, a3, 0, 1, 2, 3, 8, 9, 10, 11)
               + CG_V8F_SH(a2, a3, 4, 5, 6, 7, 12, 13, 14, 15);
    cg_v8f b45 = CG_V8F_SH(a4, a5, 0, 1, 2, 3, 8, 9, 10, 11)
               + CG_V8F_SH(a4, a5, 4, 5, 6, 7, 12, 13, 14, 15);
    cg_v8f b67 = CG_V8F_SH(a6, a7, 0, 1, 2, 3, 8, 9, 10, 11)
               + CG_V8F_SH(a6, a7, 4, 5, 6, 7, 12, 13, 14, 15);
    cg_v8f c0 = CG_V8F_SH(b01, b23, 0, 1, 8, 9, 4, 5, 12, 13)
              + CG_V8F_SH(b01, b23, 2, 3, 10, 11, 6, 7, 14, 15);
    cg_v8f c1 = CG_V8F_SH(b45, b67, 0, 1, 8, 9, 4, 5, 12, 13)
              + CG_V8F_SH(b45, b67, 2, 3, 10, 11, 6, 7, 14, 15);
    cg_v8f d = CG_V8F_SH(c0, c1, 0, 2, 8, 10, 4, 6, 12, 14)
             + CG_V8F_SH(c0, c1, 1, 3, 9, 11, 5, 7, 13, 15);
    cg_v8f t;
    memcpy(&t, tail, sizeof t);
    d = CG_V8F_SH(d, d, 0, 4, 1, 5, 2, 6, 3, 7) + t;
    memcpy(out, &d, sizeof d);
}

/* One small-batch LSTM cell step, products included: pre-activations
   x W_ih^T + h W_hh^T + b_ih + b_hh (bih / bhh may be NULL) into gates,
   then the gate arithmetic of cg_lstm_fwd_f, reading c and writing c' to
   cn (c is not modified).  For the sizes where NumPy's two matmul calls
   and their bias additions cost more than the products (batch 1, hidden
   64: 7 us of calls for 2 x 16K multiply-adds). */
CG_SIMD_FN(void, cg_lstm_cell_f, (const float* restrict x,
                                     const float* restrict h,
                                     const float* restrict c,
                                     const float* restrict wih,
                                     const float* restrict whh,
                                     const float* restrict bih,
                                     const float* restrict bhh,
                                     float* restrict gates, float* restrict cn,
                                     float* restrict tc, float* restrict hn,
                                     ptrdiff_t bs, ptrdiff_t in, ptrdiff_t hid),
           (x, h, c, wih, whh, bih, bhh, gates, cn, tc, hn, bs, in, hid), {
    for (ptrdiff_t b = 0; b < bs; b++) {
        const float* xr = x + b * in;
        const float* hr = h + b * hid;
        float* g = gates + b * 4 * hid;
        ptrdiff_t s = b * hid, j;
        float pi[4], ph[4];
        for (j = 0; j + 8 <= 4 * hid; j += 8)
            cg_rnn_dot8x2_f(wih + j * in, xr, in, whh + j * hid, hr, hid, g + j);
        if (j < 4 * hid) {                     /* 4 hid rows: 4 or none left */
            cg_rnn_dot4_f(wih + j * in, in, xr, in, pi);
            cg_rnn_dot4_f(whh + j * hid, hid, hr, hid, ph);
            for (int r = 0; r < 4; r++)
                g[j + r] = pi[r] + ph[r];
        }
        if (bih)
            for (j = 0; j < 4 * hid; j++)
                g[j] += bih[j];
        if (bhh)
            for (j = 0; j < 4 * hid; j++)
                g[j] += bhh[j];
        for (j = 0; j < 2 * hid; j++)
            g[j] = cg_rnn_sigmoid(g[j]);
        for (j = 2 * hid; j < 3 * hid; j++)
            g[j] = cg_rnn_tanh(g[j]);
        for (j = 3 * hid; j < 4 * hid; j++)
            g[j] = cg_rnn_sigmoid(g[j]);
        for (j = 0; j < hid; j++) {
            float v = g[hid + j] * c[s + j] + g[j] * g[2 * hid + j];
            float t = cg_rnn_tanh(v);
            cn[s + j] = v;
            tc[s + j] = t;
            hn[s + j] = g[3 * hid + j] * t;
        }
    }
})

/* GRU, gates [r | z | n]: r, z = sigmoid(gi + gh + b), hn = gh_n + b_n,
   n = tanh(gi_n + r hn), h = (1 - z) n + z hprev.  bhh may be NULL. */
CG_SIMD_FN(void, cg_gru_fwd_f, (const float* restrict gi,
                                   const float* restrict gh,
                                   const float* restrict bhh,
                                   const float* restrict hprev,
                                   float* restrict gates, float* restrict hn,
                                   float* restrict h, ptrdiff_t bs, ptrdiff_t hid), (gi, gh, bhh, hprev, gates, hn, h, bs, hid), {
    for (ptrdiff_t b = 0; b < bs; b++) {
        const float* x = gi + b * 3 * hid;
        const float* y = gh + b * 3 * hid;
        float* g = gates + b * 3 * hid;
        ptrdiff_t s = b * hid, j;
        if (bhh) {
            for (j = 0; j < 2 * hid; j++)
                g[j] = cg_rnn_sigmoid(x[j] + (y[j] + bhh[j]));
            for (j = 0; j < hid; j++)
                hn[s + j] = y[2 * hid + j] + bhh[2 * hid + j];
        } else {
            for (j = 0; j < 2 * hid; j++)
                g[j] = cg_rnn_sigmoid(x[j] + y[j]);
            for (j = 0; j < hid; j++)
                hn[s + j] = y[2 * hid + j];
        }
        for (j = 0; j < hid; j++) {
            float z = g[hid + j];
            float n = cg_rnn_tanh(x[2 * hid + j] + g[j] * hn[s + j]);
            g[2 * hid + j] = n;
            h[s + j] = (1.0f - z) * n + z * hprev[s + j];
        }
    }
})

/* Elman tanh: h = tanh(gi + gh). */
CG_SIMD_FN(void, cg_rnn_tanh_f, (const float* restrict gi,
                                    const float* restrict gh, float* restrict h,
                                    ptrdiff_t n), (gi, gh, h, n), {
    for (ptrdiff_t k = 0; k < n; k++)
        h[k] = cg_rnn_tanh(gi[k] + gh[k]);
})

/* LSTM backward (float and double; pure arithmetic, so one loop per row
   that vectorizes under CG_SIMD_FN): dc_tot = dc + dh o (1 - tc^2),
   pre-activation gradients of i, f, g, o, and dc <- dc_tot f. */
#define CG_LSTM_BWD(NAME, T)                                                    \
CG_SIMD_FN(void, NAME, (const T* restrict dh, T* restrict dc,                   \
                        const T* restrict gates, const T* restrict cprev,       \
                        const T* restrict tc, T* restrict dg, ptrdiff_t bs,     \
                        ptrdiff_t hid),                                         \
           (dh, dc, gates, cprev, tc, dg, bs, hid), {                           \
    for (ptrdiff_t b = 0; b < bs; b++) {                                        \
        const T* g = gates + b * 4 * hid;                                       \
        T* d = dg + b * 4 * hid;                                                \
        ptrdiff_t s = b * hid;                                                  \
        for (ptrdiff_t j = 0; j < hid; j++) {                                   \
            T ig = g[j], fg = g[hid + j], gg = g[2 * hid + j];                  \
            T og = g[3 * hid + j], t = tc[s + j], e = dh[s + j];                \
            T dct = dc[s + j] + e * og * (1 - t * t);                           \
            d[j] = dct * gg * ig * (1 - ig);                                    \
            d[hid + j] = dct * cprev[s + j] * fg * (1 - fg);                    \
            d[2 * hid + j] = dct * ig * (1 - gg * gg);                          \
            d[3 * hid + j] = e * t * og * (1 - og);                             \
            dc[s + j] = dct * fg;                                               \
        }                                                                       \
    }                                                                           \
})
CG_LSTM_BWD(cg_lstm_bwd_f, float)
CG_LSTM_BWD(cg_lstm_bwd_d, double)

#endif
