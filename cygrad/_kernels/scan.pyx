"""Running sums and products (cumsum, cumprod, and the reversed cumsum of
their backwards) along one axis; and the arithmetic ranges of ``arange`` and
``linspace`` (``arange_fill``, ``linspace_fill`` below).

Why compiled: NumPy's ``add.accumulate`` with a float64 accumulator runs
one element at a time through a cast buffer (~14 ns per element along the
last axis of a (1000, 1000) float32 array, 17x torch); torch accumulates
float32 scans in double, and so must we to give its numbers.  This loop is
one pass, vectorized across the trailing axes.

Layout: ``x`` and ``out`` are flat C-contiguous views of the same
(pre, n, post) shape, the scanned axis in the middle (the caller reshapes:
pre = product of the axes before, post = of those after).  With ``post``
1 the accumulator is a scalar; otherwise a double buffer of ``post``
elements walks down the axis, so the inner loop runs over contiguous
memory.

Dtypes: ``real_t`` in and out, always accumulated in double and rounded
once per element (torch's CPU rule, checked bit for bit in the tests).
``reverse`` scans from the end (grad of cumsum = reversed cumsum of g).
Aliasing: ``out`` may be ``x`` (each element is read before it is written).
Threading: serial; the wrapper checks sizes with the GIL, then releases it.
"""

from libc.stdlib cimport free, malloc

from cygrad._kernels._types cimport real_t


cdef void _scan(const real_t* x, real_t* out, Py_ssize_t pre, Py_ssize_t n,
                Py_ssize_t post, bint prod, bint reverse,
                double* acc) noexcept nogil:
    cdef Py_ssize_t p, i, k, q, base
    cdef double a
    for p in range(pre):
        base = p * n * post
        if post == 1:
            a = 1.0 if prod else 0.0
            for i in range(n):
                k = base + (n - 1 - i if reverse else i)
                if prod:
                    a = a * x[k]
                else:
                    a = a + x[k]
                out[k] = <real_t>a
            continue
        for q in range(post):
            acc[q] = 1.0 if prod else 0.0
        for i in range(n):
            k = base + (n - 1 - i if reverse else i) * post
            if prod:
                for q in range(post):
                    acc[q] = acc[q] * x[k + q]
                    out[k + q] = <real_t>acc[q]
            else:
                for q in range(post):
                    acc[q] = acc[q] + x[k + q]
                    out[k + q] = <real_t>acc[q]


def scan(const real_t[::1] x,      # in
         real_t[::1] out,          # out, may be x
         Py_ssize_t pre, Py_ssize_t n, Py_ssize_t post,
         bint prod=False, bint reverse=False):
    """out = running sum (or product) of x along the middle axis of its
    (pre, n, post) shape, accumulated in double."""
    cdef Py_ssize_t size = pre * n * post
    cdef double* acc = NULL
    if pre < 0 or n < 0 or post < 0 or x.shape[0] != size or out.shape[0] != size:
        raise ValueError(f"scan: shapes ({pre}, {n}, {post}) do not match lengths "
                         f"{x.shape[0]} and {out.shape[0]}")
    if size == 0:
        return
    if post > 1:
        acc = <double*>malloc(post * sizeof(double))
        if acc == NULL:
            raise MemoryError("scan: no memory for the accumulator")
    with nogil:
        _scan(&x[0], &out[0], pre, n, post, prod, reverse, acc)
    free(acc)


# --- arithmetic ranges (cg_ranges.h) ------------------------------------------------

cdef extern from "cg_ranges.h":
    void cg_arange_f(float* out, Py_ssize_t n, double start, double step,
                     Py_ssize_t chunk, Py_ssize_t lanes) noexcept nogil
    void cg_arange_d(double* out, Py_ssize_t n, double start, double step,
                     Py_ssize_t chunk, Py_ssize_t lanes) noexcept nogil
    void cg_linspace_f(float* out, Py_ssize_t n, float start, float end,
                       float step) noexcept nogil
    void cg_linspace_d(double* out, Py_ssize_t n, double start, double end,
                       double step) noexcept nogil


def arange_fill(real_t[::1] out, double start, double step, Py_ssize_t chunk,
                Py_ssize_t lanes):
    """torch's arange in float32 or float64 (steps in double; see
    cg_ranges.h): ``chunk`` elements per thread of torch's, ``lanes`` per
    register of its kernel."""
    cdef Py_ssize_t n = out.shape[0]
    if chunk < 1 or lanes < 1:
        raise ValueError(f"arange_fill: chunk {chunk} and lanes {lanes} must be >= 1")
    if n == 0:
        return
    with nogil:
        if real_t is float:
            cg_arange_f(&out[0], n, start, step, chunk, lanes)
        else:
            cg_arange_d(&out[0], n, start, step, chunk, lanes)


def linspace_fill(real_t[::1] out, real_t start, real_t end, real_t step):
    """torch's linspace in ``out``'s dtype (see cg_ranges.h; integer results
    are made in double and truncated by the caller)."""
    cdef Py_ssize_t n = out.shape[0]
    if n == 0:
        return
    with nogil:
        if real_t is float:
            cg_linspace_f(&out[0], n, start, end, step)
        else:
            cg_linspace_d(&out[0], n, start, end, step)
