"""Fused recurrent cells: one LSTM step and one GRU step as single ops (PyTorch's fused cells).

``nn.LSTM``/``nn.GRU`` (and the cells) compute the matrix products with ``linear`` and hand the
gate pre-activations to these ops, which do the rest of the step (the gate nonlinearities and the
state update) in one node instead of a dozen: PyTorch's ``_thnn_fused_lstm_cell`` /
``_thnn_fused_gru_cell``, with its gate layout.

* ``fused_lstm_cell(gates, cx) -> (hy, cy)``: ``gates = W_ih x + b_ih + W_hh h + b_hh``, ``(B, 4H)``
  in the order ``i, f, g, o``; ``cy = sigmoid(f) cx + sigmoid(i) tanh(g)``, ``hy = sigmoid(o) tanh(cy)``.
* ``fused_gru_cell(input_gates, hidden_gates, hx) -> hy``: ``input_gates = W_ih x + b_ih``,
  ``hidden_gates = W_hh h + b_hh``, ``(B, 3H)`` in the order ``r, z, n``;
  ``n = tanh(x_n + r h_n)``, ``hy = (1 - z) n + z hx``.

The array twins (``vjp_arrays``) are the closed forms from the saved activations; ``vjp`` and
``jvp`` are the same formulas written with gradlab ops on the recomputed activations, so second
order works through them (as ``BatchNorm``'s composite VJP does).
"""
from __future__ import annotations

from .. import checks as _c

import numpy as np

from .. import ops as O
from ..autograd.function import Op
from ..backend import xp_of
from ..errors import ShapeError, fmt_shape
from ._util import check_tensor
from .registry import Sample, register


def _sig(a):
    xp = xp_of(a)
    out = xp.negative(a)
    with np.errstate(over="ignore"):
        xp.exp(out, out=out)
    out += 1
    xp.reciprocal(out, out=out)
    return out


def _lstm_acts(O_, gates, H):
    i, f, g, o = (gates[..., k * H:(k + 1) * H] for k in range(4))
    return O_.sigmoid(i), O_.sigmoid(f), O_.tanh(g), O_.sigmoid(o)


class FusedLSTMCell(Op):
    name = "fused_lstm_cell"
    formula = ("dC = dCy + dHy * o * (1 - tanh(Cy)^2) ; dGates = [dC g i(1-i), dC Cx f(1-f), dC i (1-g^2), "
               "dHy tanh(Cy) o(1-o)] ; dCx = dC f")

    @staticmethod
    def forward(ctx, gates, cx):
        G, c = gates.data, cx.data
        H = c.shape[-1]
        xp = xp_of(G)
        act = _sig(G)
        act[..., 2 * H:3 * H] = xp.tanh(G[..., 2 * H:3 * H])
        i, f, g, o = (act[..., k * H:(k + 1) * H] for k in range(4))
        cy = f * c
        cy += i * g
        tc = xp.tanh(cy)
        hy = o * tc
        ctx.H = H
        ctx.save_for_backward(gates, cx, act, tc)
        return hy, cy

    def vjp_arrays(self, ghy, gcy):
        _, c, act, tc = self.saved_arrays
        H = self.H
        xp = xp_of(act)
        i, f, g, o = (act[..., k * H:(k + 1) * H] for k in range(4))
        dc = 1 - tc * tc
        dc *= o
        dc *= ghy
        dc += gcy
        d = xp.empty_like(act)
        d[..., :H] = dc * g * i * (1 - i)
        d[..., H:2 * H] = dc * c * f * (1 - f)
        d[..., 2 * H:3 * H] = dc * i * (1 - g * g)
        d[..., 3 * H:] = ghy * tc * o * (1 - o)
        return d, dc * f

    def vjp(self, ghy, gcy):
        gates, cx = self.saved_tensors[:2]
        i, f, g, o = _lstm_acts(O, gates, self.H)
        tc = O.tanh(f * cx + i * g)
        dc = gcy + ghy * o * (1 - tc * tc)
        d = O.cat([dc * g * i * (1 - i), dc * cx * f * (1 - f), dc * i * (1 - g * g), ghy * tc * o * (1 - o)], -1)
        return d, dc * f

    def jvp(self, tg, tc_):
        gates, cx = self.args
        i, f, g, o = _lstm_acts(O, gates, self.H)
        H = self.H
        cy = f * cx + i * g
        if tg is None:
            dcy = f * tc_
            dh = o * (1 - O.tanh(cy) ** 2) * dcy
            return dh, dcy
        ti, tf, tgg, to = (tg[..., k * H:(k + 1) * H] for k in range(4))
        di, df, dg, do = ti * i * (1 - i), tf * f * (1 - f), tgg * (1 - g * g), to * o * (1 - o)
        dcy = df * cx + di * g + i * dg
        if tc_ is not None:
            dcy = dcy + f * tc_
        t = O.tanh(cy)
        return do * t + o * (1 - t * t) * dcy, dcy


class FusedGRUCell(Op):
    name = "fused_gru_cell"
    formula = ("dN = dHy (1 - z) (1 - n^2) ; dXgates = [dR, dZ, dN], dHgates = [dR, dZ, dN r], "
               "dR = dN h_n r(1-r), dZ = dHy (hx - n) z(1-z) ; dHx = dHy z")

    @staticmethod
    def forward(ctx, input_gates, hidden_gates, hx):
        xg, hg, h = input_gates.data, hidden_gates.data, hx.data
        H = h.shape[-1]
        xp = xp_of(xg)
        rz = _sig(xg[..., :2 * H] + hg[..., :2 * H])
        r, z = rz[..., :H], rz[..., H:]
        hn = hg[..., 2 * H:]
        n = r * hn
        n += xg[..., 2 * H:]
        xp.tanh(n, out=n)
        hy = h - n
        hy *= z
        hy += n
        ctx.H = H
        ctx.save_for_backward(input_gates, hidden_gates, hx, rz, n)
        return hy

    def vjp_arrays(self, ghy):
        _, hg, h, rz, n = self.saved_arrays
        H = self.H
        xp = xp_of(rz)
        r, z = rz[..., :H], rz[..., H:]
        dn = ghy * (1 - z) * (1 - n * n)
        dx = xp.empty(rz.shape[:-1] + (3 * H,), dtype=rz.dtype)
        dx[..., :H] = dn * hg[..., 2 * H:] * r * (1 - r)
        dx[..., H:2 * H] = ghy * (h - n) * z * (1 - z)
        dx[..., 2 * H:] = dn
        dh = dx.copy()
        dh[..., 2 * H:] *= r
        return dx, dh, ghy * z

    def _acts(self, xg, hg, h):
        H = self.H
        r = O.sigmoid(xg[..., :H] + hg[..., :H])
        z = O.sigmoid(xg[..., H:2 * H] + hg[..., H:2 * H])
        hn = hg[..., 2 * H:]
        n = O.tanh(xg[..., 2 * H:] + r * hn)
        return r, z, hn, n

    def vjp(self, ghy):
        xg, hg, h = self.saved_tensors[:3]
        r, z, hn, n = self._acts(xg, hg, h)
        dn = ghy * (1 - z) * (1 - n * n)
        dr = dn * hn * r * (1 - r)
        dz = ghy * (h - n) * z * (1 - z)
        return O.cat([dr, dz, dn], -1), O.cat([dr, dz, dn * r], -1), ghy * z

    def jvp(self, txg, thg, th):
        xg, hg, h = self.args
        H = self.H
        r, z, hn, n = self._acts(xg, hg, h)
        zero = O.zeros_like(xg)
        txg = zero if txg is None else txg
        thg = zero if thg is None else thg
        dr = (txg[..., :H] + thg[..., :H]) * r * (1 - r)
        dz = (txg[..., H:2 * H] + thg[..., H:2 * H]) * z * (1 - z)
        dn = (txg[..., 2 * H:] + dr * hn + r * thg[..., 2 * H:]) * (1 - n * n)
        out = dn + dz * (h - n) - z * dn
        return out if th is None else out + z * th


def _check(op, name, a, width, b):
    _c.floating(a, op, name)   # sigmoid/tanh of the gates: floating tensors only, as PyTorch
    _c.floating(b, op, "the state")
    if a.ndim != b.ndim or a.shape[:-1] != b.shape[:-1] or a.shape[-1] != width * b.shape[-1]:
        raise ShapeError(f"{op}: {name} must have shape (..., {width} * hidden) with the same leading dims as the "
                         f"state; got {name} {fmt_shape(a.shape)} and the state {fmt_shape(b.shape)}")


def _lstm_samples(src):
    for B, H in ((2, 3), (1, 2)):
        yield Sample((src.tensor((B, 4 * H)), src.tensor((B, H))))


def _gru_samples(src):
    for B, H in ((2, 3), (1, 2)):
        yield Sample((src.tensor((B, 3 * H)), src.tensor((B, 3 * H)), src.tensor((B, H))))


def _torch_lstm(torch, gates, cx):
    i, f, g, o = gates.chunk(4, -1)
    cy = torch.sigmoid(f) * cx + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(cy), cy


def _torch_gru(torch, xg, hg, hx):
    xr, xz, xn = xg.chunk(3, -1)
    hr, hz, hn = hg.chunk(3, -1)
    r, z = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
    n = torch.tanh(xn + r * hn)
    return (1 - z) * n + z * hx


@register(op=FusedLSTMCell, samples=_lstm_samples, torch=_torch_lstm)
def fused_lstm_cell(gates, cx):
    """One LSTM step after the matrix products: ``(hy, cy)`` from the gate pre-activations (order i, f, g, o)."""
    gates, cx = check_tensor(gates, "fused_lstm_cell", "gates"), check_tensor(cx, "fused_lstm_cell", "cx")
    _check("fused_lstm_cell", "gates", gates, 4, cx)
    return FusedLSTMCell.apply(gates, cx)


@register(op=FusedGRUCell, samples=_gru_samples, torch=_torch_gru)
def fused_gru_cell(input_gates, hidden_gates, hx):
    """One GRU step after the matrix products: ``hy`` from ``W_ih x + b_ih`` and ``W_hh h + b_hh`` (order r, z, n)."""
    op = "fused_gru_cell"
    xg, hg, hx = (check_tensor(input_gates, op, "input_gates"), check_tensor(hidden_gates, op, "hidden_gates"),
                  check_tensor(hx, op, "hx"))
    _check(op, "input_gates", xg, 3, hx)
    _check(op, "hidden_gates", hg, 3, hx)
    return FusedGRUCell.apply(xg, hg, hx)
