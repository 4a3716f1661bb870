"""In-place methods (``x.add_(y)``, ``x += y``, ``x[i] = v``...) and why they are dangerous.

An in-place op overwrites a tensor's memory. That is what optimizers want
(``p.add_(-lr * g)`` under ``no_grad``), and what autograd fears: a node may
have *saved* that tensor for its backward. So every in-place change bumps the
tensor's version counter (shared with its views), each saved tensor remembers
the version it saw, and backward refuses a saved tensor whose version moved.

Four cases, as in PyTorch:

* nothing needs a graph (grad mode off, or no tensor involved requires grad):
  write the new values and bump the version. This is the optimizer path.
* a **leaf** that requires grad, with grad mode on: refused. Its old value is
  what the gradient is *of*; changing it would make ``.grad`` meaningless.
* a **non-leaf** (or a plain tensor meeting one that requires grad): compute
  the op out of place on a copy of the old value, write the result into the
  tensor's memory, and *rebase* the tensor: its ``grad_fn`` becomes the new
  node, whose input edge is the old ``grad_fn``. Gradients stay right.
* a **view** of a tensor in the graph (``x[0].mul_(2)``): the change is a
  change of its base, so the *base* is rebased (:func:`write_through_view`,
  PyTorch's ``CopySlices``), unless the base is a leaf that requires grad.

The nodes these changes record are ops like any other, in ``gradlab/ops/assignment.py`` (``SetItem`` for
``x[i] = v``, ``Overwrite`` for a tensor overwritten whole); this module reaches them at call time
through ``_tensor._ops``, as it reaches every op.

An op's in-place variant (``x.exp_()``, ``x.add_(y)``, ``x.index_add_(...)``) comes from the op's
registry entry (``register(..., inplace=True)``): the ops' registry installs it on
:class:`~gradlab.Tensor`, built by :func:`variant` here, or names one of the few written by hand
below (``div_``, ``lerp_``). The methods that are no op's variant (``zero_``,
``copy_``, ``x += y``, ``x[i] = v``...) are installed when ``gradlab.autograd`` is imported
(this module needs the ops, which the tensor layer may not import).
"""
from __future__ import annotations

import numpy as np

from .. import _tensor as _tensor_mod
from .._tensor import Tensor
from ..backend import dtypes as _dt, xp_of
from ..errors import DTypeError, GradError, ShapeError, fmt_shape
from .grad_mode import state as _grad_state
from .indices import assign, normalize_index
from .views import positions_in, refresh_view


def _set_tangent(t, tangent):
    from .forward_ad import _set_tangent as set_
    set_(t, tangent)


def _O():
    return _tensor_mod._ops


def _assignment():
    """``gradlab/ops/assignment.py``, whose op classes record the changes made here (``SetItem`` for
    ``x[i] = v``, ``Overwrite``), reached through the ops' handle: this layer does not import the ops."""
    return _tensor_mod._ops.assignment


def _needs_graph(self, others) -> bool:
    """Must the change be recorded, not just written? When grad mode is on and a tensor involved requires grad,
    or, for a view, its base does or has a forward-mode tangent (the base's tangent must follow the change)."""
    if not _grad_state.enabled:
        return False
    if self._requires_grad or any(isinstance(o, Tensor) and o._requires_grad for o in others):
        return True
    base = self._view_base
    return base is not None and (base._requires_grad or base._fw_grad is not None or self._fw_grad is not None
                                 or any(isinstance(o, Tensor) and o._fw_grad is not None for o in others))


def _label(t):
    return f"'{t.name}'" if t.name else f"a tensor of shape {fmt_shape(t.shape)}"


def _refuse_leaf(self, name):
    raise GradError(
        f"{name}: {_label(self)} is a leaf that requires grad, and changing it in place would destroy the value its "
        f"gradient is about; do parameter updates inside `with gradlab.no_grad():` (as optimizers do), "
        f"or compute a new tensor (x = x + ...) instead")


def _write(self, result, name):
    """Copy ``result``'s values into ``self``'s memory (same shape; cast to self's dtype) and bump the version."""
    r = result._data if isinstance(result, Tensor) else result
    shape = np.shape(r)
    if tuple(shape) != self._data.shape:
        try:
            ok = np.broadcast_shapes(shape, self._data.shape) == self._data.shape
        except ValueError:
            ok = False
        if not ok:
            raise ShapeError(
                f"{name}: the result has shape {fmt_shape(shape)} but {_label(self)} has shape "
                f"{fmt_shape(self.shape)}; an in-place op cannot change a tensor's shape (write x = x ... instead)")
    rdt = getattr(r, "dtype", None)
    if rdt is not None and _dt.category(rdt) > _dt.category(self.dtype):
        raise DTypeError(
            f"{name}: the result has dtype {_dt.dtype_name(rdt)}, which cannot be stored in place in {_label(self)} "
            f"of dtype {_dt.dtype_name(self.dtype)}; convert first (x = x.float()) or use an out-of-place op")
    try:
        self._data[...] = r
    except ValueError as e:
        raise GradError(f"{name}: cannot write into {_label(self)}: {e} (it may be a broadcast view; "
                        ".clone() it first)") from None
    bump_version(self)


def bump_version(t):
    """Count one in-place change of ``t`` on its version counter (shared by its views), so a saved tensor
    that backward reads later is seen to have changed. For code that writes ``t``'s array itself (the
    running statistics of a batch-norm layer), not through ``apply_inplace``."""
    v = t._version
    v.value += 1
    if t.name:
        v.name = t.name


def apply_inplace(self, name, compute, others=()):
    """Run ``compute(old) -> Tensor`` as an in-place change of ``self`` (see the module doc)."""
    if self._is_inference and not _grad_state.inference:
        raise GradError(f"{name}: {_label(self)} was made inside inference_mode(); it can only be changed in place "
                        "there (as in PyTorch). Change a copy instead: t = t.clone()")
    if self._multi_view is not None and _grad_state.enabled and (
            self._requires_grad or (self._view_base is not None and self._view_base._requires_grad)
            or any(isinstance(o, Tensor) and o._requires_grad for o in others)):
        raise GradError(
            f"{name}: {_label(self)} is one of the views {self._multi_view} returned, and such views cannot be "
            "changed in place while gradients are recorded (as in PyTorch: the op's one backward node serves them "
            f"all). Use an out-of-place op (y = v * 2), or .clone() the piece first")
    if not _needs_graph(self, others):
        result = compute(self)
        _write(self, result, name)
        if self._fw_grad is not None or (isinstance(result, Tensor) and result._fw_grad is not None):
            _set_tangent(self, getattr(result, "_fw_grad", None))
        return self
    if self._view_base is not None:
        return write_through_view(self, name, compute)
    if self._requires_grad and self.grad_fn is None:
        _refuse_leaf(self, name)
    result = compute(_old_value(self))
    _write(self, result, name)
    rebase(self, result)
    return self


def _old_value(t):
    """A copy of ``t``'s current value, standing where ``t`` stands in the graph: the input of the in-place node."""
    old = Tensor._make(t._data.copy(), t._requires_grad, t.grad_fn, t._output_nr)
    if t._fw_grad is not None:
        old._fw_grad = t._fw_grad
    return old


def rebase(t, new):
    """Make ``t`` (whose memory already holds ``new``'s values) the output of ``new``'s node.

    This is what "the graph follows an in-place change" means: from now on the
    gradient of anything computed from ``t`` flows into the in-place op's node,
    and from there to ``t``'s old node. ``retain_grad()`` moves with the
    tensor, as in PyTorch: ``t.grad`` is the gradient of its new value.
    """
    old_fn, old_nr = t.grad_fn, t._output_nr
    if new._requires_grad:
        # ``b = zeros(3); v = b[:2]; b.copy_(w)``: ``v`` shows ``b``'s memory, now computed from ``w``.
        # Its node is stale (it had none), so it requires grad from now on, and the next op that uses it
        # rebuilds it from ``b``'s graph (``views.refresh_view``; refused there for a view made under
        # no_grad), as in PyTorch; otherwise ``w`` would silently get no gradient through ``v``.
        for ref in t.__dict__.pop("_plain_views", ()):
            v = ref()
            if v is not None:
                v._requires_grad = True
    t._requires_grad = new._requires_grad
    t.grad_fn = new.grad_fn
    t._output_nr = new._output_nr
    if t._fw_grad is not None or new._fw_grad is not None:
        _set_tangent(t, new._fw_grad)
    if t._retains_grad:
        if old_fn is not None and old_fn._retained:
            old_fn._retained.pop(old_nr, None)
        t._retains_grad = False
        if t.grad_fn is not None:
            t.retain_grad()


def write_through_view(view, name, compute):
    """An in-place change of a view, recorded as a change of its base (PyTorch's ``CopySlices``).

    ``v = h[0]; v.mul_(2)`` changes ``h`` too: its first row is doubled. Rebasing
    only ``v`` (as for a tensor that is not a view) would leave ``h.grad_fn``
    describing the old ``h``, a silently wrong gradient for anything computed
    from ``h`` afterwards. So the change is recorded on the base ``h`` (the
    tensor at the root of the chain of views), in three steps:

    1. compute the new value of the view out of place: ``r = compute(old v)``,
       whose graph goes back through the view op to the old ``h`` (and to any
       other tensor the op read: ``v.add_(w)``);
    2. write ``r`` into the shared memory, and make ``h`` the output of
       "old ``h`` with the view's positions replaced by ``r``":
       ``h_new = setitem(h_old.reshape(-1), positions, r).reshape(h.shape)``.
       Its backward sends ``dh`` to the old ``h`` with zeros at those
       positions (they were overwritten) and ``dh[positions]`` to ``r``;
    3. refresh ``v`` (and, lazily, every other view of ``h``): its node becomes
       ``h_new.reshape(-1)[positions]`` (``views.refresh_view``).

    ``positions`` are found by memory address (``views.positions_in``), so this
    one rule serves every view op (indexing, ``t()``, ``view``, ``diagonal``,
    ``expand``...). What PyTorch refuses is refused here too: a view of a leaf
    that requires grad, a view made under ``no_grad()``, and a view whose
    elements overlap in memory (``expand`` of a size-1 dim).
    """
    base = view._view_base
    if view._view_no_grad:
        raise GradError(
            f"{name}: {_label(view)} is a view made under no_grad() (or inference_mode()) and is being changed in place "
            "while gradients are recorded; whether the change should be recorded is ambiguous, so it is refused (as in "
            "PyTorch). Make both the view and the change inside no_grad(), or both outside it")
    if base._requires_grad and base.grad_fn is None:
        raise GradError(
            f"{name}: {_label(view)} is a view of {_label(base)}, a leaf that requires grad, and changing it in place "
            "would destroy the value the gradient is about (as in PyTorch); do the update inside "
            "`with gradlab.no_grad():`, or change a copy (y = x.clone(); y[0].mul_(2))")
    if view._vcounter.value != view._view_version:
        refresh_view(view)  # (its base changed in place since the view was made)
    positions = positions_in(view._data, base._data)
    if positions is None or np.unique(positions).size != positions.size:
        raise GradError(
            f"{name}: more than one element of {_label(view)} refers to the same memory (an expand of a size-1 dim), "
            "or gradlab cannot locate it in its base, so an in-place change is ambiguous (as in PyTorch); "
            ".clone() the view first and change the copy")
    result = compute(_old_value(view))
    _write(view, result, name)
    if result.dtype != view.dtype:
        result = result.to(view.dtype)
    O = _O()
    old_base = Tensor._make(base._data, base._requires_grad, base.grad_fn, base._output_nr)
    if base._fw_grad is not None:
        old_base._fw_grad = base._fw_grad
    flat = O.reshape(old_base, (-1,))
    new_base = O.reshape(_assignment().SetItem.apply(flat, result, (positions,)), base.shape)
    rebase(base, new_base)
    refresh_view(view)
    if result._fw_grad is not None:
        _set_tangent(view, result._fw_grad)
    return view


def _replace(value):
    """``compute`` for ops that overwrite every element: the old value gets a zero gradient."""
    def compute(s):
        O = _O()
        if isinstance(value, Tensor) and (value._requires_grad or value._fw_grad is not None):
            keep = Tensor._make(xp_of(s._data).zeros(s.shape, dtype=bool))
            v = value if value.dtype == s.dtype else value.to(s.dtype)
            return O.where(keep, s, v)
        v = value._data if isinstance(value, Tensor) else value
        out = xp_of(s._data).empty_like(s._data)
        out[...] = v
        if s._requires_grad:  # still an output of the graph, with gradient 0 to the old value
            return _assignment().Overwrite.apply(s, out)
        return Tensor._make(out)
    return compute


# ------------------------------------------------------------------ methods
def variant(op_name, fn):
    """The usual in-place variant of the op ``fn``: ``x.<op_name>_(...)`` writes ``fn(x, ...)`` into ``x``.

    An op's registry entry asks for it (``register(..., inplace=True)``), and the registry installs
    it on Tensor as ``<op_name>_``: one rule for ``x.exp_()``, ``x.add_(y, alpha=2)``, ``x.clamp_(0, 1)``...
    """
    name = op_name + "_"

    def method(self, *args, **kwargs):
        others = tuple(a for a in (*args, *kwargs.values()) if isinstance(a, Tensor))
        return apply_inplace(self, name, lambda s: fn(s, *args, **kwargs), others)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``{op_name}`` in place: ``x.{name}(...)`` writes ``x.{op_name}(...)`` into ``x``."
    return method


# The in-place variants with rules of their own; their ops' registry entries name them (``inplace=div_``).
def div_(self, other, *, rounding_mode=None):
    """``self /= other`` in place (``rounding_mode``: None, 'floor' or 'trunc')."""
    def compute(s):
        q = _O().div(s, other)
        if rounding_mode == "floor":
            q = _O().floor(q)
        elif rounding_mode == "trunc":
            q = _O().trunc(q)
        elif rounding_mode is not None:
            raise ValueError(f"div_: rounding_mode must be None, 'floor' or 'trunc', got {rounding_mode!r}")
        return q
    return apply_inplace(self, "div_", compute, (other,))


def lerp_(self, end, weight):
    """``self += weight * (end - self)`` in place (exponential moving averages)."""
    return apply_inplace(self, "lerp_", lambda s: _O().add(s, _O().mul(_O().sub(end, s), weight)), (end, weight))


# ---------------------------------------------- in-place methods that are no op's variant
def zero_(self):
    """Set every element to 0 (``optimizer.zero_grad(set_to_none=False)`` uses this)."""
    if not _needs_graph(self, ()):
        self._data.fill(0)
        bump_version(self)
        return self
    return apply_inplace(self, "zero_", _replace(0))


def fill_(self, value):
    """Set every element to ``value`` (a number or a one-element tensor)."""
    if isinstance(value, Tensor) and value.numel() != 1:
        raise ShapeError(f"fill_: value must be a number or a one-element tensor, got shape {fmt_shape(value.shape)}")
    _dt.check_fits(value, self.dtype, "fill_")
    if not _needs_graph(self, (value,)):
        self._data[...] = value._data if isinstance(value, Tensor) else value
        bump_version(self)
        return self
    return apply_inplace(self, "fill_", _replace(value), (value,))


def copy_(self, src, non_blocking=False):
    """Copy ``src``'s values (broadcast, cast to this dtype) into this tensor; gradient flows to ``src``."""
    if not isinstance(src, Tensor):
        from ..factories import tensor
        src = tensor(src, dtype=self.dtype)
    if not _needs_graph(self, (src,)) and src._fw_grad is None and self._fw_grad is None:
        _write(self, src._data.astype(self.dtype, copy=False) if src.dtype != self.dtype else src._data, "copy_")
        return self
    return apply_inplace(self, "copy_", _replace(src), (src,))


def addcmul_(self, tensor1, tensor2, *, value=1):
    """``self += value * tensor1 * tensor2`` in place (Adam's second moment)."""
    return apply_inplace(self, "addcmul_", lambda s: _O().add(s, _O().mul(_O().mul(tensor1, tensor2), value)),
                         (tensor1, tensor2))


def addcdiv_(self, tensor1, tensor2, *, value=1):
    """``self += value * tensor1 / tensor2`` in place (Adam's update)."""
    return apply_inplace(self, "addcdiv_", lambda s: _O().add(s, _O().mul(_O().div(tensor1, tensor2), value)),
                         (tensor1, tensor2))


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill with samples from N(mean, std^2), from gradlab's seeded generator (for init)."""
    from ..factories import randn
    return _fill_random(self, "normal_", lambda: randn(*self.shape, dtype=_float_dtype(self), device=self.device) * std + mean)


def uniform_(self, a=0.0, b=1.0, *, generator=None):
    """Fill with samples from U(a, b), from gradlab's seeded generator (for init)."""
    from ..factories import rand
    return _fill_random(self, "uniform_", lambda: rand(*self.shape, dtype=_float_dtype(self), device=self.device) * (b - a) + a)


def _float_dtype(t):
    if not _dt.is_floating(t.dtype):
        raise DTypeError(f"random fill: {_label(t)} has dtype {_dt.dtype_name(t.dtype)}; it needs a floating dtype")
    return t.dtype


def _fill_random(self, name, draw):
    if _needs_graph(self, ()):
        return apply_inplace(self, name, _replace(draw()))
    _write(self, draw(), name)
    return self


def clip_(self, min=None, max=None):  # noqa: A002 - PyTorch's names
    """Same as ``clamp_`` (``clip`` is PyTorch's other spelling of ``clamp``)."""
    return self.clamp_(min, max)


def square_(self):
    """``self *= self`` in place (``square`` is ``mul`` in the registry, whose variant is ``mul_``)."""
    return apply_inplace(self, "square_", lambda s: _O().square(s))


# ``x += y`` and friends are the ops' variants, which the registry installs (``add_``...)
def _iadd(self, other):
    return self.add_(other)


def _isub(self, other):
    return self.sub_(other)


def _imul(self, other):
    return self.mul_(other)


def _itruediv(self, other):
    return self.div_(other)


# ---------------------------------------------------------------- setitem
def _check_index_put_dtype(self, idx, value):
    """PyTorch converts a value of another dtype in ``x[1:3] = v`` (a copy into a view) but not through index
    tensors (``x[idx] = v`` is ``index_put_``: "Index put requires the source and destination dtypes match"),
    except a one-element value under boolean masks (a ``masked_fill``)."""
    parts = idx if isinstance(idx, tuple) else (idx,)
    arrays = [i for i in parts if hasattr(i, "dtype") and hasattr(i, "ndim") and (i.ndim > 0 or i.dtype == np.bool_)]
    if not arrays or (value.numel() == 1 and all(i.dtype == np.bool_ for i in arrays)):
        return
    from .. import checks as _c
    _c.same_dtype("setitem", input=self, value=value,
                  hint=f"an assignment through index tensors (x[idx] = v) does not convert v (a slice, x[1:3] = v, "
                       f"does); write x[idx] = v.to(gradlab.{_dt.dtype_name(self.dtype)})")


def setitem(self, index, value):
    """``self[index] = value``: in place, recorded in the graph when needed."""
    idx = normalize_index(index, self.shape, "setitem")
    if isinstance(value, (list, tuple)) or (isinstance(value, np.ndarray)):
        from ..factories import tensor
        value = tensor(value, dtype=self.dtype)
    from ..errors import GradlabError, IndexOutOfRange
    if isinstance(value, Tensor) and value.dtype != self.dtype:
        _check_index_put_dtype(self, idx, value)
    _dt.check_fits(value, self.dtype, "setitem")
    try:
        dual = self._fw_grad is not None or getattr(value, "_fw_grad", None) is not None  # forward-mode tangents
        if not dual and not _needs_graph(self, (value,)):
            assign(self._data, idx, value._data if isinstance(value, Tensor) else value)
            bump_version(self)
            return
        if isinstance(value, Tensor) and value.dtype != self.dtype:
            value = value.to(self.dtype)
        set_item = _assignment().SetItem
        apply_inplace(self, "setitem", lambda s: set_item.apply(s, value, idx), (value,))
    except GradlabError:
        raise
    except IndexError as e:  # NumPy's complaint, with the tensor's shape (graph or no graph alike)
        raise IndexOutOfRange(f"setitem: {e} (indexing a tensor of shape {fmt_shape(self.shape)})") from None
    except ValueError as e:
        vs = fmt_shape(value.shape) if isinstance(value, Tensor) else type(value).__name__
        raise ShapeError(f"setitem: cannot assign a value of shape {vs} to {_label(self)}[{index!r}]: {e}") \
            from None


#: The in-place methods that are no op's variant (an op's variant comes from its registry entry,
#: ``register(..., inplace=...)``: ``add_``, ``exp_``, ``clamp_``, ``index_add_``, ``div_``...).
METHODS = {
    "zero_": zero_, "fill_": fill_, "copy_": copy_, "clip_": clip_, "square_": square_, "addcmul_": addcmul_,
    "addcdiv_": addcdiv_, "normal_": normal_, "uniform_": uniform_, "__iadd__": _iadd, "__isub__": _isub,
    "__imul__": _imul, "__itruediv__": _itruediv, "__setitem__": setitem,
}


def install():
    """Give Tensor its in-place methods that are no op's variant (kept where another layer already defined one)."""
    for name, fn in METHODS.items():
        if name not in Tensor.__dict__:
            setattr(Tensor, name, fn)
