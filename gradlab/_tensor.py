"""Layer 2: the ``Tensor``.

A Tensor is a NumPy (or CuPy) array plus what autograd needs to know about it:

* ``requires_grad`` -- should gradients flow to it?
* ``grad_fn`` -- the backward node of the op that made it (``None`` for leaves);
* ``grad`` -- where ``backward()`` leaves the gradient (leaves, or ``retain_grad()``);
* a version counter shared with its views, bumped by in-place changes, so that
  backward can refuse to use a saved tensor that was modified after saving.

The arithmetic operators (``+``, ``@``, ``x[i]``...) delegate to ``gradlab.ops``;
this module never imports that layer. ``gradlab.ops`` plugs itself in at import
time (see ``_ops`` below), which keeps the layers one-way.
"""
from __future__ import annotations

import numpy as np

from . import _interop
from .backend import dtypes as _dt
from .backend.device import CPU, device_of_array
from .errors import ArgumentError, ArgumentTypeError, DeviceError, DTypeError, GradError, fmt_shape

# Filled in by gradlab.ops and gradlab.autograd when they are imported.
_ops = None
_autograd = None


class _NoModes:
    inference = False


_grad_state = _NoModes()  # replaced by autograd's per-thread mode state (grad_mode.state) when it is imported


class _Version:
    """A counter shared by a tensor and all of its views.

    ``name`` remembers the name of the tensor last changed in place through it,
    for the error message when a saved tensor turns out to be stale.
    """

    # Class-level defaults, no ``__init__``: ``_Version()`` is then one C call with no Python frame (every
    # op that saves its output makes one): 0.14 -> 0.08 us, best of 7 x 300,000 calls. The first in-place
    # change gives the counter its own ``value``.
    value = 0
    name = None


class Tensor:
    """An n-dimensional array that can record how it was computed.

    Make tensors with the factories (``gradlab.tensor``, ``zeros``, ``randn``...);
    ``Tensor(data)`` also works, as PyTorch's legacy constructor: always in the default float dtype
    (``Tensor([1, 2])`` is float32; ``gradlab.tensor([1, 2])`` is int64), and ``Tensor(2, 3)`` makes a (2, 3) tensor.
    """

    # Per-tensor state. Class-level defaults mean a new tensor only stores what
    # differs (data, requires_grad, grad_fn): making tensors is the engine's
    # hottest path, so this matters for speed.
    _grad = None           # the gradient, filled in by backward() (read and set through .grad)
    grad_fn = None         # the backward node of the op that made this tensor (None for leaves)
    _requires_grad = False  # the flag itself; the engine reads and writes it directly (``requires_grad``
    #                         is the checked public property over it)
    name = None            # optional label shown in graphs and error messages
    _output_nr = 0         # which output of grad_fn this tensor is
    _vcounter = None       # the version counter, created on first use (see _version)
    _view_base = None      # for a view: the tensor whose memory it shows (see ops._util.view_of)
    _view_version = 0      # ... and the version counter's value when the view was made
    _view_fn = None        # ... and that tensor's grad_fn then
    _view_no_grad = False  # ... made under no_grad (changing it in place while recording is refused, as in PyTorch)
    _retains_grad = False
    _hooks = None          # gradient hooks of a leaf (non-leaf hooks live on grad_fn)
    _post_acc_hooks = None
    _acc_ref = None        # weak reference to this leaf's AccumulateGrad node
    _fw_grad = None        # forward-mode tangent
    _is_param = False
    _is_inference = False  # made inside inference_mode(): never saved for backward, changed in place only there
    _multi_view = None     # "unbind"/"split"/"chunk": one of several views an op returned (see autograd.inplace)

    __array_priority__ = 1000  # make ``ndarray * Tensor`` call Tensor.__rmul__

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """NumPy meets a Tensor (see ``gradlab/_interop.py``): ``array * tensor`` is the Tensor op."""
        return _interop.array_ufunc(Tensor, ufunc, method, inputs, kwargs)

    def __init__(self, data=(), *sizes, dtype=None, requires_grad=False, name=None):
        # PyTorch's legacy constructor: torch.Tensor is torch.FloatTensor, so Tensor([1, 2]) is float32
        # and Tensor(2, 3) is a (2, 3) tensor (here zero-filled); gradlab.tensor(data) keeps the data's dtype.
        from .backend.dtypes import get_default_dtype
        from .factories import _to_array  # the one place that converts user data
        if isinstance(data, (int, np.integer)) and not isinstance(data, bool):
            sizes = (int(data),) + tuple(int(s) for s in sizes)
            self._data = np.zeros(sizes, dtype=dtype or get_default_dtype())
        else:
            if sizes:
                from .errors import ArgumentTypeError
                raise ArgumentTypeError(f"Tensor(): give data or sizes (ints), got data and {sizes!r}")
            self._data = _to_array(data, dtype or get_default_dtype())
        self.name = name
        if requires_grad:
            self.requires_grad_(True)

    @staticmethod
    def _make(data, requires_grad=False, grad_fn=None, output_nr=0):
        """Wrap an array without copying or checking: the fast path ops use."""
        t = object.__new__(Tensor)
        t._data = data
        if _grad_state.inference:
            t._is_inference = True
        if requires_grad:
            t._requires_grad = True
            t.grad_fn = grad_fn
            if output_nr:
                t._output_nr = output_nr
        return t

    def is_inference(self) -> bool:
        """Was this tensor made inside ``inference_mode()``? (Such a tensor cannot be saved for a backward.)"""
        return self._is_inference

    # ----------------------------------------------------------- .data, as PyTorch's
    @property
    def data(self) -> "Tensor":
        """PyTorch's ``x.data``: a Tensor sharing ``x``'s storage, with ``requires_grad=False`` and no graph.

        Changes made through it (``p.data.add_(p.grad, alpha=-lr)``, ``p.data.zero_()``,
        ``m.weight.data.copy_(w)``) change ``x``, and autograd does not see them: ``x.data`` has a version
        counter of its own, so a value saved for backward can be overwritten this way without the error
        an in-place change of ``x`` itself would give. That is why PyTorch now recommends
        ``with torch.no_grad(): p.add_(...)`` (checked) or ``x.detach()`` (shares the version counter).
        The raw array is ``x.numpy()`` (shared on the CPU, as PyTorch's); gradlab's own code reads it as
        ``x._data``.
        """
        return Tensor._make(self._data)

    @data.setter
    def data(self, value):
        """``x.data = y``: ``x`` now holds ``y``'s storage (shape and dtype may change), as in PyTorch."""
        if not isinstance(value, Tensor):
            raise ArgumentTypeError(f"data: x.data = ... needs a Tensor (as in PyTorch), got {type(value).__name__}; "
                                    "wrap an array with gradlab.from_numpy(...) or gradlab.tensor(...)")
        if self._requires_grad and not _dt.is_floating(value._data.dtype):
            raise DTypeError(f"data: {self._label()} requires grad, so its data must be floating, got dtype "
                             f"{_dt.dtype_name(value._data.dtype)}")
        self._data = value._data

    @property
    def _version(self) -> "_Version":
        """The version counter, shared with views; in-place changes bump it."""
        v = self._vcounter
        if v is None:
            v = self._vcounter = _Version()
        return v

    @_version.setter
    def _version(self, counter: "_Version"):
        self._vcounter = counter

    # ----------------------------------------------------------- properties
    @property
    def shape(self) -> tuple:
        return self._data.shape

    def size(self, dim=None):
        """The shape, or one dimension's size (PyTorch's ``x.size(dim)``; a dim out of range is an IndexError)."""
        if dim is None:
            return self._data.shape
        from .checks import dim as _dim
        return self._data.shape[_dim(dim, self._data.ndim, "size")]

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return int(self._data.size)

    @property
    def dtype(self):
        return self._data.dtype

    @property
    def device(self):
        return device_of_array(self._data)

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    is_xpu = property(lambda self: False, doc="False: gradlab has no Intel XPU backend (PyTorch's flag).")
    is_mps = property(lambda self: False, doc="False: gradlab has no Apple MPS backend (PyTorch's flag).")

    @property
    def strides(self) -> tuple:
        """Strides in *elements* (as PyTorch's ``stride()``), not bytes as NumPy's."""
        return tuple(s // self._data.itemsize for s in self._data.strides)

    def stride(self, dim=None):
        s = self.strides
        return s if dim is None else s[dim]

    def is_contiguous(self) -> bool:
        return bool(self._data.flags.c_contiguous)

    def contiguous(self) -> "Tensor":
        """A C-contiguous tensor with the same values (itself if already contiguous)."""
        if self.is_contiguous():
            return self
        return _ops.contiguous(self)

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def itemsize(self) -> int:
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        return int(self._data.nbytes)

    def element_size(self) -> int:
        return self._data.itemsize

    def is_floating_point(self) -> bool:
        return _dt.is_floating(self._data.dtype)

    @property
    def _version_value(self) -> int:
        return self._version.value

    # -------------------------------------------------------- conversions
    def numpy(self) -> np.ndarray:
        """The values as a NumPy array (shares memory on cpu, like PyTorch).

        Refused for tensors that require grad: NumPy cannot record the graph,
        so anything computed from the array would silently lose its gradient.
        """
        if self._requires_grad:
            raise GradError(
                f"numpy(): {self._label()} requires grad, and NumPy cannot carry gradients; "
                f"call .detach(){'.cpu()' if self.device != CPU else ''}.numpy() if you only want the values"
            )
        if self.device != CPU:
            raise DeviceError(f"numpy(): {self._label()} is on {self.device}; call .cpu() first")
        return self._data

    def __array__(self, dtype=None, copy=None):
        if self.device != CPU:
            raise DeviceError(f"{self._label()} is on {self.device}; call .cpu() before converting to NumPy")
        return self._data if dtype is None else self._data.astype(dtype)

    def item(self):
        """The single value of a one-element tensor as a Python number."""
        if self._data.size != 1:
            raise ValueErrorItem(
                f"item(): {self._label()} has {self._data.size} elements (shape {fmt_shape(self.shape)}); "
                "only one-element tensors can be turned into a Python number. "
                "Reduce it first (e.g. .sum() or .mean()) or index one element"
            )
        return self._data.reshape(()).item()

    def tolist(self):
        return self._data.tolist()

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __bool__(self):
        if self._data.size != 1:
            raise ValueErrorItem(
                f"the truth value of {self._label()} with {self._data.size} elements is ambiguous; "
                "use .any() or .all()"
            )
        return bool(self._data.reshape(()).item())

    def __index__(self):
        if _dt.category(self.dtype) == 2 or self._data.size != 1:
            raise ArgumentTypeError("only integer tensors of a single element can be used as an index")
        return int(self.item())

    def __len__(self):
        if self.ndim == 0:
            raise ArgumentTypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise ArgumentTypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    __hash__ = object.__hash__  # ``==`` is elementwise, so hash by identity as PyTorch does

    # ------------------------------------------------------------ autograd
    @property
    def grad(self):
        """The gradient of the last backward()s with respect to this tensor (None until one reaches it)."""
        return self._grad

    @grad.setter
    def grad(self, value):
        # Checked as in PyTorch: an optimizer would otherwise fail later, far from the mistake.
        if value is not None:
            if not isinstance(value, Tensor):
                raise ArgumentTypeError(f".grad: expected a Tensor or None, got {type(value).__name__}; "
                                        "wrap it with gradlab.tensor(...)")
            d, g = self._data, value._data
            if isinstance(g, np.generic):  # NumPy turned a 0-d result into a scalar: keep an array
                value = Tensor._make(np.asarray(g))
                g = value._data
            who = f"'{self.name}'" if self.name else "this tensor"
            if g.shape != d.shape:
                from .errors import ShapeError
                raise ShapeError(f".grad: a gradient of shape {fmt_shape(g.shape)} cannot be assigned to {who} of shape "
                                 f"{fmt_shape(d.shape)}; a gradient must have its tensor's shape")
            if g.dtype != d.dtype:
                raise DTypeError(f".grad: a gradient of dtype {_dt.dtype_name(g.dtype)} cannot be assigned to {who} of "
                                 f"dtype {_dt.dtype_name(d.dtype)}; convert it first (g.to(gradlab."
                                 f"{_dt.dtype_name(d.dtype)}))")
            if type(g) is not type(d):
                raise DeviceError(f".grad: a gradient on {value.device} cannot be assigned to {who} on {self.device}; "
                                  f"move it first (g.to('{self.device}'))")
        self._grad = value

    @property
    def requires_grad(self) -> bool:
        """Should gradients flow to this tensor? Set it on leaves (``x.requires_grad = True``)."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        # PyTorch's rules for the attribute: a bool; True only on floating tensors; only leaves may change it
        # (a computed tensor's flag says whether the graph reaches it; .detach() makes one that does not).
        # The engine never comes through here: it sets ``_requires_grad`` on the tensors it makes.
        if type(value) is not bool:
            raise ArgumentError(f"requires_grad: must be set to True or False, got {type(value).__name__} {value!r}")
        if self.grad_fn is not None:
            raise GradError(
                f"requires_grad: cannot set requires_grad = {value} on {self._label()}, the output of "
                f"{self.grad_fn.name} (not a leaf); you can only change requires_grad on leaves. To use its "
                "values outside the graph, take x.detach()")
        if value and not _dt.is_floating(self._data.dtype):
            raise self._int_grad_error("requires_grad")
        self._requires_grad = value

    def _int_grad_error(self, fn):
        return DTypeError(
            f"{fn}: {self._label()} has dtype {_dt.dtype_name(self.dtype)}; only floating tensors can "
            "require gradients (a derivative needs continuous values). Convert first, e.g. "
            "x.float().requires_grad_()")

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        """Mark a leaf as needing gradients (in place); returns the tensor.

        As PyTorch: ``requires_grad_(True)`` on a computed tensor (which requires grad already) does
        nothing; ``requires_grad_(False)`` on one is refused (use ``.detach()``).
        """
        if type(requires_grad) is not bool:
            raise ArgumentTypeError(f"requires_grad_: requires_grad must be True or False, got "
                                    f"{type(requires_grad).__name__} {requires_grad!r}")
        if requires_grad and not _dt.is_floating(self._data.dtype):
            raise self._int_grad_error("requires_grad_")
        if not requires_grad and self.grad_fn is not None:
            raise GradError(
                f"requires_grad_(False) on {self._label()}, which is the output of {self.grad_fn.name}; "
                "only leaves can change it. Use .detach() to get a tensor outside the graph"
            )
        self._requires_grad = requires_grad
        return self

    def detach(self) -> "Tensor":
        """A new leaf that shares the data but has no history: gradients stop here."""
        t = Tensor._make(self._data)
        t._version = self._version  # same storage, same version counter
        return t

    def detach_(self) -> "Tensor":
        """Cut this tensor out of the graph in place (a view cannot be: use ``v = v.detach()``)."""
        if self._view_base is not None and self._requires_grad:
            from .errors import GradError
            raise GradError(f"detach_: {self._label()} is a view of another tensor in the graph and cannot be "
                            "detached in place (as in PyTorch); use v = v.detach() instead")
        self.grad_fn = None
        self._requires_grad = False
        return self

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Compute the gradient of this tensor with respect to the graph leaves.

        Gradients are *added* to each leaf's ``.grad`` (call ``zero_grad`` or set
        ``.grad = None`` between steps). Without ``retain_graph=True`` the saved
        tensors are freed as backward goes, so a second call raises.
        """
        _autograd.backward(self, gradient, retain_graph=retain_graph, create_graph=create_graph, inputs=inputs)

    # -------------------------------------------------------------- display
    def _label(self) -> str:
        return f"'{self.name}'" if self.name else f"a tensor of shape {fmt_shape(self.shape)}"

    def __repr__(self):
        return _interop.tensor_repr(self)

    def __format__(self, spec):
        # as PyTorch: a 0-d tensor formats as its number (f"loss {loss}" prints "loss 0.25")
        if self._data.ndim == 0 or (self._data.size == 1 and spec):
            return format(self.item(), spec)
        return repr(self)

    # ------------------------------------------------- operators -> gradlab.ops
    # (A NumPy array beside a Tensor in an operator, ``x + array``, is taken as a tensor, as PyTorch
    # computes it too; the functions, ``gradlab.add(x, array)``, refuse it as PyTorch's do: see
    # ``array_operand``. In-place methods -- add_, mul_, zero_, +=, x[i] = v ... -- are installed by
    # gradlab/autograd/inplace.py, which explains versions and graph rebasing. Once
    # gradlab.ops is loaded, + - * / ** @ and unary - are the op functions themselves,
    # one call fewer: see gradlab/ops/binding.py.)
    def __add__(self, other): return _ops.add(self, array_operand(other))
    def __radd__(self, other): return _ops.add(array_operand(other), self)
    def __sub__(self, other): return _ops.sub(self, array_operand(other))
    def __rsub__(self, other): return _ops.sub(array_operand(other), self)
    def __mul__(self, other): return _ops.mul(self, array_operand(other))
    def __rmul__(self, other): return _ops.mul(array_operand(other), self)
    def __truediv__(self, other): return _ops.div(self, array_operand(other))
    def __rtruediv__(self, other): return _ops.div(array_operand(other), self)
    def __pow__(self, other): return _ops.pow(self, array_operand(other))
    def __rpow__(self, other): return _ops.pow(array_operand(other), self)
    def __matmul__(self, other): return _ops.matmul(self, array_operand(other))
    def __rmatmul__(self, other): return _ops.matmul(array_operand(other), self)
    def __neg__(self): return _ops.neg(self)
    def __pos__(self): return self
    def __abs__(self): return _ops.abs(self)
    def __getitem__(self, index): return _ops.getitem(self, index)
    def __lt__(self, other): return _ops.lt(self, array_operand(other))
    def __le__(self, other): return _ops.le(self, array_operand(other))
    def __gt__(self, other): return _ops.gt(self, array_operand(other))
    def __ge__(self, other): return _ops.ge(self, array_operand(other))
    def __eq__(self, other): return False if other is None else _ops.eq(self, array_operand(other))  # x == None, as PyTorch
    def __ne__(self, other): return True if other is None else _ops.ne(self, array_operand(other))
    def __invert__(self): return _ops.logical_not(self)
    def __and__(self, other): return _ops.logical_and(self, array_operand(other))
    def __or__(self, other): return _ops.logical_or(self, array_operand(other))
    def __floordiv__(self, other): return _ops.floor_divide(self, array_operand(other))
    def __mod__(self, other): return _ops.remainder(self, array_operand(other))
    def __rfloordiv__(self, other): return _ops.floor_divide(array_operand(other), self)
    def __rmod__(self, other): return _ops.remainder(array_operand(other), self)
    def __xor__(self, other): return _ops.logical_xor(self, array_operand(other))
    def __rand__(self, other): return _ops.logical_and(array_operand(other), self)
    def __ror__(self, other): return _ops.logical_or(array_operand(other), self)
    def __rxor__(self, other): return _ops.logical_xor(array_operand(other), self)

    @property
    def T(self) -> "Tensor":
        """All dimensions reversed (for a matrix: the transpose)."""
        return _ops.permute(self, tuple(range(self.ndim - 1, -1, -1)))

    @property
    def mT(self) -> "Tensor":
        """The last two dimensions swapped (a batch of matrices transposed)."""
        return _ops.transpose(self, -2, -1)


def array_operand(other):
    """An operator's other operand: a NumPy array as a Tensor sharing its memory, anything else as it is.

    PyTorch's functions refuse an array (``torch.add(x, array)``: "must be Tensor"), and so do gradlab's
    (``gradlab.checks.numpy_operand``), but ``x + array`` works there (NumPy computes it) and is common in
    teaching code, so the operators, and only they, take the array as a tensor."""
    return Tensor._make(other) if isinstance(other, np.ndarray) else other


class ValueErrorItem(GradError, ValueError):
    """``item()`` / ``bool()`` on a tensor with more than one element."""

