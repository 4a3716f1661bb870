"""Tracing: run the function once, eagerly, and write down every op it calls.

The tracer is an *op observer* (``gradlab.autograd.function.op_observers``):
``Function.apply`` tells it about every op call, with the op's class, its
arguments and its outputs. Tensors are matched to graph values by identity
(and by their array, since a saved output comes back from ``saved_tensors``
as a new Tensor around the same array). A tensor the tracer has never seen
is *captured*: a leaf that requires grad becomes a ``param`` input (read
afresh on every call, so training updates are seen), anything else a
``const`` baked into the graph.

The backward is traced the same way: with the forward's graph alive, the
tracer calls ``gradlab.grad(..., create_graph=True)``. Every VJP is written
with gradlab ops, so the backward pass *is* more ops, and they land in the
same list: one joint forward+backward graph that ``passes.partition`` later
cuts in two (the way AOTAutograd does).

What a tracer cannot see: Python deciding things from tensor *values*.
``if x.sum() > 0:`` runs one branch now, and only that branch is recorded.
While tracing, ``item()``, ``bool()``, ``float()``, ``int()``, ``tolist()``
and ``numpy()`` on a traced value warn (:class:`TraceSpecializationWarning`)
naming the line, as ``torch.jit.trace`` and ``jax.jit`` do.
"""
from __future__ import annotations

import os
import sys
import warnings

import numpy as np

from .. import ops as _ops_mod
from .._tensor import Tensor
from ..autograd import function as _fn
from ..autograd.function import SavedTensor
from ..backend import random as _random_mod
from ..errors import GradError
from ..ops.registry import REGISTRY
from .ir import Graph, Node

_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_INTERNAL = tuple(os.path.join(_PKG, d) for d in ("ops", "autograd", "backend", "compile", "_tensor.py",
                                                   "factories.py"))
_active = []   # the tracers running now (compiled functions called while tracing run eagerly)


class TraceSpecializationWarning(UserWarning):
    """A traced function read a tensor's value in Python: the graph is specialised to this call."""


def user_site(depth=2):
    """``(file, line, globals)`` of the first frame outside the gradlab package, or None."""
    f = sys._getframe(depth)
    while f is not None:
        fname = os.path.abspath(f.f_code.co_filename)
        if not fname.startswith(_PKG + os.sep):
            return fname, f.f_lineno, f.f_globals
        f = f.f_back
    return None


def _site_text(site) -> str:
    if site is None:
        return None
    return f"{os.path.basename(site[0])}:{site[1]}"


class Tracer:
    """Records op calls into a :class:`Graph` while it is in ``op_observers``."""

    def __init__(self, name, strict=False):
        self.graph = Graph(name)
        self.strict = strict        # fullgraph=True: a value read in Python is an error
        self.by_tensor, self.by_array, self.keep, self.versions = {}, {}, [], {}
        self.phase = "forward"
        self.params = []            # (Value, Tensor) lifted leaves
        self.specializations = []   # (what, site text, code line)
        self._suspended = False

    # ------------------------------------------------------------ values
    def _register(self, t, v):
        self.by_tensor[id(t)] = v
        self.by_array[id(t._data)] = v
        self.versions[id(t)] = (t._version, t._version.value)
        self.keep.append(t)

    def add_input(self, t: Tensor, label: str, kind="input"):
        v = self.graph.new_value(t.shape, t.dtype, kind, ref=t, label=label)
        v.name = label
        self._register(t, v)
        self.graph.inputs.append(v)
        return v

    def known(self, t) -> bool:
        return id(t) in self.by_tensor or id(t._data) in self.by_array

    def value_of(self, t: Tensor):
        v = self.by_tensor.get(id(t))
        counter, seen = self.versions.get(id(t), (None, None))
        if v is not None and counter is t._version and seen != counter.value:
            # (a view gets its base's counter after it is made: a new counter object is not a change)
            raise GradError(
                f"gradlab.compile: {self.graph.name} changed a traced tensor ({v.type}) in place in a way the tracer "
                f"did not see (its version went {seen} -> {counter.value}); noticed at "
                f"{_site_text(user_site(2)) or '?'}. Write it functionally (h = h + 1) instead of changing it in place")
        if v is None:
            v = self.by_array.get(id(t._data))
            if v is None:
                v = self._capture(t)
            self.by_tensor[id(t)] = v
            self.keep.append(t)
        return v

    def _capture(self, t: Tensor):
        """A tensor made outside the trace: a lifted parameter, state hidden in a forward ctx, or a constant."""
        if self.phase == "backward":
            v = self._hidden(t)
            if v is not None:
                return v
        g = self.graph
        if t._requires_grad:
            label = t.name or f"p{len(self.params)}"
            v = g.new_value(t.shape, t.dtype, "param", ref=t, label=label)
            v.name = _unique(label, g)
            self.params.append((v, t))
        else:
            v = g.new_value(t.shape, t.dtype, "const", data=t._data, label=t.name, prefix="c")
            g.consts.append(v)
        self._register(t, v)
        return v

    def _hidden(self, t: Tensor):
        """A tensor a forward op kept in its ctx (``ctx.mask = ...``): expose it as an extra output."""
        for n in self.graph.nodes:
            ctx = n.ctx
            if ctx is None or n.phase != "forward":
                continue
            key = None
            for k, s in enumerate(ctx.__dict__.get("_saved", ())):
                if isinstance(s, SavedTensor) and s.tensor is t:
                    key = ("saved", k)
                    break
            if key is None:
                for name, val in ctx.__dict__.items():
                    if val is t:
                        key = ("attr", name)
                        break
            if key is not None:
                v = self.graph.new_value(t.shape, t.dtype)
                n.hidden.append((v, key))
                self._register(t, v)
                return v
        return None

    def _new_out(self, o):
        if isinstance(o, Tensor):
            v = self.graph.new_value(o.shape, o.dtype)
            self._register(o, v)
            return v
        return None

    # ---------------------------------------------------- the observer API
    def before(self, cls, args):
        return None

    def after(self, token, cls, args, outputs, node):
        self._record(cls.name, args, {}, outputs, cls=cls, ctx=node)

    def _record(self, op, args, kwargs, outputs, cls=None, fn=None, ctx=None):
        vargs = [self.value_of(a) if isinstance(a, Tensor) else a for a in args]
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        where = _site_text(user_site(3)) if self.phase == "forward" else None
        n = Node(op, vargs, [self._new_out(o) for o in outs], cls=cls, fn=fn, where=where, phase=self.phase,
                 kwargs=kwargs)
        n.ctx = ctx
        self.graph.nodes.append(n)

    # --------------------------------------------- ops with no Function
    def _wrap(self, name, fn):
        """A registered op with no node of its own (``gt``, ``eq``...): record it as one call."""
        tracer = self

        def wrapper(*args, **kwargs):
            if tracer._suspended or tracer not in _fn.op_observers:
                return fn(*args, **kwargs)
            tracer._suspended = True
            try:
                out = fn(*args, **kwargs)
            finally:
                tracer._suspended = False
            tracer._record(name, args, kwargs, out, fn=fn)
            return out
        wrapper.__wrapped__ = fn
        return wrapper

    # ------------------------------------------------------ random numbers
    def _traced_dropout(self, original):
        """``F.dropout`` while tracing: the mask is a recorded call (fresh every call), then the Dropout op."""
        tracer = self

        def dropout(input, p=0.5, training=True, inplace=False):
            if (not training or p == 0 or p == 1 or not isinstance(input, Tensor) or input.dtype.kind != "f"
                    or tracer not in _fn.op_observers):
                return original(input, p, training, inplace)
            mask = tracer._wrap("dropout_mask", dropout_mask)(tuple(input.shape), input.dtype.name, float(p))
            return REGISTRY["functional.dropout"].op.apply(input, mask)  # the Dropout op, wherever it lives
        dropout.__wrapped__ = original
        return dropout

    def _random_draw(self, method):
        if self._suspended or self not in _fn.op_observers:
            return
        site = user_site(3)
        self.specializations.append((f"draws random numbers ({method})", _site_text(site) or "?", ""))
        warnings.warn(
            f"gradlab.compile: {self.graph.name} draws random numbers ({method}) at {_site_text(site) or '?'} in a "
            "way the tracer cannot record; they are baked into the graph, so every call reuses the same ones. "
            "Use gradlab.rand/randn/F.dropout (recorded and redrawn on each call) or draw them outside",
            TraceSpecializationWarning, stacklevel=4)

    # ------------------------------------------------------ in-place ops
    def _traced_inplace(self, original):
        """``h.add_(1)`` while tracing: record it functionally (``h`` now names the result of ``add(h, 1)``)."""
        tracer = self

        def apply_inplace(t, name, compute, others=()):
            if tracer not in _fn.op_observers or not tracer.known(t):
                return original(t, name, compute, others)
            before = tracer.value_of(t)
            made = []

            def traced_compute(old):
                if old is not t:       # the engine computes on a copy of the old value: same graph value
                    tracer._register(old, before)
                res = compute(old)
                made.append(res)
                return res
            out = original(t, name, traced_compute, others)
            if made and isinstance(made[0], Tensor):
                after = tracer.value_of(made[0])
                tracer._register(t, after)
                if before.kind in ("input", "param"):
                    tracer._mutated(name, before)
            return out
        return apply_inplace

    def _mutated(self, name, v):
        site = user_site(4)
        warnings.warn(
            f"gradlab.compile: {self.graph.name} changes its {'input' if v.kind == 'input' else 'parameter'} "
            f"'{v.name}' in place ({name}) at {_site_text(site) or '?'}; the compiled function computes with the new "
            "value but does not write it back into the caller's tensor. Return the new value instead",
            TraceSpecializationWarning, stacklevel=5)

    # ------------------------------------------- data-dependent control flow
    def _spy(self, what, original):
        tracer = self

        def spy(t, *a, **k):
            caller = os.path.abspath(sys._getframe(1).f_code.co_filename)
            if (isinstance(t, Tensor) and tracer.known(t) and tracer.value_of(t).kind != "const"
                    and not caller.startswith(_INTERNAL)):
                tracer._specialised(what, t)
            return original(t, *a, **k)
        return spy

    def _specialised(self, what, t):
        site = user_site(3)
        code = ""
        if site is not None:
            import linecache
            code = linecache.getline(site[0], site[1]).strip()
        where = _site_text(site) or "?"
        self.specializations.append((what, where, code))
        msg = (f"gradlab.compile: {self.graph.name} {what} a traced tensor ({self.value_of(t).type}) at {where}"
               f"{f' ({code})' if code else ''}. The compiled graph is specialised to the value it has now: "
               "Python control flow or numbers that depend on it are baked in, and later calls with other "
               "values will NOT take another branch. Keep that part outside the compiled function, or compute it "
               "with tensor ops (gradlab.where, clamp, masks).")
        if self.strict:
            raise GradError(msg.replace("The compiled graph is specialised to the value it has now",
                                        "fullgraph=True forbids this: the graph would be specialised to its value"))
        if site is not None:
            warnings.warn_explicit(msg, TraceSpecializationWarning, site[0], site[1], module=site[2].get(
                "__name__", "__main__"), registry=site[2].setdefault("__warningregistry__", {}))
        else:  # pragma: no cover
            warnings.warn(msg, TraceSpecializationWarning, stacklevel=3)

    # --------------------------------------------------------- on / off
    def __enter__(self):
        self._patched = []

        mods = [m for k, m in list(sys.modules.items()) if m is not None and (k == "gradlab" or k.startswith(
            "gradlab.")) and not k.startswith("gradlab.compile")]

        def patch(name, make, home=_ops_mod):
            """Swap function ``home.name`` wherever a gradlab module holds it (``gradlab.gt``, ``from .x import f``)."""
            orig = getattr(home, name, None)
            if orig is None or getattr(orig, "__wrapped__", None) is not None:
                return
            new = make(orig)
            for mod in mods:
                d = getattr(mod, "__dict__", None)
                for key in [k for k, v in (d or {}).items() if v is orig]:
                    self._patched.append((mod, key, orig))
                    setattr(mod, key, new)

        for name, info in REGISTRY.items():
            if info.op is None and not info.differentiable and info.namespace == "gradlab":
                patch(name, lambda orig, name=name: self._wrap(name, orig))
        # utilities with no node of their own: argmax/argmin make tensors (recorded as calls);
        # equal/allclose turn tensors into a Python bool (a value read while tracing)
        for name in ("argmax", "argmin"):
            patch(name, lambda orig, name=name: self._wrap(name, orig))
        for name in ("equal", "allclose"):
            patch(name, lambda orig, name=name: self._spy(f"compares with {name}()", orig))
        # random numbers: factories are recorded as calls (replayed, so each call draws afresh);
        # dropout draws its mask through a recorded call; any other draw warns (it would be baked in)
        from .. import factories as _factories
        for name in ("rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm",
                     "bernoulli", "normal", "multinomial"):
            for home in (_factories, _ops_mod):
                patch(name, lambda orig, name=name: self._wrap(name, orig), home)
        from ..nn import functional as _nn_functional
        patch("dropout", self._traced_dropout, _nn_functional)
        from ..backend import random as _random
        self._patched.append((_random, "_generator", _random._generator))
        _random._generator = _DrawSpy(_random._generator, self)
        from ..autograd import inplace as _inplace
        orig_inplace = _inplace.apply_inplace
        self._patched.append((_inplace, "apply_inplace", orig_inplace))
        _inplace.apply_inplace = self._traced_inplace(orig_inplace)
        spies = {"item": "reads .item() of", "tolist": "reads .tolist() of", "numpy": "reads .numpy() of",
                 "__bool__": "uses bool() (an `if`/`while`/`and` test) on", "__float__": "calls float() on",
                 "__int__": "calls int() on", "__index__": "uses as an index"}
        for meth, what in spies.items():
            orig = Tensor.__dict__.get(meth)
            if orig is not None:
                self._patched.append((Tensor, meth, orig))
                setattr(Tensor, meth, self._spy(what, orig))
        _fn.op_observers.append(self)
        _active.append(self)
        return self

    def __exit__(self, *exc):
        if self in _fn.op_observers:
            _fn.op_observers.remove(self)
        _active.remove(self)
        for owner, name, orig in reversed(self._patched):
            cur = owner.__dict__.get(name)
            if owner is _random_mod and isinstance(cur, _DrawSpy) is False:
                continue  # fn reseeded (manual_seed) while tracing: keep its new generator
            setattr(owner, name, orig)
        return False


def dropout_mask(shape, dtype, p):
    """The scaled keep-mask of dropout: 0 with probability ``p``, else ``1 / (1 - p)``."""
    from ..backend.random import generator
    keep = generator().random(shape) >= p
    return Tensor._make(keep.astype(dtype) * np.dtype(dtype).type(1.0 / (1.0 - p)))


class _DrawSpy:
    """Stands in for the global random generator while tracing: draws warn (see ``Tracer._random_draw``)."""

    _DRAWS = {"random", "standard_normal", "normal", "uniform", "integers", "permutation", "choice", "binomial",
              "bernoulli", "shuffle", "exponential", "poisson", "multinomial", "standard_exponential"}

    def __init__(self, real, tracer):
        self._real, self._tracer = real, tracer

    def __getattr__(self, name):
        attr = getattr(self._real, name)
        if name in self._DRAWS:
            def draw(*a, **k):
                self._tracer._random_draw(name)
                return attr(*a, **k)
            return draw
        return attr


def _unique(label, graph):
    names = {v.name for v in graph.inputs} | {v.name for v in graph.consts}
    base, i = label, 1
    while label in names:
        label, i = f"{base}_{i}", i + 1
    return label


def is_tracing() -> bool:
    return bool(_active)


def ones_like_array(a):
    out = np.empty_like(a) if isinstance(a, np.ndarray) else a.copy()
    out.fill(1)
    return out
