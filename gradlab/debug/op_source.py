"""``gradlab.source(op)``: where an op lives and how it is defined, to read in a notebook.

``gradlab.source(gradlab.tanh)``, ``gradlab.source("tanh")``, ``gradlab.source(y.grad_fn)``
(or ``y`` itself) find the op in the registry (``gradlab.ops.REGISTRY``) or from its graph
node, and return an :class:`OpSource`: the public function and the op class with their
``file:line``, the formula the graph widgets show, and the source of each rule the class
defines -- ``forward``, ``vjp`` (the derivative, written with gradlab ops), ``vjp_arrays``
(the same rule on raw arrays, what ``backward()`` runs) and ``jvp`` (forward mode). Its
``repr`` is that listing, so it shows as the value of a notebook cell; ``print`` it
anywhere else. It only reads (``inspect``); nothing below this layer imports it.
"""
from __future__ import annotations

import dataclasses
import inspect
import os

from .._tensor import Tensor
from ..autograd.function import Function, Op
from ._common import DebugInputError

#: The rules an op class may define, in reading order.
RULES = ("forward", "vjp", "vjp_arrays", "jvp", "backward")
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # above gradlab/


@dataclasses.dataclass
class Piece:
    """One definition: what it is, where (``file:line``, the file relative to the checkout), its code."""
    what: str
    where: str
    code: str


@dataclasses.dataclass
class OpSource:
    """Everything :func:`source` found for one op (``repr``: the listing)."""
    name: str
    formula: str
    pieces: list

    @property
    def where(self) -> str:
        """``file:line`` of the op's main definition (its class when it has one)."""
        return self.pieces[0].where if self.pieces else "?"

    def __str__(self):
        head = f"{self.name}: {self.formula}" if self.formula else self.name
        parts = [head, "=" * min(len(head), 100)]
        for p in self.pieces:
            parts.append(f"# {p.what} -- {p.where}")
            parts.append(p.code.rstrip())
            parts.append("")
        return "\n".join(parts)

    __repr__ = __str__

    def _repr_markdown_(self):
        out = [f"**{self.name}**" + (f": `{self.formula}`" if self.formula else "")]
        for p in self.pieces:
            out.append(f"\n{p.what} -- `{p.where}`\n\n```python\n{p.code.rstrip()}\n```")
        return "\n".join(out)


def source(op) -> OpSource:
    """Where ``op`` lives and its definition: forward, vjp, vjp_arrays, jvp, formula.

    ``op``: a registry name (``"tanh"``, ``"softmax"``, ``"functional.softmax"``), a public op
    function (``gradlab.tanh``, ``F.softmax``), an op class (a ``Function`` subclass), a graph
    node (``y.grad_fn``) or a tensor (its ``grad_fn``)."""
    info, cls = _find(op)
    name = info.name if info is not None else getattr(cls, "name", None) or cls.__name__
    formula = info.formula if info is not None and info.formula else (getattr(cls, "formula", "") if cls else "")
    pieces = []
    if cls is not None:
        pieces.append(_piece(f"class {cls.__name__}", cls, header_only=True))
    if cls is not None:
        for rule in RULES:
            owner = next((k for k in cls.__mro__ if rule in k.__dict__), None)
            f = None if owner is None or owner in (Function, Op, object) else owner.__dict__[rule]
            if f is None:
                continue  # not defined by this op (the base class's default, or switched off)
            f = f.__func__ if isinstance(f, (staticmethod, classmethod)) else f
            what = f"{owner.__name__}.{rule}" + ("" if owner is cls else f" (inherited by {cls.__name__})")
            pieces.append(_piece(what, f))
    if info is not None:
        pieces.append(_piece(f"the function {info.namespace}.{info.name}", info.fn))
    return OpSource(name, formula, pieces)


def _registry():
    from ..ops.registry import REGISTRY
    if not any("." in k for k in REGISTRY):
        from ..nn import functional  # noqa: F401 - registers F's ops (softmax, layer_norm...)
    return REGISTRY


def _find(op):
    """``(registry entry or None, op class or None)`` for whatever the user handed us."""
    reg = _registry()
    if isinstance(op, Tensor):
        if op.grad_fn is None:
            raise DebugInputError("source: this tensor has no grad_fn (a leaf, or made under no_grad): "
                                  "pass the op itself, e.g. gradlab.source(gradlab.tanh) or gradlab.source('tanh')")
        op = op.grad_fn
    if isinstance(op, Function):
        op = type(op)
    if isinstance(op, type) and issubclass(op, Function):
        info = next((i for i in reg.values() if i.op is op), None)
        return info, op
    if isinstance(op, str):
        info = reg.get(op) or reg.get(f"functional.{op}")
        if info is None:
            close = sorted(k for k in reg if op.lower() in k.lower())[:8]
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise DebugInputError(f"source: there is no op named {op!r} in gradlab.ops.REGISTRY{hint}")
        return info, info.op
    if callable(op):
        info = next((i for i in reg.values() if i.fn is op), None)
        if info is None:
            raise DebugInputError(f"source: {getattr(op, '__name__', op)!r} is not a registered op; "
                                  "use inspect.getsource for any other function")
        return info, info.op
    raise DebugInputError(f"source: expected an op (a name, a function, a Function class, a node or a tensor), "
                          f"got {type(op).__name__}")


def _piece(what, obj, header_only=False) -> Piece:
    try:
        lines, start = inspect.getsourcelines(obj)
        path = inspect.getsourcefile(obj) or "?"
    except (OSError, TypeError) as e:  # (defined in a notebook cell or generated: no file to show)
        return Piece(what, "?", f"# no source available: {e}")
    if header_only:  # the class line, its docstring and class attributes: its methods follow one by one
        body = []
        for ln in lines:
            if body and ln.lstrip().startswith(("def ", "@")):
                break
            body.append(ln)
        lines = body
    rel = os.path.relpath(path, _ROOT) if path.startswith(_ROOT) else path
    return Piece(what, f"{rel}:{start}", "".join(lines))
