"""Fused gate arithmetic of the recurrent cells: one forward and one backward
kernel per cell type and time step.

The matrix products stay on NumPy's BLAS (the caller computes the input
part of every step at once, ``gi = x @ W_ih.T + b``, and per step the hidden
part ``gh = h @ W_hh.T``); what is left per step is a dozen elementwise
operations over ``(batch, k * hidden)``, which as separate NumPy or Tensor
ops cost one pass and one temporary each.  Here each is one pass.

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

cimport numpy as cnp

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
        if real_t is float:
            cg_lstm_fwd_f(&gi[0, 0], &gh[0, 0], &c[0, 0], &gates[0, 0],
                          &cprev[0, 0], &tc[0, 0], &h[0, 0], bs, hid)
        else:
            _lstm_fwd(&gi[0, 0], &gh[0, 0], &c[0, 0], &gates[0, 0], &cprev[0, 0],
                      &tc[0, 0], &h[0, 0], bs, hid)


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
        if real_t is float:
            cg_lstm_bwd_f(&dh[0, 0], &dc[0, 0], &gates[0, 0], &cprev[0, 0],
                          &tc[0, 0], &dg[0, 0], bs, hid)
        else:
            cg_lstm_bwd_d(&dh[0, 0], &dc[0, 0], &gates[0, 0], &cprev[0, 0],
                          &tc[0, 0], &dg[0, 0], bs, hid)



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
        if real_t is float:
            cg_gru_fwd_f(&gi[0, 0], &gh[0, 0], pb, &hprev[0, 0], &gates[0, 0],
                         &hn[0, 0], &h[0, 0], bs, hid)
        else:
            _gru_fwd(&gi[0, 0], &gh[0, 0], pb, &hprev[0, 0], &gates[0, 0],
                     &hn[0, 0], &h[0, 0], bs, hid)


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
