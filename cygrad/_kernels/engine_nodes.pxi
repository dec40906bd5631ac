# Graph nodes: Node, AccumulateGrad, the compiled elementwise, matmul and sum
# nodes, and the saved-tensor checks.
# Part of engine.pyx (included there; it is one compiled module).

# --- graph nodes ------------------------------------------------------------------------

# Not GC-tracked (no_gc): nodes point only backwards, to other nodes and to
# input tensors, so they form no cycles; tracking them made the cyclic GC
# walk every node of a live graph (38% of the scalar chain's instructions
# under callgrind).  No trashcan either (CPython's trashcan needs a GC
# header): freeing a long chain is bounded by the trashcan of the tuples
# (Node -> tuple -> Node) and of TensorBase (Node -> saved tensor -> Node).
@cython.no_gc
cdef class Node:
    """A backward function in the graph (``grad_fn``)."""
    # Per input, the Node receiving its gradient (None: no gradient).  The
    # first two live in the node itself (no tuple per op); a node with more
    # inputs keeps them all in ``_next``.  Read them with _child/_children.
    cdef int _n_in             # inputs
    cdef Node _e0, _e1
    cdef tuple _next           # all receivers when _n_in > 2, else None
    cdef tuple _nrs            # per input: which output of that node, or None (all 0)
    cdef tuple _in_meta        # per input: (shape, dtype) to check/reduce to, or None
    cdef int _n_out
    cdef bint _freed
    cdef bint _has_saved
    cdef public object _pre_hooks    # list of (out_nr, fn) from Tensor.register_hook
    cdef public object _retained     # list of (out_nr, weakref) from retain_grad()
    cdef public object _site         # (filename, lineno) of the forward call
    cdef public object _gen          # optimizer generation at creation (diagnostics)
    # torch's name when it differs from the node's own (a composite such as
    # mean = sum / n names its last node after the whole op); None: default.
    cdef public str _torch_name
    cdef void* _lprev                # live-node list (diagnostics; no references)
    cdef void* _lnext
    cdef bint _linked
    # engine scratch
    cdef Py_ssize_t _deps
    cdef long long _run
    cdef object _buf
    cdef bint _needed
    cdef object __weakref__

    def __dealloc__(self):
        if self._linked:
            _unlink(self)
        # The receivers this node alone keeps alive die after this dealloc,
        # not inside it: a chain of a million nodes is freed in a loop.
        if cg_defer(<PyObject*>self._e0):
            self._e0 = None
        if cg_defer(<PyObject*>self._e1):
            self._e1 = None
        cg_drain()

    cdef object apply(self, object grads, bint graph):
        raise NotImplementedError

    cdef void release(self):
        pass

    def name(self):
        if self._torch_name is not None:
            return self._torch_name
        return type(self).__name__

    def __repr__(self):
        return f"<{self.name()} object at {hex(id(self))}>"

    @property
    def next_functions(self):
        cdef Py_ssize_t i
        return tuple(
            (_child(self, i), self._nrs[i] if self._nrs is not None else 0)
            for i in range(self._n_in))

    @property
    def _saved_freed(self):
        return self._freed

    @property
    def _saved_bytes(self):
        return self.saved_nbytes()

    cpdef Py_ssize_t saved_nbytes(self):
        return 0

    def _saved_shapes(self):
        return []

    def register_prehook(self, fn):
        if self._pre_hooks is None:
            self._pre_hooks = []
        entry = (-1, fn)
        self._pre_hooks.append(entry)
        return _HookHandle(self._pre_hooks, entry)

    @property
    def metadata(self):
        return {}


cdef inline Node _child(Node node, Py_ssize_t i):
    """The receiver of input ``i``'s gradient (i < node._n_in), or None."""
    if node._next is not None:
        return <Node>node._next[i]      # holds Nodes or None: no type test
    return node._e1 if i else node._e0


cdef tuple _children(Node node):
    """Every input's receiver, as a tuple (for the walks outside backward)."""
    if node._next is not None:
        return node._next
    if node._n_in == 0:
        return ()
    if node._n_in == 1:
        return (node._e0,)
    return (node._e0, node._e1)


cdef void _set_children(Node node, tuple receivers) except *:
    cdef Py_ssize_t n = len(receivers)
    node._n_in = n
    if n > 2:
        node._next = receivers
        _untrack(receivers)
        return
    if n > 0:
        node._e0 = receivers[0]
    if n > 1:
        node._e1 = receivers[1]


class _HookHandle:
    """Returned by register_hook: ``remove()`` unregisters the hook."""

    def __init__(self, lst, entry):
        self._lst = lst
        self._entry = entry

    def remove(self):
        try:
            self._lst.remove(self._entry)
        except ValueError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _make_handle(lst, entry):
    return _HookHandle(lst, entry)


@cython.final
@cython.no_gc
cdef class AccumulateGrad(Node):
    """Sink of a leaf's gradient: sums into ``.grad`` (holds the leaf weakly)."""
    cdef object _tref

    @property
    def variable(self):
        return self._tref()

    def name(self):
        return "AccumulateGrad"


cdef str _describe(object arr):
    return f"[{arr.dtype} tensor of shape {list(arr.shape)}]"


cdef void _check_version(Version ver, long long expected, object arr, Node node,
                         str what) except *:
    if ver.v == expected:
        return
    msg = (
        "one of the variables needed for gradient computation has been modified "
        f"by an inplace operation: {_describe(arr)}, which is {what} of "
        f"{node.name()}, is at version {ver.v}; expected version {expected} instead."
    )
    lw = ver.last_write
    if lw is not None:
        op, site, old, new = lw
        where = f" at {site[0]}:{site[1]}" if site is not None else ""
        msg += f" It was modified by {op}{where}, version {old} -> {new}."
    msg += (" Hint: the operation that failed was created"
            + (f" at {node._site[0]}:{node._site[1]}" if node._site else "")
            + "; avoid the in-place change, or .clone() the tensor before it.")
    raise RuntimeError(msg)


cdef inline object _freed_error(Node node, object grads=None):
    return RuntimeError(
        "Trying to backward through the graph a second time (or directly access "
        "saved tensors after they have already been freed). Saved intermediate "
        "values of the graph are freed when you call .backward() or "
        "autograd.grad(). Specify retain_graph=True if you need to backward "
        f"through the graph a second time or if you need to access saved tensors "
        f"after calling backward. (node {node.name()}"
        + (f", created at {node._site[0]}:{node._site[1]}" if node._site else "")
        + ")" + _stale_hint(node, grads))


cdef str _stale_hint(Node node, object grads):
    if _stale_hint_fn is None:
        return ""
    shape = None
    if grads is not None and not isinstance(grads, list):
        shape = tuple(grads.shape)
    return _stale_hint_fn(node, shape, _bw_root_gen)


@cython.final
@cython.no_gc
cdef class EWNode(Node):
    """Backward of an elementwise op of the kernel table."""
    cdef int op
    cdef bint binary
    # ``2 * x``: a Python number was the left operand.  torch lists the
    # tensor's receiver first there (it computes x * 2), and alone for
    # ``1 - x`` and ``2 ** x``; the engine keeps its own input order.
    cdef bint _scalar_first
    cdef object sa, sb, sy           # saved arrays, or None
    cdef TensorBase ta, tb           # saved input tensors (for create_graph)
    cdef Version va, vb, vy
    cdef long long na, nb, ny

    def name(self):
        if self._torch_name is not None:
            return self._torch_name
        return (BINARY_ROWS if self.binary else UNARY_ROWS)[self.op].node

    @property
    def next_functions(self):
        nrs = self._nrs
        pairs = tuple((_child(self, i), nrs[i] if nrs is not None else 0)
                      for i in range(self._n_in))
        if not self._scalar_first or len(pairs) != 2:
            return pairs
        if self.op == OP_SUB or self.op == OP_POW:
            return pairs[1:]
        return (pairs[1], pairs[0])

    def __dealloc__(self):
        # Whoever drops a 0-d array's last reference offers it to the pool.
        if self._has_saved:
            self._recycle_saved()

    cdef inline void _recycle_saved(self) noexcept:
        cdef object a = self.sa, b = self.sb, y = self.sy
        self.sa = self.sb = self.sy = None
        _recycle(a)
        _recycle(b)
        _recycle(y)

    cdef void release(self):
        if self._has_saved:
            self._recycle_saved()
            self.ta = self.tb = None
            self._freed = True

    cpdef Py_ssize_t saved_nbytes(self):
        cdef Py_ssize_t n = 0
        for a in (self.sa, self.sb, self.sy):
            if a is not None:
                n += a.nbytes
        return n

    def _saved_shapes(self):
        return [(k, tuple(a.shape), a.nbytes) for k, a in
                (("self", self.sa), ("other", self.sb), ("result", self.sy))
                if a is not None]

    cdef void _check(self) except *:
        if self._freed:
            raise _freed_error(self)
        if self.va is not None:
            _check_version(self.va, self.na, self.sa, self, "an input")
        if self.vb is not None:
            _check_version(self.vb, self.nb, self.sb, self, "an input")
        if self.vy is not None:
            _check_version(self.vy, self.ny, self.sy, self, "output 0")

    cdef object apply(self, object grads, bint graph):
        cdef cnp.ndarray g, ga, gb
        cdef int dt, ident, typenum
        if self._freed:
            raise _freed_error(self, grads)
        self._check()
        if graph:
            return self._apply_graph(grads)
        g = <cnp.ndarray>grads
        typenum = cnp.PyArray_TYPE(g)
        dt = _dt_index(typenum)
        if not self.binary:
            ga = _empty_nd(cnp.PyArray_NDIM(g), cnp.PyArray_DIMS(g), typenum)
            if self.op == OP_NEG:
                _run_like(unary_fwd(OP_NEG, dt), 2, ga, g)
            else:
                _run_like(unary_bwd(self.op, dt), 4, ga, g, self.sa, self.sy)
            return (ga,)
        ga = gb = None
        if self._e0 is not None:
            ident = BINARY_INFO[self.op].ident[0]
            if ident == 1:
                ga = g
            else:
                ga = _empty_nd(cnp.PyArray_NDIM(g), cnp.PyArray_DIMS(g), typenum)
                _run_like(binary_bwd(self.op, 0, dt), 5, ga, g, self.sa, self.sb,
                          self.sy)
        if self._e1 is not None:
            ident = BINARY_INFO[self.op].ident[1]
            if ident == 1:
                gb = g
            elif ident == 2:
                gb = _empty_nd(cnp.PyArray_NDIM(g), cnp.PyArray_DIMS(g), typenum)
                _run_like(unary_fwd(OP_NEG, dt), 2, gb, g)
            else:
                gb = _empty_nd(cnp.PyArray_NDIM(g), cnp.PyArray_DIMS(g), typenum)
                _run_like(binary_bwd(self.op, 1, dt), 5, gb, g, self.sa, self.sb,
                          self.sy)
        return (ga, gb)

    cdef object _saved_tensor(self, TensorBase t, object arr):
        if t is not None:
            return t
        return _new_tensor(arr) if arr is not None else None

    cdef object _apply_graph(self, object g):
        """The same rule over Tensors, recorded: backward of the backward."""
        cdef TensorBase y = None
        if self.sy is not None:
            # The saved output, re-attached to this node (torch's unpacking).
            y = _new_tensor(self.sy)
            y._ver = self.vy
            y._grad_fn = self
            y._requires_grad = True
        if not self.binary:
            fn = _graph_unary[UNARY_NAMES[self.op]]
            return (fn(g, self._saved_tensor(self.ta, self.sa), y),)
        fa, fb = _graph_binary[BINARY_NAMES[self.op]]
        a = self._saved_tensor(self.ta, self.sa)
        b = self._saved_tensor(self.tb, self.sb)
        return (fa(g, a, b, y) if self._e0 is not None else None,
                fb(g, a, b, y) if self._e1 is not None else None)


cdef extern from "numpy/arrayobject.h":
    # NumPy's dot for arrays (BLAS gemm for float32/float64 operands whose
    # strides BLAS accepts, transposed views included; a loop otherwise).
    object PyArray_MatrixProduct2(object a, object b, PyObject* out)




@cython.final
@cython.no_gc
cdef class MatmulNode(Node):
    """Backward of a 2-D float matrix product (torch's mm): grad_a = g @ b.T,
    grad_b = a.T @ g.  Saves a only when b needs a gradient, b only when a
    does, as torch."""
    cdef object sa, sb               # saved arrays, or None
    cdef TensorBase ta, tb           # the same as tensors (for create_graph)
    cdef Version va, vb
    cdef long long na, nb

    def name(self):
        if self._torch_name is not None:
            return self._torch_name
        return "MmBackward0"

    cdef void release(self):
        if self._has_saved:
            self.sa = self.sb = None
            self.ta = self.tb = None
            self._freed = True

    cpdef Py_ssize_t saved_nbytes(self):
        cdef Py_ssize_t n = 0
        for a in (self.sa, self.sb):
            if a is not None:
                n += a.nbytes
        return n

    def _saved_shapes(self):
        return [(k, tuple(a.shape), a.nbytes) for k, a in
                (("self", self.sa), ("mat2", self.sb)) if a is not None]

    cdef object apply(self, object grads, bint graph):
        cdef cnp.ndarray g
        if self._freed:
            raise _freed_error(self, grads)
        if self.va is not None:
            _check_version(self.va, self.na, self.sa, self, "an input")
        if self.vb is not None:
            _check_version(self.vb, self.nb, self.sb, self, "an input")
        if graph:
            return _graph_matmul(grads, self.ta, self.tb, self._e0 is not None,
                                 self._e1 is not None)
        g = <cnp.ndarray>grads
        ga = gb = None
        if self._e0 is not None:
            ga = PyArray_MatrixProduct2(
                g, cnp.PyArray_Transpose(<cnp.ndarray>self.sb, NULL), NULL)
        if self._e1 is not None:
            gb = PyArray_MatrixProduct2(
                cnp.PyArray_Transpose(<cnp.ndarray>self.sa, NULL), g, NULL)
        return (ga, gb)


def matmul_2d(a, b):
    """a @ b for two 2-D float tensors of one dtype whose inner sizes agree
    (BLAS through NumPy's dot, a compiled node); None for anything else,
    which cygrad.ops.matmul handles (vectors, batches, errors)."""
    cdef TensorBase ta, tb
    cdef cnp.ndarray x, y
    cdef int typenum
    cdef MatmulNode node
    if not isinstance(a, TensorBase) or not isinstance(b, TensorBase):
        return None
    ta = <TensorBase>a
    tb = <TensorBase>b
    x = <cnp.ndarray>ta._arr
    y = <cnp.ndarray>tb._arr
    typenum = cnp.PyArray_TYPE(x)
    if (cnp.PyArray_NDIM(x) != 2 or cnp.PyArray_NDIM(y) != 2
            or cnp.PyArray_TYPE(y) != typenum
            or (typenum != cnp.NPY_FLOAT and typenum != cnp.NPY_DOUBLE)
            or cnp.PyArray_DIMS(x)[1] != cnp.PyArray_DIMS(y)[0]):
        return None
    cdef TensorBase res = _new_tensor(PyArray_MatrixProduct2(x, y, NULL))
    if cygrad_grad_mode and (ta._requires_grad or tb._requires_grad):
        node = MatmulNode.__new__(MatmulNode)
        node._n_out = 1
        node._n_in = 2
        if ta._requires_grad:
            node._e0 = _edge(ta)
            node.sb = y
            node.tb = tb
            node.vb = tb._ver
            node.nb = tb._ver.v
            tb._ver.saved = True
        if tb._requires_grad:
            node._e1 = _edge(tb)
            node.sa = x
            node.ta = ta
            node.va = ta._ver
            node.na = ta._ver.v
            ta._ver.saved = True
        if ta._out_nr != 0 or tb._out_nr != 0:
            node._nrs = (ta._out_nr, tb._out_nr)
        node._has_saved = True
        _attach(res, node)
    elif _debug_level > 0 and (ta._requires_grad or ta._origin is not None
                               or tb._requires_grad or tb._origin is not None):
        _note_no_grad(res, ta, tb)
    return res


@cython.final
@cython.no_gc
cdef class SumNode(Node):
    """Backward of the full sum: grad = g broadcast to the input's shape.

    The hottest reduction (every loss ends with one) gets a compiled node:
    as a Python Function it cost about 85k instructions per forward+backward.
    """
    cdef tuple in_shape

    def name(self):
        if self._torch_name is not None:
            return self._torch_name
        return "SumBackward0"

    cdef object apply(self, object grads, bint graph):
        cdef cnp.ndarray g, out
        cdef Py_ssize_t i, n
        cdef int typenum
        cdef double v
        if graph:
            return (_graph_expand(grads, self.in_shape),)
        g = <cnp.ndarray>grads
        typenum = cnp.PyArray_TYPE(g)
        n = 1
        for i in range(len(self.in_shape)):
            n *= <Py_ssize_t>self.in_shape[i]
        if n >= GIL_RELEASE_MIN:
            # Large input: a read-only broadcast view of the 0-d gradient (no
            # write of n elements; consumers read it with stride 0, and a leaf
            # copies it into its own .grad).
            return (np.broadcast_to(g, self.in_shape),)
        out = _empty_like_shape(self.in_shape, typenum)
        if typenum == cnp.NPY_FLOAT:
            v = (<float*>cnp.PyArray_DATA(g))[0]
            for i in range(n):
                (<float*>cnp.PyArray_DATA(out))[i] = <float>v
        else:
            v = (<double*>cnp.PyArray_DATA(g))[0]
            for i in range(n):
                (<double*>cnp.PyArray_DATA(out))[i] = v
        return (out,)


def sum_all(TensorBase t):
    """Sum of every element of a float tensor, recorded with a compiled node."""
    cdef SumNode node
    cdef TensorBase res = _new_tensor(_reduce_sum_all(t._arr))
    if cygrad_grad_mode and t._requires_grad:
        node = SumNode.__new__(SumNode)
        node._n_out = 1
        node._n_in = 1
        node._e0 = _edge(t)
        if t._out_nr != 0:
            node._nrs = (t._out_nr,)
        node.in_shape = t._arr.shape
        _attach(res, node)
    elif _debug_level > 0 and (
            t._requires_grad or t._origin is not None):
        _note_no_grad(res, t, None)
    return res


@cython.final
@cython.no_gc
cdef class SumDimNode(Node):
    """Backward of a sum over one dim (``x.sum(1)``, ``x.sum(0, keepdim=
    True)``): grad = g with that dim back, broadcast to x's shape.  Compiled
    for the same reason as SumNode: as a Python Function the forward alone
    cost 5.4 us on a (32, 27) tensor (torch's 2.5)."""
    cdef tuple in_shape
    cdef tuple kept

    def name(self):
        if self._torch_name is not None:
            return self._torch_name
        return "SumBackward1"

    cdef object apply(self, object grads, bint graph):
        if graph:
            return (_graph_expand(grads.reshape(self.kept), self.in_shape),)
        return (np.broadcast_to((<cnp.ndarray>grads).reshape(self.kept),
                                self.in_shape),)


cdef TensorBase _sum_dim(TensorBase t, Py_ssize_t d, bint keepdim):
    """The sum over dim ``d`` (0 <= d < ndim) of a C-contiguous, non-empty
    float tensor: the compiled row sums of ``reductions.sum_fwd`` for the
    last dim, the column sums of ``reduce.sum_to_shape`` for another (the
    kernels, and so the bits, of the Python ``Sum``)."""
    cdef cnp.ndarray arr = <cnp.ndarray>t._arr
    cdef tuple shape = (<object>arr).shape
    cdef Py_ssize_t nd = len(shape)          # (no wraparound here: no shape[-1])
    cdef tuple kept = shape[:d] + (1,) + shape[d + 1:]
    cdef cnp.ndarray out
    cdef SumDimNode node
    if d == nd - 1:
        out = _empty_like_shape(kept, cnp.PyArray_TYPE(arr))
        _row_sums(arr.reshape(-1, shape[d]), out.reshape(-1))
    else:
        out = _sum_to_shape(arr, kept)
    cdef TensorBase res = _new_tensor(out if keepdim else
                                      out.reshape(shape[:d] + shape[d + 1:]))
    if cygrad_grad_mode and t._requires_grad:
        node = SumDimNode.__new__(SumDimNode)
        node._n_out = 1
        node._n_in = 1
        node._e0 = _edge(t)
        if t._out_nr != 0:
            node._nrs = (t._out_nr,)
        node.in_shape = shape
        node.kept = kept
        _attach(res, node)
    elif _debug_level > 0 and (
            t._requires_grad or t._origin is not None):
        _note_no_grad(res, t, None)
    return res


@cython.final
@cython.no_gc
cdef class SoftmaxNode(Node):
    """Backward of softmax / log_softmax over the last dim of a contiguous
    float tensor: grad = y (g - sum(g y)), or g - exp(y) sum(g) for the log.

    Compiled for the per-call cost: as a Python Function a (32, 27) softmax
    cost 5.8 us (torch's 3.2), 2 of them the kernel's fused-type dispatch.
    Saves only the output's array and version (never the output Tensor: the
    node would keep itself alive through it)."""
    cdef object y                    # the output's array, or None once freed
    cdef Version ver
    cdef long long v
    cdef bint take_log

    def name(self):
        if self._torch_name is not None:
            return self._torch_name
        return "LogSoftmaxBackward0" if self.take_log else "SoftmaxBackward0"

    cdef void release(self):
        if self._has_saved:
            self.y = None
            self._freed = True

    cpdef Py_ssize_t saved_nbytes(self):
        return 0 if self.y is None else (<cnp.ndarray>self.y).nbytes

    def _saved_shapes(self):
        return [] if self.y is None else [
            ("result", tuple(self.y.shape), self.y.nbytes)]

    cdef object apply(self, object grads, bint graph):
        cdef cnp.ndarray y, g, out
        cdef TensorBase t
        if self._freed:
            raise _freed_error(self, grads)
        _check_version(self.ver, self.v, self.y, self, "output 0")
        y = <cnp.ndarray>self.y
        if graph:
            # the output as a Tensor of this node, as saved_tensors rebuilds it
            t = _new_tensor(y)
            t._ver = self.ver
            t._grad_fn = self
            t._requires_grad = True
            return (_graph_softmax(t, grads, -1, self.take_log),)
        g = <cnp.ndarray>grads
        if (cnp.PyArray_TYPE(g) != cnp.PyArray_TYPE(y)
                or not cnp.PyArray_IS_C_CONTIGUOUS(g)
                or cnp.PyArray_NDIM(g) != cnp.PyArray_NDIM(y)):
            g = np.ascontiguousarray(np.broadcast_to(g, (<object>y).shape),
                                     dtype=(<object>y).dtype)
        out = cnp.PyArray_EMPTY(cnp.PyArray_NDIM(y), cnp.PyArray_DIMS(y),
                                cnp.PyArray_TYPE(y), 0)
        _softmax_rows_of(y, g, out, self.take_log)
        return (out,)


cdef void _softmax_rows_run(int typenum, void* src, void* g, void* dst,
                            Py_ssize_t rows, Py_ssize_t n, bint take_log,
                            bint bwd) noexcept nogil:
    """softmax of the rows of src into dst, or (``bwd``) its gradient from
    the output src and the incoming g."""
    if typenum == cnp.NPY_FLOAT:
        if bwd:
            _rows_softmax_bwd(<const float*>src, <const float*>g, <float*>dst,
                              rows, n, take_log)
        else:
            _rows_softmax(<const float*>src, NULL, <float*>dst, rows, n, take_log)
    elif bwd:
        _rows_softmax_bwd(<const double*>src, <const double*>g, <double*>dst,
                          rows, n, take_log)
    else:
        _rows_softmax(<const double*>src, NULL, <double*>dst, rows, n, take_log)


cdef void _softmax_rows_of(cnp.ndarray src, cnp.ndarray g, cnp.ndarray dst,
                           bint take_log):
    """_softmax_rows_run over whole arrays (g None for the forward), the GIL
    released for large ones."""
    cdef int typenum = cnp.PyArray_TYPE(src)
    cdef Py_ssize_t n = cnp.PyArray_DIMS(src)[cnp.PyArray_NDIM(src) - 1]
    cdef Py_ssize_t size = cnp.PyArray_SIZE(src)
    cdef void* gp = NULL if g is None else cnp.PyArray_DATA(g)
    cdef void* sp = cnp.PyArray_DATA(src)
    cdef void* dp = cnp.PyArray_DATA(dst)
    if size >= GIL_RELEASE_MIN:
        with nogil:
            _softmax_rows_run(typenum, sp, gp, dp, size // n, n, take_log,
                              gp != NULL)
    else:
        _softmax_rows_run(typenum, sp, gp, dp, size // n, n, take_log, gp != NULL)


cdef TensorBase _softmax_last(TensorBase t, bint take_log):
    """softmax (log_softmax) over the last dim of a C-contiguous, non-empty
    float tensor with at least one dim: the kernel of ``reductions``, and so
    the bits of the Python ``Softmax``."""
    cdef cnp.ndarray x = <cnp.ndarray>t._arr
    cdef cnp.ndarray y = cnp.PyArray_EMPTY(cnp.PyArray_NDIM(x), cnp.PyArray_DIMS(x),
                                           cnp.PyArray_TYPE(x), 0)
    cdef SoftmaxNode node
    _softmax_rows_of(x, None, y, take_log)
    cdef TensorBase res = _new_tensor(y)
    if cygrad_grad_mode and t._requires_grad:
        node = SoftmaxNode.__new__(SoftmaxNode)
        node._n_out = 1
        node._n_in = 1
        node._e0 = _edge(t)
        if t._out_nr != 0:
            node._nrs = (t._out_nr,)
        node.take_log = take_log
        node.y = y
        node.ver = res._ver
        node.v = res._ver.v
        res._ver.saved = True
        node._has_saved = True
        _attach(res, node)
    elif _debug_level > 0 and (
            t._requires_grad or t._origin is not None):
        _note_no_grad(res, t, None)
    return res


def softmax_method(fallback, bint take_log):
    """``Tensor.softmax`` / ``cygrad.softmax`` (``log_softmax`` with
    ``take_log``), compiled for the common call: no ``dtype``, an int ``dim``
    naming the last dim of a C-contiguous, non-empty float32/float64 tensor;
    any other call goes to ``fallback``, the op of ``cygrad.ops.reductions``,
    with the same arguments."""
    def softmax(input, dim=None, dtype=None):
        cdef cnp.ndarray arr
        cdef int typenum, nd
        if dtype is None and type(dim) is int and isinstance(input, TensorBase):
            arr = <cnp.ndarray>(<TensorBase>input)._arr
            typenum = cnp.PyArray_TYPE(arr)
            nd = cnp.PyArray_NDIM(arr)
            if ((typenum == cnp.NPY_FLOAT or typenum == cnp.NPY_DOUBLE)
                    and nd > 0 and (dim == -1 or dim == nd - 1)
                    and cnp.PyArray_IS_C_CONTIGUOUS(arr)
                    and cnp.PyArray_SIZE(arr) > 0):
                return _softmax_last(<TensorBase>input, take_log)
        return fallback(input, dim, dtype)
    softmax.__doc__ = fallback.__doc__
    softmax.__name__ = fallback.__name__
    softmax.__qualname__ = fallback.__qualname__
    return softmax


@cython.final
@cython.no_gc
cdef class ViewNode(Node):
    """Backward of a view with a new shape (view, reshape, flatten of a
    layout that allows one): grad = g reshaped to the input's shape.

    The views get compiled nodes for the same reason as SumNode: shape ops
    are a model's most frequent, and as Python Functions a view cost 3.9 us
    and a transpose 3.2 (torch's 1.3 and 1.5).
    """
    cdef tuple in_shape

    def name(self):
        if self._torch_name is not None:
            return self._torch_name
        return "ViewBackward0"

    cdef object apply(self, object grads, bint graph):
        if graph:
            return (grads.reshape(self.in_shape),)
        return ((<cnp.ndarray>grads).reshape(self.in_shape),)


@cython.final
@cython.no_gc
cdef class PermuteNode(Node):
    """Backward of a permutation of the axes (permute, transpose, t):
    grad = g with the inverse permutation."""
    cdef tuple inv

    def name(self):
        if self._torch_name is not None:
            return self._torch_name
        return "PermuteBackward0"

    cdef object apply(self, object grads, bint graph):
        if graph:
            return (grads.permute(self.inv),)
        return ((<cnp.ndarray>grads).transpose(self.inv),)


cpdef TensorBase view_result(TensorBase t, object v, object register):
    """A tensor over ``v``, a view of t's array: t's version counter, the
    root of t's views as its base, noted there by ``register(root, view)``
    (for in-place updates of the root)."""
    cdef TensorBase res = _new_tensor(v)
    cdef TensorBase root = t if t._base is None else t._base
    res._ver = t._ver
    res._base = root
    _track_if(res, root)
    register(root, res)
    return res


cdef inline void _view_node(TensorBase t, TensorBase res, Node node) except *:
    """Record ``node`` (fresh, one input: t) as res's history."""
    node._n_out = 1
    node._n_in = 1
    node._e0 = _edge(t)
    if t._out_nr != 0:
        node._nrs = (t._out_nr,)
    _attach(res, node)


def view_shape(TensorBase t, tuple shape, str node_name, register):
    """``t`` with the (checked, inferred) ``shape`` as a view, recorded with
    a ViewNode named ``node_name`` (None: ViewBackward0; see view_result
    for ``register``).  None when no view has
    that shape (the array would need a copy) or it is empty: the caller's
    Function then copies or refuses."""
    cdef cnp.ndarray arr = t._arr
    cdef cnp.ndarray v = arr.reshape(shape)
    cdef ViewNode node
    if cnp.PyArray_SIZE(v) == 0 or cnp.PyArray_DATA(v) != cnp.PyArray_DATA(arr):
        return None
    cdef TensorBase res = view_result(t, v, register)
    if cygrad_grad_mode and t._requires_grad:
        node = ViewNode.__new__(ViewNode)
        node.in_shape = (<object>arr).shape
        node._torch_name = node_name
        _view_node(t, res, node)
    elif _debug_level > 0 and (t._requires_grad or t._origin is not None):
        _note_no_grad(res, t, None)
    return res


def permute_view(TensorBase t, tuple axes, str node_name, register):
    """``t`` with its axes permuted to ``axes`` (checked), a view recorded
    with a PermuteNode named ``node_name`` (None: PermuteBackward0)."""
    cdef TensorBase res = view_result(t, t._arr.transpose(axes), register)
    cdef PermuteNode node
    cdef list inv
    cdef Py_ssize_t i
    if cygrad_grad_mode and t._requires_grad:
        node = PermuteNode.__new__(PermuteNode)
        inv = [0] * len(axes)
        for i in range(len(axes)):
            inv[<Py_ssize_t>axes[i]] = i
        node.inv = tuple(inv)
        node._torch_name = node_name
        _view_node(t, res, node)
    elif _debug_level > 0 and (t._requires_grad or t._origin is not None):
        _note_no_grad(res, t, None)
    return res


@cython.final
@cython.no_gc
cdef class BasicIndexNode(Node):
    """Backward of a basic index (ints, slices, None, Ellipsis: ``x[3]``,
    ``x[:, 0]``, ``x[1:4]``), a view: grad = zeros of the input's shape with
    g put at the index.  Compiled as the other views are: as a Python
    Function ``x[3]`` cost 4.6 us (torch's 1.3)."""
    cdef tuple in_shape
    cdef tuple index

    def name(self):
        if self._torch_name is not None:
            return self._torch_name
        return "SelectBackward0"

    cdef object apply(self, object grads, bint graph):
        cdef cnp.ndarray out
        if graph:
            return (_graph_put_basic(grads, self.index, self.in_shape),)
        out = np.zeros(self.in_shape, (<cnp.ndarray>grads).dtype)
        out[self.index] = grads
        return (out,)


def basic_view(TensorBase t, tuple index, str node_name, register):
    """``t[index]`` for a checked basic ``index`` (ints, slices with positive
    steps, None, one Ellipsis), a view recorded with a BasicIndexNode named
    ``node_name`` (see view_result for ``register``)."""
    cdef cnp.ndarray arr = t._arr
    cdef TensorBase res = view_result(t, arr[index], register)
    cdef BasicIndexNode node
    if cygrad_grad_mode and t._requires_grad:
        node = BasicIndexNode.__new__(BasicIndexNode)
        node.in_shape = (<object>arr).shape
        node.index = index
        node._torch_name = node_name
        _view_node(t, res, node)
    elif _debug_level > 0 and (t._requires_grad or t._origin is not None):
        _note_no_grad(res, t, None)
    return res


def sum_method(fallback):
    """``Tensor.sum`` / ``cygrad.sum``, compiled: the sum of every element of
    a float tensor goes straight to ``sum_all`` (no Python frame: a third of
    a small tensor's ``.sum()``), and the sum over one dim of a contiguous
    one to ``_sum_dim``; any other call goes to ``fallback``, the
    op of ``cygrad.ops.reductions``, with the same arguments (NumPy's
    ``axis=``/``keepdims=`` spellings included, as torch takes them)."""
    def sum(input, dim=None, keepdim=False, dtype=None, *, axis=None,
            keepdims=None, out=None):
        cdef int typenum
        cdef Py_ssize_t d
        cdef cnp.ndarray arr
        if axis is not None:
            if dim is not None:
                raise TypeError("sum() got both 'dim' and its alias 'axis'")
            dim = axis
        if keepdims is not None:
            keepdim = keepdims
        if out is not None:
            return _out_hook("sum", sum, (input, dim, keepdim, dtype), out)
        if dtype is None and isinstance(input, TensorBase):
            arr = <cnp.ndarray>(<TensorBase>input)._arr
            typenum = cnp.PyArray_TYPE(arr)
            if typenum == cnp.NPY_FLOAT or typenum == cnp.NPY_DOUBLE:
                if dim is None:
                    if not keepdim:
                        return sum_all(<TensorBase>input)
                elif (type(dim) is int and cnp.PyArray_IS_C_CONTIGUOUS(arr)
                        and cnp.PyArray_SIZE(arr) > 0
                        and -cnp.PyArray_NDIM(arr) <= dim < cnp.PyArray_NDIM(arr)):
                    d = dim if dim >= 0 else dim + cnp.PyArray_NDIM(arr)
                    return _sum_dim(<TensorBase>input, d, keepdim)
        return fallback(input, dim, keepdim, dtype)
    sum.__doc__ = fallback.__doc__
    return sum
