"""``linear`` and ``bilinear``: the affine maps of ``nn.Linear`` and ``nn.Bilinear``.

* ``linear(x, W, b) = x @ W^T + b``: ``W`` is stored ``(out_features, in_features)`` as in PyTorch, so
  each *row* of ``W`` is one output unit's weights; ``(B, T, in)`` inputs become one large matmul;
* ``bilinear(x1, x2, W, b)``: ``y_o = x1^T W_o x2 + b_o``, one ``(in1, in2)`` matrix per output feature.
"""
from __future__ import annotations

import numpy as np

from .. import checks as _c, ops as O
from .._tensor import Tensor
from ..autograd.function import op_observers as _op_observers
from ..errors import ShapeError, broadcast_failure, fmt_shape
from ..ops._util import check_tensor
from ..ops.products import Linear as _Linear
from ..ops.registry import Sample, register
from ._register import NS, register_table


# ------------------------------------------------------------------- linear
def linear(input, weight, bias=None):
    """``input @ weight^T + bias`` with ``weight`` of shape ``(out_features, in_features)``."""
    # The everyday call first, checked in one test: a matrix input and weight of one dtype of 4 bytes or
    # more that agree on in_features, an (out_features,) bias of that dtype or none, all on one device,
    # nothing watching. It is the call the checks below would send to the one node too; anything else
    # (an error included) goes through them. (A GRU step calls this every time step: the checks below
    # took 20.1 us a call against 15.2 us for the node alone, on (8, 32) @ (96, 32)^T + (96,).)
    if type(input) is Tensor and type(weight) is Tensor and not _op_observers:
        xa, wa = input._data, weight._data
        dt = xa.dtype
        if (xa.ndim == 2 and wa.ndim == 2 and wa.dtype is dt and dt.itemsize >= 4 and xa.shape[1] == wa.shape[1]
                and type(xa) is type(wa)):
            if bias is None:
                return _Linear.apply(input, weight)
            if type(bias) is Tensor:
                ba = bias._data
                if ba.dtype is dt and ba.shape == wa.shape[:1] and type(ba) is type(wa):
                    return _Linear.apply(input, weight, bias)
    x = check_tensor(input, "linear")
    w = check_tensor(weight, "linear", "weight")
    if x.dtype != w.dtype:  # PyTorch: "mat1 and mat2 must have the same dtype" (and the bias too)
        _c.same_dtype("linear", weight=w, input=x,
                      hint=f"convert the input with x.to(gradlab.{w.dtype}) (NumPy data is float64: use x.float()), "
                           "or the layer with .double()")
    if bias is not None:
        _c.same_dtype("linear", weight=w, bias=bias)
    if w.ndim not in (1, 2):
        raise ShapeError(f"linear: weight must be (out_features, in_features), got {fmt_shape(w.shape)}")
    if x.ndim == 0 or x.shape[-1] != w.shape[-1]:
        raise ShapeError(f"linear: input {fmt_shape(x.shape)} has {x.shape[-1] if x.ndim else 0} features in its "
                         f"last dim but weight {fmt_shape(w.shape)} expects {w.shape[-1]} (in_features = "
                         "weight.shape[1])")
    lead = None
    if x.ndim > 2 and w.ndim == 2:  # (B, T, in) -> (B*T, in): one large matrix product, not B small ones
        lead = x.shape[:-1]
        x = O.reshape(x, (-1, x.shape[-1]))
    b = None if bias is None else check_tensor(bias, "linear", "bias")
    one_per_output = b is None or b.shape == w.shape[:-1]  # the usual bias, (out_features,)
    if not one_per_output:  # added to (N, out_features), the leading dims folded into N,
        # as PyTorch's addmm does; the usual (out_features,) bias needs no check (np.broadcast_shapes
        # costs about 2% of a logistic regression's step)
        out_shape = x.shape[:-1] + w.shape[:-1]
        try:
            np.broadcast_shapes(out_shape, b.shape)
        except ValueError:
            raise broadcast_failure("linear", [out_shape, b.shape], ["input @ weight^T", "bias"]) from None
    if x.ndim == 2 and w.ndim == 2 and x.dtype.itemsize >= 4 and not _op_observers and (
            b is None or (one_per_output and b.dtype == w.dtype and type(b._data) is type(w._data))):
        out = _Linear.apply(x, w) if b is None else _Linear.apply(x, w, b)  # the everyday case: one node
    else:  # vectors, half precision, a bias that broadcasts or promotes, or a profiler or trace_shapes watching
        # (they show the matmul and the add, as the engine shows the ops inside each VJP then): the composite
        out = O.matmul(x, w.mT if w.ndim == 2 else w)
        if b is not None:
            out = out + b
    if lead is not None:
        out = O.reshape(out, lead + (w.shape[0],))
    return out


def _linear_samples(src):
    lead = src.shape(0, 2, 1, 3)
    i, o = src.integers(1, 4), src.integers(1, 4)
    yield Sample((src.tensor(lead + (i,)), src.tensor((o, i)), src.tensor((o,))), desc="with bias")
    yield Sample((src.tensor((2, i)), src.tensor((o, i))), desc="no bias")


linear = register("linear", samples=_linear_samples, namespace=NS, autocast="lower",
                  formula="dX = dY @ W ; dW = dY^T @ X ; db = sum(dY over batch dims)",
                  torch=lambda torch, *a, **k: torch.nn.functional.linear(*a, **k))(linear)


def bilinear(input1, input2, weight, bias=None):
    """``y[..., o] = input1 @ weight[o] @ input2 + bias[o]`` with ``weight`` ``(out, in1, in2)``."""
    op = "bilinear"
    a, b, w = check_tensor(input1, op, "input1"), check_tensor(input2, op, "input2"), check_tensor(weight, op, "weight")
    if w.ndim != 3 or a.shape[-1] != w.shape[1] or b.shape[-1] != w.shape[2] or a.shape[:-1] != b.shape[:-1]:
        raise ShapeError(f"{op}: input1 {fmt_shape(a.shape)} and input2 {fmt_shape(b.shape)} must share their "
                         f"leading dims and match weight {fmt_shape(w.shape)} = (out, in1, in2)")
    _c.same_dtype(op, input1=a, input2=b, weight=w, bias=_c.arguments(op, bias=(bias, "tensor?")))
    out, n1, n2 = w.shape
    if bias is not None and tuple(bias.shape) != (out,):
        raise ShapeError(f"{op}: bias {fmt_shape(bias.shape)} must have one entry per output, ({out},) for weight "
                         f"{fmt_shape(w.shape)}")
    t = O.matmul(a, O.reshape(O.permute(w, (1, 0, 2)), (n1, out * n2)))    # (..., out*in2)
    y = O.sum(O.reshape(t, tuple(a.shape[:-1]) + (out, n2)) * O.unsqueeze(b, -2), dim=-1)
    return y if bias is None else y + bias


def _bilinear_samples(src):
    lead = src.shape(1, 2, 1, 3)
    n1, n2, o = src.integers(1, 3), src.integers(1, 3), src.integers(1, 3)
    yield Sample((src.tensor(lead + (n1,)), src.tensor(lead + (n2,)), src.tensor((o, n1, n2)), src.tensor((o,))))


register_table([
    (bilinear, _bilinear_samples, "dx1 = dy W x2 ; dx2 = dy W^T x1 ; dW_o = dy_o x1 x2^T ; db = dy"),
])
