"""Row reductions of cygrad: softmax, log_softmax, logsumexp, var, sum, max/min.

Layout: every kernel works on C-contiguous rows, ``x`` of shape ``(rows, n)``;
the reduced axis is the last one.  ``cygrad.ops`` moves the reduced axes of a
tensor to the end (a copy only when they are not already there) and reshapes
to two dimensions.  Per-row results have shape ``(rows,)``.

Dtypes: ``real_t`` (float32 or float64).  Sums and means accumulate in double
(8 or 16 independent lanes), so float32 keeps its digits; results are rounded
to ``real_t`` once when stored.

Stability: softmax, log_softmax and logsumexp subtract the row maximum before
``exp``, so every argument of ``exp`` is <= 0: nothing overflows, and logits of
1e4 give the right answer.  ``var`` is two-pass (mean, then squared
deviations), never ``E[x^2] - E[x]^2``.

Speed: ``exp`` of a non-positive argument is the C helper ``cg_expf_le0`` /
``cg_exp_le0`` below, a range-reduced polynomial (max relative error about
1e-7 and 2e-16 against libm) written without branches, so that the row
helpers built on it (max, sum of exps, scaled exps) vectorize; each helper
is compiled for AVX2+FMA and for the baseline, and picked at load.  libm's
``exp`` is a call per element and costs 5-7x more; the whole point of a
compiled softmax is this loop.  Each row (a few KB) is read from memory once,
by the max, and every later pass over it hits L1 (when the caller passes
``rowmax``, the exp pass reads the row from memory instead).  The row
helpers are exported to ``loss.pyx`` through ``reductions.pxd`` (one exp,
not two).

NaN propagates as in torch (a NaN in a row makes that row's softmax NaN, its
max/min NaN at the first NaN's index); a row of all ``-inf`` gives NaN
softmax, as torch.

Aliasing: outputs must not alias inputs.
Threading: each ``def`` wrapper checks shapes with the GIL held, then
releases it for the loop; nothing inside ``nogil`` raises.
"""

from libc.math cimport log
from libc.stdint cimport int64_t
from libc.string cimport memset

from cygrad._kernels._types cimport real_t

cdef extern from *:
    """
    #include <math.h>
    #include <stdint.h>
    #include <string.h>
    /* Every helper below is compiled for AVX2 + FMA and for the baseline
       (CG_CLONES: see cg_simd.h). */
    #include "cg_simd.h"

    /* exp(v) for v <= 0 (every caller subtracts a row maximum or a
       log-sum-exp first).  Cody-Waite reduction v = k ln2 + r, |r| <= ln2/2,
       Taylor polynomial in r (degree 7 for float, 13 for double: truncation
       below half an ulp), 2^k built in the exponent bits.  k is rounded by
       adding 1.5 * 2^p (p = mantissa bits), whose low bits then hold k, so
       everything stays in SIMD registers; bit casts go through memcpy (no
       aliasing UB).  Below the smallest normal result the answer is 0 (also
       for -inf), applied as a bit mask: a ?: here would stop GCC from
       vectorizing the loops that call these.  NaN stays NaN. */
    static inline float cg_expf_le0(float v) {
        const float magic = 12582912.0f;
        const uint32_t mb = 0x4b400000u;
        float t = v * 1.44269504088896341f + magic;
        float k = t - magic;
        float r = v - k * 0.693359375f;
        r = r - k * -2.12194440e-4f;
        float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.66666667e-1f
                  + r * (4.16666667e-2f + r * (8.33333333e-3f
                  + r * (1.38888889e-3f + r * 1.98412698e-4f))))));
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
    static inline double cg_exp_le0(double v) {
        const double magic = 6755399441055744.0;
        const uint64_t mb = 0x4338000000000000ull;
        double t = v * 1.4426950408889634074 + magic;
        double k = t - magic;
        double r = v - k * 6.93147180369123816490e-01;
        r = r - k * 1.90821492927058770002e-10;
        double p = 1.0 + r * (1.0 + r * (1.0 / 2 + r * (1.0 / 6
            + r * (1.0 / 24 + r * (1.0 / 120 + r * (1.0 / 720
            + r * (1.0 / 5040 + r * (1.0 / 40320 + r * (1.0 / 362880
            + r * (1.0 / 3628800 + r * (1.0 / 39916800
            + r * (1.0 / 479001600 + r * (1.0 / 6227020800.0)))))))))))));
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

    /* 16-byte vectors (GCC/clang vector extensions): plain SSE2 in the
       baseline clone, VEX-encoded in the AVX2 one.  The row max reads each
       row from memory, so the narrower vector does not limit it. */
    typedef float cg_v4f __attribute__((vector_size(16)));
    typedef int32_t cg_v4i __attribute__((vector_size(16)));
    typedef double cg_v2d __attribute__((vector_size(16)));
    typedef int64_t cg_v2l __attribute__((vector_size(16)));
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
       cg_exp_sum: sum(exp(x - shift)); also stores each exp in y unless y is
       NULL (summed while still in registers).  No prefetch: the row is in L1
       after the max; a prefetch in this loop stops GCC vectorizing it, and
       a variant prefetching per 64 elements measured 5-13% slower.
       cg_exp_axpy: y = a * exp(x - shift) + b (b == NULL: no addend); y
       must not alias x or b (restrict: no run-time overlap checks).
       cg_scale, cg_sub2, cg_mul_sub, cg_sub_mul: y = x * a, (x - a) - b,
       x * (g - d), c * (x - a), elementwise (y may alias x).
       cg_sqdev: sum((x - mean)^2), the second pass of var.
       cg_softplus, cg_sigmoid: y = log1p(exp(-|x|)) and 1 / (1 + exp(-x))
       (as e / (1 + e) for x < 0), the logistic losses' elementwise parts;
       exp only ever sees -|x| <= 0.  y must not alias x. */
    #define CG_ROW_HELPERS(S, T, VT, VI, EXP, LOG1P)                                \
    static inline T cg_extreme_##S(const T *x, Py_ssize_t n, int is_min) {   \
        const Py_ssize_t L = sizeof(VT) / sizeof(T);                         \
        VT a0, a1, a2, a3, v0, v1, v2, v3;                                   \
        VI bad = {0};                                                        \
        Py_ssize_t i = 0;                                                    \
        T m = x[0];                                                          \
        int k, anybad = 0;                                                   \
        if (n >= 4 * L) {                                                    \
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
            for (k = 0; k < L; k++) {                                        \
                anybad |= bad[k] != 0;                                       \
                m = (is_min ? a0[k] < m : a0[k] > m) ? a0[k] : m;            \
                m = (is_min ? a1[k] < m : a1[k] > m) ? a1[k] : m;            \
                m = (is_min ? a2[k] < m : a2[k] > m) ? a2[k] : m;            \
                m = (is_min ? a3[k] < m : a3[k] > m) ? a3[k] : m;            \
            }                                                                \
        }                                                                    \
        for (; i < n; i++) {                                                 \
            m = (is_min ? x[i] < m : x[i] > m) ? x[i] : m;                   \
            anybad |= x[i] != x[i];                                          \
        }                                                                    \
        return anybad ? (T)NAN : m;                                          \
    }                                                                        \
    CG_CLONES static T cg_max_##S(const T *x, Py_ssize_t n) {                \
        return cg_extreme_##S(x, n, 0);                                      \
    }                                                                        \
    CG_CLONES static T cg_min_##S(const T *x, Py_ssize_t n) {                \
        return cg_extreme_##S(x, n, 1);                                      \
    }                                                                        \
    CG_CLONES static Py_ssize_t cg_find_##S(const T *x, T m, Py_ssize_t n) { \
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
    }                                                                        \
    CG_CLONES static double cg_lanes_##S(const T *x, const T *y,             \
                                         Py_ssize_t n) {                     \
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
    }                                                                        \
    CG_CLONES static double cg_exp_sum_##S(const T *x, T shift, T *y,        \
                                           Py_ssize_t n) {                   \
        double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0}, s;                        \
        Py_ssize_t i = 0;                                                    \
        int k;                                                               \
        T e;                                                                 \
        if (y == NULL) {                                                     \
            for (; i + 8 <= n; i += 8)                                       \
                for (k = 0; k < 8; k++)                                      \
                    acc[k] += (double)EXP(x[i + k] - shift);                 \
        } else {                                                             \
            for (; i + 8 <= n; i += 8)                                       \
                for (k = 0; k < 8; k++) {                                    \
                    e = EXP(x[i + k] - shift);                               \
                    y[i + k] = e;                                            \
                    acc[k] += (double)e;                                     \
                }                                                            \
        }                                                                    \
        s = ((acc[0] + acc[1]) + (acc[2] + acc[3]))                          \
            + ((acc[4] + acc[5]) + (acc[6] + acc[7]));                       \
        for (; i < n; i++) {                                                 \
            e = EXP(x[i] - shift);                                           \
            if (y != NULL) y[i] = e;                                         \
            s += (double)e;                                                  \
        }                                                                    \
        return s;                                                            \
    }                                                                        \
    CG_CLONES static void cg_exp_axpy_##S(const T *restrict x, T shift, T a, \
                                          const T *restrict b,               \
                                          T *restrict y, Py_ssize_t n) {     \
        Py_ssize_t i;                                                        \
        if (b == NULL)                                                       \
            for (i = 0; i < n; i++) y[i] = a * EXP(x[i] - shift);            \
        else                                                                 \
            for (i = 0; i < n; i++) y[i] = b[i] + a * EXP(x[i] - shift);     \
    }                                                                        \
    CG_CLONES static void cg_scale_##S(const T *x, T a, T *y, Py_ssize_t n) {\
        Py_ssize_t i;                                                        \
        for (i = 0; i < n; i++) y[i] = x[i] * a;                             \
    }                                                                        \
    CG_CLONES static void cg_sub2_##S(const T *x, T a, T b, T *y,            \
                                      Py_ssize_t n) {                        \
        Py_ssize_t i;                                                        \
        for (i = 0; i < n; i++) y[i] = (x[i] - a) - b;                       \
    }                                                                        \
    CG_CLONES static void cg_mul_sub_##S(const T *x, const T *g, T d, T *y,  \
                                         Py_ssize_t n) {                     \
        Py_ssize_t i;                                                        \
        for (i = 0; i < n; i++) y[i] = x[i] * (g[i] - d);                    \
    }                                                                        \
    CG_CLONES static void cg_sub_mul_##S(const T *x, T a, T c, T *y,         \
                                         Py_ssize_t n) {                     \
        Py_ssize_t i;                                                        \
        for (i = 0; i < n; i++) y[i] = c * (x[i] - a);                       \
    }                                                                        \
    CG_CLONES static double cg_sqdev_##S(const T *x, double mean,            \
                                         Py_ssize_t n) {                     \
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
    }                                                                        \
    CG_CLONES static void cg_softplus_##S(const T *restrict x,               \
                                          T *restrict y, Py_ssize_t n) {     \
        Py_ssize_t i;                                                        \
        for (i = 0; i < n; i++) {                                            \
            T a = x[i] < 0 ? -x[i] : x[i];                                   \
            y[i] = LOG1P(EXP(-a));                                           \
        }                                                                    \
    }                                                                        \
    CG_CLONES static void cg_sigmoid_##S(const T *restrict x,                \
                                         T *restrict y, Py_ssize_t n) {      \
        Py_ssize_t i;                                                        \
        for (i = 0; i < n; i++) {                                            \
            T a = x[i] < 0 ? -x[i] : x[i];                                   \
            T e = EXP(-a);                                                   \
            T top = x[i] >= 0 ? (T)1 : e;                                    \
            y[i] = top / (1 + e);                                            \
        }                                                                    \
    }
    CG_ROW_HELPERS(f, float, cg_v4f, cg_v4i, cg_expf_le0, cg_log1pf_01)
    CG_ROW_HELPERS(d, double, cg_v2d, cg_v2l, cg_exp_le0, cg_log1p_01)
    """
    float cg_max_f(const float* x, Py_ssize_t n) noexcept nogil
    double cg_max_d(const double* x, Py_ssize_t n) noexcept nogil
    float cg_min_f(const float* x, Py_ssize_t n) noexcept nogil
    double cg_min_d(const double* x, Py_ssize_t n) noexcept nogil
    Py_ssize_t cg_find_f(const float* x, float m, Py_ssize_t n) noexcept nogil
    Py_ssize_t cg_find_d(const double* x, double m, Py_ssize_t n) noexcept nogil
    double cg_lanes_f(const float* x, const float* y, Py_ssize_t n) noexcept nogil
    double cg_lanes_d(const double* x, const double* y,
                      Py_ssize_t n) noexcept nogil
    double cg_exp_sum_f(const float* x, float shift, float* y,
                        Py_ssize_t n) noexcept nogil
    double cg_exp_sum_d(const double* x, double shift, double* y,
                        Py_ssize_t n) noexcept nogil
    void cg_exp_axpy_f(const float* x, float shift, float a, const float* b,
                       float* y, Py_ssize_t n) noexcept nogil
    void cg_exp_axpy_d(const double* x, double shift, double a, const double* b,
                       double* y, Py_ssize_t n) noexcept nogil
    void cg_scale_f(const float* x, float a, float* y, Py_ssize_t n) noexcept nogil
    void cg_scale_d(const double* x, double a, double* y, Py_ssize_t n) noexcept nogil
    void cg_sub2_f(const float* x, float a, float b, float* y,
                   Py_ssize_t n) noexcept nogil
    void cg_sub2_d(const double* x, double a, double b, double* y,
                   Py_ssize_t n) noexcept nogil
    void cg_mul_sub_f(const float* x, const float* g, float d, float* y,
                      Py_ssize_t n) noexcept nogil
    void cg_mul_sub_d(const double* x, const double* g, double d, double* y,
                      Py_ssize_t n) noexcept nogil
    void cg_sub_mul_f(const float* x, float a, float c, float* y,
                      Py_ssize_t n) noexcept nogil
    void cg_sub_mul_d(const double* x, double a, double c, double* y,
                      Py_ssize_t n) noexcept nogil
    double cg_sqdev_f(const float* x, double mean, Py_ssize_t n) noexcept nogil
    double cg_sqdev_d(const double* x, double mean, Py_ssize_t n) noexcept nogil
    void cg_softplus_f(const float* x, float* y, Py_ssize_t n) noexcept nogil
    void cg_softplus_d(const double* x, double* y, Py_ssize_t n) noexcept nogil
    void cg_sigmoid_f(const float* x, float* y, Py_ssize_t n) noexcept nogil
    void cg_sigmoid_d(const double* x, double* y, Py_ssize_t n) noexcept nogil


# --- row helpers (declared in reductions.pxd, used by loss.pyx too) --------------

cdef real_t row_max(const real_t* x, Py_ssize_t n) noexcept nogil:
    if real_t is float:
        return cg_max_f(x, n)
    else:
        return cg_max_d(x, n)


cdef double row_sum(const real_t* x, Py_ssize_t n) noexcept nogil:
    if real_t is float:
        return cg_lanes_f(x, NULL, n)
    else:
        return cg_lanes_d(x, NULL, n)


cdef double row_dot(const real_t* x, const real_t* y, Py_ssize_t n) noexcept nogil:
    if real_t is float:
        return cg_lanes_f(x, y, n)
    else:
        return cg_lanes_d(x, y, n)


cdef double exp_sum(const real_t* x, real_t shift, real_t* y,
                    Py_ssize_t n) noexcept nogil:
    if real_t is float:
        return cg_exp_sum_f(x, shift, y, n)
    else:
        return cg_exp_sum_d(x, shift, y, n)


cdef void exp_axpy(const real_t* x, real_t shift, real_t a, const real_t* b,
                   real_t* y, Py_ssize_t n) noexcept nogil:
    if real_t is float:
        cg_exp_axpy_f(x, shift, a, b, y, n)
    else:
        cg_exp_axpy_d(x, shift, a, b, y, n)


cdef void softplus_neg_abs(const real_t* x, real_t* y, Py_ssize_t n) noexcept nogil:
    if real_t is float:
        cg_softplus_f(x, y, n)
    else:
        cg_softplus_d(x, y, n)


cdef void sigmoid(const real_t* x, real_t* y, Py_ssize_t n) noexcept nogil:
    if real_t is float:
        cg_sigmoid_f(x, y, n)
    else:
        cg_sigmoid_d(x, y, n)


cdef inline void _scale(const real_t* x, real_t a, real_t* y,
                        Py_ssize_t n) noexcept nogil:
    if real_t is float:
        cg_scale_f(x, a, y, n)
    else:
        cg_scale_d(x, a, y, n)


cdef inline void _sub2(const real_t* x, real_t a, real_t b, real_t* y,
                       Py_ssize_t n) noexcept nogil:
    if real_t is float:
        cg_sub2_f(x, a, b, y, n)
    else:
        cg_sub2_d(x, a, b, y, n)


cdef inline void _mul_sub(const real_t* x, const real_t* g, real_t d, real_t* y,
                          Py_ssize_t n) noexcept nogil:
    if real_t is float:
        cg_mul_sub_f(x, g, d, y, n)
    else:
        cg_mul_sub_d(x, g, d, y, n)


cdef inline real_t _nan(real_t like) noexcept nogil:
    cdef double z = 0.0
    return <real_t>(z / z)


cdef inline double _row_sqdev(const real_t* x, double mean,
                              Py_ssize_t n) noexcept nogil:
    if real_t is float:
        return cg_sqdev_f(x, mean, n)
    else:
        return cg_sqdev_d(x, mean, n)


cdef inline void _sub_mul(const real_t* x, real_t a, real_t c, real_t* y,
                          Py_ssize_t n) noexcept nogil:
    if real_t is float:
        cg_sub_mul_f(x, a, c, y, n)
    else:
        cg_sub_mul_d(x, a, c, y, n)


cdef void _check_rows(Py_ssize_t r0, Py_ssize_t n0, Py_ssize_t r1, Py_ssize_t n1,
                      str name) except *:
    if r0 != r1 or n0 != n1:
        raise ValueError(f"{name}: shapes [{r0}, {n0}] and [{r1}, {n1}] differ")


# --- softmax and log_softmax ------------------------------------------------------

cdef void _softmax_rows(const real_t* x, const real_t* rowmax, real_t* y,
                        Py_ssize_t rows, Py_ssize_t n, bint take_log) noexcept nogil:
    cdef Py_ssize_t r
    cdef real_t m
    for r in range(rows):
        m = rowmax[r] if rowmax != NULL else row_max(x, n)
        if take_log:
            # exp is only summed, never stored: y is written once.  Then
            # (x - m) - log(s), in this order, as torch: x - m is exact
            # near the maximum, so entries close to 0 keep their digits.
            _sub2(x, m, <real_t>log(exp_sum(x, m, NULL, n)), y, n)
        else:
            _scale(y, <real_t>(1.0 / exp_sum(x, m, y, n)), y, n)
        x += n
        y += n


def softmax_fwd(const real_t[:, ::1] x,     # in  (rows, n)
                real_t[:, ::1] out,         # out (rows, n)
                bint take_log=False,
                const real_t[::1] rowmax=None):  # in  (rows,) or None
    """out = softmax(x) (or log_softmax when ``take_log``) along each row.

    ``rowmax``, when given, is each row's maximum (NaN if the row has one);
    without it the kernel finds it, reading each row from memory once.
    """
    cdef Py_ssize_t rows = x.shape[0], n = x.shape[1]
    _check_rows(x.shape[0], x.shape[1], out.shape[0], out.shape[1], "softmax_fwd")
    if rowmax is not None and rowmax.shape[0] != rows:
        raise ValueError(f"softmax_fwd: rowmax has length {rowmax.shape[0]}, "
                         f"expected {rows}")
    if rows == 0 or n == 0:
        return
    with nogil:
        _softmax_rows(&x[0, 0], &rowmax[0] if rowmax is not None else NULL,
                      &out[0, 0], rows, n, take_log)


cdef void _softmax_bwd_rows(const real_t* y, const real_t* g, real_t* out,
                            Py_ssize_t rows, Py_ssize_t n) noexcept nogil:
    # grad_x = y * (g - sum(g * y))
    for _ in range(rows):
        _mul_sub(y, g, <real_t>row_dot(g, y, n), out, n)
        y += n
        g += n
        out += n


cdef void _log_softmax_bwd_rows(const real_t* y, const real_t* g, real_t* out,
                                Py_ssize_t rows, Py_ssize_t n) noexcept nogil:
    # grad_x = g - exp(y) * sum(g);  y = log_softmax(x) <= 0.
    for _ in range(rows):
        exp_axpy(y, 0, -<real_t>row_sum(g, n), g, out, n)
        y += n
        g += n
        out += n


def softmax_bwd(const real_t[:, ::1] y,     # in  (rows, n) softmax output
                const real_t[:, ::1] g,     # in  (rows, n) incoming gradient
                real_t[:, ::1] out,         # out (rows, n)
                bint take_log=False):
    """Gradient of softmax (or of log_softmax when ``take_log``) given its output."""
    cdef Py_ssize_t rows = y.shape[0], n = y.shape[1]
    _check_rows(y.shape[0], y.shape[1], g.shape[0], g.shape[1], "softmax_bwd")
    _check_rows(y.shape[0], y.shape[1], out.shape[0], out.shape[1], "softmax_bwd")
    if rows == 0 or n == 0:
        return
    with nogil:
        if take_log:
            _log_softmax_bwd_rows(&y[0, 0], &g[0, 0], &out[0, 0], rows, n)
        else:
            _softmax_bwd_rows(&y[0, 0], &g[0, 0], &out[0, 0], rows, n)


# --- logsumexp ---------------------------------------------------------------------

cdef void _logsumexp_rows(const real_t* x, const real_t* rowmax, real_t* out,
                          Py_ssize_t rows, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t r
    cdef real_t m
    for r in range(rows):
        m = rowmax[r] if rowmax != NULL else row_max(x, n)
        if m - m != 0:
            # +-inf or NaN maximum: exp(x - m) would be NaN; torch gives m.
            out[r] = m
            x += n
            continue
        out[r] = <real_t>(m + log(exp_sum(x, m, NULL, n)))
        x += n


def logsumexp_fwd(const real_t[:, ::1] x,    # in  (rows, n)
                  real_t[::1] out,           # out (rows,)
                  const real_t[::1] rowmax=None):  # in  (rows,) or None
    """out[r] = log(sum(exp(x[r]))), max-subtracted (``rowmax`` as softmax_fwd)."""
    cdef Py_ssize_t rows = x.shape[0], n = x.shape[1], r
    if out.shape[0] != rows or (rowmax is not None and rowmax.shape[0] != rows):
        raise ValueError(f"logsumexp_fwd: out has length {out.shape[0]}, "
                         f"expected {rows}")
    if rows == 0:
        return
    if n == 0:
        for r in range(rows):
            out[r] = -float("inf")
        return
    with nogil:
        _logsumexp_rows(&x[0, 0], &rowmax[0] if rowmax is not None else NULL,
                        &out[0], rows, n)


cdef void _logsumexp_bwd_rows(const real_t* x, const real_t* lse, const real_t* g,
                              real_t* out, Py_ssize_t rows,
                              Py_ssize_t n) noexcept nogil:
    # grad_x = g * exp(x - lse), every exponent <= 0.
    cdef Py_ssize_t r
    for r in range(rows):
        exp_axpy(x, lse[r], g[r], NULL, out, n)
        x += n
        out += n


def logsumexp_bwd(const real_t[:, ::1] x,    # in  (rows, n)
                  const real_t[::1] lse,     # in  (rows,) forward result
                  const real_t[::1] g,       # in  (rows,) incoming gradient
                  real_t[:, ::1] out):       # out (rows, n)
    """out = g[:, None] * exp(x - lse[:, None])."""
    cdef Py_ssize_t rows = x.shape[0], n = x.shape[1]
    _check_rows(x.shape[0], x.shape[1], out.shape[0], out.shape[1], "logsumexp_bwd")
    if lse.shape[0] != rows or g.shape[0] != rows:
        raise ValueError(f"logsumexp_bwd: lse/g have lengths {lse.shape[0]}/"
                         f"{g.shape[0]}, expected {rows}")
    if rows == 0 or n == 0:
        return
    with nogil:
        _logsumexp_bwd_rows(&x[0, 0], &lse[0], &g[0], &out[0, 0], rows, n)


# --- variance ----------------------------------------------------------------------

def var_fwd(const real_t[:, ::1] x,     # in  (rows, n)
            double correction,
            real_t[::1] out,            # out (rows,) variance
            real_t[::1] mean):          # out (rows,) mean, kept for backward
    """Two-pass variance with ``sum((x - mean)^2) / (n - correction)``.

    A non-positive denominator gives inf (or NaN for an empty row), as torch.
    """
    cdef Py_ssize_t rows = x.shape[0], n = x.shape[1], r
    cdef double mu, ss, denom = n - correction
    if out.shape[0] != rows or mean.shape[0] != rows:
        raise ValueError(f"var_fwd: out/mean have lengths {out.shape[0]}/"
                         f"{mean.shape[0]}, expected {rows}")
    if rows == 0:
        return
    with nogil:
        for r in range(rows):
            if n == 0:
                mu = 0.0
                ss = 0.0
            else:
                mu = row_sum(&x[r, 0], n) / n
                ss = _row_sqdev(&x[r, 0], mu, n)
            mean[r] = <real_t>mu
            out[r] = <real_t>(ss / denom) if denom > 0 else <real_t>(
                ss / 0.0 if ss != 0 else _nan(<real_t>0))


def var_bwd(const real_t[:, ::1] x,     # in  (rows, n)
            const real_t[::1] mean,     # in  (rows,)
            const real_t[::1] g,        # in  (rows,)
            double scale,               # 2 / (n - correction)
            real_t[:, ::1] out):        # out (rows, n)
    """out = g[:, None] * scale * (x - mean[:, None])."""
    cdef Py_ssize_t rows = x.shape[0], n = x.shape[1], r
    _check_rows(x.shape[0], x.shape[1], out.shape[0], out.shape[1], "var_bwd")
    if mean.shape[0] != rows or g.shape[0] != rows:
        raise ValueError("var_bwd: mean/g must have one value per row")
    if rows == 0 or n == 0:
        return
    with nogil:
        for r in range(rows):
            _sub_mul(&x[r, 0], mean[r], <real_t>(g[r] * scale), &out[r, 0], n)


# --- sum, max and min along rows ---------------------------------------------------

def sum_fwd(const real_t[:, ::1] x,     # in  (rows, n)
            real_t[::1] out):           # out (rows,)
    """out[r] = sum(x[r]), accumulated in double (8 lanes)."""
    cdef Py_ssize_t rows = x.shape[0], n = x.shape[1], r
    if out.shape[0] != rows:
        raise ValueError(f"sum_fwd: out has length {out.shape[0]}, expected {rows}")
    if rows == 0:
        return
    with nogil:
        for r in range(rows):
            out[r] = <real_t>(row_sum(&x[r, 0], n) if n > 0 else 0.0)


cdef inline real_t _row_min(const real_t* x, Py_ssize_t n) noexcept nogil:
    if real_t is float:
        return cg_min_f(x, n)
    else:
        return cg_min_d(x, n)


cdef inline Py_ssize_t _find(const real_t* x, real_t m, Py_ssize_t n) noexcept nogil:
    if real_t is float:
        return cg_find_f(x, m, n)
    else:
        return cg_find_d(x, m, n)


def extreme_dim_fwd(const real_t[:, ::1] x,     # in  (rows, n), n >= 1
                    real_t[::1] values,         # out (rows,)
                    int64_t[::1] indices,       # out (rows,)
                    bint is_min=False):
    """values[r] = max (min when ``is_min``) of x[r]; indices[r] = its first index.

    A row holding NaN gives NaN and the index of its first NaN (torch).  Two
    passes per row: a vectorized max, then a vectorized search for the first
    match in the row, which the first pass left in L1.
    """
    cdef Py_ssize_t rows = x.shape[0], n = x.shape[1], r
    cdef real_t m
    if values.shape[0] != rows or indices.shape[0] != rows:
        raise ValueError(f"extreme_dim_fwd: values/indices have lengths "
                         f"{values.shape[0]}/{indices.shape[0]}, expected {rows}")
    if rows == 0:
        return
    if n == 0:
        raise ValueError("extreme_dim_fwd: rows are empty")
    with nogil:
        for r in range(rows):
            m = _row_min(&x[r, 0], n) if is_min else row_max(&x[r, 0], n)
            values[r] = m
            indices[r] = _find(&x[r, 0], m, n)


def extreme_dim_bwd(const int64_t[::1] indices,   # in  (rows,) from the forward
                    const real_t[::1] g,          # in  (rows,)
                    real_t[:, ::1] out):          # out (rows, n)
    """out = 0 except out[r, indices[r]] = g[r] (the gradient of max/min)."""
    cdef Py_ssize_t rows = out.shape[0], n = out.shape[1], r
    if indices.shape[0] != rows or g.shape[0] != rows:
        raise ValueError(f"extreme_dim_bwd: indices/g have lengths "
                         f"{indices.shape[0]}/{g.shape[0]}, expected {rows}")
    for r in range(rows):
        if indices[r] < 0 or indices[r] >= n:
            raise IndexError(f"extreme_dim_bwd: index {indices[r]} out of range "
                             f"for rows of {n}")
    if rows == 0 or n == 0:
        return
    with nogil:
        for r in range(rows):
            memset(&out[r, 0], 0, n * sizeof(real_t))
            out[r, indices[r]] = g[r]
