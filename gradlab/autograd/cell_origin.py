"""Which notebook cell created each autograd node, at no cost per op: the inspectors' "created at".

Holds :func:`install` (called once by ``import gradlab``: inside IPython it
registers :func:`_pre_run_cell` and :func:`_post_run_cell` on IPython's events)
and :func:`cell_of` (a node's ``seq`` -> the execution count of the cell that
made it).

How, without slowing a single op: every node gets the next number of one
counter (``node.seq``, ``gradlab/autograd/function.py``). At the start of each
cell IPython runs, the number the next node will get is noted (read, not
drawn: the numbers a notebook prints stay as they were), and at its end the
cell's execution count; a node belongs to the last cell that started before it
was made. So
``animate_backward(loss)``, called long after the forward ran, can still say
``cell [3]`` for every op of the graph (``animate_forward``, which watches the
forward itself, gives the line as well). Outside IPython nothing is recorded
and :func:`cell_of` returns None.
"""
from __future__ import annotations

import bisect
import sys

from . import function as _function

_starts: list = []   # [first seq of a cell, its execution count (None while it runs)], increasing in seq


def _shell():
    ip_mod = sys.modules.get("IPython")
    try:
        return ip_mod.get_ipython() if ip_mod is not None else None
    except Exception:  # noqa: BLE001 - a half-initialised IPython: no cells to note
        return None


def _next_seq() -> int:
    """The number the next node will get, read without drawing it: ``itertools.count`` shows it in its
    repr (``count(12)``). Drawing one would renumber the nodes, and a notebook prints those
    (``<TanhBackward backward node #5>``)."""
    text = repr(_function._seq)
    return int(text[text.index("(") + 1:text.rindex(")")])


def _pre_run_cell(info=None) -> None:
    _starts.append([_next_seq(), None])


def _post_run_cell(result=None) -> None:
    count = getattr(result, "execution_count", None)
    if _starts and _starts[-1][1] is None:
        if isinstance(count, int):
            _starts[-1][1] = count
        else:                        # a silent run (no number): its nodes belong to no cell
            _starts[-1][1] = -1


def _running_cell() -> int | None:
    """The number of the cell running now: the last one IPython compiled (the same in IPython 8 and 9,
    which differ in when ``shell.execution_count`` moves on)."""
    fmap = getattr(getattr(_shell(), "compile", None), "_filename_map", None)
    return max(fmap.values()) if fmap else None


def install() -> bool:
    """Start noting cells (once); True inside IPython. The running cell (``import gradlab``) is noted too."""
    events = getattr(_shell(), "events", None)
    if events is None:
        return False
    if _pre_run_cell not in events.callbacks.get("pre_run_cell", []):
        events.register("pre_run_cell", _pre_run_cell)
        events.register("post_run_cell", _post_run_cell)
        _pre_run_cell()
    return True


def cell_of(seq) -> int | None:
    """The execution count of the cell in which the node numbered ``seq`` was made, or None."""
    if not isinstance(seq, int) or not _starts:
        return None
    i = bisect.bisect_right(_starts, seq, key=lambda start: start[0]) - 1   # cells without nodes share a seq
    if i < 0:
        return None
    count = _starts[i][1]
    if count is None:
        count = _running_cell()
    return count if isinstance(count, int) and count >= 0 else None
