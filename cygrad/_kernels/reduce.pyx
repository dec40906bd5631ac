"""Reductions used by the engine and the core ops.

Layout: inputs are any NumPy arrays of float32/float64; outputs are freshly
allocated.  float32 sums accumulate in double (``sum_all``) or use NumPy's
pairwise summation (axis reductions), both far more accurate than a naive
float32 running sum.  No aliasing: outputs never share memory with inputs.
Threading: the contiguous full sum releases the GIL.
"""

cimport numpy as cnp
import numpy as np

from cygrad._kernels._types cimport real_t

cnp.import_array()


cdef double _sum_contig(const real_t* x, Py_ssize_t n) noexcept nogil:
    # Four independent double accumulators: accurate for float32 and lets
    # the compiler keep several additions in flight.
    cdef double s0 = 0, s1 = 0, s2 = 0, s3 = 0
    cdef Py_ssize_t i = 0
    while i + 4 <= n:
        s0 += x[i]
        s1 += x[i + 1]
        s2 += x[i + 2]
        s3 += x[i + 3]
        i += 4
    while i < n:
        s0 += x[i]
        i += 1
    return (s0 + s1) + (s2 + s3)


def sum_all(cnp.ndarray x):
    """Sum of every element as a 0-d array of x's dtype (float32/float64)."""
    cdef Py_ssize_t n = cnp.PyArray_SIZE(x)
    cdef double s
    cdef int typenum = cnp.PyArray_TYPE(x)
    if not cnp.PyArray_IS_C_CONTIGUOUS(x):
        x = np.ascontiguousarray(x)
    if typenum == cnp.NPY_FLOAT:
        with nogil:
            s = _sum_contig(<const float*>cnp.PyArray_DATA(x), n)
    elif typenum == cnp.NPY_DOUBLE:
        with nogil:
            s = _sum_contig(<const double*>cnp.PyArray_DATA(x), n)
    else:
        raise NotImplementedError(f"sum_all: no kernel for dtype {x.dtype}")
    cdef cnp.ndarray out = cnp.PyArray_EMPTY(0, NULL, typenum, 0)
    if typenum == cnp.NPY_FLOAT:
        (<float*>cnp.PyArray_DATA(out))[0] = <float>s
    else:
        (<double*>cnp.PyArray_DATA(out))[0] = s
    return out


def sum_to_shape(x, tuple shape):
    """Sum ``x`` over the axes that broadcasting added to reach its shape.

    ``shape`` must broadcast to ``x.shape``; the result has exactly ``shape``.
    Raises ValueError naming both shapes otherwise.
    """
    cdef tuple xs = x.shape
    cdef Py_ssize_t nx = len(xs), ns = len(shape), lead = nx - ns, d
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
        if x.dtype.kind == "f":
            return np.array(sum_all(x)).reshape(shape)
    axes = list(range(lead))
    for d in range(ns):
        if shape[d] == xs[lead + d]:
            continue
        if shape[d] != 1:
            raise ValueError(f"cannot sum shape {list(xs)} to shape {list(shape)}")
        axes.append(lead + d)
    out = np.add.reduce(x, axis=tuple(axes), keepdims=True) if axes else x
    if lead:
        out = out.reshape(shape)
    # np.ascontiguousarray turns a 0-d array into shape (1,): a 0-d leaf got
    # a (1,) gradient.  0-d arrays are always contiguous, so skip them.
    return out if out.flags.c_contiguous else np.ascontiguousarray(out)
