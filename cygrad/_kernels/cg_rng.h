/* cg_rng.h: torch's CPU random stream.
 *
 * torch's CPU generator is a 32-bit Mersenne Twister (MT19937) seeded with
 * the low 32 bits of the seed by the reference initialisation; a 64-bit draw
 * is two 32-bit draws, the first one the high half.  On top of it torch
 * turns draws into samples with fixed recipes, and these functions follow
 * them so that a seed gives torch's numbers:
 *
 *   uniform float   (u32 & (2^24 - 1)) * 2^-24, then x * (to - from) + from
 *                   in float (float16 takes the float and rounds it);
 *   uniform double  (u64 & (2^53 - 1)) * 2^-53, then the same in double;
 *   normal, float32, contiguous, n >= 16: n uniform floats, then each block
 *                   of 16 becomes 16 normals by Box-Muller (lanes j and
 *                   j + 8 share one radius and angle); when 16 does not
 *                   divide n the last 16 places are drawn again and
 *                   transformed again.  The logarithm, sine and cosine are
 *                   the Cephes single-precision polynomials, evaluated
 *                   operation by operation as torch's AVX2 build does, so
 *                   the results carry the same rounding.
 *   normal, double contiguous n >= 16: the same blocks, with libm's
 *                   double log, sin and cos;
 *   normal, otherwise: one double Box-Muller pair per two samples from two
 *                   uniform doubles, the second sample kept in the
 *                   generator for the next call (torch keeps it too);
 *   bernoulli(p)    uniform double < p (float p: uniform float < p);
 *   integers        u32 % range + base (u64 when the range needs it);
 *   randperm        a Fisher-Yates pass with u32 % (n - i).
 *
 * The state (cg_mt) maps one to one onto torch's get_rng_state() bytes,
 * see rng.pyx.  Contraction is off for this file (setup.py): every
 * multiply-add below is written as the one torch's build performs.
 */
#ifndef CG_RNG_H
#define CG_RNG_H

#include <stdint.h>
#include <string.h>
#include <math.h>
#include "cg_simd.h"

#define CG_MT_N 624
#define CG_MT_M 397

typedef struct {
    uint64_t seed;
    int32_t left;
    int32_t seeded;
    uint32_t next;
    uint32_t state[CG_MT_N];
    /* the cached second Box-Muller samples */
    int32_t has_double_normal;
    double double_normal;
    int32_t has_float_normal;
    float float_normal;
} cg_mt;

static void cg_mt_seed(cg_mt* g, uint64_t seed) {
    g->seed = seed;
    g->seeded = 1;
    g->state[0] = (uint32_t)(seed & 0xffffffffu);
    for (int j = 1; j < CG_MT_N; j++) {
        uint32_t p = g->state[j - 1];
        g->state[j] = 1812433253u * (p ^ (p >> 30)) + (uint32_t)j;
    }
    g->left = 1;
    g->next = 0;
    g->has_double_normal = 0;
    g->double_normal = 0.0;
    g->has_float_normal = 0;
    g->float_normal = 0.0f;
}

static inline uint32_t cg_mt_mix(uint32_t u, uint32_t v) {
    uint32_t y = (u & 0x80000000u) | (v & 0x7fffffffu);
    return (y >> 1) ^ ((v & 1u) ? 0x9908b0dfu : 0u);
}

/* Regenerate the 624 words (three runs without a carried dependence, so
   each one vectorizes). */
CG_SIMD_FN(void, cg_mt_regen, (uint32_t* s), (s), {
    for (int i = 0; i < CG_MT_N - CG_MT_M; i++)
        s[i] = s[i + CG_MT_M] ^ cg_mt_mix(s[i], s[i + 1]);
    for (int i = CG_MT_N - CG_MT_M; i < CG_MT_N - 1; i++)
        s[i] = s[i + CG_MT_M - CG_MT_N] ^ cg_mt_mix(s[i], s[i + 1]);
    s[CG_MT_N - 1] = s[CG_MT_M - 1] ^ cg_mt_mix(s[CG_MT_N - 1], s[0]);
})

static void cg_mt_twist(cg_mt* g) {
    cg_mt_regen(g->state);
    g->left = CG_MT_N;
    g->next = 0;
}

static inline uint32_t cg_mt_temper(uint32_t y) {
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

static inline uint32_t cg_mt_u32(cg_mt* g) {
    if (--g->left == 0)
        cg_mt_twist(g);
    return cg_mt_temper(g->state[g->next++]);
}

static inline uint64_t cg_mt_u64(cg_mt* g) {
    uint64_t hi = cg_mt_u32(g);
    uint64_t lo = cg_mt_u32(g);
    return (hi << 32) | lo;
}

CG_SIMD_FN(void, cg_mt_temper_run, (const uint32_t* s, uint32_t* out, int64_t k),
           (s, out, k), {
    for (int64_t i = 0; i < k; i++)
        out[i] = cg_mt_temper(s[i]);
})

/* The next n words, as n calls of cg_mt_u32 would give them (the state
   ends the same), tempered a run at a time. */
static void cg_mt_words(cg_mt* g, uint32_t* out, int64_t n) {
    while (n > 0) {
        if (g->left <= 1) {
            cg_mt_twist(g);
            g->left = CG_MT_N + 1;   /* 624 words ready; u32 would leave 624 after one */
        }
        int64_t k = g->left - 1;
        if (k > n)
            k = n;
        cg_mt_temper_run(g->state + g->next, out, k);
        g->next += (uint32_t)k;
        g->left -= (int32_t)k;
        out += k;
        n -= k;
    }
}

/* Samplers take their words in blocks of this many. */
#define CG_RNG_BLOCK 512

/* A uniform double on [0, 1) from 53 bits. */
static inline double cg_mt_unit_d(cg_mt* g) {
    return (double)(cg_mt_u64(g) & ((UINT64_C(1) << 53) - 1)) * (1.0 / 9007199254740992.0);
}

/* A uniform float on [0, 1) from 24 bits. */
static inline float cg_mt_unit_f(cg_mt* g) {
    return (float)(cg_mt_u32(g) & 0xffffffu) * (1.0f / 16777216.0f);
}

/* --- uniform ------------------------------------------------------------------ */

CG_SIMD_FN(void, cg_rng_units_f, (const uint32_t* w, float* out, int64_t n, float span,
                                   float from, uint32_t mask, float scale),
           (w, out, n, span, from, mask, scale), {
    for (int64_t i = 0; i < n; i++)
        out[i] = fmaf((float)(w[i] & mask) * scale, span, from);
})

CG_SIMD_FN(void, cg_rng_units_d, (const uint32_t* w, double* out, int64_t n, double span,
                                   double from),
           (w, out, n, span, from), {
    for (int64_t i = 0; i < n; i++) {
        uint64_t v = ((uint64_t)w[2 * i] << 32 | w[2 * i + 1]) & ((UINT64_C(1) << 53) - 1);
        out[i] = fma((double)v * (1.0 / 9007199254740992.0), span, from);
    }
})

static void cg_mt_uniform_f(cg_mt* g, float* out, int64_t n, float from, float to) {
    uint32_t w[CG_RNG_BLOCK];
    uint32_t mask = 0xffffffu;
    float scale = 1.0f / 16777216.0f;
    for (int64_t i = 0; i < n; i += CG_RNG_BLOCK) {
        int64_t k = n - i < CG_RNG_BLOCK ? n - i : CG_RNG_BLOCK;
        cg_mt_words(g, w, k);
        cg_rng_units_f(w, out + i, k, to - from, from, mask, scale);
    }
}

static void cg_mt_uniform_d(cg_mt* g, double* out, int64_t n, double from, double to) {
    uint32_t w[2 * CG_RNG_BLOCK];
    for (int64_t i = 0; i < n; i += CG_RNG_BLOCK) {
        int64_t k = n - i < CG_RNG_BLOCK ? n - i : CG_RNG_BLOCK;
        cg_mt_words(g, w, 2 * k);
        cg_rng_units_d(w, out + i, k, to - from, from);
    }
}

/* torch's exponential_: -1/lambd * log1p(-u) on 53-bit unit doubles, with
 * the C library's log1p (NumPy's SIMD log1p differs from it by an ulp on
 * AVX-512 machines, torch's kernel calls the C library's). */
static void cg_mt_exponential_d(cg_mt* g, double* out, int64_t n, double lambd) {
    cg_mt_uniform_d(g, out, n, 0.0, 1.0);
    double scale = -1.0 / lambd;
    for (int64_t i = 0; i < n; i++)
        out[i] = scale * log1p(-out[i]);
}

/* --- normal ------------------------------------------------------------------- */

static inline uint32_t cg_rng_bits(float x) { uint32_t b; memcpy(&b, &x, 4); return b; }
static inline float cg_rng_float(uint32_t b) { float x; memcpy(&x, &b, 4); return x; }

/* Cephes' single-precision natural logarithm, one operation at a time as
   torch's AVX2 build evaluates it (the multiply-adds that build fuses are
   fmaf here).  Branch-free, so that the loops below vectorize. */
static inline float cg_rng_logf(float x) {
    uint32_t invalid = (x <= 0.0f) ? 0xffffffffu : 0u;
    x = x > 1.17549435e-38f ? x : 1.17549435e-38f;
    uint32_t bits = cg_rng_bits(x);
    float e = (float)((int32_t)(bits >> 23) - 0x7f) + 1.0f;
    x = cg_rng_float((bits & ~0x7f800000u) | 0x3f000000u);   /* in [0.5, 1) */
    int small = x < 0.707106781186547524f;
    float tmp = small ? x : 0.0f;
    e = e - (small ? 1.0f : 0.0f);
    x = x - 1.0f;
    x = x + tmp;
    float z = x * x;
    float y = fmaf(7.0376836292E-2f, x, -1.1514610310E-1f);
    y = fmaf(y, x, 1.1676998740E-1f);
    y = fmaf(y, x, -1.2420140846E-1f);
    y = fmaf(y, x, 1.4249322787E-1f);
    y = fmaf(y, x, -1.6668057665E-1f);
    y = fmaf(y, x, 2.0000714765E-1f);
    y = fmaf(y, x, -2.4999993993E-1f);
    y = fmaf(y, x, 3.3333331174E-1f);
    y = y * x;
    y = fmaf(y, z, e * -2.12194440e-4f);
    y = fmaf(-z, 0.5f, y);
    x = x + y;
    x = fmaf(e, 0.693359375f, x);
    return cg_rng_float(cg_rng_bits(x) | invalid);
}

/* Cephes' single-precision sine and cosine of one angle (torch's sincos:
   both polynomials, each result picked by the octant). */
static inline void cg_rng_sincosf(float x, float* s, float* c) {
    uint32_t sign_sin = cg_rng_bits(x) & 0x80000000u;
    x = cg_rng_float(cg_rng_bits(x) & 0x7fffffffu);
    int32_t j = (int32_t)(x * 1.27323954473516f);      /* truncation, as cvttps */
    j = (j + 1) & ~1;
    float y = (float)j;
    sign_sin ^= ((uint32_t)(j & 4)) << 29;
    uint32_t sign_cos = ((uint32_t)(~(j - 2) & 4)) << 29;
    int sine_first = (j & 2) == 0;
    x = fmaf(y, -0.78515625f, x);
    x = fmaf(y, -2.4187564849853515625e-4f, x);
    x = fmaf(y, -3.77489497744594108e-8f, x);
    float z = x * x;
    float p = fmaf(2.443315711809948E-005f, z, -1.388731625493765E-003f);
    p = fmaf(p, z, 4.166664568298827E-002f);
    p = p * z;
    p = fmaf(p, z, -(z * 0.5f));
    p = p + 1.0f;                        /* the cosine polynomial */
    float q = fmaf(-1.9515295891E-4f, z, 8.3321608736E-3f);
    q = fmaf(q, z, -1.6666654611E-1f);
    q = q * z;
    q = fmaf(q, x, x);                   /* the sine polynomial */
    float rs = (sine_first ? q : p) + 0.0f;
    float rc = (sine_first ? p : q) + 0.0f;
    *s = cg_rng_float(cg_rng_bits(rs) ^ sign_sin);
    *c = cg_rng_float(cg_rng_bits(rc) ^ sign_cos);
}

/* 16 uniforms in d[0..16) become 16 normals (float, torch's AVX2 recipe). */
static inline void cg_rng_box16_f(float* d, float mean, float std) {
    const float two_pi = (float)(2.0 * 3.14159265358979323846);
    for (int j = 0; j < 8; j++) {
        float u1 = 1.0f - d[j];
        float u2 = d[j + 8];
        float radius = sqrtf(-2.0f * cg_rng_logf(u1));
        float theta = two_pi * u2;
        float s, c;
        cg_rng_sincosf(theta, &s, &c);
        d[j] = fmaf(radius * c, std, mean);
        d[j + 8] = fmaf(radius * s, std, mean);
    }
}

/* 16 uniforms become 16 normals (double, libm). */
static inline void cg_rng_box16_d(double* d, double mean, double std) {
    for (int j = 0; j < 8; j++) {
        double u1 = 1.0 - d[j];
        double u2 = d[j + 8];
        double radius = sqrt(-2.0 * log(u1));
        double theta = (2.0 * 3.14159265358979323846) * u2;
        d[j] = radius * cos(theta) * std + mean;
        d[j + 8] = radius * sin(theta) * std + mean;
    }
}

CG_SIMD_FN(void, cg_rng_boxes_f, (float* d, int64_t blocks, float mean, float std),
           (d, blocks, mean, std), {
    for (int64_t b = 0; b < blocks; b++)
        cg_rng_box16_f(d + 16 * b, mean, std);
})

/* normal_ of a contiguous float32 block of n >= 16. */
static void cg_mt_normal_fill_f(cg_mt* g, float* d, int64_t n, float mean, float std) {
    cg_mt_uniform_f(g, d, n, 0.0f, 1.0f);
    cg_rng_boxes_f(d, n / 16, mean, std);
    if (n % 16 != 0) {
        float* t = d + n - 16;
        cg_mt_uniform_f(g, t, 16, 0.0f, 1.0f);
        cg_rng_boxes_f(t, 1, mean, std);
    }
}

/* normal_ of a contiguous float64 block of n >= 16. */
static void cg_mt_normal_fill_d(cg_mt* g, double* d, int64_t n, double mean, double std) {
    cg_mt_uniform_d(g, d, n, 0.0, 1.0);
    for (int64_t i = 0; i + 16 <= n; i += 16)
        cg_rng_box16_d(d + i, mean, std);
    if (n % 16 != 0) {
        double* t = d + n - 16;
        cg_mt_uniform_d(g, t, 16, 0.0, 1.0);
        cg_rng_box16_d(t, mean, std);
    }
}

/* One double normal sample, using and refilling the cached second sample. */
static inline double cg_mt_normal_d(cg_mt* g, double mean, double std) {
    double r;
    if (g->has_double_normal) {
        g->has_double_normal = 0;
        r = g->double_normal;
    } else {
        double u1 = cg_mt_unit_d(g);
        double u2 = cg_mt_unit_d(g);
        double radius = sqrt(-2.0 * log1p(-u2));
        double theta = 2.0 * 3.14159265358979323846 * u1;
        g->double_normal = radius * sin(theta);
        g->has_double_normal = 1;
        r = radius * cos(theta);
    }
    return r * std + mean;
}

/* The serial path into doubles (the caller casts). */
static void cg_mt_normal_serial(cg_mt* g, double* out, int64_t n, double mean, double std) {
    for (int64_t i = 0; i < n; i++)
        out[i] = cg_mt_normal_d(g, mean, std);
}

/* --- discrete ------------------------------------------------------------------ */

static inline void cg_rng_cut(double p, uint32_t* cut_hi, uint32_t* cut_lo) {
    double scaled = ceil(p * 9007199254740992.0);          /* p in [0, 1] */
    uint64_t cut = scaled <= 0.0 ? 0 : (uint64_t)scaled;   /* up to 2^53 */
    *cut_hi = (uint32_t)(cut >> 32);
    *cut_lo = (uint32_t)cut;
}

/* bernoulli(p) written as `value` or 0 (1 for uint8 draws, a dropout
   multiplier for floats) in one pass.  The uniform double is v * 2^-53 for
   the 53-bit v = (hi & (2^21 - 1)) : lo of two words, so `u < p` is exactly
   v < ceil(p * 2^53), tested on the two 32-bit halves. */
#define CG_RNG_BERNOULLI_FILL(T, S)                                              \
CG_SIMD_FN(void, cg_rng_keep_##S, (const uint32_t* w, T* out, int64_t n,         \
                                   uint32_t cut_hi, uint32_t cut_lo, T value),   \
           (w, out, n, cut_hi, cut_lo, value), {                                 \
    for (int64_t i = 0; i < n; i++) {                                            \
        uint32_t hi = w[2 * i] & 0x1fffffu, lo = w[2 * i + 1];                   \
        int keep = (hi < cut_hi) | ((hi == cut_hi) & (lo < cut_lo));             \
        out[i] = keep ? value : (T)0;                                            \
    }                                                                            \
})                                                                               \
static void cg_mt_bernoulli_fill_##S(cg_mt* g, T* out, int64_t n, double p,      \
                                     T value) {                                  \
    uint32_t w[2 * CG_RNG_BLOCK];                                                \
    uint32_t cut_hi, cut_lo;                                                     \
    cg_rng_cut(p, &cut_hi, &cut_lo);                                             \
    for (int64_t i = 0; i < n; i += CG_RNG_BLOCK) {                              \
        int64_t k = n - i < CG_RNG_BLOCK ? n - i : CG_RNG_BLOCK;                 \
        cg_mt_words(g, w, 2 * k);                                                \
        cg_rng_keep_##S(w, out + i, k, cut_hi, cut_lo, value);                   \
    }                                                                            \
}
CG_RNG_BERNOULLI_FILL(uint8_t, u8)
CG_RNG_BERNOULLI_FILL(float, f)
CG_RNG_BERNOULLI_FILL(double, d)

/* bernoulli with one double p per element. */
static void cg_mt_bernoulli_pd(cg_mt* g, uint8_t* out, const double* p, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        out[i] = cg_mt_unit_d(g) < p[i];
}

/* bernoulli with one float p per element (float uniforms). */
static void cg_mt_bernoulli_pf(cg_mt* g, uint8_t* out, const float* p, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        out[i] = cg_mt_unit_f(g) < p[i];
}

/* Integers base + (draw % range); wide: 64-bit draws.  A 32-bit draw's
   remainder is taken in 32 bits (the same value, a cheaper division). */
static void cg_mt_ints(cg_mt* g, int64_t* out, int64_t n, uint64_t range, int64_t base,
                       int wide) {
    if (wide) {
        for (int64_t i = 0; i < n; i++)
            out[i] = (int64_t)(cg_mt_u64(g) % range) + base;
        return;
    }
    uint32_t w[CG_RNG_BLOCK];
    for (int64_t i = 0; i < n; i += CG_RNG_BLOCK) {
        int64_t k = n - i < CG_RNG_BLOCK ? n - i : CG_RNG_BLOCK;
        cg_mt_words(g, w, k);
        if (range <= UINT32_MAX) {
            /* w % r without a division: Lemire's exact 32-bit fastmod */
            uint32_t r = (uint32_t)range;
            uint64_t m = UINT64_C(0xFFFFFFFFFFFFFFFF) / r + 1;
            for (int64_t j = 0; j < k; j++) {
                uint64_t low = m * w[j];
                out[i + j] = (int64_t)(((unsigned __int128)low * r) >> 64) + base;
            }
        } else {
            for (int64_t j = 0; j < k; j++)
                out[i + j] = (int64_t)w[j] + base;    /* a word < range */
        }
    }
}

/* Raw draws: n 32-bit words or n 64-bit words. */
static void cg_mt_raw64(cg_mt* g, uint64_t* out, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        out[i] = cg_mt_u64(g);
}

/* randperm(n) into out[0..n): identity, then one Fisher-Yates pass. */
static void cg_mt_randperm(cg_mt* g, int64_t* out, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        out[i] = i;
    for (int64_t i = 0; i + 1 < n; i++) {
        int64_t z = (int64_t)((uint64_t)cg_mt_u32(g) % (uint64_t)(n - i));
        int64_t t = out[i];
        out[i] = out[z + i];
        out[z + i] = t;
    }
}


#endif
