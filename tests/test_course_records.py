"""The grader's side of a graded cell, without a kernel: fast tests of what ``gradlab grade`` trusts.

* ``graded.py``: graded cells run in the grader's own namespace, with only the exercise's exports taken
  from the student's, so redefining a helper, ``np``, ``isinstance`` or ``str`` there changes nothing;
* ``checks.decode`` / ``checks.compare`` / ``scoring.match_records``: a malformed record from an untrusted kernel
  (wrong type, wrong shape, too deep, not a record at all) is a failed part with a reason, never an
  exception, and no reason quotes a reference value;
* hints: ``msg=`` reaches the report, with every part computed from a reference elided
  (``references``), and the failing case, the hint and the student's line are in the text, JSON and
  JUnit reports.
The same properties through real kernels: the ``wrong_NN_fakes_*`` / ``wrong_unbroadcast_forged_records``
fixtures in tests/test_course_grade.py.
"""
from __future__ import annotations

import json
import sys
import types
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from gradlab.course import checks, graded, references
from gradlab.course.grading import NotebookResult, Part, _where
from gradlab.course.report import table, to_json, to_junit
from gradlab.course.scoring import match_records


def _record(name, value, **spec):
    return {"name": name, "value": checks.encode(value), "spec": checks._spec(spec.get("rtol", 1e-6),
                                                                               spec.get("atol", 1e-8), False)}


# --------------------------------------------------------------------------- the grader's namespace

@pytest.fixture
def clean(monkeypatch):
    """A fresh grader namespace and a stand-in for the student's ``__main__``; records go to a list."""
    student = {"__builtins__": __builtins__}
    monkeypatch.setattr(graded, "_STATE", {"ns": None})
    monkeypatch.setattr(graded, "_student_namespace", lambda: student)
    records = []
    monkeypatch.setitem(checks._sink, "records", records)
    return student, records


SETUP = '''
import numpy as np
from gradlab.course.checks import check

def report(xs):
    return {"n": len(xs), "sorted": bool(np.all(np.diff(xs) >= 0)), "kind": str(type(xs).__name__)}
'''
TEST = '''
xs = my_sort([3.0, 1.0, 2.0])
check("report", report(xs))
check("is a list", isinstance(xs, list))
check("dtype", str(np.asarray(xs).dtype))
'''


def test_graded_cell_ignores_what_the_student_redefines(clean):
    student, records = clean
    exec(SETUP, student)        # the locked cell, in the student's namespace ...
    graded.run_locked(SETUP)    # ... and again in the grader's
    exec('''
import types
def my_sort(xs):
    return xs                   # wrong: not sorted
def report(xs):                 # the report a sorted list gets
    return {"n": len(xs), "sorted": True, "kind": "list"}
isinstance = lambda obj, cls: True
str = lambda x: "float64"
np = types.SimpleNamespace(asarray=lambda x: x, all=lambda x: True, diff=lambda x: x)
''', student)
    graded.run_test("t", ["my_sort"], TEST)
    got = [checks.decode(r["value"]) for r in records]
    assert got[0]["sorted"] == np.array(False), "the instructor's report, not the student's, was recorded"
    assert got[1] == np.array(True) and got[2] == "float64"   # the real isinstance and str (a list of floats)


def test_an_export_the_student_never_defined_is_a_name_error(clean):
    student, _ = clean
    graded.run_locked(SETUP)
    with pytest.raises(NameError):
        graded.run_test("t", ["my_sort"], TEST)


def test_the_grader_namespace_keeps_the_builtins_of_before_any_student_code(clean):
    """A copy taken at import (before any student code), so a patched ``builtins.str`` does not reach it."""
    graded.run_locked("x = 1")
    ns = graded._STATE["ns"]
    assert isinstance(ns["__builtins__"], dict) and ns["__builtins__"] is not vars(__import__("builtins"))
    ns["__builtins__"]["str"] = None     # what a patch of the module would not do to the copy, and vice versa
    assert str(1) == "1"


# --------------------------------------------------------------------------- malformed records

def _deep(n):
    doc = {"t": "none"}
    for _ in range(n):
        doc = {"t": "list", "v": [doc]}
    return doc


MALFORMED = [
    None, 5, "text", [], {"value": None}, {"name": "x"}, {"name": ["a", "list"], "value": {"t": "none"}},
    {"name": "x", "value": {"t": "str", "v": [1, 2, 3]}},
    {"name": "x", "value": {"t": "str", "v": None}},
    {"name": "x", "value": {"t": "array", "v": "not base64 @@"}},
    {"name": "x", "value": {"t": "array", "v": 12345}},
    {"name": "x", "value": {"t": "array", "v": "AAAA"}},
    {"name": "x", "value": {"t": "dict", "v": [["k"]]}},
    {"name": "x", "value": {"t": "dict", "v": "kv"}},
    {"name": "x", "value": {"t": "list", "v": {"a": 1}}},
    {"name": "x", "value": {"t": "raised", "v": [{"not": "a name"}]}},
    {"name": "x", "value": {"t": "nope"}},
    {"name": "x", "value": _deep(checks.MAX_DEPTH + 5)},
    {"name": "x", "value": {"t": "list", "v": [{"t": "none"}] * (checks.MAX_ITEMS + 1)}},
    {"name": "x", "value": checks.encode(np.zeros((3, 4))), "spec": {"rtol": "big", "atol": [1], "exact": "yes"}},
]
REFERENCES = [_record("x", "float32"), _record("x", 1.5), _record("x", np.arange(12.0).reshape(3, 4)),
              _record("x", {"n": 3, "ok": True}), _record("x", [1.0, "two", None]),
              {"name": "x", "value": {"t": "raised", "v": ["ValueError", "Exception"]}, "spec": checks._spec(0, 0, True)}]


@pytest.mark.parametrize("ref", REFERENCES, ids=lambda r: checks.decode(r["value"]).__class__.__name__)
def test_a_malformed_record_is_a_reason_never_an_exception(ref):
    for bad in MALFORMED:
        why, case, _ = match_records([bad], [ref])
        assert why and case == "x", bad
    # an array where a string was recorded (what a str() returning an array recorded)
    assert "expected a string" in checks.compare(_record("x", np.zeros(3)), _record("x", "float32"))


def test_records_are_validated_by_type_and_shape_before_values():
    want = _record("x", np.ones((2, 3)))
    assert "shape (2, 3)" in checks.compare(_record("x", np.ones((3, 2))), want)
    assert "got a list" in checks.compare(_record("x", [[1.0, 1.0, 1.0]] * 2 + [["a"]]), want)
    assert "got a string" in checks.compare(_record("x", "[[1, 1, 1], [1, 1, 1]]"), want)
    assert "expected a dict" in checks.compare(_record("x", [1.0]), _record("x", {"a": 1.0}))
    assert checks.compare(_record("x", np.ones((2, 3))), want) == ""


def test_records_beyond_the_limits_are_refused():
    with pytest.raises(ValueError, match="deeper"):
        checks.decode(_deep(checks.MAX_DEPTH + 1))
    assert checks.decode(_deep(checks.MAX_DEPTH - 1)) is not None
    with pytest.raises(ValueError, match="at most"):
        checks.decode({"t": "list", "v": [{"t": "none"}] * (checks.MAX_ITEMS + 1)})


def test_no_reason_quotes_a_reference_value():
    cases = [(1.25, 7.125), ("float32", "float64"), (True, False), (np.array([0.123456789]), np.array([9.87654321])),
             ({"k": 0.314159}, {"k": 2.71828}), ([0.5772156], [1.4142135])]
    for ref, got in cases:
        why = checks.compare(_record("x", got), _record("x", ref))
        assert why
        for text in ("1.25", "float32", "True", "0.123", "0.314", "0.577"):
            if text in json.dumps(checks.decode(checks.encode(ref)), default=str) or text in repr(ref):
                assert text not in why, (ref, why)
    # local feedback in the student's own kernel still says what was expected
    assert "1.25" in checks.close(np.array(7.125), np.array(1.25))


# --------------------------------------------------------------------------- hints

def test_hints_keep_the_instructor_text_and_elide_reference_values():
    src = ('ref = _reference(x)\n'
           'check("a", f(x), expected=ref, msg=f"got {f(x)} for n={n}, the reference gives {ref}")\n'
           'check("b", f(x), expected=ref, msg="plain text")\n'
           'check("c", f(x), expected=ref, msg=describe(ref))\n')
    out = references.without_references(src, {"_reference"}, "cell")
    assert "_reference" not in out and "expected" not in out
    assert "got {f(x)} for n={n}, the reference gives ..." in out
    assert "plain text" in out and "describe" not in out
    ref_out = references.reference_hints(src)
    assert "got ... for n=..., the reference gives ..." in ref_out and "expected=ref" in ref_out
    assert "describe" not in ref_out


def test_check_records_its_hint():
    records = []
    checks._sink["records"] = records
    try:
        checks.check("a", 1.0, msg="h" * 1000)
    finally:
        checks._sink["records"] = None
    assert records[0]["msg"] == "h" * checks.MAX_HINT


def test_match_gives_the_case_and_the_students_hint_or_else_the_references():
    ref = [dict(_record("a", 1.0), msg="first hint ..."), dict(_record("b", 2.0), msg="second hint ...")]
    mine = [_record("a", 1.0), dict(_record("b", 3.0), msg="second hint with 3.0")]
    assert match_records(mine, ref)[1:] == ("b", "second hint with 3.0")
    assert match_records(mine[:1], ref)[1:] == ("b", "second hint ...")
    hint = match_records([mine[0], dict(mine[1], msg="\x00evil\nnewline" + "x" * 999)], ref)[2]
    assert hint.startswith("evil newline") and len(hint) <= 300   # one line, no control characters, bounded


def test_where_names_only_the_students_own_cells():
    own = {"aaaa": "solution cell 'f' (cell 3)"}
    frames = [{"hash": "aaaa", "line": 2, "text": "return g(x)"}, {"hash": "bbbb", "line": 9, "text": "secret"}]
    assert _where(frames, own) == "solution cell 'f' (cell 3), line 2: return g(x)"
    assert _where([{"hash": "bbbb", "line": 1, "text": "hidden test"}], own) == ""
    assert _where("junk", own) == "" and _where([None, {"hash": "aaaa", "line": "1"}], own) == ""


def test_reports_show_case_hint_and_line_in_every_format():
    part = Part("softmax_rows", 2.0, 0.0, "error", "AxisError: axis 1 is out of bounds",
                case="softmax (4, 7) dim=0", hint="subtract the row max", where="solution cell 'softmax' (cell 3), "
                                                                            "line 4: e = np.exp(x - x.max(1))")
    res = NotebookResult("sub.ipynb", "solutions/03.ipynb", parts=[part])
    text, doc, xml = table([res]), json.loads(to_json([res])), to_junit([res])
    failure = ET.fromstring(xml).find(".//failure").text
    for out in (text, failure):
        assert "case: softmax (4, 7) dim=0" in out and "hint: subtract the row max" in out
        assert "in: solution cell 'softmax' (cell 3), line 4: e = np.exp(x - x.max(1))" in out
    p = doc["notebooks"][0]["parts"][0]
    assert (p["case"], p["hint"], p["where"]) == (part.case, part.hint, part.where)


def test_the_grader_module_is_light():
    """graded.py is imported into every kernel before any student code: no numpy, no gradlab at import."""
    mod = types.ModuleType("probe")
    exec(compile(open(graded.__file__).read(), graded.__file__, "exec"), mod.__dict__)
    assert "numpy" not in vars(mod) and "gradlab" not in vars(mod) and sys.modules.get("gradlab.course.graded")


def test_reaching_into_the_grader_namespace_is_tamper_evidence():
    """The grader's namespace lives in the kernel: code that reaches for it is noted (read from the file)."""
    from gradlab.course.assemble import _scan
    for src in ("import gradlab.course.graded as g\ng._STATE['ns']['report'] = None",
                "from gradlab.course import graded", "_gradlab_graded.run_test = print"):
        assert _scan(src, {}, "solution cell 'f'"), src
    assert not _scan("from gradlab.course.checks import check", {}, "solution cell 'f'")
