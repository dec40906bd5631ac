"""Fused loss kernels: cross-entropy from logits, BCE with logits, MSE.

Layout: every array is C-contiguous.  Cross-entropy takes logits of shape
``(n, c)`` and int64 class indices of shape ``(n,)``; the element-wise losses
take flat arrays of equal length (the caller flattens).

Dtypes: ``real_t`` (float32 or float64) for values; int64 for class indices.
Every reduction runs in double, so float32 sums do not lose digits; results
are rounded to ``real_t`` once when stored.

Stability: cross-entropy subtracts the row maximum before ``exp`` (one pass
for the max, one for the sum of exponentials, so logits of 1e4 neither
overflow nor lose the answer); BCE uses ``max(x, 0) - x*y + log1p(exp(-|x|))``
and a two-branch sigmoid (``e / (1 + e)`` for ``x < 0``, ``e = exp(-|x|)``);
neither ever evaluates ``exp`` of a positive number.

Speed: cross-entropy's row passes (max, sum of exps, scaled exps) are the
vectorized row helpers of ``reductions.pyx`` (cimported through
``reductions.pxd``: one exp for all of cygrad, max relative error about 1e-7
in float32 and 2e-16 in float64), computed in the input's dtype; libm's
``exp``, a call per element in double, made cross-entropy 4.6x torch.  A row
is read from memory once (by the max); the later passes hit L1.  BCE's
``log1p(exp(-|x|))`` and sigmoid are the same module's vectorized helpers
(libm's exp and log1p per element made it 4x torch), run a 1024-element chunk
at a time so that the pass adding the rest reads L1.

Aliasing: outputs must not alias inputs.  Threading: each ``def`` wrapper
validates its arguments (shapes, label ranges) while holding the GIL, then
releases it for the loop; nothing in a ``nogil`` loop raises.

Reductions: the forward kernels write per-row (cross-entropy) or
per-element losses into ``out`` and return their double-precision sum (and,
for cross-entropy, the total weight that ``reduction='mean'`` divides by).
Backward kernels take ``grad`` of length 1 (a scalar scale shared by every
row: ``mean``/``sum``) or one value per row/element (``reduction='none'``).
"""

from libc.math cimport exp, fabs, log, log1p
from libc.stdint cimport int64_t

import numpy as np

from cygrad._kernels._types cimport real_t
from cygrad._kernels.reductions cimport (
    exp_axpy,
    exp_sum,
    row_max,
    row_sum,
    sigmoid,
    softplus_neg_abs,
)


# --------------------------------------------------------------------------
# cross-entropy with class indices


def cross_entropy_fwd(
    const real_t[:, ::1] logits,      # in  (n, c)
    const int64_t[::1] target,        # in  (n,)
    const real_t[::1] weight,         # in  (c,) class weights, or length 0
    Py_ssize_t ignore_index,
    real_t[::1] out,                  # out (n,) per-row loss (weighted)
    real_t[::1] lse,                  # out (n,) log-sum-exp of each row
):
    """Per-row ``w[t] * (logsumexp(x) - x[t])``; return ``(sum, total_weight)``.

    Rows whose target equals ``ignore_index`` get loss 0 and weight 0.
    ``lse`` keeps each row's log-sum-exp for the backward pass.

    Raises
    ------
    ValueError
        On mismatched shapes or an empty class dimension.
    IndexError
        When a target is neither in ``[0, c)`` nor ``ignore_index``.
    """
    cdef Py_ssize_t n = logits.shape[0]
    cdef Py_ssize_t c = logits.shape[1]
    cdef double total = 0.0
    cdef double wsum = 0.0
    _check_ce(n, c, target, weight, ignore_index)
    if out.shape[0] != n or lse.shape[0] != n:
        raise ValueError(
            f"cross_entropy_fwd: out/lse have lengths {out.shape[0]}/"
            f"{lse.shape[0]}, expected {n}"
        )
    if n == 0:
        return 0.0, 0.0
    with nogil:
        ce_fwd_rows(
            &logits[0, 0], &target[0],
            &weight[0] if weight.shape[0] > 0 else NULL,
            ignore_index, n, c, &out[0], &lse[0], &total, &wsum,
        )
    return total, wsum


def cross_entropy_bwd(
    const real_t[:, ::1] logits,      # in  (n, c)
    const int64_t[::1] target,        # in  (n,)
    const real_t[::1] weight,         # in  (c,) or length 0
    Py_ssize_t ignore_index,
    const real_t[::1] lse,            # in  (n,) from the forward pass
    const real_t[::1] grad,           # in  (1,) shared scale or (n,) per row
    real_t[:, ::1] grad_logits,       # out (n, c)
):
    """``grad_logits[i] = grad[i] * w[t_i] * (softmax(x_i) - onehot(t_i))``.

    Ignored rows get zeros.  For ``reduction='mean'`` the caller passes
    ``grad / total_weight`` as the shared scale.
    """
    cdef Py_ssize_t n = logits.shape[0]
    cdef Py_ssize_t c = logits.shape[1]
    cdef Py_ssize_t gstride
    _check_ce(n, c, target, weight, ignore_index)
    if lse.shape[0] != n:
        raise ValueError(f"cross_entropy_bwd: lse has length {lse.shape[0]} != {n}")
    if grad_logits.shape[0] != n or grad_logits.shape[1] != c:
        raise ValueError(
            f"cross_entropy_bwd: grad_logits has shape ({grad_logits.shape[0]}, "
            f"{grad_logits.shape[1]}), expected ({n}, {c})"
        )
    gstride = _grad_stride(grad.shape[0], n, "cross_entropy_bwd")
    if n == 0:
        return
    with nogil:
        ce_bwd_rows(
            &logits[0, 0], &target[0],
            &weight[0] if weight.shape[0] > 0 else NULL,
            ignore_index, &lse[0], &grad[0], gstride, n, c, &grad_logits[0, 0],
        )


cdef _check_ce(Py_ssize_t n, Py_ssize_t c, const int64_t[::1] target,
               const real_t[::1] weight, Py_ssize_t ignore_index):
    cdef Py_ssize_t bad
    if target.shape[0] != n:
        raise ValueError(
            f"Expected input batch_size ({n}) to match target batch_size "
            f"({target.shape[0]})."
        )
    if weight.shape[0] != 0 and weight.shape[0] != c:
        raise ValueError(
            f"weight tensor should be defined either for all {c} classes or "
            f"no classes but got weight tensor of shape: [{weight.shape[0]}]"
        )
    if n == 0:
        return
    if c == 0:
        raise ValueError("cross_entropy: the class dimension is empty (0 classes)")
    with nogil:
        bad = first_bad_label(&target[0], n, c, ignore_index)
    if bad >= 0:
        raise IndexError(
            f"Target {target[bad]} is out of bounds. (class indices must be in "
            f"[0, {c - 1}] or equal ignore_index={ignore_index}; found at "
            f"position {bad})"
        )


cdef Py_ssize_t first_bad_label(const int64_t* target, Py_ssize_t n,
                                 Py_ssize_t c, Py_ssize_t ignore_index) noexcept nogil:
    cdef Py_ssize_t i
    cdef int64_t t
    for i in range(n):
        t = target[i]
        if t != ignore_index and (t < 0 or t >= c):
            return i
    return -1


cdef void ce_fwd_rows(
    const real_t* x, const int64_t* target, const real_t* weight,
    Py_ssize_t ignore_index, Py_ssize_t n, Py_ssize_t c,
    real_t* out, real_t* lse, double* total, double* wsum,
) noexcept nogil:
    cdef Py_ssize_t i
    cdef const real_t* row
    cdef real_t m
    cdef double row_lse, w, loss
    cdef int64_t t
    total[0] = 0.0
    wsum[0] = 0.0
    for i in range(n):
        row = x + i * c
        # A NaN or +inf maximum makes the sum NaN, and so the loss (torch).
        m = row_max(row, c)
        row_lse = <double>m + log(exp_sum(row, m, NULL, c))
        lse[i] = <real_t>row_lse
        t = target[i]
        if t == ignore_index:
            out[i] = 0
            continue
        w = weight[t] if weight != NULL else 1.0
        loss = w * (row_lse - <double>row[t])
        out[i] = <real_t>loss
        total[0] += loss
        wsum[0] += w


cdef void ce_bwd_rows(
    const real_t* x, const int64_t* target, const real_t* weight,
    Py_ssize_t ignore_index, const real_t* lse, const real_t* grad,
    Py_ssize_t gstride, Py_ssize_t n, Py_ssize_t c, real_t* gx,
) noexcept nogil:
    # softmax(x) = exp(x - lse): lse >= the row max, so every exponent is
    # <= 0, as the exp helper wants.
    cdef Py_ssize_t i, j
    cdef real_t* grow
    cdef real_t g
    cdef int64_t t
    for i in range(n):
        grow = gx + i * c
        t = target[i]
        if t == ignore_index:
            for j in range(c):
                grow[j] = 0
            continue
        g = grad[i * gstride]
        if weight != NULL:
            g = g * weight[t]
        exp_axpy(x + i * c, lse[i], g, NULL, grow, c)
        grow[t] = grow[t] - g


# --------------------------------------------------------------------------
# binary cross-entropy with logits


def bce_logits_fwd(
    const real_t[::1] x,              # in  (n,) logits
    const real_t[::1] y,              # in  (n,) targets in [0, 1]
    real_t[::1] out,                  # out (n,) per-element loss
):
    """``out = max(x, 0) - x*y + log1p(exp(-|x|))``; return the double sum."""
    cdef Py_ssize_t n = x.shape[0]
    cdef double total = 0.0
    _check_same(n, y.shape[0], out.shape[0], "bce_logits_fwd")
    if n == 0:
        return 0.0
    with nogil:
        total = _bce_logits_fwd(&x[0], &y[0], &out[0], n)
    return total


def bce_logits_bwd(
    const real_t[::1] x,              # in  (n,)
    const real_t[::1] y,              # in  (n,)
    const real_t[::1] grad,           # in  (1,) or (n,)
    real_t[::1] grad_x,               # out (n,)
):
    """``grad_x = grad * (sigmoid(x) - y)``."""
    cdef Py_ssize_t n = x.shape[0]
    cdef Py_ssize_t gstride
    _check_same(n, y.shape[0], grad_x.shape[0], "bce_logits_bwd")
    gstride = _grad_stride(grad.shape[0], n, "bce_logits_bwd")
    if n == 0:
        return
    with nogil:
        _bce_logits_bwd(&x[0], &y[0], &grad[0], gstride, &grad_x[0], n)


cdef enum:
    CHUNK = 1024


cdef double _bce_logits_fwd(const real_t* x, const real_t* y, real_t* out,
                            Py_ssize_t n) noexcept nogil:
    # log1p(exp(-|x|)) from the vectorized helper, a chunk at a time so the
    # passes adding the rest and summing read L1.  The adding loop holds no
    # reduction, so it vectorizes (max(x, 0) a select, not a branch: random
    # signs made a branch mispredict half the time); the sum has 16 lanes.
    cdef Py_ssize_t c, i, j, m
    cdef real_t xi
    cdef double total = 0.0
    for c in range((n + CHUNK - 1) // CHUNK):
        j = c * CHUNK
        m = n - j if n - j < CHUNK else CHUNK
        softplus_neg_abs(x + j, out + j, m)
        for i in range(j, j + m):
            xi = x[i]
            out[i] = (xi if xi > 0 else 0) - xi * y[i] + out[i]
        total += row_sum(out + j, m)
    return total


cdef void _bce_logits_bwd(const real_t* x, const real_t* y, const real_t* grad,
                          Py_ssize_t gstride, real_t* gx, Py_ssize_t n) noexcept nogil:
    # sigmoid from the vectorized helper (exp of -|x| only), then the scale.
    cdef Py_ssize_t c, i, j, m
    for c in range((n + CHUNK - 1) // CHUNK):
        j = c * CHUNK
        m = n - j if n - j < CHUNK else CHUNK
        sigmoid(x + j, gx + j, m)
        if gstride == 0:
            for i in range(j, j + m):
                gx[i] = grad[0] * (gx[i] - y[i])
        else:
            for i in range(j, j + m):
                gx[i] = grad[i] * (gx[i] - y[i])


# --------------------------------------------------------------------------
# mean squared error


def mse_fwd(
    const real_t[::1] x,              # in  (n,)
    const real_t[::1] y,              # in  (n,)
    real_t[::1] out,                  # out (n,) per-element (x - y)**2
):
    """``out = (x - y)**2``; return the double sum."""
    cdef Py_ssize_t n = x.shape[0]
    cdef double total = 0.0
    _check_same(n, y.shape[0], out.shape[0], "mse_fwd")
    if n == 0:
        return 0.0
    with nogil:
        total = _mse_fwd(&x[0], &y[0], &out[0], n)
    return total


def mse_bwd(
    const real_t[::1] x,              # in  (n,)
    const real_t[::1] y,              # in  (n,)
    const real_t[::1] grad,           # in  (1,) or (n,)
    real_t[::1] grad_x,               # out (n,); grad_y is its negation
):
    """``grad_x = 2 * grad * (x - y)``."""
    cdef Py_ssize_t n = x.shape[0]
    cdef Py_ssize_t gstride
    _check_same(n, y.shape[0], grad_x.shape[0], "mse_bwd")
    gstride = _grad_stride(grad.shape[0], n, "mse_bwd")
    if n == 0:
        return
    with nogil:
        _mse_bwd(&x[0], &y[0], &grad[0], gstride, &grad_x[0], n)


cdef double _mse_fwd(const real_t* x, const real_t* y, real_t* out,
                     Py_ssize_t n) noexcept nogil:
    # The squares loop holds no reduction, so it vectorizes; the sum (16
    # double lanes) reads the chunk from L1.  A running double total in the
    # same loop was one dependent add per element.
    cdef Py_ssize_t c, i, j, m
    cdef double d
    cdef double total = 0.0
    for c in range((n + CHUNK - 1) // CHUNK):
        j = c * CHUNK
        m = n - j if n - j < CHUNK else CHUNK
        for i in range(j, j + m):
            d = <double>x[i] - <double>y[i]
            out[i] = <real_t>(d * d)
        total += row_sum(out + j, m)
    return total


cdef void _mse_bwd(const real_t* x, const real_t* y, const real_t* grad,
                   Py_ssize_t gstride, real_t* gx, Py_ssize_t n) noexcept nogil:
    # one loop per grad layout: with grad[i * gstride] GCC does not vectorize
    cdef Py_ssize_t i
    cdef double g2
    if gstride == 0:
        g2 = 2.0 * <double>grad[0]
        for i in range(n):
            gx[i] = <real_t>(g2 * (<double>x[i] - <double>y[i]))
    else:
        for i in range(n):
            gx[i] = <real_t>(2.0 * <double>grad[i] * (<double>x[i] - <double>y[i]))


# --------------------------------------------------------------------------
# argument checks shared by the wrappers


cdef _check_same(Py_ssize_t n, Py_ssize_t ny, Py_ssize_t nout, str name):
    if ny != n or nout != n:
        raise ValueError(f"{name}: lengths differ (input {n}, target {ny}, out {nout})")


cdef Py_ssize_t _grad_stride(Py_ssize_t ng, Py_ssize_t n, str name) except -1:
    if ng == 1:
        return 0
    if ng == n:
        return 1
    raise ValueError(f"{name}: grad has length {ng}; expected 1 or {n}")


# --------------------------------------------------------------------------
# connectionist temporal classification (alpha, beta and torch's gradient)
#
# A C loop because the recursion is sequential in time and, per step, a few
# operations on 2 S + 1 positions: NumPy's per-step overhead (a dozen
# temporary arrays per step) made it 2x torch at T=400, N=32, S=50.  Float64
# only (the caller casts): the log-sum-exps of long sequences keep their
# digits.  One sequence at a time; alpha and beta are (T, L) scratch.

cdef double _NEG_INF = -float("inf")


cdef inline double _lse2(double a, double b) noexcept nogil:
    cdef double m
    if a == _NEG_INF:
        return b
    if b == _NEG_INF:
        return a
    m = a if a > b else b
    return m + log1p(exp(-fabs(a - b)))


def ctc_fwd_bwd(
    const double[:, :, ::1] lp,           # in  (T, N, C) log-probabilities
    const int64_t[:, ::1] ext,            # in  (N, L) blank-interleaved labels
    const unsigned char[:, ::1] skip,     # in  (N, L) may come from s - 2
    const int64_t[::1] il,                # in  (N,) input lengths
    const int64_t[::1] tl,                # in  (N,) target lengths
    double[::1] nll,                      # out (N,) -log p(target)
    double[:, :, ::1] grad,               # out (T, N, C), or (0, 0, 0): none
):
    """CTC negative log-likelihood per sequence and, when ``grad`` is not
    empty, torch's gradient ``exp(lp) - exp(log(sum alpha beta) + nll - lp)``
    for t < il[n] (0 after)."""
    cdef Py_ssize_t t_max = lp.shape[0], n = lp.shape[1], c = lp.shape[2]
    cdef Py_ssize_t width = ext.shape[1], i
    cdef bint want = grad.shape[0] != 0
    if ext.shape[0] != n or skip.shape[0] != n or skip.shape[1] != width:
        raise ValueError("ctc_fwd_bwd: ext and skip must be (N, L)")
    if il.shape[0] != n or tl.shape[0] != n or nll.shape[0] != n:
        raise ValueError("ctc_fwd_bwd: lengths and nll must have N entries")
    if want and (grad.shape[0] != t_max or grad.shape[1] != n or grad.shape[2] != c):
        raise ValueError("ctc_fwd_bwd: grad must be (T, N, C) or empty")
    for i in range(n):
        if il[i] < 0 or il[i] > t_max or tl[i] < 0 or 2 * tl[i] + 1 > width:
            raise ValueError(f"ctc_fwd_bwd: lengths of sequence {i} out of range")
    for i in range(n * width):
        if ext[i // width, i % width] < 0 or ext[i // width, i % width] >= c:
            raise ValueError("ctc_fwd_bwd: label out of range")
    if n == 0:
        return
    cdef double[::1] alpha = np.empty(max(t_max, 1) * width)
    cdef double[::1] beta = np.empty(max(t_max, 1) * width if want else 1)
    cdef double[::1] lcab = np.empty(c)
    with nogil:
        for i in range(n):
            _ctc_one(&lp[0, 0, 0], &ext[i, 0], &skip[i, 0], il[i], tl[i], t_max, n,
                     c, width, i, &nll[i], &grad[0, 0, 0] if want else NULL,
                     &alpha[0], &beta[0], &lcab[0])


cdef void _ctc_one(const double* lp, const int64_t* ext, const unsigned char* skip,
                   Py_ssize_t tn, Py_ssize_t sn, Py_ssize_t t_max, Py_ssize_t n,
                   Py_ssize_t c, Py_ssize_t width, Py_ssize_t i, double* nll,
                   double* grad, double* alpha, double* beta,
                   double* lcab) noexcept nogil:
    # lp[t, i, k] is lp[(t * n + i) * c + k]
    cdef Py_ssize_t ln = 2 * sn + 1, t, s, k, row
    cdef double a, total
    if tn == 0:
        nll[0] = 0.0 if sn == 0 else -_NEG_INF
        if grad != NULL:
            for t in range(t_max):
                for k in range(c):
                    grad[(t * n + i) * c + k] = 0.0
        return
    for s in range(ln):
        alpha[s] = _NEG_INF
    alpha[0] = lp[i * c + ext[0]]
    if ln > 1:
        alpha[1] = lp[i * c + ext[1]]
    for t in range(1, tn):
        row = (t * n + i) * c
        for s in range(ln):
            a = alpha[(t - 1) * width + s]
            if s > 0:
                a = _lse2(a, alpha[(t - 1) * width + s - 1])
            if s > 1 and skip[s]:
                a = _lse2(a, alpha[(t - 1) * width + s - 2])
            alpha[t * width + s] = a + lp[row + ext[s]]
    total = alpha[(tn - 1) * width + ln - 1]
    if ln > 1:
        total = _lse2(total, alpha[(tn - 1) * width + ln - 2])
    nll[0] = -total
    if grad == NULL:
        return
    row = ((tn - 1) * n + i) * c
    for s in range(ln):
        beta[(tn - 1) * width + s] = _NEG_INF
    beta[(tn - 1) * width + ln - 1] = lp[row + ext[ln - 1]]
    if ln > 1:
        beta[(tn - 1) * width + ln - 2] = lp[row + ext[ln - 2]]
    for t in range(tn - 2, -1, -1):
        row = (t * n + i) * c
        for s in range(ln):
            a = beta[(t + 1) * width + s]
            if s + 1 < ln:
                a = _lse2(a, beta[(t + 1) * width + s + 1])
            if s + 2 < ln and skip[s + 2]:
                a = _lse2(a, beta[(t + 1) * width + s + 2])
            beta[t * width + s] = a + lp[row + ext[s]]
    for t in range(t_max):
        row = (t * n + i) * c
        if t >= tn:
            for k in range(c):
                grad[row + k] = 0.0
            continue
        for k in range(c):
            lcab[k] = _NEG_INF
        for s in range(ln):
            k = ext[s]
            lcab[k] = _lse2(lcab[k], alpha[t * width + s] + beta[t * width + s])
        for k in range(c):
            grad[row + k] = exp(lp[row + k]) - exp(lcab[k] + nll[0] - lp[row + k])
