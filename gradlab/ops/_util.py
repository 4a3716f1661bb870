"""Helpers shared by every op module (one home each), so no op file writes its own copy.

* argument checks: ``check_tensor`` (a Tensor; a NumPy array is refused, as PyTorch), ``operand`` and ``arrays_for`` (a
  binary op's two inputs, scalars included), ``device_mismatch``, ``check_broadcast``, ``shape_of``,
  ``shape_str``;
* Python numbers as PyTorch's *weak* scalars: ``is_scalar``, ``weak_float``, ``as_weak`` (a float
  times a float32 tensor stays float32);
* dims and sizes: ``norm_dim`` (one dim or several, negative ones wrapped), ``one_dim``, ``sizes_arg``
  (``reshape(2, 3)`` and ``reshape((2, 3))`` alike);
* promotion: ``to_float``, ``float_input`` (an integer input to a floating op, in the default dtype);
* ``view_of``: mark an op's output as a view of its input (the version counter is shared);
* ``method_spelling``: the docstring of a method spelled like its function;
* ``OneRule``: an op whose VJP is written once, for tensors and for arrays.
"""
from __future__ import annotations

import numbers
import weakref

import numpy as np

from .. import checks as _checks, ops as O
from .._tensor import Tensor
from ..autograd.grad_mode import state as _grad_state
from ..backend import dtypes as _dt
from ..backend.device import xp_of
from ..errors import ArgumentTypeError, DeviceError, broadcast_failure, fmt_shape

Scalar = (numbers.Number, np.number, np.bool_)


def is_scalar(x) -> bool:
    return isinstance(x, Scalar) and not isinstance(x, Tensor)


def check_tensor(x, op: str, arg: str = "input") -> Tensor:
    """Accept a Tensor; anything else is a clear TypeError. A NumPy array too, as PyTorch refuses one
    (``torch.tanh(array)``): the user chooses between sharing its memory (``gradlab.from_numpy``) and
    copying it (``gradlab.tensor``). (The operators are the exception: ``x + array``, see ``_tensor.py``.)"""
    if type(x) is Tensor:
        return x
    if isinstance(x, Tensor):
        return x
    if isinstance(x, np.ndarray):
        raise _checks.numpy_operand(x, op, arg)
    refused = getattr(type(x), "_refused", None)  # a sparse COO tensor says what it supports instead
    if refused is not None:
        refused(x, op)
    raise ArgumentTypeError(f"{op}: {arg} must be a Tensor, got {type(x).__name__}; wrap data with gradlab.tensor(...)")


def operand(x, op: str, arg: str):
    """A binary op's operand: a Tensor, or a Python/NumPy scalar kept as is (a "weak" scalar). A NumPy
    array is refused as PyTorch refuses ``torch.add(x, array)`` (the operator ``x + array`` takes it:
    ``Tensor.__add__`` wraps it first); a list or tuple is refused."""
    if type(x) is Tensor or type(x) is float or isinstance(x, Tensor):
        return x
    if is_scalar(x):
        return x
    if isinstance(x, np.ndarray):
        raise _checks.numpy_operand(x, op, arg)
    if isinstance(x, (list, tuple)):  # refused, as PyTorch refuses add(x, [1, 2, 3]) and x + [1, 2, 3]
        raise ArgumentTypeError(f"{op}: {arg} must be a Tensor or a number, got a {type(x).__name__}; "
                                f"make it a tensor first: gradlab.tensor({x!r})"[:400])
    raise ArgumentTypeError(f"{op}: {arg} must be a Tensor or a number, got {type(x).__name__}")


def arrays_for(op: str, a, b, names=("input", "other")):
    """The arrays to compute a binary op on, promoted as PyTorch does.

    Returns ``(x, y, dtype)``. Python scalars stay Python scalars, so NumPy
    treats them as "weak" and keeps the tensor's dtype (float32 * 2.5 stays
    float32), matching PyTorch.
    """
    # Fast paths for the common cases (this runs for every binary op).
    if type(a) is Tensor:
        x = a._data
        if type(b) is Tensor:
            y = b._data
            if x.dtype == y.dtype:
                if type(x) is not type(y):
                    raise device_mismatch(op, a, b, names)
                return x, y, x.dtype
        elif type(b) is float and x.dtype in _FLOATS:
            return x, b, x.dtype
    elif type(b) is Tensor and type(a) is float and b._data.dtype in _FLOATS:
        return a, b._data, b._data.dtype
    dt = _dt.result_type(a, b)
    if isinstance(a, Tensor):
        x = a._data if a._data.dtype == dt else a._data.astype(dt)
    else:
        x = _scalar(a, dt)
    if isinstance(b, Tensor):
        y = b._data if b._data.dtype == dt else b._data.astype(dt)
    else:
        y = _scalar(b, dt)
    if isinstance(a, Tensor) and isinstance(b, Tensor) and type(a._data) is not type(b._data):
        raise device_mismatch(op, a, b, names)
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):  # where(c, 1.5, 0): no tensor to keep dt
        x, y = dt.type(x), dt.type(y)  # NumPy scalars: accepted next to host and device arrays alike
    return x, y, dt


# the Python-float fast path; not bfloat16, which NumPy would promote to float32 next to a Python float
# (a tuple, float32 first: ``in`` tries identity before equality, where a set would hash the dtype anew)
_FLOATS = (_dt.float32, _dt.float64, _dt.float16)
_F32 = _dt.float32


# Python floats next to float32/float64 host arrays, as read-only 0-d arrays of that dtype (see weak_float):
# one dict per dtype, {float: array}, picked by the dtype's identity. (One dict keyed by (float, dtype) hashed
# the dtype, which NumPy recomputes on every lookup: about 1,100 instructions more a lookup, measured with
# callgrind; the 200-op chain of benchmarks/bench_foundation.py makes 1.25 lookups per op.)
WEAK_FLOAT32: dict = {}
WEAK_FLOAT64: dict = {}


def weak_cache(dt):
    """The dict of cached weak floats for dtype ``dt``, or None where none are cached (16-bit dtypes,
    whose overflow NumPy keeps quiet only for a true Python float; any other dtype: left to NumPy)."""
    return WEAK_FLOAT32 if dt is _dt.float32 else WEAK_FLOAT64 if dt is _dt.float64 else None


def weak_float(v: float, dt):
    """``v`` as NumPy will use it next to an array of float dtype ``dt``, but faster.

    NumPy treats a Python float beside a float32 array as "weak": it is rounded
    to float32 first, then the float32 loop runs (PyTorch does the same). Doing
    that rounding once, into a cached 0-d array, gives the very same numbers and
    halves the cost of ``x * 1.01`` on a small tensor. Hot callers look ``v`` up
    in ``WEAK_FLOAT32`` first (when ``dt`` is float32) and call this otherwise.
    Zero is never cached (``-0.0 == 0.0`` would share a key), nor NaN; a dtype
    without a cache (``weak_cache``) gets ``v`` back, for NumPy to handle.
    """
    cache = weak_cache(dt)
    if cache is None or v == 0 or v != v:
        return v
    a = cache.get(v)
    if a is not None:
        return a
    if len(cache) >= 1024:  # a bound: a learning-rate schedule makes new floats all the time
        cache.clear()
    a = np.array(v, dtype=dt)
    a.flags.writeable = False
    cache[v] = a
    return a


def as_weak(v, like):
    """``v`` ready to combine with array ``like`` (a float gradient): a Python float becomes its
    cached 0-d array (see ``weak_float``); anything else is returned as it is."""
    if type(v) is float and type(like) is np.ndarray:
        dt = like.dtype
        w = WEAK_FLOAT32.get(v) if dt is _F32 else None
        return w if w is not None else weak_float(v, dt)
    return v


def _scalar(v, dt):
    # bools and ints become the promoted dtype's Python kind; NumPy keeps them weak
    if dt == _dt.bfloat16:  # NumPy treats a Python float as float32 next to bfloat16: make it a bfloat16
        return np.asarray(float(v), dtype=dt)
    if dt.kind == "f":
        return float(v)
    if dt.kind == "b":
        return bool(v)
    v = int(v)
    info = np.iinfo(dt)
    if not info.min <= v <= info.max:  # uint8 + (-2): wraps around as in PyTorch (NumPy 2 would raise)
        return np.asarray(v, dtype=np.int64).astype(dt)
    return v


def device_mismatch(op, a, b, names=("input", "other")):
    na = f"'{a.name}'" if a.name else names[0]
    nb = f"'{b.name}'" if b.name else names[1]
    return DeviceError(f"device mismatch: {op} got {na} on {a.device} and {nb} on {b.device}; move one with .to()")


def shape_of(x):
    return x._data.shape if isinstance(x, Tensor) else None


def check_broadcast(op, a, b, names=("input", "other")):
    """Raise the teaching error for shapes that do not broadcast."""
    sa, sb = shape_of(a) or (), shape_of(b) or ()
    try:
        np.broadcast_shapes(sa, sb)
    except ValueError:
        nm = [(f"'{t.name}'" if isinstance(t, Tensor) and t.name else n) for t, n in zip((a, b), names)]
        raise broadcast_failure(op, [sa, sb], nm) from None


# the dim and size checks live in the one checking layer, gradlab/checks.py; these are its names here
norm_dim = _checks.dims
one_dim = _checks.dim


def sizes_arg(sizes, op) -> tuple:
    """Accept ``f(x, 2, 3)`` and ``f(x, (2, 3))`` alike: a tuple of ints (``operator.index``-able: a float
    or a string is a TypeError, never truncated). Ranges are the caller's to check."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    out = []
    for s in sizes:
        i = _checks._index(s)
        if i is None:
            raise ArgumentTypeError(f"{op}: sizes must be integers, got {tuple(sizes)!r} (a {type(s).__name__} inside)")
        out.append(int(i))
    return tuple(out)


def view_of(out: Tensor, base: Tensor) -> Tensor:
    """Make ``out`` share ``base``'s version counter when it is a view of the same memory.

    The view also remembers the tensor whose memory it shows (the first tensor
    up a chain of views) and the version it was made at: if that tensor is
    later changed in place, the view's values change with it, and the next op
    that uses the view rebuilds its graph from the tensor's new one
    (``autograd.views.refresh_view``), as PyTorch does. A view made under
    ``no_grad()`` (or from one) is marked: changing it in place while recording
    is refused (``autograd.inplace``), as PyTorch refuses it. A view of a tensor that needs no
    gradient is remembered (weakly) by that tensor, for the day an in-place op puts it in a graph.
    """
    d = out._data
    owner = getattr(d, "base", None)  # NumPy: the array that owns the memory, whatever chain of views led here
    # (NumPy's reshape of a non-contiguous array copies into a temporary it then views: not a view of
    # ``base``. The owner is checked first: ``base``'s own array or its owner is the usual view, known
    # without np.may_share_memory's overlap test, about 1% of a GRU step's time.)
    if owner is not None and (owner is base._data or owner is getattr(base._data, "base", None)
                              or type(d) is not np.ndarray or np.may_share_memory(d, base._data)):
        vc = out._version = base._version
        root = out._view_base = base._view_base if base._view_base is not None else base
        out._view_version = vc.value
        out._view_fn = root.grad_fn
        if base._view_no_grad or not _grad_state.enabled:
            out._view_no_grad = True
        if not out._requires_grad:
            # A view that records nothing (of a plain tensor, or made under no_grad): if an in-place op
            # later puts that tensor's new values in a graph (``b.copy_(w)``), the view shows them too, so
            # it must then require grad (``autograd.inplace.rebase`` marks it; its next use rebuilds its
            # node, or refuses a view made under no_grad, as PyTorch does).
            # (A list of weak references, pruned of dead ones whenever its length reaches a power of two: a
            # data tensor sliced every batch keeps a short list. Not a WeakSet: that compares tensors with ==.)
            views = root.__dict__.get("_plain_views")
            if views is None:
                views = root._plain_views = []
            elif len(views) >= 32 and not len(views) & (len(views) - 1):
                views[:] = [r for r in views if r() is not None]
            views.append(weakref.ref(out))
    return out


def multi_views(views: tuple, op: str) -> tuple:
    """Mark each of several views one call returned (``unbind``, ``split``): PyTorch refuses to change
    such a view in place while recording, since one backward node serves them all."""
    for v in views:
        v._multi_view = op
    return views


def shape_str(x) -> str:
    return fmt_shape(x.shape)


def method_spelling(name, doc):
    """The function spelling of a Tensor method: ``gradlab.sort(x, ...)`` is ``x.sort(...)``."""
    def fn(input, *args, **kwargs):
        return getattr(check_tensor(input, name), name)(*args, **kwargs)
    fn.__name__, fn.__doc__ = name, doc
    fn.__code__ = fn.__code__.replace(co_name=name, co_qualname=name)  # errors name it (errors.public_name)
    return fn


def to_float(x):
    """``x`` if it is floating, else ``x`` in the default float dtype: PyTorch computes
    ``torch.sin(int_tensor)`` (and exp, log, gelu, logsumexp...) in float32. The one int -> float
    promotion of the ops."""
    return x if _dt.category(x.dtype) >= 2 else x.to(_dt.get_default_dtype())


def float_input(input, op, arg="input"):
    """``check_tensor(input, op, arg)`` promoted by :func:`to_float`."""
    return to_float(check_tensor(input, op, arg))


def floating_input(input, op, arg="input"):
    """``check_tensor(input, op, arg)``, refused unless floating: for the ops PyTorch does not define on
    integer tensors (gelu, silu, softplus, leaky_relu, elu...), where promoting would accept what it refuses."""
    return _checks.floating(check_tensor(input, op, arg), op, arg)


class OneRule:
    """Mixin for an op whose VJP is written once, as ``rule(self, ns, g, *saved)``.

    ``vjp`` runs the rule on ``saved_tensors`` with ``ns = O`` (gradlab's ops: a graph, differentiable
    again); ``vjp_arrays``, the engine's fast path, runs the very same rule on ``saved_arrays`` with
    ``ns`` the array module (NumPy or CuPy). The two cannot drift apart. Put it before ``Op``:
    ``class Clamp(OneRule, Op)``.
    """

    def vjp(self, g):
        return self.rule(O, g, *self.saved_tensors)

    def vjp_arrays(self, g):
        # (the engine's hot path: a host array's namespace without a call, as Elementwise.vjp_arrays)
        ns, s = (np if type(g) is np.ndarray else xp_of(g)), self.saved_arrays
        if len(s) == 2:  # (the usual: two saved values, passed without a star call, which costs a list)
            return self.rule(ns, g, s[0], s[1])
        if not s:  # (nothing saved: indexing, reshapes)
            return self.rule(ns, g)
        return self.rule(ns, g, *s)


def apply_in(ns, op, *args):
    """``op`` run in a ``OneRule``'s namespace: ``op.apply(*args)`` on tensors (a node: differentiable
    again), ``op.kernel(*args)`` on arrays (the same computation, the engine's fast path). For a rule
    whose derivative is another op, as ``flip``'s is ``flip`` and ``diagonal``'s is ``diagonal_scatter``;
    the op's forward calls the same ``kernel``, so forward and backward cannot drift apart."""
    return op.apply(*args) if ns is O else op.kernel(*args)
