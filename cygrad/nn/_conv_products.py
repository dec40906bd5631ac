"""The BLAS products of the convolutions, shared by the 1-/2-d
(``_functional_conv``) and 3-d (``_conv3d_arrays``) array code.

Each takes the input lowered to columns (``im2col``/``vol2col``) in one of
two layouts: ``big`` (one batch matrix ``(K, N*L)``, for kernels with many
taps and one group) or the per-sample stack ``(N, G*K, L)``; the
``*_chunked`` products lower it themselves, a chunk of samples at a time,
through a callback.  ``K`` is the taps of one group (``C/G * kernel
volume``), ``L`` the output positions.
"""

import threading

import numpy as np

# Scratch buffers for patch matrices and their gradients (14 MB for the
# second layer of the MNIST CNN at batch 128, 28 MB for the Conv3d(16, 32, 3)
# case of issue 18).  A fresh np.empty that large is mmapped and
# page-faulted on every step (about 2 ms of a 30 ms MNIST step; in the 3-d
# case the input-gradient product into fresh pages took twice its forward's
# time, measured); buffers that a backward has finished with are kept, per
# thread, for the next call of the same shape.  Only arrays no one else can
# see are recycled: saved patch matrices (never returned) and temporaries.
_WS = threading.local()
_WS_KEEP = 4


def scratch(shape, dtype):
    """An uninitialised array of ``shape``: a recycled one when it fits."""
    pool = getattr(_WS, "pool", None)
    if pool:
        dtype = np.dtype(dtype)
        for i, a in enumerate(pool):
            if a.shape == shape and a.dtype == dtype:
                return pool.pop(i)
    return np.empty(shape, dtype=dtype)


def recycle(a):
    """Keep ``a`` (no longer read by anyone) for a later ``scratch``."""
    if a is None or not a.flags.owndata:  # a view may alias someone's data
        return
    pool = _WS.__dict__.setdefault("pool", [])
    pool.append(a)
    if len(pool) > _WS_KEEP:
        del pool[0]


def forward(cols, w, b, n, k, length, groups, big):
    """``y (N, O, L) = w (O, K) . cols + b``.  In the ``big`` layout one
    product over the batch, ``(O, K) @ (K, N*L)``, then the channels moved
    to the front in the copy that adds the bias.

    ``(O, K) @ (K, N*L)`` rather than ``(N*L, K) @ (K, O)``: 1.2-1.7x faster
    with its transposing copy included (measured, one thread, CPU time, AMD
    EPYC OpenBLAS Haswell kernels: Conv2d(32, 32, 3) on 16x32x32x32 5.2 vs
    8.8 ms, Conv1d(64, 64, 5) on 32x64x512 9.9 vs 14.0 ms; the (O, N, L) to
    (N, O, L) copy moves whole L-long rows)."""
    o = w.shape[0]
    if big:
        src = (w.reshape(o, k) @ cols.reshape(k, n * length)).reshape(
            o, n, length).transpose(1, 0, 2)
        y = np.empty((n, o, length), dtype=cols.dtype)
        if b is None:
            np.copyto(y, src)
        else:
            np.add(src, b.reshape(1, o, 1), out=y)
        return y
    if groups == 1:
        y = np.matmul(w.reshape(o, k), cols)
    else:
        y = np.matmul(
            w.reshape(groups, o // groups, k),
            cols.reshape(n, groups, k, length),
        ).reshape(n, o, length)
    if b is not None:
        y += b.reshape(1, o, 1)
    return y


# Lowered a chunk of samples at a time: the chunk's patch matrix (at most
# _CHUNK_BYTES, or one sample) is written by im2col and read by BLAS while
# it is still in cache, and the buffer is reused for the next chunk, instead
# of one (K, N*L) matrix for the whole batch (18 MB for Conv2d(32, 32, 3) on
# 16x32x32x32: written to memory, read back by each product, and kept from
# the forward to the weight gradient).  Re-lowering the input for the
# weight gradient costs less than keeping its patch matrix.  Measured on AMD
# Zen 2 (OpenBLAS Haswell kernels), one thread, that layer at 16x32x32x32,
# min of 15: forward 8.8 -> 6.0 ms, weight gradient 8.8 -> 5.8 ms.
_CHUNK_BYTES = 1 << 21


def chunk_size(n, k, length, itemsize):
    """Samples a chunk: as many as fit _CHUNK_BYTES of patch matrix, >= 1."""
    return max(1, min(n, _CHUNK_BYTES // max(1, k * length * itemsize)))


def forward_chunked(lower, w, b, n, k, length, dtype):
    """``y (N, O, L) = w (O, K) . cols + b`` where ``lower(s, m, out)`` writes
    the patch matrix of samples ``s .. s+m`` into ``out`` (K, m, L), one
    chunk at a time.  A chunk's product ``(O, K) @ (K, m*L)`` lands in ``y``
    directly for one sample, else through the (O, m, L) -> (m, O, L) copy
    that adds the bias."""
    o = w.shape[0]
    w2 = w.reshape(o, k)
    nb = chunk_size(n, k, length, np.dtype(dtype).itemsize)
    y = np.empty((n, o, length), dtype=dtype)
    buf = scratch((k * nb * length,), dtype)
    tmp = scratch((o * nb * length,), dtype) if nb > 1 else None
    for s in range(0, n, nb):
        m = min(nb, n - s)
        cols = buf[:k * m * length].reshape(k, m * length)
        lower(s, m, cols.reshape(k, m, length))
        if m == 1:
            np.matmul(w2, cols, out=y[s])
            if b is not None:
                np.add(y[s], b.reshape(o, 1), out=y[s])
            continue
        prod = np.matmul(w2, cols, out=tmp[:o * m * length].reshape(o, m * length))
        prod = prod.reshape(o, m, length).transpose(1, 0, 2)
        if b is None:
            np.copyto(y[s:s + m], prod)
        else:
            np.add(prod, b.reshape(1, o, 1), out=y[s:s + m])
    recycle(buf)
    recycle(tmp)
    return y


def weight_grad_chunked(lower, g, n, o, k, length):
    """``w' (O, K) = sum over the batch of g (O, L) . cols^T``, the patch
    matrices lowered a chunk at a time by ``lower`` (see
    ``forward_chunked``); ``g`` is the contiguous (N, O, L) output gradient.
    Each chunk is one product ``cols (K, m*L) @ g^T (m*L, O)`` (1.05-1.1x
    faster than ``g @ cols^T`` here), the chunks' results added in order."""
    nb = chunk_size(n, k, length, g.itemsize)
    g = g.reshape(n, o, length)
    buf = scratch((k * nb * length,), g.dtype)
    gt = scratch((o * nb * length,), g.dtype) if nb > 1 else None
    part = np.empty((k, o), dtype=g.dtype)
    acc = None
    for s in range(0, n, nb):
        m = min(nb, n - s)
        cols = buf[:k * m * length].reshape(k, m * length)
        lower(s, m, cols.reshape(k, m, length))
        acc = _add_product(acc, cols, _samples(g, s, m, gt), part)
    recycle(buf)
    recycle(gt)
    return acc.T


def _samples(g, s, m, gt):
    """Samples ``s .. s+m`` of ``g`` (N, O, L) as one (O, m*L) matrix: a view
    for one sample, else packed into the scratch ``gt``."""
    if m == 1:
        return g[s]
    _, o, length = g.shape
    gs = gt[:o * m * length].reshape(o, m, length)
    np.copyto(gs, g[s:s + m].transpose(1, 0, 2))
    return gs.reshape(o, m * length)


def _add_product(acc, cols, gs, part):
    """``acc + cols @ gs.T`` in place (the first chunk's product starts
    ``acc``; ``part`` holds the later ones)."""
    if acc is None:
        return np.matmul(cols, gs.T)
    np.matmul(cols, gs.T, out=part)
    acc += part
    return acc


def forward_weight_chunked(lower, w, g, n, k, length, dtype):
    """``forward_chunked`` (no bias) and ``weight_grad_chunked`` of the same
    patch matrices, each chunk lowered once for both products; returns
    ``(y (N, O, L), w' (O, K))``."""
    o = w.shape[0]
    w2 = w.reshape(o, k)
    nb = chunk_size(n, k, length, np.dtype(dtype).itemsize)
    g = g.reshape(n, o, length)
    y = np.empty((n, o, length), dtype=dtype)
    buf = scratch((k * nb * length,), dtype)
    tmp = scratch((o * nb * length,), dtype) if nb > 1 else None
    gt = scratch((o * nb * length,), dtype) if nb > 1 else None
    part = np.empty((k, o), dtype=dtype)
    acc = None
    for s in range(0, n, nb):
        m = min(nb, n - s)
        cols = buf[:k * m * length].reshape(k, m * length)
        lower(s, m, cols.reshape(k, m, length))
        if m == 1:
            np.matmul(w2, cols, out=y[s])
        else:
            prod = np.matmul(w2, cols, out=tmp[:o * m * length].reshape(o, m * length))
            np.copyto(y[s:s + m], prod.reshape(o, m, length).transpose(1, 0, 2))
        acc = _add_product(acc, cols, _samples(g, s, m, gt), part)
    recycle(buf)
    recycle(tmp)
    recycle(gt)
    return y, acc.T


def input_grad_cols(g, w, n, k, length, groups, out):
    """The columns of the input gradient, ``w^T . g``, written into ``out``
    (N, G*K, L) for col2im/col2vol; ``g`` is the contiguous output gradient."""
    o = w.shape[0]
    if groups == 1:
        np.matmul(w.reshape(o, k).T, g.reshape(n, o, length), out=out)
    else:
        wt = w.reshape(groups, o // groups, k).transpose(0, 2, 1)
        np.matmul(wt, g.reshape(n, groups, o // groups, length),
                  out=out.reshape(n, groups, k, length))
    return out


def weight_grad(cols, g, n, o, k, groups, big):
    """``w' = sum over the batch of g (O, L) . cols^T``, as (O, K) or
    (G, O/G, K); ``g`` is the contiguous output gradient."""
    if big:
        # (O, N*L) @ (N*L, K): the output gradient copied to (O, N, L) (whole
        # L-long rows; 1.1-1.2x faster than the channels-last (N*L, O) copy
        # and its transposed product, measured as in ``forward``)
        g_t = np.ascontiguousarray(g.reshape(n, o, -1).transpose(1, 0, 2))
        return g_t.reshape(o, -1) @ cols.reshape(k, -1).T
    if groups == 1:
        return np.matmul(g.reshape(n, o, -1), cols.transpose(0, 2, 1)).sum(axis=0)
    return np.matmul(
        g.reshape(n, groups, o // groups, -1),
        cols.reshape(n, groups, k, -1).transpose(0, 1, 3, 2),
    ).sum(axis=0)
