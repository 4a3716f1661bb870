"""``Function``: one node of the backward graph, and how ops make them.

Calling an op (``Function.apply``) does three things:

1. runs its ``forward`` to compute the output;
2. if any input requires grad (and grad mode is on), records a node: this
   very ``Function`` instance, which keeps what ``forward`` saved for
   backward and points to the nodes of its inputs (``next_functions``);
3. returns output tensors whose ``grad_fn`` is that node.

The node *is* the ``ctx`` that ``forward`` and ``backward`` receive, as in
PyTorch. Two ways to write one:

* **Built-in ops** (``gradlab.ops``) subclass :class:`Function` with
  ``forward(ctx, *tensors)`` returning *arrays* (the math on the array backend)
  and ``vjp(ctx, *grads)`` returning *tensors* computed with gradlab ops, so
  that backward is itself differentiable (higher-order gradients).
* **User functions** override ``forward`` to take and return tensors and
  ``backward`` to map output grads to input grads, exactly as in PyTorch.
"""
from __future__ import annotations

import functools
import itertools
import weakref

import numpy as _np

from .._tensor import Tensor
from ..backend import dtypes as _dt
from ..backend.fperr import enter as _fp_quiet, leave as _fp_restore  # inf/nan silently, as PyTorch
from ..backend.memory_limit import out_of_memory as _out_of_memory
from ..errors import GradError, fmt_shape
from .grad_mode import state as _grad_state
from .saved import SavedTensor, saved_tensor_hooks  # noqa: F401 - this thread's hook stack, with SavedTensor

_seq = itertools.count()
_new_tensor = object.__new__
_ndarray = _np.ndarray
# (a tuple, the common dtypes first: ``in`` tries each by identity before equality, where a set would
# hash the dtype, which NumPy computes anew on every lookup)
_FLOATING = (_dt.float32, _dt.float64) + tuple(d for d in _dt.FLOATING if d not in (_dt.float32, _dt.float64))
_ACC_SEQ_BASE = 1 << 62

# Extension points used by the layers above (anomaly detection, module names,
# tracing, profiling, forward-mode AD). Empty lists cost one truth test per op.
node_observers: list = []   # f(node) after a node is recorded
op_observers: list = []     # object with .before(fn_cls, args) -> token and .after(token, fn_cls, args, outputs, node)
forward_ad_hook = [None]    # f(node, args, outputs) when some input carries a tangent


class Function:
    """Base class of every op and of user-defined differentiable functions.

    Subclasses set ``name`` (shown in graphs), ``formula`` (the backward rule in
    one readable line) and implement ``forward`` and ``vjp``/``backward``; ``jvp``
    gives the forward-mode rule.
    """

    name: str = None
    formula: str = ""
    #: Built-in ops compute on arrays; user Functions on tensors (see module doc).
    tensor_forward = True
    # Per-node state; class-level defaults so recording a node sets only what differs.
    _released = False
    _pre_hooks = None      # {output_nr: [hook, ...]} from Tensor.register_hook on non-leaf outputs
    _retained = None       # {output_nr: weakref} from Tensor.retain_grad
    _post_hooks = None
    _node_pre_hooks = None  # [hook(grad_outputs)] from node.register_prehook
    _hooked = False        # True once any of the four above is set: the engine's fast loop skips such nodes
    _materialize = True
    _saved = ()
    _to_save = _to_save_out = _non_diff = None  # set by save_for_backward & co during forward
    meta = None            # dict: creation site, module path... (filled by observers)
    _saved_fw = None       # {output_nr: tangent} of saved outputs while a forward-AD level is active
    _recording = False     # set by Function.apply when a user Function's call records a node (needs_input_grad)
    _plain_saved = False   # True when ``_saved`` holds no SavedTensor: ``saved_arrays`` is ``_saved`` itself

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if "name" not in cls.__dict__ or cls.name is None:
            cls.name = cls.__name__
        # A class that writes its own backward rule must not inherit its parent's array twin.
        if ("vjp" in cls.__dict__ or "backward" in cls.__dict__) and "vjp_arrays" not in cls.__dict__:
            cls.vjp_arrays = None
        # A user Function that overrides ``backward`` (PyTorch style) gets a vjp.
        if "backward" in cls.__dict__ and "vjp" not in cls.__dict__:
            cls.vjp = _vjp_from_backward
        # ... and a PyTorch-style ``@staticmethod jvp(ctx, *tangents)`` becomes the forward-mode rule.
        if isinstance(cls.__dict__.get("jvp"), staticmethod):
            cls.jvp = _method_from_static(cls.__dict__["jvp"].__func__)
        # A ``@staticmethod vjp_arrays(ctx, *grads)`` likewise: the engine calls the class's function with the node.
        if isinstance(cls.__dict__.get("vjp_arrays"), staticmethod):
            cls.vjp_arrays = _method_from_static(cls.__dict__["vjp_arrays"].__func__)

    # ---------------------------------------------------------- the ctx API
    def save_for_backward(self, *tensors):
        """Keep tensors (or plain values) for backward.

        Kept only if the call records a node: a call that records none drops its ``ctx``, and what
        it holds, as soon as forward returns (so there is nothing to check here)."""
        self._to_save = tensors

    def save_output(self, array):
        """Keep this op's own output for backward (e.g. ``exp``'s ``y``, since ``dy/dx = y``)."""
        self._to_save_out = self._to_save_out + (array,) if self._to_save_out else (array,)

    def mark_non_differentiable(self, *outputs):
        self._non_diff = outputs

    def set_materialize_grads(self, value: bool):
        self._materialize = bool(value)

    def save_for_forward(self, *tensors):
        """Keep tensors for a user Function's ``jvp`` (read back with ``ctx.saved_tensors``)."""
        self._fwd_saved = tensors

    @property
    def saved_tensors(self) -> tuple:
        """What forward saved: inputs first, then saved outputs, rebuilt as tensors."""
        if self._released:
            raise freed_graph_error(self)
        if not self._saved and self.__dict__.get("_fwd_saved"):
            return self._fwd_saved  # inside a jvp: what save_for_forward kept
        return tuple(s.get(self) if isinstance(s, SavedTensor) else s for s in self._saved)

    @property
    def saved_arrays(self) -> list:
        """``saved_tensors`` as raw arrays (plain values stay as they are): what ``vjp_arrays`` reads."""
        if self._released:
            raise freed_graph_error(self)
        if self._plain_saved or not self._saved:
            return self._saved  # only plain values were saved (``x * 1.01`` keeps the float), or nothing
        out = []
        for s in self._saved:  # (a plain loop: this runs once per node in every backward)
            if type(s) is SavedTensor:
                s = s._data if s.version_obj.value == s.version and s.unpack is None else s.array(self)
            elif isinstance(s, SavedTensor):  # a subclass (forward AD's saved outputs that carry a tangent)
                s = s.array(self)
            out.append(s)
        return out

    @property
    def saved(self) -> tuple:
        """The :class:`SavedTensor` records this node keeps (read-only view for the memory tools)."""
        return tuple(s for s in self._saved if isinstance(s, SavedTensor))

    @property
    def saved_bytes(self) -> int:
        return sum(s.nbytes for s in self.saved)

    @property
    def needs_input_grad(self) -> tuple:
        """One bool per positional input: does it need a gradient? (usable in forward and backward)"""
        nf = self.__dict__.get("next_functions")
        if nf is None:
            return self.__dict__.get("_needs", ())
        return tuple(e is not None for e in nf)

    @property
    def num_outputs(self) -> int:
        return len(self.out_meta)

    def register_hook(self, hook):
        """``hook(grad_inputs, grad_outputs)`` after this node's backward (PyTorch's Node hook); it may
        return a tuple of new ``grad_inputs`` (one per input, as it received them) to send on instead."""
        if self._post_hooks is None:
            self._post_hooks = []
            self._hooked = True
        self._post_hooks.append(hook)
        from .hooks import _HookHandle
        return _HookHandle(self._post_hooks, hook)

    def register_prehook(self, hook):
        """``hook(grad_outputs)`` before this node's backward runs; it may return a tuple of new
        ``grad_outputs`` (after the tensors' own hooks and ``retain_grad``, as in PyTorch)."""
        if self._node_pre_hooks is None:
            self._node_pre_hooks = []
            self._hooked = True
        self._node_pre_hooks.append(hook)
        from .hooks import _HookHandle
        return _HookHandle(self._node_pre_hooks, hook)

    def release(self):
        """Drop the saved tensors (called by backward unless ``retain_graph``)."""
        if self._saved:
            self._saved = ()
            self._released = True

    def __repr__(self):
        return f"<{self.name} backward node #{self.seq}>"

    # ------------------------------------------------------------- calling
    @classmethod
    def apply(cls, *args, **kwargs):
        """Run the op: compute forward and, if needed, record the node."""
        if op_observers:
            return _observed_apply(cls, args, kwargs)
        ctx = object.__new__(cls)
        recording = False
        if _grad_state.enabled:
            for a in args:
                if isinstance(a, Tensor) and a._requires_grad:
                    recording = ctx._recording = True
                    break
        quiet = _fp_quiet()  # NumPy's overflow/invalid/divide warnings off while the op computes
        try:
            if cls.tensor_forward:
                out = _run_tensor_forward(ctx, args, kwargs)
            else:
                out = cls.forward(ctx, *args, **kwargs)
            if type(out) is not _ndarray and isinstance(out, _np.generic):
                out = _np.asarray(out)  # NumPy turns 0-d results into scalars; keep arrays
            if forward_ad_hook[0] is not None:
                return _finish_forward_ad(ctx, cls, args, out, recording)
        except MemoryError as e:  # NumPy's is no RuntimeError: say which op and how big (backend/memory_limit.py)
            raise _out_of_memory(cls.name, e) from None
        finally:
            _fp_restore(quiet)
        if not recording:
            if type(out) is tuple:
                return tuple(Tensor._make(o) for o in out)
            return Tensor._make(out)
        return _record(ctx, args, out)

    @staticmethod
    def forward(ctx, *args, **kwargs):  # pragma: no cover - abstract
        raise NotImplementedError

    def vjp(self, *grads):  # pragma: no cover - abstract
        raise NotImplementedError(f"{self.name} has no backward rule")

    #: Optional twin of ``vjp`` on raw arrays: ``vjp_arrays(self, *grad_arrays)`` (a method, or a
    #: staticmethod taking ``ctx`` first) returns one array (or None) per input, reading
    #: ``self.saved_arrays``. The engine runs it whenever the backward pass is not itself recorded
    #: (``create_graph=False``): the same math without making a Tensor and a node per gradient.
    #: ``vjp`` stays the definition (differentiable, shown in the formula panel); the tests check
    #: the twin against it.
    vjp_arrays = None

    def jvp(self, *tangents):
        raise GradError(
            f"forward-mode AD: the op {self.name} has no JVP rule; add a jvp(self, *tangents) method beside its "
            "vjp (one tangent per positional input, None = zero), or use reverse mode (gradlab.func.jacrev)")


# Built-in ops compute on arrays; they subclass this.
class Op(Function):
    """A built-in op: ``forward`` takes tensors and returns arrays. (No ``__init__``: ``apply``
    makes each node by calling the class with no arguments.)"""
    tensor_forward = False

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if "__init__" in cls.__dict__:
            raise TypeError(f"{cls.__name__}: an Op takes no __init__ (Op.apply makes each node with {cls.__name__}()); "
                            "keep per-call values on ctx in forward")

    @classmethod
    def apply(cls, *args, **kwargs):
        """``Function.apply`` for built-in ops: the same steps, shortest path first.

        Every op a program runs comes through here, so it is written for speed:
        an observer or a forward-AD level takes the general path; otherwise run
        ``forward`` and, when an input needs a gradient, record the node. Two
        measured costs shape it (CPython 3.11, instructions counted with valgrind):
        ``cls()`` makes and frees the node in about half the work of
        ``object.__new__(cls)``, and ``forward(ctx, *args)`` builds a list and a
        tuple per call (about 1,100 instructions more than a direct call), so the
        usual one- and two-input calls are spelled out.
        """
        if op_observers or forward_ad_hook[0] is not None:
            return Function.apply.__func__(cls, *args, **kwargs)
        ctx = cls()
        record = False
        if _grad_state.enabled:
            for a in args:
                if isinstance(a, Tensor) and a._requires_grad:
                    record = True
                    break
        n = len(args)
        quiet = _fp_quiet()  # NumPy's overflow/invalid/divide warnings off while the op computes (as PyTorch)
        try:
            if kwargs:
                out = cls.forward(ctx, *args, **kwargs)
            elif n == 2:
                out = cls.forward(ctx, args[0], args[1])
            elif n == 1:
                out = cls.forward(ctx, args[0])
            else:
                out = cls.forward(ctx, *args)
        except MemoryError as e:  # (a try costs nothing until it catches)
            raise _out_of_memory(cls.name, e) from None
        finally:
            _fp_restore(quiet)
        if record:
            if type(out) is not _ndarray and isinstance(out, _np.generic):
                out = _np.asarray(out)
            return _record(ctx, args, out)
        if type(out) is _ndarray:
            t = _new_tensor(Tensor)
            t._data = out
            if _grad_state.inference:
                t._is_inference = True
            return t
        if type(out) is tuple:
            return tuple(Tensor._make(o) for o in out)
        return Tensor._make(_np.asarray(out) if isinstance(out, _np.generic) else out)  # (or a device array)


def _vjp_from_backward(self, *grads):
    res = type(self).backward(self, *grads)
    return res if isinstance(res, tuple) else (res,)


def _method_from_static(f):
    """A PyTorch-style ``@staticmethod`` rule taking ``ctx`` first, as a method (``jvp``, ``vjp_arrays``)."""
    @functools.wraps(f)  # (its name, docstring and source stay the user's)
    def method(self, *args):
        return f(self, *args)
    return method


def _run_tensor_forward(ctx, args, kwargs):
    """A user Function: forward on tensors under no_grad; return its arrays."""
    ctx._needs = tuple(isinstance(a, Tensor) and a._requires_grad and ctx._recording for a in args)
    prev = _grad_state.enabled
    _grad_state.enabled = False
    try:
        res = type(ctx).forward(ctx, *args, **kwargs)
    finally:
        _grad_state.enabled = prev
    multi = isinstance(res, tuple)
    outs = res if multi else (res,)
    for o in outs:
        if not isinstance(o, Tensor):
            raise GradError(f"{ctx.name}.forward must return Tensors, got {type(o).__name__}")
    # saved outputs are recognised by identity and stored the cycle-free way
    if ctx._to_save:
        keep, out_arrays = [], []
        for s in ctx._to_save:
            if isinstance(s, Tensor) and any(s is o for o in outs):
                out_arrays.append(s._data)
            else:
                keep.append(s)
        ctx._to_save = tuple(keep)
        ctx._to_save_out = tuple(out_arrays) or None
    if ctx._non_diff:
        ctx._non_diff = tuple(o._data for o in ctx._non_diff)
    arrays = tuple(o._data for o in outs)
    return arrays if multi else arrays[0]


def edge_of(a):
    """Where the gradient for input ``a`` goes: its grad_fn, its accumulator, or nowhere."""
    if not isinstance(a, Tensor) or not a._requires_grad:
        return None
    fn = a.grad_fn
    if fn is not None:
        return (fn, a._output_nr)
    acc = a._acc_ref() if a._acc_ref is not None else None
    if acc is None:
        acc = AccumulateGrad(a)
        a._acc_ref = weakref.ref(acc)
    return (acc, 0)


def _record(ctx, args, out):
    """Make ``ctx`` a graph node: link it to its inputs' nodes and keep what it saved.

    ``next_functions`` says where each input's gradient goes (None: nowhere),
    ``input_meta`` the shape and dtype that gradient must have (None for a
    non-tensor argument), ``out_meta`` the same for each output. ``seq`` is the
    creation number the engine orders by (``engine.schedule``).

    Every recorded op passes here, once per call, so it is written for speed:
    the usual inputs (a tensor with a grad_fn, or any argument that needs no
    gradient) are handled inline and the rest by ``edge_of``; the single-output
    case is inline and several outputs go to ``_wrap_outputs``. (Measured: this
    function is about a third of the time a small op takes to record.)
    """
    edges = metas = ()  # (tuples grown in place: for one or two inputs, less work than two lists and tuple())
    for a in args:
        if isinstance(a, Tensor):
            if a._requires_grad:
                if a._view_base is not None and a._vcounter.value != a._view_version:
                    from .views import refresh_view  # (rare: a view whose base changed in place since)
                    refresh_view(a)
                fn = a.grad_fn
                if fn is not None:  # a computed input: its node already holds its shape and dtype
                    nr = a._output_nr
                    metas += (fn.out_meta[nr],)
                    edges += ((fn, nr),)
                    continue
                edges += (edge_of(a),)
            else:
                edges += (None,)
                if a._is_inference and ctx._to_save and any(a is t for t in ctx._to_save):
                    _refuse_inference(ctx, a)  # (an inference tensor never requires grad: checked only here)
            d = a._data
            metas += ((d.shape, d.dtype),)
        else:
            metas += (None,)
            edges += (None,)
    ctx.next_functions = edges
    ctx.input_meta = metas
    ctx.seq = next(_seq)
    if type(out) is tuple:
        ret = _wrap_outputs(ctx, out)
    else:  # the common case: one output
        dt = out.dtype
        ctx.out_meta = ((out.shape, dt),)
        ret = _new_tensor(Tensor)
        ret._data = out
        if dt in _FLOATING and (ctx._non_diff is None or not any(out is n for n in ctx._non_diff)):
            ret._requires_grad = True
            ret.grad_fn = ctx
            ret._output_nr = 0      # (these two equal the class defaults; stored on the tensor, the next op's
            ret._view_base = None   # _record reads them in about 180 instructions less each than from the class)
    if ctx._to_save is not None or ctx._to_save_out is not None:
        _keep_saved(ctx, out, ret)
    if node_observers:
        for f in node_observers:
            f(ctx)
    return ret


def _refuse_inference(ctx, t):
    raise GradError(
        f"{ctx.name}: an input of shape {fmt_shape(t.shape)} was made inside inference_mode(), and tensors made "
        "there cannot be saved for backward (as in PyTorch). Make it under no_grad() instead of inference_mode(), "
        "or use a copy made outside: t.clone()")


def _wrap_outputs(ctx, out):
    """Several outputs (``max(dim)``, ``split``...): one tensor each, ``output_nr`` its place; an integer
    output (indices) or one marked non-differentiable gets no ``grad_fn``."""
    non_diff = ctx._non_diff
    ctx.out_meta = tuple((o.shape, o.dtype) for o in out)
    results = []
    for i, o in enumerate(out):
        diff = o.dtype in _FLOATING and not (non_diff and any(o is n for n in non_diff))
        results.append(Tensor._make(o, diff, ctx if diff else None, i))
    return tuple(results)


def _keep_saved(ctx, out, ret):
    """What forward asked to keep, as SavedTensor records: inputs as tensors, this node's
    own outputs found by identity and stored the cycle-free way. Plain values (a Python
    float, None for a factor no gradient needs) are kept as they are. ``out``/``ret``: the
    output array(s) and the tensor(s) made for them."""
    to_save = ctx._to_save
    if to_save and not ctx._to_save_out:
        for s in to_save:
            if isinstance(s, Tensor):
                break
        else:  # plain values only (``x * 1.01`` keeps the float): the tuple itself, as ``saved_arrays`` hands
            ctx._saved = to_save  # it out (no list to build: 0.55 -> 0.44 us a call, best of 7 x 200,000)
            ctx._plain_saved = True
            ctx._to_save = None
            return
    saved = []
    for s in to_save or ():  # (a loop, not a list comprehension: that is one more function call in 3.11)
        saved.append(SavedTensor(s) if isinstance(s, Tensor) else s)
    if ctx._to_save_out:
        if type(ret) is not tuple:  # (one output: it may have been re-wrapped, 0-d scalar -> array)
            for _ in ctx._to_save_out:
                saved.append(SavedTensor(ret, 0))
        else:
            for arr in ctx._to_save_out:
                i = next((i for i, o in enumerate(out) if o is arr), None)
                if i is not None:
                    saved.append(SavedTensor(ret[i], i))
    ctx._saved = saved
    ctx._to_save = ctx._to_save_out = None


def _finish_forward_ad(ctx, cls, args, out, recording):
    res = _record(ctx, args, out) if recording else (
        tuple(Tensor._make(o) for o in out) if type(out) is tuple else Tensor._make(out))
    if any(isinstance(a, Tensor) and a._fw_grad is not None for a in args):
        forward_ad_hook[0](ctx, args, res)
    return res


def _observed_apply(cls, args, kwargs):
    tokens = [o.before(cls, args) for o in op_observers]
    observers = list(op_observers)
    op_observers.clear()  # ops called while observing are not observed twice
    try:
        outputs = cls.apply(*args, **kwargs)
    finally:
        op_observers.extend(observers)
    first = outputs[0] if isinstance(outputs, tuple) else outputs
    node = first.grad_fn if isinstance(first, Tensor) else None
    for o, tok in zip(observers, tokens):
        o.after(tok, cls, args, outputs, node)
    return outputs


def freed_graph_error(node):
    """The error for a node whose saved tensors an earlier backward already freed."""
    t = _grad_state.backward_root  # (labelled here, not in every backward pass: only an error needs the words)
    root = "this tensor" if t is None else f"'{t.name}'" if t.name else f"the tensor of shape {fmt_shape(t.shape)}"
    return GradError(
        f"backward: the graph behind {root} was already freed by an earlier backward() "
        f"(at {node.name}); pass retain_graph=True to the first call if you need to run backward twice"
    )


class AccumulateGrad(Function):
    """The node at a leaf: adds the incoming gradient into ``leaf.grad``.

    One per leaf (cached weakly on the leaf), so a leaf used twice is one node
    where two gradients meet: the accumulation point the graph tools show.
    """

    name = "AccumulateGrad"
    formula = "x.grad += dx"

    def __init__(self, variable: Tensor):
        self.variable = variable
        self.next_functions = ()
        self.input_meta = ()
        self.out_meta = ((variable.shape, variable.dtype),)
        self.seq = _ACC_SEQ_BASE + next(_seq)  # above every op node: run as soon as ready, as PyTorch does
        self._saved = ()
        self._released = False
        self._pre_hooks = self._retained = self._post_hooks = None
        self.meta = None

    def __repr__(self):
        return f"<AccumulateGrad for {self.variable._label()}>"

