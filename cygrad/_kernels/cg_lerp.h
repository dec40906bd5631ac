/* lerp with a number weight (select.pyx's lerp_fwd), torch's roundings.
 *
 * torch's kernel computes fma(w, end - start, start) where |w| < 0.5 and
 * fma(-(end - start), 1 - w, end) elsewhere (exact at both ends), w and
 * 1 - w in the tensor's dtype.  Here too: one fma per element, an
 * instruction in the AVX2 and AVX-512 copies, the C library's fma (which
 * rounds the same way) in the portable one.  Composed of table ops (a sub,
 * a mul, an add without fma) a quarter of the float32 elements differed
 * from torch's by an ulp, in three passes and three nodes. */
#ifndef CG_LERP_H
#define CG_LERP_H
#include <math.h>
#include "cg_simd.h"

#define CG_LERP_DEF(S, T, FMA)                                                  \
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
})

CG_LERP_DEF(f, float, fmaf)
CG_LERP_DEF(d, double, fma)

#endif
