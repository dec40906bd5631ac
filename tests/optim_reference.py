"""NumPy versions of the optimizer updates, written from PYTORCH-NOTES.md.

One function per optimizer: ``step(p, grad, state, t, **options)`` returns the
new parameter array and updates ``state`` (a dict of arrays).  Every operation
is a separate IEEE-rounded NumPy operation in the parameter's dtype, with
scalars rounded to that dtype first, in torch's single-tensor order, so the
compiled kernels must agree with these bit for bit.  Where torch's kernel
rounds a multiply-add once (``add(alpha=)``, ``addcmul``, ``lerp``), so does
``fma`` here.
"""

from fractions import Fraction

import numpy as np


def _fma64(a, b, c):
    return float(Fraction(a) * Fraction(b) + Fraction(c))


def fma(a, b, c):
    """``a * b + c`` rounded once, in the dtype of ``a``, ``b`` and ``c``.

    float64: exact rationals, rounded by ``float()``.  float32: the product
    is exact in float64; the sum is rounded to odd in float64 (the rounding
    error, from TwoSum, picks the odd neighbour), which then rounds to float32
    correctly.  Non-finite elements take the plain ``a * b + c``.
    """
    a, b, c = np.broadcast_arrays(*(np.asarray(x) for x in (a, b, c)))
    dtype = np.result_type(a, b, c)
    plain = a * b + c
    ok = np.isfinite(a) & np.isfinite(b) & np.isfinite(c) & np.isfinite(plain)
    if dtype == np.float64:
        exact = np.frompyfunc(_fma64, 3, 1)(a[ok], b[ok], c[ok]).astype(np.float64)
    else:
        prod = a[ok].astype(np.float64) * b[ok].astype(np.float64)
        addend = c[ok].astype(np.float64)
        total = prod + addend
        back = total - prod
        err = (prod - (total - back)) + (addend - back)
        even = (total.view(np.int64) & 1) == 0
        nudge = (err != 0) & even
        total[nudge] = np.nextafter(total[nudge], np.where(err[nudge] > 0, np.inf, -np.inf))
        exact = total.astype(dtype)
    out = plain.astype(dtype)
    out[ok] = exact
    return out


def _lerp(start, end, weight):
    """ATen's lerp: the formula depends on which end ``weight`` is nearer."""
    if abs(weight) < 0.5:
        return fma(weight, end - start, start)
    return fma(-(end - start), weight.dtype.type(1) - weight, end)


def sgd(
    p,
    grad,
    state,
    t,
    *,
    lr,
    momentum=0,
    dampening=0,
    weight_decay=0,
    nesterov=False,
    maximize=False,
):
    c = p.dtype.type
    g = -grad if maximize else grad
    if weight_decay != 0:
        g = fma(p, c(weight_decay), g)
    if momentum != 0:
        if "momentum_buffer" not in state:
            buf = g.copy()
        else:
            buf = fma(g, c(1 - dampening), state["momentum_buffer"] * c(momentum))
        state["momentum_buffer"] = buf
        g = fma(buf, c(momentum), g) if nesterov else buf
    return fma(g, c(-lr), p)


def adam(
    p,
    grad,
    state,
    t,
    *,
    lr,
    betas=(0.9, 0.999),
    eps=1e-8,
    weight_decay=0,
    amsgrad=False,
    maximize=False,
    decoupled_weight_decay=False,
):
    c = p.dtype.type
    beta1, beta2 = betas
    if not state:
        state.update(exp_avg=np.zeros_like(p), exp_avg_sq=np.zeros_like(p))
        if amsgrad:
            state["max_exp_avg_sq"] = np.zeros_like(p)
    g = -grad if maximize else grad
    if weight_decay != 0:
        if decoupled_weight_decay:
            p = p * c(1 - lr * weight_decay)
        else:
            g = fma(p, c(weight_decay), g)
    m = _lerp(state["exp_avg"], g, c(1 - beta1))
    v = fma(c(1 - beta2) * g, g, state["exp_avg_sq"] * c(beta2))
    state["exp_avg"], state["exp_avg_sq"] = m, v
    bias_correction1 = 1 - beta1**t
    bias_correction2 = 1 - beta2**t
    step_size = lr / bias_correction1
    if amsgrad:
        v = np.maximum(state["max_exp_avg_sq"], v)
        state["max_exp_avg_sq"] = v
    denom = np.sqrt(v) / c(bias_correction2**0.5) + c(eps)
    return p + (c(-step_size) * m) / denom


def rmsprop(
    p,
    grad,
    state,
    t,
    *,
    lr,
    alpha=0.99,
    eps=1e-8,
    weight_decay=0,
    momentum=0,
    centered=False,
    maximize=False,
):
    c = p.dtype.type
    if not state:
        state["square_avg"] = np.zeros_like(p)
        if momentum > 0:
            state["momentum_buffer"] = np.zeros_like(p)
        if centered:
            state["grad_avg"] = np.zeros_like(p)
    g = -grad if maximize else grad
    if weight_decay != 0:
        g = fma(p, c(weight_decay), g)
    v = fma(c(1 - alpha) * g, g, state["square_avg"] * c(alpha))
    state["square_avg"] = v
    if centered:
        ga = _lerp(state["grad_avg"], g, c(1 - alpha))
        state["grad_avg"] = ga
        avg = np.sqrt(fma(-ga, ga, v)) + c(eps)
    else:
        avg = np.sqrt(v) + c(eps)
    if momentum > 0:
        buf = state["momentum_buffer"] * c(momentum) + g / avg
        state["momentum_buffer"] = buf
        return fma(buf, c(-lr), p)
    return p + (c(-lr) * g) / avg


def adagrad(
    p,
    grad,
    state,
    t,
    *,
    lr,
    lr_decay=0,
    weight_decay=0,
    initial_accumulator_value=0,
    eps=1e-10,
    maximize=False,
):
    c = p.dtype.type
    if not state:
        state["sum"] = np.full_like(p, initial_accumulator_value)
    g = -grad if maximize else grad
    if weight_decay != 0:
        g = fma(p, c(weight_decay), g)
    clr = lr / (1 + (t - 1) * lr_decay)
    s = fma(g, g, state["sum"])
    state["sum"] = s
    return p + (c(-clr) * g) / (np.sqrt(s) + c(eps))


def adamw(p, grad, state, t, *, weight_decay=1e-2, **options):
    return adam(
        p,
        grad,
        state,
        t,
        weight_decay=weight_decay,
        decoupled_weight_decay=True,
        **options,
    )


STEPS = {
    "SGD": sgd,
    "Adam": adam,
    "AdamW": adamw,
    "RMSprop": rmsprop,
    "Adagrad": adagrad,
}
