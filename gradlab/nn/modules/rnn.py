"""Recurrent layers: ``RNNCell``, ``LSTMCell``, ``GRUCell`` and the sequence layers ``RNN``, ``LSTM``, ``GRU``.

A recurrent layer reads a sequence one step at a time, carrying a hidden state ``h`` from
step to step. Everything here is built from gradlab ops (``linear``, ``sigmoid``, ``tanh``,
``stack`` and the fused steps below), so backward is plain backpropagation *through time*: the
graph of a 10-step RNN or GRU sequence is the cell's graph repeated 10 times, and ``show_graph``
draws it so (an ``nn.LSTM`` layer is one ``fused_lstm`` node that runs that loop inside; see below).

Equations (PyTorch's, with its gate order; ``W_i*`` act on the input ``x_t``, ``W_h*`` on ``h_{t-1}``):

* RNN:  ``h_t = tanh(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)`` (or relu)
* LSTM: ``i, f, g, o = split(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)`` into 4 blocks;
  ``i, f, o = sigmoid(.)``, ``g = tanh(.)``; ``c_t = f * c_{t-1} + i * g``; ``h_t = o * tanh(c_t)``.
  The cell state ``c`` is updated by a *sum*, so its gradient flows back through ``f`` alone:
  that is why LSTMs remember longer than plain RNNs (whose gradient is multiplied by
  ``W_hh`` and ``tanh'`` at every step, and vanishes or explodes).
* GRU:  ``r, z, n`` blocks: ``r = sigmoid(W_ir x + b_ir + W_hr h + b_hr)``,
  ``z = sigmoid(W_iz x + b_iz + W_hz h + b_hz)``, ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``,
  ``h_t = (1 - z) * n + z * h_{t-1}``.

The LSTM and GRU steps hand the gate pre-activations to one fused op each
(``fused_lstm_cell``, ``fused_gru_cell`` in ``gradlab/ops/recurrent.py``, PyTorch's fused cells): the
formulas above in one node, with a closed-form backward. An ``nn.LSTM`` layer direction whose
sequences all run every step (no ``proj_size``, no packed lengths) goes further: the whole loop over time
is one node (``fused_lstm``), with one backward loop through time, as PyTorch's sequence kernels run it;
its result is the same as the step-by-step graph's (``tests/test_rnn.py`` compares them).

Parameters: ``weight_ih`` ``(gates*hidden, input)``, ``weight_hh`` ``(gates*hidden, hidden)``,
``bias_ih``, ``bias_hh`` ``(gates*hidden,)``; in ``RNN``/``LSTM``/``GRU`` they are named
``weight_ih_l{k}`` (layer ``k``), with ``_reverse`` for the backward direction, so a PyTorch
``state_dict`` loads unchanged. All start ``U(-1/sqrt(hidden), 1/sqrt(hidden))``.
"""
from __future__ import annotations

import math
import warnings

from ... import checks as _c, ops as O
from ..._tensor import Tensor
from ...backend import dtypes as _dt, xp_of
from ...errors import ArgumentError, ArgumentTypeError, DTypeError, ShapeError, fmt_shape
from .. import functional as F, init
from .._rnn_utils import PackedSequence
from ..module import Module
from ._layer_helpers import new_param

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _step(mode, x_proj, h, c, w_hh, b_hh, w_hr=None):
    """One time step; ``x_proj = W_ih x + b_ih`` is precomputed. Returns ``(h, c)`` (``c`` only for LSTM).

    ``w_hr`` (LSTM with ``proj_size``) projects ``h`` down: ``h = W_hr (o * tanh(c))``.
    """
    hh = F.linear(h, w_hh, b_hh)
    if mode == "LSTM":  # the gate nonlinearities and the state update: one fused op (gradlab/ops/recurrent.py)
        h, c = O.fused_lstm_cell(x_proj + hh, c)
        return (h if w_hr is None else F.linear(h, w_hr)), c
    if mode == "GRU":
        return O.fused_gru_cell(x_proj, hh, h), None
    pre = x_proj + hh
    return (O.tanh(pre) if mode == "RNN_TANH" else O.relu(pre)), None


def _check_input(cls, input, size, ranks):
    if not isinstance(input, Tensor):
        raise ArgumentTypeError(f"{cls}: input must be a gradlab Tensor (or, for RNN/LSTM/GRU, a PackedSequence), "
                            f"got {type(input).__name__}")
    if not _dt.is_floating(input.dtype):
        raise DTypeError(f"{cls}: input has dtype {_dt.dtype_name(input.dtype)}, but a recurrent layer needs floating "
                         "vectors; token ids go through an nn.Embedding first")
    if input.ndim not in ranks:
        want = " or ".join(f"{r}-D" for r in ranks)
        raise ShapeError(f"{cls}: expected a {want} input, got {fmt_shape(input.shape)}")
    if input.shape[-1] != size:
        raise ShapeError(f"{cls}: input {fmt_shape(input.shape)} has {input.shape[-1]} features in its last dim "
                         f"but input_size is {size}")


def _zeros(like, shape):
    """A zero state with ``like``'s dtype and device (a constant: no gradient flows into it)."""
    return Tensor._make(xp_of(like._data).zeros(shape, dtype=like.dtype))


# ---------------------------------------------------------------------------------------- cells
class RNNCellBase(Module):
    """What ``RNNCell``, ``LSTMCell`` and ``GRUCell`` share: their parameters, init and state checks."""
    _mode = "RNN_TANH"

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__()
        cls = type(self).__name__
        self.input_size = _c.size(input_size, cls, "input_size")
        self.hidden_size = _c.size(hidden_size, cls, "hidden_size", 1)
        self.bias = bias
        g = _GATES[self._mode] * self.hidden_size
        self.weight_ih = new_param(g, self.input_size, dtype=dtype, device=device)
        self.weight_hh = new_param(g, self.hidden_size, dtype=dtype, device=device)
        if bias:
            self.bias_ih = new_param(g, dtype=dtype, device=device)
            self.bias_hh = new_param(g, dtype=dtype, device=device)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def _state(self, input, hx, name):
        """``hx`` checked against the input's batch, or zeros when it is None."""
        want = (input.shape[0], self.hidden_size) if input.ndim == 2 else (self.hidden_size,)
        if hx is None:
            return _zeros(input, want)
        if not isinstance(hx, Tensor) or tuple(hx.shape) != want:
            got = fmt_shape(hx.shape) if isinstance(hx, Tensor) else type(hx).__name__
            raise ShapeError(f"{type(self).__name__}: {name} must have shape {fmt_shape(want)} for input "
                             f"{fmt_shape(input.shape)}, got {got}")
        return hx

    def _run(self, input, h, c=None):
        _check_input(type(self).__name__, input, self.input_size, (1, 2))
        return _step(self._mode, F.linear(input, self.weight_ih, self.bias_ih), h, c, self.weight_hh, self.bias_hh)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if not self.bias:
            s += ", bias=False"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s


class RNNCell(RNNCellBase):
    """One step of an Elman RNN: ``h' = tanh(W_ih x + b_ih + W_hh h + b_hh)`` (``nonlinearity='relu'`` too).

    ``cell(x, h)`` with ``x`` ``(N, input_size)`` (or unbatched ``(input_size,)``) returns ``h'``.
    """

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ArgumentError(f"RNNCell: nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        self._mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"
        super().__init__(input_size, hidden_size, bias, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        _check_input("RNNCell", input, self.input_size, (1, 2))
        return self._run(input, self._state(input, hx, "hx"))[0]


class LSTMCell(RNNCellBase):
    """One LSTM step: ``cell(x, (h, c))`` returns ``(h', c')`` (gates i, f, g, o; see the module docstring)."""
    _mode = "LSTM"

    def forward(self, input, hx=None):
        _check_input("LSTMCell", input, self.input_size, (1, 2))
        if hx is None:
            h = c = self._state(input, None, "h")
        else:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise ArgumentError(f"LSTMCell: hx must be a tuple (h, c), got {type(hx).__name__}")
            h, c = self._state(input, hx[0], "h"), self._state(input, hx[1], "c")
        return self._run(input, h, c)


class GRUCell(RNNCellBase):
    """One GRU step: ``cell(x, h)`` returns ``h'`` (gates r, z, n; see the module docstring)."""
    _mode = "GRU"

    def forward(self, input, hx=None):
        _check_input("GRUCell", input, self.input_size, (1, 2))
        return self._run(input, self._state(input, hx, "hx"))[0]


# ------------------------------------------------------------------------------ sequence layers
class RNNBase(Module):
    """What ``RNN``, ``LSTM`` and ``GRU`` share: stacked layers, directions, the time loop."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        cls = type(self).__name__
        _c.size(input_size, cls, "input_size"), _c.size(hidden_size, cls, "hidden_size", 1)
        _c.size(num_layers, cls, "num_layers", 1), _c.size(proj_size, cls, "proj_size")
        if proj_size and mode != "LSTM":
            raise ArgumentError(f"{cls}: proj_size is only supported for LSTM, not RNN or GRU")
        if proj_size < 0 or (proj_size and proj_size >= hidden_size):
            raise ArgumentError(f"{cls}: proj_size ({proj_size}) must be between 0 and hidden_size - 1 "
                                f"({int(hidden_size) - 1})")
        if not isinstance(dropout, (int, float)) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ArgumentError(f"{cls}: dropout should be a number in [0, 1] (the probability of zeroing an "
                                f"element between layers), got {dropout!r}")
        if int(hidden_size) <= 0 or int(num_layers) <= 0:
            raise ArgumentError(f"{cls}: hidden_size ({hidden_size}) and num_layers ({num_layers}) must be positive")
        if dropout > 0 and num_layers == 1:
            warnings.warn(f"{cls}: dropout={dropout} acts only between stacked layers, so with num_layers=1 it "
                          "does nothing", UserWarning, stacklevel=3)
        self.mode, self.input_size, self.hidden_size = mode, int(input_size), int(hidden_size)
        self.num_layers, self.bias, self.batch_first = int(num_layers), bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, int(proj_size)
        dirs = 2 if bidirectional else 1
        g = _GATES[mode] * self.hidden_size
        real = self.proj_size or self.hidden_size  # the size of h (the projection's, with proj_size)
        self._flat_weights_names = []
        for layer in range(self.num_layers):
            in_size = self.input_size if layer == 0 else real * dirs
            for d in range(dirs):
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                shapes = [("weight_ih", (g, in_size)), ("weight_hh", (g, real))]
                if bias:
                    shapes += [("bias_ih", (g,)), ("bias_hh", (g,))]
                if self.proj_size:
                    shapes += [("weight_hr", (self.proj_size, self.hidden_size))]
                for name, shape in shapes:
                    setattr(self, name + sfx, new_param(*shape, dtype=dtype, device=device))
                    self._flat_weights_names.append(name + sfx)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size)
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def flatten_parameters(self):
        """A no-op kept for PyTorch compatibility (cuDNN's weight packing has no gradlab counterpart)."""

    @property
    def all_weights(self):
        per = (4 if self.bias else 2) + (1 if self.proj_size else 0)
        ws = [getattr(self, n) for n in self._flat_weights_names]
        return [ws[i:i + per] for i in range(0, len(ws), per)]

    def _init_state(self, like, n, hx, name, batched, order, size=None):
        """``hx`` checked and shaped ``(layers*dirs, N, H)`` (rows in ``order`` for a packed batch), or zeros."""
        dirs = 2 if self.bidirectional else 1
        want = (self.num_layers * dirs, n, size or self.hidden_size)
        if hx is None:
            return _zeros(like, want)
        shown = want if batched else (want[0], want[2])
        if not isinstance(hx, Tensor) or tuple(hx.shape) != shown:
            got = fmt_shape(hx.shape) if isinstance(hx, Tensor) else type(hx).__name__
            raise ShapeError(f"{type(self).__name__}: {name} must have shape {fmt_shape(shown)} "
                             f"(num_layers * num_directions, {'batch, ' if batched else ''}hidden_size), got {got}")
        hx = hx if batched else O.unsqueeze(hx, 1)
        return hx if order is None else hx[:, order]

    def _direction(self, data, sizes, offsets, sfx, h, c, reverse):
        """Run one layer in one direction over packed ``data`` (``sizes[t]`` rows at step ``t``).

        Sequences are sorted by decreasing length, so the running ones are always the first
        ``sizes[t]`` rows; the others keep their state until they start (reverse) or after they end.
        """
        w_hh, w_hr = getattr(self, "weight_hh" + sfx), (getattr(self, "weight_hr" + sfx) if self.proj_size else None)
        b_ih, b_hh = (getattr(self, "bias_ih" + sfx), getattr(self, "bias_hh" + sfx)) if self.bias else (None, None)
        proj = F.linear(data, getattr(self, "weight_ih" + sfx), b_ih)  # the input part of every step at once
        n, ys = h.shape[0], [None] * len(sizes)
        if (self.mode == "LSTM" and w_hr is None and all(b == n for b in sizes) and proj.dtype.itemsize >= 4
                and proj.dtype == w_hh.dtype == h.dtype == c.dtype):  # (not under autocast, not in half precision)
            # every sequence runs every step: the whole loop is one fused op (gradlab/ops/recurrent.py)
            hs, c = O.fused_lstm(O.reshape(proj, (len(sizes), n, proj.shape[-1])), h, c, w_hh, b_hh, reverse=reverse)
            return O.reshape(hs, (len(sizes) * n, hs.shape[-1])), hs[0 if reverse else -1], c
        for t in (range(len(sizes) - 1, -1, -1) if reverse else range(len(sizes))):
            b, off = sizes[t], offsets[t]
            if b == n:
                h, c = _step(self.mode, proj[off:off + b], h, c, w_hh, b_hh, w_hr)
                ys[t] = h
            else:
                hb, cb = _step(self.mode, proj[off:off + b], h[:b], None if c is None else c[:b], w_hh, b_hh, w_hr)
                ys[t] = hb
                h = O.cat([hb, h[b:]], 0)
                c = None if c is None else O.cat([cb, c[b:]], 0)
        return (ys[0] if len(ys) == 1 else O.cat(ys, 0)), h, c

    def _run(self, input, hx):
        """The loop over layers, directions and time. Returns ``(output, h_n, c_n)`` (``c_n`` for LSTM)."""
        cls = type(self).__name__
        packed = isinstance(input, PackedSequence)
        if packed:
            data = input.data
            _check_input(cls, data, self.input_size, (2,))
            sizes = input._batch_sizes()
            order, batched = input.sorted_indices, True
        else:
            _check_input(cls, input, self.input_size, (2, 3))
            batched = input.ndim == 3
            x = input if not batched else (O.transpose(input, 0, 1) if self.batch_first else input)
            if not batched:
                x = O.unsqueeze(x, 1)
            steps, n = x.shape[0], x.shape[1]
            if steps == 0:
                raise ShapeError(f"{cls}: the input sequence is empty (length 0, input {tuple(input.shape)}); give at "
                                 f"least one time step")
            data, sizes, order = O.reshape(x, (steps * n, x.shape[2])), [n] * steps, None
        offsets = [0]
        for b in sizes[:-1]:
            offsets.append(offsets[-1] + b)
        n = sizes[0]
        lstm = self.mode == "LSTM"
        if lstm:
            if hx is not None and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
                raise ArgumentError(f"LSTM: hx must be a tuple (h_0, c_0), got {type(hx).__name__}")
            h0 = self._init_state(data, n, None if hx is None else hx[0], "h_0", batched, order, self.proj_size)
            c0 = self._init_state(data, n, None if hx is None else hx[1], "c_0", batched, order)
        else:
            h0, c0 = self._init_state(data, n, hx, "hx", batched, order), None
        dirs = 2 if self.bidirectional else 1
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                k = layer * dirs + d
                y, h, c = self._direction(data, sizes, offsets, f"_l{layer}" + ("_reverse" if d else ""), h0[k],
                                          c0[k] if lstm else None, reverse=bool(d))
                outs.append(y)
                h_n.append(h)
                c_n.append(c)
            data = outs[0] if dirs == 1 else O.cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                data = F.dropout(data, self.dropout, True)
        h_n = O.stack(h_n, 0)
        c_n = O.stack(c_n, 0) if lstm else None
        if packed:
            out = PackedSequence(data, input.batch_sizes, input.sorted_indices, input.unsorted_indices)
            if input.unsorted_indices is not None:  # the final states back in the batch's original order
                h_n = h_n[:, input.unsorted_indices]
                c_n = c_n[:, input.unsorted_indices] if lstm else None
            return out, h_n, c_n
        out = O.reshape(data, (len(sizes), n, data.shape[-1]))
        if not batched:
            out, h_n = O.squeeze(out, 1), O.squeeze(h_n, 1)
            c_n = O.squeeze(c_n, 1) if lstm else None
        elif self.batch_first:
            out = O.transpose(out, 0, 1)
        return out, h_n, c_n

    def forward(self, input, hx=None):
        out, h_n, _ = self._run(input, hx)
        return out, h_n

    def extra_repr(self):
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


class RNN(RNNBase):
    """Elman RNN over a sequence: ``h_t = tanh(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)`` (or relu).

    ``rnn(input, h_0=None)`` with ``input`` ``(L, N, input_size)`` (``(N, L, input_size)`` if
    ``batch_first``; or unbatched ``(L, input_size)``) returns ``(output, h_n)``: ``output`` holds the
    last layer's ``h_t`` for every step (both directions concatenated), ``h_n`` every layer's final state,
    ``(num_layers * num_directions, N, hidden_size)``. A ``PackedSequence``
    (``gradlab.nn.utils.rnn.pack_padded_sequence``) runs each sequence for its own length and
    returns a ``PackedSequence`` output; ``h_n`` is then each sequence's state at its last real step.
    """

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None, *, proj_size=0):
        if nonlinearity not in ("tanh", "relu"):
            raise ArgumentError(f"RNN: nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size, num_layers,
                         bias, batch_first, dropout, bidirectional, proj_size, device, dtype)
        self.nonlinearity = nonlinearity


class LSTM(RNNBase):
    """Long short-term memory over a sequence; ``lstm(input, (h_0, c_0))`` returns ``(output, (h_n, c_n))``.

    Shapes as ``RNN``; ``c`` is the cell state. With ``proj_size`` > 0, ``h`` is projected to ``proj_size``
    features by ``weight_hr_l{k}`` at every step (``c`` keeps ``hidden_size``).
    """

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device, dtype)

    def forward(self, input, hx=None):
        out, h_n, c_n = self._run(input, hx)
        return out, (h_n, c_n)


class GRU(RNNBase):
    """Gated recurrent unit over a sequence; ``gru(input, h_0)`` returns ``(output, h_n)`` (shapes as ``RNN``)."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, device=None, dtype=None, *, proj_size=0):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device, dtype)
