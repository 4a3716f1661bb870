"""The op registry: every public op, its formula, and inputs to test it on.

One table drives the engine's documentation, the test suite (gradcheck,
gradgradcheck, JVP checks and the PyTorch oracle run over *every* entry), the
widgets' formula panel and the exercises. Adding an op means adding one entry
here (with the ``register`` decorator beside the op, in the op's own file); its tests come for free,
and so does what the entry states: its public name (``gradlab.ops.<name>``, so ``gradlab.<name>``,
listed in ``gradlab.ops.__all__``), its Tensor method (``method=True``: ``x.exp()``), its autocast
policy (``autocast=``, ``ops/autocast.py`` wraps the function), its fused-kernel expression
(``kernel=``, read by ``gradlab.compile``) and its in-place variant (``inplace=``: ``x.exp_()``, built by
``autograd/inplace.py``). Nothing else lists op names: ``gradlab/ops/__init__.py`` imports the files by
kind, and their entries do the rest. A public name that is not an op of its own (an alias such as
``clip``, a function with no graph node such as ``argmax``) is made public with :func:`export`, beside
its definition too.

``samples(src)`` yields :class:`Sample` s. ``src`` is a :class:`SampleSource`:
random by default, driven by hypothesis in the test suite so that shapes are
explored and shrunk. ``torch`` is the oracle: a function receiving the
``torch`` module and the same arguments converted to torch tensors. gradlab
never imports torch; only the tests call these functions.
"""
from __future__ import annotations

import dataclasses
import sys
from typing import Callable, Iterable

import numpy as np

from .._tensor import Tensor
from ..autograd import inplace as _inplace
from ..backend import dtypes as _dt
from ..errors import ArgumentError
from . import autocast as _autocast
from .binding import bind_method


@dataclasses.dataclass
class Sample:
    """One call of an op: ``fn(*args, **kwargs)``."""
    args: tuple
    kwargs: dict = dataclasses.field(default_factory=dict)
    desc: str = ""

    def __repr__(self):
        def show(a):
            if isinstance(a, Tensor):
                return f"Tensor{tuple(a.shape)}:{_dt.dtype_name(a.dtype)}"
            return repr(a)
        parts = [show(a) for a in self.args] + [f"{k}={show(v)}" for k, v in self.kwargs.items()]
        return f"Sample({', '.join(parts)}{'; ' + self.desc if self.desc else ''})"


@dataclasses.dataclass
class OpInfo:
    """What the registry knows about one op."""
    name: str
    fn: Callable
    formula: str
    samples: Callable[["SampleSource"], Iterable[Sample]]
    op: type = None               # the Function class, when there is one
    torch: Callable = None        # oracle: torch(torch_module, *args, **kwargs)
    differentiable: bool = True
    order: int = 2                # highest derivative order claimed (gradgradcheck runs when >= 2)
    jvp: bool = True              # has a forward-mode rule
    namespace: str = "gradlab"    # where it is exported: "gradlab" or "gradlab.nn.functional"
    elementwise: bool = False
    atol: float = 1e-5            # gradcheck tolerances
    rtol: float = 1e-3
    eps: float = 1e-6             # finite-difference step
    doc: str = ""
    autocast: str = None          # "lower" or "float32": the op's autocast policy (ops/autocast.py)
    kernel: tuple = None          # (NumPy ufunc name or None, CUDA C expression of {0}, {1} or None): compile's fusion
    inplace: Callable = None      # the in-place variant, the Tensor method ``<name>_`` (None: the op has none)
    method: bool = False          # ``x.<name>(...)`` is ``gradlab.<name>(x, ...)``


def torch_functional(name):
    """The oracle for ``F.<name>``: ``torch.nn.functional.<name>`` called with the same arguments."""
    return lambda torch, *a, **k: getattr(torch.nn.functional, name)(*a, **k)


REGISTRY: dict[str, OpInfo] = {}

#: The names given a Tensor method by their entry or their export (``method=True``), in that order.
METHODS: list[str] = []

#: The public names of ``gradlab.ops``, in the order their files made them public: the package's ``__all__``
#: is this very list (``gradlab/ops/__init__.py`` imports it as ``__all__`` and adds its own few names).
PUBLIC: list[str] = []


def export(name=None, *, method=False, direct=False):
    """Decorator: make ``fn`` public as ``gradlab.ops.<name>`` (and so ``gradlab.<name>``), listed in
    ``gradlab.ops.__all__``; with ``method``, also the Tensor method ``x.<name>(...)``.

    :func:`register` calls it for every op of the ``gradlab`` namespace; an alias (``clip = clamp``) or a
    public function with no node of its own (``argmax``) calls it beside its definition. Everything that
    makes a name public is in the op's file, so adding an op edits no list elsewhere; and an op
    registered later (in a notebook) becomes public the same way. ``direct``: ``fn`` always records a node
    through its op class, so the method can be ``fn`` itself (``binding.bind_method`` says why)."""
    def deco(fn):
        key = name or fn.__name__
        setattr(sys.modules[__package__], key, fn)   # gradlab.ops: importing it runs the files that call this
        if key not in PUBLIC:
            PUBLIC.append(key)
        if method:
            bind_method(key, fn if direct else None)
            if key not in METHODS:
                METHODS.append(key)
        return fn
    return deco


def register(name=None, *, samples, formula=None, op=None, torch=None, differentiable=True, order=2,
             jvp=True, namespace="gradlab", elementwise=False, atol=1e-5, rtol=1e-3, eps=1e-6, autocast=None,
             kernel=None, inplace=None, method=False, public=True):
    """Decorator: list a public op function in the registry under ``name``.

    An op of the ``gradlab`` namespace becomes ``gradlab.ops.<name>`` (:func:`export`; ``public=False``
    keeps it off, as ``trace``, whose ``gradlab.trace`` is the debugging trace) and, with ``method``, the
    Tensor method ``x.<name>(...)``.
    ``autocast`` ("lower" or "float32") is the op's autocast policy: the function returned is then
    ``fn`` wrapped to cast its inputs while autocast is on (``ops/autocast.py``); bind that result.
    ``kernel`` is what ``gradlab.compile`` writes for the op inside a fused elementwise kernel: a NumPy
    ufunc's name and a CUDA C expression (``"exp({0})"``), either None.
    ``inplace`` gives the op its in-place variant, the Tensor method ``<name>_``: True for the usual one
    (``x.exp_()`` writes ``exp(x)`` into ``x``, ``autograd/inplace.variant``), or a method written by hand
    where the in-place form has rules of its own (``div_``)."""
    def deco(fn):
        key = name or fn.__name__
        full = key if namespace == "gradlab" else f"{namespace.rsplit('.', 1)[-1]}.{key}"
        f = formula if formula is not None else (op.formula if op is not None else "")
        if autocast is not None:
            fn = _autocast.wrap(fn, key, autocast)
        if (inplace or method) and namespace != "gradlab":
            raise ArgumentError(f"register: {'inplace' if inplace else 'method'}= for {full}; only gradlab.<op> "
                                "functions are Tensor methods and have in-place variants")
        variant = None
        if inplace:
            variant = _inplace.variant(key, fn) if inplace is True else inplace
            setattr(Tensor, key + "_", variant)
        REGISTRY[full] = OpInfo(
            name=key, fn=fn, formula=f, samples=samples, op=op, torch=torch,
            differentiable=differentiable, order=order if differentiable else 0, jvp=jvp,
            namespace=namespace, elementwise=elementwise, atol=atol, rtol=rtol, eps=eps,
            doc=(fn.__doc__ or "").strip().split("\n")[0], autocast=autocast, kernel=kernel, inplace=variant,
            method=bool(method),
        )
        if namespace == "gradlab" and public:
            export(key, method=method, direct=op is not None)(fn)
        return fn
    return deco


def formula_of(node_or_name) -> str:
    """The formula string for a backward node, an op class or a registry name."""
    if isinstance(node_or_name, str):
        info = REGISTRY.get(node_or_name)
        return info.formula if info else ""
    return getattr(node_or_name, "formula", "") or ""


class SampleSource:
    """Random choices for sample inputs.

    Subclass and override :meth:`integers` to drive every structural choice
    (shapes, dims, flags) from somewhere else, e.g. hypothesis's ``data.draw``.
    Values come from a NumPy generator seeded by ``seed``.
    """

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)

    # -- the one primitive a subclass overrides
    def integers(self, lo: int, hi: int) -> int:
        """An integer in ``[lo, hi]`` (both ends included)."""
        return int(self.rng.integers(lo, hi + 1))

    # -- built on it
    def boolean(self) -> bool:
        return bool(self.integers(0, 1))

    def choice(self, options):
        options = list(options)
        return options[self.integers(0, len(options) - 1)]

    def shape(self, min_dims=0, max_dims=3, min_side=1, max_side=4) -> tuple:
        n = self.integers(min_dims, max_dims)
        return tuple(self.integers(min_side, max_side) for _ in range(n))

    def broadcastable(self, shape, min_dims=0) -> tuple:
        """A shape that broadcasts against ``shape``: a suffix, with some sizes set to 1."""
        keep = self.integers(min(min_dims, len(shape)), len(shape))
        suffix = shape[len(shape) - keep:]
        return tuple(1 if (s != 1 and self.integers(0, 3) == 0) else s for s in suffix)

    def broadcast_pair(self, max_dims=3, max_side=4):
        """Two shapes that broadcast together, in either direction (the x(3,1)*y(1,3) case included)."""
        base = self.shape(0, max_dims, 1, max_side)
        a = tuple(1 if self.integers(0, 3) == 0 else s for s in base)
        b = tuple(1 if (self.integers(0, 3) == 0 and a[i] != 1) else s for i, s in enumerate(base))
        drop = self.integers(0, len(b))
        b = b[drop:]
        return (a, b) if self.boolean() else (b, a)

    def dim(self, ndim, allow_none=False):
        """A valid dim index for a tensor of ``ndim`` dims, negative half of the time."""
        if ndim == 0:
            return None if allow_none else self.choice([0, -1])
        d = self.integers(0, ndim - 1)
        return d - ndim if self.boolean() else d

    def values(self, shape, low=-2.0, high=2.0, away_from=None, distinct=False, dtype=_dt.float64):
        size = int(np.prod(shape)) if shape else 1
        if distinct:
            vals = self.rng.permutation(size).astype(np.float64)
            vals = low + (vals + 0.5) * (high - low) / max(size, 1)
        else:
            vals = self.rng.uniform(low, high, size=size)
        if away_from is not None:
            close = np.abs(vals - away_from) < 0.1
            vals[close] = away_from + np.where(vals[close] >= away_from, 0.1, -0.1) + vals[close] * 0.1
        return vals.reshape(shape).astype(dtype)

    def tensor(self, shape, low=-2.0, high=2.0, requires_grad=True, dtype=_dt.float64, **kw) -> Tensor:
        t = Tensor._make(self.values(shape, low, high, dtype=dtype, **kw))
        if requires_grad and _dt.is_floating(t.dtype):
            t.requires_grad_(True)
        return t

    def index_tensor(self, shape, high, low=0) -> Tensor:
        return Tensor._make(self.rng.integers(low, max(high, low + 1), size=shape).astype(np.int64))


def samples_of(name: str, seed: int = 0, source: SampleSource = None):
    """The sample inputs of a registered op (for the widgets and exercises)."""
    return list(REGISTRY[name].samples(source or SampleSource(seed)))


#: Other names for registered ops (PyTorch spellings); they call the same function.
ALIASES = {
    "subtract": "sub", "multiply": "mul", "true_divide": "div", "negative": "neg", "rsub": "sub",
    "concat": "cat", "concatenate": "cat", "clip": "clamp", "swapaxes": "transpose", "less": "lt",
    "less_equal": "le", "greater": "gt", "greater_equal": "ge", "not_equal": "ne", "view": "reshape",
    "expand": "broadcast_to", "expand_as": "broadcast_to", "t": "transpose", "mm": "matmul", "dot": "matmul",
    "flatten": "reshape", "square": "mul", "float": "to", "double": "to", "half": "to", "bfloat16": "to",
    "long": "to", "int": "to", "bool": "to", "type_as": "to", "cpu": "to", "cuda": "to",
    "fake_quantize": "fake_quantize_per_tensor_affine",
    "absolute": "abs", "divide": "div", "hsplit": "tensor_split", "vsplit": "tensor_split", "dsplit": "tensor_split",
    "atleast_1d": "reshape", "atleast_2d": "reshape", "atleast_3d": "reshape", "msort": "kthvalue",
    "softmax": "functional.softmax", "log_softmax": "functional.log_softmax",
}

#: Public functions of the ops package that are not ops (no graph node of their own).
UTILITIES = {
    "install", "register", "formula_of", "samples_of", "equal", "allclose", "argmax", "argmin",
    "contiguous", "zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "empty_like",
    "argwhere", "bincount", "isin", "unique", "unique_consecutive",  # integer or index results (no gradient)
}
