# The op table as the engine reads it: rows by kernel index, per-row C facts
# (what a node saves, identity gradients, the integer-dtype policy).
# Part of engine.pyx (included there; it is one compiled module).

# The op table's rows (optable.py), by kernel index, and what recording a
# node and promoting dtypes read of them, as C arrays sized from the table.
# The scalar-exponent kernels (POWERS) follow the public unary rows.
cdef tuple UNARY_ROWS = tuple(_optable.UNARY + _optable.POWERS)
cdef tuple BINARY_ROWS = tuple(_optable.BINARY + _optable.POWERS_BINARY)
if (_ew.UNARY_NAMES != tuple(r.name for r in UNARY_ROWS)
        or _ew.BINARY_NAMES != tuple(r.name for r in BINARY_ROWS)):
    raise ImportError(
        "cygrad's compiled kernels were built from another op table than "
        "cygrad/_kernels/optable.py: rebuild them (pip install -e .)")
cdef dict UNARY_OPS = {r.name: i for i, r in enumerate(UNARY_ROWS)}
cdef dict BINARY_OPS = {r.name: i for i, r in enumerate(BINARY_ROWS)}
cdef list UNARY_NAMES = [r.name for r in UNARY_ROWS]
cdef list BINARY_NAMES = [r.name for r in BINARY_ROWS]

cdef enum IntPolicy:
    INTS_FLOAT = 0     # integer inputs compute in the default float dtype
    INTS_KEEP = 1      # integer inputs compute exactly, by the row's ufunc
    INTS_REFUSE = 2    # NotImplementedError

cdef struct RowInfo:
    int save[2]        # per input's gradient, what it reads: x/a 1, b 2, y 4
    int ident[2]       # 1: the gradient is g itself, 2: -g (no kernel call)
    int ints           # IntPolicy
    bint bool_error


cdef RowInfo* _row_infos(tuple rows) except NULL:
    cdef RowInfo* info = <RowInfo*>PyMem_Calloc(max(len(rows), 1), sizeof(RowInfo))
    cdef Py_ssize_t i
    cdef int k
    if info == NULL:
        raise MemoryError()
    for i, r in enumerate(rows):
        for k in range(r.arity):
            info[i].save[k] = (("x" in r.saves[k] or "a" in r.saves[k]) * 1
                               + ("b" in r.saves[k]) * 2 + ("y" in r.saves[k]) * 4)
            info[i].ident[k] = r.ident[k]
        info[i].ints = ("float", "keep", "refuse").index(r.ints)
        info[i].bool_error = r.bool_error is not None
    return info


cdef RowInfo* UNARY_INFO = _row_infos(UNARY_ROWS)     # module lifetime
cdef RowInfo* BINARY_INFO = _row_infos(BINARY_ROWS)

# The ops that Tensor's operator slots call.
cdef int OP_ADD = BINARY_OPS["add"]
cdef int OP_SUB = BINARY_OPS["sub"]
cdef int OP_MUL = BINARY_OPS["mul"]
cdef int OP_DIV = BINARY_OPS["div"]
cdef int OP_POW = BINARY_OPS["pow"]
cdef int OP_POW_SCALAR = BINARY_OPS["pow_scalar"]
cdef int OP_REMAINDER = BINARY_OPS["remainder"]
cdef int OP_FLOOR_DIVIDE = BINARY_OPS["floor_divide"]
cdef int OP_NEG = UNARY_OPS["neg"]
cdef int OP_SQUARE = UNARY_OPS["square"]
# x ** k for a Python number k that torch special-cases: k -> kernel index.
cdef dict POWER_OPS = {k: UNARY_OPS[v] for k, v in _optable.POWER_EXPONENTS.items()}
