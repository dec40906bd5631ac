/* The optimizer update loops of one dtype, included twice by cg_optim.h:
 * T is the element type (float or double), S the name suffix (f or d),
 * CG_O_SQRT and CG_O_FABS its sqrt and fabs.  Read cg_optim.h first (order of
 * operations, why no FMA); the formulas are in the docstrings of the
 * optim.pyx / optim2.pyx wrappers that call these.
 *
 * Shape of each update: a loop body CG_INLINE (always inlined) whose options
 * are int arguments, and one CG_SIMD_FN that calls it with literal flags for
 * the common configurations (each becomes its own branch-free, vectorized
 * loop in each of the three copies) and once with the flags as variables for
 * every other combination.  ``sign`` (maximize) is a multiplication by +-1,
 * which is exact and needs no flag.  No loop body raises or allocates. */

#define CG_O_CAT2(a, b) a##_##b
#define CG_O_CAT(a, b) CG_O_CAT2(a, b)
#define CG_O(name) CG_O_CAT(name, S)
/* CG_SIMD_FN pastes onto its name argument, which must therefore arrive
   expanded: this wrapper expands CG_O(...) first. */
#define CG_O_FN(ret, name, params, args, ...) CG_SIMD_FN(ret, name, params, args, __VA_ARGS__)
#define CG_O_FN2(ret, name, params, args, ...) \
    CG_O_AVX2_FN(ret, name, params, args, __VA_ARGS__)

/* ATen's lerp: start + w (end - start) for |w| < 0.5 (small), else
   end - (end - start) (1 - w), so that both ends are exact; each in one
   fma, as torch's kernel rounds it (cg_ternary.h). */
CG_INLINE T CG_O(cg_o_lerp)(T start, T end, T weight, int small) {
    return small ? CG_O_FMA(weight, end - start, start)
                 : CG_O_FMA(-(end - start), (T)1 - weight, end);
}

/* torch.maximum: a NaN on either side wins. */
CG_INLINE T CG_O(cg_o_max_nan)(T a, T b) {
    return ((a > b) | (a != a)) ? a : b;
}

/* ---------------------------------------------------------------- SGD */

/* mode: 0 no momentum, 1 the buffer starts as g, 2 the buffer update. */
CG_INLINE void CG_O(cg_sgd_loop)(T* p, const T* grad, T* buf, ptrdiff_t n, T neg_lr,
                                 T wd, T mu, T damp1, T sign, int mode,
                                 int nesterov, int l2) {
    for (ptrdiff_t i = 0; i < n; i++) {
        T pi = p[i];
        T g = sign * grad[i];
        T b;
        if (l2)
            g = CG_O_FMA(pi, wd, g);
        if (mode == 1) {
            b = g;
            buf[i] = b;
            g = nesterov ? CG_O_FMA(b, mu, g) : b;
        } else if (mode == 2) {
            b = CG_O_FMA(g, damp1, buf[i] * mu);
            buf[i] = b;
            g = nesterov ? CG_O_FMA(b, mu, g) : b;
        }
        p[i] = CG_O_FMA(g, neg_lr, pi);
    }
}

CG_O_FN(void, CG_O(cg_sgd), (T* p, const T* grad, T* buf, ptrdiff_t n, T neg_lr,
                             T wd, T mu, T damp1, T sign, int mode, int nesterov),
        (p, grad, buf, n, neg_lr, wd, mu, damp1, sign, mode, nesterov), {
    int l2 = wd != 0;
    if (mode == 0 && !l2)
        CG_O(cg_sgd_loop)(p, grad, buf, n, neg_lr, wd, mu, damp1, sign, 0, 0, 0);
    else if (mode == 0)
        CG_O(cg_sgd_loop)(p, grad, buf, n, neg_lr, wd, mu, damp1, sign, 0, 0, 1);
    else if (mode == 2 && !nesterov && !l2)
        CG_O(cg_sgd_loop)(p, grad, buf, n, neg_lr, wd, mu, damp1, sign, 2, 0, 0);
    else if (mode == 2 && !nesterov)
        CG_O(cg_sgd_loop)(p, grad, buf, n, neg_lr, wd, mu, damp1, sign, 2, 0, 1);
    else if (mode == 2 && !l2)
        CG_O(cg_sgd_loop)(p, grad, buf, n, neg_lr, wd, mu, damp1, sign, 2, 1, 0);
    else
        CG_O(cg_sgd_loop)(p, grad, buf, n, neg_lr, wd, mu, damp1, sign, mode,
                          nesterov, l2);
})

/* ------------------------------------------------------ Adam and AdamW */

/* sqrt(v) / c in IEEE's bits without the division, for 0 < c <= 1 with
   rc = 1 / c (rounded): q = s rc is within an ulp of s / c, the remainder
   s - q c is exact in an fma, and q + remainder rc rounds to s / c
   (Markstein's correction; exact here because s, a square root, is never
   small enough for the remainder to underflow: s >= 2^-75 in float32,
   2^-537 in float64, or 0).  s = +inf makes the remainder NaN: the plain
   product inf is s / c then.  Adam's loop is bound by the divide/sqrt
   unit, and this takes one of its three operations there away.  Checked
   against the division on 5e9 pairs (every float32 mantissa of s in
   [1, 4) for 200 values of c, and random pairs of both dtypes). */
CG_INLINE T CG_O(cg_o_div_unit)(T s, T c, T rc) {
    T q = s * rc;
    T r = CG_O_FMA(-q, c, s);
    T qc = CG_O_FMA(r, rc, q);
    return r == r ? qc : q;
}

CG_INLINE void CG_O(cg_adam_loop)(T* p, const T* grad, T* m, T* v, T* vmax,
                                  ptrdiff_t n, T b1c, T b2, T b2c, T bc2_sqrt,
                                  T eps, T neg_step_size, T wd, T decay, T sign,
                                  int ams, int l2, int small, int fast_div) {
    T rbc = (T)1 / bc2_sqrt;
    for (ptrdiff_t i = 0; i < n; i++) {
        T pi = p[i] * decay;
        T g = sign * grad[i];
        T mi, vi, denom;
        if (l2)
            g = CG_O_FMA(pi, wd, g);
        mi = CG_O(cg_o_lerp)(m[i], g, b1c, small);
        m[i] = mi;
        vi = CG_O_FMA(b2c * g, g, v[i] * b2);
        v[i] = vi;
        if (ams) {
            vi = CG_O(cg_o_max_nan)(vmax[i], vi);
            vmax[i] = vi;
        }
        if (fast_div)
            denom = CG_O(cg_o_div_unit)(CG_O_SQRT(vi), bc2_sqrt, rbc) + eps;
        else
            denom = CG_O_SQRT(vi) / bc2_sqrt + eps;
        p[i] = pi + (neg_step_size * mi) / denom;
    }
}

/* vmax is NULL unless amsgrad; wd is 0 for AdamW, whose decay is 1 - lr wd
   (Adam passes decay = 1: p * 1 is exact).  The common configurations run
   the division-free sqrt(v) / bc2_sqrt where an fma is an instruction (the
   AVX2 + FMA copy; cg_simd_v3 is 0 when the portable copy runs). */
/* AVX2 at most (CG_O_AVX2_FN in cg_optim.h says why) */
CG_O_FN2(void, CG_O(cg_adam), (T* p, const T* grad, T* m, T* v, T* vmax, ptrdiff_t n,
                              T b1c, T b2, T b2c, T bc2_sqrt, T eps,
                              T neg_step_size, T wd, T decay, T sign),
        (p, grad, m, v, vmax, n, b1c, b2, b2c, bc2_sqrt, eps, neg_step_size, wd,
         decay, sign), {
    int ams = vmax != NULL, l2 = wd != 0, small = CG_O_FABS(b1c) < (T)0.5;
    int fast = cg_simd_v3 && bc2_sqrt > 0 && bc2_sqrt <= 1;
    if (small && !ams && !l2 && fast)
        CG_O(cg_adam_loop)(p, grad, m, v, vmax, n, b1c, b2, b2c, bc2_sqrt, eps,
                           neg_step_size, wd, decay, sign, 0, 0, 1, 1);
    else if (small && !ams && fast)
        CG_O(cg_adam_loop)(p, grad, m, v, vmax, n, b1c, b2, b2c, bc2_sqrt, eps,
                           neg_step_size, wd, decay, sign, 0, 1, 1, 1);
    else if (small && !l2 && fast)
        CG_O(cg_adam_loop)(p, grad, m, v, vmax, n, b1c, b2, b2c, bc2_sqrt, eps,
                           neg_step_size, wd, decay, sign, 1, 0, 1, 1);
    else
        CG_O(cg_adam_loop)(p, grad, m, v, vmax, n, b1c, b2, b2c, bc2_sqrt, eps,
                           neg_step_size, wd, decay, sign, ams, l2, small, fast);
})

/* ------------------------------------------------------------ RMSprop */

CG_INLINE void CG_O(cg_rmsprop_loop)(T* p, const T* grad, T* v, T* ga, T* buf,
                                     ptrdiff_t n, T neg_lr, T alpha, T alpha_c,
                                     T eps, T wd, T mu, T sign, int centered,
                                     int use_buf, int l2, int small) {
    for (ptrdiff_t i = 0; i < n; i++) {
        T pi = p[i];
        T g = sign * grad[i];
        T vi, avg;
        if (l2)
            g = CG_O_FMA(pi, wd, g);
        vi = CG_O_FMA(alpha_c * g, g, v[i] * alpha);
        v[i] = vi;
        if (centered) {
            T gai = CG_O(cg_o_lerp)(ga[i], g, alpha_c, small);
            ga[i] = gai;
            /* torch's addcmul(value=-1): fma(-1 * ga, ga, v) */
            vi = CG_O_FMA(-gai, gai, vi);
        }
        avg = CG_O_SQRT(vi) + eps;
        if (use_buf) {
            T b = buf[i] * mu + g / avg;
            buf[i] = b;
            p[i] = CG_O_FMA(b, neg_lr, pi);
        } else {
            p[i] = pi + (neg_lr * g) / avg;
        }
    }
}

/* ga is NULL unless centered, buf NULL unless momentum > 0. */
CG_O_FN(void, CG_O(cg_rmsprop), (T* p, const T* grad, T* v, T* ga, T* buf,
                                 ptrdiff_t n, T neg_lr, T alpha, T alpha_c, T eps,
                                 T wd, T mu, T sign),
        (p, grad, v, ga, buf, n, neg_lr, alpha, alpha_c, eps, wd, mu, sign), {
    int centered = ga != NULL, use_buf = buf != NULL, l2 = wd != 0;
    int small = CG_O_FABS(alpha_c) < (T)0.5;
    if (small && !l2 && !centered && !use_buf)
        CG_O(cg_rmsprop_loop)(p, grad, v, ga, buf, n, neg_lr, alpha, alpha_c, eps,
                              wd, mu, sign, 0, 0, 0, 1);
    else if (small && !l2 && !centered)
        CG_O(cg_rmsprop_loop)(p, grad, v, ga, buf, n, neg_lr, alpha, alpha_c, eps,
                              wd, mu, sign, 0, 1, 0, 1);
    else if (small && !l2 && !use_buf)
        CG_O(cg_rmsprop_loop)(p, grad, v, ga, buf, n, neg_lr, alpha, alpha_c, eps,
                              wd, mu, sign, 1, 0, 0, 1);
    else
        CG_O(cg_rmsprop_loop)(p, grad, v, ga, buf, n, neg_lr, alpha, alpha_c, eps,
                              wd, mu, sign, centered, use_buf, l2, small);
})

/* ------------------------------------------------------------ Adagrad */

CG_INLINE void CG_O(cg_adagrad_loop)(T* p, const T* grad, T* s, ptrdiff_t n,
                                     T neg_clr, T eps, T wd, T sign, int l2) {
    for (ptrdiff_t i = 0; i < n; i++) {
        T pi = p[i];
        T g = sign * grad[i];
        T si;
        if (l2)
            g = CG_O_FMA(pi, wd, g);
        si = CG_O_FMA(g, g, s[i]);
        s[i] = si;
        p[i] = pi + (neg_clr * g) / (CG_O_SQRT(si) + eps);
    }
}

CG_O_FN(void, CG_O(cg_adagrad), (T* p, const T* grad, T* s, ptrdiff_t n, T neg_clr,
                                 T eps, T wd, T sign),
        (p, grad, s, n, neg_clr, eps, wd, sign), {
    if (wd == 0)
        CG_O(cg_adagrad_loop)(p, grad, s, n, neg_clr, eps, wd, sign, 0);
    else
        CG_O(cg_adagrad_loop)(p, grad, s, n, neg_clr, eps, wd, sign, 1);
})

/* -------------------------------------------------------------- NAdam */

CG_INLINE void CG_O(cg_nadam_loop)(T* p, const T* grad, T* m, T* v, ptrdiff_t n,
                                   T b1c, T b2, T b2c, T bc2, T eps, T wd, T decay,
                                   T coef_g, T coef_m, T sign, int l2,
                                   int decoupled, int small) {
    for (ptrdiff_t i = 0; i < n; i++) {
        T pi = p[i];
        T g, mi, vi, denom;
        if (decoupled)
            pi = pi * decay;
        g = sign * grad[i];
        if (l2)
            g = CG_O_FMA(pi, wd, g);
        mi = CG_O(cg_o_lerp)(m[i], g, b1c, small);
        m[i] = mi;
        vi = CG_O_FMA(b2c * g, g, v[i] * b2);
        v[i] = vi;
        denom = CG_O_SQRT(vi / bc2) + eps;
        pi = pi + (coef_g * g) / denom;
        p[i] = pi + (coef_m * mi) / denom;
    }
}

CG_O_FN(void, CG_O(cg_nadam), (T* p, const T* grad, T* m, T* v, ptrdiff_t n, T b1c,
                               T b2, T b2c, T bc2, T eps, T wd, T decay, T coef_g,
                               T coef_m, T sign, int l2, int decoupled, int small),
        (p, grad, m, v, n, b1c, b2, b2c, bc2, eps, wd, decay, coef_g, coef_m, sign,
         l2, decoupled, small), {
    if (small && !l2 && !decoupled)
        CG_O(cg_nadam_loop)(p, grad, m, v, n, b1c, b2, b2c, bc2, eps, wd, decay,
                            coef_g, coef_m, sign, 0, 0, 1);
    else if (small && !l2)
        CG_O(cg_nadam_loop)(p, grad, m, v, n, b1c, b2, b2c, bc2, eps, wd, decay,
                            coef_g, coef_m, sign, 0, 1, 1);
    else
        CG_O(cg_nadam_loop)(p, grad, m, v, n, b1c, b2, b2c, bc2, eps, wd, decay,
                            coef_g, coef_m, sign, l2, decoupled, small);
})

/* -------------------------------------------------------------- RAdam */

CG_INLINE void CG_O(cg_radam_loop)(T* p, const T* grad, T* m, T* v, ptrdiff_t n,
                                   T b1c, T b2, T b2c, T bc1, T bc2_sqrt, T eps,
                                   T lr, T rect, T wd, T decay, T sign, int l2,
                                   int decoupled, int small, int rectify) {
    for (ptrdiff_t i = 0; i < n; i++) {
        T pi = p[i];
        T g, mi, vi, b;
        if (decoupled)
            pi = pi * decay;
        g = sign * grad[i];
        if (l2)
            g = CG_O_FMA(pi, wd, g);
        mi = CG_O(cg_o_lerp)(m[i], g, b1c, small);
        m[i] = mi;
        vi = CG_O_FMA(b2c * g, g, v[i] * b2);
        v[i] = vi;
        b = (mi / bc1) * lr;
        if (rectify)
            b = (b * (((T)1 / (CG_O_SQRT(vi) + eps)) * bc2_sqrt)) * rect;
        p[i] = pi - b;
    }
}

CG_O_FN(void, CG_O(cg_radam), (T* p, const T* grad, T* m, T* v, ptrdiff_t n, T b1c,
                               T b2, T b2c, T bc1, T bc2_sqrt, T eps, T lr, T rect,
                               T wd, T decay, T sign, int l2, int decoupled,
                               int small, int rectify),
        (p, grad, m, v, n, b1c, b2, b2c, bc1, bc2_sqrt, eps, lr, rect, wd, decay,
         sign, l2, decoupled, small, rectify), {
    if (small && !l2 && !decoupled && rectify)
        CG_O(cg_radam_loop)(p, grad, m, v, n, b1c, b2, b2c, bc1, bc2_sqrt, eps, lr,
                            rect, wd, decay, sign, 0, 0, 1, 1);
    else if (small && !l2 && !decoupled)
        CG_O(cg_radam_loop)(p, grad, m, v, n, b1c, b2, b2c, bc1, bc2_sqrt, eps, lr,
                            rect, wd, decay, sign, 0, 0, 1, 0);
    else
        CG_O(cg_radam_loop)(p, grad, m, v, n, b1c, b2, b2c, bc1, bc2_sqrt, eps, lr,
                            rect, wd, decay, sign, l2, decoupled, small, rectify);
})

/* ------------------------------------------------------------- Adamax */

CG_INLINE void CG_O(cg_adamax_loop)(T* p, const T* grad, T* m, T* u, ptrdiff_t n,
                                    T b1c, T b2, T eps, T neg_clr, T wd, T sign,
                                    int l2, int small) {
    for (ptrdiff_t i = 0; i < n; i++) {
        T pi = p[i];
        T g = sign * grad[i];
        T mi, ui;
        if (l2)
            g = CG_O_FMA(pi, wd, g);
        mi = CG_O(cg_o_lerp)(m[i], g, b1c, small);
        m[i] = mi;
        ui = CG_O(cg_o_max_nan)(u[i] * b2, CG_O_FABS(g) + eps);
        u[i] = ui;
        p[i] = pi + (neg_clr * mi) / ui;
    }
}

CG_O_FN(void, CG_O(cg_adamax), (T* p, const T* grad, T* m, T* u, ptrdiff_t n, T b1c,
                                T b2, T eps, T neg_clr, T wd, T sign, int l2,
                                int small),
        (p, grad, m, u, n, b1c, b2, eps, neg_clr, wd, sign, l2, small), {
    if (small && !l2)
        CG_O(cg_adamax_loop)(p, grad, m, u, n, b1c, b2, eps, neg_clr, wd, sign, 0, 1);
    else
        CG_O(cg_adamax_loop)(p, grad, m, u, n, b1c, b2, eps, neg_clr, wd, sign, l2,
                             small);
})

/* ----------------------------------------------------------- Adadelta */

CG_INLINE void CG_O(cg_adadelta_loop)(T* p, const T* grad, T* v, T* a, ptrdiff_t n,
                                      T rho, T rho_c, T eps, T neg_lr, T wd, T sign,
                                      int l2) {
    for (ptrdiff_t i = 0; i < n; i++) {
        T pi = p[i];
        T g = sign * grad[i];
        T vi, d;
        if (l2)
            g = CG_O_FMA(pi, wd, g);
        vi = CG_O_FMA(rho_c * g, g, v[i] * rho);
        v[i] = vi;
        d = (CG_O_SQRT(a[i] + eps) / CG_O_SQRT(vi + eps)) * g;
        a[i] = CG_O_FMA(rho_c * d, d, a[i] * rho);
        p[i] = CG_O_FMA(d, neg_lr, pi);
    }
}

CG_O_FN(void, CG_O(cg_adadelta), (T* p, const T* grad, T* v, T* a, ptrdiff_t n,
                                  T rho, T rho_c, T eps, T neg_lr, T wd, T sign),
        (p, grad, v, a, n, rho, rho_c, eps, neg_lr, wd, sign), {
    if (wd == 0)
        CG_O(cg_adadelta_loop)(p, grad, v, a, n, rho, rho_c, eps, neg_lr, wd, sign, 0);
    else
        CG_O(cg_adadelta_loop)(p, grad, v, a, n, rho, rho_c, eps, neg_lr, wd, sign, 1);
})

/* -------------------------------------------------------------- Rprop */

CG_O_FN(void, CG_O(cg_rprop), (T* p, const T* grad, T* prev, T* step_size,
                               ptrdiff_t n, T etaminus, T etaplus, T lo, T hi,
                               T sign),
        (p, grad, prev, step_size, n, etaminus, etaplus, lo, hi, sign), {
    for (ptrdiff_t i = 0; i < n; i++) {
        T g = sign * grad[i];
        T s = g * prev[i];
        T f = s > 0 ? etaplus : (s < 0 ? etaminus : (T)1);
        T sz = step_size[i] * f;
        sz = sz < lo ? lo : sz;
        sz = sz > hi ? hi : sz;
        step_size[i] = sz;
        g = f == etaminus ? (T)0 : g;
        /* torch.sign: -1, 0 or 1, and 0 for NaN */
        p[i] = p[i] - ((T)(g > 0) - (T)(g < 0)) * sz;
        prev[i] = g;
    }
})

/* --------------------------------------------------------------- ASGD */

CG_INLINE void CG_O(cg_asgd_loop)(T* p, const T* grad, T* ax, ptrdiff_t n, T decay,
                                  T neg_eta, T mu, T wd, T sign, int l2,
                                  int average) {
    for (ptrdiff_t i = 0; i < n; i++) {
        T pi = p[i];
        T g = sign * grad[i];
        if (l2)
            g = CG_O_FMA(pi, wd, g);
        pi = pi * decay;
        pi = CG_O_FMA(g, neg_eta, pi);
        p[i] = pi;
        if (average) {
            T ai = ax[i];
            ax[i] = ai + (pi - ai) * mu;
        } else {
            ax[i] = pi;
        }
    }
}

CG_O_FN(void, CG_O(cg_asgd), (T* p, const T* grad, T* ax, ptrdiff_t n, T decay,
                              T neg_eta, T mu, T wd, T sign, int l2, int average),
        (p, grad, ax, n, decay, neg_eta, mu, wd, sign, l2, average), {
    if (!l2 && !average)
        CG_O(cg_asgd_loop)(p, grad, ax, n, decay, neg_eta, mu, wd, sign, 0, 0);
    else if (!l2)
        CG_O(cg_asgd_loop)(p, grad, ax, n, decay, neg_eta, mu, wd, sign, 0, 1);
    else
        CG_O(cg_asgd_loop)(p, grad, ax, n, decay, neg_eta, mu, wd, sign, l2, average);
})

/* ----------------------------------------------- Adafactor's elementwise */

/* The unfactored second moment: var = lerp(var, g * g, w). */
CG_O_FN(void, CG_O(cg_adafactor_var), (T* var, const T* grad, ptrdiff_t n, T w,
                                       T sign, int small),
        (var, grad, n, w, sign, small), {
    if (small) {
        for (ptrdiff_t i = 0; i < n; i++) {
            T g = sign * grad[i];
            var[i] = CG_O(cg_o_lerp)(var[i], g * g, w, 1);
        }
    } else {
        for (ptrdiff_t i = 0; i < n; i++) {
            T g = sign * grad[i];
            var[i] = CG_O(cg_o_lerp)(var[i], g * g, w, 0);
        }
    }
})

/* u = rsqrt(max(v, vmin)) * g, with v = var[i] (vector form, rvr == 0 and
   cv == NULL) or (rvr * cv[i]) / mean (one row of a factored matrix).
   Bound by the divide/sqrt unit, like Adam: AVX2 at most. */
CG_O_FN2(void, CG_O(cg_adafactor_u), (T* u, const T* grad, const T* var, T rvr,
                                     const T* cv, T mean, ptrdiff_t n, T sign,
                                     T vmin),
        (u, grad, var, rvr, cv, mean, n, sign, vmin), {
    if (cv == NULL) {
        for (ptrdiff_t i = 0; i < n; i++) {
            T v = var[i];
            v = v < vmin ? vmin : v;
            u[i] = ((T)1 / CG_O_SQRT(v)) * (sign * grad[i]);
        }
    } else {
        for (ptrdiff_t i = 0; i < n; i++) {
            T v = (rvr * cv[i]) / mean;
            v = v < vmin ? vmin : v;
            u[i] = ((T)1 / CG_O_SQRT(v)) * (sign * grad[i]);
        }
    }
})

/* p = fma(u, coef, p * decay): torch's mul_(decay) then add_(u, alpha=coef) */
CG_O_FN(void, CG_O(cg_adafactor_apply), (T* p, const T* u, ptrdiff_t n, T coef,
                                         T decay),
        (p, u, n, coef, decay), {
    for (ptrdiff_t i = 0; i < n; i++)
        p[i] = CG_O_FMA(u[i], coef, p[i] * decay);
})

/* ------------------------------------------- norms and clipping (nn.utils) */

/* Eight partial sums of squares in double, combined in a fixed order (the
   result does not depend on the SIMD level). */
CG_O_FN(double, CG_O(cg_sumsq8), (const T* x, ptrdiff_t n), (x, n), {
    double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    ptrdiff_t i;
    int j;
    for (i = 0; i + 8 <= n; i += 8)
        for (j = 0; j < 8; j++)
            s[j] += (double)x[i + j] * (double)x[i + j];
    for (; i < n; i++)
        s[0] += (double)x[i] * (double)x[i];
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
})

/* Four partial sums (vector_norm's 2-norm), combined in a fixed order. */
CG_O_FN(double, CG_O(cg_sumsq4), (const T* x, ptrdiff_t n), (x, n), {
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    ptrdiff_t i;
    for (i = 0; i + 4 <= n; i += 4) {
        s0 += (double)x[i] * (double)x[i];
        s1 += (double)x[i + 1] * (double)x[i + 1];
        s2 += (double)x[i + 2] * (double)x[i + 2];
        s3 += (double)x[i + 3] * (double)x[i + 3];
    }
    for (; i < n; i++) {
        double a = x[i];
        s0 += a * a;
    }
    return (s0 + s1) + (s2 + s3);
})

CG_O_FN(void, CG_O(cg_scale), (T* x, ptrdiff_t n, T coef), (x, n, coef), {
    for (ptrdiff_t i = 0; i < n; i++)
        x[i] = x[i] * coef;
})

/* min(max(x, lo), hi); NaN stays NaN */
CG_O_FN(void, CG_O(cg_clamp), (T* x, ptrdiff_t n, T lo, T hi), (x, n, lo, hi), {
    for (ptrdiff_t i = 0; i < n; i++) {
        T a = x[i];
        a = a < lo ? lo : a;
        x[i] = a > hi ? hi : a;
    }
})

#undef CG_O_FN
#undef CG_O_FN2
#undef CG_O
#undef CG_O_CAT
#undef CG_O_CAT2
