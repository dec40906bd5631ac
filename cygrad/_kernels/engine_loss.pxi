# Cross-entropy with class indices: the common call compiled.
# Part of engine.pyx (included there; it is one compiled module).
#
# F.cross_entropy on a (32, 27) batch cost 7.9 us as a Python Function
# (torch's: 5.2): its checks, the Function bridge and the array plumbing
# around the row kernels.  For (N, C) contiguous float32/float64 logits,
# (N,) int64 targets, no weight, no label smoothing and a 'mean' or 'sum'
# reduction, ``cross_entropy_fast`` runs the same row kernels of ``loss``
# (cimported through loss.pxd) and records one node; every other call, and
# any target out of range, is left to the Python op (which raises torch's
# errors).

cdef object _graph_cross_entropy = None   # fn(input, target, weight, grad, rule)


def install_cross_entropy_graph(fn):
    """The create_graph form of the node's backward:
    ``fn(input, target, weight, grad, rule)`` over Tensors, with ``rule`` =
    (reduction, ignore_index, weight sum, lse), as ``nn.functional`` writes
    it for its Python op."""
    global _graph_cross_entropy
    _graph_cross_entropy = fn


@cython.final
@cython.no_gc
cdef class CrossEntropyNode(Node):
    """Backward of the mean or sum of ``logsumexp(x_i) - x_i[t_i]``:
    grad_x_i = s (softmax(x_i) - onehot(t_i)), s = g (sum) or g / (rows not
    ignored) (mean); ignored rows get 0."""
    cdef TensorBase x               # the logits (saved input), None once freed
    cdef object xa                  # their array when saved
    cdef Version ver
    cdef long long v
    cdef object target              # int64 (n,) array
    cdef Version tver
    cdef long long tv
    cdef object lse                 # (n,) logsumexp of each row
    cdef double wsum
    cdef Py_ssize_t ignore_index
    cdef bint mean

    def name(self):
        if self._torch_name is not None:
            return self._torch_name
        return "NllLossBackward0"

    cdef void release(self):
        if self._has_saved:
            self.x = None
            self.xa = None
            self.target = None
            self.lse = None
            self._freed = True

    cpdef Py_ssize_t saved_nbytes(self):
        if self.xa is None:
            return 0
        return sum([(<cnp.ndarray>a).nbytes for a in (self.xa, self.target, self.lse)])

    def _saved_shapes(self):
        if self.xa is None:
            return []
        return [(name, tuple(a.shape), a.nbytes) for name, a in
                (("self", self.xa), ("target", self.target), ("lse", self.lse))]

    cdef object apply(self, object grads, bint graph):
        cdef cnp.ndarray x, t, lse, g, out
        cdef double gv
        cdef float gf
        cdef Py_ssize_t n, c
        if self._freed:
            raise _freed_error(self, grads)
        _check_version(self.ver, self.v, self.xa, self, "an input")
        _check_version(self.tver, self.tv, self.target, self, "an input")
        if graph:
            rule = ("mean" if self.mean else "sum", self.ignore_index, self.wsum,
                    self.lse)
            return (_graph_cross_entropy(self.x, self.target, None, grads, rule),)
        x, t, lse = <cnp.ndarray>self.xa, <cnp.ndarray>self.target, <cnp.ndarray>self.lse
        g = <cnp.ndarray>grads
        if cnp.PyArray_TYPE(g) != cnp.PyArray_TYPE(x) or cnp.PyArray_SIZE(g) != 1:
            g = np.asarray(grads, dtype=(<object>x).dtype).reshape(1)
        n, c = cnp.PyArray_DIMS(x)[0], cnp.PyArray_DIMS(x)[1]
        out = cnp.PyArray_EMPTY(2, cnp.PyArray_DIMS(x), cnp.PyArray_TYPE(x), 0)
        # the scale in the logits' dtype, as the Python op's g / wsum
        if cnp.PyArray_TYPE(x) == cnp.NPY_FLOAT:
            gf = (<float*>cnp.PyArray_DATA(g))[0]
            if self.mean:
                gf = gf / <float>self.wsum if self.wsum else <float>NAN
            ce_bwd_rows(<const float*>cnp.PyArray_DATA(x),
                        <const int64_t*>cnp.PyArray_DATA(t), <const float*>NULL,
                        self.ignore_index, <const float*>cnp.PyArray_DATA(lse),
                        &gf, 0, n, c, <float*>cnp.PyArray_DATA(out))
        else:
            gv = (<double*>cnp.PyArray_DATA(g))[0]
            if self.mean:
                gv = gv / self.wsum if self.wsum else NAN
            ce_bwd_rows(<const double*>cnp.PyArray_DATA(x),
                        <const int64_t*>cnp.PyArray_DATA(t), <const double*>NULL,
                        self.ignore_index, <const double*>cnp.PyArray_DATA(lse),
                        &gv, 0, n, c, <double*>cnp.PyArray_DATA(out))
        return (out,)


def cross_entropy_fast(input, target, ignore_index, reduction):
    """``F.cross_entropy(input, target, ignore_index=..., reduction=...)``
    (no weight, no smoothing) when the call is the common one: (N, C)
    C-contiguous float32/float64 logits with N, C >= 1, (N,) contiguous
    int64 targets each in [0, C) or equal to ``ignore_index``, 'mean' or
    'sum'.  None for any other call (the caller runs its Python op)."""
    cdef cnp.ndarray xa, ta, per, lse, res
    cdef int typenum
    cdef Py_ssize_t n, c, ign
    cdef cnp.npy_intp rows
    cdef double total = 0.0, wsum = 0.0, value
    cdef bint mean
    cdef TensorBase x, out
    cdef CrossEntropyNode node
    if not (isinstance(input, TensorBase) and isinstance(target, TensorBase)
            and type(ignore_index) is int and type(reduction) is str):
        return None
    if reduction == "mean":
        mean = True
    elif reduction == "sum":
        mean = False
    else:
        return None
    if not -(1 << 62) <= ignore_index <= (1 << 62):
        return None
    ign = ignore_index
    x = <TensorBase>input
    xa = <cnp.ndarray>x._arr
    ta = <cnp.ndarray>(<TensorBase>target)._arr
    typenum = cnp.PyArray_TYPE(xa)
    if ((typenum != cnp.NPY_FLOAT and typenum != cnp.NPY_DOUBLE)
            or cnp.PyArray_NDIM(xa) != 2 or not cnp.PyArray_IS_C_CONTIGUOUS(xa)
            or cnp.PyArray_NDIM(ta) != 1 or cnp.PyArray_TYPE(ta) != cnp.NPY_INT64
            or not cnp.PyArray_IS_C_CONTIGUOUS(ta)):
        return None
    n, c = cnp.PyArray_DIMS(xa)[0], cnp.PyArray_DIMS(xa)[1]
    if n < 1 or c < 1 or cnp.PyArray_DIMS(ta)[0] != n:
        return None
    if first_bad_label(<const int64_t*>cnp.PyArray_DATA(ta), n, c, ign) >= 0:
        return None
    rows = n
    per = cnp.PyArray_EMPTY(1, &rows, typenum, 0)
    lse = cnp.PyArray_EMPTY(1, &rows, typenum, 0)
    if typenum == cnp.NPY_FLOAT:
        ce_fwd_rows(<const float*>cnp.PyArray_DATA(xa),
                    <const int64_t*>cnp.PyArray_DATA(ta), <const float*>NULL, ign,
                    n, c, <float*>cnp.PyArray_DATA(per), <float*>cnp.PyArray_DATA(lse),
                    &total, &wsum)
    else:
        ce_fwd_rows(<const double*>cnp.PyArray_DATA(xa),
                    <const int64_t*>cnp.PyArray_DATA(ta), <const double*>NULL, ign,
                    n, c, <double*>cnp.PyArray_DATA(per), <double*>cnp.PyArray_DATA(lse),
                    &total, &wsum)
    if mean:
        value = total / wsum if wsum else NAN
    else:
        value = total
    res = cnp.PyArray_EMPTY(0, NULL, typenum, 0)
    if typenum == cnp.NPY_FLOAT:
        (<float*>cnp.PyArray_DATA(res))[0] = <float>value
    else:
        (<double*>cnp.PyArray_DATA(res))[0] = value
    out = _new_tensor(res)
    if cygrad_grad_mode and x._requires_grad:
        node = CrossEntropyNode.__new__(CrossEntropyNode)
        node._n_out = 1
        node._n_in = 1
        node._e0 = _edge(x)
        if x._out_nr != 0:
            node._nrs = (x._out_nr,)
        node.x = x
        node.xa = xa
        node.ver = x._ver
        node.v = x._ver.v
        node.target = ta
        node.tver = (<TensorBase>target)._ver
        node.tv = node.tver.v
        node.lse = lse
        node.wsum = wsum
        node.ignore_index = ign
        node.mean = mean
        node._has_saved = True
        _attach(out, node)
    elif _debug_level > 0 and (x._requires_grad or x._origin is not None):
        _note_no_grad(out, x, None)
    return out
