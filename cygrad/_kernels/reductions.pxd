# Row helpers of reductions.pyx that other kernel modules cimport (loss.pyx,
# the engine's compiled softmax node),
# so that there is one vectorized exp in cygrad.  Every pointer is a
# contiguous row of n elements; sums run in double.

from cygrad._kernels._types cimport real_t


# max(x[:n]), NaN if the row holds one; n >= 1.
cdef real_t row_max(const real_t* x, Py_ssize_t n) noexcept nogil

# sum(x[:n]) and dot(x[:n], y[:n]).
cdef double row_sum(const real_t* x, Py_ssize_t n) noexcept nogil
cdef double row_dot(const real_t* x, const real_t* y, Py_ssize_t n) noexcept nogil

# sum(exp(x - shift)); also writes each exp to y unless y is NULL.
# Every x - shift must be <= 0 (or NaN).
cdef double exp_sum(const real_t* x, real_t shift, real_t* y,
                    Py_ssize_t n) noexcept nogil

# y = a * exp(x - shift) + b, b NULL for none; x - shift <= 0.  y must not
# alias x or b.
cdef void exp_axpy(const real_t* x, real_t shift, real_t a, const real_t* b,
                   real_t* y, Py_ssize_t n) noexcept nogil

# y = log1p(exp(-|x|)) and y = sigmoid(x), elementwise; y must not alias x.
cdef void softplus_neg_abs(const real_t* x, real_t* y, Py_ssize_t n) noexcept nogil
cdef void sigmoid(const real_t* x, real_t* y, Py_ssize_t n) noexcept nogil

# softmax (log_softmax when take_log) of each of rows rows of n; rowmax NULL
# (the kernel finds each row's max) or each row's max.  y must not alias x.
cdef void softmax_rows(const real_t* x, const real_t* rowmax, real_t* y,
                       Py_ssize_t rows, Py_ssize_t n, bint take_log) noexcept nogil

# Their gradient from the output y and the incoming g: y (g - sum(g y)), or
# g - exp(y) sum(g) with take_log.  out must not alias y.
cdef void softmax_bwd_rows(const real_t* y, const real_t* g, real_t* out,
                           Py_ssize_t rows, Py_ssize_t n, bint take_log) noexcept nogil
