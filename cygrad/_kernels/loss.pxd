# Cross-entropy row kernels of loss.pyx that the engine's compiled
# cross-entropy node cimports (one implementation for both paths).  Every
# array is C-contiguous: logits (n, c), int64 targets (n,), weights (c,) or
# NULL.  Callers check the targets (first_bad_label) before the row kernels.

from libc.stdint cimport int64_t

from cygrad._kernels._types cimport real_t


# Index of the first target neither in [0, c) nor ignore_index, or -1.
cdef Py_ssize_t first_bad_label(const int64_t* target, Py_ssize_t n,
                                Py_ssize_t c, Py_ssize_t ignore_index) noexcept nogil

# Per row w[t] (logsumexp(x) - x[t]) into out and each row's logsumexp into
# lse; total = the sum of the losses, wsum = the sum of the weights (ignored
# rows: 0 and 0).
cdef void ce_fwd_rows(const real_t* x, const int64_t* target, const real_t* weight,
                      Py_ssize_t ignore_index, Py_ssize_t n, Py_ssize_t c,
                      real_t* out, real_t* lse, double* total,
                      double* wsum) noexcept nogil

# gx[i] = grad[i * gstride] w[t_i] (softmax(x_i) - onehot(t_i)); ignored rows 0.
cdef void ce_bwd_rows(const real_t* x, const int64_t* target, const real_t* weight,
                      Py_ssize_t ignore_index, const real_t* lse, const real_t* grad,
                      Py_ssize_t gstride, Py_ssize_t n, Py_ssize_t c,
                      real_t* gx) noexcept nogil
