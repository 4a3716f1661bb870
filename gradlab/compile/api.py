"""``gradlab.compile(fn)``: trace once, optimise, replay; retrace when the inputs change.

A :class:`CompiledFunction` keeps one compiled *entry* per input signature
(shapes, dtypes, devices, ``requires_grad`` flags, grad mode, and the values of
non-tensor arguments): that signature is the *guard*. A call whose signature
has no entry traces again, and the reason is logged (``explain()``).

Every tensor argument is a graph input, read afresh on each call whatever its
dtype: integer ids an op takes as a raw array are graph inputs too (``RawArg``
in ``ir.py``). Where the trace had to keep an array that may have been computed
from an input's values as a constant (a boolean mask, whose count sets a shape),
the entry also guards on those inputs' values and traces again when they change
(``Entry.value_guard``): slower, never a replay of the first call's values.

With gradients on, an entry holds two optimised graphs: the forward (which
also returns what the backward needs) and the backward. Calling it runs the
forward inside one autograd node; ``backward()`` runs the compiled backward.
"""
from __future__ import annotations

import functools
import inspect
import warnings

import numpy as np

from .. import autograd as _ag
from .._tensor import Tensor
from ..autograd.function import Function
from ..autograd.grad_mode import enable_grad, no_grad, state as _grad_state
from ..backend import xp_of
from ..backend.dtypes import dtype_name
from ..backend.memory_limit import format_bytes
from ..errors import ArgumentError, GradError
from . import passes as P
from .fuse import fuse_elementwise, fusible
from .runtime import execute
from .trace import Tracer, is_tracing, ones_like_array


def optimize(graph, report, device="cpu", fuse=True):
    """The pass pipeline: fold constants, merge duplicates, drop dead code, fuse."""
    report.append(f"-- {graph.name}: {graph.op_count} ops traced")
    g = P.fold_constants(graph, report)
    g = P.eliminate_common_subexpressions(g, report)
    g = P.eliminate_dead_code(g, report)
    if fuse:
        g = fuse_elementwise(g, report, device)
    report.append(f"   {graph.name}: {graph.op_count} ops -> {len(g.nodes)} step(s) "
                  f"({sum(1 for n in g.nodes if n.group)} fused kernel(s)); arrays materialised "
                  f"{format_bytes(graph.intermediate_bytes())} -> {format_bytes(g.intermediate_bytes())}")
    return g


class Entry:
    """One compiled signature: the graphs, the report, the specialisations."""

    def __init__(self):
        self.traced = self.forward = self.backward = self.traced_backward = None
        self.params = []
        self.n_out = 0
        self.struct = None
        self.report = []
        self.specializations = []
        self.grad_slots = []      # per input of the autograd node: index into backward outputs, or None
        self.node_cls = None
        self.value_guard = []     # [(arg index, name, values)] when arrays computed from them are baked in

    def run(self, args):
        tensors = [a for a in args if isinstance(a, Tensor)] + [t for _, t in self.params]
        if self.backward is None:
            outs = execute(self.forward, [t._data for t in tensors])
            res = tuple(Tensor._make(o) for o in outs[:self.n_out])
        else:
            res = self.node_cls.apply(self, *tensors)
            res = res if isinstance(res, tuple) else (res,)
        return res[0] if self.struct is None else self.struct(res)


class _CompiledNode(Function):
    """The autograd node of a compiled call: forward and backward are compiled graphs."""
    name = "compiled"
    formula = "the compiled backward graph (see compiled.explain())"

    @staticmethod
    def forward(ctx, entry, *inputs):
        arrays = execute(entry.forward, [t._data for t in inputs])
        ctx.entry = entry
        ctx.inputs = inputs
        ctx.save_for_backward(*[Tensor._make(a) for a in arrays[entry.n_out:]])
        outs = tuple(Tensor._make(a) for a in arrays[:entry.n_out])
        return outs if len(outs) > 1 else outs[0]

    @staticmethod
    def backward(ctx, *grads):
        entry = ctx.entry
        if _grad_state.enabled:  # create_graph=True: differentiate the eager program instead
            return (None,) + _eager_vjp(entry, ctx.inputs, grads)
        saved = [t._data for t in ctx.saved_tensors]
        gs = []
        for k in entry.diff_out:
            g = grads[k]
            gs.append(g._data if g is not None else xp_of(saved[0] if saved else np.zeros(0)).zeros(*entry.out_meta[k]))
        res = execute(entry.backward, saved + gs)
        out = []
        for slot in entry.grad_slots:
            out.append(None if slot is None or res[slot] is None else Tensor._make(res[slot]))
        return (None,) + tuple(out)


def _values_changed(entry, args) -> str:
    """The names of the integer/bool inputs whose values differ from those ``entry`` was traced with."""
    return ", ".join(f"'{name}'" for i, name, old in entry.value_guard
                     if not (args[i]._data.shape == old.shape and (args[i]._data == old).all()))


def _eager_vjp(entry, inputs, grads):
    """Higher-order gradients: rerun the function eagerly and differentiate it with create_graph."""
    fn = entry.fn
    outs = fn(*entry.rebuild(inputs))
    outs = [outs] if isinstance(outs, Tensor) else list(outs)
    wrt = [t for t in inputs if t._requires_grad]
    pairs = [(o, g) for o, g in zip(outs, grads) if g is not None and o._requires_grad]
    got = iter(_ag.grad([o for o, _ in pairs], wrt, [g for _, g in pairs], create_graph=True, allow_unused=True))
    return tuple(next(got) if t._requires_grad else None for t in inputs)


class CompiledFunction:
    """``fn`` compiled: call it like ``fn``.

    Reading it: ``graph`` / ``backward_graph`` (the optimised graphs of the latest
    signature, printable), ``entry.traced_forward`` / ``entry.traced_backward`` (before
    the passes), ``entry.traced`` (the joint forward+backward trace), ``explain()``
    (traces and why, pass reports, specialisations), ``log`` (one line per trace),
    ``show_graph(which="forward"|"backward")``. A fused node's ``source`` is its
    generated kernel. A compiled module still answers as the module (``parameters()``).
    """

    def __init__(self, fn, fuse=True, verbose=False, cache_limit=8, fullgraph=False):
        if not callable(fn):
            raise ArgumentError(f"compile: expected a function or module to compile, got {type(fn).__name__}")
        self.fn, self.fuse, self.verbose, self.cache_limit = fn, fuse, verbose, cache_limit
        self.fullgraph = fullgraph
        self.__name__ = getattr(fn, "__name__", type(fn).__name__)
        if inspect.isfunction(fn) or inspect.ismethod(fn):
            functools.update_wrapper(self, fn)
        try:
            self._argnames = list(inspect.signature(fn).parameters)
        except (TypeError, ValueError):
            self._argnames = []
        self.cache = {}
        self.log = []            # one line per trace: when and why
        self._last = None        # (key, description) of the latest trace

    # ------------------------------------------------------------ guards
    def _argname(self, i):
        return self._argnames[i] if i < len(self._argnames) and not self._argnames[i].startswith("*") else f"arg{i}"

    def _signature(self, args, kwargs):
        key, desc = [], {}
        for i, a in enumerate(args):
            nm = self._argname(i)
            if isinstance(a, Tensor):
                k = ("T", tuple(a.shape), dtype_name(a.dtype), bool(a._requires_grad), str(a.device))
                desc[nm] = {"shape": tuple(a.shape), "dtype": dtype_name(a.dtype), "requires_grad": a._requires_grad,
                            "device": str(a.device)}
            else:
                k = ("V", _hashable(a))
                desc[nm] = {"value": a}
            key.append(k)
        for nm, a in sorted(kwargs.items()):
            if isinstance(a, Tensor):
                raise ArgumentError(f"compile: pass tensor '{nm}' of {self.__name__} positionally; keyword "
                                    "arguments of a compiled function are treated as constants")
            key.append((nm, _hashable(a)))
            desc[nm] = {"value": a}
        grad_on = _grad_state.enabled
        key.append(("grad", grad_on))
        desc["grad mode"] = {"enabled": grad_on}
        return tuple(key), desc

    def _why(self, desc):
        if self._last is None:
            return "first call"
        old = self._last[1]
        reasons = []
        for nm, d in desc.items():
            o = old.get(nm)
            if o is None:
                reasons.append(f"new argument '{nm}'")
                continue
            for k, v in d.items():
                if o.get(k) != v:
                    reasons.append(f"'{nm}' {k} changed: {_show(o.get(k))} -> {_show(v)}" if nm != "grad mode"
                                   else f"grad mode changed: {'on' if o.get(k) else 'off'} -> {'on' if v else 'off'}")
        return "; ".join(reasons) or "a signature seen before was evicted"

    # -------------------------------------------------------------- call
    def __call__(self, *args, **kwargs):
        if is_tracing():  # called inside another compiled function's trace: let it see our ops
            return self.fn(*args, **kwargs)
        key, desc = self._signature(args, kwargs)
        entry = self.cache.get(key)
        changed = entry is not None and entry.value_guard and _values_changed(entry, args)
        if entry is None or changed:
            why = self._why(desc) if not changed else (
                f"the values of integer/bool input(s) {changed} changed, and the graph holds arrays computed "
                "from them as constants (a mask, or indices an op converted)")
            if changed:
                self.cache.pop(key)
            entry = self._compile(args, kwargs)
            n = len(self.log) + 1
            self.log.append(f"trace #{n}: {why}")
            if self.verbose:
                print(f"gradlab.compile({self.__name__}): trace #{n}: {why}")
            if len(self.cache) >= self.cache_limit:
                warnings.warn(f"gradlab.compile: {self.__name__} was traced {n} times (last: {why}); the input "
                              f"signature keeps changing, so compiling does not pay off. Pad inputs to fixed shapes "
                              "or compile a smaller piece", RuntimeWarning, stacklevel=2)
                self.cache.pop(next(iter(self.cache)))
            self.cache[key] = entry
            self._last = (key, desc)
            entry.kwargs = kwargs
        elif self._last is not None and self._last[0] != key:
            self._last = (key, desc)
        return entry.run(args)

    def _compile(self, args, kwargs) -> Entry:
        e = Entry()
        e.fn = self.fn
        tracer = Tracer(self.__name__, strict=self.fullgraph)
        targs, tin = [], []
        need_grad = _grad_state.enabled
        for i, a in enumerate(args):
            if isinstance(a, Tensor):
                # trace on a copy: an in-place change inside fn must not touch the caller's tensor twice
                t = Tensor._make(a._data.copy(), bool(a._requires_grad and need_grad))
                t.name = a.name
                tracer.add_input(t, _input_name(self._argname(i), tracer))
                targs.append(t)
                tin.append(t)
            else:
                targs.append(a)
        # fused kernels are generated for the device of the inputs: NumPy on cpu, CuPy on cuda
        device = "cuda" if any(str(t.device).startswith("cuda") for t in tin) else "cpu"
        e.device = device
        ctx = enable_grad() if need_grad else no_grad()
        with tracer, ctx:
            out = self.fn(*targs, **kwargs)
        outs, e.struct = _flatten(out, self.__name__)
        g = tracer.graph
        for v, t in tracer.params:
            g.inputs.append(v)
        e.params = list(tracer.params)
        g.outputs = [tracer.value_of(o) for o in outs]
        e.n_out = len(outs)
        e.out_meta = [(o.shape, o.dtype) for o in outs]
        diff_outs = [o for o in outs if o._requires_grad]
        wrt = [t for t in tin if t._requires_grad] + [t for _, t in tracer.params]
        e.rebuild = _rebuilder(args, len(e.params))
        if need_grad and diff_outs and wrt:
            gts = []
            for k, o in enumerate(outs):
                gt = Tensor._make(ones_like_array(o._data))
                if o._requires_grad:
                    tracer.add_input(gt, f"d{g.outputs[k].name}", kind="grad")
                    gts.append(gt)
            tracer.phase = "backward"
            with tracer, enable_grad():
                grads = _ag.grad(diff_outs, wrt, gts, create_graph=True, allow_unused=True)
            grad_vals = [tracer.value_of(x) if x is not None else None for x in grads]
            # the backward graph's inputs: saved values, then one gradient per output (zeros if not differentiable)
            grad_inputs = [v for v in g.inputs if v.kind == "grad"]
            g.outputs = g.outputs + grad_vals
            e.traced = g
            all_inputs = tin + [t for _, t in tracer.params]
            wrt_ids = {id(t): j for j, t in enumerate(wrt)}
            e.grad_slots = [wrt_ids.get(id(t)) for t in all_inputs]
            fwd, bwd, saved = P.partition(g, e.n_out, grad_inputs, lambda n: _recomputable(n, device), e.report)
            e.traced_forward, e.traced_backward = fwd, bwd
            e.forward = optimize(fwd, e.report, device, fuse=self.fuse)
            e.backward = optimize(bwd, e.report, device, fuse=self.fuse)
            e.diff_out = [k for k, o in enumerate(outs) if o._requires_grad]
            e.node_cls = type(f"compiled_{self.__name__}", (_CompiledNode,), {"name": f"compiled<{self.__name__}>"})
        else:
            e.traced = e.traced_forward = g
            e.forward = optimize(g, e.report, device, fuse=self.fuse)
        e.specializations = list(tracer.specializations)
        if tracer.baked:  # arrays went in as constants, maybe computed from an input's values: guard on them
            e.value_guard = [(i, self._argname(i), a._data.copy()) for i, a in enumerate(args)
                             if isinstance(a, Tensor) and (a.dtype.kind in "iub" or tracer.baked_from_graph)]
        return e

    # ----------------------------------------------------------- reading
    @property
    def entry(self) -> Entry:
        """The latest compiled entry (raises if the function was never called)."""
        if self._last is None:
            raise GradError(f"compile: {self.__name__} has not been called yet; it is traced on its first call "
                            "(with example inputs)")
        return self.cache[self._last[0]]

    @property
    def graph(self):
        """The optimised forward graph of the latest signature."""
        return self.entry.forward

    @property
    def backward_graph(self):
        return self.entry.backward

    def explain(self) -> str:
        """Every trace and why it happened, what each pass changed, and the warnings about specialisation."""
        lines = [f"gradlab.compile({self.__name__}): {len(self.log)} trace(s), {len(self.cache)} cached signature(s)"]
        lines += ["  " + s for s in self.log]
        if self._last is not None:
            e = self.entry
            if e.specializations:
                lines.append("specialised to values read while tracing:")
                lines += [f"  {w}: {what} a traced tensor: `{code}`" for what, w, code in e.specializations]
            lines.append("passes (latest trace):")
            lines += ["  " + s for s in e.report]
        return "\n".join(lines)

    def show_graph(self, which="forward", **kw):
        """Before and after the passes, side by side (fused kernels as one box listing their ops)."""
        from .draw import show_compiled
        return show_compiled(self, which=which, **kw)

    _show_graph_ = show_graph  # what gradlab.show_graph(compiled) calls

    def __repr__(self):
        return f"<gradlab.compile({self.__name__}): {len(self.cache)} compiled signature(s)>"

    def __getattr__(self, name):
        """Anything else is the compiled module's own (``compiled.parameters()``, ``compiled.train()``)."""
        fn = self.__dict__.get("fn")
        if fn is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(fn, name)


#: transcendental ops cost ~10 multiplies per element: their results are saved for the backward, not recomputed
EXPENSIVE = frozenset({"exp", "log", "tanh", "sigmoid", "erf", "sin", "cos", "pow", "gelu", "silu", "softplus",
                       "expm1", "log1p"})


def _recomputable(n, device="cpu") -> bool:
    """Recompute a forward value in the backward (instead of keeping it) when it is a cheap elementwise op."""
    return fusible(n, device) and n.op not in EXPENSIVE


def _input_name(label, tracer):
    """A unique graph name for an input (the parameter name of the function)."""
    names = {v.name for v in tracer.graph.inputs}
    base, i = label, 1
    while label in names:
        label, i = f"{base}_{i}", i + 1
    return label


def _rebuilder(args, n_params):
    """Turns the autograd node's tensor inputs back into the call's arguments (for higher-order gradients)."""
    def rebuild(tensors):
        it = iter(tensors)
        return [next(it) if isinstance(a, Tensor) else a for a in args]
    return rebuild


def _flatten(out, name):
    if isinstance(out, Tensor):
        return [out], None
    if isinstance(out, (tuple, list)) and all(isinstance(o, Tensor) for o in out):
        return list(out), type(out)
    raise ArgumentError(f"compile: {name} returned {type(out).__name__}; a compiled function must return a Tensor "
                        "or a tuple/list of Tensors")


def _hashable(a):
    try:
        hash(a)
        return (type(a).__name__, a)
    except TypeError:
        return (type(a).__name__, repr(a))


def _show(v):
    return "?" if v is None else str(v)


def compile(fn=None, *, fullgraph=False, dynamic=None, backend=None, mode=None, options=None, disable=False,
            fuse=True, verbose=False, cache_limit=8):
    """Compile ``fn`` (a function or module of tensors): ``gradlab.compile(f)`` or ``@gradlab.compile``.

    The first call traces ``fn`` on its inputs into a static graph (``compiled.graph``,
    printable), runs the passes (constant folding, common subexpressions, dead code,
    elementwise fusion) and the traced backward through the same passes; later calls
    with the same shapes/dtypes replay the compiled graphs. ``explain()`` says what
    happened; ``show_graph()`` draws it. ``verbose=True`` prints each (re)trace.

    ``fullgraph=True`` (as in ``torch.compile``): reading a traced value in Python
    (``if x.sum() > 0``, ``.item()``) is an error instead of a warning. ``disable=True``
    returns ``fn`` itself. ``dynamic``, ``backend``, ``mode`` and ``options`` are
    accepted for ``torch.compile`` compatibility; gradlab has one backend and
    always specialises on shapes. ``fuse=False`` skips the fusion pass.
    """
    if disable:
        return fn if fn is not None else (lambda f: f)
    kw = dict(fuse=fuse, verbose=verbose, cache_limit=cache_limit, fullgraph=fullgraph)
    if fn is None:
        return lambda f: CompiledFunction(f, **kw)
    return CompiledFunction(fn, **kw)
