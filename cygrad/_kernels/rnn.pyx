"""Fused gate arithmetic of the recurrent cells: one forward and one backward
kernel per cell type and time step.

The matrix products stay on NumPy's BLAS (the caller computes the input
part of every step at once, ``gi = x @ W_ih.T + b``, and per step the hidden
part ``gh = h @ W_hh.T``); what is left per step is a dozen elementwise
operations over ``(batch, k * hidden)``, which as separate NumPy or Tensor
ops cost one pass and one temporary each.  Here each is one pass.

``seq_fwd`` / ``seq_bwd`` run a whole direction's time loop: per step the
hidden product, through the cblas ``sgemm`` / ``dgemm`` of the OpenBLAS
NumPy loaded (its address from ``_blas.gemm_addresses``; without one, plain
loops), and the step's gate kernel, all without the GIL.

Layout: every argument is a C-contiguous 2-d block of rows ``(bs, width)``,
one row per sequence of the step's batch (a PackedSequence step passes the
first ``bs`` rows of its state buffers).  Gate blocks are laid out as torch's
weights: LSTM ``[i | f | g | o]`` (4H), GRU ``[r | z | n]`` (3H).

- ``rnn_fwd``:  ``h = act(gi + gh)``, act tanh or relu.
  ``rnn_bwd``: ``dpre = dh * act'(h)`` (from the output: ``1 - h^2``;
  relu'(0) = 0, as torch).
- ``lstm_fwd``: ``i, f, o = sigmoid(.)``, ``g = tanh(.)`` of ``gi + gh``;
  ``c' = f c + i g``, ``h = o tanh(c')``.  Writes the activated gates, the
  old ``c`` (``cprev``), ``tanh(c')`` (``tc``), and ``c'`` over ``c``.
  ``lstm_bwd``: from ``dh`` and the cell's incoming ``dc`` (in/out):
  ``dc_tot = dc + dh o (1 - tc^2)``; pre-activation gradients
  ``di = dc_tot g i(1-i)``, ``df = dc_tot cprev f(1-f)``,
  ``dg = dc_tot i (1-g^2)``, ``do = dh tc o(1-o)``; ``dc <- dc_tot f``.
- ``lstm_cell``: a whole float32 cell step at small batch, its two
  products included (``cg_lstm_cell_f``), for ``nn.LSTMCell``.
- ``gru_fwd`` (torch's form, reset gate applied after the product):
  ``r, z = sigmoid(gi + gh + b_hh)``, ``hn = gh_n + b_hn``,
  ``n = tanh(gi_n + r hn)``, ``h' = (1 - z) n + z h``.  Writes gates
  ``[r | z | n]``, ``hn`` and ``h'``.
  ``gru_bwd``: ``dn = dh (1-z) (1-n^2)``, ``dz = dh (h - n) z(1-z)``,
  ``dr = dn hn r(1-r)``; ``dgi = [dr | dz | dn]``, ``dgh = [dr | dz | dn r]``;
  ``dh <- dh z`` (in/out: the direct path to the previous state; the caller
  adds ``dgh @ W_hh``).

Dtypes: ``real_t`` (float32, float64), computed in the array's own type
(as torch's CPU cells).  float32 forward kernels evaluate their sigmoids and
tanhs with vectorized float functions (``cg_rnn.h``: libm's are scalar calls
and made the LSTM step 3x its BLAS product); float64 uses libm.  The LSTM
backward is C too (``cg_rnn.h``, compiled for AVX2 and the baseline).  Aliasing: ``c`` (lstm_fwd), ``dc`` (lstm_bwd) and
``dh`` (gru_bwd) are read and written in place, element by element; no other
output may alias an input.  Threading: single-threaded, GIL released.
"""

from libc.math cimport exp, expf, tanh, tanhf
from libc.stdint cimport int64_t
from libc.string cimport memcpy

cimport numpy as cnp
import numpy as np

from cygrad._kernels._blas import gemm_addresses
from cygrad._kernels._types cimport real_t

cnp.import_array()


cdef extern from "cg_rnn.h":
    void cg_lstm_fwd_f(const float* gi, const float* gh, float* c, float* gates,
                       float* cprev, float* tc, float* h, Py_ssize_t bs,
                       Py_ssize_t hid) noexcept nogil
    void cg_gru_fwd_f(const float* gi, const float* gh, const float* bhh,
                      const float* hprev, float* gates, float* hn, float* h,
                      Py_ssize_t bs, Py_ssize_t hid) noexcept nogil
    void cg_rnn_tanh_f(const float* gi, const float* gh, float* h,
                       Py_ssize_t n) noexcept nogil
    void cg_lstm_cell_f(const float* x, const float* h, const float* c,
                        const float* wih, const float* whh, const float* bih,
                        const float* bhh, float* gates, float* cn, float* tc,
                        float* hn, Py_ssize_t bs, Py_ssize_t n_in,
                        Py_ssize_t hid) noexcept nogil
    void cg_lstm_bwd_f(const float* dh, float* dc, const float* gates,
                       const float* cprev, const float* tc, float* dg,
                       Py_ssize_t bs, Py_ssize_t hid) noexcept nogil
    void cg_lstm_bwd_d(const double* dh, double* dc, const double* gates,
                       const double* cprev, const double* tc, double* dg,
                       Py_ssize_t bs, Py_ssize_t hid) noexcept nogil


cdef inline real_t _sigmoid(real_t x) noexcept nogil:
    # 1 / (1 + exp(-x)): exp overflows to inf for very negative x, giving 0
    if real_t is float:
        return 1.0 / (1.0 + expf(-x))
    else:
        return 1.0 / (1.0 + exp(-x))


cdef inline real_t _tanh(real_t x) noexcept nogil:
    if real_t is float:
        return tanhf(x)
    else:
        return tanh(x)


cdef _rows(str name, str what, Py_ssize_t rows, Py_ssize_t cols,
           Py_ssize_t want_rows, Py_ssize_t want_cols):
    if rows != want_rows or cols != want_cols:
        raise ValueError(
            f"{name}: {what} has shape ({rows}, {cols}), expected "
            f"({want_rows}, {want_cols})"
        )


# ---------------------------------------------------------------------------
# Elman RNN


def rnn_fwd(const real_t[:, ::1] gi,    # in  (bs, H)
            const real_t[:, ::1] gh,    # in  (bs, H)
            real_t[:, ::1] h,           # out (bs, H)
            bint relu):
    """``h = tanh(gi + gh)`` (or ``relu``)."""
    cdef Py_ssize_t bs = gi.shape[0], n = gi.shape[1]
    _rows("rnn_fwd", "gh", gh.shape[0], gh.shape[1], bs, n)
    _rows("rnn_fwd", "h", h.shape[0], h.shape[1], bs, n)
    if bs == 0 or n == 0:
        return
    with nogil:
        _rnn_fwd(&gi[0, 0], &gh[0, 0], &h[0, 0], bs * n, relu)


cdef void _rnn_fwd(const real_t* gi, const real_t* gh, real_t* h, Py_ssize_t n,
                   bint relu) noexcept nogil:
    cdef Py_ssize_t k
    cdef real_t v
    if relu:
        for k in range(n):
            v = gi[k] + gh[k]
            h[k] = v if v > 0 else 0
    elif real_t is float:
        cg_rnn_tanh_f(gi, gh, h, n)
    else:
        for k in range(n):
            h[k] = _tanh(gi[k] + gh[k])


def rnn_bwd(const real_t[:, ::1] dh,    # in  (bs, H)
            const real_t[:, ::1] h,     # in  (bs, H), the step's output
            real_t[:, ::1] dpre,        # out (bs, H)
            bint relu):
    """``dpre = dh * (1 - h^2)`` (tanh) or ``dh * (h > 0)`` (relu)."""
    cdef Py_ssize_t bs = dh.shape[0], n = dh.shape[1]
    _rows("rnn_bwd", "h", h.shape[0], h.shape[1], bs, n)
    _rows("rnn_bwd", "dpre", dpre.shape[0], dpre.shape[1], bs, n)
    if bs == 0 or n == 0:
        return
    with nogil:
        _rnn_bwd(&dh[0, 0], &h[0, 0], &dpre[0, 0], bs * n, relu)


cdef void _rnn_bwd(const real_t* dh, const real_t* h, real_t* dpre, Py_ssize_t n,
                   bint relu) noexcept nogil:
    cdef Py_ssize_t k
    if relu:
        for k in range(n):
            dpre[k] = dh[k] if h[k] > 0 else 0
    else:
        for k in range(n):
            dpre[k] = dh[k] * (1 - h[k] * h[k])


# ---------------------------------------------------------------------------
# LSTM


def lstm_fwd(const real_t[:, ::1] gi,   # in  (bs, 4H)
             const real_t[:, ::1] gh,   # in  (bs, 4H)
             real_t[:, ::1] c,          # in/out (bs, H): c, then c'
             real_t[:, ::1] gates,      # out (bs, 4H): activated i, f, g, o
             real_t[:, ::1] cprev,      # out (bs, H): the old c
             real_t[:, ::1] tc,         # out (bs, H): tanh(c')
             real_t[:, ::1] h):         # out (bs, H)
    """One LSTM step's gate arithmetic (see the module docstring)."""
    cdef Py_ssize_t bs = c.shape[0], hid = c.shape[1]
    _rows("lstm_fwd", "gi", gi.shape[0], gi.shape[1], bs, 4 * hid)
    _rows("lstm_fwd", "gh", gh.shape[0], gh.shape[1], bs, 4 * hid)
    _rows("lstm_fwd", "gates", gates.shape[0], gates.shape[1], bs, 4 * hid)
    _rows("lstm_fwd", "cprev", cprev.shape[0], cprev.shape[1], bs, hid)
    _rows("lstm_fwd", "tc", tc.shape[0], tc.shape[1], bs, hid)
    _rows("lstm_fwd", "h", h.shape[0], h.shape[1], bs, hid)
    if bs == 0 or hid == 0:
        return
    with nogil:
        _lstm_fwd_any(&gi[0, 0], &gh[0, 0], &c[0, 0], &gates[0, 0], &cprev[0, 0],
                      &tc[0, 0], &h[0, 0], bs, hid)


cdef inline void _lstm_fwd_any(const real_t* gi, const real_t* gh, real_t* c,
                               real_t* gates, real_t* cprev, real_t* tc, real_t* h,
                               Py_ssize_t bs, Py_ssize_t hid) noexcept nogil:
    if real_t is float:
        cg_lstm_fwd_f(gi, gh, c, gates, cprev, tc, h, bs, hid)
    else:
        _lstm_fwd(gi, gh, c, gates, cprev, tc, h, bs, hid)


cdef void _lstm_fwd(const real_t* gi, const real_t* gh, real_t* c, real_t* gates,
                    real_t* cprev, real_t* tc, real_t* h, Py_ssize_t bs,
                    Py_ssize_t hid) noexcept nogil:
    cdef Py_ssize_t b, j, row
    cdef real_t ig, fg, gg, og, cn, t
    for b in range(bs):
        row = b * 4 * hid
        for j in range(hid):
            ig = _sigmoid(gi[row + j] + gh[row + j])
            fg = _sigmoid(gi[row + hid + j] + gh[row + hid + j])
            gg = _tanh(gi[row + 2 * hid + j] + gh[row + 2 * hid + j])
            og = _sigmoid(gi[row + 3 * hid + j] + gh[row + 3 * hid + j])
            gates[row + j] = ig
            gates[row + hid + j] = fg
            gates[row + 2 * hid + j] = gg
            gates[row + 3 * hid + j] = og
            cprev[b * hid + j] = c[b * hid + j]
            cn = fg * c[b * hid + j] + ig * gg
            t = _tanh(cn)
            c[b * hid + j] = cn
            tc[b * hid + j] = t
            h[b * hid + j] = og * t


cdef const float* _f32(cnp.ndarray a, str what, Py_ssize_t rows,
                       Py_ssize_t cols) except NULL:
    """The data of ``a``, checked to be float32, C-contiguous, ``(rows, cols)``
    (``rows`` < 0: 1-d of ``cols``)."""
    cdef int nd = 1 if rows < 0 else 2
    cdef object want, got
    if (cnp.PyArray_TYPE(a) != cnp.NPY_FLOAT32 or not cnp.PyArray_IS_C_CONTIGUOUS(a)
            or cnp.PyArray_NDIM(a) != nd or cnp.PyArray_DIMS(a)[nd - 1] != cols
            or (nd == 2 and cnp.PyArray_DIMS(a)[0] != rows)):
        want = (cols,)
        if rows >= 0:
            want = (rows, cols)
        got = (<object>a).shape
        raise ValueError(
            f"lstm_cell: {what} must be a C-contiguous float32 array of shape "
            f"{want}, got {(<object>a).dtype} {got}")
    return <const float*>cnp.PyArray_DATA(a)


def lstm_cell(cnp.ndarray x, cnp.ndarray h, cnp.ndarray c, cnp.ndarray w_ih,
              cnp.ndarray w_hh, object b_ih, object b_hh):
    """One float32 LSTM cell step, products included (small batches: see
    ``cg_lstm_cell_f``).  ``x`` (B, I), ``h``, ``c`` (B, H), ``w_ih`` (4H, I),
    ``w_hh`` (4H, H), ``b_ih``, ``b_hh`` (4H,) or None.  Returns new arrays
    ``(h', c', gates, tanh(c'))``; ``c`` is left as it is (it is the
    backward's ``cprev``).  ndarray arguments, no memoryviews: at batch 1
    acquiring eleven buffers cost more than the arithmetic."""
    cdef Py_ssize_t bs = cnp.PyArray_DIMS(x)[0] if cnp.PyArray_NDIM(x) == 2 else -1
    cdef Py_ssize_t n_in = cnp.PyArray_DIMS(x)[cnp.PyArray_NDIM(x) - 1]
    cdef Py_ssize_t hid = cnp.PyArray_DIMS(c)[cnp.PyArray_NDIM(c) - 1]
    if bs < 0:
        raise ValueError("lstm_cell: x must be 2-d")
    cdef const float* px = _f32(x, "x", bs, n_in)
    cdef const float* ph = _f32(h, "h", bs, hid)
    cdef const float* pc = _f32(c, "c", bs, hid)
    cdef const float* pwi = _f32(w_ih, "w_ih", 4 * hid, n_in)
    cdef const float* pwh = _f32(w_hh, "w_hh", 4 * hid, hid)
    cdef const float* pbi = NULL
    cdef const float* pbh = NULL
    if b_ih is not None:
        pbi = _f32(b_ih, "b_ih", -1, 4 * hid)
    if b_hh is not None:
        pbh = _f32(b_hh, "b_hh", -1, 4 * hid)
    cdef cnp.npy_intp d4[2]
    cdef cnp.npy_intp d1[2]
    d4[0] = bs
    d4[1] = 4 * hid
    d1[0] = bs
    d1[1] = hid
    cdef cnp.ndarray gates = cnp.PyArray_EMPTY(2, d4, cnp.NPY_FLOAT32, 0)
    cdef cnp.ndarray cn = cnp.PyArray_EMPTY(2, d1, cnp.NPY_FLOAT32, 0)
    cdef cnp.ndarray tc = cnp.PyArray_EMPTY(2, d1, cnp.NPY_FLOAT32, 0)
    cdef cnp.ndarray hn = cnp.PyArray_EMPTY(2, d1, cnp.NPY_FLOAT32, 0)
    if bs > 0 and hid > 0:
        with nogil:
            cg_lstm_cell_f(px, ph, pc, pwi, pwh, pbi, pbh,
                           <float*>cnp.PyArray_DATA(gates), <float*>cnp.PyArray_DATA(cn),
                           <float*>cnp.PyArray_DATA(tc), <float*>cnp.PyArray_DATA(hn),
                           bs, n_in, hid)
    return hn, cn, gates, tc


def lstm_bwd(const real_t[:, ::1] dh,     # in  (bs, H)
             real_t[:, ::1] dc,           # in/out (bs, H): dc', then dc
             const real_t[:, ::1] gates,  # in  (bs, 4H)
             const real_t[:, ::1] cprev,  # in  (bs, H)
             const real_t[:, ::1] tc,     # in  (bs, H)
             real_t[:, ::1] dg):          # out (bs, 4H): pre-activation grads
    """One LSTM step's backward gate arithmetic (see the module docstring)."""
    cdef Py_ssize_t bs = dh.shape[0], hid = dh.shape[1]
    _rows("lstm_bwd", "dc", dc.shape[0], dc.shape[1], bs, hid)
    _rows("lstm_bwd", "gates", gates.shape[0], gates.shape[1], bs, 4 * hid)
    _rows("lstm_bwd", "cprev", cprev.shape[0], cprev.shape[1], bs, hid)
    _rows("lstm_bwd", "tc", tc.shape[0], tc.shape[1], bs, hid)
    _rows("lstm_bwd", "dg", dg.shape[0], dg.shape[1], bs, 4 * hid)
    if bs == 0 or hid == 0:
        return
    with nogil:
        _lstm_bwd_any(&dh[0, 0], &dc[0, 0], &gates[0, 0], &cprev[0, 0], &tc[0, 0],
                      &dg[0, 0], bs, hid)


cdef inline void _lstm_bwd_any(const real_t* dh, real_t* dc, const real_t* gates,
                               const real_t* cprev, const real_t* tc, real_t* dg,
                               Py_ssize_t bs, Py_ssize_t hid) noexcept nogil:
    if real_t is float:
        cg_lstm_bwd_f(dh, dc, gates, cprev, tc, dg, bs, hid)
    else:
        cg_lstm_bwd_d(dh, dc, gates, cprev, tc, dg, bs, hid)



# ---------------------------------------------------------------------------
# GRU


def gru_fwd(const real_t[:, ::1] gi,     # in  (bs, 3H), includes b_ih
            const real_t[:, ::1] gh,     # in  (bs, 3H), h @ W_hh.T (no bias)
            const real_t[::1] bhh,       # in  (3H,) or (0,) without bias
            const real_t[:, ::1] hprev,  # in  (bs, H)
            real_t[:, ::1] gates,        # out (bs, 3H): r, z, n
            real_t[:, ::1] hn,           # out (bs, H): gh_n + b_hn
            real_t[:, ::1] h):           # out (bs, H)
    """One GRU step's gate arithmetic (see the module docstring)."""
    cdef Py_ssize_t bs = hprev.shape[0], hid = hprev.shape[1]
    _rows("gru_fwd", "gi", gi.shape[0], gi.shape[1], bs, 3 * hid)
    _rows("gru_fwd", "gh", gh.shape[0], gh.shape[1], bs, 3 * hid)
    _rows("gru_fwd", "gates", gates.shape[0], gates.shape[1], bs, 3 * hid)
    _rows("gru_fwd", "hn", hn.shape[0], hn.shape[1], bs, hid)
    _rows("gru_fwd", "h", h.shape[0], h.shape[1], bs, hid)
    if bhh.shape[0] != 0 and bhh.shape[0] != 3 * hid:
        raise ValueError(f"gru_fwd: bhh has length {bhh.shape[0]}, expected "
                         f"{3 * hid} or 0")
    if bs == 0 or hid == 0:
        return
    cdef const real_t* pb = &bhh[0] if bhh.shape[0] else NULL
    with nogil:
        _gru_fwd_any(&gi[0, 0], &gh[0, 0], pb, &hprev[0, 0], &gates[0, 0], &hn[0, 0],
                     &h[0, 0], bs, hid)


cdef inline void _gru_fwd_any(const real_t* gi, const real_t* gh, const real_t* bhh,
                              const real_t* hprev, real_t* gates, real_t* hn,
                              real_t* h, Py_ssize_t bs, Py_ssize_t hid) noexcept nogil:
    if real_t is float:
        cg_gru_fwd_f(gi, gh, bhh, hprev, gates, hn, h, bs, hid)
    else:
        _gru_fwd(gi, gh, bhh, hprev, gates, hn, h, bs, hid)


cdef void _gru_fwd(const real_t* gi, const real_t* gh, const real_t* bhh,
                   const real_t* hprev, real_t* gates, real_t* hn, real_t* h,
                   Py_ssize_t bs, Py_ssize_t hid) noexcept nogil:
    cdef Py_ssize_t b, j, row, s
    cdef real_t r, z, n, a_r, a_z, a_n
    for b in range(bs):
        row = b * 3 * hid
        for j in range(hid):
            s = b * hid + j
            a_r = gh[row + j]
            a_z = gh[row + hid + j]
            a_n = gh[row + 2 * hid + j]
            if bhh != NULL:
                a_r = a_r + bhh[j]
                a_z = a_z + bhh[hid + j]
                a_n = a_n + bhh[2 * hid + j]
            r = _sigmoid(gi[row + j] + a_r)
            z = _sigmoid(gi[row + hid + j] + a_z)
            n = _tanh(gi[row + 2 * hid + j] + r * a_n)
            gates[row + j] = r
            gates[row + hid + j] = z
            gates[row + 2 * hid + j] = n
            hn[s] = a_n
            h[s] = (1 - z) * n + z * hprev[s]


def gru_bwd(real_t[:, ::1] dh,           # in/out (bs, H): dh', then dh' * z
            const real_t[:, ::1] gates,  # in  (bs, 3H)
            const real_t[:, ::1] hn,     # in  (bs, H)
            const real_t[:, ::1] hprev,  # in  (bs, H)
            real_t[:, ::1] dgi,          # out (bs, 3H)
            real_t[:, ::1] dgh):         # out (bs, 3H)
    """One GRU step's backward gate arithmetic (see the module docstring)."""
    cdef Py_ssize_t bs = dh.shape[0], hid = dh.shape[1]
    _rows("gru_bwd", "gates", gates.shape[0], gates.shape[1], bs, 3 * hid)
    _rows("gru_bwd", "hn", hn.shape[0], hn.shape[1], bs, hid)
    _rows("gru_bwd", "hprev", hprev.shape[0], hprev.shape[1], bs, hid)
    _rows("gru_bwd", "dgi", dgi.shape[0], dgi.shape[1], bs, 3 * hid)
    _rows("gru_bwd", "dgh", dgh.shape[0], dgh.shape[1], bs, 3 * hid)
    if bs == 0 or hid == 0:
        return
    with nogil:
        _gru_bwd(&dh[0, 0], &gates[0, 0], &hn[0, 0], &hprev[0, 0], &dgi[0, 0],
                 &dgh[0, 0], bs, hid)


cdef void _gru_bwd(real_t* dh, const real_t* gates, const real_t* hn,
                   const real_t* hprev, real_t* dgi, real_t* dgh, Py_ssize_t bs,
                   Py_ssize_t hid) noexcept nogil:
    cdef Py_ssize_t b, j, row, s
    cdef real_t r, z, n, d, dn, dz, dr
    for b in range(bs):
        row = b * 3 * hid
        for j in range(hid):
            s = b * hid + j
            r = gates[row + j]
            z = gates[row + hid + j]
            n = gates[row + 2 * hid + j]
            d = dh[s]
            dn = d * (1 - z) * (1 - n * n)
            dz = d * (hprev[s] - n) * z * (1 - z)
            dr = dn * hn[s] * r * (1 - r)
            dgi[row + j] = dr
            dgi[row + hid + j] = dz
            dgi[row + 2 * hid + j] = dn
            dgh[row + j] = dr
            dgh[row + hid + j] = dz
            dgh[row + 2 * hid + j] = dn * r
            dh[s] = d * z


# ---------------------------------------------------------------------------
# the time loop of one direction, compiled: per step one product (two with an
# LSTM projection) and one gate kernel, no Python in between

ctypedef void (*sgemm64_t)(int, int, int, int64_t, int64_t, int64_t, float,
                           const float*, int64_t, const float*, int64_t, float,
                           float*, int64_t) noexcept nogil
ctypedef void (*dgemm64_t)(int, int, int, int64_t, int64_t, int64_t, double,
                           const double*, int64_t, const double*, int64_t, double,
                           double*, int64_t) noexcept nogil

ctypedef void (*sgemm32_t)(int, int, int, int, int, int, float, const float*, int,
                           const float*, int, float, float*, int) noexcept nogil
ctypedef void (*dgemm32_t)(int, int, int, int, int, int, double, const double*, int,
                           const double*, int, double, double*, int) noexcept nogil

cdef sgemm64_t _sgemm = NULL
cdef dgemm64_t _dgemm = NULL
cdef bint _ilp64 = True

cdef enum:
    CBLAS_ROW_MAJOR = 101
    CBLAS_NO_TRANS = 111
    CBLAS_TRANS = 112
    MODE_RNN = 0
    MODE_LSTM = 1
    MODE_GRU = 2


def set_gemm(size_t sgemm, size_t dgemm, bint ilp64=True):
    """Use the cblas ``sgemm`` / ``dgemm`` at these addresses, whose integer
    arguments are 64-bit when ``ilp64`` (``_blas.gemm_addresses``); 0, 0 goes
    back to the portable loops."""
    global _sgemm, _dgemm, _ilp64
    _sgemm = <sgemm64_t>sgemm
    _dgemm = <dgemm64_t>dgemm
    _ilp64 = ilp64


def has_gemm():
    """Whether the time loops call a BLAS (else their portable products)."""
    return _sgemm != NULL and _dgemm != NULL


_found = gemm_addresses()
if _found is not None:
    set_gemm(*_found)


cdef void _gemm(bint trans_b, Py_ssize_t m, Py_ssize_t n, Py_ssize_t k,
                const real_t* a, const real_t* b, real_t* c) noexcept nogil:
    # c (m, n) = a (m, k) @ b, b (n, k) transposed when trans_b else (k, n);
    # dense C-contiguous blocks, c not aliasing a or b.  The portable form of
    # trans_b is a dot product per entry (not vectorized without
    # reassociation): the time loops pass transposed weights instead.
    cdef Py_ssize_t i, j, p
    cdef real_t s, av
    cdef int tb = CBLAS_TRANS if trans_b else CBLAS_NO_TRANS
    cdef Py_ssize_t ldb = k if trans_b else n
    if real_t is float:
        if _sgemm != NULL and _ilp64:
            _sgemm(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, tb, m, n, k, 1.0, a, k, b, ldb,
                   0.0, c, n)
            return
        if _sgemm != NULL:
            (<sgemm32_t>_sgemm)(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, tb, <int>m, <int>n,
                                <int>k, 1.0, a, <int>k, b, <int>ldb, 0.0, c, <int>n)
            return
    else:
        if _dgemm != NULL and _ilp64:
            _dgemm(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, tb, m, n, k, 1.0, a, k, b, ldb,
                   0.0, c, n)
            return
        if _dgemm != NULL:
            (<dgemm32_t>_dgemm)(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, tb, <int>m, <int>n,
                                <int>k, 1.0, a, <int>k, b, <int>ldb, 0.0, c, <int>n)
            return
    for i in range(m):
        if trans_b:
            for j in range(n):
                s = 0
                for p in range(k):
                    s = s + a[i * k + p] * b[j * k + p]
                c[i * n + j] = s
        else:
            for j in range(n):
                c[i * n + j] = 0
            for p in range(k):
                av = a[i * k + p]
                for j in range(n):
                    c[i * n + j] = c[i * n + j] + av * b[p * n + j]


cdef void _seq_fwd(int mode, bint relu, bint reverse, bint wt, Py_ssize_t steps,
                   const int64_t* bsz, const int64_t* offs, Py_ssize_t hid,
                   Py_ssize_t hout, const real_t* gi, real_t* h, real_t* c,
                   const real_t* w_hh, const real_t* w_hr, const real_t* bhh,
                   real_t* hprev, real_t* gh, real_t* gates, real_t* cprev,
                   real_t* tc, real_t* hraw, real_t* out,
                   real_t* hn_all) noexcept nogil:
    cdef Py_ssize_t s, t, b, o0
    cdef Py_ssize_t g = 4 if mode == MODE_LSTM else (3 if mode == MODE_GRU else 1)
    cdef real_t* hp
    for s in range(steps):
        t = steps - 1 - s if reverse else s
        b = bsz[t]
        o0 = offs[t]
        hp = hprev + o0 * hout
        memcpy(hp, h, b * hout * sizeof(real_t))
        _gemm(not wt, b, g * hid, hout, hp, w_hh, gh)
        if mode == MODE_LSTM:
            _lstm_fwd_any(gi + o0 * g * hid, gh, c, gates + o0 * g * hid,
                          cprev + o0 * hid, tc + o0 * hid, hraw + o0 * hid, b, hid)
            if w_hr != NULL:
                _gemm(not wt, b, hout, hid, hraw + o0 * hid, w_hr, out + o0 * hout)
        elif mode == MODE_GRU:
            _gru_fwd_any(gi + o0 * g * hid, gh, bhh, hp, gates + o0 * g * hid,
                         hn_all + o0 * hid, out + o0 * hid, b, hid)
        else:
            _rnn_fwd(gi + o0 * hid, gh, out + o0 * hid, b * hid, relu)
        memcpy(h, out + o0 * hout, b * hout * sizeof(real_t))


cdef void _seq_bwd(int mode, bint relu, bint reverse, Py_ssize_t steps,
                   const int64_t* bsz, const int64_t* offs, Py_ssize_t hid,
                   Py_ssize_t hout, const real_t* dy, real_t* dh, real_t* dc,
                   const real_t* w_hh, const real_t* w_hr, const real_t* hprev,
                   const real_t* gates, const real_t* cprev, const real_t* tc,
                   const real_t* hn_all, const real_t* out, real_t* dg,
                   real_t* dgh, real_t* dr, real_t* dhraw,
                   real_t* tmp) noexcept nogil:
    cdef Py_ssize_t s, t, b, o0, j
    cdef Py_ssize_t g = 4 if mode == MODE_LSTM else (3 if mode == MODE_GRU else 1)
    cdef const real_t* src
    for s in range(steps):
        t = s if reverse else steps - 1 - s
        b = bsz[t]
        o0 = offs[t]
        for j in range(b * hout):
            dh[j] = dh[j] + dy[o0 * hout + j]
        if mode == MODE_LSTM:
            src = dh
            if w_hr != NULL:
                memcpy(dr + o0 * hout, dh, b * hout * sizeof(real_t))
                _gemm(False, b, hid, hout, dh, w_hr, dhraw)
                src = dhraw
            _lstm_bwd_any(src, dc, gates + o0 * g * hid, cprev + o0 * hid,
                          tc + o0 * hid, dg + o0 * g * hid, b, hid)
            _gemm(False, b, hout, g * hid, dg + o0 * g * hid, w_hh, dh)
        elif mode == MODE_GRU:
            _gru_bwd(dh, gates + o0 * g * hid, hn_all + o0 * hid, hprev + o0 * hid,
                     dg + o0 * g * hid, dgh + o0 * g * hid, b, hid)
            _gemm(False, b, hid, g * hid, dgh + o0 * g * hid, w_hh, tmp)
            for j in range(b * hid):
                dh[j] = dh[j] + tmp[j]
        else:
            _rnn_bwd(dh, out + o0 * hid, dg + o0 * hid, b * hid, relu)
            _gemm(False, b, hid, hid, dg + o0 * hid, w_hh, dh)


cdef class _Ptrs:
    """Checked data pointers of the arrays one time loop touches: each is
    C-contiguous, of the loop's dtype and of at least ``size`` elements,
    or the loop does not start (a ValueError names the array)."""
    cdef int typenum
    cdef str name

    def __init__(self, str name, int typenum):
        self.name = name
        self.typenum = typenum

    cdef void* get(self, object arr, str what, Py_ssize_t size,
                   bint written=True) except? NULL:
        if arr is None:
            if size:
                raise ValueError(f"{self.name}: {what} is missing")
            return NULL
        if (type(arr) is not np.ndarray or cnp.PyArray_TYPE(arr) != self.typenum
                or not cnp.PyArray_IS_C_CONTIGUOUS(arr)
                or not cnp.PyArray_ISBEHAVED_RO(arr)
                or (written and not cnp.PyArray_ISWRITEABLE(arr))
                or cnp.PyArray_SIZE(arr) < size):
            raise ValueError(
                f"{self.name}: {what} must be an aligned, native-order, "
                f"C-contiguous array of {size} elements of the loop's dtype"
                f"{', writeable' if written else ''}, got {arr.dtype} {arr.shape}")
        return cnp.PyArray_DATA(arr)


cdef tuple _steps(str name, object batch_sizes, object offsets, Py_ssize_t n,
                  Py_ssize_t b0):
    bsz = np.ascontiguousarray(batch_sizes, dtype=np.int64)
    offs = np.ascontiguousarray(offsets, dtype=np.int64)
    if bsz.ndim != 1 or offs.ndim != 1 or offs.shape[0] < bsz.shape[0]:
        raise ValueError(f"{name}: batch_sizes ({bsz.shape[0]} steps) need as "
                         f"many offsets, got {offs.shape[0]}")
    offs = offs[:bsz.shape[0]]
    if bsz.size and (bsz.min() < 1 or bsz.max() > b0 or offs.min() < 0
                     or (offs + bsz).max() > n):
        raise ValueError(f"{name}: a step lies outside the {n} rows or the "
                         f"batch of {b0}")
    return bsz, offs


_MODES = {"RNN_TANH": MODE_RNN, "RNN_RELU": MODE_RNN, "LSTM": MODE_LSTM,
          "GRU": MODE_GRU}


def seq_fwd(str mode, object batch_sizes, object offsets, bint reverse,
            cnp.ndarray gi, cnp.ndarray h, object c, cnp.ndarray w_hh, object w_hr,
            object bhh, cnp.ndarray hprev, object gates, object cprev, object tc,
            object hraw, cnp.ndarray out, object hn_all):
    """One direction's forward time loop (``_functional_rnn._forward_dir``).

    ``gi`` (N, g*H) the input part of every step (with the biases the gate
    kernel expects); ``h`` (B, Hout) and ``c`` (B, H) the state, updated in
    place to the last step's; per step ``t`` (in order, or backwards when
    ``reverse``) the rows ``offsets[t]:offsets[t] + batch_sizes[t]`` of the
    (N, .) outputs: ``hprev`` (the state it read), ``gates``, ``cprev``,
    ``tc``, ``hraw`` (LSTM; ``out`` is ``hraw`` without a projection
    ``w_hr``), ``hn_all`` (GRU) and ``out``."""
    cdef int m = _MODES[mode]
    cdef Py_ssize_t n = gi.shape[0], b0 = h.shape[0], hout = h.shape[1]
    cdef Py_ssize_t g = 4 if m == MODE_LSTM else (3 if m == MODE_GRU else 1)
    cdef Py_ssize_t hid = gi.shape[1] // g
    bsz, offs = _steps("seq_fwd", batch_sizes, offsets, n, b0)
    # without a BLAS the portable products take the weights transposed
    # (W_hh.T as a (Hout, g*H) array), so that their inner loop is unit-stride
    cdef bint wt = not has_gemm()
    if wt:
        w_hh = np.ascontiguousarray(w_hh.T)
        if w_hr is not None:
            w_hr = np.ascontiguousarray(w_hr.T)
    cdef _Ptrs P = _Ptrs("seq_fwd", cnp.PyArray_TYPE(gi))
    cdef void* p_gi = P.get(gi, "gi", n * g * hid, False)
    cdef void* p_h = P.get(h, "h", b0 * hout)
    cdef void* p_c = P.get(c, "c", b0 * hid if m == MODE_LSTM else 0)
    cdef void* p_whh = P.get(w_hh, "w_hh", g * hid * hout, False)
    cdef void* p_whr = P.get(w_hr, "w_hr", hout * hid if w_hr is not None else 0,
                             False)
    cdef void* p_bhh = P.get(bhh, "bhh", 3 * hid if bhh is not None else 0, False)
    cdef void* p_hprev = P.get(hprev, "hprev", n * hout)
    cdef void* p_gates = P.get(gates, "gates", n * g * hid if g > 1 else 0)
    cdef void* p_cprev = P.get(cprev, "cprev", n * hid if m == MODE_LSTM else 0)
    cdef void* p_tc = P.get(tc, "tc", n * hid if m == MODE_LSTM else 0)
    cdef void* p_hraw = P.get(hraw, "hraw", n * hid if m == MODE_LSTM else 0)
    cdef void* p_out = P.get(out, "out", n * hout)
    cdef void* p_hn = P.get(hn_all, "hn_all", n * hid if m == MODE_GRU else 0)
    if (m != MODE_LSTM and hout != hid) or (m == MODE_LSTM and w_hr is None
                                            and hout != hid):
        raise ValueError(f"seq_fwd: state width {hout} for hidden size {hid}")
    gh = np.empty(b0 * g * hid, dtype=gi.dtype)
    cdef void* p_gh = cnp.PyArray_DATA(gh)
    cdef const int64_t* pb = <const int64_t*>cnp.PyArray_DATA(bsz)
    cdef const int64_t* po = <const int64_t*>cnp.PyArray_DATA(offs)
    cdef Py_ssize_t steps = bsz.shape[0]
    cdef bint relu = mode == "RNN_RELU"
    if cnp.PyArray_TYPE(gi) == cnp.NPY_FLOAT:
        with nogil:
            _seq_fwd(m, relu, reverse, wt, steps, pb, po, hid, hout, <float*>p_gi,
                     <float*>p_h, <float*>p_c, <float*>p_whh, <float*>p_whr,
                     <float*>p_bhh, <float*>p_hprev, <float*>p_gh, <float*>p_gates,
                     <float*>p_cprev, <float*>p_tc, <float*>p_hraw, <float*>p_out,
                     <float*>p_hn)
    elif cnp.PyArray_TYPE(gi) == cnp.NPY_DOUBLE:
        with nogil:
            _seq_fwd(m, relu, reverse, wt, steps, pb, po, hid, hout, <double*>p_gi,
                     <double*>p_h, <double*>p_c, <double*>p_whh, <double*>p_whr,
                     <double*>p_bhh, <double*>p_hprev, <double*>p_gh,
                     <double*>p_gates, <double*>p_cprev, <double*>p_tc,
                     <double*>p_hraw, <double*>p_out, <double*>p_hn)
    else:
        raise ValueError(f"seq_fwd: no loop for dtype {gi.dtype}")


def seq_bwd(str mode, object batch_sizes, object offsets, bint reverse,
            cnp.ndarray dy, cnp.ndarray dh, object dc, cnp.ndarray w_hh, object w_hr,
            cnp.ndarray hprev, object gates, object cprev, object tc, object hn_all,
            object out, cnp.ndarray dg, object dgh, object dr):
    """One direction's backward time loop (``_functional_rnn._backward_dir``):
    ``dh`` (B, Hout) and ``dc`` (B, H) in/out, from the last step's gradient
    to the initial state's; writes the pre-activation gradients ``dg``
    (N, g*H) (and GRU's ``dgh``, the part through ``W_hh``) and, with a
    projection, ``dr`` (N, Hout) (the gradient at its output)."""
    cdef int m = _MODES[mode]
    cdef Py_ssize_t n = dy.shape[0], b0 = dh.shape[0], hout = dh.shape[1]
    cdef Py_ssize_t g = 4 if m == MODE_LSTM else (3 if m == MODE_GRU else 1)
    cdef Py_ssize_t hid = dg.shape[1] // g
    bsz, offs = _steps("seq_bwd", batch_sizes, offsets, n, b0)
    cdef _Ptrs P = _Ptrs("seq_bwd", cnp.PyArray_TYPE(dy))
    cdef bint proj = w_hr is not None
    cdef void* p_dy = P.get(dy, "dy", n * hout, False)
    cdef void* p_dh = P.get(dh, "dh", b0 * hout)
    cdef void* p_dc = P.get(dc, "dc", b0 * hid if m == MODE_LSTM else 0)
    cdef void* p_whh = P.get(w_hh, "w_hh", g * hid * hout, False)
    cdef void* p_whr = P.get(w_hr, "w_hr", hout * hid if proj else 0, False)
    cdef void* p_hprev = P.get(hprev, "hprev", n * hout, False)
    cdef void* p_gates = P.get(gates, "gates", n * g * hid if g > 1 else 0,
                               False)
    cdef void* p_cprev = P.get(cprev, "cprev", n * hid if m == MODE_LSTM else 0,
                               False)
    cdef void* p_tc = P.get(tc, "tc", n * hid if m == MODE_LSTM else 0, False)
    cdef void* p_hn = P.get(hn_all, "hn_all", n * hid if m == MODE_GRU else 0,
                            False)
    cdef void* p_out = P.get(out, "out", n * hid if m == MODE_RNN else 0,
                             False)
    cdef void* p_dg = P.get(dg, "dg", n * g * hid)
    cdef void* p_dgh = P.get(dgh, "dgh", n * g * hid if m == MODE_GRU else 0)
    cdef void* p_dr = P.get(dr, "dr", n * hout if proj else 0)
    if (m != MODE_LSTM or not proj) and hout != hid:
        raise ValueError(f"seq_bwd: state width {hout} for hidden size {hid}")
    work = np.empty(b0 * hid, dtype=dy.dtype)     # dhraw (LSTM) or tmp (GRU)
    cdef void* p_work = cnp.PyArray_DATA(work)
    cdef const int64_t* pb = <const int64_t*>cnp.PyArray_DATA(bsz)
    cdef const int64_t* po = <const int64_t*>cnp.PyArray_DATA(offs)
    cdef Py_ssize_t steps = bsz.shape[0]
    cdef bint relu = mode == "RNN_RELU"
    if cnp.PyArray_TYPE(dy) == cnp.NPY_FLOAT:
        with nogil:
            _seq_bwd(m, relu, reverse, steps, pb, po, hid, hout, <float*>p_dy,
                     <float*>p_dh, <float*>p_dc, <float*>p_whh, <float*>p_whr,
                     <float*>p_hprev, <float*>p_gates, <float*>p_cprev,
                     <float*>p_tc, <float*>p_hn, <float*>p_out, <float*>p_dg,
                     <float*>p_dgh, <float*>p_dr, <float*>p_work, <float*>p_work)
    elif cnp.PyArray_TYPE(dy) == cnp.NPY_DOUBLE:
        with nogil:
            _seq_bwd(m, relu, reverse, steps, pb, po, hid, hout, <double*>p_dy,
                     <double*>p_dh, <double*>p_dc, <double*>p_whh, <double*>p_whr,
                     <double*>p_hprev, <double*>p_gates, <double*>p_cprev,
                     <double*>p_tc, <double*>p_hn, <double*>p_out, <double*>p_dg,
                     <double*>p_dgh, <double*>p_dr, <double*>p_work,
                     <double*>p_work)
    else:
        raise ValueError(f"seq_bwd: no loop for dtype {dy.dtype}")
