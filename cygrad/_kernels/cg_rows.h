/* The helpers that the op table's expressions call (cygrad/_kernels/optable.py,
 * HELPERS), one per compute type: _f for float, _d for double.  The
 * template's cexpr() maps an expression's `keep(...)` to cg_keep_f or
 * cg_keep_d, and so on.  Each has a Tensor twin in cygrad.ops, used when a
 * backward must itself be differentiable.  The selects (cg_pick_*) and the
 * fast float32 math come from cg_math.h. */
#ifndef CG_ROWS_H
#define CG_ROWS_H
#include "cg_math.h"
#include "cg_pow.h"

/* g where c holds, else 0 (torch's where(mask, grad, 0): no inf * 0). */
CG_INLINE double cg_keep_d(double g, int c) { return cg_pick_d(g, 0.0, c); }
CG_INLINE float cg_keep_f(float g, int c) { return cg_pick_f(g, 0.0f, c); }
/* NaN propagates, as torch: x is kept where x > 0 or x is NaN. */
CG_INLINE double cg_relu_d(double x) { return cg_pick_d(x, 0.0, (x > 0) | (x != x)); }
CG_INLINE float cg_relu_f(float x) { return cg_pick_f(x, 0.0f, (x > 0) | (x != x)); }
/* 1, -1, or x * 0 (0, -0 or NaN), by selects: abs's backward on random
   signs ran ~3x NumPy's with branches. */
CG_INLINE double cg_sign_d(double x) {
    return cg_pick_d(1.0, cg_pick_d(-1.0, x * 0.0, x < 0), x > 0);
}
CG_INLINE float cg_sign_f(float x) {
    return cg_pick_f(1.0f, cg_pick_f(-1.0f, x * 0.0f, x < 0), x > 0);
}
/* NaN in either operand propagates: a NaN a is picked, and a NaN b wins
   every comparison it loses. */
CG_INLINE double cg_maximum_d(double a, double b) { return cg_pick_d(a, b, (a >= b) | (a != a)); }
CG_INLINE float cg_maximum_f(float a, float b) { return cg_pick_f(a, b, (a >= b) | (a != a)); }
CG_INLINE double cg_minimum_d(double a, double b) { return cg_pick_d(a, b, (a <= b) | (a != a)); }
CG_INLINE float cg_minimum_f(float a, float b) { return cg_pick_f(a, b, (a <= b) | (a != a)); }
/* Two branches so that exp never overflows for large |x|. */
CG_INLINE double cg_sigmoid_d(double x) {
    double e;
    if (x >= 0)
        return 1.0 / (1.0 + exp(-x));
    e = exp(x);
    return e / (1.0 + e);
}
/* torch: d/da a**b = b * a**(b-1), and exactly 0 where b == 0.  The
   float32 fast path (a > 0, y = a**b a normal float) takes a**(b-1) as
   y / a: one divide instead of a second pow, and within one float32
   ULP of the exact gradient (y carries half an ULP, the result rounds
   once), as torch's own float32 pow gradient is. */
CG_INLINE double cg_pow_grad_base_d(double g, double a, double b, double y) {
    return cg_pick_d(0.0, g * (b * pow(a, b - 1)), b == 0);
}
CG_INLINE double cg_pow_grad_base_fast(double g, double a, double b, double y) {
    return cg_pick_d(0.0, g * (b * (y / a)), b == 0);
}
/* torch: d/db a**b = a**b * log(a), defined as 0 where a == 0 and b >= 0. */
CG_INLINE double cg_pow_grad_exp_d(double g, double a, double b, double y) {
    return cg_pick_d(0.0, g * (y * log(a)), (a == 0) & (b >= 0));
}
CG_INLINE double cg_pow_grad_exp_fast(double g, double a, double b, double y) {
    return cg_pick_d(0.0, g * (y * cg_log_fast(a)), (a == 0) & (b >= 0));
}

/* torch's remainder: C's fmod moved to the divisor's sign (Python's %). */
CG_INLINE double cg_remainder_d(double a, double b) {
    double m = fmod(a, b);
    return cg_pick_d(m + b, m, (m != 0) & ((b < 0) != (m < 0)));
}
/* Python's float //, as torch's floor division: the quotient of a - fmod(a, b)
   (exact), moved down one where the remainder's sign is not b's, then
   rounded to the nearest integer (it is one up to the division's rounding);
   a zero quotient keeps the sign of a / b, and b == 0 gives a / b. */
CG_INLINE double cg_floor_divide_d(double a, double b) {
    double mod, div, q;
    if (b == 0)
        return a / b;
    mod = fmod(a, b);
    div = (a - mod) / b;
    if ((mod != 0) & ((b < 0) != (mod < 0)))
        div -= 1.0;
    if (div == 0)
        return copysign(0.0, a / b);
    q = floor(div);
    return div - q > 0.5 ? q + 1.0 : q;
}
/* log(exp(a) + exp(b)) = max + log1p(exp(-|a - b|)); two equal infinities
   are their own result (the formula would give inf - inf). */
CG_INLINE double cg_logaddexp_d(double a, double b) {
    if (isinf(a) && a == b)
        return a;
    return cg_pick_d(a, b, a >= b) + log1p(exp(-fabs(a - b)));
}

/* The inverse of erf: Winitzki's closed-form estimate (relative error below
   2e-3), then Halley steps on erf(y) = |x| (cubic: 2e-3 -> 1e-8 -> 1e-24).
   Above |x| = 0.5 the residual is written (1 - |x|) - erfc(y): 1 - |x| is
   exact there and erfc keeps its relative accuracy in the tail. */
CG_INLINE double cg_erfinv_d(double x) {
    double ax = fabs(x), w, t, y, f, d;
    int k;
    if (!(ax < 1.0))
        return ax == 1.0 ? copysign(INFINITY, x) : NAN;
    if (ax == 0)
        return x;
    w = log((1.0 - ax) * (1.0 + ax));
    t = 4.330746750799873 + 0.5 * w;     /* 2 / (pi * 0.147) */
    y = sqrt(sqrt(t * t - w / 0.147) - t);
    for (k = 0; k < 3; k++) {
        f = ax <= 0.5 ? erf(y) - ax : (1.0 - ax) - erfc(y);
        d = f / (1.1283791670955126 * exp(-y * y));
        y -= d / (1.0 + y * d);
    }
    return copysign(y, x);
}

/* Phi(x), the standard normal CDF (gelu's). double: 0.5 + 0.5 erf(x / sqrt 2)
   by libm, as torch.  float: branch-free and vectorizable, in double:
   Phi = 1 - e (x >= 0) or e, e = erfc(t) / 2 with t = |x| / sqrt 2 and
   erfc(t) = exp(-t^2) R(1 / (1 + t / 2)), R a degree-12 polynomial fitted
   by least squares to erfc(t) exp(t^2) on [0, 10.5] (relative error
   2.5e-10); t > 9 gives e = 0 (Phi < 2e-37).  gelu's float32 output is
   then within 1 ULP of x * Phi(x) rounded (libm's erf per element ran at
   ~12x torch's vectorized float gelu). */
CG_INLINE double cg_phi_d(double x) { return 0.5 + 0.5 * erf(x * 0.7071067811865476); }
CG_INLINE float cg_phi_f(float xf) {
    double x = xf, t, tc, s, r, e;
    t = fabs(x) * 0.7071067811865476;
    tc = cg_pick_d(t, 9.0, t < 9.0);
    s = 1.0 / (1.0 + 0.5 * tc);
    r = -0.035299161733889674;
    r = r * s + 0.2604962709254305;
    r = r * s + -0.8255996637445496;
    r = r * s + 1.4290442754235972;
    r = r * s + -1.4119105068888096;
    r = r * s + 0.7967323799205284;
    r = r * s + -0.3796758322471986;
    r = r * s + 0.20147173022231088;
    r = r * s + 0.1500354535691288;
    r = r * s + 0.2509079205766041;
    r = r * s + 0.2816777443558359;
    r = r * s + 0.2821200759234683;
    r = r * s + -6.865543175113629e-07;
    e = 0.5 * r * cg_exp_fast(-(tc * tc));
    e = cg_pick_d(0.0, e, t > 9.0);
    return (float)cg_pick_d(1.0 - e, e, x >= 0);
}

#endif
