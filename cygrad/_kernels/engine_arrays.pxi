# Arrays: dtype promotion (torch's rules), broadcasting and kernel launch,
# and the pool of 0-d arrays.
# Part of engine.pyx (included there; it is one compiled module).

# --- dtype promotion ------------------------------------------------------------------

cdef inline int _category(int typenum) noexcept:
    if typenum == cnp.NPY_BOOL:
        return 0
    if (typenum == cnp.NPY_FLOAT or typenum == cnp.NPY_DOUBLE
            or typenum == cnp.NPY_FLOAT16):
        return 2
    return 1


cdef int _default_float = cnp.NPY_FLOAT


def _set_default_dtype(dtype):
    global _default_float
    _default_float = np.dtype(dtype).num


cdef object _np_bool = np.bool_, _np_integer = np.integer, _np_floating = np.floating


cdef int _scalar_category(object s):
    """0 bool, 1 integer, 2 float, -1 not a number.  Python's own float and
    int come first, by exact type: a failed isinstance() against NumPy's
    abstract types looks up ``__class__`` (~150 instructions each)."""
    cdef object t = type(s)
    if t is float:
        return 2
    if t is int:
        return 1
    if t is bool or isinstance(s, _np_bool):
        return 0
    if isinstance(s, int) or isinstance(s, _np_integer):
        return 1
    if isinstance(s, float) or isinstance(s, _np_floating):
        return 2
    return -1


cdef int _promote_tensors(int ta, int ndim_a, int tb, int ndim_b):
    """torch's rule: dimensioned tensors outrank 0-d ones within a category."""
    cdef int ca = _category(ta), cb = _category(tb)
    if ta == tb:
        return ta
    if ca != cb:
        # A higher category wins outright (int64 + float32 -> float32).
        return ta if ca > cb else tb
    if (ndim_a == 0) != (ndim_b == 0):
        return tb if ndim_a == 0 else ta
    return np.result_type(np.dtype(cnp.PyArray_DescrFromType(ta)),
                          np.dtype(cnp.PyArray_DescrFromType(tb))).num


cdef int _promote_scalar(int tt, object s):
    cdef int cs = _scalar_category(s), ct = _category(tt)
    if cs <= ct:
        return tt
    if cs == 2:
        return _default_float
    return cnp.NPY_INT64


cdef cnp.ndarray _scalar_array(object s, int typenum):
    cdef cnp.ndarray out = _empty_nd(0, NULL, typenum)
    if typenum == cnp.NPY_FLOAT:
        (<float*>cnp.PyArray_DATA(out))[0] = <float>(<double>s)
    elif typenum == cnp.NPY_DOUBLE:
        (<double*>cnp.PyArray_DATA(out))[0] = <double>s
    elif type(s) is int:
        # wrapped first: NumPy 2 refuses an out-of-range int, 1.26 warns
        out[()] = _wrap_int(s, out.dtype)
    else:
        out[()] = s
    return out


cpdef object _wrap_int(object s, object dt):
    """A Python int outside an integer dtype's range, wrapped modulo 2**bits
    as torch's C++ cast of the scalar does (uint8 + 300 adds 44, uint8 < 300
    compares with 44); beyond int64 torch raises OverflowError, and so does
    this.  Any other scalar, and an int the dtype holds, is returned as it is."""
    if type(s) is not int or dt.kind not in "iu":
        return s
    if not (-2**63 <= s < 2**64):
        raise OverflowError("int too big to convert")
    bits = dt.itemsize * 8  # a Python int: 1 << 64 must not be a C shift
    v = s % (1 << bits)
    if dt.kind == "i" and v >= (1 << (bits - 1)):
        v -= 1 << bits
    return v


# --- broadcasting -------------------------------------------------------------------------

cdef tuple _broadcast_shape(tuple sa, tuple sb):
    cdef Py_ssize_t na = len(sa), nb = len(sb), n = max(na, nb), i, da, db
    if sa == sb:
        return sa
    out = [0] * n
    # from the last dimension, as torch: the mismatch reported is the last one
    for i in range(n - 1, -1, -1):
        da = sa[na - n + i] if na - n + i >= 0 else 1
        db = sb[nb - n + i] if nb - n + i >= 0 else 1
        if da == db or db == 1:
            out[i] = da
        elif da == 1:
            out[i] = db
        else:
            raise RuntimeError(
                f"The size of tensor a ({da}) must match the size of tensor b ({db}) "
                f"at non-singleton dimension {i}: shapes {list(sa)} and {list(sb)} "
                "do not broadcast")
    return tuple(out)


cdef int _fill_strides(cnp.ndarray arr, int ndim, const Py_ssize_t* shape,
                       Py_ssize_t* out) except -1:
    """Element strides of ``arr`` broadcast to ``shape`` (0 on broadcast axes)."""
    cdef int an = cnp.PyArray_NDIM(arr), d, ad
    cdef Py_ssize_t item = cnp.PyArray_ITEMSIZE(arr)
    cdef cnp.npy_intp* st = cnp.PyArray_STRIDES(arr)
    cdef cnp.npy_intp* dims = cnp.PyArray_DIMS(arr)
    for d in range(ndim):
        ad = d - (ndim - an)
        if ad < 0 or dims[ad] == 1:
            out[d] = 0
        else:
            if st[ad] % item:
                raise ValueError("array strides are not a multiple of its item size")
            out[d] = st[ad] // item
    return 0


cdef int _run_kernel(row_fn fn, int nargs, cnp.ndarray out, list args) except -1:
    """Apply ``fn`` with ``out`` as p[0] and ``args`` (arrays) as inputs.

    Every input is broadcast to ``out``'s shape through 0 strides; axes are
    coalesced so that contiguous data runs as one long row.
    """
    cdef int ndim = cnp.PyArray_NDIM(out), k, d, nd
    cdef Py_ssize_t shape[32]
    cdef Py_ssize_t strides[8 * 32]
    cdef Py_ssize_t cshape[32]
    cdef Py_ssize_t cstrides[8 * 32]
    cdef char* base[8]
    cdef Py_ssize_t n = cnp.PyArray_SIZE(out), item = cnp.PyArray_ITEMSIZE(out)
    cdef bint merge
    cdef cnp.ndarray a
    if ndim > 32:
        raise ValueError(f"cygrad supports at most 32 dimensions, got {ndim}")
    if n == 0:
        return 0
    for d in range(ndim):
        shape[d] = cnp.PyArray_DIMS(out)[d]
    _fill_strides(out, ndim, shape, strides)
    base[0] = <char*>cnp.PyArray_DATA(out)
    for k in range(1, nargs):
        a = <cnp.ndarray>args[k - 1]
        if a is None:
            base[k] = NULL
            for d in range(ndim):
                strides[k * ndim + d] = 0
            continue
        _fill_strides(a, ndim, shape, &strides[k * ndim])
        base[k] = <char*>cnp.PyArray_DATA(a)
    # Coalesce: drop size-1 axes, merge axis d into d+1 when every argument
    # steps through them as one.
    nd = 0
    for d in range(ndim):
        if shape[d] == 1:
            continue
        if nd > 0:
            merge = True
            for k in range(nargs):
                if cstrides[k * 32 + nd - 1] != strides[k * ndim + d] * shape[d]:
                    merge = False
                    break
            if merge:
                cshape[nd - 1] *= shape[d]
                for k in range(nargs):
                    cstrides[k * 32 + nd - 1] = strides[k * ndim + d]
                continue
        cshape[nd] = shape[d]
        for k in range(nargs):
            cstrides[k * 32 + nd] = strides[k * ndim + d]
        nd += 1
    # Re-pack strides densely as [k * nd + d].
    for k in range(nargs):
        for d in range(nd):
            strides[k * nd + d] = cstrides[k * 32 + d]
    if n >= GIL_RELEASE_MIN:
        with nogil:
            nd_apply(fn, nargs, nd, cshape, base, strides, item)
    else:
        nd_apply(fn, nargs, nd, cshape, base, strides, item)
    return 0


cdef int _run_like(row_fn fn, int nargs, cnp.ndarray out, object a1, object a2=None,
                   object a3=None, object a4=None) except -1:
    """``_run_kernel(fn, nargs, out, [a1, ...])``, as one flat row when it can.

    The flat call (no list, no stride bookkeeping) needs every input that is
    not None to have ``out``'s shape and dtype, C-contiguous and aligned: the
    backward of a same-shape op, the common case (and every 0-d one).
    """
    cdef PyObject* args[4]            # borrowed: the caller holds them
    cdef char* ptrs[5]
    cdef Py_ssize_t st[5]
    cdef Py_ssize_t n = cnp.PyArray_SIZE(out)
    cdef int k, typenum = cnp.PyArray_TYPE(out)
    cdef cnp.ndarray a
    args[0] = <PyObject*>a1
    args[1] = <PyObject*>a2
    args[2] = <PyObject*>a3
    args[3] = <PyObject*>a4
    ptrs[0] = <char*>cnp.PyArray_DATA(out)
    st[0] = 1
    for k in range(nargs - 1):
        if <object>args[k] is None:
            ptrs[k + 1] = NULL
            st[k + 1] = 0
            continue
        a = <cnp.ndarray>args[k]
        if not (cnp.PyArray_TYPE(a) == typenum and cnp.PyArray_IS_C_CONTIGUOUS(a)
                and cnp.PyArray_ISALIGNED(a) and _same_shape(a, out)):
            return _run_kernel(fn, nargs, out, [a1, a2, a3, a4][:nargs - 1])
        ptrs[k + 1] = <char*>cnp.PyArray_DATA(a)
        st[k + 1] = 1
    if n >= GIL_RELEASE_MIN:
        with nogil:
            fn(n, ptrs, st)
    elif n > 0:
        fn(n, ptrs, st)
    return 0


cdef inline bint _same_shape(cnp.ndarray a, cnp.ndarray b) noexcept:
    cdef int nd = cnp.PyArray_NDIM(a), d
    if nd != cnp.PyArray_NDIM(b):
        return False
    for d in range(nd):
        if cnp.PyArray_DIMS(a)[d] != cnp.PyArray_DIMS(b)[d]:
            return False
    return True


cdef inline int _dt_index(int typenum) noexcept:
    return 0 if typenum == cnp.NPY_FLOAT else 1


# --- the pool of 0-d arrays ---------------------------------------------------------
# A graph of scalar ops (micrograd-style code, the scalar-chain benchmark)
# allocates one 0-d array per op and frees them all when the graph dies.
# NumPy spends ~550 instructions creating such an array and ~250 freeing it
# (data-handler lookup through a context variable, descriptor, flags); a pool
# of dead tensors' 0-d float arrays hands them back for ~20 (callgrind).  The
# pool keeps no more arrays per dtype than the ops have ever asked it for and
# found it empty (each miss raises the cap by one), and never more than
# SCALAR_POOL_MAX (~2 MB in all): code that makes few scalars keeps a few.
cdef enum:
    SCALAR_POOL_MAX = 16384

cdef extern from "cg_engine.h":
    bint cg_recyclable_0d(object a, void* want, Py_ssize_t refs)

cdef PyObject* _pool_f[SCALAR_POOL_MAX]
cdef PyObject* _pool_d[SCALAR_POOL_MAX]
cdef Py_ssize_t _n_pool_f = 0, _n_pool_d = 0
cdef Py_ssize_t _cap_pool_f = 0, _cap_pool_d = 0
cdef object _descr_f_obj = cnp.PyArray_DescrFromType(cnp.NPY_FLOAT)
cdef object _descr_d_obj = cnp.PyArray_DescrFromType(cnp.NPY_DOUBLE)
cdef void* _descr_f = <void*>_descr_f_obj
cdef void* _descr_d = <void*>_descr_d_obj


cdef inline void _recycle(object arr, Py_ssize_t refs=1) noexcept:
    """Keep a dying tensor's 0-d float array for reuse (see the pool above).

    ``refs``: the references the caller knows of (1: the one it is about to
    drop); any other holder makes the array ineligible.
    """
    global _n_pool_f, _n_pool_d
    if arr is None:
        return
    if _n_pool_f < _cap_pool_f and cg_recyclable_0d(arr, _descr_f, refs):
        Py_INCREF(arr)
        _pool_f[_n_pool_f] = <PyObject*>arr
        _n_pool_f += 1
    elif _n_pool_d < _cap_pool_d and cg_recyclable_0d(arr, _descr_d, refs):
        Py_INCREF(arr)
        _pool_d[_n_pool_d] = <PyObject*>arr
        _n_pool_d += 1


cdef inline void _recycle_results(object results) noexcept:
    """Pool the 0-d gradients a backward node returned that nothing kept
    (held by the ``results`` tuple alone), before the tuple is dropped: the
    backward of a scalar chain made ~2.7 new arrays per step for them."""
    cdef Py_ssize_t i
    cdef object g
    if type(results) is not tuple or Py_REFCNT(results) != 1:
        return
    for i in range(len(<tuple>results)):
        g = (<tuple>results)[i]
        if g is not None:
            _recycle(g, 2)      # the tuple's reference and g's


cdef inline object _pool_pop(int typenum):
    """A pooled 0-d array of ``typenum`` (float32/float64), or None."""
    global _n_pool_f, _n_pool_d, _cap_pool_f, _cap_pool_d
    cdef object arr
    if typenum == cnp.NPY_FLOAT:
        if _n_pool_f == 0:
            if _cap_pool_f < SCALAR_POOL_MAX:
                _cap_pool_f += 1
            return None
        _n_pool_f -= 1
        arr = <object>_pool_f[_n_pool_f]     # a new reference...
        Py_DECREF(arr)                       # ...so drop the pool's one
        return arr
    if typenum == cnp.NPY_DOUBLE:
        if _n_pool_d == 0:
            if _cap_pool_d < SCALAR_POOL_MAX:
                _cap_pool_d += 1
            return None
        _n_pool_d -= 1
        arr = <object>_pool_d[_n_pool_d]
        Py_DECREF(arr)
        return arr
    return None


def _freelist_sizes():
    """(tensors, elementwise nodes, versions) held by the free lists, -1
    where none is installed (tests)."""
    return cg_fl_size(0), cg_fl_size(1), cg_fl_size(2)


def _clear_caches():
    """Give the memory of the free lists and of the 0-d pool back."""
    global _n_pool_f, _n_pool_d
    cg_fl_clear()
    while _n_pool_f > 0:
        _n_pool_f -= 1
        Py_DECREF(<object>_pool_f[_n_pool_f])
    while _n_pool_d > 0:
        _n_pool_d -= 1
        Py_DECREF(<object>_pool_d[_n_pool_d])


def _scalar_pool_size():
    """((float32 held, cap), (float64 held, cap)) of the 0-d pool (tests)."""
    return (_n_pool_f, _cap_pool_f), (_n_pool_d, _cap_pool_d)


cdef inline cnp.ndarray _empty_nd(int nd, cnp.npy_intp* dims, int typenum):
    """A new C-contiguous array (kernels write every element)."""
    cdef object arr
    if nd == 0:
        arr = _pool_pop(typenum)
        if arr is not None:
            return <cnp.ndarray>arr
    return cnp.PyArray_EMPTY(nd, dims, typenum, 0)


cdef cnp.ndarray _empty_like_shape(tuple shape, int typenum):
    cdef cnp.npy_intp dims[32]
    cdef int nd = len(shape), d
    if nd > 32:
        raise ValueError(f"cygrad supports at most 32 dimensions, got {nd}")
    for d in range(nd):
        dims[d] = shape[d]
    return cnp.PyArray_EMPTY(nd, dims, typenum, 0)


cdef inline cnp.ndarray _as_float_array(cnp.ndarray a, int typenum):
    if cnp.PyArray_TYPE(a) != typenum:
        return a.astype(cnp.PyArray_DescrFromType(typenum))
    if not cnp.PyArray_ISALIGNED(a):
        return np.array(a)
    return a
