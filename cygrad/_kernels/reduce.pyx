"""Reductions used by the engine and the core ops.

Layout: inputs are any NumPy arrays of float32/float64; outputs are freshly
allocated.  ``sum_all`` adds blocks of 128 in eight lanes of the input's type
and the block totals in double; axis reductions use NumPy's pairwise
summation: both as accurate as torch's sums, far more than a naive float32
running sum.  No aliasing: outputs never share memory with inputs.
Threading: the compiled sums release the GIL and, above the threshold of
``threads.threads_for``, cut the data into one block per configured thread
(``threads.run_blocks`` runs them): each block sums into its own double
partial and the partials are added in block order, so a given thread count
always gives the same bits (different counts may differ in the last place,
as any change of summation order does).
"""

cimport numpy as cnp
import numpy as np

from cygrad._kernels._types cimport real_t
from cygrad._kernels.threads cimport run_blocks, threads_for

cnp.import_array()

# Most partial sums a parallel reduction keeps (threads beyond it idle).
cdef enum:
    MAX_PARTS = 64


cdef extern from "cg_reduce.h":
    double cg_sum_f32(const float* x, Py_ssize_t n) noexcept nogil
    double cg_sum_f64(const double* x, Py_ssize_t n) noexcept nogil
    void cg_colsum_f32(const float* x, Py_ssize_t rows, Py_ssize_t K, Py_ssize_t k0,
                       Py_ssize_t k1, double* acc) noexcept nogil
    void cg_colsum_f64(const double* x, Py_ssize_t rows, Py_ssize_t K, Py_ssize_t k0,
                       Py_ssize_t k1, double* acc) noexcept nogil
    void cg_addrow_f32(float* x, const float* b, Py_ssize_t rows,
                       Py_ssize_t K) noexcept nogil
    void cg_addrow_f64(double* x, const double* b, Py_ssize_t rows,
                       Py_ssize_t K) noexcept nogil


cdef inline double _sum_contig(const real_t* x, Py_ssize_t n) noexcept nogil:
    if real_t is float:
        return cg_sum_f32(x, n)
    else:
        return cg_sum_f64(x, n)


cdef struct _SumJob:
    # One of xf / xd is set (the input's dtype); blocks of ``chunk``.
    const float* xf
    const double* xd
    Py_ssize_t n, chunk
    double* part


cdef void _sum_block(void* job, Py_ssize_t c) noexcept nogil:
    # part[c] = the sum of block c.
    cdef _SumJob* j = <_SumJob*>job
    cdef Py_ssize_t start = c * j.chunk, stop = min(j.n, (c + 1) * j.chunk)
    if start >= stop:
        j.part[c] = 0.0
    elif j.xf != NULL:
        j.part[c] = _sum_contig(j.xf + start, stop - start)
    else:
        j.part[c] = _sum_contig(j.xd + start, stop - start)


cdef double _sum_threads(const real_t* x, Py_ssize_t n) noexcept nogil:
    # Blocks and their order depend only on n and the thread count.
    cdef int t = threads_for(n)
    cdef double part[MAX_PARTS]
    cdef double s = 0
    cdef Py_ssize_t c
    cdef _SumJob j
    if t <= 1:
        return _sum_contig(x, n)
    if t > MAX_PARTS:
        t = MAX_PARTS
    j.xf = NULL
    j.xd = NULL
    if real_t is float:
        j.xf = x
    else:
        j.xd = x
    j.n = n
    j.chunk = ((n + t - 1) // t + 15) & ~(<Py_ssize_t>15)
    j.part = part
    run_blocks(_sum_block, &j, t)
    for c in range(t):
        s += part[c]
    return s


# Below this many elements a sum keeps the GIL (releasing it costs more).
cdef enum:
    GIL_RELEASE_MIN = 16384


def sum_all(cnp.ndarray x):
    """Sum of every element as a 0-d array of x's dtype (float32/float64)."""
    return _total(x, 0, NULL)


cdef cnp.ndarray _total(cnp.ndarray x, int nd, cnp.npy_intp* dims):
    """Sum of every element of ``x`` in a new one-element array of shape
    ``dims`` (all ones) and x's dtype (float32/float64)."""
    cdef Py_ssize_t n = cnp.PyArray_SIZE(x)
    cdef double s
    cdef int typenum = cnp.PyArray_TYPE(x)
    if not (cnp.PyArray_IS_C_CONTIGUOUS(x) and cnp.PyArray_ISALIGNED(x)
            and cnp.PyArray_ISNOTSWAPPED(x)):
        # the kernels read native, aligned, contiguous memory
        x = np.require(x, x.dtype.newbyteorder("="), "CA")
    if typenum == cnp.NPY_FLOAT:
        if n >= GIL_RELEASE_MIN:
            with nogil:
                s = _sum_threads(<const float*>cnp.PyArray_DATA(x), n)
        else:
            s = _sum_threads(<const float*>cnp.PyArray_DATA(x), n)
    elif typenum == cnp.NPY_DOUBLE:
        if n >= GIL_RELEASE_MIN:
            with nogil:
                s = _sum_threads(<const double*>cnp.PyArray_DATA(x), n)
        else:
            s = _sum_threads(<const double*>cnp.PyArray_DATA(x), n)
    else:
        raise NotImplementedError(f"sum_all: no kernel for dtype {x.dtype}")
    cdef cnp.ndarray out = cnp.PyArray_EMPTY(nd, dims, typenum, 0)
    if typenum == cnp.NPY_FLOAT:
        (<float*>cnp.PyArray_DATA(out))[0] = <float>s
    else:
        (<double*>cnp.PyArray_DATA(out))[0] = s
    return out


cdef void _akb(const real_t* x, Py_ssize_t K, Py_ssize_t B, Py_ssize_t a0,
               Py_ssize_t a1, Py_ssize_t k0, Py_ssize_t k1,
               double* acc) noexcept nogil:
    # acc[k] += sum of x[a, k, :] over a in [a0, a1), for k in [k0, k1);
    # x is C-contiguous of shape (A, K, B).
    cdef Py_ssize_t a, k
    cdef const real_t* row
    if B == 1:
        if real_t is float:
            cg_colsum_f32(x + a0 * K, a1 - a0, K, k0, k1, acc)
        else:
            cg_colsum_f64(x + a0 * K, a1 - a0, K, k0, k1, acc)
        return
    for a in range(a0, a1):
        row = x + a * K * B
        for k in range(k0, k1):
            acc[k] += _sum_contig(row + k * B, B)


cdef struct _AkbJob:
    const float* xf
    const double* xd
    Py_ssize_t A, K, B, chunk
    bint split_a
    double* acc


cdef void _akb_block(void* job, Py_ssize_t c) noexcept nogil:
    # split_a: block c of a, into its own partials acc[c * K:(c + 1) * K];
    # otherwise block c of k (16 doubles at least: no shared cache line).
    cdef _AkbJob* j = <_AkbJob*>job
    cdef Py_ssize_t a0 = 0, a1 = j.A, k0 = 0, k1 = j.K
    cdef double* acc = j.acc
    if j.split_a:
        a0 = c * j.chunk
        a1 = min(j.A, a0 + j.chunk)
        acc = j.acc + c * j.K
    else:
        k0 = c * j.chunk
        k1 = min(j.K, k0 + j.chunk)
    if j.xf != NULL:
        _akb(j.xf, j.K, j.B, a0, a1, k0, k1, acc)
    else:
        _akb(j.xd, j.K, j.B, a0, a1, k0, k1, acc)


cdef void _sum_akb(const real_t* x, Py_ssize_t A, Py_ssize_t K, Py_ssize_t B,
                   int t, bint split_a, double* acc, real_t* out) noexcept nogil:
    # out[k] = sum over a, b of x[a, k, b], in t blocks.  split_a: partials
    # per block of a, added in block order after; otherwise the blocks own
    # disjoint runs of k (no partials, the same bits for any thread count).
    cdef Py_ssize_t c, k
    cdef double s
    cdef _AkbJob j
    j.xf = NULL
    j.xd = NULL
    if real_t is float:
        j.xf = x
    else:
        j.xd = x
    j.A = A
    j.K = K
    j.B = B
    j.split_a = split_a
    j.acc = acc
    if t <= 1:
        _akb(x, K, B, 0, A, 0, K, acc)
    elif split_a:
        j.chunk = (A + t - 1) // t
        run_blocks(_akb_block, &j, t)
        for k in range(K):
            s = acc[k]
            for c in range(1, t):
                s = s + acc[c * K + k]
            acc[k] = s
    else:
        j.chunk = ((K + t - 1) // t + 15) & ~(<Py_ssize_t>15)
        run_blocks(_akb_block, &j, t)
    for k in range(K):
        out[k] = <real_t>acc[k]


cdef object _sum_kept(cnp.ndarray x, list groups, tuple shape):
    """The compiled sum_to_shape for C-contiguous float arrays, or None.

    ``groups`` lists x's axes of size > 1, merged into runs of (reduced,
    size): reducing (A, K, B), a kept run between two reduced ones (any may
    be absent), covers bias gradients (N, C) -> (C,), per-channel ones
    (N, C, H, W) -> (C, 1, 1) and row sums (M, N) -> (M, 1).
    """
    cdef Py_ssize_t A = 1, K = 1, B = 1, i = 0, ng = len(groups)
    cdef int t
    cdef bint split_a
    cdef int typenum = cnp.PyArray_TYPE(x)
    cdef cnp.ndarray acc, out
    if i < ng and groups[i][0]:
        A = groups[i][1]
        i += 1
    if i < ng and not groups[i][0]:
        K = groups[i][1]
        i += 1
    if i < ng and groups[i][0]:
        B = groups[i][1]
        i += 1
    if i != ng:
        return None
    t = threads_for(A * K * B)
    split_a = A >= t and not (A < 4 * t and K >= 64 * t)
    if t > 1 and not split_a and K < t:
        t = 1
    acc = np.zeros(K * t if split_a else K, dtype=np.float64)
    out = np.empty(shape, dtype=x.dtype)
    if typenum == cnp.NPY_FLOAT:
        with nogil:
            _sum_akb(<const float*>cnp.PyArray_DATA(x), A, K, B, t, split_a,
                     <double*>cnp.PyArray_DATA(acc), <float*>cnp.PyArray_DATA(out))
    else:
        with nogil:
            _sum_akb(<const double*>cnp.PyArray_DATA(x), A, K, B, t, split_a,
                     <double*>cnp.PyArray_DATA(acc), <double*>cnp.PyArray_DATA(out))
    return out


def add_bias(cnp.ndarray out, cnp.ndarray bias):
    """``out += bias`` in place for a C-contiguous float ``out`` whose last
    dimension is ``bias``'s length (a linear layer's bias; ``sum_to_shape``
    to ``bias.shape`` is its gradient).  Returns False, touching nothing,
    when the arrays do not fit that pattern (the caller adds otherwise)."""
    cdef int typenum = cnp.PyArray_TYPE(out)
    cdef Py_ssize_t K, rows
    if (type(out) is not np.ndarray or type(bias) is not np.ndarray
            or cnp.PyArray_NDIM(bias) != 1 or cnp.PyArray_NDIM(out) < 1
            or cnp.PyArray_TYPE(bias) != typenum
            or not (typenum == cnp.NPY_FLOAT or typenum == cnp.NPY_DOUBLE)
            or not cnp.PyArray_IS_C_CONTIGUOUS(out)
            or not cnp.PyArray_IS_C_CONTIGUOUS(bias)
            or not cnp.PyArray_ISWRITEABLE(out)
            or not (cnp.PyArray_ISNOTSWAPPED(out) and cnp.PyArray_ISNOTSWAPPED(bias))):
        return False
    K = cnp.PyArray_DIM(bias, 0)
    if cnp.PyArray_DIM(out, cnp.PyArray_NDIM(out) - 1) != K or K == 0:
        return False
    cdef char* po = <char*>cnp.PyArray_DATA(out)
    cdef char* pb = <char*>cnp.PyArray_DATA(bias)
    if pb < po + cnp.PyArray_NBYTES(out) and po < pb + cnp.PyArray_NBYTES(bias):
        return False                        # overlapping: the caller adds
    rows = cnp.PyArray_SIZE(out) // K
    if typenum == cnp.NPY_FLOAT:
        cg_addrow_f32(<float*>cnp.PyArray_DATA(out), <const float*>cnp.PyArray_DATA(bias),
                      rows, K)
    else:
        cg_addrow_f64(<double*>cnp.PyArray_DATA(out),
                      <const double*>cnp.PyArray_DATA(bias), rows, K)
    return True


def sum_to_shape(x, tuple shape):
    """Sum ``x`` over the axes that broadcasting added to reach its shape.

    ``shape`` must broadcast to ``x.shape``; the result has exactly ``shape``.
    Raises ValueError naming both shapes otherwise.
    """
    cdef tuple xs = x.shape
    cdef Py_ssize_t nx = len(xs), ns = len(shape), lead = nx - ns, d
    cdef cnp.npy_intp ones[32]
    if xs == shape:
        return x
    if lead < 0:
        raise ValueError(f"cannot sum shape {list(xs)} to shape {list(shape)}")
    for d in range(ns):
        if shape[d] != 1:
            break
    else:
        # Down to one element (a bias, a scalar weight): the compiled full
        # sum, not a NumPy reduction over an axis tuple (~5 us per call).
        if ns <= 32 and type(x) is np.ndarray and (
                cnp.PyArray_TYPE(x) == cnp.NPY_FLOAT
                or cnp.PyArray_TYPE(x) == cnp.NPY_DOUBLE):
            for d in range(ns):
                ones[d] = 1
            return _total(x, <int>ns, ones)
    axes = list(range(lead))
    for d in range(ns):
        if shape[d] == xs[lead + d]:
            continue
        if shape[d] != 1:
            raise ValueError(f"cannot sum shape {list(xs)} to shape {list(shape)}")
        axes.append(lead + d)
    if (type(x) is np.ndarray and x.dtype.kind == "f"
            and (cnp.PyArray_TYPE(x) == cnp.NPY_FLOAT
                 or cnp.PyArray_TYPE(x) == cnp.NPY_DOUBLE)
            and cnp.PyArray_IS_C_CONTIGUOUS(x) and cnp.PyArray_ISALIGNED(x)
            and cnp.PyArray_ISNOTSWAPPED(x)):
        groups = []
        for d in range(nx):
            if xs[d] == 1:
                continue
            red = d < lead or shape[d - lead] == 1
            if groups and groups[len(groups) - 1][0] == red:
                groups[len(groups) - 1][1] *= xs[d]
            else:
                groups.append([red, xs[d]])
        out = _sum_kept(x, groups, shape)
        if out is not None:
            return out
    out = np.add.reduce(x, axis=tuple(axes), keepdims=True) if axes else x
    if lead:
        out = out.reshape(shape)
    # np.ascontiguousarray turns a 0-d array into shape (1,): a 0-d leaf got
    # a (1,) gradient.  0-d arrays are always contiguous, so skip them.
    return out if out.flags.c_contiguous else np.ascontiguousarray(out)
