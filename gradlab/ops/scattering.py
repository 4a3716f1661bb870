"""``scatter`` and ``scatter_add``: writing ``src`` into ``input`` at positions given by an index tensor.

``scatter``'s VJP is a ``gather`` for ``src`` and a hole for ``input`` (the positions that were
overwritten had no effect on the output); ``scatter_add``'s passes the whole gradient to ``input``
and gathers it for ``src``.
"""
from __future__ import annotations

import numpy as np

from .. import checks as _c, ops as O
from .._tensor import Tensor
from ..autograd.function import Op
from ..backend.arrays import scatter_add as _scatter_add
from ..errors import ArgumentError, ArgumentTypeError, ShapeError, fmt_shape
from ._util import OneRule, apply_in, check_tensor, is_scalar
from .indexing import IndexAddZeros, _along, _check_gather, _index_arg
from .registry import Sample, register


def _head(shape):
    """The basic index selecting the leading block of ``shape`` (``src[:i0, :i1, ...]``)."""
    return tuple(slice(0, s) for s in shape)


# ---------------------------------------------------------- scatter, scatter_add
class Scatter(OneRule, Op):
    name = "scatter"
    formula = "dX = dY with the written positions set to 0 ; dSrc = gather(dY, dim, index)"

    @staticmethod
    def kernel(a, src, dim, index):
        """A copy of array ``a`` with ``src`` (an array, or a number) written at ``index`` along ``dim``."""
        out = a.copy()
        out[_along(index._data, dim)] = src if is_scalar(src) else src[_head(index.shape)]
        return out

    @staticmethod
    def forward(ctx, x, src, dim, index):
        ctx.dim, ctx.index = dim, index
        ctx.src_shape = src.shape if isinstance(src, Tensor) else None
        return Scatter.kernel(x._data, src._data if isinstance(src, Tensor) else src, dim, index)

    def rule(self, ns, g):  # the VJP, on tensors and arrays alike (OneRule)
        nf = self.next_functions
        dx = None if nf[0] is None else apply_in(ns, Scatter, g, 0.0, self.dim, self.index)
        dsrc = None
        if self.src_shape is not None and nf[1] is not None:
            dsrc = _pad(ns, _gather(ns, g, self.dim, self.index), self.src_shape)
        return dx, dsrc, None, None

    def jvp(self, tx, tsrc, *_):
        x, src = self.args[0], self.args[1]
        tx = O.zeros_like(x) if tx is None else tx
        if isinstance(src, Tensor):
            tsrc = O.zeros_like(src) if tsrc is None else tsrc
        else:
            tsrc = 0.0
        return Scatter.apply(tx, tsrc, self.dim, self.index)


class ScatterAdd(OneRule, Op):
    name = "scatter_add"
    formula = "dX = dY ; dSrc = gather(dY, dim, index)"

    @staticmethod
    def forward(ctx, x, src, dim, index):
        ctx.dim, ctx.index, ctx.src_shape = dim, index, src.shape
        out = x._data.copy()
        _scatter_add(out, _along(index._data, dim), src._data[_head(index.shape)])  # repeats add up (np.add.at)
        return out

    def rule(self, ns, g):  # the VJP, on tensors and arrays alike (OneRule)
        dsrc = None if self.next_functions[1] is None else _pad(ns, _gather(ns, g, self.dim, self.index), self.src_shape)
        return g, dsrc, None, None

    def jvp(self, tx, tsrc, *_):
        x, src = self.args[0], self.args[1]
        tx = O.zeros_like(x) if tx is None else tx
        tsrc = O.zeros_like(src) if tsrc is None else tsrc
        return ScatterAdd.apply(tx, tsrc, self.dim, self.index)


def _gather(ns, g, dim, index):
    """``gather(g, dim, index)`` in a ``OneRule``'s namespace: the op on tensors, indexing on arrays."""
    return O.gather(g, dim, index) if ns is O else g[_along(index._data, dim)]


def _pad(ns, t, shape):
    """Place ``t`` in the leading block of a zero tensor of ``shape`` (src may be larger than index)."""
    return t if tuple(t.shape) == tuple(shape) else apply_in(ns, IndexAddZeros, t, _head(t.shape), tuple(shape))


def _check_scatter(op, x, dim, index, src):
    index = _index_arg(index, op, x)
    d, index = _check_gather(op, x, dim, index)
    if isinstance(src, Tensor):
        if src.ndim != index.ndim or any(i > s for i, s in zip(index.shape, src.shape)):
            raise ShapeError(f"{op}: index {fmt_shape(index.shape)} is larger than src {fmt_shape(src.shape)}; "
                             "src needs the same number of dims and at least index's size in each")
    return d, index


def _scatter_src(op, x, src):
    if isinstance(src, Tensor):
        _c.same_dtype(op, input=x, src=src)  # PyTorch: "scatter(): Expected self.dtype to be equal to src.dtype"
        return src
    if is_scalar(src):
        return src
    raise ArgumentTypeError(f"{op}: src must be a Tensor or a number, got {type(src).__name__}")


def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    """``out = input.clone(); out[index[i][j]][j] = src[i][j]`` for ``dim=0`` (and so on).

    ``src`` may be a tensor or a number (``value=`` also works). With repeated
    indices PyTorch leaves it undefined which write wins; gradlab keeps the last.
    ``reduce='add'`` is ``scatter_add``. In place, ``x.scatter_(1, labels.unsqueeze(1), 1.0)`` builds
    one-hot rows.
    """
    x = check_tensor(input, "scatter")
    if src is None:
        src = value
    if src is None:
        raise ArgumentTypeError("scatter: give src (a tensor) or value (a number)")
    if reduce is not None:
        if reduce != "add" or not isinstance(src, Tensor):
            raise ArgumentError(f"scatter: reduce={reduce!r} is not supported; use scatter_add for 'add'")
        return scatter_add(x, dim, index, src)
    src = _scatter_src("scatter", x, src)
    if x.ndim == 0:  # a 0-d tensor behaves as one element along dim 0
        return O.reshape(scatter(O.reshape(x, (1,)), 0, _lift(index), _lift(src)), ())
    d, index = _check_scatter("scatter", x, dim, index, src)
    return Scatter.apply(x, src, d, index)


def scatter_add(input, dim, index, src):
    """``out = input.clone(); out[index[i][j]][j] += src[i][j]`` for ``dim=0``: repeated indices add up.

    This is the VJP of ``gather``, and how a graph network sums messages per node."""
    x = check_tensor(input, "scatter_add")
    src = check_tensor(_scatter_src("scatter_add", x, src), "scatter_add", "src")
    if x.ndim == 0:
        return O.reshape(scatter_add(O.reshape(x, (1,)), 0, _lift(index), _lift(src)), ())
    d, index = _check_scatter("scatter_add", x, dim, index, src)
    return ScatterAdd.apply(x, src, d, index)


def _lift(t):
    return O.reshape(t, (1,)) if isinstance(t, Tensor) and t.ndim == 0 else t


def _distinct_index(src, shape, d, ishape):
    """An index of ``ishape`` whose entries along ``d`` never repeat (so scatter is deterministic)."""
    full = tuple(shape[d] if i == d else s for i, s in enumerate(ishape))
    order = np.argsort(src.rng.random(full), axis=d)
    return Tensor._make(np.ascontiguousarray(order[_head(ishape)]).astype(np.int64))


def _scatter_samples(distinct):
    def samples(src):
        shape = src.shape(1, 3, 1, 4)
        d = src.dim(len(shape)) % len(shape)
        ishape = tuple(src.integers(1, s) for s in shape)
        idx = _distinct_index(src, shape, d, ishape) if distinct else src.index_tensor(ishape, shape[d])
        sshape = ishape  # (a larger src works too, but PyTorch's own backward rejects it: no oracle)
        yield Sample((src.tensor(shape), d, idx, src.tensor(sshape)), desc="src tensor")
        if distinct:
            yield Sample((src.tensor(shape), d - len(shape), idx), dict(value=1.5), desc="value")
        else:
            yield Sample((src.tensor((3,)), 0, Tensor._make(np.array([0, 0, 2, 0])), src.tensor((4,))),
                         desc="repeated indices add up")
    return samples


register("scatter", method=True, op=Scatter, samples=_scatter_samples(True), inplace=True,
         torch=lambda torch, x, d, idx, src=None, value=None: torch.scatter(x, d, idx, src if src is not None
                                                                            else value))(scatter)
register("scatter_add", method=True, op=ScatterAdd, samples=_scatter_samples(False), inplace=True,
         torch=lambda torch, x, d, idx, src: torch.scatter_add(x, d, idx, src))(scatter_add)
