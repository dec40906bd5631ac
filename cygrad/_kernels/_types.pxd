# Shared Cython types for every kernel module.
#
# real_t: the two floating dtypes cygrad computes in.  Python promotes mixed
# dtypes before calling a kernel, so a kernel sees one real_t throughout.

ctypedef fused real_t:
    float
    double
