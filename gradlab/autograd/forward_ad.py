"""Forward-mode AD with dual numbers (``torch.autograd.forward_ad``'s API).

Reverse mode pushes a gradient *backward* from one output; forward mode pushes
a *tangent* forward from the inputs, alongside the values. A dual tensor is a
pair (primal, tangent); every op maps its inputs' tangents to its output's
tangent with its JVP rule (``Op.jvp``, written beside the VJP). One forward pass
gives ``J @ v`` for one direction ``v``: cheap when there are few inputs and
many outputs -- the mirror image of reverse mode.

    with dual_level():
        x = make_dual(x0, v)          # x carries the tangent v
        y = f(x)                      # tangents flow through every op
        y_primal, jvp = unpack_dual(y)

While a level is active, :func:`_propagate` is installed as
``gradlab.autograd.function.forward_ad_hook[0]``; ``Function.apply`` calls it
after any op whose inputs carry a tangent. Outside a level nothing costs
anything: ``apply`` only tests that the hook slot is empty.
"""
from __future__ import annotations

import contextlib
import weakref
from collections import namedtuple

import numpy as np

from .. import _tensor as _tensor_mod
from .._tensor import Tensor
from ..backend import dtypes as _dt
from ..errors import DTypeError, GradError, ShapeError, fmt_shape
from . import function as _fn

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])

_level = [None]          # the active level number, or None
_duals: list = []        # weak references to every tensor given a tangent at this level
_nodes: list = []        # weak references to nodes keeping tangents of saved outputs


class _SavedWithTangent(_fn.SavedTensor):
    """A saved output that also gives back its tangent (forward over reverse, e.g. ``jacfwd(jacrev(f))``).

    Only nodes recorded inside a dual level get this class, so the ordinary
    ``SavedTensor.get`` pays nothing for forward mode.
    """

    __slots__ = ()

    def get(self, node):
        t = _fn.SavedTensor.get(self, node)
        fw = node._saved_fw
        if fw is not None and self.output_nr is not None and t._fw_grad is None:
            t._fw_grad = fw.get(self.output_nr)
        return t


def _alias(t: Tensor) -> Tensor:
    """A fresh tensor sharing ``t``'s data and version counter (with no tangent)."""
    hook = _fn.forward_ad_hook[0]
    _fn.forward_ad_hook[0] = None
    try:
        out = _ops().shape.Alias.apply(t)  # (the identity node, in gradlab/ops/shape.py)
    finally:
        _fn.forward_ad_hook[0] = hook
    out._version = t._version
    return out


def _set_tangent(t: Tensor, tangent):
    t._fw_grad = tangent
    _duals.append(weakref.ref(t))


def _propagate(node, args, outputs):
    """The forward-AD hook: compute ``node``'s output tangent(s) with its JVP rule."""
    multi = type(outputs) is tuple
    outs = outputs if multi else (outputs,)
    if not any(_dt.is_floating(o.dtype) for o in outs):
        return  # integer / bool results carry no tangent
    tangents = tuple(a._fw_grad if isinstance(a, Tensor) else None for a in args)
    node.args, node.out = args, outputs
    _fn.forward_ad_hook[0] = None  # the JVP's own ops compute plain tangents, not tangents of tangents
    try:
        res = node.jvp(*tangents)
    except GradError:
        raise
    except NotImplementedError:
        raise GradError(_missing(node)) from None
    finally:
        _fn.forward_ad_hook[0] = _propagate
        node.args = node.out = None  # no cycle output -> node -> output
    if res is None:
        return
    res = res if type(res) is tuple else (res,)
    if len(res) != len(outs):
        raise GradError(f"forward-mode AD: {node.name}.jvp returned {len(res)} tangent(s) for {len(outs)} "
                        "output(s); return one per output (None for none)")
    for o, t in zip(outs, res):
        if t is None or not _dt.is_floating(o.dtype):
            continue
        if not isinstance(t, Tensor):
            raise GradError(f"forward-mode AD: {node.name}.jvp returned a {type(t).__name__}; return Tensors")
        if t.shape != o.shape and _broadcasts(t.shape, o.shape):
            t = _ops().broadcast_to(t, o.shape)  # e.g. add's tangent when only the smaller input has one
        if t.shape != o.shape:
            raise ShapeError(f"forward-mode AD: {node.name}.jvp gave a tangent of shape {fmt_shape(t.shape)} for "
                             f"an output of shape {fmt_shape(o.shape)}; a tangent must have its output's shape")
        if t.dtype != o.dtype:
            t = t.to(o.dtype)
        _set_tangent(o, t)
    if node._saved:  # saved outputs are rebuilt in backward: give them their tangent there too
        fw = {s.output_nr: s_out._fw_grad for s in node._saved
              if isinstance(s, _fn.SavedTensor) and s.output_nr is not None
              for s_out in (outs[s.output_nr],) if s_out._fw_grad is not None}
        if fw:
            node._saved_fw = fw
            for s in node._saved:
                if isinstance(s, _fn.SavedTensor) and s.output_nr in fw:
                    s.__class__ = _SavedWithTangent
            _nodes.append(weakref.ref(node))


def _broadcasts(src, dst) -> bool:
    try:
        return np.broadcast_shapes(src, dst) == tuple(dst)
    except ValueError:
        return False


def _ops():
    """``gradlab.ops``, reached at call time through the slot it fills in ``_tensor`` when it is imported
    (this layer is below ops and never imports it)."""
    return _tensor_mod._ops


def _missing(node):
    return (f"forward-mode AD: the op {node.name} has no JVP rule; add a jvp(self, *tangents) method beside its "
            "vjp (one tangent per positional input, None = zero), or use reverse mode (gradlab.func.jacrev)")


@contextlib.contextmanager
def dual_level():
    """Switch forward-mode AD on inside the block; tangents are dropped on exit."""
    if _level[0] is not None:
        raise GradError("forward-mode AD: dual levels cannot be nested in gradlab; "
                        "compute one jvp at a time (or use reverse mode for the inner derivative)")
    _level[0] = 0
    prev = _fn.forward_ad_hook[0]
    _fn.forward_ad_hook[0] = _propagate
    try:
        yield 0
    finally:
        _fn.forward_ad_hook[0] = prev
        _level[0] = None
        for ref in _duals:
            t = ref()
            if t is not None:
                t._fw_grad = None
        _duals.clear()
        for ref in _nodes:
            n = ref()
            if n is not None:
                n._saved_fw = None
                for s in n._saved:
                    if type(s) is _SavedWithTangent:
                        s.__class__ = _fn.SavedTensor
        _nodes.clear()


def enter_dual_level():
    """Non-context form of :func:`dual_level` (pair with :func:`exit_dual_level`)."""
    cm = dual_level()
    cm.__enter__()
    _entered.append(cm)
    return 0


def exit_dual_level(*, level=None):
    if not _entered:
        raise GradError("exit_dual_level: no dual level is active")
    _entered.pop().__exit__(None, None, None)


_entered: list = []


def make_dual(tensor: Tensor, tangent: Tensor, *, level=None) -> Tensor:
    """A dual tensor: ``tensor``'s values carrying ``tangent`` (the direction to differentiate in)."""
    if _level[0] is None:
        raise GradError("make_dual: no forward-AD level is active; call it inside "
                        "`with gradlab.autograd.forward_ad.dual_level():`")
    if not isinstance(tensor, Tensor) or not isinstance(tangent, Tensor):
        raise TypeError(f"make_dual: primal and tangent must be Tensors, got {type(tensor).__name__} and "
                        f"{type(tangent).__name__}")
    check_tangent("make_dual", tensor, tangent)
    out = _alias(tensor) if tensor._requires_grad else _plain_alias(tensor)
    _set_tangent(out, tangent)
    return out


def _plain_alias(t):
    out = Tensor._make(t._data)
    out._version = t._version
    return out


def check_tangent(what, primal, tangent, label="tangent"):
    """Tangent and primal must have the same shape and (floating) dtype."""
    if not _dt.is_floating(primal.dtype):
        raise DTypeError(f"{what}: the primal has dtype {_dt.dtype_name(primal.dtype)}; only floating tensors "
                         "carry tangents")
    if tangent.shape != primal.shape:
        raise ShapeError(f"{what}: the {label} has shape {fmt_shape(tangent.shape)} but the primal has shape "
                         f"{fmt_shape(primal.shape)}; they must match (one tangent entry per primal entry)")
    if tangent.dtype != primal.dtype:
        raise DTypeError(f"{what}: the {label} has dtype {_dt.dtype_name(tangent.dtype)} but the primal has dtype "
                         f"{_dt.dtype_name(primal.dtype)}; convert it with .to(primal.dtype)")


def unpack_dual(tensor: Tensor, *, level=None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of a dual tensor; ``tangent`` is None when it carries none."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"unpack_dual: expected a Tensor, got {type(tensor).__name__}")
    tangent = tensor._fw_grad
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    primal = _alias(tensor) if tensor._requires_grad else _plain_alias(tensor)
    return UnpackedDualTensor(primal, tangent)


def is_active() -> bool:
    return _level[0] is not None
