# Row-function interface of the elementwise kernels (see elementwise.pyx.tp).

ctypedef void (*row_fn)(Py_ssize_t n, char** p, const Py_ssize_t* s) noexcept nogil

cdef row_fn unary_fwd(int op, int dt) noexcept nogil
cdef row_fn unary_bwd(int op, int dt) noexcept nogil
cdef row_fn binary_fwd(int op, int dt) noexcept nogil
cdef row_fn binary_bwd(int op, int side, int dt) noexcept nogil
cdef void nd_apply(row_fn fn, int nargs, int ndim, const Py_ssize_t* shape,
                   char** base, const Py_ssize_t* strides,
                   Py_ssize_t itemsize) noexcept nogil
