"""Recurrent layers ``RNN``, ``LSTM``, ``GRU`` and the cells ``RNNCell``,
``LSTMCell``, ``GRUCell``, with torch's parameter names, shapes and
initialisation, so state dicts load both ways.

Each layer runs as one autograd node on the fused step kernels
(``cygrad.nn._functional_rnn``); the cells are the same node with one step.
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from cygrad._device import check_device
from cygrad._tensor import Tensor
from cygrad.creation import empty, get_default_dtype, zeros
from cygrad.ops.shape import cat

from .. import init
from .._functional_rnn import dropout_mask, lstm_cell_small, rnn_cell, rnn_layer
from ..module import Module
from ..parameter import Parameter
from ..utils.rnn import PackedSequence

if TYPE_CHECKING:
    from cygrad._typing import Device, DType

__all__ = [
    "GRU",
    "LSTM",
    "RNN",
    "GRUCell",
    "LSTMCell",
    "RNNBase",
    "RNNCell",
    "RNNCellBase",
]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _tdt(dt):
    return f"torch.{np.dtype(dt)}"


def _shape(t):
    return "[" + ", ".join(str(int(s)) for s in t.shape) + "]"


class RNNBase(Module):
    """The common part of ``RNN``, ``LSTM`` and ``GRU`` (see those).

    Parameters of layer ``k`` (``_reverse`` for the second direction):
    ``weight_ih_l{k}`` (G*H, I or D*Hout), ``weight_hh_l{k}`` (G*H, Hout),
    ``bias_ih_l{k}``, ``bias_hh_l{k}`` (G*H,), and with ``proj_size``
    ``weight_hr_l{k}`` (proj_size, H); G is 1, 4, 3 gates for RNN, LSTM,
    GRU and ``Hout = proj_size or H``.  All from ``U(-1/sqrt(H), 1/sqrt(H))``.
    """

    def __init__(self, mode: str, input_size: int, hidden_size: int,
                 num_layers: int = 1, bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device: Device | None = None, dtype: DType | None = None) -> None:
        super().__init__()
        check_device(device)
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        if (not isinstance(dropout, numbers.Number) or isinstance(dropout, bool)
                or not 0 <= dropout <= 1):
            raise ValueError(
                "dropout should be a number in range [0, 1] representing the "
                "probability of an element being zeroed")
        if not isinstance(hidden_size, int) or isinstance(hidden_size, bool):
            raise TypeError(
                f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError(
                "proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError(
                "proj_size argument is only supported for LSTM, not RNN or GRU")
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so "
                "non-zero dropout expects num_layers greater than 1, but got "
                f"dropout={dropout} and num_layers={num_layers}", UserWarning,
                stacklevel=2)
        self.mode = mode
        self.input_size = int(input_size)
        self.hidden_size = hidden_size
        self.num_layers = int(num_layers)
        self.bias = bool(bias)
        self.batch_first = bool(batch_first)
        self.dropout = float(dropout)
        self.bidirectional = bool(bidirectional)
        self.proj_size = int(proj_size)
        dtype = np.dtype(get_default_dtype() if dtype is None else dtype)
        dirs = 2 if bidirectional else 1
        gates = _GATES[mode] * hidden_size
        hout = proj_size or hidden_size
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(self.num_layers):
            for d in range(dirs):
                in_size = self.input_size if layer == 0 else hout * dirs
                sfx = "_reverse" if d == 1 else ""
                shapes = [("weight_ih", (gates, in_size)), ("weight_hh", (gates, hout))]
                if self.bias:
                    shapes += [("bias_ih", (gates,)), ("bias_hh", (gates,))]
                if proj_size:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                names = []
                for base, shape in shapes:
                    name = f"{base}_l{layer}{sfx}"
                    setattr(self, name, Parameter(empty(*shape, dtype=dtype)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every parameter from ``U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``."""
        stdv = 1.0 / math.sqrt(self.hidden_size)
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def flatten_parameters(self) -> None:
        """A no-op (torch compacts cuDNN weights here; cygrad has no cuDNN)."""

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # -- forward ----------------------------------------------------------

    def _name(self):
        return "RNN" if self.mode.startswith("RNN") else self.mode

    def _hidden_shapes(self, batch):
        dirs = 2 if self.bidirectional else 1
        n = self.num_layers * dirs
        h = (n, batch, self.proj_size or self.hidden_size)
        return h, (n, batch, self.hidden_size)

    def _check_hidden(self, hx, expected, what):
        if tuple(hx.shape) != expected:
            raise RuntimeError(
                f"Expected {what} size {tuple(expected)}, got {_shape(hx)}")

    def _check_dtype(self, t):
        wdt = self.weight_ih_l0._arr.dtype
        if t._arr.dtype != wdt:
            raise ValueError(
                f"RNN input dtype ({_tdt(t._arr.dtype)}) does not match weight dtype "
                f"({_tdt(wdt)}). Convert input: input.to({_tdt(wdt)}), or convert "
                f"model: model.to({_tdt(t._arr.dtype)})")

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Any:
        lstm = self.mode == "LSTM"
        packed = isinstance(input, PackedSequence)
        if packed:
            data, batch_sizes, sorted_idx, unsorted_idx = input
            bsz = [int(b) for b in batch_sizes._arr]
            batch = bsz[0] if bsz else 0
            batched = True
            x2d = data
            if data.dim() != 2:
                raise ValueError(
                    f"{self._name()}: Expected packed data to be 2D, got "
                    f"{data.dim()}D instead")
        else:
            sorted_idx = unsorted_idx = None
            if input.dim() not in (2, 3):
                raise ValueError(
                    f"{self._name()}: Expected input to be 2D or 3D, got "
                    f"{input.dim()}D instead")
            batched = input.dim() == 3
        x_in = x2d if packed else input
        if x_in.shape[-1] != self.input_size:
            raise RuntimeError(
                f"input.size(-1) must be equal to input_size. Expected "
                f"{self.input_size}, got {x_in.shape[-1]}")
        self._check_dtype(x_in)
        if not packed:
            if not batched:
                input = input.unsqueeze(1)
            elif self.batch_first:
                input = input.transpose(0, 1)
            steps, batch = int(input.shape[0]), int(input.shape[1])
            x2d = input.reshape(steps * batch, self.input_size)
            bsz = [batch] * steps
        h0, c0 = self._initial_state(hx, batch, batched, lstm, x_in)
        if sorted_idx is not None:
            h0 = h0[:, sorted_idx]
            if c0 is not None:
                c0 = c0[:, sorted_idx]
        dirs = 2 if self.bidirectional else 1
        hns, cns = [], []
        layer_in = x2d
        for layer in range(self.num_layers):
            names = [n for d in range(dirs) for n in self._all_weights[layer * dirs + d]]
            weights = [getattr(self, n) for n in names]
            sl = slice(layer * dirs, (layer + 1) * dirs)
            out, hn, cn = rnn_layer(
                self.mode, layer_in, h0[sl], None if c0 is None else c0[sl], weights,
                self.hidden_size, self.proj_size, dirs, self.bias, bsz)
            hns.append(hn)
            cns.append(cn)
            if layer < self.num_layers - 1:
                out = dropout_mask(out, self.dropout, self.training)
            layer_in = out
        hn = hns[0] if len(hns) == 1 else cat(hns, 0)
        cn = None
        if lstm:
            cn = cns[0] if len(cns) == 1 else cat(cns, 0)
        if unsorted_idx is not None:
            hn = hn[:, unsorted_idx]
            if cn is not None:
                cn = cn[:, unsorted_idx]
        if packed:
            output = PackedSequence(layer_in, batch_sizes, sorted_idx, unsorted_idx)
        else:
            output = layer_in.reshape(steps, batch, layer_in.shape[1])
            if not batched:
                output = output.squeeze(1)
                hn = hn.squeeze(1)
                cn = None if cn is None else cn.squeeze(1)
            elif self.batch_first:
                output = output.transpose(0, 1)
        return (output, (hn, cn)) if lstm else (output, hn)

    def _initial_state(self, hx, batch, batched, lstm, x):
        hshape, cshape = self._hidden_shapes(batch)
        if hx is None:
            h0 = zeros(*hshape, dtype=x._arr.dtype)
            c0 = zeros(*cshape, dtype=x._arr.dtype) if lstm else None
            return h0, c0
        if lstm:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise TypeError("LSTM: hx must be a tuple (h_0, c_0) of tensors")
            h0, c0 = hx
            want = 3 if batched else 2
            if h0.dim() != want or c0.dim() != want:
                kind = "batched 3-D" if batched else "unbatched 2-D"
                raise RuntimeError(
                    f"For {kind} input, hx and cx should also be {want}-D but got "
                    f"({h0.dim()}-D, {c0.dim()}-D) tensors")
        else:
            if not isinstance(hx, Tensor):
                raise TypeError(f"{self._name()}: hx must be a Tensor")
            h0, c0 = hx, None
            want = 3 if batched else 2
            if h0.dim() != want:
                kind = "batched 3-D" if batched else "unbatched 2-D"
                raise RuntimeError(
                    f"For {kind} input, hx should also be {want}-D but got "
                    f"{h0.dim()}-D tensor")
        if not batched:
            h0 = h0.unsqueeze(1)
            c0 = None if c0 is None else c0.unsqueeze(1)
        self._check_hidden(h0, hshape, "hidden[0]" if lstm else "hidden")
        if lstm:
            self._check_hidden(c0, cshape, "hidden[1]")
        for t in (h0, c0):
            if t is not None and t._arr.dtype != x._arr.dtype:
                raise RuntimeError(
                    f"Expected hidden state of dtype {_tdt(x._arr.dtype)}, got "
                    f"{_tdt(t._arr.dtype)} (input and hidden states must agree)")
        return h0, c0


class RNN(RNNBase):
    """Elman RNN: ``h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)``.

    Parameters
    ----------
    input_size, hidden_size : int
    num_layers : int, default 1
    nonlinearity : "tanh" or "relu"
    bias : bool, default True
    batch_first : bool, default False
        Input and output ``(B, T, *)`` instead of ``(T, B, *)`` (not the states).
    dropout : float, default 0
        Dropout on each layer's output but the last, in training mode.
    bidirectional : bool, default False
    device, dtype

    ``forward(input, hx=None) -> (output, h_n)``: ``input`` (T, B, I), (T, I)
    unbatched, or a PackedSequence; ``hx`` (L*D, B, H); ``output``
    (T, B, D*H); ``h_n`` (L*D, B, H).
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, device: Device | None = None,
                 dtype: DType | None = None, *, proj_size: int = 0) -> None:
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(
                f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__(mode, input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, device, dtype)


class LSTM(RNNBase):
    """Long short-term memory, gates ``[i | f | g | o]`` as torch.

    ``c_t = f c_{t-1} + i g``, ``h_t = o tanh(c_t)`` (then ``h_t W_hr^T`` with
    ``proj_size``).  Parameters as :class:`RNN`, plus ``proj_size`` (0: none).
    ``forward(input, (h_0, c_0)=None) -> (output, (h_n, c_n))``; ``h`` has
    ``proj_size or hidden_size`` features, ``c`` has ``hidden_size``.
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0,
                 device: Device | None = None, dtype: DType | None = None) -> None:
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias,
                         batch_first, dropout, bidirectional, proj_size, device, dtype)


class GRU(RNNBase):
    """Gated recurrent unit, gates ``[r | z | n]`` as torch:
    ``n = tanh(x W_in^T + b_in + r (h W_hn^T + b_hn))``, ``h' = (1 - z) n + z h``.
    Parameters and ``forward`` as :class:`RNN`."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, device: Device | None = None,
                 dtype: DType | None = None, *, proj_size: int = 0) -> None:
        # proj_size is accepted only to refuse it with torch's ValueError
        super().__init__("GRU", input_size, hidden_size, num_layers, bias,
                         batch_first, dropout, bidirectional, proj_size, device, dtype)


# ---------------------------------------------------------------------------
# cells


class RNNCellBase(Module):
    """Common part of the cells: ``weight_ih`` (G*H, I), ``weight_hh`` (G*H, H),
    ``bias_ih``, ``bias_hh`` (G*H,), from ``U(-1/sqrt(H), 1/sqrt(H))``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: Any,
                 device: Device | None = None, dtype: DType | None = None) -> None:
        super().__init__()
        check_device(device)
        self.input_size = int(input_size)
        self.hidden_size = int(hidden_size)
        self.bias = bool(bias)
        dtype = np.dtype(get_default_dtype() if dtype is None else dtype)
        g = num_chunks * self.hidden_size
        self.weight_ih = Parameter(empty(g, self.input_size, dtype=dtype))
        self.weight_hh = Parameter(empty(g, self.hidden_size, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(empty(g, dtype=dtype))
            self.bias_hh = Parameter(empty(g, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nl = getattr(self, "nonlinearity", "tanh")
        if nl != "tanh":
            s += f", nonlinearity={nl}"
        return s

    def _weights(self):
        """``(weight_ih, weight_hh, bias_ih, bias_hh)``: from the parameter
        table (one dict lookup each; attribute access goes through
        ``Module.__getattr__`` and cost 1.6 us apiece at batch 1), by
        attribute when a reparametrization replaced an entry."""
        p = self._parameters
        try:
            return p["weight_ih"], p["weight_hh"], p["bias_ih"], p["bias_hh"]
        except KeyError:
            return self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh

    def _prepare(self, input, states, wdt):
        """Checks; returns (input 2-d, states 2-d, batched).  Reads the
        arrays' ndim and shape (a Tensor's ``dim()`` / ``shape`` build
        objects: a third of an LSTMCell step at batch 1)."""
        name = type(self).__name__
        xa = input._arr
        nd = xa.ndim
        if nd != 1 and nd != 2:
            raise ValueError(
                f"{name}: Expected input to be 1D or 2D, got {nd}D instead")
        if xa.shape[-1] != self.input_size:
            raise RuntimeError(
                f"input has inconsistent input_size: got {xa.shape[-1]} expected "
                f"{self.input_size}")
        if xa.dtype != wdt:
            raise RuntimeError(
                f"{name}: input dtype {_tdt(xa.dtype)} does not match weight "
                f"dtype {_tdt(wdt)}")
        batched = nd == 2
        if not batched:
            input = input.unsqueeze(0)
        batch = input._arr.shape[0]
        out = []
        for k, s in enumerate(states):
            if s is None:
                out.append(zeros(batch, self.hidden_size, dtype=wdt))
                continue
            sa = s._arr
            if sa.ndim != 1 and sa.ndim != 2:
                which = f"hx[{k}]" if len(states) == 2 else "hidden"
                raise ValueError(f"{name}: Expected {which} to be 1D or 2D, got "
                                 f"{sa.ndim}D instead")
            if sa.ndim != nd:
                raise RuntimeError(
                    f"{name}: Expected hidden{k} to be {nd}D like the "
                    f"input, got {sa.ndim}D (shape {_shape(s)})")
            if not batched:
                s = s.unsqueeze(0)
                sa = s._arr
            if sa.shape[0] != batch:
                raise RuntimeError(
                    f"Input batch size {batch} doesn't match hidden{k} batch size "
                    f"{sa.shape[0]}")
            if sa.shape[1] != self.hidden_size:
                raise RuntimeError(
                    f"hidden{k} has inconsistent hidden_size: got {sa.shape[1]}, "
                    f"expected {self.hidden_size}")
            if sa.dtype != wdt and not (k == 1 and sa.dtype.kind == "f"):
                raise RuntimeError(
                    f"{name}: hidden{k} dtype {_tdt(sa.dtype)} does not match "
                    f"weight dtype {_tdt(wdt)}")
            out.append(s)
        return input, out, batched


class RNNCell(RNNCellBase):
    """One Elman step: ``h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)``.

    ``forward(input, hx=None) -> h'``; ``input`` (B, I) or (I,), ``hx``
    (B, H) or (H,), zeros when None.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device: Device | None = None,
                 dtype: DType | None = None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Any:
        w = self._weights()
        x, (h,), batched = self._prepare(input, [hx], w[0]._arr.dtype)
        mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        out = rnn_cell(mode, x, h, None, *w)
        return out if batched else out.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step.  ``forward(input, (h, c)=None) -> (h', c')``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: Device | None = None, dtype: DType | None = None) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Any:
        w = self._weights()
        if type(hx) is tuple and len(hx) == 2:
            out = lstm_cell_small(input, hx[0], hx[1], *w)
            if out is not None:
                return out
        states = [None, None] if hx is None else list(hx)
        x, (h, c), batched = self._prepare(input, states, w[0]._arr.dtype)
        if c._arr.dtype != w[0]._arr.dtype:
            h1, c1 = _lstm_cell_promoting(x, h, c, *w)
        else:
            h1, c1 = rnn_cell("LSTM", x, h, c, *w)
        if not batched:
            return h1.squeeze(0), c1.squeeze(0)
        return h1, c1


def _lstm_cell_promoting(x, h, c, w_ih, w_hh, b_ih, b_hh):
    """An LSTM cell step whose cell state ``c`` has another floating dtype
    than the weights: the gates in the weights' dtype, then ``c' = f c + i g``
    and ``h' = o tanh(c')`` in the promoted one, as torch's CPU cell
    computes them (composite operations, so autograd follows)."""
    gates = h.matmul(w_hh.t())
    if b_hh is not None:
        gates = gates + b_hh
    gx = x.matmul(w_ih.t())
    if b_ih is not None:
        gx = gx + b_ih
    i, f, g, o = (gates + gx).chunk(4, 1)
    c1 = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c1.tanh(), c1


class GRUCell(RNNCellBase):
    """One GRU step.  ``forward(input, hx=None) -> h'``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: Device | None = None, dtype: DType | None = None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Any:
        w = self._weights()
        x, (h,), batched = self._prepare(input, [hx], w[0]._arr.dtype)
        out = rnn_cell("GRU", x, h, None, *w)
        return out if batched else out.squeeze(0)
