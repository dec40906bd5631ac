/* GELU (x Phi(x)) in float32 keeping what its backward needs.
 *
 * The op table's gelu node saves x only, so its backward computes the
 * Gaussian and Phi a second time: at (512, 256) forward + backward cost
 * ~515 us, torch's ~450.  cg_gelu_keep_f writes, beside y, the derivative
 * d = Phi(x) + x phi(x) of each element (phi(x) = 0.3989... exp(-x^2 / 2)),
 * and cg_gelu_bwd_kept_f is then one multiply: g d.  (An earlier version
 * kept Phi and phi apart: one more array written and read for the same
 * bits.)
 *
 * Bits: the same as the table's kernels (elementwise.pyx, generated from
 * optable.py's gelu row), element for element: the fast lanes are the
 * cg_math.h functions the table's kernels call (cg_phif_from and
 * cg_gaussf_fast, as cg_phif_fast and cg_dgeluf_fast combine them), in the
 * same order, with contraction off; the elements outside the fast guards
 * (x <= -13 or NaN forward, |x| >= 13 backward) take the table's double
 * formulas.  tests/test_nn_activation.py compares both paths bit for bit. */
#ifndef CG_ACT_H
#define CG_ACT_H
#include <math.h>
#include "cg_math.h"
#include "cg_simd.h"

#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")

/* the table's slow lanes: Phi by erfc in double */
CG_INLINE float cg_gelu_slow_f(float x) {
    return (float)((double)x * cg_phi_erfc_d((double)x));
}

CG_INLINE float cg_dgelu_slow_f(float g, float x) {
    double xd = (double)x;
    return (float)((double)g * (cg_phi_erfc_d(xd)
                                + xd * (0.3989422804014327 * exp(-0.5 * (xd * xd)))));
}

/* Blocks of 256 elements: a block holding an element outside the fast
   guard has that element redone (rare: a whole-array second pass cost
   ~130 us at 131k elements for one such element). */
#define CG_ACT_BLOCK 256

CG_SIMD_FN(void, cg_gelu_keep_f, (const float *x, float *y, float *d, Py_ssize_t n),
           (x, y, d, n), {
    Py_ssize_t i0, i, m;
    for (i0 = 0; i0 < n; i0 += CG_ACT_BLOCK) {
        int bad = 0;
        m = n - i0 < CG_ACT_BLOCK ? n : i0 + CG_ACT_BLOCK;
        for (i = i0; i < m; i++) {
            float xi = x[i], ax = fabsf(xi);
            float a = cg_pick_f(ax, 13.0f, ax < 13.0f);
            float g = cg_gaussf_fast(a);
            float p = cg_phif_from(xi, a, g);
            d[i] = p + xi * (0.3989422804014327f * g);     /* cg_dgeluf_fast */
            y[i] = xi * p;
            bad |= !cg_phif_ok(xi);
        }
        if (bad)
            for (i = i0; i < m; i++)
                if (!cg_phif_ok(x[i]))
                    y[i] = cg_gelu_slow_f(x[i]);
    }
})

CG_SIMD_FN(void, cg_gelu_bwd_kept_f, (const float *g, const float *x, const float *d,
                                      float *out, Py_ssize_t n),
           (g, x, d, out, n), {
    Py_ssize_t i0, i, m;
    for (i0 = 0; i0 < n; i0 += CG_ACT_BLOCK) {
        int bad = 0;
        m = n - i0 < CG_ACT_BLOCK ? n : i0 + CG_ACT_BLOCK;
        for (i = i0; i < m; i++) {
            out[i] = g[i] * d[i];
            bad |= !(fabsf(x[i]) < 13.0f);
        }
        if (bad)
            for (i = i0; i < m; i++)
                if (!(fabsf(x[i]) < 13.0f))
                    out[i] = cg_dgelu_slow_f(g[i], x[i]);
    }
})

#pragma GCC pop_options
#endif
