"""Your-turn cells: the lesson notebooks ask the student to predict, to write, and to change.

A lesson cell tagged ``your-turn`` (a JupyterLab cell tag) ends with one of three calls. Each
returns a :class:`Feedback` that JupyterLab shows under the cell: right, not yet (with the next
hint), or a friendly "your turn" notice when nothing was answered. None of them raises for an
unanswered or wrong cell, so a notebook run top to bottom without answers shows notices, never a
traceback (and ``pytest --nbval-lax`` stays green on the shipped notebooks).

* ``predict(question, answer, expected, hints=...)``: *predict, then run*. The student replaces
  ``...`` with a prediction (a shape, a number, a node name, a list of names). ``expected`` is a
  function of no arguments, called only when checking, that computes the answer from the live
  objects in the notebook, so the answer is nowhere in the notebook's text.
* ``write_it(fn, reference, cases, hints=...)``: *write it*. The student writes a short function;
  it runs at once on generated cases and is compared with ``reference`` (gradlab's own code or the
  instructor's) by the same comparison the graded exercises use (``gradlab.course.checks.close``).
* ``written_or(fn, fallback)``: the student's ``fn`` once written, ``fallback`` until then, so the
  cells after a write-it cell run (and the notebook runs top to bottom) before it is answered.
* ``change_it(knob, value, default, question, choices, answer, expected, hints=...)``:
  *change it and explain*. The student changes a knob (a learning rate, an init scale, a mask, a
  dtype), re-runs, and answers a multiple-choice question about what changed; ``expected`` reads
  the answer off the run that just happened.

An instructor checks the answer side of every cell with ``GRADLAB_YOURTURN_SELFTEST=1``: then an
unanswered cell also runs its own answer path (``expected()``, the reference on every case, compared
with itself) and raises if that fails, so ``pytest --nbval-lax`` names a cell whose answer is broken.

Hints come one at a time: each wrong try of the same question shows the next one. ``YOUR_TURN``
(the Ellipsis, ``...``) is the placeholder for "not answered yet". A function the student has not
written yet raises ``NotImplementedError``, which is read as "not answered yet" too.
"""
from __future__ import annotations

import copy
import html
import os
import pathlib
import traceback
from dataclasses import dataclass, field

import numpy as np

from .checks import close, decode, encode

__all__ = ["Feedback", "YOUR_TURN", "change_it", "predict", "write_it", "written_or"]

YOUR_TURN = ...   # the placeholder a your-turn cell ships with
_tries: dict[str, int] = {}   # question -> wrong tries so far (which hint to show next)

_STYLE = {   # status -> (symbol, border colour)
    "right": ("✓", "#2e7d32"),
    "wrong": ("✗", "#c62828"),
    "your turn": ("✋", "#1565c0"),
}


@dataclass
class Feedback:
    """What a your-turn check says: ``status`` is "right", "wrong" or "your turn".

    ``ok`` is True, False, or None (not answered yet); ``hint`` is the hint shown with a wrong try.
    The text form (``repr``) and the HTML form (JupyterLab) say the same thing.
    """
    kind: str       # "predict", "write it", "change it"
    title: str      # the question, or the function's name
    status: str
    message: str
    hint: str = ""
    details: list[str] = field(default_factory=list)

    @property
    def ok(self):
        return {"right": True, "wrong": False}.get(self.status)

    def __bool__(self):
        return self.status == "right"

    def lines(self):
        sym, _ = _STYLE[self.status]
        out = [f"{sym} {self.kind}: {self.title}", f"  {self.message}"]
        out += [f"  {d}" for d in self.details]
        if self.hint:
            out.append(f"  hint: {self.hint}")
        return out

    def __repr__(self):
        return "\n".join(self.lines())

    def _repr_html_(self):
        sym, colour = _STYLE[self.status]
        body = "".join(f"<div style='font-family:monospace;white-space:pre-wrap'>{html.escape(d)}</div>"
                       for d in self.details)
        hint = f"<div><b>Hint:</b> {html.escape(self.hint)}</div>" if self.hint else ""
        return (f"<div class='gradlab-your-turn' style='border-left:4px solid {colour};padding:4px 10px;"
                f"margin:4px 0'><div><b>{sym} {html.escape(self.kind)}</b>: {html.escape(self.title)}</div>"
                f"<div>{html.escape(self.message)}</div>{body}{hint}</div>")


def _next_hint(key, hints):
    """The hint for this wrong try: the first after one miss, the second after two, then the last again."""
    n = _tries.get(key, 0)
    _tries[key] = n + 1
    hints = [hints] if isinstance(hints, str) else list(hints or ())
    return hints[min(n, len(hints) - 1)] if hints else ""


def _normal(value):
    """An answer in a comparable form: strings trimmed and lower-cased, shapes and numbers as plain data."""
    if isinstance(value, str):
        return value.strip().lower()
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
        return [v.strip().lower() for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(_normal(v) for v in value) if all(isinstance(v, str) for v in value) else sorted(value)
    return decode(encode(value))


def _same(answer, expected, rtol, atol):
    try:
        return close(_normal(answer), _normal(expected), rtol=rtol, atol=atol) == ""
    except (TypeError, ValueError):   # not plain data (a dtype, a module): the values' own equality
        try:
            return bool(answer == expected)
        except Exception:   # an == that cannot answer (arrays of different shapes): not the same
            return False


def _selftest():
    return bool(os.environ.get("GRADLAB_YOURTURN_SELFTEST"))


def predict(question, answer, expected, hints=(), rtol=0.05, atol=1e-6):
    """Predict, then run: compare the student's ``answer`` with ``expected()``.

    ``expected`` is called only here, so it can compute the answer from the notebook's live
    objects (``lambda: (x @ w).shape``) and the answer is never written in the notebook. Numbers
    match within ``rtol`` (5% by default: a prediction, not a measurement); strings ignore case and
    surrounding spaces; shapes may be tuples or lists. A wrong answer is not revealed; it shows the
    next hint instead.
    """
    if answer is YOUR_TURN:
        if _selftest():
            want = expected() if callable(expected) else expected
            if not _same(want, want, rtol, atol):
                raise AssertionError(f"predict {question!r}: the expected answer {want!r} does not match itself")
        return Feedback("predict", question, "your turn",
                        "Replace ... with your prediction, then run this cell.")
    want = expected() if callable(expected) else expected
    if _same(answer, want, rtol, atol):
        _tries.pop(question, None)
        return Feedback("predict", question, "right", f"Right: {answer!r}.")
    return Feedback("predict", question, "wrong", f"Not quite: {answer!r} is not it. Try again.",
                    hint=_next_hint(question, hints))


def _describe(value):
    """A short description of an argument for a failure message: arrays by shape and dtype."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return f"<{type(value).__name__} shape {tuple(value.shape)} {value.dtype}>"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _args_of(case):
    return case if isinstance(case, tuple) else tuple(case.get("args", ()))


def _call(fn, case):
    args, kwargs = (case, {}) if isinstance(case, tuple) else (tuple(case.get("args", ())), case.get("kwargs", {}))
    return fn(*args, **kwargs), args, kwargs


_GRADLAB = str(pathlib.Path(__file__).resolve().parents[1])


def _where_it_raised(e):
    """The last line of the student's own code in the traceback (not gradlab's, not NumPy's)."""
    frames = traceback.extract_tb(e.__traceback__)
    mine = [f for f in frames if not f.filename.startswith(_GRADLAB) and "site-packages" not in f.filename]
    f = (mine or frames)[-1]
    return f"line {f.lineno}: {f.line}" if f.line else f"line {f.lineno}"


def _case(cases, seed, i):
    """Case ``i``, made afresh: generated again from the seed, or deep-copied from the list."""
    if callable(cases):
        return list(cases(np.random.default_rng(seed)))[i]
    return copy.deepcopy(list(cases)[i])


def write_it(fn, reference, cases, hints=(), rtol=1e-6, atol=1e-8, seed=0, name=None, report=None):
    """Write it: run the student's ``fn`` on every case and compare with ``reference``'s result.

    ``cases`` is a list of argument tuples (or dicts ``{"args": ..., "kwargs": ...}``), or a
    function ``cases(rng)`` that generates them from a seeded ``numpy.random.Generator``. Each case
    is run through ``reference`` first, then ``fn``; results are compared by
    ``gradlab.course.checks.close``, the comparison the graded exercises use (tensors, arrays,
    numbers, shapes, lists and dicts of them). The first failing case is reported with its
    arguments, what went wrong and the next hint; an exception in ``fn`` is reported by its type,
    message and line, never as a traceback. ``fn`` raising ``NotImplementedError`` means "not
    written yet". Arguments are generated afresh for each call, so ``fn`` may change them in place.

    ``report(result, *args)``, when given, turns a result into what is compared: for answers that
    are right in more than one form (any valid topological order, say) it reports the properties
    that must hold (``{"every node before its inputs": True, ...}``) instead of the result itself.
    """
    title = name or getattr(fn, "__name__", "your function")
    if _selftest() and fn is not reference:   # the instructor's side: the reference on every case, against itself
        selftest = write_it(reference, reference, cases, (), rtol, atol, seed, title, report)
        if not selftest:
            raise AssertionError(f"write_it {title}: the reference fails its own cases: {selftest.message}")
    key = f"write it: {title}"
    todo = list(cases(np.random.default_rng(seed))) if callable(cases) else list(cases)
    for i in range(len(todo)):
        ref_case = _case(cases, seed, i)
        want, _, _ = _call(reference, ref_case)
        again = _case(cases, seed, i)   # fresh arguments: the reference may have changed its own
        shown = ", ".join([_describe(a) for a in (again if isinstance(again, tuple) else again.get("args", ()))] +
                          [f"{k}={_describe(v)}" for k, v in ({} if isinstance(again, tuple)
                                                               else again.get("kwargs", {})).items()])
        try:
            got, _, _ = _call(fn, again)
        except NotImplementedError:
            return Feedback("write it", title, "your turn",
                            f"Write the body of {title} (replace the raise NotImplementedError), then run this cell.")
        except Exception as e:   # the student's bug is the lesson: say it plainly, no traceback
            return Feedback("write it", title, "wrong",
                            f"Case {i + 1} of {len(todo)}, {title}({shown}), raised "
                            f"{type(e).__name__}: {e}",
                            hint=_next_hint(key, hints), details=[f"at {_where_it_raised(e)}"])
        try:
            if report is not None:
                got, want = report(got, *_args_of(again)), report(want, *_args_of(ref_case))
            why = close(decode(encode(got)), decode(encode(want)), rtol=rtol, atol=atol)
        except Exception:   # a result of a kind the check cannot read (the student's, so no traceback)
            why = f"it returned a value of type {type(got).__name__}, which this check cannot read"
        if why:
            return Feedback("write it", title, "wrong",
                            f"Case {i + 1} of {len(todo)}, {title}({shown}): {why.rstrip('.')}.",
                            hint=_next_hint(key, hints))
    _tries.pop(key, None)
    return Feedback("write it", title, "right", f"All {len(todo)} cases match.")


def change_it(knob, value, default, question, choices, answer, expected, hints=()):
    """Change it and explain: the student sets ``knob`` away from ``default``, re-runs, then answers.

    ``choices`` maps a letter to a statement; ``answer`` is the letter the student picks;
    ``expected`` (a function of no arguments) reads the right letter off the run that just
    happened, so the right answer depends on the value the student chose. While the knob still
    holds its default, the cell asks for a change first.
    """
    menu = [f"({k}) {v}" for k, v in choices.items()]
    if _selftest():
        want = expected() if callable(expected) else expected
        if want not in choices:
            raise AssertionError(f"change_it {question!r}: expected() gave {want!r}, not one of {list(choices)}")
    if _same(value, default, 0, 0):
        return Feedback("change it", question, "your turn",
                        f"Change {knob} (it is still {default!r}), run the cells again, then pick an answer.",
                        details=menu)
    if answer is YOUR_TURN:
        return Feedback("change it", question, "your turn",
                        f"You set {knob} = {value!r}. Now replace ... with the letter of your answer.",
                        details=menu)
    if str(answer).strip().lower() not in {str(k).lower() for k in choices}:
        return Feedback("change it", question, "wrong",
                        f"Pick one of {', '.join(map(str, choices))} (you wrote {answer!r}).", details=menu)
    want = expected() if callable(expected) else expected
    key = f"change it: {question}"
    if str(answer).strip().lower() == str(want).strip().lower():
        _tries.pop(key, None)
        return Feedback("change it", question, "right", f"Right, with {knob} = {value!r}: {choices[want]}")
    return Feedback("change it", question, "wrong",
                    f"Not with {knob} = {value!r}: look at what the run printed.", hint=_next_hint(key, hints))


def written_or(fn, fallback):
    """``fn`` where the student has written it, ``fallback`` while ``fn`` still raises NotImplementedError.

    The cells after a write-it cell use the function the student writes there; until it is written
    they use the instructor's, so the lesson runs on. Only NotImplementedError falls back: any other
    exception in ``fn`` is the student's bug, and shows.
    """
    def either(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except NotImplementedError:
            return fallback(*args, **kwargs)

    either.__name__ = getattr(fn, "__name__", "either")
    either.__doc__ = f"{either.__name__}, or {getattr(fallback, '__name__', 'the reference')} until it is written."
    return either
