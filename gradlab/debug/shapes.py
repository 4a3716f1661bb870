"""``with gradlab.debug.trace_shapes():`` -- every op's input and output shapes, as a table.

Shape bugs are found by reading shapes, one op at a time: which op got a
``(32, 10)`` where it expected ``(32, 1)``? Inside the block an op observer
(``gradlab.autograd.function.op_observers``) notes each op's name, the
shapes of its tensor inputs (numbers show as ``scalar``), its output shapes and
the module it ran in (``node.meta["module"]``, or gradlab.nn's module stack
when no node is recorded). An elementwise op whose result is bigger than every
input (both sides broadcast, e.g. ``(16, 1) - (16,)`` -> ``(16, 16)``) gets a
note: the silent shape bug that trains without an error. The table prints when the block ends; if an op
raises inside it, the table up to that op prints with the error marked, and
the original gradlab error is re-raised unchanged.
"""
from __future__ import annotations

import sys

from ..autograd import function as _fn
from ..autograd.grad_mode import state as _grad_state
from ..backend import dtypes as _dt
from ..errors import GradlabError, fmt_shape
from ._common import Tensor, current_module, html_table, node_module, text_table, user_site


def _shape_of(a):
    if isinstance(a, Tensor):
        return fmt_shape(a.shape)
    if isinstance(a, (list, tuple)) and a and all(isinstance(x, Tensor) for x in a):
        return "[" + ", ".join(fmt_shape(x.shape) for x in a) + "]"
    return None


def _user_frame(tb):
    """The innermost traceback frame in the user's code (outside gradlab)."""
    from ._common import _PKG_DIR, Site
    found = None
    while tb is not None:
        fn = tb.tb_frame.f_code.co_filename
        if not fn.startswith(_PKG_DIR):
            found = Site(fn, tb.tb_lineno, tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    return found


def _failure_row(exc, tb, index):
    """A row for an op that refused its inputs before running: name from the message, shapes from the call."""
    from ._common import _PKG_DIR
    msg = str(exc)
    name = msg.split(":", 1)[0].strip() if ":" in msg else ""
    if not name or not name.replace("_", "").replace(".", "").isalnum():
        return None
    frames = []
    while tb is not None:
        frames.append(tb)
        tb = tb.tb_next
    user = [i for i, t in enumerate(frames) if not t.tb_frame.f_code.co_filename.startswith(_PKG_DIR)]
    inputs, site = [], None
    if user and user[-1] + 1 < len(frames):
        u = frames[user[-1]]
        site = _user_frame_of(u)
        named = [t.tb_frame for t in frames if t.tb_frame.f_code.co_name == name]
        entry = named[-1] if named else frames[user[-1] + 1].tb_frame
        co = entry.f_code
        n = co.co_argcount + co.co_kwonlyargcount + (1 if co.co_flags & 0x04 else 0)
        for var in co.co_varnames[:n]:
            v = entry.f_locals.get(var)
            for item in (v if isinstance(v, tuple) else (v,)):
                s = _shape_of(item)
                if s is not None:
                    inputs.append(s)
    row = ShapeRow(index, name, inputs, _module_of(frames), site)
    row.error = exc
    return row


def _module_of(frames):
    """The path of the innermost module running when the error was raised (from the traceback)."""
    mods = [t.tb_frame.f_locals.get("self") for t in frames if t.tb_frame.f_code.co_name == "_call_impl"]
    mods = [m for m in mods if hasattr(m, "named_modules")]
    if not mods:
        return None
    if len(mods) == 1:
        return type(mods[0]).__name__
    names = {id(m): n for n, m in mods[0].named_modules()}
    return names.get(id(mods[-1])) or type(mods[-1]).__name__


def _user_frame_of(tb):
    from ._common import Site
    return Site(tb.tb_frame.f_code.co_filename, tb.tb_lineno, tb.tb_frame.f_code.co_name)


class ShapeRow:
    """One op call: ``op``, ``inputs`` (shape strings), ``outputs``, ``dtype``, ``module``, ``site``, ``error``."""

    __slots__ = ("index", "op", "inputs", "outputs", "dtype", "module", "site", "error", "note")

    def __init__(self, index, op, inputs, module, site):
        self.index, self.op, self.inputs, self.module, self.site = index, op, inputs, module, site
        self.outputs, self.dtype, self.error, self.note = None, None, None, None

    def cells(self, with_note=False):
        out = "FAILED" if self.error is not None else ", ".join(self.outputs or ())
        row = [self.index, self.op, ", ".join(self.inputs) or "-", out, self.dtype or "", self.module or "",
               str(self.site) if self.site else ""]
        return row + [self.note or ""] if with_note else row


_ELEMENTWISE = []  # op classes that broadcast elementwise (from the op registry, filled on first use)
_COMPARE = {"eq", "ne", "lt", "le", "gt", "ge", "where", "logical_and", "logical_or", "logical_xor"}


def _elementwise_classes():
    if not _ELEMENTWISE:
        from ..ops import REGISTRY
        _ELEMENTWISE.append({info.op for info in REGISTRY.values() if info.elementwise and info.op is not None})
    return _ELEMENTWISE[0]


def broadcast_note(cls, args, outputs):
    """A warning when an elementwise op made a result bigger than every input: both sides broadcast.

    ``(16, 1) - (16,)`` gives ``(16, 16)``: legal, and almost never what was meant (the classic silent
    bug in a loss: predictions (N, 1) minus targets (N,)).
    """
    ins = [a for a in args if isinstance(a, Tensor)]
    if len(ins) < 2 or not outputs:
        return None
    if cls not in _elementwise_classes() and cls.name not in _COMPARE:
        return None
    out = outputs[0]
    if out.numel() > max(t.numel() for t in ins) and all(t.ndim > 0 for t in ins):
        shapes = " with ".join(fmt_shape(t.shape) for t in ins)
        return f"both inputs broadcast: {shapes} -> {fmt_shape(out.shape)}; intended?"
    return None


class trace_shapes:
    """Print a table of the ops run inside: op, input shapes, output shapes, dtype, module, line.

    ``trace_shapes(file=None, print_table=True)``; the table is also kept as
    ``.rows`` and ``.table()``, and shown by ``repr`` / ``_repr_html_``.
    """

    HEADERS = ["#", "op", "input shapes", "output shapes", "dtype", "module", "line"]

    def __init__(self, file=None, print_table=True):
        self.rows = []
        self.file = file
        self.print_table = print_table
        self._pending = None

    # op observer protocol
    def before(self, cls, args):
        ins = []
        for a in args:
            s = _shape_of(a)
            if s is not None:
                ins.append(s)
            elif isinstance(a, (int, float, bool)) and not isinstance(a, bool) and len(args) <= 3:
                ins.append("scalar")
        name = cls.name if _grad_state.backward_root is None else f"{cls.name} (backward)"
        row = ShapeRow(len(self.rows), name, ins, current_module(), user_site(2))
        self.rows.append(row)
        return row

    def after(self, row, cls, args, outputs, node):
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        ts = [o for o in outs if isinstance(o, Tensor)]
        row.outputs = [fmt_shape(o.shape) for o in ts]
        row.dtype = _dt.dtype_name(ts[0].dtype) if ts else None
        mod = node_module(node) if node is not None else None
        if mod is not None:
            row.module = mod
        row.note = broadcast_note(cls, args, ts)

    def __enter__(self):
        _fn.op_observers.append(self)
        return self

    def __exit__(self, exc_type, exc, tb):
        if self in _fn.op_observers:
            _fn.op_observers.remove(self)
        failed = None
        if exc is not None and self.rows and self.rows[-1].outputs is None:
            failed = self.rows[-1]
            failed.error = exc
        elif exc is not None and isinstance(exc, GradlabError):
            failed = _failure_row(exc, tb, len(self.rows))  # an op that checked its inputs before running
            if failed is not None:
                self.rows.append(failed)
        if self.print_table:
            out = self.file if self.file is not None else sys.stdout
            print(self.table(), file=out)
            if exc is not None:
                if failed is not None:
                    where = f"at op #{failed.index} ({failed.op})"
                elif self.rows:
                    where = f"after op #{self.rows[-1].index} ({self.rows[-1].op}), before the next op ran"
                else:
                    where = "before any op ran"
                site = _user_frame(tb)
                at = f", raised from {site}" if site else ""
                print(f"\ntrace_shapes: the block failed {where}{at}:\n{type(exc).__name__}: {exc}", file=out)
        return False  # the original error propagates unchanged

    @property
    def failed(self):
        """The row of the op that raised (``None`` if nothing failed)."""
        return next((r for r in self.rows if r.error is not None), None)

    def _layout(self):
        noted = any(r.note for r in self.rows)
        headers = self.HEADERS + (["note"] if noted else [])
        return headers, [r.cells(noted) for r in self.rows]

    def table(self) -> str:
        if not self.rows:
            return "trace_shapes: no ops ran inside the block"
        headers, rows = self._layout()
        return text_table(headers, rows, align=[">"] + ["<"] * (len(headers) - 1))

    def __repr__(self):
        return self.table()

    def _repr_html_(self):
        headers, rows = self._layout()
        return html_table(headers, rows, caption="trace_shapes")
