"""The grader's own namespace in a submission's kernel: where graded cells run under ``gradlab grade``.

A graded cell is the instructor's code: it builds inputs, calls the student's
functions and turns what they return into ``check`` records (with helpers such
as ``order_report`` or ``run_mine`` from a locked set-up cell). Run in the
student's namespace, those helpers -- and ``np``, ``isinstance``, ``str`` --
are whatever the student's cells last bound to the name, so a solution cell
that redefines one decides what is recorded. So under ``gradlab grade`` the
assembler (``assemble.py``) runs the instructor's cells here instead:

* ``run_locked(source)``: a locked (set-up) cell runs in the student's namespace
  as usual (their code needs ``np`` and the set-up's classes) *and again* here,
  in a namespace of its own, so the helpers the graded cells use are the
  instructor's, defined afresh, with globals no student cell can rebind;
* ``run_test(label, exports, source)``: a graded cell runs here, with only the
  names the exercise exports (what the instructor's solution cells define:
  ``topo_sort``, ``SGD``...) taken from the student's namespace. The student's
  functions still run with their own globals -- their code is theirs to break --
  but the code that turns their results into records is the instructor's.

The namespace's builtins are a copy taken when this module is first imported
(the first cell of every graded notebook, before any student code), so even a
replaced ``builtins.str`` does not reach the instructor's code here. What the
student's code can still do in its kernel is the tamper probe's business
(``probe.py``); the verdict is the grader's (``checks.compare``).

When a graded cell raises, ``run_test`` also displays where in the student's own
cells the exception passed (record MIME ``WHERE_MIME``: a hash of each cell's
source, the line number and the line), so the report can name the student's
cell and line; the grader keeps only frames that match a cell of the
submission, never a line of the instructor's code.

Functions: ``run_locked``, ``run_test``, ``cell_hash`` (shared with the grader).
"""
from __future__ import annotations

import builtins
import hashlib
import linecache

WHERE_MIME = "application/vnd.gradlab.where+json"
MAX_FRAMES = 8

_BUILTINS = dict(vars(builtins))   # as they were before any student code ran (see the module docstring)
_STATE: dict = {"ns": None}


def cell_hash(source: str) -> str:
    """A short hash of a cell's code, blind to trailing blanks (how the grader matches kernel frames to cells)."""
    text = "\n".join(line.rstrip() for line in str(source).strip().split("\n"))
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]


def _namespace() -> dict:
    """The grader's namespace: what a fresh kernel's ``__main__`` holds (builtins, ``display``), nothing else."""
    if _STATE["ns"] is None:
        from IPython.display import display
        _STATE["ns"] = {"__name__": "__gradlab_graded__", "__builtins__": dict(_BUILTINS), "display": display}
    return _STATE["ns"]


def _student_namespace() -> dict:
    from IPython import get_ipython
    ip = get_ipython()
    if ip is not None:
        return ip.user_ns
    import __main__
    return vars(__main__)


def run_locked(source: str) -> None:
    """Run an instructor's locked cell in the grader's namespace (it already ran in the student's)."""
    exec(compile(source, "<instructor cell>", "exec"), _namespace())


def _cell_files():
    """The file names IPython compiled notebook cells under (the student's cells among them)."""
    try:
        from IPython import get_ipython
        ip = get_ipython()
        return set(getattr(getattr(ip, "compile", None), "_filename_map", {}) or {})
    except ImportError:   # pragma: no cover - a kernel always has IPython
        return set()


def _frames(exc: BaseException) -> list:
    """Where the exception passed through notebook cells, outermost first: [{hash, line, text}]."""
    files = _cell_files()
    out = []
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename in files:
            lines = linecache.getlines(code.co_filename)
            text = lines[tb.tb_lineno - 1].strip() if 0 < tb.tb_lineno <= len(lines) else ""
            out.append({"hash": cell_hash("".join(lines)), "line": int(tb.tb_lineno), "text": text[:200],
                        "function": code.co_name[:80]})
        tb = tb.tb_next
    return out[-MAX_FRAMES:]


def run_test(label: str, exports, source: str) -> None:
    """Run a graded cell in the grader's namespace, calling the student's exported names."""
    ns = _namespace()
    student = _student_namespace()
    for name in exports:
        if name in student:
            ns[name] = student[name]
        else:   # not defined by the student: a NameError here, as in their own kernel
            ns.pop(name, None)
    try:
        exec(compile(source, f"<graded cell {label}>", "exec"), ns)
    except BaseException as e:
        frames = _frames(e)
        if frames:
            from IPython.display import display
            display({WHERE_MIME: {"frames": frames}}, raw=True)
        raise
