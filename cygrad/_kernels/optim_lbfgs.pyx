# distutils: extra_compile_args = -fno-math-errno

"""The vector work of L-BFGS: the two-loop recursion over a flat history.

Layout: the history is two C-contiguous ``(rows, n)`` matrices, ``S`` (the
steps ``s = t * d``) and ``Y`` (the gradient changes ``y = g - g_prev``), a
ring of rows; ``order`` lists the rows in use from the oldest to the newest.
``ro[row] = 1 / (y . s)`` and ``al[row]`` (the first loop's coefficients) sit
beside them.  Every other array is a flat vector of length ``n``.

Dtypes: ``real_t`` for every array.  Dot products are ``real_t`` (torch's
0-d tensor), and every scalar-times-vector
is formed in ``real_t``, in torch's order: ``al = (s . q) * ro``,
``q = q + (-al) * y``, ``r = q * H_diag``, ``be = (y . r) * ro``,
``r = r + (al - be) * s``.  ``x + a * y`` is one fused multiply-add, as
ATen's ``add(alpha=)`` is (``vec::fmadd``), and dot products are summed in
``real_t`` as BLAS sums them for short vectors: with both, L-BFGS on the
Rosenbrock function follows torch's iterates bit for bit (measured, float32
and float64, with and without the line search).  The L-BFGS iterates are
sensitive to single ulps, which is why this file, unlike optim.pyx, copies
torch's FMAs.

Aliasing: ``d`` may not alias ``g`` or any history row; nothing else aliases.

Threading: the ``def`` wrappers check shapes with the GIL held and run the
loops without it; nothing in a ``nogil`` loop raises.
"""

from libc.math cimport fma, fmaf

from cygrad._kernels._types cimport real_t


cdef inline real_t _fma(real_t a, real_t b, real_t c) noexcept nogil:
    # a * b + c rounded once: ATen's add(alpha=) is vec::fmadd
    if real_t is float:
        return fmaf(a, b, c)
    else:
        return fma(a, b, c)


cdef inline double _dot(const real_t* a, const real_t* b, Py_ssize_t n) noexcept nogil:
    # In real_t, as torch's dot (BLAS ?dot): four partial sums combined in a
    # fixed order, which for n <= 4 is exactly BLAS's left-to-right sum (the
    # L-BFGS iterates on small problems then follow torch's in float32 too).
    cdef Py_ssize_t i
    cdef real_t s0 = 0, s1 = 0, s2 = 0, s3 = 0
    for i in range(0, n - 3, 4):
        s0 = s0 + a[i] * b[i]
        s1 = s1 + a[i + 1] * b[i + 1]
        s2 = s2 + a[i + 2] * b[i + 2]
        s3 = s3 + a[i + 3] * b[i + 3]
    for i in range(n - n % 4, n):
        s0 = s0 + a[i] * b[i]
    return (s0 + s1) + (s2 + s3)


def dot(const real_t[::1] a, const real_t[::1] b):    # a, b: in
    """``a . b``, summed in ``real_t`` (returned as a Python float)."""
    cdef Py_ssize_t n = a.shape[0]
    cdef double result = 0.0
    if b.shape[0] != n:
        raise ValueError(f"dot: lengths {n} and {b.shape[0]} differ")
    if n == 0:
        return 0.0
    with nogil:
        result = _dot(&a[0], &b[0], n)
    return result


def axpy(real_t[::1] y, const real_t[::1] x, double alpha):    # y: in/out, x: in
    """``y = y + alpha * x`` in place (torch's ``y.add_(x, alpha=alpha)``)."""
    cdef Py_ssize_t n = y.shape[0]
    cdef Py_ssize_t i
    cdef real_t a = <real_t>alpha
    if x.shape[0] != n:
        raise ValueError(f"axpy: lengths {n} and {x.shape[0]} differ")
    if n == 0:
        return
    with nogil:
        for i in range(n):
            y[i] = _fma(a, x[i], y[i])


def push(
    const real_t[::1] g,              # in: the new flat gradient
    const real_t[::1] prev_g,         # in: the previous one
    const real_t[::1] d,              # in: the last direction
    double t,                         # the last step length
    real_t[::1] y,                    # out: g - prev_g
    real_t[::1] s,                    # out: d * t
):
    """Form a history pair in place; returns ``(y . s, y . y)``."""
    cdef Py_ssize_t n = g.shape[0]
    cdef Py_ssize_t i
    cdef real_t tt = <real_t>t
    cdef double ys = 0.0, yy = 0.0
    if (prev_g.shape[0] != n or d.shape[0] != n or y.shape[0] != n
            or s.shape[0] != n):
        raise ValueError("push: every vector must have the gradient's length")
    if n == 0:
        return 0.0, 0.0
    with nogil:
        for i in range(n):
            y[i] = g[i] - prev_g[i]
            s[i] = d[i] * tt
        ys = _dot(&y[0], &s[0], n)
        yy = _dot(&y[0], &y[0], n)
    return ys, yy


def two_loop(
    real_t[::1] d,                    # out: the new direction
    const real_t[::1] g,              # in: the flat gradient
    const real_t[:, ::1] S,           # in: steps, one per row
    const real_t[:, ::1] Y,           # in: gradient changes, one per row
    const real_t[::1] ro,             # in: 1 / (y . s) per row
    real_t[::1] al,                   # out: first-loop coefficients per row
    const Py_ssize_t[::1] order,      # in: rows in use, oldest first
    double h_diag,                    # the initial Hessian scale
    bint h_one,                       # H_diag is the integer 1 (r = q exactly)
):
    """``d = -H g`` by the two-loop recursion over the rows in ``order``."""
    cdef Py_ssize_t n = g.shape[0]
    cdef Py_ssize_t m = order.shape[0]
    cdef Py_ssize_t k
    if d.shape[0] != n:
        raise ValueError("two_loop: d and g have different lengths")
    if S.shape[1] != n or Y.shape[1] != n or S.shape[0] != Y.shape[0]:
        raise ValueError("two_loop: the history rows must have the gradient's length")
    if ro.shape[0] < S.shape[0] or al.shape[0] < S.shape[0]:
        raise ValueError("two_loop: ro and al need one entry per history row")
    for k in range(m):
        if not 0 <= order[k] < S.shape[0]:
            raise ValueError(f"two_loop: row {order[k]} is not in the history")
    if n == 0:
        return
    if &d[0] == &g[0]:
        raise ValueError("two_loop: d and g share memory")
    cdef bint rows = S.shape[0] > 0
    with nogil:
        _two_loop(
            &d[0], &g[0], &S[0, 0] if rows else NULL, &Y[0, 0] if rows else NULL,
            &ro[0] if rows else NULL, &al[0] if rows else NULL,
            &order[0] if m else NULL, n, m, <real_t>h_diag, h_one,
        )


cdef void _two_loop(
    real_t* d, const real_t* g, const real_t* S, const real_t* Y,
    const real_t* ro, real_t* al, const Py_ssize_t* order, Py_ssize_t n,
    Py_ssize_t m, real_t h_diag, bint h_one,
) noexcept nogil:
    cdef Py_ssize_t i, k, row
    cdef real_t a, be, c
    cdef const real_t* s
    cdef const real_t* y
    for i in range(n):
        d[i] = -g[i]
    for k in range(m - 1, -1, -1):
        row = order[k]
        s = S + row * n
        y = Y + row * n
        a = (<real_t>_dot(s, d, n)) * ro[row]
        al[row] = a
        a = -a
        for i in range(n):
            d[i] = _fma(a, y[i], d[i])
    if not h_one:
        for i in range(n):
            d[i] = d[i] * h_diag
    for k in range(m):
        row = order[k]
        s = S + row * n
        y = Y + row * n
        be = (<real_t>_dot(y, d, n)) * ro[row]
        c = al[row] - be
        for i in range(n):
            d[i] = _fma(c, s[i], d[i])
