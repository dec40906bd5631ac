# Shape and index ops whose common call is compiled: cat and stack (one
# node, the copy in C), view and reshape (the size arguments read in C), and
# x[idx] / x[i, j] with int64 index tensors (rows of the leading dims).
# Part of engine.pyx (included there; it is one compiled module).
#
# As Python Functions, cat of two (16, 64) tensors cost about 7 us and stack
# as much (torch's: under 3): the argument checks, the Function bridge and
# np.concatenate's generality.  Here the checks are C comparisons of the
# shapes, C-contiguous inputs are joined by memcpy into one new array, and
# the node keeps only the dim and the extents.  Anything else (mixed dtypes,
# the legacy 1-D empty tensors, a bad argument, ``out=``) goes to the Python
# op, which promotes, skips or raises as torch does.


@cython.final
@cython.no_gc
cdef class JoinNode(Node):
    """Backward of cat (input i's gradient: its slice of g along ``dim``) and
    of stack (input i's gradient: g's index i along the new ``dim``)."""
    cdef Py_ssize_t dim
    cdef tuple starts        # cat: per input, its first index along dim
    cdef tuple sizes         # cat: per input, its extent along dim
    cdef bint stacked

    def name(self):
        if self._torch_name is not None:
            return self._torch_name
        return "StackBackward0" if self.stacked else "CatBackward0"

    cdef object apply(self, object grads, bint graph):
        cdef Py_ssize_t i, n = self._n_in
        cdef list out = [None] * n
        lead = (slice(None),) * self.dim
        for i in range(n):
            if _child(self, i) is None:
                continue
            if self.stacked:
                # (i, ...): a 0-d array for a stack of scalars, never a NumPy
                # scalar, which the engine's unchecked array casts would misread
                out[i] = (grads.select(self.dim, i) if graph
                          else grads[lead + (i, Ellipsis)])
            elif graph:
                out[i] = grads.narrow(self.dim, self.starts[i], self.sizes[i])
            else:
                s = self.starts[i]
                out[i] = grads[lead + (slice(s, s + self.sizes[i]),)]
        return tuple(out)


cdef bint _joinable(list arrs, Py_ssize_t d, bint stacked):
    """Whether the arrays share dtype and rank and agree on every axis (but
    ``d``, for cat): the fast path's precondition; False sends the call to
    the Python op (which promotes, skips or raises)."""
    cdef cnp.ndarray a0 = <cnp.ndarray>arrs[0], a
    cdef int nd = cnp.PyArray_NDIM(a0), typenum = cnp.PyArray_TYPE(a0), k
    cdef Py_ssize_t i
    for i in range(1, len(arrs)):
        a = <cnp.ndarray>arrs[i]
        if cnp.PyArray_NDIM(a) != nd or cnp.PyArray_TYPE(a) != typenum:
            return False
        for k in range(nd):
            if (k != d or stacked) and cnp.PyArray_DIMS(a)[k] != cnp.PyArray_DIMS(a0)[k]:
                return False
    return True


cdef void _join_rows(char* dst, char** src, Py_ssize_t* chunk, Py_ssize_t n,
                     Py_ssize_t outer) noexcept nogil:
    """Row ``o`` of the output: row ``o`` of each input in turn."""
    cdef Py_ssize_t o, i
    for o in range(outer):
        for i in range(n):
            memcpy(dst, src[i] + o * chunk[i], chunk[i])
            dst += chunk[i]


cdef cnp.ndarray _join_arrays(list arrs, Py_ssize_t d, bint stacked):
    """The arrays joined along ``d`` (a new axis ``d`` when ``stacked``), C
    order; memcpy of each input's rows when all are C-contiguous."""
    cdef cnp.ndarray a0 = <cnp.ndarray>arrs[0], a, out
    cdef int nd = cnp.PyArray_NDIM(a0), k
    cdef Py_ssize_t i, n = len(arrs), outer = 1, inner = 1, total = 0
    cdef Py_ssize_t itemsize = cnp.PyArray_ITEMSIZE(a0)
    for i in range(n):
        if not cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>arrs[i]):
            return <cnp.ndarray>(np.stack(arrs, axis=d) if stacked
                                 else np.concatenate(arrs, axis=d))
    for k in range(d):
        outer *= cnp.PyArray_DIMS(a0)[k]
    for k in range(d + (0 if stacked else 1), nd):
        inner *= cnp.PyArray_DIMS(a0)[k]
    cdef cnp.npy_intp dims[65]      # NumPy allows at most 64 dims
    for k in range(nd):
        dims[k + (1 if stacked and k >= d else 0)] = cnp.PyArray_DIMS(a0)[k]
    if stacked:
        dims[d] = n
    else:
        for i in range(n):
            total += cnp.PyArray_DIMS(<cnp.ndarray>arrs[i])[d]
        dims[d] = total
    out = cnp.PyArray_EMPTY(nd + (1 if stacked else 0), dims, cnp.PyArray_TYPE(a0), 0)
    cdef char* dst = <char*>cnp.PyArray_DATA(out)
    cdef Py_ssize_t* chunk = <Py_ssize_t*>PyMem_Calloc(n, sizeof(Py_ssize_t))
    cdef char** src = <char**>PyMem_Calloc(n, sizeof(char*))
    if chunk == NULL or src == NULL:
        PyMem_Free(chunk)
        PyMem_Free(src)
        raise MemoryError()
    for i in range(n):
        a = <cnp.ndarray>arrs[i]
        chunk[i] = inner * itemsize * (1 if stacked else cnp.PyArray_DIMS(a)[d])
        src[i] = <char*>cnp.PyArray_DATA(a)
    if cnp.PyArray_NBYTES(out) >= GIL_RELEASE_MIN * 4:
        with nogil:
            _join_rows(dst, src, chunk, n, outer)
    else:
        _join_rows(dst, src, chunk, n, outer)
    PyMem_Free(chunk)
    PyMem_Free(src)
    return out


cdef TensorBase _join(list ts, list arrs, Py_ssize_t d, bint stacked):
    """cat/stack of the tensors ``ts`` (their arrays ``arrs``, joinable)."""
    cdef TensorBase res = _new_tensor(_join_arrays(arrs, d, stacked))
    cdef TensorBase t
    cdef JoinNode node
    cdef Py_ssize_t i, n = len(ts), start = 0
    cdef bint needs = False, any_nr = False
    for i in range(n):
        t = <TensorBase>ts[i]
        if t._requires_grad:
            needs = True
        if t._out_nr:
            any_nr = True
    if cygrad_grad_mode and needs:
        node = JoinNode.__new__(JoinNode)
        node._n_out = 1
        node.dim = d
        node.stacked = stacked
        _set_children(node, tuple([_edge(<TensorBase>t) for t in ts]))
        if any_nr:
            node._nrs = tuple([(<TensorBase>t)._out_nr for t in ts])
        if not stacked:
            starts = []
            sizes = []
            for i in range(n):
                sizes.append(cnp.PyArray_DIMS(<cnp.ndarray>arrs[i])[d])
                starts.append(start)
                start += sizes[i]
            node.starts = tuple(starts)
            node.sizes = tuple(sizes)
        _attach(res, node)
    elif _debug_level > 0:
        for i in range(n):
            t = <TensorBase>ts[i]
            if t._requires_grad or t._origin is not None:
                _note_no_grad(res, t, None)
                break
    return res


def join_method(fallback, bint stacked):
    """``cygrad.cat`` (``stack`` with ``stacked``) compiled for the common
    call: a list or tuple of tensors of one dtype and rank that agree on
    every axis (but ``dim``, for cat), an int ``dim`` in range, no ``out=``.
    Any other call goes to ``fallback``, the op of ``cygrad.ops.shape``,
    with the same arguments."""
    def join(tensors, dim=0, *, out=None, axis=None):
        cdef Py_ssize_t i, n, d, nd
        cdef list arrs
        if axis is not None:
            if dim != 0:
                raise TypeError(f"{fallback.__name__}() got both 'dim' and its "
                                "alias 'axis'")
            dim = axis
        if out is not None:
            return _out_hook(fallback.__name__, fallback, (tensors, dim), out)
        if type(dim) is int and (type(tensors) is list or type(tensors) is tuple):
            n = len(tensors)
            if n > 0:
                arrs = [None] * n
                for i in range(n):
                    t = tensors[i]
                    if not isinstance(t, TensorBase):
                        return fallback(tensors, dim)
                    arrs[i] = (<TensorBase>t)._arr
                nd = cnp.PyArray_NDIM(<cnp.ndarray>arrs[0]) + (1 if stacked else 0)
                d = dim
                if nd > 0 and -nd <= d < nd:
                    if d < 0:
                        d += nd
                    if _joinable(arrs, d, stacked):
                        return _join(list(tensors), arrs, d, stacked)
        return fallback(tensors, dim)
    join.__doc__ = fallback.__doc__
    join.__name__ = fallback.__name__
    join.__qualname__ = fallback.__qualname__
    return join


# --- view and reshape ---------------------------------------------------------------

cdef tuple _plain_shape(tuple args, Py_ssize_t n):
    """The shape that ``view(*args)``/``reshape(*args)`` give ``n`` elements
    when ``args`` are plain ints (or one tuple or list of them) with at most
    one -1 and nothing else negative, and they fit; None for anything else
    (the Python op converts, infers or raises torch's error)."""
    if n == 0:
        return None
    if len(args) == 1 and (isinstance(args[0], tuple) or isinstance(args[0], list)):
        args = tuple(args[0])
    cdef Py_ssize_t i, k = len(args), neg = -1, known = 1, s
    for i in range(k):
        a = args[i]
        if type(a) is not int or not -1 <= a <= n:
            return None
        s = a
        if s == -1 and neg < 0:
            neg = i
        elif s <= 0 or s > n // known:      # (no product can overflow)
            return None
        else:
            known *= s
    if neg < 0:
        return args if known == n else None
    if n % known:
        return None
    return args[:neg] + (n // known,) + args[neg + 1:]


def shape_method(fallback, register):
    """``Tensor.view`` / ``Tensor.reshape`` (and the functions) compiled for
    the common call: plain int sizes that fit and a layout that allows a
    view (``register`` notes the view on its root, as for every compiled
    view).  Any other call, a copying reshape included, goes to
    ``fallback``, the op of ``cygrad.ops.shape``, with the same arguments."""
    def method(self, *shape, **kwargs):
        cdef tuple s
        if not kwargs and isinstance(self, TensorBase):
            s = _plain_shape(shape, cnp.PyArray_SIZE(<cnp.ndarray>(<TensorBase>self)._arr))
            if s is not None:
                res = view_shape(<TensorBase>self, s, None, register)
                if res is not None:
                    return res
        return fallback(self, *shape, **kwargs)
    method.__doc__ = fallback.__doc__
    method.__name__ = fallback.__name__
    method.__qualname__ = fallback.__qualname__
    return method


# --- x[idx], x[i, j]: rows picked by integer index tensors ---------------------------

@cython.final
@cython.no_gc
cdef class IndexRowsNode(Node):
    """Backward of ``x[idx]`` (an embedding-style lookup, ``C[Xb]``) or
    ``x[i, j, ...]`` with int64 index tensors of one shape on the leading
    dims (``logits[arange(n), y]``): grad = zeros of x's shape with g's rows
    added at the flat row numbers, in index order (repeats sum, the same
    bits every run)."""
    cdef object idx                 # flat row numbers of the merged leading dims
    cdef tuple vers                 # the index tensors' (Version, version)
    cdef tuple in_shape
    cdef Py_ssize_t k               # leading dims indexed (merged into rows)

    def name(self):
        if self._torch_name is not None:
            return self._torch_name
        return "IndexBackward0"

    cdef void release(self):
        if self._has_saved:
            self.idx = None
            self._freed = True

    cpdef Py_ssize_t saved_nbytes(self):
        return 0 if self.idx is None else (<cnp.ndarray>self.idx).nbytes

    cdef object apply(self, object grads, bint graph):
        cdef Version ver
        if self._freed:
            raise _freed_error(self, grads)
        for ver, v in self.vers:
            _check_version(ver, v, self.idx, self, "an input")
        cdef cnp.ndarray g, out, rows_view, idx = <cnp.ndarray>self.idx
        cdef Py_ssize_t n = cnp.PyArray_SIZE(idx), d, nrows
        rest = self.in_shape[self.k:]
        merged = (-1,) + rest
        if graph:
            zeros = grads.new_zeros(self.in_shape).reshape(merged)
            return (zeros.index_add(0, _new_tensor(idx), grads.reshape((n,) + rest))
                    .reshape(self.in_shape),)
        g = <cnp.ndarray>grads
        out = <cnp.ndarray>np.zeros(self.in_shape, dtype=(<object>g).dtype)
        rows_view = <cnp.ndarray>(<object>out).reshape(merged)
        nrows = cnp.PyArray_DIMS(rows_view)[0]
        d = cnp.PyArray_SIZE(out) // nrows
        if ((cnp.PyArray_TYPE(g) == cnp.NPY_FLOAT or cnp.PyArray_TYPE(g) == cnp.NPY_DOUBLE)
                and cnp.PyArray_IS_C_CONTIGUOUS(g)):
            # select's compiled row loop, as the Python GetItem's backward
            _select_add_rows((<object>out).reshape(-1), idx, (<object>g).reshape(-1),
                             nrows, d)
        else:
            np.add.at(rows_view, idx, (<object>g).reshape((n,) + rest))
        return (out,)


cdef object _flat_rows(tuple indices, object shape):
    """The flat row numbers of ``x[indices]`` over x's first len(indices)
    dims merged (int64, C order): every index an int64 tensor of the first
    one's shape (at least 1-D, not empty) with its entries in [-size, size)
    of its dim; None otherwise."""
    cdef Py_ssize_t k = len(indices), j, i, n = 0, size, stride = 1
    cdef cnp.ndarray a, flat = None
    cdef const int64_t* p
    cdef int64_t* q
    cdef int64_t e
    first = None
    for j in range(k - 1, -1, -1):
        t = indices[j]
        if not isinstance(t, TensorBase):
            return None
        a = <cnp.ndarray>(<TensorBase>t)._arr
        if cnp.PyArray_TYPE(a) != cnp.NPY_INT64 or cnp.PyArray_NDIM(a) == 0:
            return None
        if flat is None:
            n = cnp.PyArray_SIZE(a)
            if n == 0:
                return None
            first = (<object>a).shape
            flat = cnp.PyArray_ZEROS(1, <cnp.npy_intp*>&n, cnp.NPY_INT64, 0)
        elif (<object>a).shape != first:
            return None
        if not cnp.PyArray_IS_C_CONTIGUOUS(a):
            a = np.ascontiguousarray(a)
        size = shape[j]
        p = <const int64_t*>cnp.PyArray_DATA(a)
        q = <int64_t*>cnp.PyArray_DATA(flat)
        for i in range(n):
            e = p[i]
            if e < 0:
                e += size
            if e < 0 or e >= size:
                return None
            q[i] += e * stride
        stride *= size
    return flat


def index_rows(TensorBase t, index):
    """``t[index]`` for an int64 index tensor, or a tuple of them of one
    shape, on the leading dims of ``t`` (take of the merged rows, one
    IndexRowsNode); None for anything else (empty, another dtype, unequal
    shapes, an index out of range: the caller's Python op decides or
    raises)."""
    cdef cnp.ndarray arr = <cnp.ndarray>t._arr
    cdef IndexRowsNode node
    cdef tuple indices = index if type(index) is tuple else (index,)
    cdef Py_ssize_t k = len(indices)
    if k == 0 or k > cnp.PyArray_NDIM(arr) or cnp.PyArray_SIZE(arr) == 0:
        return None
    shape = (<object>arr).shape
    flat = _flat_rows(indices, shape)
    if flat is None:
        return None
    rest = shape[k:]
    rows = (<object>arr).reshape((-1,) + rest)
    cdef TensorBase res = _new_tensor(
        rows.take(flat, axis=0).reshape((<object>(<TensorBase>indices[0])._arr).shape
                                        + rest))
    if cygrad_grad_mode and t._requires_grad:
        node = IndexRowsNode.__new__(IndexRowsNode)
        node._n_out = 1
        node._n_in = 1
        node._e0 = _edge(t)
        if t._out_nr != 0:
            node._nrs = (t._out_nr,)
        node.idx = flat
        node.vers = tuple([((<TensorBase>i)._ver, (<TensorBase>i)._ver.v)
                           for i in indices])
        node.in_shape = shape
        node.k = k
        node._has_saved = True
        _attach(res, node)
    elif _debug_level > 0 and (t._requires_grad or t._origin is not None):
        _note_no_grad(res, t, None)
    return res
