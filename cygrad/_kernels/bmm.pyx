"""``matmul`` of stacks of small matrices in one compiled loop (``cg_bmm.h``).

NumPy's matmul calls BLAS once per matrix of a stack; for attention-sized
matrices BLAS's per-call setup is most of the cost.  ``matmul(a, b)`` gives
``np.matmul(a, b)``'s result (its values to rounding: each entry is a plain
running sum over k), running stacks of small float matrices here and
handing everything else to NumPy: 2-D products, large matrices, integer or
mixed dtypes, batch dimensions that cannot be walked with two strides, and
anything NumPy would refuse (it raises its own error).

Layout: any strides (a transposed view needs no copy); the result is a new
C-contiguous array.  Threading: serial, the GIL released.
"""

cimport numpy as cnp
import numpy as np

cnp.import_array()


cdef extern from "cg_bmm.h":
    void cg_bmm_f(const float* A, const float* B, float* C, float* pack,
                  Py_ssize_t B1, Py_ssize_t B2, Py_ssize_t M, Py_ssize_t N, Py_ssize_t K,
                  Py_ssize_t sa1, Py_ssize_t sa2, Py_ssize_t sam, Py_ssize_t sak,
                  Py_ssize_t sb1, Py_ssize_t sb2, Py_ssize_t sbk,
                  Py_ssize_t sbn) noexcept nogil
    void cg_bmm_d(const double* A, const double* B, double* C, double* pack,
                  Py_ssize_t B1, Py_ssize_t B2, Py_ssize_t M, Py_ssize_t N, Py_ssize_t K,
                  Py_ssize_t sa1, Py_ssize_t sa2, Py_ssize_t sam, Py_ssize_t sak,
                  Py_ssize_t sb1, Py_ssize_t sb2, Py_ssize_t sbk,
                  Py_ssize_t sbn) noexcept nogil

# The largest matrices run here (each side, and M * N * K); above, BLAS's
# packing and blocking win (bench: benchmarks/bench_ops.py, "bmm").
cdef enum:
    MAX_SIDE = 128
    MAX_WORK = 65536
    MAX_BATCH_DIMS = 16


def matmul(a, b):
    """``np.matmul(a, b)``, stacks of small float matrices compiled."""
    out = _small(a, b)
    return np.matmul(a, b) if out is None else out


cdef object _small(object a_obj, object b_obj):
    if type(a_obj) is not np.ndarray or type(b_obj) is not np.ndarray:
        return None
    cdef cnp.ndarray a = a_obj, b = b_obj
    cdef int nda = cnp.PyArray_NDIM(a), ndb = cnp.PyArray_NDIM(b)
    cdef int typenum = cnp.PyArray_TYPE(a)
    if nda < 2 or ndb < 2 or (nda < 3 and ndb < 3):
        return None
    if cnp.PyArray_TYPE(b) != typenum or not (
            typenum == cnp.NPY_FLOAT or typenum == cnp.NPY_DOUBLE):
        return None
    if not (cnp.PyArray_ISNOTSWAPPED(a) and cnp.PyArray_ISNOTSWAPPED(b)
            and cnp.PyArray_ISALIGNED(a) and cnp.PyArray_ISALIGNED(b)):
        return None                         # byte-swapped or unaligned: NumPy
    cdef Py_ssize_t item = cnp.PyArray_ITEMSIZE(a)
    cdef Py_ssize_t M = a.shape[nda - 2], K = a.shape[nda - 1]
    cdef Py_ssize_t N = b.shape[ndb - 1]
    if b.shape[ndb - 2] != K or M == 0 or N == 0 or K == 0:
        return None
    if M > MAX_SIDE or N > MAX_SIDE or K > MAX_SIDE or M * N * K > MAX_WORK:
        return None
    # the batch dimensions, right-aligned and broadcast; strides in elements
    cdef int nb = max(nda, ndb) - 2, d, da, db
    if nb > MAX_BATCH_DIMS:
        return None
    cdef Py_ssize_t shape[MAX_BATCH_DIMS]
    cdef Py_ssize_t sa[MAX_BATCH_DIMS]
    cdef Py_ssize_t sb[MAX_BATCH_DIMS]
    cdef Py_ssize_t n_a, n_b
    for d in range(nb):
        da = d - (nb - (nda - 2))
        db = d - (nb - (ndb - 2))
        n_a = a.shape[da] if da >= 0 else 1
        n_b = b.shape[db] if db >= 0 else 1
        if n_a != n_b and n_a != 1 and n_b != 1:
            return None                     # NumPy raises its own error
        shape[d] = n_a if n_a != 1 else n_b
        if shape[d] == 0:
            return None
        sa[d] = 0 if n_a == 1 else a.strides[da]
        sb[d] = 0 if n_b == 1 else b.strides[db]
        if sa[d] % item or sb[d] % item:
            return None
        sa[d] //= item
        sb[d] //= item
    # merge neighbouring batch dimensions that walk like one, for both
    cdef int levels = 0
    cdef Py_ssize_t lshape[2]
    cdef Py_ssize_t lsa[2]
    cdef Py_ssize_t lsb[2]
    lshape[0] = lshape[1] = 1
    lsa[0] = lsa[1] = lsb[0] = lsb[1] = 0
    for d in range(nb - 1, -1, -1):
        if shape[d] == 1:
            continue
        if levels and lsa[levels - 1] * lshape[levels - 1] == sa[d] and \
                lsb[levels - 1] * lshape[levels - 1] == sb[d]:
            lshape[levels - 1] *= shape[d]
            continue
        if levels == 2:
            return None
        lshape[levels] = shape[d]
        lsa[levels] = sa[d]
        lsb[levels] = sb[d]
        levels += 1
    # level 0 is the innermost: the kernel takes (outer, inner)
    cdef Py_ssize_t B1 = lshape[1], B2 = lshape[0]
    cdef Py_ssize_t sa1 = lsa[1], sa2 = lsa[0], sb1 = lsb[1], sb2 = lsb[0]
    cdef Py_ssize_t sam = a.strides[nda - 2], sak = a.strides[nda - 1]
    cdef Py_ssize_t sbk = b.strides[ndb - 2], sbn = b.strides[ndb - 1]
    if sam % item or sak % item or sbk % item or sbn % item:
        return None
    sam //= item
    sak //= item
    sbk //= item
    sbn //= item
    cdef Py_ssize_t lanes = 32 // item
    cdef Py_ssize_t Np = (N + 2 * lanes - 1) // (2 * lanes) * 2 * lanes
    if Np - N > N // 4 and M * N * K > 4096:
        return None             # a padded panel would waste more than BLAS costs
    out_shape = tuple([shape[d] for d in range(nb)]) + (M, N)
    cdef cnp.ndarray out = np.empty(out_shape, dtype=a.dtype)
    cdef cnp.ndarray pack = np.empty(K * Np, dtype=a.dtype)
    if typenum == cnp.NPY_FLOAT:
        with nogil:
            cg_bmm_f(<const float*>cnp.PyArray_DATA(a), <const float*>cnp.PyArray_DATA(b),
                     <float*>cnp.PyArray_DATA(out), <float*>cnp.PyArray_DATA(pack),
                     B1, B2, M, N, K, sa1, sa2, sam, sak, sb1, sb2, sbk, sbn)
    else:
        with nogil:
            cg_bmm_d(<const double*>cnp.PyArray_DATA(a), <const double*>cnp.PyArray_DATA(b),
                     <double*>cnp.PyArray_DATA(out), <double*>cnp.PyArray_DATA(pack),
                     B1, B2, M, N, K, sa1, sa2, sam, sak, sb1, sb2, sbk, sbn)
    return out
