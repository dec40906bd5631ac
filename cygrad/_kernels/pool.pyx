"""Pooling kernels: max and average over windows given per-output index lists.

Layout: ``(B, H, W)`` C-contiguous planes (``B = N * C``; a 1-d signal is
``H = 1``).  Windows are described per output row and per output column by
the caller, so one kernel serves fixed and adaptive pooling:

- max: output row ``o`` reads input rows ``hs[o] + a * dh`` for
  ``a < hn[o]`` (rows outside ``[0, H)`` are padding and skipped), the same
  for columns.  Fixed pooling has ``hs[o] = o * stride - pad``, ``hn[o] = k``;
  adaptive pooling has its floor/ceil bounds and ``dh = 1``.
- average: output ``(o, p)`` sums rows ``[hs[o], he[o])`` by columns
  ``[ws[p], we[p])`` (already clipped to the input) times ``scale[o, p]``
  (1 / divisor: ``count_include_pad``, ``divisor_override`` and adaptive
  counts are all decided by the caller).

Max pooling returns the flat index ``ih * W + iw`` of the maximum in its plane
(torch's ``return_indices``); the first maximum wins a tie and a NaN wins
over numbers (a later NaN replaces an earlier one), as torch's CPU kernel.
A window holding only padding (impossible under torch's ``pad <= k / 2``
rule) gives ``-inf`` and index -1, which the backward skips.

Sums run in double.  Backward kernels overwrite their output, then add.
Dtypes: ``real_t``; indices int64.  Bounds are checked in the ``def``
wrappers before the GIL is released; outputs must not alias inputs.
"""

from libc.math cimport INFINITY
from libc.stdint cimport int64_t
from libc.string cimport memset

import numpy as np

from cygrad._kernels._types cimport real_t


cdef _check_planes(str name, Py_ssize_t b, Py_ssize_t oh, Py_ssize_t ow,
                   Py_ssize_t b2, Py_ssize_t oh2, Py_ssize_t ow2):
    if b != b2 or oh != oh2 or ow != ow2:
        raise ValueError(
            f"{name}: output planes ({b2}, {oh2}, {ow2}), expected ({b}, {oh}, {ow})"
        )


def max_pool2d_fwd(
    const real_t[:, :, ::1] x,        # in  (B, H, W)
    const Py_ssize_t[::1] hs,         # in  (OH,) first input row of each window
    const Py_ssize_t[::1] hn,         # in  (OH,) rows per window
    Py_ssize_t dh,
    const Py_ssize_t[::1] ws,         # in  (OW,)
    const Py_ssize_t[::1] wn,         # in  (OW,)
    Py_ssize_t dw,
    real_t[:, :, ::1] out,            # out (B, OH, OW)
    int64_t[:, :, ::1] idx,           # out (B, OH, OW) flat index in the plane
):
    """Max of each window and where it is (see module doc)."""
    cdef Py_ssize_t b = x.shape[0], h = x.shape[1], w = x.shape[2]
    cdef Py_ssize_t oh = hs.shape[0], ow = ws.shape[0]
    if hn.shape[0] != oh or wn.shape[0] != ow or dh < 1 or dw < 1:
        raise ValueError("max_pool2d_fwd: window lists disagree or dilation < 1")
    _check_planes("max_pool2d_fwd", b, oh, ow, out.shape[0], out.shape[1],
                  out.shape[2])
    _check_planes("max_pool2d_fwd", b, oh, ow, idx.shape[0], idx.shape[1],
                  idx.shape[2])
    if b == 0 or oh == 0 or ow == 0:
        return
    if h == 0 or w == 0:
        raise ValueError("max_pool2d_fwd: empty input plane")
    # The taps of each window that fall inside the input, [lo, hi), computed
    # once per call, so the loop over planes has no bounds tests.
    cdef Py_ssize_t[::1] hlo = np.empty(oh, dtype=np.intp)
    cdef Py_ssize_t[::1] hhi = np.empty(oh, dtype=np.intp)
    cdef Py_ssize_t[::1] wlo = np.empty(ow, dtype=np.intp)
    cdef Py_ssize_t[::1] whi = np.empty(ow, dtype=np.intp)
    with nogil:
        _taps(&hs[0], &hn[0], dh, oh, h, &hlo[0], &hhi[0])
        _taps(&ws[0], &wn[0], dw, ow, w, &wlo[0], &whi[0])
        _max_pool2d(&x[0, 0, 0], b, h, w, &hs[0], &hlo[0], &hhi[0], dh, oh, &ws[0],
                    &wlo[0], &whi[0], dw, ow, &out[0, 0, 0], &idx[0, 0, 0])


cdef void _taps(const Py_ssize_t* start, const Py_ssize_t* count, Py_ssize_t d,
                Py_ssize_t n, Py_ssize_t size, Py_ssize_t* lo,
                Py_ssize_t* hi) noexcept nogil:
    # Taps a with 0 <= start + a * d < size, a in [0, count): [lo, hi).
    cdef Py_ssize_t o, a, b
    for o in range(n):
        a = 0
        if start[o] < 0:
            a = (-start[o] + d - 1) // d
        b = count[o]
        if start[o] + (b - 1) * d >= size:
            b = (size - 1 - start[o]) // d + 1 if size - 1 - start[o] >= 0 else 0
        if b < a:
            b = a
        lo[o] = a
        hi[o] = b


cdef void _max_pool2d(const real_t* x, Py_ssize_t b, Py_ssize_t h, Py_ssize_t w,
                      const Py_ssize_t* hs, const Py_ssize_t* hlo,
                      const Py_ssize_t* hhi, Py_ssize_t dh, Py_ssize_t oh,
                      const Py_ssize_t* ws, const Py_ssize_t* wlo,
                      const Py_ssize_t* whi, Py_ssize_t dw, Py_ssize_t ow,
                      real_t* out, int64_t* idx) noexcept nogil:
    cdef Py_ssize_t s, o, p, a, q, ih, iw, best_i, k
    cdef real_t best, v
    cdef const real_t* plane
    cdef const real_t* row
    for s in range(b):
        plane = x + s * h * w
        for o in range(oh):
            for p in range(ow):
                best = -INFINITY
                best_i = -1
                for a in range(hlo[o], hhi[o]):
                    ih = hs[o] + a * dh
                    row = plane + ih * w
                    for q in range(wlo[p], whi[p]):
                        iw = ws[p] + q * dw
                        v = row[iw]
                        # first maximum wins; NaN beats numbers (v != v)
                        if v > best or v != v or best_i < 0:
                            best = v
                            best_i = ih * w + iw
                k = (s * oh + o) * ow + p
                out[k] = best
                idx[k] = best_i


def max_pool2d_fixed(
    const real_t[:, :, ::1] x,        # in  (B, H, W)
    Py_ssize_t kh, Py_ssize_t kw, Py_ssize_t sh, Py_ssize_t sw,
    Py_ssize_t ph, Py_ssize_t pw, Py_ssize_t dh, Py_ssize_t dw,
    real_t[:, :, ::1] out,            # out (B, OH, OW)
    int64_t[:, :, ::1] idx,           # out (B, OH, OW)
):
    """``max_pool2d_fwd`` for fixed windows (output o reads rows
    ``o * sh - ph + a * dh``), with the output row as the inner loop: for each
    tap, one pass over the outputs it reaches (a strided read, no per-window
    bookkeeping).  Taps are visited in the same (row, column) order as the
    generic kernel, so ties and NaNs resolve the same way.  The window
    geometry is the caller's; out's shape fixes OH and OW."""
    cdef Py_ssize_t b = x.shape[0], h = x.shape[1], w = x.shape[2]
    cdef Py_ssize_t oh = out.shape[1], ow = out.shape[2]
    if min(kh, kw, sh, sw, dh, dw) < 1 or ph < 0 or pw < 0:
        raise ValueError("max_pool2d_fixed: bad window geometry")
    _check_planes("max_pool2d_fixed", b, oh, ow, out.shape[0], out.shape[1],
                  out.shape[2])
    _check_planes("max_pool2d_fixed", b, oh, ow, idx.shape[0], idx.shape[1],
                  idx.shape[2])
    if b == 0 or oh == 0 or ow == 0:
        return
    if h == 0 or w == 0:
        raise ValueError("max_pool2d_fixed: empty input plane")
    with nogil:
        if (kh == 2 and kw == 2 and sh == 2 and sw == 2 and ph == 0 and pw == 0
                and dh == 1 and dw == 1 and 2 * oh <= h and 2 * ow <= w):
            _max_pool_2x2(&x[0, 0, 0], b, h, w, oh, ow, &out[0, 0, 0], &idx[0, 0, 0])
        else:
            _max_pool2d_fixed(&x[0, 0, 0], b, h, w, kh, kw, sh, sw, ph, pw, dh, dw,
                              oh, ow, &out[0, 0, 0], &idx[0, 0, 0])


cdef void _max_pool_2x2(const real_t* x, Py_ssize_t b, Py_ssize_t h, Py_ssize_t w,
                        Py_ssize_t oh, Py_ssize_t ow, real_t* out,
                        int64_t* idx) noexcept nogil:
    # MaxPool2d(2), every window inside the input: the four taps in registers,
    # visited in the generic kernels' order (3x faster than the per-tap passes
    # on a 128x16x28x28 batch).
    cdef Py_ssize_t s, o, p, k, bi
    cdef const real_t* r0
    cdef const real_t* r1
    cdef real_t best, v
    for s in range(b):
        for o in range(oh):
            r0 = x + (s * h + 2 * o) * w
            r1 = r0 + w
            k = (s * oh + o) * ow
            for p in range(ow):
                best = r0[2 * p]
                bi = 2 * p
                v = r0[2 * p + 1]
                if v > best or v != v:
                    best = v
                    bi = 2 * p + 1
                v = r1[2 * p]
                if v > best or v != v:
                    best = v
                    bi = w + 2 * p
                v = r1[2 * p + 1]
                if v > best or v != v:
                    best = v
                    bi = w + 2 * p + 1
                out[k + p] = best
                idx[k + p] = 2 * o * w + bi


cdef void _max_pool2d_fixed(const real_t* x, Py_ssize_t b, Py_ssize_t h,
                            Py_ssize_t w, Py_ssize_t kh, Py_ssize_t kw,
                            Py_ssize_t sh, Py_ssize_t sw, Py_ssize_t ph,
                            Py_ssize_t pw, Py_ssize_t dh, Py_ssize_t dw,
                            Py_ssize_t oh, Py_ssize_t ow, real_t* out,
                            int64_t* idx) noexcept nogil:
    cdef Py_ssize_t s, o, p, a, q, ih, iw, off, lo, hi
    cdef real_t v
    cdef const real_t* row
    cdef real_t* orow
    cdef int64_t* irow
    for s in range(b):
        for o in range(oh):
            orow = out + (s * oh + o) * ow
            irow = idx + (s * oh + o) * ow
            if ph == 0 and pw == 0:
                # Without padding every window's first tap is inside the input
                # (ceil_mode's last window starts inside too): start from it,
                # and the loop below needs no "nothing seen yet" test.
                row = x + (s * h + o * sh) * w
                for p in range(ow):
                    orow[p] = row[p * sw]
                    irow[p] = o * sh * w + p * sw
            else:
                for p in range(ow):
                    orow[p] = -INFINITY
                    irow[p] = -1
            for a in range(kh):
                ih = o * sh - ph + a * dh
                if ih < 0 or ih >= h:
                    continue
                row = x + (s * h + ih) * w
                for q in range(kw):
                    if a == 0 and q == 0 and ph == 0 and pw == 0:
                        continue
                    off = q * dw - pw
                    # outputs p whose tap column p * sw + off is inside [0, w)
                    lo = 0 if off >= 0 else (-off + sw - 1) // sw
                    hi = 0 if w - 1 - off < 0 else (w - 1 - off) // sw + 1
                    if hi > ow:
                        hi = ow
                    if ph == 0 and pw == 0:
                        for p in range(lo, hi):
                            iw = p * sw + off
                            v = row[iw]
                            if v > orow[p] or v != v:
                                orow[p] = v
                                irow[p] = ih * w + iw
                        continue
                    for p in range(lo, hi):
                        iw = p * sw + off
                        v = row[iw]
                        if v > orow[p] or v != v or irow[p] < 0:
                            orow[p] = v
                            irow[p] = ih * w + iw


cdef Py_ssize_t _first_bad(const int64_t* idx, Py_ssize_t n,
                           Py_ssize_t hw) noexcept nogil:
    cdef Py_ssize_t k
    for k in range(n):
        if idx[k] < -1 or idx[k] >= hw:
            return k
    return -1


def max_pool2d_bwd(
    const real_t[:, :, ::1] g,        # in  (B, OH, OW)
    const int64_t[:, :, ::1] idx,     # in  (B, OH, OW) from the forward
    real_t[:, :, ::1] out,            # out (B, H, W), overwritten
):
    """``out[b, idx[b, o, p]] += g[b, o, p]`` (indices -1 skipped)."""
    cdef Py_ssize_t b = out.shape[0], hw = out.shape[1] * out.shape[2]
    cdef Py_ssize_t n = g.shape[1] * g.shape[2], bad
    _check_planes("max_pool2d_bwd", g.shape[0], g.shape[1], g.shape[2],
                  idx.shape[0], idx.shape[1], idx.shape[2])
    if g.shape[0] != b:
        raise ValueError(f"max_pool2d_bwd: {g.shape[0]} planes of grad, {b} of out")
    if b == 0 or hw == 0:
        return
    if n > 0:
        with nogil:
            bad = _first_bad(&idx[0, 0, 0], b * n, hw)
        if bad >= 0:
            raise IndexError(f"max_pool2d_bwd: an index at {bad} is outside "
                             f"[-1, {hw})")
    with nogil:
        memset(&out[0, 0, 0], 0, b * hw * sizeof(real_t))
        if n > 0:
            _scatter_idx(&g[0, 0, 0], &idx[0, 0, 0], b, n, hw, &out[0, 0, 0])


def gather_idx(
    const real_t[:, :, ::1] x,        # in  (B, H, W)
    const int64_t[:, :, ::1] idx,     # in  (B, OH, OW)
    real_t[:, :, ::1] out,            # out (B, OH, OW)
):
    """``out[b, o, p] = x[b, idx[b, o, p]]`` (0 for -1): the adjoint of
    ``max_pool2d_bwd``, so the gradient of the max-pool gradient."""
    cdef Py_ssize_t b = x.shape[0], hw = x.shape[1] * x.shape[2]
    cdef Py_ssize_t n = idx.shape[1] * idx.shape[2], bad
    _check_planes("gather_idx", idx.shape[0], idx.shape[1], idx.shape[2],
                  out.shape[0], out.shape[1], out.shape[2])
    if idx.shape[0] != b:
        raise ValueError(f"gather_idx: {idx.shape[0]} planes of idx, {b} of x")
    if b == 0 or n == 0:
        return
    with nogil:
        bad = _first_bad(&idx[0, 0, 0], b * n, hw)
    if bad >= 0:
        raise IndexError(f"gather_idx: an index at {bad} is outside [-1, {hw})")
    with nogil:
        _gather_idx(&x[0, 0, 0] if hw > 0 else NULL, &idx[0, 0, 0], b, n, hw,
                    &out[0, 0, 0])


cdef void _gather_idx(const real_t* x, const int64_t* idx, Py_ssize_t b,
                      Py_ssize_t n, Py_ssize_t hw, real_t* out) noexcept nogil:
    cdef Py_ssize_t s, k
    cdef int64_t i
    for s in range(b):
        for k in range(n):
            i = idx[s * n + k]
            out[s * n + k] = x[s * hw + i] if i >= 0 else 0


cdef void _scatter_idx(const real_t* g, const int64_t* idx, Py_ssize_t b,
                       Py_ssize_t n, Py_ssize_t hw, real_t* out) noexcept nogil:
    cdef Py_ssize_t s, k
    cdef int64_t i
    for s in range(b):
        for k in range(n):
            i = idx[s * n + k]
            if i >= 0:
                out[s * hw + i] += g[s * n + k]


# --------------------------------------------------------------------------
# average pooling


cdef _check_avg(str name, const Py_ssize_t[::1] hs, const Py_ssize_t[::1] he,
                const Py_ssize_t[::1] ws, const Py_ssize_t[::1] we,
                const double[:, ::1] scale, Py_ssize_t h, Py_ssize_t w):
    cdef Py_ssize_t k
    cdef Py_ssize_t oh = hs.shape[0], ow = ws.shape[0]
    if he.shape[0] != oh or we.shape[0] != ow:
        raise ValueError(f"{name}: window start and end lists differ in length")
    if scale.shape[0] != oh or scale.shape[1] != ow:
        raise ValueError(
            f"{name}: scale has shape ({scale.shape[0]}, {scale.shape[1]}), "
            f"expected ({oh}, {ow})"
        )
    for k in range(oh):
        if hs[k] < 0 or he[k] > h or hs[k] > he[k]:
            raise IndexError(f"{name}: row window [{hs[k]}, {he[k]}) outside [0, {h}]")
    for k in range(ow):
        if ws[k] < 0 or we[k] > w or ws[k] > we[k]:
            raise IndexError(f"{name}: column window [{ws[k]}, {we[k]}) outside "
                             f"[0, {w}]")


def avg_pool2d_fwd(
    const real_t[:, :, ::1] x,        # in  (B, H, W)
    const Py_ssize_t[::1] hs,         # in  (OH,) clipped window rows [hs, he)
    const Py_ssize_t[::1] he,         # in  (OH,)
    const Py_ssize_t[::1] ws,         # in  (OW,) clipped window columns
    const Py_ssize_t[::1] we,         # in  (OW,)
    const double[:, ::1] scale,       # in  (OH, OW) 1 / divisor
    real_t[:, :, ::1] out,            # out (B, OH, OW)
):
    """``out[b, o, p] = scale[o, p] * sum(x[b, hs[o]:he[o], ws[p]:we[p]])``."""
    cdef Py_ssize_t b = x.shape[0], h = x.shape[1], w = x.shape[2]
    cdef Py_ssize_t oh = hs.shape[0], ow = ws.shape[0]
    _check_avg("avg_pool2d_fwd", hs, he, ws, we, scale, h, w)
    _check_planes("avg_pool2d_fwd", b, oh, ow, out.shape[0], out.shape[1],
                  out.shape[2])
    if b == 0 or oh == 0 or ow == 0:
        return
    with nogil:
        _avg_pool2d(&x[0, 0, 0] if h * w > 0 else NULL, b, h, w, &hs[0], &he[0],
                    oh, &ws[0], &we[0], ow, &scale[0, 0], &out[0, 0, 0])


cdef void _avg_pool2d(const real_t* x, Py_ssize_t b, Py_ssize_t h, Py_ssize_t w,
                      const Py_ssize_t* hs, const Py_ssize_t* he, Py_ssize_t oh,
                      const Py_ssize_t* ws, const Py_ssize_t* we, Py_ssize_t ow,
                      const double* scale, real_t* out) noexcept nogil:
    cdef Py_ssize_t s, o, p, ih, iw, end
    cdef double a0, a1, a2, a3
    cdef const real_t* plane
    cdef const real_t* row
    for s in range(b):
        plane = x + s * h * w
        for o in range(oh):
            for p in range(ow):
                # four running sums in double (a window row's columns taken in
                # turn): one chain of dependent adds ran at a quarter of the
                # speed on a global pool's long windows
                a0 = a1 = a2 = a3 = 0.0
                end = we[p]
                for ih in range(hs[o], he[o]):
                    row = plane + ih * w
                    iw = ws[p]
                    while iw + 4 <= end:
                        a0 += row[iw]
                        a1 += row[iw + 1]
                        a2 += row[iw + 2]
                        a3 += row[iw + 3]
                        iw += 4
                    while iw < end:
                        a0 += row[iw]
                        iw += 1
                out[(s * oh + o) * ow + p] = <real_t>(((a0 + a1) + (a2 + a3))
                                                      * scale[o * ow + p])


def avg_pool2d_bwd(
    const real_t[:, :, ::1] g,        # in  (B, OH, OW)
    const Py_ssize_t[::1] hs,
    const Py_ssize_t[::1] he,
    const Py_ssize_t[::1] ws,
    const Py_ssize_t[::1] we,
    const double[:, ::1] scale,       # in  (OH, OW)
    real_t[:, :, ::1] out,            # out (B, H, W), overwritten
):
    """Adjoint of ``avg_pool2d_fwd``: every window gets ``scale * g`` added."""
    cdef Py_ssize_t b = out.shape[0], h = out.shape[1], w = out.shape[2]
    cdef Py_ssize_t oh = hs.shape[0], ow = ws.shape[0]
    _check_avg("avg_pool2d_bwd", hs, he, ws, we, scale, h, w)
    _check_planes("avg_pool2d_bwd", b, oh, ow, g.shape[0], g.shape[1], g.shape[2])
    if b == 0 or h == 0 or w == 0:
        return
    with nogil:
        memset(&out[0, 0, 0], 0, b * h * w * sizeof(real_t))
        if oh > 0 and ow > 0:
            _avg_pool2d_bwd(&g[0, 0, 0], b, h, w, &hs[0], &he[0], oh, &ws[0],
                            &we[0], ow, &scale[0, 0], &out[0, 0, 0])


cdef void _avg_pool2d_bwd(const real_t* g, Py_ssize_t b, Py_ssize_t h,
                          Py_ssize_t w, const Py_ssize_t* hs, const Py_ssize_t* he,
                          Py_ssize_t oh, const Py_ssize_t* ws, const Py_ssize_t* we,
                          Py_ssize_t ow, const double* scale,
                          real_t* out) noexcept nogil:
    cdef Py_ssize_t s, o, p, ih, iw
    cdef real_t v
    cdef real_t* plane
    for s in range(b):
        plane = out + s * h * w
        for o in range(oh):
            for p in range(ow):
                v = <real_t>(g[(s * oh + o) * ow + p] * scale[o * ow + p])
                for ih in range(hs[o], he[o]):
                    for iw in range(ws[p], we[p]):
                        plane[ih * w + iw] += v
