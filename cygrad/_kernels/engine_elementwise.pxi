# The op table's ops: forward, node recording, and the in-place operators.
# Part of engine.pyx (included there; it is one compiled module).

# --- elementwise ops -------------------------------------------------------------------

cdef int _int_result(tuple rows, RowInfo* info, int op, int typenum,
                     bint has_bool) except -1:
    """The result dtype of row ``op`` over integer/bool (or float16) operands
    promoted to ``typenum``, by the row's policy; raises its refusals."""
    row = rows[op]
    # A NotImplementedError refusal is a missing Bool kernel, so it holds only
    # when the operands promote to bool (bool % 2 is int64); a RuntimeError
    # one is _refuse_bool's, whatever the operands promote to.
    if has_bool and info[op].bool_error and typenum == cnp.NPY_BOOL:
        raise row.bool_error_type(row.bool_error)
    if typenum == cnp.NPY_FLOAT16:
        return typenum if info[op].ints == INTS_KEEP else _default_float
    if info[op].ints == INTS_REFUSE:
        raise NotImplementedError(
            f"{row.name}(): not implemented for "
            f"{np.dtype(cnp.PyArray_DescrFromType(typenum))} tensors, as in torch; "
            f"convert them with .float() first")
    if info[op].ints == INTS_FLOAT:
        return _default_float
    return typenum


cdef inline bint _is_bool(object x, TensorBase t):
    if t is not None:
        return cnp.PyArray_TYPE(<cnp.ndarray>t._arr) == cnp.NPY_BOOL
    return _scalar_category(x) == 0


cdef int _refuse_bool(int op, object a, TensorBase ta, object b,
                      TensorBase tb) except -1:
    """torch's refusal of ``-`` whenever a bool operand (tensor or Python
    bool) takes part, whatever the operands promote to (``bool - 2.5`` too)."""
    row = BINARY_ROWS[op]
    if row.bool_error_type is NotImplementedError:
        return 0
    a_bool, b_bool = _is_bool(a, ta), _is_bool(b, tb)
    if a_bool and b_bool and ta is not None and tb is not None:
        raise RuntimeError(row.bool_error.split(" with ")[0] + (
            " with two bool tensors is not supported. Use the `^` or "
            "`logical_xor()` operator instead."))
    if a_bool or b_bool:
        raise RuntimeError(row.bool_error)
    return 0


cdef object _binary(int op, object a, object b):
    cdef TensorBase ta = None, tb = None
    cdef cnp.ndarray aa, ab, out
    cdef int typenum, t_a, t_b
    cdef bint need_grad
    cdef tuple shape
    if isinstance(a, TensorBase):
        ta = <TensorBase>a
        aa = <cnp.ndarray>ta._arr
    if isinstance(b, TensorBase):
        tb = <TensorBase>b
        ab = <cnp.ndarray>tb._arr
    if ta is not None and tb is not None:
        t_a = cnp.PyArray_TYPE(aa)
        t_b = cnp.PyArray_TYPE(ab)
        typenum = t_a if t_a == t_b else _promote_tensors(
            t_a, cnp.PyArray_NDIM(aa), t_b, cnp.PyArray_NDIM(ab))
    elif ta is not None:
        if _scalar_category(b) < 0:
            if isinstance(b, np.ndarray) and b.dtype.kind in "biuf":
                # torch treats an array operand as a tensor (no gradient).
                return _binary(op, a, _new_tensor(b))
            return NotImplemented
        typenum = _promote_scalar(cnp.PyArray_TYPE(aa), b)
    elif tb is not None:
        if _scalar_category(a) < 0:
            if isinstance(a, np.ndarray) and a.dtype.kind in "biuf":
                return _binary(op, _new_tensor(a), b)
            return NotImplemented
        typenum = _promote_scalar(cnp.PyArray_TYPE(ab), a)
    else:
        return NotImplemented
    if BINARY_INFO[op].bool_error:
        _refuse_bool(op, a, ta, b, tb)
    if typenum == cnp.NPY_FLOAT16 and _half_cast is not None:
        return _half_binary(op, a, b)
    if _category(typenum) < 2:
        typenum = _int_result(BINARY_ROWS, BINARY_INFO, op, typenum, (
            (ta is not None and cnp.PyArray_TYPE(aa) == cnp.NPY_BOOL) or
            (tb is not None and cnp.PyArray_TYPE(ab) == cnp.NPY_BOOL) or
            _scalar_category(a) == 0 or _scalar_category(b) == 0))
    if ta is None:
        aa = _scalar_array(a, typenum)
    if tb is None:
        ab = _scalar_array(b, typenum)

    cdef char* ptrs[3]
    cdef Py_ssize_t st[3]
    cdef Py_ssize_t n
    cdef row_fn fn
    cdef TensorBase res_t
    if ((typenum == cnp.NPY_FLOAT or typenum == cnp.NPY_DOUBLE)
            and cnp.PyArray_TYPE(aa) == typenum and cnp.PyArray_TYPE(ab) == typenum
            and cnp.PyArray_IS_C_CONTIGUOUS(aa) and cnp.PyArray_IS_C_CONTIGUOUS(ab)
            and cnp.PyArray_ISALIGNED(aa) and cnp.PyArray_ISALIGNED(ab)):
        # Fast path: equal shapes, or a tensor with a scalar (0-d) operand.
        if _same_shape(aa, ab) or (cnp.PyArray_NDIM(ab) == 0 and tb is None):
            out = _empty_nd(cnp.PyArray_NDIM(aa), cnp.PyArray_DIMS(aa), typenum)
            st[1] = 1
        elif cnp.PyArray_NDIM(aa) == 0 and ta is None:
            out = _empty_nd(cnp.PyArray_NDIM(ab), cnp.PyArray_DIMS(ab), typenum)
            st[1] = 0
        else:
            out = None
        if out is not None:
            n = cnp.PyArray_SIZE(out)
            st[0] = 1
            st[2] = 1 if cnp.PyArray_SIZE(ab) == n else 0
            if st[1] == 1 and cnp.PyArray_SIZE(aa) != n:
                st[1] = 0
            ptrs[0] = <char*>cnp.PyArray_DATA(out)
            ptrs[1] = <char*>cnp.PyArray_DATA(aa)
            ptrs[2] = <char*>cnp.PyArray_DATA(ab)
            fn = binary_fwd(op, _dt_index(typenum))
            if n >= GIL_RELEASE_MIN:
                with nogil:
                    fn(n, ptrs, st)
            elif n > 0:
                fn(n, ptrs, st)
            res_t = _new_tensor(out)
            if cygrad_grad_mode and ((ta is not None and ta._requires_grad) or (
                    tb is not None and tb._requires_grad)):
                _make_binary_node(op, res_t, ta, tb, aa, ab, out, None, True)
            elif _debug_level > 0 and (
                    (ta is not None and (ta._requires_grad or ta._origin is not None))
                    or (tb is not None and (tb._requires_grad or
                                            tb._origin is not None))):
                _note_no_grad(res_t, ta, tb)
            return res_t

    if typenum != cnp.NPY_FLOAT and typenum != cnp.NPY_DOUBLE:
        # Integer and bool tensors: exact NumPy arithmetic, never a gradient.
        dt = cnp.PyArray_DescrFromType(typenum)
        res = BINARY_ROWS[op].ufunc(aa.astype(dt, copy=False),
                                    ab.astype(dt, copy=False))
        return _new_tensor(np.asarray(res))

    aa = _as_float_array(aa, typenum)
    ab = _as_float_array(ab, typenum)
    shape = _broadcast_shape((<object>aa).shape, (<object>ab).shape)
    out = _empty_like_shape(shape, typenum)
    _run_kernel(binary_fwd(op, _dt_index(typenum)), 3, out, [aa, ab])

    res_t = _new_tensor(out)
    need_grad = cygrad_grad_mode and (
        (ta is not None and ta._requires_grad) or (tb is not None and tb._requires_grad))
    if need_grad:
        _make_binary_node(op, res_t, ta, tb, aa, ab, out, shape, False)
    elif _debug_level > 0 and (
            (ta is not None and (ta._requires_grad or ta._origin is not None)) or
            (tb is not None and (tb._requires_grad or tb._origin is not None))):
        _note_no_grad(res_t, ta, tb)
    return res_t


cdef void _make_binary_node(int op, TensorBase res, TensorBase ta, TensorBase tb,
                            cnp.ndarray aa, cnp.ndarray ab, cnp.ndarray out,
                            tuple shape, bint exact) except *:
    """Record the backward node of ``res = op(a, b)``.

    ``exact``: aa/ab are the tensors' own arrays and have the output's shape
    (the fast path), so no reduction or cast is ever needed.
    """
    cdef EWNode node = EWNode.__new__(EWNode)
    cdef bint ga = ta is not None and ta._requires_grad
    cdef bint gb = tb is not None and tb._requires_grad
    cdef int bits = ((BINARY_INFO[op].save[0] if ga else 0)
                     | (BINARY_INFO[op].save[1] if gb else 0))
    cdef bint need_a = bits & 1
    cdef bint need_b = bits & 2
    cdef bint need_y = bits & 4
    node.op = op
    node.binary = True
    node._n_out = 1
    node._n_in = 2
    if ga:
        node._e0 = _edge(ta)
    if gb:
        node._e1 = _edge(tb)
    if ga and ta._out_nr != 0 or gb and tb._out_nr != 0:
        node._nrs = (ta._out_nr if ga else 0, tb._out_nr if gb else 0)
    if not exact and ((ga and ((<object>aa).shape != shape or aa is not ta._arr)) or (
            gb and ((<object>ab).shape != shape or ab is not tb._arr))):
        node._in_meta = (
            (ta._arr.shape, ta._arr.dtype) if ga and (
                (<object>aa).shape != shape or aa is not ta._arr) else None,
            (tb._arr.shape, tb._arr.dtype) if gb and (
                (<object>ab).shape != shape or ab is not tb._arr) else None)
    if need_a:
        node.sa = aa
        node.ta = ta
        if ta is not None:
            node.va = ta._ver
            node.na = ta._ver.v
            ta._ver.saved = True
    if need_b:
        node.sb = ab
        node.tb = tb
        if tb is not None:
            node.vb = tb._ver
            node.nb = tb._ver.v
            tb._ver.saved = True
    if need_y:
        node.sy = out
        node.vy = res._ver
        node.ny = 0
        res._ver.saved = True
    node._has_saved = need_a or need_b or need_y
    if op == OP_SUB or op == OP_POW or op == OP_DIV:
        _name_by_operands(node, op, ta is None, tb is None)
    node._scalar_first = ta is None and tb is not None
    _attach(res, node)


cdef inline void _name_by_operands(EWNode node, int op, bint scalar_a, bint scalar_b):
    """The node names torch gives by which operand is a Python number:
    ``1 - x`` is RsubBackward1, ``2 ** x`` PowBackward2 and ``x ** y``
    PowBackward1 (``x ** 2.5`` stays the row's PowBackward0), ``2 / x``
    MulBackward0 (torch multiplies by the reciprocal)."""
    if scalar_a:
        node._torch_name = ("RsubBackward1" if op == OP_SUB else
                            "PowBackward2" if op == OP_POW else "MulBackward0")
    elif op == OP_POW and not scalar_b:
        node._torch_name = "PowBackward1"


# float16, as torch on the CPU: storage in float16, each op computes in
# float32 and rounds its result back to float16.  The casts are recorded
# ops, so gradients flow back through them as float16.  This is the one
# place for the table's ops; Functions get the same rule in function_apply.
cdef object _half_up(object x):
    if isinstance(x, TensorBase) and cnp.PyArray_TYPE(
            <cnp.ndarray>(<TensorBase>x)._arr) == cnp.NPY_FLOAT16:
        return _half_cast(x, np.float32)
    return x


cdef object _half_down(object res):
    if isinstance(res, TensorBase) and cnp.PyArray_TYPE(
            <cnp.ndarray>(<TensorBase>res)._arr) == cnp.NPY_FLOAT:
        return _half_cast(res, np.float16)
    return res                       # a comparison's bool, an integer result


cdef object _half_binary(int op, object a, object b):
    return _half_down(_binary(op, _half_up(a), _half_up(b)))


cdef object _unary(int op, TensorBase t):
    cdef cnp.ndarray x = <cnp.ndarray>t._arr, out
    cdef int typenum = cnp.PyArray_TYPE(x)
    if typenum == cnp.NPY_FLOAT16 and _half_cast is not None:
        return _half_down(_unary(op, <TensorBase>_half_up(t)))
    if typenum != cnp.NPY_FLOAT and typenum != cnp.NPY_DOUBLE:
        typenum = _int_result(UNARY_ROWS, UNARY_INFO, op, typenum,
                              typenum == cnp.NPY_BOOL)
        if typenum != _default_float:
            return _new_tensor(np.asarray(UNARY_ROWS[op].ufunc(x)))
        x = x.astype(cnp.PyArray_DescrFromType(_default_float))
    cdef char* ptrs[2]
    cdef Py_ssize_t st[2]
    cdef Py_ssize_t n
    cdef row_fn fn
    if cnp.PyArray_IS_C_CONTIGUOUS(x) and cnp.PyArray_ISALIGNED(x):
        # Fast path: one flat row, no stride bookkeeping.
        out = _empty_nd(cnp.PyArray_NDIM(x), cnp.PyArray_DIMS(x), typenum)
        n = cnp.PyArray_SIZE(out)
        ptrs[0] = <char*>cnp.PyArray_DATA(out)
        ptrs[1] = <char*>cnp.PyArray_DATA(x)
        st[0] = st[1] = 1
        fn = unary_fwd(op, _dt_index(typenum))
        if n >= GIL_RELEASE_MIN:
            with nogil:
                fn(n, ptrs, st)
        elif n > 0:
            fn(n, ptrs, st)
    else:
        x = _as_float_array(x, typenum)
        out = _empty_like_shape((<object>x).shape, typenum)
        _run_kernel(unary_fwd(op, _dt_index(typenum)), 2, out, [x])
    cdef TensorBase res = _new_tensor(out)
    if cygrad_grad_mode and t._requires_grad:
        _make_unary_node(op, res, t, x, out)
    elif _debug_level > 0 and (
            t._requires_grad or t._origin is not None):
        _note_no_grad(res, t, None)
    return res


cdef void _make_unary_node(int op, TensorBase res, TensorBase t, cnp.ndarray x,
                           cnp.ndarray out) except *:
    cdef EWNode node = EWNode.__new__(EWNode)
    cdef int bits = UNARY_INFO[op].save[0]
    node.op = op
    node.binary = False
    node._n_out = 1
    node._n_in = 1
    node._e0 = _edge(t)
    if t._out_nr != 0:
        node._nrs = (t._out_nr,)
    if x is not t._arr and x.dtype != t._arr.dtype:
        node._in_meta = ((t._arr.shape, t._arr.dtype),)
    if bits & 1:
        node.sa = x
        node.ta = t
        node.va = t._ver
        node.na = t._ver.v
        t._ver.saved = True
    if bits & 4:
        node.sy = out
        node.vy = res._ver
        node.ny = 0
        res._ver.saved = True
    node._has_saved = bits != 0
    _attach(res, node)


def unary_method(str name):
    """A compiled function ``f(input)`` applying table op ``name``.

    Cython functions bind as methods, so ``Tensor.tanh = unary_method("tanh")``
    costs no Python frame per call (measured: the Python wrapper was ~1,900
    instructions of the scalar chain's ~3,000 per tanh).
    """
    cdef int op = UNARY_OPS[name]

    def fn(TensorBase input, *, out=None):
        if out is not None:
            return _out_hook(name, fn, (input,), out)
        return _unary(op, input)
    fn.__name__ = name
    fn.__qualname__ = name
    return fn


cdef object _power(object a, object b):
    """a ** b.  For a Python number b that torch special-cases (0, 1, 2, 3,
    -1, -2, 0.5, -0.5) a float tensor takes that exponent's own kernel, as
    torch does: x ** 3 is x * x * x, x ** 0.5 is sqrt(x) (the same values,
    ~20x faster than pow in float64), and its backward torch's.  Any other
    number takes the pow_scalar row (cg_pow.h's vectorized pow); tensor
    exponents and integer tensors take pow."""
    cdef int typenum
    if (type(b) is int or type(b) is float) and isinstance(a, TensorBase):
        typenum = cnp.PyArray_TYPE(<cnp.ndarray>(<TensorBase>a)._arr)
        if typenum == cnp.NPY_FLOAT or typenum == cnp.NPY_DOUBLE:
            op = POWER_OPS.get(b)
            if op is not None:
                return _unary(<int>op, <TensorBase>a)
            return _binary(OP_POW_SCALAR, a, b)
        if type(b) is int and _category(typenum) < 2:
            _check_int_exponent(b, (<TensorBase>a)._arr.dtype)
    return _binary(OP_POW, a, b)


cdef _check_int_exponent(object b, object dt):
    """torch's checks of an integer tensor's Python-int exponent: no
    negative powers, and no exponent the dtype cannot hold (pow does not
    wrap its scalar, unlike + and *)."""
    if not (-2**63 <= b < 2**63):
        raise OverflowError("int too big to convert")
    if b < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    if dt.kind in "iu" and b > np.iinfo(dt).max:
        ctype = ("int" if dt.kind == "i" and dt.itemsize == 4
                 else f"{'u' if dt.kind == 'u' else ''}int{dt.itemsize * 8}_t")
        raise RuntimeError(f"value cannot be converted to type {ctype} without overflow")


cdef object _checked(object res, str name, object a, object b):
    if res is NotImplemented:
        raise TypeError(
            f"{name}(): expected Tensor or number arguments, got "
            f"{type(a).__name__} and {type(b).__name__}")
    return res


def binary_method(str name):
    """A compiled function ``f(input, other)`` applying table op ``name``
    with broadcasting (see ``unary_method``)."""
    cdef int op = BINARY_OPS[name]
    if op == OP_POW:
        def pow_fn(input, other, *, out=None):
            if out is not None:
                return _out_hook("pow", pow_fn, (input, other), out)
            return _checked(_power(input, other), "pow", input, other)
        return pow_fn

    def fn(input, other, *, out=None):
        if out is not None:
            return _out_hook(name, fn, (input, other), out)
        return _checked(_binary(op, input, other), name, input, other)
    fn.__name__ = name
    fn.__qualname__ = name
    return fn


def binary(str name, a, b):
    """Apply the binary elementwise op ``name`` (broadcasting) to a and b."""
    return _checked(_binary(BINARY_OPS[name], a, b), name, a, b)


cdef object _inplace_binary(int op, TensorBase self, object other, str opname):
    """self <op>= other, in place, with torch's autograd rules."""
    cdef cnp.ndarray arr = <cnp.ndarray>self._arr, src, out
    cdef int typenum = cnp.PyArray_TYPE(arr)
    cdef TensorBase to = other if isinstance(other, TensorBase) else None
    cdef bint need_grad
    cdef TensorBase res
    if to is None and _scalar_category(other) < 0:
        return NotImplemented
    if BINARY_INFO[op].bool_error:
        _refuse_bool(op, self, self, other, to)
    if not cnp.PyArray_ISWRITEABLE(arr):
        raise ValueError(f"{opname}: the tensor's memory is read-only")
    if to is not None:
        rt = _promote_tensors(typenum, 1, cnp.PyArray_TYPE(<cnp.ndarray>to._arr), 1)
    else:
        rt = _promote_scalar(typenum, other)
    if _category(rt) < 2 and BINARY_INFO[op].ints != INTS_KEEP:
        rt = _default_float
    if _category(rt) > _category(typenum):
        raise RuntimeError(
            f"result type {np.dtype(cnp.PyArray_DescrFromType(rt))} can't be cast "
            f"to the desired output type {arr.dtype} ({opname})")
    if to is not None and not _same_shape(arr, <cnp.ndarray>to._arr):
        bshape = _broadcast_shape((<object>arr).shape, to._arr.shape)
        if bshape != (<object>arr).shape:
            raise RuntimeError(
                f"output with shape {list((<object>arr).shape)} doesn't match the "
                f"broadcast shape {list(bshape)} ({opname})")
    _check_leaf_inplace(self, opname)
    need_grad = cygrad_grad_mode and (
        self._requires_grad or (to is not None and to._requires_grad))
    if need_grad:
        # Compute out of place (the node saves the old value if it needs it),
        # then write the result into self's storage and rebase self's history.
        old = _alias(self, arr.copy(), False)
        (<TensorBase>old)._grad_fn = self._grad_fn
        _track_if(<TensorBase>old, self._grad_fn)
        (<TensorBase>old)._out_nr = self._out_nr
        (<TensorBase>old)._requires_grad = self._requires_grad
        (<TensorBase>old)._acc = self._acc if self._grad_fn is None else None
        res = _binary(op, old, other)
        np.copyto(arr, res._arr, casting="unsafe")
        self._grad_fn = res._grad_fn
        _track_if(self, self._grad_fn)
        self._out_nr = 0
        self._requires_grad = True
        # A saved output of the new node is the result array, which self no
        # longer aliases, so it stays valid.
        _note_write(self, opname)
        return self
    if typenum != cnp.NPY_FLOAT and typenum != cnp.NPY_DOUBLE:
        res = _binary(op, self, other)
        np.copyto(arr, res._arr, casting="unsafe")
        _note_write(self, opname)
        return self
    src = _as_float_array(to._arr, typenum) if to is not None else _scalar_array(
        other, typenum)
    if (cnp.PyArray_IS_C_CONTIGUOUS(arr) and cnp.PyArray_ISALIGNED(arr)
            and cnp.PyArray_IS_C_CONTIGUOUS(src)
            and (cnp.PyArray_SIZE(src) == cnp.PyArray_SIZE(arr)
                 or cnp.PyArray_SIZE(src) == 1)):
        # One flat row (the broadcast check above makes a same-size operand
        # the same shape): an optimizer's `p -= lr * g`, a scalar update.
        _inplace_row(op, typenum, arr, src)
    else:
        if np.shares_memory(arr, src) and src is not arr:
            src = src.copy()
        _run_kernel(binary_fwd(op, _dt_index(typenum)), 3, arr, [arr, src])
    _note_write(self, opname)
    return self


cdef void _inplace_row(int op, int typenum, cnp.ndarray arr,
                       cnp.ndarray src) except *:
    """arr = arr op src over contiguous arrays; src has arr's size or one
    element.  An operand that overlaps arr without being arr's own buffer
    element for element is refused, as torch refuses it (its check covers
    dense operands; strided ones are copied by the caller)."""
    cdef char* ptrs[3]
    cdef Py_ssize_t st[3]
    cdef Py_ssize_t n = cnp.PyArray_SIZE(arr)
    cdef char* a0 = <char*>cnp.PyArray_DATA(arr)
    cdef char* s0 = <char*>cnp.PyArray_DATA(src)
    cdef Py_ssize_t nb = cnp.PyArray_NBYTES(arr), ns = cnp.PyArray_NBYTES(src)
    cdef row_fn fn = binary_fwd(op, _dt_index(typenum))
    if n == 0:
        return
    if s0 < a0 + nb and a0 < s0 + ns and not (s0 == a0 and ns == nb):
        raise RuntimeError(
            "unsupported operation: some elements of the input tensor and the "
            "written-to tensor refer to a single memory location. Please clone() "
            "the tensor before performing the operation.")
    if not cnp.PyArray_ISALIGNED(src):
        src = np.array(src)
        s0 = <char*>cnp.PyArray_DATA(src)
    ptrs[0] = ptrs[1] = a0
    ptrs[2] = s0
    st[0] = st[1] = 1
    st[2] = 1 if cnp.PyArray_SIZE(src) == n else 0
    if n >= GIL_RELEASE_MIN:
        with nogil:
            fn(n, ptrs, st)
    else:
        fn(n, ptrs, st)


cdef object _inplace_operator(int op, TensorBase self, object other, str opname):
    """``self op= other``.  A tensor that is no view, owns a contiguous array
    (no element shared) and is outside the graph's in-place rules (no grad
    required, or grad mode off: an optimizer's update) goes straight to the
    kernel; anything else takes the view-aware path in Python (rebasing a
    view's history, regenerating views, the overlap error)."""
    if _inplace_views is None or (
            self._base is None
            and not (self._requires_grad and cygrad_grad_mode)
            and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>self._arr)):
        return _inplace_binary(op, self, other, opname)
    return _inplace_views(BINARY_NAMES[op], opname, self, other)


def inplace_binary(str name, TensorBase self, other, str opname):
    res = _inplace_binary(BINARY_OPS[name], self, other, opname)
    if res is NotImplemented:
        raise TypeError(f"{opname}(): expected a Tensor or a number, got "
                        f"{type(other).__name__}")
    return res
