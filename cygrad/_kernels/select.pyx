"""Branch-free selects: fused clamp with scalar bounds, where, masked_fill;
lerp, addcmul, addcdiv and add/sub with alpha, with a number weight, value
or alpha (torch's roundings, ``cg_ternary.h``); and the gather / scatter-add loops along one dim.

Why not the kernel table: ``clamp(x, min, max)`` with two numbers composes
two table rows (clamp_min, clamp_max), i.e. two passes each way plus a
temporary; issue 3 asks for NumPy speed (np.clip is one SIMD pass), so the
common scalar-bound case gets this kernel.  Tensor bounds still use the
table rows.  ``where(cond, x, y)`` has a bool operand, which the table's
float-only rows do not take, and its backward writes both gradients in one
pass; np.where on a random mask branches and runs at ~half NumPy's speed.

Layout: flat C-contiguous arrays (the caller ravels).  clamp: equal lengths.
where: ``cond`` is the bool mask viewed as uint8 (any nonzero byte is true),
length n; ``a`` / ``b`` have length n or 1 (1: a scalar broadcast over all
n, e.g. ``where(x > 0, x, 0.0)``); outputs have length n.  Other
broadcasting stays in Python (np.where).

Dtypes: ``real_t``; the arithmetic stays in ``real_t`` (a compare and a
select, no rounding).  clamp's bounds are doubles: a missing bound is -inf /
+inf.

Branch-free: selects go through an integer mask (``cg_pick_f`` and
``cg_pick_d`` of ``cg_math.h``); GCC turns ``c ? a : b`` on floats into a
jump under the default -ftrapping-math, which random data mispredicts half
the time.  With masks the loops vectorize.

NaN: clamp keeps a NaN element NaN and gives it gradient 0 (torch).  where's
backward writes an exact +0 on the unselected side even where the incoming
gradient is inf or NaN (torch's ``where(cond, grad, 0)``, not ``grad *
cond``).  Aliasing: clamp's ``out`` may be ``x`` (in-place clamp_), each
element is read before it is written; where's outputs may alias an input of
the same length (same reason), never each other.

masked_fill: ``out = value where mask else x`` for a mask that covers the
trailing dims of x (length m dividing n: the (T, T) causal mask under a
(B, H, T, T) score tensor), so no expanded mask is built; its backward is
the same loop with value 0 on the gradient (an exact 0, even for inf/NaN).

gather / scatter_add along a dim: arrays seen as (outer, n, inner) C blocks,
the index as (outer, k, inner) int64.  NumPy's fancy indexing needs an open
mesh of index arrays for this and runs ~10x slower than torch at (16, 4, 32,
32); np.add.at is slower still.  gather checks each index (0 <= i < n) and
returns the flat position of the first bad one (-1 when none) so that the
caller raises after the loop; nothing is written to the caller's tensors
(``out`` is fresh).  scatter_add adds in index order, so repeated indices
round as a sequential loop does; its indices are checked by ``index_bad``
before the loop (nothing raises inside nogil).  ``out`` never aliases an
input.

Threading: the wrappers check lengths with the GIL, then release it.  where
splits n >= ``threads.threads_for``'s threshold into one block per thread
(``threads.run_blocks``); blocks are disjoint, so the bits do not depend on
the thread count.  clamp runs serially.
"""

from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc

from cygrad._kernels._types cimport real_t
from cygrad._kernels.threads cimport run_blocks, threads_for

cdef extern from "cg_math.h":
    float cg_pick_f(float a, float b, int c) noexcept nogil
    double cg_pick_d(double a, double b, int c) noexcept nogil


cdef inline real_t _pick(real_t a, real_t b, bint c) noexcept nogil:
    # a where c holds, else b, without a branch.
    if real_t is float:
        return cg_pick_f(a, b, c)
    else:
        return cg_pick_d(a, b, c)


cdef extern from "cg_clamp.h":
    void cg_clamp_fwd_f(const float* x, float lo, float hi, float* out,
                        Py_ssize_t n) noexcept nogil
    void cg_clamp_fwd_d(const double* x, double lo, double hi, double* out,
                        Py_ssize_t n) noexcept nogil
    void cg_clamp_bwd_f(const float* x, const float* g, float lo, float hi, float* out,
                        Py_ssize_t n) noexcept nogil
    void cg_clamp_bwd_d(const double* x, const double* g, double lo, double hi,
                        double* out, Py_ssize_t n) noexcept nogil


cdef extern from "cg_ternary.h":
    void cg_lerp_f(const float* a, const float* b, float w, float* out,
                   Py_ssize_t n) noexcept nogil
    void cg_lerp_d(const double* a, const double* b, double w, double* out,
                   Py_ssize_t n) noexcept nogil
    void cg_lerp_t_f(const float* a, const float* b, const float* w, float* out,
                     Py_ssize_t n) noexcept nogil
    void cg_lerp_t_d(const double* a, const double* b, const double* w, double* out,
                     Py_ssize_t n) noexcept nogil
    void cg_add_alpha_f(const float* a, const float* b, float alpha, float* out,
                        Py_ssize_t n) noexcept nogil
    void cg_add_alpha_d(const double* a, const double* b, double alpha, double* out,
                        Py_ssize_t n) noexcept nogil
    void cg_addc_f(const float* s, const float* t1, const float* t2, float value,
                   int div, float* out, Py_ssize_t n) noexcept nogil
    void cg_addc_d(const double* s, const double* t1, const double* t2, double value,
                   int div, double* out, Py_ssize_t n) noexcept nogil


def lerp_tensor_fwd(const real_t[::1] a,    # in: start
                    const real_t[::1] b,    # in: end
                    const real_t[::1] w,    # in: the weights
                    real_t[::1] out):       # out, may be any input
    """out = lerp(a, b, w) with a weight per element, torch's roundings."""
    cdef Py_ssize_t n = a.shape[0]
    if b.shape[0] != n or w.shape[0] != n or out.shape[0] != n:
        raise ValueError(f"lerp_tensor_fwd: lengths {b.shape[0]}/{w.shape[0]}/"
                         f"{out.shape[0]}, expected {n}")
    if n == 0:
        return
    with nogil:
        if real_t is float:
            cg_lerp_t_f(&a[0], &b[0], &w[0], &out[0], n)
        else:
            cg_lerp_t_d(&a[0], &b[0], &w[0], &out[0], n)


def axpy_fwd(const real_t[::1] a,       # in: self (lerp: start)
             const real_t[::1] b,       # in: other (lerp: end)
             double w,                  # alpha or the weight, rounded to real_t
             bint lerp,                 # lerp(a, b, w), else a + w * b
             real_t[::1] out):          # out, may be a or b
    """out = a + w * b as torch rounds it, fma(b, w, a) (add/sub with alpha;
    sub passes -alpha), or lerp(a, b, w) with torch's fma roundings
    (``cg_ternary.h``)."""
    cdef Py_ssize_t n = a.shape[0]
    if b.shape[0] != n or out.shape[0] != n:
        raise ValueError(f"axpy_fwd: lengths {b.shape[0]}/{out.shape[0]}, expected {n}")
    if n == 0:
        return
    with nogil:
        if real_t is float:
            if lerp:
                cg_lerp_f(&a[0], &b[0], <float>w, &out[0], n)
            else:
                cg_add_alpha_f(&a[0], &b[0], <float>w, &out[0], n)
        elif lerp:
            cg_lerp_d(&a[0], &b[0], w, &out[0], n)
        else:
            cg_add_alpha_d(&a[0], &b[0], w, &out[0], n)


def addc_fwd(const real_t[::1] s,       # in: self
             const real_t[::1] t1,      # in
             const real_t[::1] t2,      # in
             double value,              # rounded to real_t
             bint div,                  # addcdiv, else addcmul
             real_t[::1] out):          # out, may be any input
    """out = addcmul(s, t1, t2, value=value) (addcdiv when ``div``) with
    torch's roundings (``cg_ternary.h``)."""
    cdef Py_ssize_t n = s.shape[0]
    if t1.shape[0] != n or t2.shape[0] != n or out.shape[0] != n:
        raise ValueError(f"addc_fwd: lengths {t1.shape[0]}/{t2.shape[0]}/"
                         f"{out.shape[0]}, expected {n}")
    if n == 0:
        return
    with nogil:
        if real_t is float:
            cg_addc_f(&s[0], &t1[0], &t2[0], <float>value, div, &out[0], n)
        else:
            cg_addc_d(&s[0], &t1[0], &t2[0], value, div, &out[0], n)


def clamp_fwd(const real_t[::1] x,     # in
              double lo, double hi,
              real_t[::1] out):        # out, may be x
    """out = min(max(x, lo), hi) elementwise (NaN stays NaN)."""
    cdef Py_ssize_t n = x.shape[0]
    if out.shape[0] != n:
        raise ValueError(f"clamp_fwd: out has length {out.shape[0]}, expected {n}")
    if n == 0:
        return
    with nogil:
        if real_t is float:
            cg_clamp_fwd_f(&x[0], <float>lo, <float>hi, &out[0], n)
        else:
            cg_clamp_fwd_d(&x[0], lo, hi, &out[0], n)


def clamp_bwd(const real_t[::1] x,     # in  forward input
              const real_t[::1] g,     # in  incoming gradient
              double lo, double hi,
              real_t[::1] out):        # out
    """out = g where lo <= x <= hi, else 0."""
    cdef Py_ssize_t n = x.shape[0]
    if g.shape[0] != n or out.shape[0] != n:
        raise ValueError(f"clamp_bwd: lengths {g.shape[0]}/{out.shape[0]}, "
                         f"expected {n}")
    if n == 0:
        return
    with nogil:     # torch's rule: the gradient passes where lo <= x <= hi
        if real_t is float:
            cg_clamp_bwd_f(&x[0], &g[0], <float>lo, <float>hi, &out[0], n)
        else:
            cg_clamp_bwd_d(&x[0], &g[0], lo, hi, &out[0], n)


# --- where -------------------------------------------------------------------

cdef void _pick_vv(const unsigned char* c, const real_t* a, const real_t* b,
                   real_t* out, Py_ssize_t n) noexcept nogil:
    # out = a where c else b, both full length.
    cdef Py_ssize_t i
    for i in range(n):
        out[i] = _pick(a[i], b[i], c[i] != 0)


cdef void _pick_vs(const unsigned char* c, const real_t* v, real_t s, bint flip,
                   real_t* out, Py_ssize_t n) noexcept nogil:
    # out = v where (c xor flip) else s: where with one scalar side
    # (where(c, s, b) = where(not c, b, s)), and a one-sided gradient (s = 0).
    cdef Py_ssize_t i
    for i in range(n):
        out[i] = _pick(v[i], s, (c[i] != 0) ^ flip)


cdef void _pick_ss(const unsigned char* c, real_t s, real_t t, real_t* out,
                   Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        out[i] = _pick(s, t, c[i] != 0)


cdef void _split_grad(const unsigned char* c, const real_t* g, real_t* ga,
                      real_t* gb, Py_ssize_t n) noexcept nogil:
    # ga = g where c else +0, gb = +0 where c else g: one read of g and c.
    cdef Py_ssize_t i
    cdef real_t v
    cdef bint k
    for i in range(n):
        v = g[i]
        k = c[i] != 0
        ga[i] = _pick(v, 0, k)
        gb[i] = _pick(<real_t>0, v, k)


# A where call, for run_blocks: pointers are real_t* cast to void*.  ``kind``
# picks the loop; p, q are the inputs (a length-1 one is read as a scalar),
# out, out2 the outputs.
cdef enum:
    VV = 0        # out = p where c else q
    VS = 1        # out = p where c ^ flip else q[0]
    SS = 2        # out = p[0] where c else q[0]
    GRAD2 = 3     # out, out2 = split p by c

cdef struct _Job:
    int kind
    bint flip, dbl
    const unsigned char* c
    const void* p
    const void* q
    void* out
    void* out2
    Py_ssize_t n, chunk


cdef void _run(_Job* j, real_t* tag, Py_ssize_t start, Py_ssize_t stop) noexcept nogil:
    # Elements [start, stop) of the job; ``tag`` only selects real_t.
    cdef const unsigned char* c = j.c + start
    cdef const real_t* p = <const real_t*>j.p
    cdef const real_t* q = <const real_t*>j.q
    cdef real_t* out = <real_t*>j.out + start
    cdef Py_ssize_t m = stop - start
    if m <= 0:
        return
    if j.kind == VV:
        _pick_vv(c, p + start, q + start, out, m)
    elif j.kind == VS:
        _pick_vs(c, p + start, q[0], j.flip, out, m)
    elif j.kind == SS:
        _pick_ss(c, p[0], q[0], out, m)
    else:
        _split_grad(c, p + start, out, <real_t*>j.out2 + start, m)


cdef void _block(void* job, Py_ssize_t k) noexcept nogil:
    cdef _Job* j = <_Job*>job
    cdef Py_ssize_t start = k * j.chunk, stop = min(j.n, (k + 1) * j.chunk)
    if j.dbl:
        _run(j, <double*>NULL, start, stop)
    else:
        _run(j, <float*>NULL, start, stop)


cdef void _launch(_Job* j) noexcept nogil:
    # Serial below the threshold; else one block per thread, rounded up to 16
    # elements (a 64-byte line of float32) so threads rarely share a line.
    cdef int t = threads_for(j.n)
    if t <= 1:
        j.chunk = j.n
        _block(j, 0)
        return
    j.chunk = ((j.n + t - 1) // t + 15) & ~(<Py_ssize_t>15)
    run_blocks(_block, j, t)


def where_fwd(const unsigned char[::1] cond,   # in  mask, nonzero = true
              const real_t[::1] a,             # in  length n or 1
              const real_t[::1] b,             # in  length n or 1
              real_t[::1] out):                # out length n, may be a or b
    """out = a where cond else b, elementwise; a length-1 a or b is a scalar."""
    cdef Py_ssize_t n = cond.shape[0], na = a.shape[0], nb = b.shape[0]
    cdef _Job j
    if out.shape[0] != n or (na != n and na != 1) or (nb != n and nb != 1):
        raise ValueError(f"where_fwd: lengths a {na}, b {nb}, out {out.shape[0]}; "
                         f"expected {n} (a, b may be 1)")
    if n == 0:
        return
    j.c = &cond[0]
    j.out = &out[0]
    j.out2 = NULL
    j.n = n
    j.dbl = real_t is double
    j.flip = False
    if na == n and nb == n:
        j.kind, j.p, j.q = VV, &a[0], &b[0]
    elif na == n:
        j.kind, j.p, j.q = VS, &a[0], &b[0]
    elif nb == n:
        j.kind, j.p, j.q, j.flip = VS, &b[0], &a[0], True
    else:
        j.kind, j.p, j.q = SS, &a[0], &b[0]
    with nogil:
        _launch(&j)


def where_bwd(const unsigned char[::1] cond,   # in  mask of the forward
              const real_t[::1] g,             # in  incoming gradient
              real_t[::1] ga,                  # out g where cond else 0, or None
              real_t[::1] gb):                 # out 0 where cond else g, or None
    """Split g by cond: ga = where(cond, g, 0), gb = where(cond, 0, g).

    The zeros are exact (+0) even where g is inf or NaN.  Either output may
    be None when that input needs no gradient.
    """
    cdef Py_ssize_t n = cond.shape[0]
    cdef real_t zero = 0
    cdef _Job j
    if g.shape[0] != n or (ga is not None and ga.shape[0] != n) or \
            (gb is not None and gb.shape[0] != n):
        raise ValueError(
            f"where_bwd: lengths g {g.shape[0]}, "
            f"ga {None if ga is None else ga.shape[0]}, "
            f"gb {None if gb is None else gb.shape[0]}; expected {n}")
    if n == 0 or (ga is None and gb is None):
        return
    j.c = &cond[0]
    j.n = n
    j.dbl = real_t is double
    j.flip = False
    j.out2 = NULL
    if ga is not None and gb is not None:
        j.kind, j.p, j.out, j.out2 = GRAD2, &g[0], &ga[0], &gb[0]
    elif ga is not None:
        j.kind, j.p, j.q, j.out = VS, &g[0], &zero, &ga[0]
    else:
        j.kind, j.p, j.q, j.out, j.flip = VS, &g[0], &zero, &gb[0], True
    with nogil:
        _launch(&j)


# --- masked_fill --------------------------------------------------------------------------

cdef void _masked_fill(const real_t* x, const unsigned char* m, real_t v, real_t* out,
                       Py_ssize_t n, Py_ssize_t mn) noexcept nogil:
    cdef Py_ssize_t b, j, base
    for b in range(n // mn):
        base = b * mn
        for j in range(mn):
            out[base + j] = _pick(v, x[base + j], m[j] != 0)


def masked_fill(const real_t[::1] x,             # in
                const unsigned char[::1] mask,   # in  trailing-dims mask, as uint8
                double value,
                real_t[::1] out):                # out, may be x
    """out = value where mask else x; the mask repeats over x's leading dims."""
    cdef Py_ssize_t n = x.shape[0], mn = mask.shape[0]
    if out.shape[0] != n or (n and (mn == 0 or n % mn)):
        raise ValueError(f"masked_fill: lengths {n}, {mn}, {out.shape[0]} do not fit")
    if n == 0:
        return
    cdef real_t v = <real_t>value
    with nogil:
        _masked_fill(&x[0], &mask[0], v, &out[0], n, mn)


# --- gather / scatter_add along a dim --------------------------------------------------------

cdef Py_ssize_t _gather(const real_t* x, const int64_t* idx, real_t* out,
                        Py_ssize_t outer, Py_ssize_t n, Py_ssize_t k,
                        Py_ssize_t inner) noexcept nogil:
    cdef Py_ssize_t o, j, i, p = 0
    cdef int64_t t
    cdef const real_t* row
    if inner == 1:                  # dim = -1: one row of x per block
        for o in range(outer):
            row = x + o * n
            for j in range(k):
                t = idx[p]
                if t < 0 or t >= n:
                    return p
                out[p] = row[t]
                p += 1
        return -1
    for o in range(outer):
        for j in range(k):
            for i in range(inner):
                t = idx[p]
                if t < 0 or t >= n:
                    return p
                out[p] = x[(o * n + t) * inner + i]
                p += 1
    return -1


def gather(const real_t[::1] x,        # in  (outer, n, inner)
           const int64_t[::1] idx,     # in  (outer, k, inner)
           real_t[::1] out,            # out (outer, k, inner)
           Py_ssize_t outer, Py_ssize_t n, Py_ssize_t k, Py_ssize_t inner):
    """out[o, j, i] = x[o, idx[o, j, i], i]; returns the flat position of the
    first index outside [0, n), or -1 (then every element was written)."""
    cdef Py_ssize_t r
    if x.shape[0] != outer * n * inner or idx.shape[0] != outer * k * inner or \
            out.shape[0] != idx.shape[0]:
        raise ValueError("gather: lengths do not match the (outer, n, k, inner) sizes")
    if idx.shape[0] == 0:
        return -1
    with nogil:
        r = _gather(&x[0], &idx[0], &out[0], outer, n, k, inner)
    return r


cdef void _scatter_add(real_t* out, const int64_t* idx, const real_t* src,
                       Py_ssize_t outer, Py_ssize_t n, Py_ssize_t k,
                       Py_ssize_t inner) noexcept nogil:
    cdef Py_ssize_t o, j, i, p = 0
    cdef real_t* row
    if inner == 1:
        for o in range(outer):
            row = out + o * n
            for j in range(k):
                row[idx[p]] += src[p]
                p += 1
        return
    for o in range(outer):
        for j in range(k):
            for i in range(inner):
                out[(o * n + idx[p]) * inner + i] += src[p]
                p += 1


def scatter_add(real_t[::1] out,            # in/out (outer, n, inner)
                const int64_t[::1] idx,     # in  (outer, k, inner), checked
                const real_t[::1] src,      # in  (outer, k, inner)
                Py_ssize_t outer, Py_ssize_t n, Py_ssize_t k, Py_ssize_t inner):
    """out[o, idx[o, j, i], i] += src[o, j, i], in index order.  The indices
    must lie in [0, n) (``index_bad``)."""
    if out.shape[0] != outer * n * inner or idx.shape[0] != outer * k * inner or \
            src.shape[0] != idx.shape[0]:
        raise ValueError("scatter_add: lengths do not match the (outer, n, k, inner) "
                         "sizes")
    if idx.shape[0] == 0:
        return
    with nogil:
        _scatter_add(&out[0], &idx[0], &src[0], outer, n, k, inner)


cdef Py_ssize_t _index_bad(const int64_t* idx, Py_ssize_t m, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t p
    for p in range(m):
        if idx[p] < 0 or idx[p] >= n:
            return p
    return -1


def index_bad(const int64_t[::1] idx, Py_ssize_t n):  # in
    """The position of the first index outside [0, n), or -1."""
    cdef Py_ssize_t r, m = idx.shape[0]
    if m == 0:
        return -1
    with nogil:
        r = _index_bad(&idx[0], m, n)
    return r


cdef void _add_rows(real_t* out, const int64_t* idx, const real_t* src, Py_ssize_t k,
                    Py_ssize_t inner) noexcept nogil:
    cdef Py_ssize_t j, i
    cdef real_t* row
    for j in range(k):
        row = out + idx[j] * inner
        for i in range(inner):
            row[i] += src[j * inner + i]


def add_rows(real_t[::1] out,           # in/out (n, inner)
             const int64_t[::1] idx,    # in  (k,), checked to lie in [0, n)
             const real_t[::1] src,     # in  (k, inner)
             Py_ssize_t n, Py_ssize_t inner):
    """out[idx[j], :] += src[j, :] for j in order (the backward of x[idx],
    an embedding lookup; index_add along dim 0)."""
    cdef Py_ssize_t k = idx.shape[0]
    if out.shape[0] != n * inner or src.shape[0] != k * inner:
        raise ValueError("add_rows: lengths do not match (n, k, inner)")
    if k == 0 or inner == 0:
        return
    with nogil:
        _add_rows(&out[0], &idx[0], &src[0], k, inner)


# ---------------------------------------------------------------------------
# topk of a small k along the last dim: one pass per row keeping the k best
# (value, index) pairs sorted in a buffer.  An element enters only when it is
# strictly ahead of the buffer's last, and is inserted after the entries it
# ties with, so of equal values the first in index order wins (the order of
# a stable sort).  NaN counts as the largest value (torch): ahead of every
# number when largest, behind every number when not.  O(n) per row for
# random data, O(n k) at worst (input already in the opposite order), so the
# caller keeps it to small k.  Serial.

cdef inline bint _ahead(real_t a, real_t b, bint largest) noexcept nogil:
    # a comes strictly before b in the topk order.
    if largest:
        return a > b or (a != a and b == b)
    return a < b or (b != b and a == a)


cdef void _topk_rows(const real_t* x, Py_ssize_t rows, Py_ssize_t n, Py_ssize_t k,
                     bint largest, real_t* vals, int64_t* idx) noexcept nogil:
    cdef Py_ssize_t r, j, p
    cdef const real_t* row
    cdef real_t* bv
    cdef int64_t* bi
    cdef real_t v
    for r in range(rows):
        row = x + r * n
        bv = vals + r * k
        bi = idx + r * k
        for j in range(k):                 # the first k, insertion-sorted
            v = row[j]
            p = j
            while p > 0 and _ahead(v, bv[p - 1], largest):
                bv[p] = bv[p - 1]
                bi[p] = bi[p - 1]
                p -= 1
            bv[p] = v
            bi[p] = j
        for j in range(k, n):
            v = row[j]
            if not _ahead(v, bv[k - 1], largest):
                continue
            p = k - 1
            while p > 0 and _ahead(v, bv[p - 1], largest):
                bv[p] = bv[p - 1]
                bi[p] = bi[p - 1]
                p -= 1
            bv[p] = v
            bi[p] = j


def topk_rows(const real_t[:, ::1] x,     # in  (rows, n), C-contiguous
              real_t[:, ::1] vals,        # out (rows, k): the k best, in order
              int64_t[:, ::1] idx,        # out (rows, k): their column indices
              bint largest):
    """Per row the ``k`` largest (``largest``) or smallest values of ``x`` and
    their indices, best first, ties in index order, NaN the largest value;
    1 <= k <= n."""
    cdef Py_ssize_t rows = x.shape[0], n = x.shape[1], k = vals.shape[1]
    if (vals.shape[0] != rows or idx.shape[0] != rows or idx.shape[1] != k
            or not 1 <= k <= n):
        raise ValueError("topk_rows: shapes do not match")
    if rows == 0:
        return
    with nogil:
        _topk_rows(&x[0, 0], rows, n, k, largest, &vals[0, 0], &idx[0, 0])


# --------------------------------------------------------------- rank_rows
#
# The element of rank ``rank`` (0-based) of each row, as a stable ascending
# sort with NaN last would place it (torch's kthvalue); with ``nan_first``,
# a row holding a NaN gives its first NaN (torch's median).  Per row: a copy
# of the numbers (the NaNs counted), then a
# selection on a scratch copy (Hoare partitions around a median of three,
# insertion sort once a range is under 16), then one scan for the index: of
# the elements equal to the value, the (rank - #smaller)-th in index order.
# O(n) per row for random data; a row that still spans 16 or more after
# 2 log2(n) + 8 partitions (an adversarial order) is left at -1 for the
# caller's sort.  Serial; ``scratch`` holds n.

cdef inline void _swap(real_t* a, Py_ssize_t i, Py_ssize_t j) noexcept nogil:
    cdef real_t t = a[i]
    a[i] = a[j]
    a[j] = t


cdef bint _select(real_t* a, Py_ssize_t n, Py_ssize_t rank) noexcept nogil:
    # a[rank] becomes the element of that rank; False when out of budget.
    cdef Py_ssize_t lo = 0, hi = n - 1, i, j, mid, budget = 8
    cdef real_t pivot, v
    j = n
    while j > 1:
        budget += 2
        j >>= 1
    while hi - lo >= 16:
        if budget == 0:
            return False
        budget -= 1
        mid = lo + (hi - lo) // 2
        if a[mid] < a[lo]:
            _swap(a, mid, lo)
        if a[hi] < a[lo]:
            _swap(a, hi, lo)
        if a[hi] < a[mid]:
            _swap(a, hi, mid)
        pivot = a[mid]
        i = lo
        j = hi
        while i <= j:                  # a[lo] <= pivot <= a[hi]: sentinels
            while a[i] < pivot:
                i += 1
            while a[j] > pivot:
                j -= 1
            if i <= j:
                _swap(a, i, j)
                i += 1
                j -= 1
        if rank <= j:
            hi = j
        elif rank >= i:
            lo = i
        else:                          # between the two: equal to pivot
            return True
    for i in range(lo + 1, hi + 1):    # insertion sort of [lo, hi]
        v = a[i]
        j = i
        while j > lo and a[j - 1] > v:
            a[j] = a[j - 1]
            j -= 1
        a[j] = v
    return True


cdef Py_ssize_t _nth_nan(const real_t* row, Py_ssize_t n, Py_ssize_t k) noexcept nogil:
    # the index of the row's k-th NaN (0-based) in index order
    cdef Py_ssize_t j
    for j in range(n):
        if row[j] != row[j]:
            if k == 0:
                return j
            k -= 1
    return -1


cdef void _rank_rows(const real_t* x, Py_ssize_t rows, Py_ssize_t n, Py_ssize_t rank,
                     bint nan_first, real_t* scratch, int64_t* out) noexcept nogil:
    cdef Py_ssize_t r, j, m, below, seen
    cdef const real_t* row
    cdef real_t v
    for r in range(rows):
        row = x + r * n
        out[r] = -1
        m = 0
        for j in range(n):
            v = row[j]
            if v == v:
                scratch[m] = v
                m += 1
        if m < n and (nan_first or rank >= m):
            out[r] = _nth_nan(row, n, 0 if nan_first else rank - m)
            continue
        if not _select(scratch, m, rank):
            continue
        v = scratch[rank]
        below = 0
        for j in range(n):
            below += row[j] < v
        seen = 0
        for j in range(n):
            if row[j] == v:
                if seen == rank - below:
                    out[r] = j
                    break
                seen += 1


def rank_rows(const real_t[:, ::1] x,     # in  (rows, n), C-contiguous
              Py_ssize_t rank,
              bint nan_first,
              int64_t[::1] out):          # out (rows,): column indices, or -1
    """Per row, the column a stable ascending sort (NaN last) puts at
    ``rank``, or with ``nan_first`` the first NaN of a row that has one; -1
    for a row whose selection ran out of its partition budget (sort those);
    0 <= rank < n."""
    cdef Py_ssize_t rows = x.shape[0], n = x.shape[1]
    cdef real_t* scratch
    if out.shape[0] != rows or not 0 <= rank < n:
        raise ValueError("rank_rows: shapes do not match")
    if rows == 0:
        return
    scratch = <real_t*>malloc(n * sizeof(real_t))
    if scratch == NULL:
        raise MemoryError()
    with nogil:
        _rank_rows(&x[0, 0], rows, n, rank, nan_first, scratch, &out[0])
    free(scratch)
