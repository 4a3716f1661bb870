"""Shared plumbing for the debugging tools: graph walks, user call sites, tables.

Everything here only *reads* the autograd graph (``grad_fn``, ``next_functions``,
``saved``, ``meta``); the engine never imports this package.
"""
from __future__ import annotations

import html
import linecache
import os
import sys

import numpy as np

from .. import _tensor
from ..errors import GradlabError, fmt_shape

Tensor = _tensor.Tensor
_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class DebugInputError(GradlabError, TypeError):
    """A debugging tool was handed the wrong kind of object."""


def label(t) -> str:
    """``'name'`` or ``a tensor of shape (3, 4)``, as in gradlab's error messages."""
    if not isinstance(t, Tensor):
        return type(t).__name__
    return f"'{t.name}'" if t.name else f"the tensor of shape {fmt_shape(t.shape)}"


def require_tensor(x, tool: str, arg: str = "t") -> Tensor:
    if not isinstance(x, Tensor):
        raise DebugInputError(
            f"{tool}: {arg} must be a gradlab Tensor, got {type(x).__name__}"
            + (" (a NumPy array: wrap it with gradlab.tensor(...))" if isinstance(x, np.ndarray) else "")
        )
    return x


# ------------------------------------------------------------------ graph walk
def walk(roots) -> list:
    """Every node reachable from ``roots`` (tensors or nodes), each once, roots first.

    An explicit stack, not recursion, so very deep graphs are fine.
    """
    if isinstance(roots, Tensor) or not isinstance(roots, (list, tuple)):
        roots = [roots]
    stack = []
    for r in roots:
        n = r.grad_fn if isinstance(r, Tensor) else r
        if n is None and isinstance(r, Tensor) and r.requires_grad:
            acc = r._acc_ref() if r._acc_ref is not None else None
            n = acc
        if n is not None:
            stack.append(n)
    seen, order = set(), []
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        order.append(node)
        for e in getattr(node, "next_functions", ()) or ():
            if e is not None and e[0] not in seen:
                stack.append(e[0])
    return order


def upstream(nodes, target, sources) -> list:
    """The nodes of ``nodes`` from which ``target`` can be reached (the paths root -> target), in their order.

    ``sources(n)``: the nodes ``n`` takes its inputs from (gradlab's and PyTorch's
    ``next_functions`` differ in how an empty input is written).
    """
    if target is None:
        return []
    parents = {}
    for n in nodes:
        for src in sources(n):
            parents.setdefault(src, []).append(n)
    seen, stack = {target}, [target]
    while stack:
        for p in parents.get(stack.pop(), ()):
            if p not in seen:
                seen.add(p)
                stack.append(p)
    return [n for n in nodes if n in seen and n is not target]


def is_accumulate(node) -> bool:
    return type(node).__name__ == "AccumulateGrad"


def graph_leaves(nodes) -> list:
    """The leaf tensors (``AccumulateGrad.variable``) among ``nodes``."""
    return [n.variable for n in nodes if is_accumulate(n)]


def node_module(node):
    """The module path recorded on a node by gradlab.nn (``node.meta['module']``), or None."""
    meta = getattr(node, "meta", None)
    if isinstance(meta, dict):
        m = meta.get("module")
        if m is not None:
            return str(m) or meta.get("module_type") or "(model)"
    return None


def current_module():
    """The module running now (gradlab.nn keeps a stack of them while modules run), or None."""
    naming = sys.modules.get("gradlab.nn._naming")
    stack = getattr(naming, "_stack", None) if naming is not None else None
    if stack:
        path, type_name = stack[-1]
        return path or type_name
    return None


def named_parameters(obj, tool: str):
    """``[(name, tensor)]`` from a Module, a dict of tensors, or an iterable of tensors."""
    if hasattr(obj, "named_parameters") and callable(obj.named_parameters):
        return list(obj.named_parameters())
    if isinstance(obj, dict):
        items = list(obj.items())
    elif isinstance(obj, Tensor):
        items = [(obj.name or "tensor", obj)]
    else:
        try:
            items = [(getattr(t, "name", None) or f"param{i}", t) for i, t in enumerate(obj)]
        except TypeError:
            raise DebugInputError(
                f"{tool}: expected a gradlab.nn.Module, a dict of name -> Tensor or a list of tensors, "
                f"got {type(obj).__name__}"
            ) from None
    for name, t in items:
        if not isinstance(t, Tensor):
            raise DebugInputError(f"{tool}: '{name}' is a {type(t).__name__}, not a gradlab Tensor")
    return items


# ------------------------------------------------------------------ call sites
class Site:
    """Where in the user's code something happened: file, line, function."""

    __slots__ = ("filename", "lineno", "function")

    def __init__(self, filename, lineno, function):
        self.filename, self.lineno, self.function = filename, lineno, function

    @property
    def code(self) -> str:
        return linecache.getline(self.filename, self.lineno).strip()

    def __str__(self):
        from ..viz.record import format_site  # "cell [3], line 1" for a notebook cell
        code = self.code
        return format_site(self.filename, self.lineno, self.function) + (f": {code}" if code else "")

    __repr__ = __str__

    def as_tuple(self):
        return (self.filename, self.lineno, self.function)


def user_site(depth: int = 1):
    """The innermost stack frame outside the gradlab package: the student's line."""
    f = sys._getframe(depth)
    while f is not None:
        fn = f.f_code.co_filename
        if not (fn.startswith(_PKG_DIR) or fn.startswith("<frozen") or fn.endswith("contextlib.py")):
            return Site(fn, f.f_lineno, f.f_code.co_name)
        f = f.f_back
    return None


def host(arr, dtype=None):
    """The values as a NumPy array (a CuPy array is copied to the host first)."""
    from ..backend.device import to_host
    return np.asarray(to_host(arr), dtype=dtype)  # an explicit device -> host copy (CuPy or simulated)


# ----------------------------------------------------------------- formatting
def value_range(arr) -> str:
    """``min .. max`` over the finite values, plus how many NaN/Inf (never warns)."""
    a = host(arr)
    if a.size == 0:
        return "empty"
    if a.dtype.kind not in "fc" and a.dtype.name != "bfloat16":
        return f"{a.min()} .. {a.max()}"
    a = a.astype(np.float64)
    fin = np.isfinite(a)
    parts = []
    if fin.any():
        parts.append(f"{a[fin].min():.4g} .. {a[fin].max():.4g}")
    nan, pinf, ninf = int(np.isnan(a).sum()), int(np.isposinf(a).sum()), int(np.isneginf(a).sum())
    for n, what in ((nan, "nan"), (pinf, "+inf"), (ninf, "-inf")):
        if n:
            parts.append(f"{n} {what}")
    return ", ".join(parts)


def nonfinite_count(arr) -> int:
    a = host(arr)
    if a.dtype.kind in "biu" or a.dtype == bool:
        return 0
    return int(a.size - np.isfinite(a.astype(np.float64) if a.dtype.name == "bfloat16" else a).sum())


def text_table(headers, rows, align=None) -> str:
    """A plain monospace table (what ``repr`` shows)."""
    cells = [[str(h) for h in headers]] + [[("" if c is None else str(c)) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    align = align or ["<"] + [">"] * (len(headers) - 1)

    def fmt(r):
        return "  ".join(f"{c:{a}{w}}" for c, a, w in zip(r, align, widths)).rstrip()
    sep = "  ".join("-" * w for w in widths)
    return "\n".join([fmt(cells[0]), sep] + [fmt(r) for r in cells[1:]])


def html_table(headers, rows, caption=None) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape('' if c is None else str(c))}</td>" for c in r) + "</tr>" for r in rows
    )
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f"<table class='gradlab-debug'>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
