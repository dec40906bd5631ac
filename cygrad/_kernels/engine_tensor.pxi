# TensorBase: the compiled half of Tensor (attributes, .grad, backward(),
# the operator slots) and the allocation of result tensors.
# Part of engine.pyx (included there; it is one compiled module).

# --- tensors -----------------------------------------------------------------------

@cython.trashcan(True)
cdef class TensorBase:
    """Compiled base of ``cygrad.Tensor``: storage, graph links and hot operators."""
    cdef public object _arr
    cdef public object _grad
    cdef public Node _grad_fn
    cdef public int _out_nr
    cdef public bint _requires_grad
    cdef public bint _retains_grad
    cdef public Version _ver
    cdef public object _hooks          # leaf hooks: list of callables, or None
    cdef public object _post_hooks     # post-accumulate hooks, or None
    cdef public object _base           # the tensor this one is a view of, or None
    cdef public AccumulateGrad _acc    # leaf's gradient sink (holds us weakly)
    cdef public object _origin         # diagnostics: ("no_grad"|"detach", site) or None
    cdef object __weakref__

    def __dealloc__(self):
        cdef object arr = self._arr
        self._arr = None        # so that ``arr`` holds the last reference
        _recycle(arr)

    def _bump_version(self):
        """Record an in-place modification of the storage."""
        self._ver.v += 1

    @property
    def _version(self):
        return self._ver.v

    # The members a training loop touches every step are compiled: as Python
    # methods and properties each cost a frame (~1-2k instructions).

    @property
    def grad(self):
        """The accumulated gradient (leaves, and non-leaves that retain it)."""
        if (self._grad is None and self._grad_fn is not None
                and not self._retains_grad and _grad_warning is not None):
            _grad_warning(self)
        return self._grad

    @grad.setter
    def grad(self, value):
        cdef TensorBase v
        if value is not None:
            if not isinstance(value, TensorBase):
                raise TypeError(
                    f"assigned grad expected to be a Tensor or None but got grad of "
                    f"type {type(value).__name__}")
            v = <TensorBase>value
            if not _same_shape(<cnp.ndarray>v._arr, <cnp.ndarray>self._arr):
                raise RuntimeError(
                    f"attempting to assign a gradient of size "
                    f"{list(v._arr.shape)} to a tensor of size "
                    f"{list(self._arr.shape)}. Please ensure that the gradient and "
                    "the tensor are the same size")
            if v._arr.dtype != self._arr.dtype:
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype "
                    f"'{v._arr.dtype}' to a tensor with dtype "
                    f"'{self._arr.dtype}'. Please ensure that the gradient and the "
                    "tensor have the same dtype")
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    def item(self):
        """The value of a one-element tensor as a Python number."""
        cdef cnp.ndarray arr = <cnp.ndarray>self._arr
        if cnp.PyArray_SIZE(arr) != 1:
            raise RuntimeError(
                f"a Tensor with {cnp.PyArray_SIZE(arr)} elements cannot be "
                "converted to Scalar (item() needs exactly one element)")
        return arr.item()

    def zero_(self):
        """Fill with zeros in place."""
        cdef cnp.ndarray arr = <cnp.ndarray>self._arr
        if (cygrad_grad_mode and self._requires_grad) or not cnp.PyArray_ISWRITEABLE(
                arr) or not cnp.PyArray_IS_C_CONTIGUOUS(arr):
            return self.fill_(0)        # recorded, refused, or strided: Python
        _check_leaf_inplace(self, "fill_")
        memset(cnp.PyArray_DATA(arr), 0, cnp.PyArray_NBYTES(arr))
        _note_write(self, "fill_")
        return self

    def backward(self, gradient=None, retain_graph=None, create_graph=False,
                 inputs=None):
        """Accumulate d(self)/d(leaf) into ``.grad`` of the leaves that need it."""
        cdef cnp.ndarray arr = <cnp.ndarray>self._arr, seed
        cdef int typenum = cnp.PyArray_TYPE(arr)
        if (gradient is None and inputs is None and not create_graph
                and self._requires_grad and cnp.PyArray_SIZE(arr) == 1
                and (typenum == cnp.NPY_FLOAT or typenum == cnp.NPY_DOUBLE)):
            # The training-loop case (a scalar loss): straight to the engine.
            seed = _empty_nd(cnp.PyArray_NDIM(arr), cnp.PyArray_DIMS(arr), typenum)
            if typenum == cnp.NPY_FLOAT:
                (<float*>cnp.PyArray_DATA(seed))[0] = 1
            else:
                (<double*>cnp.PyArray_DATA(seed))[0] = 1
            with _engine_lock:
                _run_backward((self,), (seed,), bool(retain_graph), False, None,
                              True)
            return
        _backward_fn((self,), None if gradient is None else (gradient,),
                     retain_graph=retain_graph, create_graph=create_graph,
                     inputs=inputs)

    # The binary dunders are C-level slots (c_api_binop_methods, see the file
    # header): they receive the operands in call order, whichever is a Tensor.
    def __add__(a, b):
        return _binary(OP_ADD, a, b)

    def __sub__(a, b):
        return _binary(OP_SUB, a, b)

    def __mul__(a, b):
        return _binary(OP_MUL, a, b)

    def __truediv__(a, b):
        return _binary(OP_DIV, a, b)

    def __mod__(a, b):
        return _binary(OP_REMAINDER, a, b)

    def __floordiv__(a, b):
        return _binary(OP_FLOOR_DIVIDE, a, b)

    def __pow__(a, b, mod):
        if mod is not None:
            return NotImplemented
        return _power(a, b)

    def __neg__(self):
        return _unary(OP_NEG, self)

    def __iadd__(self, other):
        return _inplace_operator(OP_ADD, self, other, "add_")

    def __isub__(self, other):
        return _inplace_operator(OP_SUB, self, other, "sub_")

    def __imul__(self, other):
        return _inplace_operator(OP_MUL, self, other, "mul_")

    def __itruediv__(self, other):
        return _inplace_operator(OP_DIV, self, other, "div_")

    def __imod__(self, other):
        return _inplace_operator(OP_REMAINDER, self, other, "remainder_")

    def __ifloordiv__(self, other):
        return _inplace_operator(OP_FLOOR_DIVIDE, self, other, "floor_divide_")


cdef inline TensorBase _new_tensor(object arr):
    """A fresh Tensor over ``arr``, not tracked by the cyclic GC.

    A new tensor refers only to objects that cannot close a reference cycle
    (an ndarray, its Version, later a no_gc node), so the collector would only
    waste time on it: tracked, the tensors of a scalar chain cost ~1,300
    instructions per step in gen0/gen1 collections (callgrind).  Whoever
    stores a GC object into it (``_track_if`` here, ``cg_tensor_setattro``
    from Python) tracks it again.  Cycles through graph nodes were never
    collectable (nodes are no_gc), so nothing collectable becomes a leak.
    """
    cdef TensorBase t = <TensorBase>cg_alloc(_TensorCls)
    PyObject_GC_UnTrack(<void*>t)
    t._arr = arr
    t._ver = Version.__new__(Version)
    return t


cdef inline void _track_if(TensorBase t, object value) noexcept:
    """Track ``t`` again when it now refers to a GC object (see _new_tensor)."""
    if value is not None and PyObject_IS_GC(value) and not PyObject_GC_IsTracked(t):
        PyObject_GC_Track(<void*>t)


def _wrap(arr, requires_grad=False):
    """A new Tensor over ``arr`` (no copy).  A NumPy scalar (what a ufunc
    returns for 0-d input) becomes a 0-d array: the engine reads ``_arr``
    as an ndarray without checking."""
    if not isinstance(arr, cnp.ndarray):
        arr = np.asarray(arr)
    cdef TensorBase t = _new_tensor(arr)
    t._requires_grad = requires_grad
    return t


def _alias(TensorBase src, arr=None, bint share_version=True):
    """A new leaf Tensor sharing ``src``'s storage (and version counter)."""
    cdef TensorBase t = _new_tensor(src._arr if arr is None else arr)
    if share_version:
        t._ver = src._ver
    return t


cdef inline void _untrack(tuple edges) noexcept:
    """Hide a node's edge tuple from the cyclic GC.

    The tuple is reachable only from its (untracked) node, so the collector
    could never traverse into it anyway; untracked, it no longer costs a
    visit in every collection while the graph lives.
    """
    if PyObject_GC_IsTracked(edges):
        PyObject_GC_UnTrack(<void*>edges)


cdef inline Node _edge(TensorBase t):
    """The node that receives ``t``'s gradient: its grad_fn, or its leaf sink."""
    cdef AccumulateGrad acc
    if t._grad_fn is not None:
        return t._grad_fn
    if not t._requires_grad:
        return None
    acc = t._acc
    if acc is None:
        acc = AccumulateGrad.__new__(AccumulateGrad)
        acc._tref = weakref.ref(t)
        acc._n_out = 1
        t._acc = acc
    return acc


def _grad_edge(TensorBase t):
    return _edge(t)


cdef inline void _check_leaf_inplace(TensorBase t, str opname) except *:
    cdef TensorBase b
    if not cygrad_grad_mode:
        return
    if t._grad_fn is None and t._requires_grad:
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place "
            f"operation. ({opname} on a leaf of shape {tuple(t._arr.shape)}"
            f"{_at_site()}; update parameters inside `with cygrad.no_grad():` or use "
            "an optimizer from cygrad.optim)")
    b = t._base
    if b is not None and b._grad_fn is None and b._requires_grad:
        raise RuntimeError(
            "a view of a leaf Variable that requires grad is being used in an "
            f"in-place operation. ({opname}{_at_site()}; update parameters inside "
            "`with cygrad.no_grad():` or use an optimizer from cygrad.optim)")


cdef str _at_site():
    """" at file:line" of the user's current line, or "" (error messages)."""
    site = _user_site()
    return f" at {site[0]}:{site[1]}" if site is not None else ""


cdef inline void _note_write(TensorBase t, str opname):
    """Advance ``t``'s version; remember who wrote (for the version error)."""
    cdef Version ver = t._ver
    ver.v += 1
    if ver.saved and _debug_level > 0:
        ver.last_write = (opname, _user_site(), ver.v - 1, ver.v)


def _mark_inplace(TensorBase t, str opname):
    """Checks and version bump for an in-place op implemented in Python."""
    _check_leaf_inplace(t, opname)
    _note_write(t, opname)


def _check_inplace(TensorBase t, str opname):
    _check_leaf_inplace(t, opname)
