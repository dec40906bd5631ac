# The Function bridge: Python autograd Functions as graph nodes.
# Part of engine.pyx (included there; it is one compiled module).

# --- Python Functions ----------------------------------------------------------------

@cython.final
@cython.freelist(8)
cdef class SavedValue:
    cdef public object tensor        # the saved input Tensor, or None for outputs
    cdef public object arr
    cdef public Version ver
    cdef public long long v
    cdef public int out_nr           # >= 0 for a saved output of this node
    cdef public bint requires_grad


cdef class FunctionNode(Node):
    """Backward node and ``ctx`` of a ``cygrad.autograd.Function`` call."""
    cdef dict __dict__
    cdef public object _fn
    cdef public tuple _saved
    cdef public tuple _to_save
    cdef public tuple needs_input_grad
    cdef public object _non_diff
    cdef public object _dirty
    cdef public bint materialize_grads
    cdef public tuple _out_meta      # per output: (shape, dtype) or None
    cdef public tuple _arg_is_tensor

    def save_for_backward(self, *tensors):
        self._to_save = tensors

    def mark_non_differentiable(self, *tensors):
        self._non_diff = tensors

    def mark_dirty(self, *tensors):
        self._dirty = tensors

    def set_materialize_grads(self, bint value):
        self.materialize_grads = value

    @property
    def saved_tensors(self):
        cdef SavedValue s
        cdef TensorBase t
        if self._freed:
            raise _freed_error(self)
        if self._saved is None:
            return self._to_save if self._to_save is not None else ()
        out = []
        for s in self._saved:
            if s is None:
                out.append(None)
                continue
            _check_version(s.ver, s.v, s.arr, self,
                           "an input" if s.out_nr < 0 else f"output {s.out_nr}")
            if s.out_nr < 0:
                out.append(s.tensor)
            else:
                t = _new_tensor(s.arr)
                t._ver = s.ver
                t._grad_fn = self
                _track_if(t, self)
                t._out_nr = s.out_nr
                t._requires_grad = s.requires_grad
                out.append(t)
        return tuple(out)

    @property
    def saved_variables(self):
        return self.saved_tensors

    cdef void release(self):
        if self._saved is not None and len(self._saved):
            self._saved = None
            self._freed = True

    cpdef Py_ssize_t saved_nbytes(self):
        cdef Py_ssize_t n = 0
        cdef SavedValue s
        if self._saved is None:
            return 0
        for s in self._saved:
            if s is not None:
                n += s.arr.nbytes
        return n

    def _saved_shapes(self):
        cdef SavedValue s
        if self._saved is None:
            return []
        return [("saved", tuple(s.arr.shape), s.arr.nbytes)
                for s in self._saved if s is not None]

    cdef object apply(self, object grads, bint graph):
        cdef Py_ssize_t i, n_args = self._n_in
        cdef tuple metas = self._out_meta
        if self._n_out == 1:
            grads = [grads]
        gs = []
        for i in range(self._n_out):
            g = grads[i]
            if g is None:
                if self.materialize_grads and metas[i] is not None:
                    shape, dtype = metas[i]
                    g = np.zeros(shape, dtype)
                    if graph:
                        g = _new_tensor(g)
                else:
                    gs.append(None)
                    continue
            gs.append(g if graph else _new_tensor(g))
        res = self._fn.backward(self, *gs)
        if not isinstance(res, tuple):
            res = (res,)
        cdef Py_ssize_t n_res = len(res)
        if n_res != n_args:
            if n_res > n_args and all(r is None for r in res[n_args:]):
                res = res[:n_args]
            else:
                raise RuntimeError(
                    f"Function {self.name()} returned an incorrect number of "
                    f"gradients (expected {n_args}, got {n_res})")
        out = []
        for i in range(n_args):
            r = res[i]
            if r is None:
                out.append(None)
                continue
            if not self._arg_is_tensor[i]:
                raise RuntimeError(
                    f"function {self.name()} returned a gradient different than "
                    f"None at position {i + 1}, but the corresponding forward input "
                    "was not a Tensor")
            if _child(self, i) is None:
                out.append(None)
                continue
            if not isinstance(r, TensorBase):
                raise TypeError(
                    f"function {self.name()} returned a gradient of type "
                    f"{type(r).__name__} at index {i}; expected a Tensor or None")
            out.append(r if graph else (<TensorBase>r)._arr)
        return tuple(out)


cdef inline bint _holds(object seq, object x):
    """Whether ``x`` is (by identity) an item of the tuple ``seq``: a plain
    loop; ``any(x is y for y in seq)`` built a generator object, nine of
    them per call of a three-input, two-output Function (~3 us)."""
    cdef Py_ssize_t j
    for j in range(len(<tuple>seq)):
        if (<tuple>seq)[j] is x:
            return True
    return False


def function_apply(cls, node_cls, tuple args):
    """Run a Function's forward and, when needed, connect it to the graph."""
    cdef FunctionNode ctx = node_cls.__new__(node_cls)
    cdef Py_ssize_t i, n = len(args)
    cdef TensorBase t
    cdef SavedValue sv
    cdef bint is_exec = False
    cdef list needs = [False] * n
    cdef list is_tensor = [False] * n
    cdef list versions = [0] * n
    cdef bint has_half = False
    for i in range(n):
        a = args[i]
        if isinstance(a, TensorBase):
            t = <TensorBase>a
            is_tensor[i] = True
            versions[i] = t._ver.v
            if t._requires_grad:
                needs[i] = True
                is_exec = True
            if cnp.PyArray_TYPE(<cnp.ndarray>t._arr) == cnp.NPY_FLOAT16:
                has_half = True
    if (has_half and _half_function is not None
            and not getattr(cls, "_half_native", False)):
        # float16: computed in float32 and rounded back (see _half_binary)
        return _half_function(cls, node_cls, args)
    cdef bint dropped = is_exec and not cygrad_grad_mode
    is_exec = is_exec and cygrad_grad_mode
    ctx.needs_input_grad = tuple(needs) if is_exec else tuple([False] * n)
    ctx._fn = cls
    ctx.materialize_grads = True
    global cygrad_grad_mode
    cdef int prev = cygrad_grad_mode
    cygrad_grad_mode = 0
    try:
        out = cls.forward(ctx, *args)
    finally:
        cygrad_grad_mode = prev
    cdef bint single = not isinstance(out, tuple)
    cdef tuple outs = (out,) if single else out
    dirty = tuple(ctx._dirty or ())
    # An input modified in place inside forward must be declared.
    for i in range(n):
        if is_tensor[i]:
            t = <TensorBase>args[i]
            if t._ver.v != versions[i] and not _holds(dirty, t):
                raise RuntimeError(
                    f"{cls.__name__}.forward modified its input {i} in place "
                    "without ctx.mark_dirty(); declare it with ctx.mark_dirty(x) "
                    "so that autograd can account for the change")
    for d in dirty:
        if not _holds(args, d):
            raise RuntimeError("mark_dirty() received a tensor that is not an input")
        if is_exec:
            _check_leaf_inplace(<TensorBase>d, cls.__name__)
    if not is_exec:
        if _debug_level > 0 and (dropped or any(
                is_tensor[i] and (<TensorBase>args[i])._origin is not None
                for i in range(n))):
            src = None
            for i in range(n):
                if is_tensor[i] and (<TensorBase>args[i])._origin is not None:
                    src = args[i]
                    break
            for o in ((out,) if not isinstance(out, tuple) else out):
                if isinstance(o, TensorBase) and not any(o is a for a in args):
                    _note_no_grad(<TensorBase>o, src, None)
        return out
    non_diff = tuple(ctx._non_diff or ())
    ctx._n_out = len(outs)
    cdef list edges = [None] * n
    cdef list in_meta = [None] * n
    cdef bint any_nr = False
    for i in range(n):
        if needs[i]:
            t = <TensorBase>args[i]
            edges[i] = _edge(t)
            in_meta[i] = (t._arr.shape, t._arr.dtype)
            if t._out_nr:
                any_nr = True
    _set_children(ctx, tuple(edges))
    if any_nr:
        ctx._nrs = tuple((<TensorBase>args[i])._out_nr if needs[i] else 0
                         for i in range(n))
    ctx._in_meta = tuple(in_meta)
    ctx._arg_is_tensor = tuple(is_tensor)
    if _debug_level > 0:
        _register(ctx)
    new_outs = []
    metas = []
    for i in range(len(outs)):
        o = outs[i]
        if not isinstance(o, TensorBase):
            new_outs.append(o)
            metas.append(None)
            continue
        t = <TensorBase>o
        if _holds(non_diff, t):
            new_outs.append(t)
            metas.append(None)
            continue
        if _holds(dirty, t):
            pass    # rebase the modified input's history onto this node
        elif _holds(args, t) or t._requires_grad:
            t = _alias(t)
            (<TensorBase>t)._base = o if (<TensorBase>o)._base is None else (
                <TensorBase>o)._base
            _track_if(<TensorBase>t, (<TensorBase>t)._base)
        if t._arr.dtype.kind != "f":
            metas.append(None)
            new_outs.append(t)
            continue
        t._grad_fn = ctx
        _track_if(<TensorBase>t, ctx)
        t._out_nr = i
        t._requires_grad = True
        if _retain_all:
            _retain(t)
        new_outs.append(t)
        metas.append((t._arr.shape, t._arr.dtype))
    ctx._out_meta = tuple(metas)
    # The dirty inputs now carry this node as grad_fn: holding them here too
    # would make a reference cycle that keeps the graph alive until the
    # garbage collector runs (and looks like a leak to the step diagnostics).
    ctx._dirty = None
    # Saved tensors: inputs by reference, outputs as (array, version) so that
    # the node never holds its own output (no cycle).
    if ctx._to_save is not None:
        saved = []
        for s in ctx._to_save:
            if s is None:
                saved.append(None)
                continue
            if not isinstance(s, TensorBase):
                raise TypeError("save_for_backward can only save tensors, but "
                                f"argument {len(saved)} is of type "
                                f"{type(s).__name__}")
            t = <TensorBase>s
            sv = SavedValue.__new__(SavedValue)
            sv.arr = t._arr
            sv.ver = t._ver
            sv.v = t._ver.v
            t._ver.saved = True
            sv.out_nr = -1
            for i in range(len(new_outs)):
                if new_outs[i] is t or (outs[i] is t and t._grad_fn is ctx):
                    sv.out_nr = i
                    sv.requires_grad = t._requires_grad
                    break
            if sv.out_nr < 0:
                sv.tensor = t
            saved.append(sv)
        ctx._saved = tuple(saved)
        ctx._to_save = None
        ctx._has_saved = len(saved) > 0
    return new_outs[0] if single else tuple(new_outs)
