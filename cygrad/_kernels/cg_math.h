/* Vectorizable exp, log, tanh, sigmoid, sin, cos and pow for float32
 * kernels, and the branch-free selects every kernel uses.
 *
 * libm's functions are calls the compiler cannot vectorize, so a float32
 * kernel built on them runs one element at a time (sin was 5.5x NumPy's
 * SIMD float32 sin).  The functions here are straight-line double
 * arithmetic: no branches, no calls, integer work done on the bits of
 * doubles, so a loop over them vectorizes (4 doubles per AVX2 instruction).
 *
 * Accuracy: each works in double and is accurate to about 1e-14 relative,
 * so rounding its result to float gives the correctly rounded float32 value
 * except when the exact value lies within ~1e-14 of a rounding tie: the
 * same float32 numbers as libm in double, rounded once, to the last bit in
 * all but rare cases.  They are NOT accurate enough for float64 results;
 * float64 kernels keep libm.
 *
 * Domain: each but tanh has a cg_*_ok() predicate; outside it (huge |x|,
 * inf, NaN, a non-positive or infinite base, a result that over- or
 * underflows float) the fast value means nothing (it is still computed
 * without subnormal intermediates, which would cost a microcode assist per
 * element) and the kernel must call libm instead.  The kernels test the
 * predicate over a block and fall back to libm for the blocks that need it
 * (see elementwise.pyx.tp).
 *
 * The float-lane section at the end (cg_*f_fast) computes in float instead,
 * twice as wide, a few ULPs from the correctly rounded value: the float32
 * activations (exp, sigmoid, tanh, silu, gelu) use it.
 *
 * Method: exp, log, tanh and sigmoid are built on pow's exp2 and log2
 * below (tanh near 0 by its own series).  sin/cos reduce x by multiples of
 * pi/2 in double (pi/2 split in a 33-bit head, whose products with the
 * quotient are exact, and a tail) and evaluate the Taylor series on
 * [-pi/4, pi/4] (truncation < 3e-14).  pow is exp2(b * log2(a)): log2
 * through log(m) = 2 atanh((m - 1) / (m + 1)) on a mantissa m in
 * [sqrt(1/2), sqrt(2)], exp2 through exp's Taylor series on
 * [-ln2 / 2, ln2 / 2] and an exponent built from bits.
 */
#ifndef CG_MATH_H
#define CG_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* Always inlined: an out-of-line copy is compiled for the baseline target
   only, and a call to it from an AVX2 loop (CG_SIMD_FN) pays an AVX-SSE
   transition per element (measured: 290 ns per pow fallback). */
#if defined(__GNUC__)
#define CG_INLINE static inline __attribute__((always_inline))
#else
#define CG_INLINE static inline
#endif

CG_INLINE uint64_t cg_bits(double x) {
    uint64_t u;
    memcpy(&u, &x, 8);
    return u;
}

CG_INLINE double cg_from_bits(uint64_t u) {
    double x;
    memcpy(&x, &u, 8);
    return x;
}

/* ---- selects ---------------------------------------------------------- */

/* a where c holds, else b, through an integer mask.  GCC compiles
   `c ? a : b`, and even `g * (a >= b)`, on floats into a jump (it may not
   if-convert a float compare under the default -ftrapping-math); on random
   data the jump is mispredicted half the time and the loop runs ~20x
   slower.  Bit masks keep loops branch-free and vectorizable. */
CG_INLINE double cg_pick_d(double a, double b, int c) {
    uint64_t m = (uint64_t)0 - (uint64_t)(c != 0);
    return cg_from_bits((cg_bits(a) & m) | (cg_bits(b) & ~m));
}

CG_INLINE float cg_pick_f(float a, float b, int c) {
    uint32_t ua, ub, m = (uint32_t)0 - (uint32_t)(c != 0);
    float r;
    memcpy(&ua, &a, 4);
    memcpy(&ub, &b, 4);
    ua = (ua & m) | (ub & ~m);
    memcpy(&r, &ua, 4);
    return r;
}

/* 1.5 * 2^52: (t + CG_ROUND) - CG_ROUND is t rounded to an integer for
   |t| < 2^51, and the low bits of t + CG_ROUND hold that integer (two's
   complement), with no double -> int conversion (AVX2 has none). */
#define CG_ROUND 6755399441055744.0

/* ---- sin, cos -------------------------------------------------------- */

#define CG_TRIG_MAX 524288.0                    /* 2^19 */
#define CG_2_PI 0x1.45f306dc9c883p-1            /* 2 / pi */
#define CG_PIO2_HI 0x1.921fb544p+0              /* pi/2, 33 bits */
#define CG_PIO2_LO 0x1.0b4611a626331p-34        /* pi/2 - CG_PIO2_HI */

CG_INLINE int cg_trig_ok(double x) {
    return fabs(x) <= CG_TRIG_MAX;              /* 0 for inf and NaN */
}

/* sin(x + q * pi/2) from r = x reduced to [-pi/4, pi/4] and q mod 4. */
CG_INLINE double cg_sin_quadrant(double r, uint64_t q) {
    double z = r * r;
    /* r * (1 + ...), not r + r * (...): keeps sin(-0) = -0 */
    double s = r * (1.0 + z * (-1.0 / 6 + z * (1.0 / 120 + z * (-1.0 / 5040
               + z * (1.0 / 362880 + z * (-1.0 / 39916800 + z * (1.0 / 6227020800)))))));
    double c = 1.0 + z * (-0.5 + z * (1.0 / 24 + z * (-1.0 / 720
               + z * (1.0 / 40320 + z * (-1.0 / 3628800 + z * (1.0 / 479001600
               + z * (-1.0 / 87178291200.0)))))));
    /* quadrant 0: s, 1: c, 2: -s, 3: -c */
    uint64_t odd = (uint64_t)0 - (q & 1);
    uint64_t v = (cg_bits(c) & odd) | (cg_bits(s) & ~odd);
    return cg_from_bits(v ^ ((q & 2) << 62));
}

/* x = k * pi/2 + r: returns r, stores k mod 4 in *q. |x| <= CG_TRIG_MAX:
   |k| < 2^19, so k * CG_PIO2_HI is exact and x - k * CG_PIO2_HI too. */
CG_INLINE double cg_trig_reduce(double x, uint64_t* q) {
    double km = x * CG_2_PI + CG_ROUND;
    double k = km - CG_ROUND;
    *q = cg_bits(km);
    return (x - k * CG_PIO2_HI) - k * CG_PIO2_LO;
}

CG_INLINE double cg_sin_fast(double x) {
    uint64_t q;
    double r = cg_trig_reduce(x, &q);
    return cg_sin_quadrant(r, q);
}

CG_INLINE double cg_cos_fast(double x) {
    uint64_t q;
    double r = cg_trig_reduce(x, &q);
    return cg_sin_quadrant(r, q + 1);           /* cos x = sin(x + pi/2) */
}

/* ---- pow --------------------------------------------------------------- */

#define CG_SQRT2 0x1.6a09e667f3bcdp+0
#define CG_LN2 0x1.62e42fefa39efp-1
#define CG_INV_LN2 0x1.71547652b82fep+0

/* log2(a) for a positive, finite and normal in double (every float is). */
CG_INLINE double cg_log2_fast(double a) {
    /* outside the domain compute log2(1): no garbage bits downstream */
    uint64_t in = (uint64_t)0 - (uint64_t)((a > 0) & (a < INFINITY));
    uint64_t u = (cg_bits(a) & in) | (cg_bits(1.0) & ~in);
    /* the biased exponent as a double, through the bits of 2^52 + e */
    double e = cg_from_bits(0x4330000000000000ULL | (u >> 52))
               - 4503599627370496.0 - 1023.0;
    double m = cg_from_bits((u & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL);
    uint64_t big = (uint64_t)0 - (uint64_t)(m > CG_SQRT2);
    m = cg_from_bits((cg_bits(m * 0.5) & big) | (cg_bits(m) & ~big));
    e += cg_from_bits(cg_bits(1.0) & big);
    double s = (m - 1.0) / (m + 1.0);
    double z = s * s;
    double ln_m = 2.0 * s * (1.0 + z * (1.0 / 3 + z * (1.0 / 5 + z * (1.0 / 7
                  + z * (1.0 / 9 + z * (1.0 / 11 + z * (1.0 / 13 + z * (1.0 / 15
                  + z * (1.0 / 17)))))))));
    return e + ln_m * CG_INV_LN2;
}

/* exp(r) for |r| <= ln2/2 by its Taylor series to degree 13 (truncation
   below 1e-17 relative, under half a double ulp): the exp polynomial of all
   double code here, after the caller's range reduction. */
CG_INLINE double cg_exp_poly(double r) {
    return 1.0 + r * (1.0 + r * (1.0 / 2 + r * (1.0 / 6
        + r * (1.0 / 24 + r * (1.0 / 120 + r * (1.0 / 720
        + r * (1.0 / 5040 + r * (1.0 / 40320 + r * (1.0 / 362880
        + r * (1.0 / 3628800 + r * (1.0 / 39916800
        + r * (1.0 / 479001600 + r * (1.0 / 6227020800.0)))))))))))));
}

/* 2^t for |t| <= 1000 (the caller keeps t where the result is a normal
   float).  t = n + f, f in [-1/2, 1/2]; 2^f = exp(f ln2). */
CG_INLINE double cg_exp2_fast(double t) {
    /* t outside [-1000, 1000] or NaN (the caller's fallback cases) is
       replaced so that every intermediate stays a normal double: a
       subnormal operand costs a ~100-cycle microcode assist per element. */
    uint64_t in = (uint64_t)0 - (uint64_t)(fabs(t) <= 1000.0);
    t = cg_from_bits(cg_bits(t) & in);
    double nm = t + CG_ROUND;
    double n = nm - CG_ROUND;
    double p = cg_exp_poly((t - n) * CG_LN2);
    uint64_t scale = (cg_bits(nm) + 1023) << 52;
    return p * cg_from_bits(scale);
}

/* The domain of cg_pow_fast: a > 0 finite, and b * log2(a) finite with
   2^(b log2 a) a normal float (|t| < 125); 0 for a NaN anywhere. */
CG_INLINE int cg_pow_ok(double a, double b) {
    double t = b * cg_log2_fast(a);
    return (a > 0) & (a <= 3.5e38) & (fabs(t) < 125.0);
}

CG_INLINE double cg_pow_fast(double a, double b) {
    return cg_exp2_fast(b * cg_log2_fast(a));
}

/* ---- exp, log, tanh, sigmoid ----------------------------------------- */

/* exp(x) = 2^(x / ln2): fast where the result is a normal float. */
CG_INLINE int cg_exp_ok(double x) {
    return fabs(x) < 86.0;
}

CG_INLINE double cg_exp_fast(double x) {
    return cg_exp2_fast(x * CG_INV_LN2);
}

/* log(x) for x > 0 finite (float subnormals are normal doubles). */
CG_INLINE int cg_log_ok(double x) {
    return (x > 0) & (x <= 3.5e38);
}

CG_INLINE double cg_log_fast(double x) {
    return cg_log2_fast(x) * CG_LN2;
}

/* tanh everywhere (no fallback): (1 - e) / (1 + e) with e = exp(-2|x|)
   and |x| capped at 20 (tanh = 1 in double beyond), and its Taylor series
   below 2^-10, where 1 - e would cancel.  The sign is x's: tanh(-0)
   is -0; a NaN is returned as it came (exp2 would turn it into a number). */
CG_INLINE double cg_tanh_fast(double x) {
    uint64_t sign = cg_bits(x) & 0x8000000000000000ULL;
    double ax = fabs(x);
    uint64_t cap = (uint64_t)0 - (uint64_t)(ax > 20.0);
    double e, z = ax * ax;
    double small = ax * (1.0 + z * (-1.0 / 3 + z * (2.0 / 15 + z * (-17.0 / 315))));
    uint64_t tiny = (uint64_t)0 - (uint64_t)(ax < 0x1p-10);
    ax = cg_from_bits((cg_bits(20.0) & cap) | (cg_bits(ax) & ~cap));
    e = cg_exp2_fast(-2.0 * CG_INV_LN2 * ax);
    double big = (1.0 - e) / (1.0 + e);
    uint64_t nan = (uint64_t)0 - (uint64_t)(x != x);
    uint64_t r = ((cg_bits(small) & tiny) | (cg_bits(big) & ~tiny)) | sign;
    return cg_from_bits((r & ~nan) | (cg_bits(x) & nan));
}

/* sigmoid(x) = 1 / (1 + exp(-x)): fast while exp(-x) is a normal float
   (beyond, sigmoid is a float32 subnormal or 1: libm's path). */
CG_INLINE int cg_sigmoid_ok(double x) {
    return fabs(x) < 86.0;
}

CG_INLINE double cg_sigmoid_fast(double x) {
    return 1.0 / (1.0 + cg_exp2_fast(-x * CG_INV_LN2));
}

/* ---- exp of a non-positive argument (softmax, logsumexp) ---------------- */

/* exp(v) for v <= 0 (every caller subtracts a row maximum or a
   log-sum-exp first).  Cody-Waite reduction v = k ln2 + r, |r| <= ln2/2,
   Taylor polynomial in r (degree 7 in float arithmetic, evaluated in
   Estrin's scheme, so that a float32 softmax runs 8 lanes wide; cg_exp_poly for double: truncation below half
   an ulp either way), 2^k built in the exponent bits.  k is rounded by
   adding 1.5 * 2^p (p = mantissa bits), whose low bits then hold k, so
   everything stays in SIMD registers; bit casts go through memcpy (no
   aliasing UB).  Below the smallest normal result the answer is 0 (also
   for -inf), applied as a bit mask: a ?: here would stop GCC from
   vectorizing the loops that call these.  NaN stays NaN. */
CG_INLINE float cg_expf_le0(float v) {
    const float magic = 12582912.0f;
    const uint32_t mb = 0x4b400000u;
    float t = v * 1.44269504088896341f + magic;
    float k = t - magic;
    float r = v - k * 0.693359375f;
    r = r - k * -2.12194440e-4f;
    /* Estrin's scheme (pairs, then powers r^2 and r^4): Horner's chain of
       seven dependent steps held the float32 softmax row loop to ~26
       cycles per 8 floats on Zen 2, whose FP scheduler cannot hold enough
       iterations in flight to hide it */
    float r2 = r * r, r4 = r2 * r2;
    float p01 = 1.0f + r, p23 = 0.5f + r * 1.66666667e-1f;
    float p45 = 4.16666667e-2f + r * 8.33333333e-3f;
    float p67 = 1.38888889e-3f + r * 1.98412698e-4f;
    float p = (p01 + r2 * p23) + r4 * (p45 + r2 * p67);
    uint32_t tb, sb, yb, keep;
    float s, y;
    memcpy(&tb, &t, 4);
    sb = (tb - mb + 127u) << 23;
    memcpy(&s, &sb, 4);
    y = p * s;
    memcpy(&yb, &y, 4);
    keep = (uint32_t)(v < -87.33654f) - 1u;
    yb &= keep;
    memcpy(&y, &yb, 4);
    return y;
}
CG_INLINE double cg_exp_le0(double v) {
    const double magic = 6755399441055744.0;
    const uint64_t mb = 0x4338000000000000ull;
    double t = v * 1.4426950408889634074 + magic;
    double k = t - magic;
    double r = v - k * 6.93147180369123816490e-01;
    r = r - k * 1.90821492927058770002e-10;
    double p = cg_exp_poly(r);
    uint64_t tb, sb, yb, keep;
    double s, y;
    memcpy(&tb, &t, 8);
    sb = (tb - mb + 1023u) << 52;
    memcpy(&s, &sb, 8);
    y = p * s;
    memcpy(&yb, &y, 8);
    keep = (uint64_t)(v < -708.3964185322641) - 1u;
    yb &= keep;
    memcpy(&y, &yb, 8);
    return y;
}

/* ---- float lanes: exp, sigmoid, tanh, Phi in float arithmetic ---------- */

/* The double functions above are 4 lanes wide under AVX2; these are 8 (16
 * under AVX-512) and feed the float32 rows of the activations (exp,
 * sigmoid, tanh, silu, gelu; elementwise.pyx.tp's LANES), where the double
 * forms left GELU at 3.1x and sigmoid at 2.3x torch's float kernels.
 *
 * Accuracy (measured by tests/test_f32_math.py against float64 over every
 * float magnitude, at every SIMD level): exp <= 2 float32 ULPs of the
 * correctly rounded value, sigmoid and tanh <= 3, Phi <= 8 in the left tail
 * (its erfc polynomial, evaluated in float).  Each holds on the domain of
 * its cg_*f_ok predicate (tanh on all floats); elsewhere (results that are
 * subnormal or overflow, inf, NaN) the kernels fall back to libm in double
 * per block.  The same bits at every SIMD level: the kernels that call these
 * are compiled with floating-point contraction off (an FMA rounds once
 * where the portable build rounds twice), so the strided loops (portable)
 * and the unit-stride ones agree bitwise. */

#define CG_F_ROUND 12582912.0f                  /* 1.5 * 2^23 */

/* expm1(r) for |r| <= ln2/2 + a little: Taylor to r^8 / 8! (truncation
   below 2e-10 relative), the leading r added last so that a tiny r keeps
   its relative accuracy.  The polynomial after r^2 is evaluated in
   Estrin's scheme (pairs, then powers r^2 and r^4): with contraction off
   (see below) each Horner step is a multiply then an add, and the
   dependent chain of six made the float-lane kernels latency-bound (GELU
   forward ~45 cycles per 8 floats on Zen 2). */
CG_INLINE float cg_expm1f_poly(float r) {
    float r2 = r * r, r4 = r2 * r2;
    float p01 = 0.5f + r * 1.66666667e-1f;
    float p23 = 4.16666667e-2f + r * 8.33333333e-3f;
    float p46 = (1.38888889e-3f + r * 1.98412698e-4f) + r2 * 2.48015873e-5f;
    return r + r2 * ((p01 + r2 * p23) + r4 * p46);
}

/* x = k ln2 + r, |r| <= ln2/2: returns r and stores 2^k in *s, for x with
   k in [-126, 127].  ln2 in two parts, the head with 9 significant bits, so
   that k * head and x - k * head are exact. */
CG_INLINE float cg_expf_reduce(float x, float* s) {
    float t = x * 1.44269504f + CG_F_ROUND;
    float k = t - CG_F_ROUND;
    float r = (x - k * 0.693359375f) - k * -2.12194440e-4f;
    uint32_t tb, sb;
    memcpy(&tb, &t, 4);
    sb = (tb - 0x4b400000u + 127u) << 23;
    memcpy(s, &sb, 4);
    return r;
}

/* exp(x) is a normal float (and 2^k too) for |x| < 87. */
CG_INLINE int cg_expf_ok(float x) {
    return fabsf(x) < 87.0f;                    /* 0 for NaN */
}

CG_INLINE float cg_expf_fast(float x) {
    float s, r = cg_expf_reduce(x, &s);
    return (1.0f + cg_expm1f_poly(r)) * s;
}

/* sigmoid(x) = s or e s (x >= 0 or x < 0), e = exp(-|x|), s = 1 / (1 + e):
   e <= 1, so nothing overflows and the negative side keeps its relative
   accuracy.  |x| is capped at 87 (sigmoid(87) rounds to 1); below -87 the
   result is a float32 subnormal: libm's. */
CG_INLINE int cg_sigmoidf_ok(float x) {
    return x > -87.0f;                          /* 0 for NaN */
}

CG_INLINE float cg_sigmoidf_fast(float x) {
    float ax = fabsf(x);
    float e = cg_expf_fast(-cg_pick_f(ax, 87.0f, ax < 87.0f));
    float s = 1.0f / (1.0f + e);
    return cg_pick_f(s, e * s, x >= 0.0f);
}

/* tanh everywhere: -m / (2 + m), m = expm1(-2|x|) = 2^k (q + 1) - 1 with
   q = expm1(r) (no cancellation near 0, where 1 - exp would lose the
   digits), the sign of x put back.  tanh(x) rounds to x below 2^-12 (the
   cubic term is under half an ULP; this also keeps subnormals out of the
   polynomial) and to 1 above 10; NaN is returned as it came. */
CG_INLINE float cg_tanhf_fast(float x) {
    float ax = fabsf(x), s, r, q, m, t;
    float a = cg_pick_f(ax, 10.0f, ax < 10.0f);
    a = cg_pick_f(a, 0x1p-12f, a > 0x1p-12f);
    r = cg_expf_reduce(-2.0f * a, &s);
    q = cg_expm1f_poly(r);
    m = s * q + (s - 1.0f);
    t = -m / (2.0f + m);
    t = copysignf(cg_pick_f(ax, t, ax <= 0x1p-12f), x);
    return cg_pick_f(x, t, x != x);
}

/* exp(-x^2 / 2) with x^2 carried exactly as hi + lo (Veltkamp's split:
   without FMA the products of the halves are exact), so the Gaussian tail
   keeps float accuracy where x^2 rounded would cost |x|^2 ULPs.  For
   |x| < 13 (x^2 / 2 < 84.5: a normal result). */
CG_INLINE float cg_gaussf_fast(float x) {
    float c = 4097.0f * x;
    float xh = c - (c - x), xl = x - xh;
    float hi = x * x;
    float lo = ((xh * xh - hi) + 2.0f * (xh * xl)) + xl * xl;
    float e = cg_expf_fast(-0.5f * hi);
    return e - e * (0.5f * lo);
}

/* Phi(x), the standard normal CDF: 1 - E (x >= 0) or E, with
   E = Phi(-|x|) = exp(-x^2 / 2) Q(s), s = 1 / (1 + |x| / (2 sqrt 2)) and Q
   a degree-10 polynomial fitted (relative least squares, reweighted) to
   erfc(a / sqrt 2) exp(a^2 / 2) / 2 on a in [0, 13] (fit error 5e-9).
   x <= -13 (Phi a subnormal or 0), NaN: the caller's libm path; x >= 13
   gives 1 (|x| capped, E < 1e-38). */
CG_INLINE int cg_phif_ok(float x) {
    return x > -13.0f;                          /* 0 for NaN */
}

/* Phi in double by erfc, accurate in the left tail (the float lanes'
   fallback; 0.5 + 0.5 erf, torch's float64 form, cancels there). */
CG_INLINE double cg_phi_erfc_d(double x) {
    return 0.5 * erfc(-x * 0.7071067811865476);
}

/* Phi(x) from a = min(|x|, 13) and g = exp(-a^2 / 2) (cg_gaussf_fast(a)) */
CG_INLINE float cg_phif_from(float x, float a, float g) {
    float s = 1.0f / (1.0f + a * 0.353553391f);
    /* Q(s) = L(s) + s^6 H(s), L of degree 5 and H of degree 4 by Horner:
       two independent chains of five steps instead of one of ten (see
       cg_expm1f_poly); both parts are positive on (0, 1], so the split
       adds no cancellation (Estrin's pairs cancel near s = 1, x = 0) */
    float s2 = s * s, s6 = s2 * s2 * s2;
    float h = 1.49943190e-02f;
    h = h * s + -1.11382191e-01f;
    h = h * s + 3.36498435e-01f;
    h = h * s + -5.06592619e-01f;
    h = h * s + 3.63397326e-01f;
    float l = -1.38918005e-01f;
    l = l * s + 1.47938067e-01f;
    l = l * s + 1.10269379e-01f;
    l = l * s + 1.42891726e-01f;
    l = l * s + 1.40898284e-01f;
    l = l * s + 5.27623274e-06f;
    float q = l + s6 * h;
    float e = g * q;
    return cg_pick_f(1.0f - e, e, x >= 0.0f);
}

CG_INLINE float cg_phif_fast(float x) {
    float ax = fabsf(x);
    float a = cg_pick_f(ax, 13.0f, ax < 13.0f);
    return cg_phif_from(x, a, cg_gaussf_fast(a));
}

/* GELU's derivative Phi(x) + x phi'(x), the Gaussian computed once for both
   terms (cg_gaussf_fast is even in x, so the bits are those of the two
   separate calls); for |x| < 13, the backward's guard */
CG_INLINE float cg_dgeluf_fast(float x) {
    float ax = fabsf(x);
    float a = cg_pick_f(ax, 13.0f, ax < 13.0f);
    float g = cg_gaussf_fast(a);
    return cg_phif_from(x, a, g) + x * (0.3989422804014327f * g);
}

#endif
