"""Fused recurrent cells: one LSTM step and one GRU step as single ops (PyTorch's fused cells).

``nn.LSTM``/``nn.GRU`` (and the cells) compute the matrix products with ``linear`` and hand the
gate pre-activations to these ops, which do the rest of the step (the gate nonlinearities and the
state update) in one node instead of a dozen: PyTorch's ``_thnn_fused_lstm_cell`` /
``_thnn_fused_gru_cell``, with its gate layout.

* ``fused_lstm_cell(gates, cx) -> (hy, cy)``: ``gates = W_ih x + b_ih + W_hh h + b_hh``, ``(B, 4H)``
  in the order ``i, f, g, o``; ``cy = sigmoid(f) cx + sigmoid(i) tanh(g)``, ``hy = sigmoid(o) tanh(cy)``.
* ``fused_lstm(proj, h0, c0, w_hh, b_hh) -> (h_all, c_last)``: a whole sequence (one layer, one
  direction) in one node: the step above for every ``t`` with ``gates_t = proj[t] + W_hh h + b_hh``, and one
  backward loop through time (what ``nn.LSTM`` runs, as PyTorch runs its whole-sequence kernel).
* ``fused_gru_cell(input_gates, hidden_gates, hx) -> hy``: ``input_gates = W_ih x + b_ih``,
  ``hidden_gates = W_hh h + b_hh``, ``(B, 3H)`` in the order ``r, z, n``;
  ``n = tanh(x_n + r h_n)``, ``hy = (1 - z) n + z hx``.

The array twins (``vjp_arrays``) are the closed forms from the saved activations; ``vjp`` and
``jvp`` are the same formulas written with gradlab ops on the recomputed activations, so second
order works through them (as ``BatchNorm``'s composite VJP does). Why the twins stay (measured,
one thread, T=16, batch 8, hidden 32, float32): ``fused_lstm`` forward + backward takes 1.1 ms with
the array twin and 39 ms through the op-level ``vjp`` (about 25 recorded ops per step).

Speed of a sequence: at these sizes a step is a few microseconds of arithmetic and NumPy's per-call
overhead dominates, so ``fused_lstm`` moves everything that does not depend on the running state out
of the loop (bias, gate scaling, the backward's gradient-free factors: whole-array calls over all
steps) and the loop makes 10 NumPy calls per step forward and 6 backward, writing into preallocated
buffers (before: about 20 and 25; ``fused_lstm`` forward + backward 1.49 -> 1.13 ms).
"""
from __future__ import annotations

import functools

import numpy as _np

from .. import checks as _c, ops as O
from ..autograd.function import Op
from ..backend import xp_of
from ..errors import ShapeError, fmt_shape
from ._util import check_tensor
from .activations import _sigmoid_array  # (the one sigmoid on arrays: 1 / (1 + exp(-x)), in place)
from .registry import Sample, register


def _lstm_acts(O_, gates, H):
    i, f, g, o = (gates[..., k * H:(k + 1) * H] for k in range(4))
    return O_.sigmoid(i), O_.sigmoid(f), O_.tanh(g), O_.sigmoid(o)


def _gate_tables(xp, H, dtype):
    """:func:`_host_gate_tables` in the array module ``xp`` (a device's arrays never mix with the host's)."""
    tables = _host_gate_tables(H, dtype)
    return tables if xp is _np else tuple(xp.asarray(t) for t in tables)


@functools.lru_cache(maxsize=32)
def _host_gate_tables(H, dtype):
    """``(scale, shift)``, each ``(4H,)``: 0.5 and 0.5 on the sigmoid gates (i, f, o), 1 and 0 on ``g``.
    ``sigmoid(x) = 0.5 tanh(x / 2) + 0.5``, so once the pre-activations are multiplied by ``scale`` one
    ``tanh`` call activates all four gates, and ``* scale + shift`` finishes the sigmoids (``g`` is left as
    it is). Halving is exact in binary floating point: ``tanh`` sees exactly ``x / 2``. (Read-only arrays:
    cached per size and dtype.)"""
    scale = _np.full(4 * H, 0.5, dtype=dtype)
    scale[2 * H:3 * H] = 1
    shift = _np.full(4 * H, 0.5, dtype=dtype)
    shift[2 * H:3 * H] = 0
    scale.flags.writeable = shift.flags.writeable = False
    return scale, shift


def _lstm_step_arrays(xp, a, c, H, cy, tc, hy):
    """One LSTM step on arrays, into the given buffers: ``a`` holds the gate pre-activations already
    multiplied by ``_gate_tables``' ``scale`` and becomes the activations ``(i, f, g, o)``; ``cy = f c + i g``,
    ``tc = tanh(cy)``, ``hy = o tc``. Eight NumPy calls and one temporary (``i g``): in a sequence of small
    steps the per-call overhead is the cost, so the three sigmoids and the tanh share one ``tanh`` call."""
    scale, shift = _gate_tables(xp, H, a.dtype)
    xp.tanh(a, out=a)
    a *= scale
    a += shift
    i, f, g, o = (a[..., k * H:(k + 1) * H] for k in range(4))
    xp.multiply(f, c, out=cy)
    cy += i * g
    xp.tanh(cy, out=tc)
    xp.multiply(o, tc, out=hy)


def _lstm_factors(xp, act, tc, c, H):
    """What the backward multiplies the incoming gradients by, for every step at once (any leading dims):
    ``(A, K, Ko, f)`` with ``dC = dCy + dHy A`` (``A = o (1 - tc^2)``), ``dGates[i, f, g] = dC K`` (``K`` of shape
    ``(..., 3, H)``: ``g i(1-i), c f(1-f), i (1-g^2)``), ``dGates[o] = dHy Ko`` (``Ko = tc o(1-o)``), ``dCx = dC f``.
    They do not depend on the gradient, so a sequence computes them in a few whole-array calls and its
    loop through time does only the gradient-dependent products."""
    i, f, g, o = (act[..., k * H:(k + 1) * H] for k in range(4))
    A = 1 - tc * tc
    A *= o
    K = xp.empty(act.shape[:-1] + (3, H), dtype=act.dtype)
    xp.multiply(g, i * (1 - i), out=K[..., 0, :])
    xp.multiply(c, f * (1 - f), out=K[..., 1, :])
    xp.multiply(i, 1 - g * g, out=K[..., 2, :])
    Ko = o * (1 - o)
    Ko *= tc
    return A, K, Ko, f


def _lstm_step_back(xp, ghy, gcy, A, K, Ko, f, d):
    """One step's backward from :func:`_lstm_factors`: the gates' gradient into ``d`` ``(..., 4H)``, returns dCx."""
    dc = ghy * A
    if gcy is not None:
        dc += gcy
    d4 = d.reshape(d.shape[:-1] + (4, -1))
    xp.multiply(dc[..., None, :], K, out=d4[..., :3, :])
    xp.multiply(ghy, Ko, out=d4[..., 3, :])
    dc *= f
    return dc


def _lstm_step_vjp(gates, cx, ghy, gcy, H):
    """The same backward with gradlab ops on recomputed activations (differentiable: second order)."""
    i, f, g, o = _lstm_acts(O, gates, H)
    tc = O.tanh(f * cx + i * g)
    dc = gcy + ghy * o * (1 - tc * tc)
    d = O.cat([dc * g * i * (1 - i), dc * cx * f * (1 - f), dc * i * (1 - g * g), ghy * tc * o * (1 - o)], -1)
    return d, dc * f


def _lstm_step_jvp(gates, cx, tg, tc_, H):
    """The step's forward-mode rule: tangents of ``(hy, cy)`` from those of ``gates`` and ``cx`` (None = 0)."""
    i, f, g, o = _lstm_acts(O, gates, H)
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


class FusedLSTMCell(Op):
    name = "fused_lstm_cell"
    formula = ("dC = dCy + dHy * o * (1 - tanh(Cy)^2) ; dGates = [dC g i(1-i), dC Cx f(1-f), dC i (1-g^2), "
               "dHy tanh(Cy) o(1-o)] ; dCx = dC f")

    @staticmethod
    def forward(ctx, gates, cx):
        c = cx._data
        H, xp = c.shape[-1], xp_of(c)
        act = gates._data * _gate_tables(xp, H, gates._data.dtype)[0]
        cy, tc, hy = (xp.empty(act.shape[:-1] + (H,), dtype=_np.result_type(act, c)) for _ in range(3))
        _lstm_step_arrays(xp, act, c, H, cy, tc, hy)
        ctx.H = H
        ctx.save_for_backward(gates, cx, act, tc)
        return hy, cy

    def vjp_arrays(self, ghy, gcy):
        _, c, act, tc = self.saved_arrays
        xp = xp_of(act)
        d = xp.empty(act.shape, dtype=_np.result_type(act, ghy))
        dcx = _lstm_step_back(xp, ghy, gcy, *_lstm_factors(xp, act, tc, c, self.H), d)
        return d, dcx

    def vjp(self, ghy, gcy):
        gates, cx = self.saved_tensors[:2]
        return _lstm_step_vjp(gates, cx, ghy, gcy, self.H)

    def jvp(self, tg, tc_):
        gates, cx = self.args
        return _lstm_step_jvp(gates, cx, tg, tc_, self.H)


class FusedLSTM(Op):
    """A whole LSTM sequence (one layer, one direction) as one node, as cuDNN's and PyTorch's CPU kernels run it.

    ``proj`` ``(T, N, 4H)`` holds ``W_ih x_t + b_ih`` for every step (one large matmul before the loop);
    the op runs ``gates_t = proj[t] + h W_hh^T + b_hh`` and the fused step for each ``t`` (from the end
    when ``reverse``) and returns every ``h_t`` ``(T, N, H)`` and the last ``c``. Backward is one loop
    back through time with the step's closed form, and one matmul for ``dW_hh`` over all steps.
    """
    name = "fused_lstm"
    formula = ("per step, last first: dGates_t, dC_{t-1} = lstm step backward(dH_t + dH_t^next, dC_t) ; "
               "dH_{t-1} = dGates_t W_hh ; dW_hh = sum_t dGates_t^T h_{t-1} ; db_hh = sum_t dGates_t")

    @staticmethod
    def forward(ctx, proj, h0, c0, w_hh, b_hh, reverse=False):
        P, W = proj._data, w_hh._data
        xp = xp_of(P)
        T, H = P.shape[0], c0.shape[-1]
        dt = _np.float32 if P.dtype.itemsize < 4 else P.dtype  # 16-bit floats run in float32 (as matmul gives)
        scale = _gate_tables(xp, H, dt)[0]
        # Everything that does not depend on h is done once for all steps, in whole-array calls:
        # proj + b_hh, and the gate scale of _lstm_step_arrays folded into it and into W_hh^T
        # (exact: halving). The loop then makes 2 + 8 NumPy calls per step, writing into these buffers.
        acts = P.astype(dt)
        if b_hh is not None:
            acts += b_hh._data
        acts *= scale
        Ws = (W.T * scale).astype(dt, copy=False)
        hs, cs, tcs = (xp.empty((T,) + c0.shape, dtype=dt) for _ in range(3))
        h, c = h0._data.astype(dt, copy=False), c0._data.astype(dt, copy=False)
        for t in (range(T - 1, -1, -1) if reverse else range(T)):
            a = acts[t]
            a += xp.matmul(h, Ws)
            _lstm_step_arrays(xp, a, c, H, cs[t], tcs[t], hs[t])
            h, c = hs[t], cs[t]
        ctx.H, ctx.reverse = H, reverse
        ctx.save_for_backward(proj, h0, c0, w_hh, b_hh, acts, tcs, hs, cs)
        return hs.astype(P.dtype), c.astype(P.dtype)  # (copies: what backward saved stays unchanged)

    def vjp_arrays(self, ghs, gc):
        P, h0, c0, W, b, acts, tcs, hs, cs = self.saved_arrays
        xp, H, T = xp_of(acts), self.H, acts.shape[0]
        need_h0 = self.next_functions[1] is not None
        # the state each step read (h_{t-1}, c_{t-1}: the neighbour in run order, or h0, c0)
        if self.reverse:
            h_in, c_in = (xp.concatenate([s[1:], s0[None].astype(s.dtype)]) for s, s0 in ((hs, h0), (cs, c0)))
        else:
            h_in, c_in = (xp.concatenate([s0[None].astype(s.dtype), s[:-1]]) for s, s0 in ((hs, h0), (cs, c0)))
        # the gradient-free factors of every step at once; the loop does the rest (5 calls + one matmul)
        A, K, Ko, f = _lstm_factors(xp, acts, tcs, c_in, H)
        W = W.astype(acts.dtype, copy=False)
        dP = xp.empty_like(acts)
        dh, dc = None, gc
        order = range(T) if self.reverse else range(T - 1, -1, -1)
        last = order[-1]
        for t in order:
            ghy = ghs[t] if dh is None else ghs[t] + dh
            dc = _lstm_step_back(xp, ghy, dc, A[t], K[t], Ko[t], f[t], dP[t])
            if t != last or need_h0:
                dh = xp.matmul(dP[t], W)
        flat = dP.reshape(-1, dP.shape[-1])
        dW = xp.matmul(flat.T, h_in.reshape(-1, H)) if self.next_functions[3] is not None else None
        db = None if b is None or self.next_functions[4] is None else flat.sum(0)
        return dP.astype(P.dtype, copy=False), (dh if need_h0 else None), dc, dW, db

    def _states(self, proj, h, c, w_hh, b_hh):
        """The forward again with gradlab ops: ``(gates_t, h_{t-1}, c_{t-1})`` of every step, in run order."""
        steps = []
        for t in (range(proj.shape[0] - 1, -1, -1) if self.reverse else range(proj.shape[0])):
            gates = proj[t] + O.matmul(h, w_hh.mT)
            if b_hh is not None:
                gates = gates + b_hh
            steps.append((t, gates, h, c))
            h, c = O.fused_lstm_cell(gates, c)
        return steps

    def vjp(self, ghs, gc):
        proj, h0, c0, w_hh, b_hh = self.saved_tensors[:5]
        dP, dh, dc, dW, db = [None] * proj.shape[0], None, gc, None, None
        for t, gates, h, c in reversed(self._states(proj, h0, c0, w_hh, b_hh)):
            ghy = ghs[t] if dh is None else ghs[t] + dh
            dP[t], dc = _lstm_step_vjp(gates, c, ghy, dc, self.H)
            dh = O.matmul(dP[t], w_hh)
            dWt = O.matmul(dP[t].mT, h)
            dW = dWt if dW is None else dW + dWt
            dbt = O.sum(dP[t], 0)
            db = dbt if db is None else db + dbt
        return O.stack(dP, 0), dh, dc, dW, (None if b_hh is None else db)

    def jvp(self, tp, th, tc, tw, tb):
        proj, h0, c0, w_hh, b_hh = self.args[:5]
        ths = [None] * proj.shape[0]
        for t, gates, h, c in self._states(proj, h0, c0, w_hh, b_hh):
            tg = None if tp is None else tp[t]
            for part in ((None if th is None else O.matmul(th, w_hh.mT)),
                         (None if tw is None else O.matmul(h, tw.mT)), tb):
                if part is not None:
                    tg = part if tg is None else tg + part
            if tg is None and tc is None:
                th = tc = None
                ths[t] = O.zeros_like(h)
                continue
            th, tc = _lstm_step_jvp(gates, c, tg, tc, self.H)
            ths[t] = th
        return O.stack(ths, 0), (O.zeros_like(c0) if tc is None else tc)


class FusedGRUCell(Op):
    name = "fused_gru_cell"
    formula = ("dN = dHy (1 - z) (1 - n^2) ; dXgates = [dR, dZ, dN], dHgates = [dR, dZ, dN r], "
               "dR = dN h_n r(1-r), dZ = dHy (hx - n) z(1-z) ; dHx = dHy z")

    @staticmethod
    def forward(ctx, input_gates, hidden_gates, hx):
        xg, hg, h = input_gates._data, hidden_gates._data, hx._data
        H = h.shape[-1]
        xp = xp_of(xg)
        rz = _sigmoid_array(xg[..., :2 * H] + hg[..., :2 * H])
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


def _lstm_seq_samples(src):
    for T, B, H in ((3, 2, 2), (1, 1, 3)):
        yield Sample((src.tensor((T, B, 4 * H)), src.tensor((B, H)), src.tensor((B, H)), src.tensor((4 * H, H)),
                      src.tensor((4 * H,))))
    yield Sample((src.tensor((2, 2, 8)), src.tensor((2, 2)), src.tensor((2, 2)), src.tensor((8, 2)), None),
                 dict(reverse=True), desc="reverse, no bias")


def _torch_lstm_seq(torch, proj, h, c, w_hh, b_hh, reverse=False):
    hs = [None] * proj.shape[0]
    for t in (range(proj.shape[0] - 1, -1, -1) if reverse else range(proj.shape[0])):
        gates = proj[t] + h @ w_hh.T + (0 if b_hh is None else b_hh)
        h, c = _torch_lstm(torch, gates, c)
        hs[t] = h
    return torch.stack(hs, 0), c


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


@register(op=FusedLSTM, samples=_lstm_seq_samples, torch=_torch_lstm_seq)
def fused_lstm(proj, h0, c0, w_hh, b_hh=None, reverse=False):
    """A whole LSTM layer direction: ``(h_all, c_last)`` from ``proj`` ``(T, N, 4H)`` = ``W_ih x_t + b_ih`` for
    every step, the initial state ``h0``, ``c0`` ``(N, H)`` and ``W_hh`` ``(4H, H)``, ``b_hh`` ``(4H,)``."""
    op = "fused_lstm"
    proj, h0, c0 = check_tensor(proj, op, "proj"), check_tensor(h0, op, "h0"), check_tensor(c0, op, "c0")
    w_hh = check_tensor(w_hh, op, "w_hh")
    for t, what in ((proj, "proj"), (h0, "h0"), (c0, "c0"), (w_hh, "w_hh")):
        _c.floating(t, op, what)
    if proj.ndim != 3 or c0.ndim != 2 or proj.shape[1:] != (c0.shape[0], 4 * c0.shape[1]):
        raise ShapeError(f"{op}: proj must be (steps, batch, 4 * hidden) for a state (batch, hidden); got proj "
                         f"{fmt_shape(proj.shape)} and c0 {fmt_shape(c0.shape)}")
    if h0.shape != c0.shape or w_hh.shape != (proj.shape[-1], c0.shape[-1]):
        raise ShapeError(f"{op}: h0 {fmt_shape(h0.shape)} and c0 {fmt_shape(c0.shape)} must match, and w_hh must be "
                         f"(4 * hidden, hidden) = {fmt_shape((proj.shape[-1], c0.shape[-1]))}, got "
                         f"{fmt_shape(w_hh.shape)}")
    if proj.shape[0] == 0:  # (nn.LSTM refuses it before it gets here; PyTorch's own sequence refuses it too)
        raise ShapeError(f"{op}: the sequence is empty (proj {fmt_shape(proj.shape)}: 0 steps), so there is no last "
                         "state to return; give at least one time step")
    if b_hh is not None:
        b_hh = check_tensor(b_hh, op, "b_hh")
        _c.floating(b_hh, op, "b_hh")
        if b_hh.shape != (proj.shape[-1],):
            raise ShapeError(f"{op}: b_hh must be (4 * hidden,) = ({proj.shape[-1]},), got {fmt_shape(b_hh.shape)}")
    return FusedLSTM.apply(proj, h0, c0, w_hh, b_hh, reverse=bool(reverse))


@register(op=FusedGRUCell, samples=_gru_samples, torch=_torch_gru)
def fused_gru_cell(input_gates, hidden_gates, hx):
    """One GRU step after the matrix products: ``hy`` from ``W_ih x + b_ih`` and ``W_hh h + b_hh`` (order r, z, n)."""
    op = "fused_gru_cell"
    xg, hg, hx = (check_tensor(input_gates, op, "input_gates"), check_tensor(hidden_gates, op, "hidden_gates"),
                  check_tensor(hx, op, "hx"))
    _check(op, "input_gates", xg, 3, hx)
    _check(op, "hidden_gates", hg, 3, hx)
    return FusedGRUCell.apply(xg, hg, hx)
