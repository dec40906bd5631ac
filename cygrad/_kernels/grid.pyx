"""``grid_sample``: sampling (N, C, D*H*W) volumes at grid points, and its
gradients for the input and the grid.

Layout: the input is ``x`` of shape ``(N, C, S)`` with ``S = D * H * W``
C-contiguous (2-d sampling is ``D = 1``); the grid is ``(N, P, nd)`` with
``nd`` 2 or 3, its last axis ``(x, y[, z])`` in ``[-1, 1]`` across the
width, height and depth; the output is ``(N, C, P)``.  Dtypes ``real_t``
(the input and the grid share one); coordinates, weights and sums in double.

Per grid point and axis, ``_axis`` turns the coordinate into at most four
taps: an index into the axis (-1 when the tap falls outside, so the value
there is zero), a weight, and the weight's derivative with respect to the
grid coordinate.  ``mode``: 0 bilinear (two taps, weights ``1 - t`` and
``t``), 1 nearest (one tap, round half to even, as ``nearbyint``), 2 bicubic
(four taps, cubic convolution with ``A = -0.75``, 2-d only).  A float32
grid's source coordinate is rounded in float32 first, as torch's
vectorised kernels (AVX2, AVX-512) compute it, so a point on a pixel centre
falls on torch's side of it.
``padding``: 0 zeros, 1 border (clip to the axis), 2 reflection (reflect
about the edges, by the corner centres when ``align_corners`` and the outer
edges otherwise, then clip).  For bilinear and nearest the padding maps the
source coordinate before the taps are formed; for bicubic it maps each of
the four integer taps.  A clipped coordinate has derivative 0, a reflected
one +-1; kinks take the derivative of the side ``floor`` picks, as torch.

The taps are checked against the axis in double before any index is formed,
so NaN, infinite or huge grid values only give taps outside (zero); the
loops then read and write only checked offsets.  ``grid_fwd`` and
``grid_bwd`` are compiled because the composite (per-tap gathers and
scatter-adds as separate array ops) allocates a ``(N, C, P)`` temporary per
tap, 4-64 of them.  ``grid_bwd`` adds into ``gx`` point by point (points may
share taps), so it runs on one thread; ``grid_fwd`` likewise, for a single
code path.  ``grid_axes`` exports the taps for the differentiable form that
``create_graph=True`` needs (``cygrad/nn/_functional_grid.py``).
Outputs must not alias inputs.
"""

from libc.math cimport fabs, floor, fmaf, fmod, nearbyint
from libc.string cimport memset

from cygrad._kernels._types cimport real_t


cdef struct _Axis:
    Py_ssize_t i[4]     # tap index on the axis, -1 when outside
    double w[4]         # tap weight
    double dw[4]        # d weight / d grid coordinate
    int k               # number of taps


cdef inline Py_ssize_t _index(double f, Py_ssize_t size) noexcept nogil:
    # f is integral (or NaN); compared as double, so no cast of NaN or inf
    if f >= 0.0 and f < <double>size:
        return <Py_ssize_t>f
    return -1


cdef inline double _clip(double s, Py_ssize_t size, double* m) noexcept nogil:
    cdef double top = <double>(size - 1)
    if s <= 0.0:
        m[0] = 0.0
        return 0.0
    if s >= top:
        m[0] = 0.0
        return top
    if s != s:          # NaN stays NaN (its taps fall outside)
        m[0] = 0.0
    return s


cdef inline double _reflect(double s, double twice_low, double twice_high,
                            double* m) noexcept nogil:
    cdef double low, span, extra, flips
    if twice_low == twice_high:
        m[0] = 0.0
        return 0.0
    low = twice_low / 2.0
    span = (twice_high - twice_low) / 2.0
    s = s - low
    if s < 0.0:
        m[0] = -m[0]
        s = -s
    extra = fmod(s, span)
    flips = floor(s / span)
    if fmod(flips, 2.0) == 0.0:
        return extra + low
    m[0] = -m[0]
    return span - extra + low


cdef inline double _pad(double s, Py_ssize_t size, int padding, bint align,
                        double* m) noexcept nogil:
    # maps a source coordinate into the axis; m is multiplied by d(out)/d(s)
    if padding == 1:
        return _clip(s, size, m)
    if padding == 2:
        if align:
            s = _reflect(s, 0.0, 2.0 * (size - 1), m)
        else:
            s = _reflect(s, -1.0, 2.0 * size - 1.0, m)
        return _clip(s, size, m)
    return s


cdef inline void _cubic(double t, double* w, double* dw) noexcept nogil:
    # cubic convolution weights of the taps at -1, 0, 1, 2 from the floor,
    # and their derivatives in t; A = -0.75 (Keys)
    cdef double a = -0.75
    cdef double u
    u = t + 1.0
    w[0] = ((a * u - 5.0 * a) * u + 8.0 * a) * u - 4.0 * a
    dw[0] = (3.0 * a * u - 10.0 * a) * u + 8.0 * a
    w[1] = ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0
    dw[1] = (3.0 * (a + 2.0) * t - 2.0 * (a + 3.0)) * t
    u = 1.0 - t
    w[2] = ((a + 2.0) * u - (a + 3.0)) * u * u + 1.0
    dw[2] = -(3.0 * (a + 2.0) * u - 2.0 * (a + 3.0)) * u
    u = 2.0 - t
    w[3] = ((a * u - 5.0 * a) * u + 8.0 * a) * u - 4.0 * a
    dw[3] = -((3.0 * a * u - 10.0 * a) * u + 8.0 * a)


cdef inline double _source_f(float coord, Py_ssize_t size, bint align) noexcept nogil:
    # The source coordinate of a float32 grid point, rounded as torch's
    # float32 kernels round it: on an identity grid the points sit on pixel
    # centres, and which side of one they land on (floor) picks the cell
    # whose slope is the grid's gradient there.
    # (torch's vectorised kernel computes (c + 1) * scale - 0.5 with one
    # fused multiply-add)
    cdef float one = 1.0, half = 0.5, two = 2.0
    if align:
        return (coord + one) * (<float>(size - 1) / two)
    return fmaf(coord + one, <float>size / two, -half)


cdef void _axis(double coord, Py_ssize_t size, int mode, int padding, bint align,
                bint single, _Axis* ax) noexcept nogil:
    cdef double m, s, f, t, unused
    cdef int j
    if align:
        m = (size - 1) / 2.0
        s = (coord + 1.0) * m
    else:
        m = size / 2.0
        s = ((coord + 1.0) * size - 1.0) / 2.0
    if single:
        s = _source_f(<float>coord, size, align)
    if mode == 2:
        f = floor(s)
        t = s - f
        _cubic(t, ax.w, ax.dw)
        ax.k = 4
        for j in range(4):
            ax.dw[j] *= m
            unused = 1.0
            ax.i[j] = _index(_pad(f - 1.0 + j, size, padding, align, &unused), size)
        return
    s = _pad(s, size, padding, align, &m)
    if mode == 1:
        ax.k = 1
        ax.i[0] = _index(nearbyint(s), size)
        ax.w[0] = 1.0
        ax.dw[0] = 0.0
        return
    f = floor(s)
    t = s - f
    ax.k = 2
    ax.i[0] = _index(f, size)
    ax.i[1] = _index(f + 1.0, size)
    ax.w[0] = 1.0 - t
    ax.w[1] = t
    ax.dw[0] = -m
    ax.dw[1] = m


cdef inline void _point_axes(const real_t* pt, Py_ssize_t nd, Py_ssize_t d,
                             Py_ssize_t h, Py_ssize_t w, int mode, int padding,
                             bint align, _Axis* ax) noexcept nogil:
    # ax[0] width, ax[1] height, ax[2] depth (one unit tap in 2-d)
    cdef bint single = False
    if real_t is float:
        single = True
    _axis(pt[0], w, mode, padding, align, single, &ax[0])
    _axis(pt[1], h, mode, padding, align, single, &ax[1])
    if nd == 3:
        _axis(pt[2], d, mode, padding, align, single, &ax[2])
    else:
        ax[2].k = 1
        ax[2].i[0] = 0
        ax[2].w[0] = 1.0
        ax[2].dw[0] = 0.0


cdef int _taps(const _Axis* ax, Py_ssize_t h, Py_ssize_t w, Py_ssize_t* off,
               double* wt, double* gw) noexcept nogil:
    # the inside taps of one point: flat offsets, weights and the weights'
    # derivatives along x, y, z (gw[3 * n + a]); returns how many
    cdef int a, b, c, n = 0
    for c in range(ax[2].k):
        if ax[2].i[c] < 0:
            continue
        for b in range(ax[1].k):
            if ax[1].i[b] < 0:
                continue
            for a in range(ax[0].k):
                if ax[0].i[a] < 0:
                    continue
                off[n] = (ax[2].i[c] * h + ax[1].i[b]) * w + ax[0].i[a]
                wt[n] = ax[2].w[c] * ax[1].w[b] * ax[0].w[a]
                gw[3 * n] = ax[2].w[c] * ax[1].w[b] * ax[0].dw[a]
                gw[3 * n + 1] = ax[2].w[c] * ax[1].dw[b] * ax[0].w[a]
                gw[3 * n + 2] = ax[2].dw[c] * ax[1].w[b] * ax[0].w[a]
                n += 1
    return n


cdef _check(str name, tuple xs, tuple grid, Py_ssize_t d, Py_ssize_t h, Py_ssize_t w,
            int mode, int padding):
    n, c, s = xs
    if grid[0] != n or grid[2] not in (2, 3):
        raise ValueError(f"{name}: grid of shape {grid} for input of shape {xs}")
    if d < 1 or h < 1 or w < 1 or d * h * w != s or (grid[2] == 2 and d != 1):
        raise ValueError(f"{name}: spatial size ({d}, {h}, {w}) does not match {xs}")
    if mode not in (0, 1, 2) or padding not in (0, 1, 2):
        raise ValueError(f"{name}: mode {mode} or padding {padding} unknown")
    if mode == 2 and grid[2] != 2:
        raise ValueError(f"{name}: bicubic sampling is 2-d only")


def grid_fwd(
    const real_t[:, :, ::1] x,      # in  (N, C, S)
    const real_t[:, :, ::1] grid,   # in  (N, P, nd)
    Py_ssize_t d, Py_ssize_t h, Py_ssize_t w, int mode, int padding, bint align,
    real_t[:, :, ::1] out,          # out (N, C, P)
):
    """Sample every channel of ``x`` at the grid points (see module doc)."""
    cdef tuple xs = (x.shape[0], x.shape[1], x.shape[2])
    cdef tuple gs = (grid.shape[0], grid.shape[1], grid.shape[2])
    _check("grid_fwd", xs, gs, d, h, w, mode, padding)
    if out.shape[0] != xs[0] or out.shape[1] != xs[1] or out.shape[2] != gs[1]:
        raise ValueError(f"grid_fwd: out has shape ({out.shape[0]}, {out.shape[1]}, "
                         f"{out.shape[2]}), expected ({xs[0]}, {xs[1]}, {gs[1]})")
    if out.shape[0] == 0 or out.shape[1] == 0 or out.shape[2] == 0:
        return
    with nogil:
        _grid(&x[0, 0, 0], &grid[0, 0, 0], x.shape[0], x.shape[1], x.shape[2],
              grid.shape[1], grid.shape[2], d, h, w, mode, padding, align,
              &out[0, 0, 0], NULL, NULL, NULL)


def grid_bwd(
    const real_t[:, :, ::1] g,      # in  (N, C, P)
    const real_t[:, :, ::1] x,      # in  (N, C, S)
    const real_t[:, :, ::1] grid,   # in  (N, P, nd)
    Py_ssize_t d, Py_ssize_t h, Py_ssize_t w, int mode, int padding, bint align,
    real_t[:, :, ::1] gx,           # out (N, C, S), overwritten; or None
    real_t[:, :, ::1] ggrid,        # out (N, P, nd), overwritten; or None
):
    """The gradients of ``grid_fwd`` for ``x`` and the grid, given ``g``."""
    cdef tuple xs = (x.shape[0], x.shape[1], x.shape[2])
    cdef tuple gs = (grid.shape[0], grid.shape[1], grid.shape[2])
    cdef real_t* gx_p = NULL
    cdef real_t* gg_p = NULL
    cdef Py_ssize_t nb = x.shape[0], nc = x.shape[1], ns = x.shape[2]
    cdef Py_ssize_t npt = grid.shape[1], nd = grid.shape[2]
    _check("grid_bwd", xs, gs, d, h, w, mode, padding)
    if g.shape[0] != xs[0] or g.shape[1] != xs[1] or g.shape[2] != gs[1]:
        raise ValueError(f"grid_bwd: g has shape ({g.shape[0]}, {g.shape[1]}, "
                         f"{g.shape[2]}), expected ({xs[0]}, {xs[1]}, {gs[1]})")
    if gx is not None and (gx.shape[0], gx.shape[1], gx.shape[2]) != xs:
        raise ValueError(f"grid_bwd: gx must have the shape {xs} of x")
    if ggrid is not None and (ggrid.shape[0], ggrid.shape[1], ggrid.shape[2]) != gs:
        raise ValueError(f"grid_bwd: ggrid must have the shape {gs} of the grid")
    if xs[0] == 0:
        return
    with nogil:
        if gx is not None and nc > 0:
            gx_p = &gx[0, 0, 0]
            memset(gx_p, 0, nb * nc * ns * sizeof(real_t))
        if ggrid is not None and npt > 0:
            gg_p = &ggrid[0, 0, 0]
            memset(gg_p, 0, nb * npt * nd * sizeof(real_t))
        if npt > 0 and nc > 0 and (gx_p != NULL or gg_p != NULL):
            _grid(&x[0, 0, 0], &grid[0, 0, 0], x.shape[0], x.shape[1], x.shape[2],
                  grid.shape[1], grid.shape[2], d, h, w, mode, padding, align,
                  NULL, &g[0, 0, 0], gx_p, gg_p)


cdef void _grid(const real_t* x, const real_t* grid, Py_ssize_t n, Py_ssize_t c,
                Py_ssize_t s, Py_ssize_t p, Py_ssize_t nd, Py_ssize_t d,
                Py_ssize_t h, Py_ssize_t w, int mode, int padding, bint align,
                real_t* out, const real_t* g, real_t* gx,
                real_t* ggrid) noexcept nogil:
    # out != NULL: the forward; otherwise the backward from g into gx and/or
    # ggrid (either may be NULL)
    cdef _Axis ax[3]
    cdef Py_ssize_t off[64]
    cdef double wt[64]
    cdef double gw[192]
    cdef double acc, gv, v, sx, sy, sz
    cdef Py_ssize_t b, q, ch, base, k
    cdef int ntap, j
    for b in range(n):
        for q in range(p):
            _point_axes(grid + (b * p + q) * nd, nd, d, h, w, mode, padding, align,
                        ax)
            ntap = _taps(ax, h, w, off, wt, gw)
            if out != NULL:
                for ch in range(c):
                    base = (b * c + ch) * s
                    acc = 0.0
                    for j in range(ntap):
                        acc += wt[j] * x[base + off[j]]
                    out[(b * c + ch) * p + q] = <real_t>acc
                continue
            sx = sy = sz = 0.0
            for ch in range(c):
                base = (b * c + ch) * s
                gv = g[(b * c + ch) * p + q]
                for j in range(ntap):
                    if gx != NULL:
                        gx[base + off[j]] += <real_t>(gv * wt[j])
                    if ggrid != NULL:
                        v = gv * x[base + off[j]]
                        sx += v * gw[3 * j]
                        sy += v * gw[3 * j + 1]
                        sz += v * gw[3 * j + 2]
            if ggrid != NULL:
                k = (b * p + q) * nd
                ggrid[k] = <real_t>sx
                ggrid[k + 1] = <real_t>sy
                if nd == 3:
                    ggrid[k + 2] = <real_t>sz


def grid_axes(
    const real_t[:, :, ::1] grid,   # in  (N, P, nd)
    Py_ssize_t d, Py_ssize_t h, Py_ssize_t w, int mode, int padding, bint align,
    Py_ssize_t[:, :, :, ::1] idx,   # out (N, P, nd, 4): tap index, -1 outside
    double[:, :, :, ::1] wt,        # out (N, P, nd, 4): weight (0 for no tap)
    double[:, :, :, ::1] dwt,       # out (N, P, nd, 4): d weight / d coordinate
):
    """Each grid point's taps per axis (x, y[, z]), as the loops use them."""
    cdef Py_ssize_t n = grid.shape[0], p = grid.shape[1], nd = grid.shape[2]
    cdef Py_ssize_t b, q, a
    cdef int j
    cdef _Axis ax[3]
    _check("grid_axes", (n, 1, d * h * w), (n, p, nd), d, h, w, mode, padding)
    if ((idx.shape[0], idx.shape[1], idx.shape[2], idx.shape[3]) != (n, p, nd, 4)
            or (wt.shape[0], wt.shape[1], wt.shape[2], wt.shape[3]) != (n, p, nd, 4)
            or (dwt.shape[0], dwt.shape[1], dwt.shape[2], dwt.shape[3])
            != (n, p, nd, 4)):
        raise ValueError(f"grid_axes: outputs must have shape {(n, p, nd, 4)}")
    if n == 0 or p == 0:
        return
    with nogil:
        for b in range(n):
            for q in range(p):
                _point_axes(&grid[b, q, 0], nd, d, h, w, mode, padding, align, ax)
                for a in range(nd):
                    for j in range(4):
                        if j < ax[a].k:
                            idx[b, q, a, j] = ax[a].i[j]
                            wt[b, q, a, j] = ax[a].w[j]
                            dwt[b, q, a, j] = ax[a].dw[j]
                        else:
                            idx[b, q, a, j] = -1
                            wt[b, q, a, j] = 0.0
                            dwt[b, q, a, j] = 0.0
