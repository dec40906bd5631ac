/* clamp with number bounds (select.pyx's clamp_fwd and clamp_bwd).
 *
 * forward: min(max(x, lo), hi), NaN kept (each select takes x unless the
 * comparison holds, and comparisons with NaN are false); backward: g where
 * lo <= x <= hi (torch's rule: the gradient passes at a bound), else 0.
 * The loops were Cython's, compiled for the baseline CPU only: at 100,000
 * float32 clamp took 44 us, torch's 15.  Selects through cg_pick's integer
 * masks (branch-free in every copy, see select.pyx), not arithmetic, so
 * every copy gives the same bits. */
#ifndef CG_CLAMP_H
#define CG_CLAMP_H
#include "cg_math.h"
#include "cg_simd.h"

#define CG_CLAMP_DEF(S, T)                                                      \
CG_SIMD_FN(void, cg_clamp_fwd_##S, (const T *x, T lo, T hi, T *out,            \
                                    Py_ssize_t n), (x, lo, hi, out, n), {      \
    for (Py_ssize_t i = 0; i < n; i++) {                                        \
        T v = x[i];                                                             \
        v = cg_pick_##S(lo, v, v < lo);                                         \
        out[i] = cg_pick_##S(hi, v, v > hi);                                    \
    }                                                                           \
})                                                                              \
CG_SIMD_FN(void, cg_clamp_bwd_##S, (const T *x, const T *g, T lo, T hi, T *out, \
                                    Py_ssize_t n), (x, g, lo, hi, out, n), {   \
    for (Py_ssize_t i = 0; i < n; i++) {                                        \
        T v = x[i];                                                             \
        out[i] = cg_pick_##S(g[i], 0, (v >= lo) & (v <= hi));                   \
    }                                                                           \
})

CG_CLAMP_DEF(f, float)
CG_CLAMP_DEF(d, double)

#endif
