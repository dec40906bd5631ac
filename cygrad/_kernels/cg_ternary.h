/* torch's pointwise ternary ops with a number weight or value, with its
 * roundings (select.pyx's lerp_fwd and addc_fwd).
 *
 * lerp: fma(w, end - start, start) where |w| < 0.5, fma(-(end - start),
 * 1 - w, end) elsewhere (exact at both ends); addcmul: fma(value * t1, t2,
 * self); addcdiv: self + (value * t1) / t2; add and sub with alpha:
 * fma(other, alpha, self) (sub negates alpha).  w, 1 - w, value and alpha
 * are in the tensor's dtype.  One fma per element where torch's kernel has one:
 * an instruction in the AVX2 and AVX-512 copies, the C library's fma
 * (which rounds the same way) in the portable one.  Composed of table ops
 * (no fma, or value applied last) about a fifth of the float32 elements
 * differed from torch's by an ulp, in three passes and three nodes. */
#ifndef CG_TERNARY_H
#define CG_TERNARY_H
#include <math.h>
#include "cg_simd.h"

#define CG_TERNARY_DEF(S, T, FMA)                                               \
CG_SIMD_FN(void, cg_lerp_##S, (const T *a, const T *b, T w, T *out,            \
                               Py_ssize_t n), (a, b, w, out, n), {             \
    Py_ssize_t i;                                                               \
    if (w < (T)0.5 && w > (T)-0.5) {                                            \
        for (i = 0; i < n; i++)                                                 \
            out[i] = FMA(w, b[i] - a[i], a[i]);                                 \
    } else {                                                                    \
        T c = (T)1 - w;                                                         \
        for (i = 0; i < n; i++)                                                 \
            out[i] = FMA(-(b[i] - a[i]), c, b[i]);                              \
    }                                                                           \
})                                                                              \
/* a weight per element: torch's blend of the two forms, fma(w or w - 1,  \
   end - start, start or end) (w - 1 = -(1 - w) exactly) */                     \
CG_SIMD_FN(void, cg_lerp_t_##S, (const T *a, const T *b, const T *w, T *out,   \
                                 Py_ssize_t n), (a, b, w, out, n), {           \
    for (Py_ssize_t i = 0; i < n; i++) {                                        \
        T wi = w[i];                                                            \
        int near = wi < (T)0.5 && wi > (T)-0.5;                                 \
        out[i] = FMA(near ? wi : wi - (T)1, b[i] - a[i], near ? a[i] : b[i]);   \
    }                                                                           \
})                                                                              \
/* div: addcdiv, else addcmul */                                                \
CG_SIMD_FN(void, cg_addc_##S, (const T *s, const T *t1, const T *t2, T value,  \
                               int div, T *out, Py_ssize_t n),                 \
           (s, t1, t2, value, div, out, n), {                                   \
    Py_ssize_t i;                                                               \
    if (div) {                                                                  \
        for (i = 0; i < n; i++)                                                 \
            out[i] = s[i] + (value * t1[i]) / t2[i];                            \
    } else {                                                                    \
        for (i = 0; i < n; i++)                                                 \
            out[i] = FMA(value * t1[i], t2[i], s[i]);                           \
    }                                                                           \
})

#define CG_AXPY_DEF(S, T, FMA)                                                  \
CG_SIMD_FN(void, cg_add_alpha_##S, (const T *a, const T *b, T alpha, T *out,   \
                                    Py_ssize_t n), (a, b, alpha, out, n), {    \
    for (Py_ssize_t i = 0; i < n; i++)                                          \
        out[i] = FMA(b[i], alpha, a[i]);                                        \
})

CG_AXPY_DEF(f, float, fmaf)
CG_AXPY_DEF(d, double, fma)
CG_TERNARY_DEF(f, float, fmaf)
CG_TERNARY_DEF(d, double, fma)

#endif
