"""Recurrent layers as single autograd nodes: the time loop and BPTT.

One layer (both of its directions) is one ``Function``.  Its input is the
sequence flattened time-major to rows, ``(N, input)``, with ``batch_sizes``
giving how many rows each step has (a padded batch has ``B`` at every step;
a PackedSequence has non-increasing sizes, sequences sorted longest first).
Step ``t`` owns rows ``offsets[t] : offsets[t] + batch_sizes[t]``, and only
the first ``batch_sizes[t]`` rows of the state buffers take part in it: rows
past it keep their last value, so that when the loop ends the state buffer
holds each sequence's final state (forward direction) and, in the reverse
direction, a row joins the loop still holding its initial state.

Per direction and step the forward does one BLAS product ``h @ W_hh.T`` and
one fused kernel; the input products of all steps are one product
``x @ W_ih.T`` before the loop.  The backward walks the steps in the opposite
order with one product ``dgates @ W_hh`` and one fused kernel per step, and
forms the weight gradients after the loop as one product each over all steps
(``dgates.T @ x``, ``dgates.T @ h_prev``).  Both time loops are compiled
(``cygrad._kernels.rnn.seq_fwd`` / ``seq_bwd``): they call the BLAS that
NumPy loaded through its C entry point, with no Python between steps.

Double backward (``create_graph=True``) is not supported: the backward is
one compiled pass and raises a RuntimeError saying so.
"""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from cygrad._kernels import rnn as _k
from cygrad._kernels.engine import _wrap
from cygrad._kernels.reduce import add_bias as _add_bias
from cygrad.autograd.function import Function
from cygrad.autograd.grad_mode import is_grad_enabled
from cygrad.creation import from_numpy

from ._functional_dropout import scaled_keep

if TYPE_CHECKING:
    from cygrad._tensor import Tensor

__all__ = ["rnn_cell", "rnn_layer"]

# per mode: gates per hidden unit
_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}
_F32 = np.dtype(np.float32)
# An LSTM cell step whose products have at most this many multiply-adds per
# gate block (batch * hidden * (input + hidden)) runs as one compiled call
# (_k.lstm_cell) instead of two NumPy matmuls, two bias additions and the
# gate kernel: at batch 1, hidden 64 the calls cost more than the products.
_SMALL_CELL = 1 << 15


class _Spec:
    """What a layer call needs besides tensors (hashable-free, plain data)."""

    __slots__ = (
        "batch_sizes",
        "bias",
        "dirs",
        "hidden",
        "mode",
        "n_w",
        "offsets",
        "proj",
    )

    def __init__(self, mode, hidden, proj, dirs, bias, batch_sizes):
        self.mode = mode
        self.hidden = hidden
        self.proj = proj
        self.dirs = dirs
        self.bias = bias
        self.batch_sizes = [int(b) for b in batch_sizes]
        self.offsets = np.concatenate(([0], np.cumsum(self.batch_sizes)))
        self.offsets = [int(o) for o in self.offsets]
        self.n_w = 2 + 2 * bias + (proj > 0)

    def weights_of(self, weights, d):
        """``(w_ih, w_hh, b_ih, b_hh, w_hr)`` of direction ``d`` (None where absent)."""
        w = weights[d * self.n_w:(d + 1) * self.n_w]
        b_ih = b_hh = w_hr = None
        if self.bias:
            b_ih, b_hh = w[2], w[3]
        if self.proj:
            w_hr = w[-1]
        return w[0], w[1], b_ih, b_hh, w_hr


def _arr(t):
    return None if t is None else t._arr


# Work arrays of the time loop (the input products, gates, saved states,
# the backward's gate gradients) are a few MB per call; fresh ones are fresh
# pages, and the page faults cost as much as the step's gate kernels (char
# LSTM, batch 16 x 32 steps, hidden 128: ~1.5 ms of a 10 ms training step).
# Each thread keeps a few per shape and hands one out again once nothing
# refers to it (its reference count says so: a saved array lives as long as
# its graph, and a view holds its base), so a training loop reuses the last
# step's pages.  Arrays over _POOL_BYTES are not kept (their products
# dwarf the faults); too many shapes (varying lengths) start the pool over.
_POOL_BYTES = 16 << 20
_POOL_KEYS = 16
_POOL_PER_KEY = 4
_local = threading.local()


def _scratch(shape, dt):
    """An uninitialized C-contiguous ``shape`` array of ``dt``, reused when
    one of this thread's earlier ones is free."""
    pool = getattr(_local, "pool", None)
    if pool is None:
        pool = _local.pool = {}
    key = (shape, dt.char)
    lst = pool.get(key)
    if lst is None:
        if len(pool) >= _POOL_KEYS:
            pool.clear()
        lst = pool[key] = []
    for a in lst:
        # the list, the loop variable and getrefcount's argument
        if sys.getrefcount(a) == 3:
            return a
    a = np.empty(shape, dt)
    if len(lst) < _POOL_PER_KEY and a.nbytes <= _POOL_BYTES:
        lst.append(a)
    return a


# ---------------------------------------------------------------------------
# one direction, on arrays


def _forward_dir(spec, x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, reverse):
    """Run one direction; return ``(out, hn, cn, saved)`` (arrays).

    ``x`` (N, I); ``h0`` (B, Hout); ``c0`` (B, H) for LSTM.  ``out`` is
    (N, Hout), the output rows in ``x``'s order.
    """
    mode, hid = spec.mode, spec.hidden
    g = _GATES[mode]
    n, dt = x.shape[0], x.dtype
    bsz, offs = spec.batch_sizes, spec.offsets
    gi = np.matmul(x, w_ih.T, out=_scratch((n, g * hid), dt))
    if b_ih is not None:
        for b in (b_ih,) if mode == "GRU" else (b_ih, b_hh):
            if not _add_bias(gi, b):        # compiled row add; else NumPy's
                gi += b
    h = np.array(h0, dtype=dt, order="C")
    hout_w = h.shape[1]
    hprev = _scratch((n, hout_w), dt)
    gates = _scratch((n, g * hid), dt) if g > 1 else None
    saved = {"hprev": hprev, "gates": gates}
    if mode == "LSTM":
        c = np.array(c0, dtype=dt, order="C")
        cprev = _scratch((n, hid), dt)
        tc = _scratch((n, hid), dt)
        hraw = np.empty((n, hid), dt)
        out = np.empty((n, hout_w), dt) if w_hr is not None else hraw
        saved.update(cprev=cprev, tc=tc, hraw=hraw)
    else:
        c = None
        out = np.empty((n, hid), dt)
        if mode == "GRU":
            saved["hn"] = _scratch((n, hid), dt)
    saved["out"] = out
    # the time loop, compiled (rnn.seq_fwd): per step h @ W_hh.T through
    # NumPy's BLAS and the gate kernel, in place on these arrays
    contig = (lambda a: None if a is None else np.ascontiguousarray(a, dtype=dt))
    _k.seq_fwd(mode, bsz, offs, reverse, gi, h, c, contig(w_hh), contig(w_hr),
               contig(b_hh) if mode == "GRU" else None, hprev, gates,
               saved.get("cprev"), saved.get("tc"), saved.get("hraw"), out,
               saved.get("hn"))
    return out, h, c, saved


def _backward_dir(spec, x, saved, dy, dhn, dcn, w_ih, w_hh, w_hr, reverse, need):
    """BPTT of one direction.  ``dy`` (N, Hout), ``dhn`` (B, Hout), ``dcn``
    (B, H).  ``need``: (x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr) flags.
    Returns the gradients in that order (None where not needed)."""
    mode, hid = spec.mode, spec.hidden
    g = _GATES[mode]
    n, dt = x.shape[0], x.dtype
    bsz, offs = spec.batch_sizes, spec.offsets
    dh = np.array(dhn, dtype=dt, order="C")
    dg = _scratch((n, g * hid), dt)
    hprev = saved["hprev"]
    lstm, gru = mode == "LSTM", mode == "GRU"
    dc = np.array(dcn, dtype=dt, order="C") if lstm else None
    dr = _scratch((n, dh.shape[1]), dt) if lstm and w_hr is not None else None
    dgh = _scratch((n, g * hid), dt) if gru else dg
    # the time loop, compiled (rnn.seq_bwd): per step the gate kernel and the
    # product with W_hh through NumPy's BLAS, dh and dc updated in place
    contig = (lambda a: None if a is None else np.ascontiguousarray(a, dtype=dt))
    _k.seq_bwd(mode, bsz, offs, reverse, contig(dy), dh, dc, contig(w_hh),
               contig(w_hr) if lstm else None, hprev, saved["gates"],
               saved.get("cprev"), saved.get("tc"), saved.get("hn"),
               None if lstm or gru else saved["out"], dg, dgh if gru else None, dr)
    gx = np.matmul(dg, w_ih) if need[0] else None
    gh0 = dh if need[1] else None
    gc0 = dc if mode == "LSTM" and need[2] else None
    gw_ih = np.matmul(dg.T, x) if need[3] else None
    gw_hh = np.matmul(dgh.T, hprev) if need[4] else None
    gb_ih = dg.sum(0) if need[5] else None
    gb_hh = dgh.sum(0) if need[6] else None
    gw_hr = np.matmul(dr.T, saved["hraw"]) if lstm and need[7] else None
    return gx, gh0, gc0, gw_ih, gw_hh, gb_ih, gb_hh, gw_hr


# ---------------------------------------------------------------------------
# the layer Function


class _RNNLayer(Function):
    """One recurrent layer, all directions: ``(x, h0, c0, *weights) ->
    (out, hn, cn)``; ``x`` (N, I) rows time-major, ``h0`` (D, B, Hout),
    ``c0`` (D, B, H) or None, ``out`` (N, D * Hout)."""

    _node_name = "RNNLayerBackward"

    @staticmethod
    def forward(ctx, spec, x, h0, c0, *weights):
        xa = np.ascontiguousarray(x._arr)
        outs, hns, cns, saves = [], [], [], []
        for d in range(spec.dirs):
            w_ih, w_hh, b_ih, b_hh, w_hr = (_arr(w) for w in spec.weights_of(weights, d))
            out, hn, cn, saved = _forward_dir(
                spec, xa, h0._arr[d], None if c0 is None else c0._arr[d],
                w_ih, w_hh, b_ih, b_hh, w_hr, d == 1)
            outs.append(out)
            hns.append(hn)
            cns.append(cn)
            saves.append(saved)
        y = outs[0] if spec.dirs == 1 else np.concatenate(outs, axis=1)
        ctx.spec, ctx.saves, ctx.xa = spec, saves, xa
        ctx.save_for_backward(x, h0, c0, *weights)
        res = [from_numpy(y), from_numpy(np.stack(hns))]
        if spec.mode == "LSTM":
            res.append(from_numpy(np.stack(cns)))
        return tuple(res)

    @staticmethod
    def backward(ctx, grad_y, grad_hn, grad_cn=None):
        spec = ctx.spec
        x, h0, c0, *weights = ctx.saved_tensors
        needs = ctx.needs_input_grad
        if is_grad_enabled():
            raise RuntimeError(
                "double backward (create_graph=True) through an RNN/LSTM/GRU layer "
                "or cell is not supported by cygrad: its backward is one compiled "
                "BPTT pass")
        dt = ctx.xa.dtype
        gy = np.asarray(grad_y._arr, dtype=dt)
        hout = gy.shape[1] // spec.dirs
        gx = None
        gh0, gc0, gws = [], [], []
        nw = spec.n_w
        for d in range(spec.dirs):
            w_ih, w_hh, _, _, w_hr = (_arr(w) for w in spec.weights_of(weights, d))
            wn = needs[4 + d * nw:4 + (d + 1) * nw]
            flags = (needs[1], needs[2], needs[3], wn[0], wn[1],
                     spec.bias and wn[2], spec.bias and wn[3],
                     bool(spec.proj) and wn[-1])
            dy = np.ascontiguousarray(gy[:, d * hout:(d + 1) * hout])
            dcn = None if grad_cn is None else grad_cn._arr[d]
            r = _backward_dir(spec, ctx.xa, ctx.saves[d], dy, grad_hn._arr[d], dcn,
                              w_ih, w_hh, w_hr, d == 1, flags)
            if r[0] is not None:
                gx = r[0] if gx is None else gx + r[0]
            gh0.append(r[1])
            gc0.append(r[2])
            gws.extend(_pick(spec, r[3:]))
        gx = None if gx is None else from_numpy(gx.reshape(x._arr.shape))
        gh0 = from_numpy(np.stack(gh0)) if needs[2] else None
        gc0 = from_numpy(np.stack(gc0)) if needs[3] else None
        return (None, gx, gh0, gc0) + tuple(
            None if w is None else from_numpy(w) for w in gws)


def _pick(spec, r):
    """The weight gradients that exist for this layout, in weight order."""
    gw_ih, gw_hh, gb_ih, gb_hh, gw_hr = r
    out = [gw_ih, gw_hh]
    if spec.bias:
        out += [gb_ih, gb_hh]
    if spec.proj:
        out.append(gw_hr)
    return out


# ---------------------------------------------------------------------------
# entry points used by the modules


def dropout_mask(x: Tensor, p: float, training: bool) -> Tensor:
    """Inverted dropout between layers: ``x * keep / (1 - p)``, as
    ``F.dropout`` draws it."""
    if not training or p == 0:
        return x
    return x * from_numpy(scaled_keep(tuple(x.shape), p, x._arr.dtype))


def rnn_layer(mode: str, x: Tensor, h0: Any, c0: Any, weights: Any, hidden: Any,
              proj: Any, dirs: Any, bias: Tensor, batch_sizes: Any) -> Any:
    """Run one layer; ``x`` (N, I) rows time-major (see the module docstring).

    Returns ``(out (N, D * Hout), hn (D, B, Hout), cn (D, B, H) or None)``.
    """
    spec = _Spec(mode, hidden, proj, dirs, bias, batch_sizes)
    res = _RNNLayer.apply(spec, x, h0, c0, *weights)
    if mode == "LSTM":
        return res
    return res[0], res[1], None


class _Cell(Function):
    """One cell step on (B, I) / (B, H) arrays: ``h'`` or ``(h', c')``.

    The layer node with one step would do the same arithmetic; this one
    skips its bookkeeping (state stacking, per-direction slicing), which
    dominates at batch 1.
    """

    _node_name = "RNNCellBackward"

    @staticmethod
    def forward(ctx, mode, x, h, c, w_ih, w_hh, b_ih, b_hh):
        xa, ha = x._arr, h._arr
        wih, whh = w_ih._arr, w_hh._arr
        bs, hid = ha.shape
        dt = xa.dtype
        ctx.mode = mode
        ctx.arrs = (xa, ha)
        if (mode == "LSTM" and dt == _F32 and wih.dtype == _F32
                and bs * hid * (xa.shape[1] + hid) <= _SMALL_CELL):
            # one compiled call, products included (_k.lstm_cell); c is
            # read, not copied, and is the backward's cprev (saved below,
            # so an in-place change to it is caught)
            ca = c._arr
            bi = None if b_ih is None else b_ih._arr
            bh = None if b_hh is None else b_hh._arr
            try:
                out, cn, gates, tc = _k.lstm_cell(xa, ha, ca, wih, whh, bi, bh)
            except ValueError:
                # a non-contiguous operand (a view as input or state, or
                # assigned to the module): contiguous copies, the same call
                ca = np.ascontiguousarray(ca)
                out, cn, gates, tc = _k.lstm_cell(
                    *(None if a is None else np.ascontiguousarray(a)
                      for a in (xa, ha, ca, wih, whh, bi, bh)))
            ctx.state = (gates, ca, tc)
            ctx.save_for_backward(x, h, c, w_ih, w_hh)
            # fresh aligned float arrays: from_numpy's checks cannot fail
            return _wrap(out), _wrap(cn)
        ha = np.ascontiguousarray(ha)      # the GRU kernel reads it by rows
        ctx.arrs = (xa, ha)
        gi = np.matmul(xa, wih.T)
        if b_ih is not None:
            gi += b_ih._arr
            if mode != "GRU":
                gi += b_hh._arr
        gh = np.matmul(ha, whh.T)
        out = np.empty((bs, hid), dt)
        if mode == "LSTM":
            cn = np.array(c._arr, dtype=dt, order="C")
            gates = np.empty((bs, 4 * hid), dt)
            cprev = np.empty((bs, hid), dt)
            tc = np.empty((bs, hid), dt)
            _k.lstm_fwd(gi, gh, cn, gates, cprev, tc, out)
            ctx.state = (gates, cprev, tc)
            res = (from_numpy(out), from_numpy(cn))
        elif mode == "GRU":
            gates = np.empty((bs, 3 * hid), dt)
            hn = np.empty((bs, hid), dt)
            bhh = b_hh._arr if b_hh is not None else np.empty(0, dt)
            _k.gru_fwd(gi, gh, bhh, ha, gates, hn, out)
            ctx.state = (gates, hn)
            res = from_numpy(out)
        else:
            _k.rnn_fwd(gi, gh, out, mode == "RNN_RELU")
            ctx.state = (out,)
            res = from_numpy(out)
        ctx.save_for_backward(x, h, c, w_ih, w_hh)
        return res

    @staticmethod
    def backward(ctx, grad_h, grad_c=None):
        if is_grad_enabled():
            raise RuntimeError(
                "double backward (create_graph=True) through an RNN/LSTM/GRU layer "
                "or cell is not supported by cygrad: its backward is one compiled "
                "BPTT pass")
        x, h, c, w_ih, w_hh = ctx.saved_tensors
        needs = ctx.needs_input_grad
        mode = ctx.mode
        xa, ha = ctx.arrs
        dt = xa.dtype
        dh = np.array(grad_h._arr, dtype=dt, order="C")
        bs, hid = dh.shape
        gc = None
        if mode == "LSTM":
            gates, cprev, tc = ctx.state
            dc = np.array(grad_c._arr, dtype=dt, order="C")
            dg = np.empty((bs, 4 * hid), dt)
            _k.lstm_bwd(dh, dc, gates, cprev, tc, dg)
            dgh = dg
            gc = from_numpy(dc) if needs[3] else None
            dh_direct = None
        elif mode == "GRU":
            gates, hn = ctx.state
            dg = np.empty((bs, 3 * hid), dt)
            dgh = np.empty((bs, 3 * hid), dt)
            _k.gru_bwd(dh, gates, hn, ha, dg, dgh)
            dh_direct = dh
        else:
            (out,) = ctx.state
            dg = np.empty((bs, hid), dt)
            _k.rnn_bwd(dh, out, dg, mode == "RNN_RELU")
            dgh = dg
            dh_direct = None
        gx = from_numpy(np.matmul(dg, w_ih._arr)) if needs[1] else None
        gh = None
        if needs[2]:
            g = np.matmul(dgh, w_hh._arr)
            if dh_direct is not None:
                g += dh_direct
            gh = from_numpy(g)
        gwih = from_numpy(np.matmul(dg.T, xa)) if needs[4] else None
        gwhh = from_numpy(np.matmul(dgh.T, ha)) if needs[5] else None
        gbih = from_numpy(dg.sum(0)) if needs[6] else None
        gbhh = from_numpy(dgh.sum(0)) if needs[7] else None
        return None, gx, gh, gc, gwih, gwhh, gbih, gbhh


def lstm_cell_small(x: Any, h: Any, c: Any, w_ih: Any, w_hh: Any, b_ih: Any,
                    b_hh: Any) -> Any:
    """``(h', c')`` of a batched float32 LSTM cell step small enough for the
    one-call kernel, whose operand checks (float32, contiguous, every shape
    against the weights') are then the only ones; None when the step is not
    such a case or the kernel refuses an operand, so that the caller's
    checks name the problem.  At batch 1 the caller's checks cost 1.2 us of
    a 7.6 us step."""
    try:
        xa, ha = x._arr, h._arr
        c._arr
    except AttributeError:
        return None
    if (xa.ndim != 2 or ha.ndim != 2 or xa.dtype != _F32 or w_ih._arr.dtype != _F32
            or xa.shape[0] * ha.shape[1] * (xa.shape[1] + ha.shape[1]) > _SMALL_CELL):
        return None
    try:
        return _Cell.apply("LSTM", x, h, c, w_ih, w_hh, b_ih, b_hh)
    except ValueError:
        return None


def rnn_cell(mode: str, x: Tensor, h: Any, c: Any, w_ih: Any, w_hh: Any, b_ih: Any,
             b_hh: Any) -> Any:
    """One cell step on a batch ``x`` (B, I), ``h`` (B, H): ``h'`` or
    ``(h', c')`` (one autograd node)."""
    return _Cell.apply(mode, x, h, c, w_ih, w_hh, b_ih, b_hh)
