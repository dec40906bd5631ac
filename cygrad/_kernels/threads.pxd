# Thread policy shared by the kernels (see threads.pyx).

# One block of a split job: ``job`` is the caller's struct, ``c`` the block.
ctypedef void (*block_fn)(void* job, Py_ssize_t c) noexcept nogil

cdef int threads_for(Py_ssize_t work) noexcept nogil
cdef void run_blocks(block_fn fn, void* job, int nblocks) noexcept nogil
