"""Proof that `gradlab grade` has teeth, with real nbval runs in sandboxed kernels.

Two `gradlab grade` invocations (each one pytest+nbval process, notebooks spread over two xdist workers)
cover everything. One batch, with hidden tests, holds every solution, every generated exercise, the
submissions in tests/fixtures/submissions that attack the grader (forged records, patched helpers) and a
sample of the honest ones (tests/submission_fixtures.py), the misbehaving submissions made here (but the
infinite loop) and a bad file: each exercise's reference runs once for all of them (a kernel per exercise,
not one per invocation).
In it every solution scores full marks; every generated exercise scores zero on every part; each fixture
loses exactly the parts its `expected_NN.json` names or, as a correct alternative (`alt_*.ipynb`), gets full
marks (every honest fixture is also graded in-process, against the same expectations, by
tests/test_course_fixtures.py); and the grader survives an exception, an infinite loop, a crashed kernel,
megabytes of output, edited/deleted test cells and a bad file in the same batch (those submissions are
made here from exercise 01, so they follow its current parts). The second, small invocation grades without
hidden tests, keeps what ran (`--keep`) and holds the infinite loop: its short cell time-out is what the
loop burns in CPU, so it is not the big batch's.
The exploits a student might try are in tests/test_course_trust.py.
"""
from __future__ import annotations

import ast
import contextlib
import copy
import io
import json
import xml.etree.ElementTree as ET

import pytest

pytest.importorskip("nbval", reason="gradlab grade needs nbval (pip install 'gradlab[dev]')")
pytest.importorskip("ipykernel", reason="gradlab grade needs ipykernel (pip install 'gradlab[dev]')")
pytest.importorskip("xdist", reason="gradlab grade -n needs pytest-xdist (pip install 'gradlab[dev]')")
nbformat = pytest.importorskip("nbformat")

from gradlab.cli import main  # noqa: E402
from gradlab.course.notebook import grade_id, is_solution, is_test, read_notebook  # noqa: E402

from .submission_fixtures import ALTERNATIVES, FIXTURES, ROOT, SANDBOXED, WRONG  # noqa: E402

pytestmark = pytest.mark.slow

SOLUTIONS = sorted((ROOT / "solutions").glob("*.ipynb"))
EXERCISES = sorted((ROOT / "exercises").glob("*.ipynb"))
# seconds per cell: the slowest legitimate cell takes about a second on an idle machine; generous so that a
# loaded CI machine never times out a correct cell. The small run that holds the infinite loop has a shorter
# one: the loop burns a whole core until its cell times out, and proving that it is stopped and reported
# takes seconds, not 30 (that run's slowest other cell took 0.21 s at load 4.4 on 2 cores: a 20x margin).
TIMEOUT, LOOP_TIMEOUT = "60", "5"

BASE = "01_unbroadcast"


def _first_function(source):
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef):
            return node.name
    raise AssertionError("the first solution cell of exercise 01 defines no function")


def _survivors():
    """Submissions that misbehave on purpose, made from exercise 01's current notebook."""
    sol = read_notebook(ROOT / "solutions" / f"{BASE}.ipynb")
    ex = read_notebook(ROOT / "exercises" / f"{BASE}.ipynb")
    sol_cells = {grade_id(c): c for c in sol.cells if grade_id(c)}
    sol_ids = [grade_id(c) for c in ex.cells if grade_id(c) and is_solution(c)]
    tests = [grade_id(c) for c in ex.cells if is_test(c)]
    fn = _first_function(sol_cells[sol_ids[0]].source)

    def answered(nb, extra_after=None, extra=None, wrap=""):
        nb = copy.deepcopy(nb)
        for c in nb.cells:
            if grade_id(c) in sol_ids:
                c.source = sol_cells[grade_id(c)].source + (wrap if grade_id(c) == sol_ids[0] else "")
        if extra is not None:
            i = next(i for i, c in enumerate(nb.cells) if grade_id(c) == extra_after)
            nb.cells.insert(i + 1, nbformat.v4.new_code_cell(extra))
        return nb

    out = {}
    # raises in a later call: only the parts that reach the raise fail
    out["survive_exception"] = answered(ex, tests[0], "raise ValueError('my own experiment failed')")
    # the first call loops forever: that part times out, the others are graded
    out["survive_infinite_loop"] = answered(ex, wrap=f"""
_calls = [0]
_{fn} = {fn}
def {fn}(*args, **kwargs):
    _calls[0] += 1
    if _calls[0] == 1:
        while True:
            pass
    return _{fn}(*args, **kwargs)
""")
    # the kernel dies after the first graded part
    out["survive_kernel_crash"] = answered(ex, tests[0], "import os\nos._exit(1)")
    out["survive_huge_output"] = answered(ex, tests[0], "for _ in range(200):\n    print('x' * 100_000)")
    # edits one test to `assert True`, deletes another: the instructor's versions run
    edited = copy.deepcopy(ex)
    for c in edited.cells:
        if grade_id(c) == tests[0]:
            c.source = "assert True"
    edited.cells = [c for c in edited.cells if grade_id(c) != tests[-1]]
    out["survive_edited_tests"] = edited
    return out, tests


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("grade")
    bad = tmp / "not_a_notebook.ipynb"
    bad.write_text("{ this is not json")
    made, tests = _survivors()
    paths = {}
    for name, nb in made.items():
        paths[name] = tmp / f"{name}.ipynb"
        nbformat.write(nb, paths[name])
    fixtures = [FIXTURES / f"{stem}.ipynb" for stem in SANDBOXED]
    loop = paths["survive_infinite_loop"]
    students = [*EXERCISES, *fixtures, *(p for p in paths.values() if p != loop), bad]
    hidden_fixture = next((FIXTURES / f"{n}.ipynb" for n in sorted(WRONG)), None)
    return {
        # the solutions and the students' submissions in one batch: the solutions are graded as any
        # submission is (their own reference run beside them), and each exercise's reference runs once
        "batch": _grade(tmp, "batch", [*SOLUTIONS, *students], "--hidden"),
        "plain": _grade(tmp, "plain", [hidden_fixture, EXERCISES[0], loop], "--keep", str(tmp / "kept"),
                        timeout=LOOP_TIMEOUT),
        "kept": tmp / "kept",
        "made": paths,
        "n_students": len(students),
        "tests01": tests,
        "hidden_fixture": hidden_fixture,
    }


def _grade(tmp, name, paths, *flags, timeout=TIMEOUT):
    out_json, out_xml = tmp / f"{name}.json", tmp / f"{name}.xml"
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["grade", *map(str, paths), "--solutions", str(ROOT / "solutions"), "--timeout", timeout,
                   "-n", "2", "--json", str(out_json), "--junit", str(out_xml), *flags])
    doc = json.loads(out_json.read_text())
    by_path = {n["notebook"]: n for n in doc["notebooks"]}    # (a solution and its exercise share a name)
    return {"rc": rc, "table": buf.getvalue(), "doc": doc, "nb": by_path, "junit": out_xml}


def _nb(runs, path):
    """The batch's report of one notebook (given as a path, or as the name of one made by _survivors)."""
    return runs["batch"]["nb"][str(runs["made"].get(path, path))]


def _parts(nb):
    return {p["grade_id"]: p for p in nb["parts"]}


def _blocks(table):
    """The text report's block of each notebook, by its path."""
    return {b.split("  (against", 1)[0].split(": NOT GRADED", 1)[0].strip(): b for b in table.split("\n\n")}


def test_every_solution_scores_full_marks_with_hidden_tests(runs):
    """Each solution graded as a submission: no error, no failed part, full marks, no tamper, in every report
    format (what the exit code 0 of a batch of them said; a batch where all pass exits 0: test_course_trust)."""
    r = runs["batch"]
    blocks = _blocks(r["table"])
    for path in SOLUTIONS:
        nb = _nb(runs, path)
        failed = {g: p["message"] for g, p in _parts(nb).items() if p["status"] != "ok"}
        assert nb["error"] is None and not failed and nb["earned"] == nb["possible"] > 0, f"{path.name}: {failed}"
        assert nb["against"] == str(path)
        assert not nb["tamper"], f"{path.name}: the instructor's own solution shows tamper evidence {nb['tamper']}"
        assert "FAIL" not in blocks[str(path)] and "NOT GRADED" not in blocks[str(path)], blocks[str(path)]
    assert len(r["nb"]) == len(SOLUTIONS) + runs["n_students"]
    assert f"TOTAL {len(r['nb']) - 1} notebooks graded: " in r["table"]
    assert "; 1 not graded (bad input)" in r["table"].splitlines()[-1]


def test_every_graded_cell_compares_through_check(runs):
    """A graded cell without check records is decided inside the student's kernel: none may ship."""
    for path in SOLUTIONS:
        nb = read_notebook(path)
        for cell in nb.cells:
            if is_test(cell):
                assert "check(" in cell.source or "check_raises(" in cell.source, \
                    f"{path.name} '{grade_id(cell)}' has no check(...): it could be defeated in the kernel"


def test_junit_report_has_one_testcase_per_part(runs):
    root = ET.parse(runs["batch"]["junit"]).getroot()
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert list(suites) == [n["notebook"] for n in runs["batch"]["doc"]["notebooks"]], "one suite per notebook"
    for nb in runs["batch"]["doc"]["notebooks"]:
        assert len(suites[nb["notebook"]].findall("testcase")) == max(1, len(nb["parts"])), nb["notebook"]
    solutions = [suites[str(p)] for p in SOLUTIONS]
    assert sum(len(s.findall("testcase")) for s in solutions) == sum(len(_nb(runs, p)["parts"]) for p in SOLUTIONS)
    assert not [f for s in solutions for f in s.findall(".//failure") + s.findall(".//error")]
    students = [s for name, s in suites.items() if name not in {str(p) for p in SOLUTIONS}]
    assert [f for s in students for f in s.findall(".//failure")] and [e for s in students for e in s.findall(".//error")]


def test_every_generated_exercise_scores_zero_on_every_part(runs):
    for path in EXERCISES:
        nb = _nb(runs, path)
        assert nb["possible"] > 0 and nb["earned"] == 0, f"{path.name} earned {nb['earned']} as generated"
        for gid, p in _parts(nb).items():
            assert p["status"] != "ok" and p["earned"] == 0, f"{path.name}: part {gid} passes with no code written"
            assert "NotImplementedError" in p["message"] or "recorded" in p["message"], \
                f"{path.name}/{gid}: {p['message']}"


def test_every_exercise_has_wrong_fixtures_and_hidden_tests():
    stems = {p.stem for p in SOLUTIONS}
    covered = {f.stem.split("_", 1)[1] for f in FIXTURES.glob("expected_*.json") if json.loads(f.read_text())}
    for path in SOLUTIONS:
        nn = path.stem.split("_", 1)[0]
        assert nn in covered, f"{path.name}: no tests/fixtures/submissions/expected_{nn}.json of wrong answers"
        assert "### BEGIN HIDDEN TESTS" in path.read_text(), f"{path.name} has no hidden tests"
    assert len(stems) >= 15


@pytest.mark.parametrize("fixture", [s for s in SANDBOXED if s in WRONG])
def test_wrong_implementation_loses_points(runs, fixture):
    nb = _nb(runs, FIXTURES / f"{fixture}.ipynb")
    parts = _parts(nb)
    failed = {g for g, p in parts.items() if p["status"] != "ok"}
    assert failed == WRONG[fixture], f"{fixture}: failed {sorted(failed)}, expected {sorted(WRONG[fixture])}"
    assert nb["earned"] < nb["possible"]
    for g in failed:
        assert parts[g]["earned"] == 0 and parts[g]["message"], f"{fixture}/{g} has no reason"


@pytest.mark.parametrize("fixture", [s for s in SANDBOXED if s in ALTERNATIVES])
def test_correct_alternative_gets_full_marks(runs, fixture):
    nb = _nb(runs, FIXTURES / f"{fixture}.ipynb")
    failed = {g: p["message"] for g, p in _parts(nb).items() if p["status"] != "ok"}
    assert not failed and nb["earned"] == nb["possible"], f"{fixture}: {failed}"


def test_keep_shows_exactly_what_ran(runs):
    kept = runs["kept"]
    index = json.loads((kept / "index.json").read_text())
    labels = list(index.values())
    # the references run first (a failing one is an instructor error, found before the submissions)
    assert all(label.startswith("reference: ") for label in labels[:2]) and len(labels) == 5
    assert labels[2:] == [str(runs["hidden_fixture"]), str(EXERCISES[0]), str(runs["made"]["survive_infinite_loop"])]
    ran = (kept / list(index)[2] / "submission.ipynb").read_text()
    assert "BEGIN HIDDEN TESTS" not in ran and "expected=" not in ran, "no hidden test or reference without --hidden"
    assert (kept / "pytest.log").read_text().strip()


def test_survives_an_exception_in_student_code(runs):
    nb = _nb(runs, "survive_exception")
    assert nb["earned"] == nb["possible"], _parts(nb)
    assert any("raised ValueError: my own experiment failed" in n for n in nb["notes"])


def test_survives_an_infinite_loop(runs):
    parts = _parts(runs["plain"]["nb"][str(runs["made"]["survive_infinite_loop"])])
    first = runs["tests01"][0]
    assert parts[first]["status"] == "timeout"
    assert f"timed out after {LOOP_TIMEOUT} s" in parts[first]["message"]
    assert all(p["status"] == "ok" for g, p in parts.items() if g != first), "later cells still graded"


def test_survives_a_crashed_kernel(runs):
    nb = _nb(runs, "survive_kernel_crash")
    parts = _parts(nb)
    tests = runs["tests01"]
    assert parts[tests[0]]["status"] == "ok"
    assert all(parts[g]["status"] == "not-run" and "kernel died" in parts[g]["message"] for g in tests[1:])
    # the other notebooks of the same batch (same xdist workers) were unaffected
    huge = _nb(runs, "survive_huge_output")
    assert huge["earned"] == huge["possible"] > 0


def test_survives_megabytes_of_output(runs):
    nb = _nb(runs, "survive_huge_output")
    assert nb["earned"] == nb["possible"]
    table = runs["batch"]["table"]
    assert "x" * 1000 not in table and len(table) < 300_000, "printed output must not end up in the report"


def test_edited_and_deleted_test_cells_are_reinserted(runs):
    nb = _nb(runs, "survive_edited_tests")
    tests = runs["tests01"]
    assert nb["earned"] == 0 and len(nb["parts"]) == len(tests), "`assert True` must not earn the points"
    notes = " | ".join(nb["notes"])
    assert f"'{tests[0]}' was edited" in notes and f"'{tests[-1]}' was deleted" in notes


def test_bad_file_in_a_batch_is_reported_and_the_rest_graded(runs):
    r = runs["batch"]
    assert r["rc"] == 2, "bad input makes the exit code 2"
    assert "not_a_notebook.ipynb: NOT GRADED" in r["table"] and "malformed JSON" in r["table"]
    assert "Traceback" not in r["table"]
    assert len(r["nb"]) == len(SOLUTIONS) + runs["n_students"]


def _solution_lines():
    """Lines of the instructor's solutions that no exercise shows (what a report must never quote)."""
    shown = "\n".join(p.read_text() for p in EXERCISES)
    lines = set()
    for path in SOLUTIONS:
        for cell in read_notebook(path).cells:
            if not is_solution(cell) or "### BEGIN SOLUTION" not in cell.source:
                continue
            inside = False
            for line in cell.source.split("\n"):
                if "### BEGIN SOLUTION" in line or "### END SOLUTION" in line:
                    inside = "BEGIN" in line
                elif inside and len(line.strip()) >= 16 and not line.strip().startswith("#") \
                        and json.dumps(line.strip())[1:-1] not in shown:
                    lines.add(line.strip())
    return lines


def _hint_texts(path):
    """Every piece of literal text in the msg= arguments of a solution notebook's check calls."""
    out = []
    for cell in read_notebook(path).cells:
        if cell.cell_type != "code":
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.keyword) and node.arg == "msg":
                out += [n.value for n in ast.walk(node.value) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return out


def test_reports_help_without_giving_the_reference_away(runs):
    """Every exercise as generated fails with an exception in the student's stub: each report format says where
    (the student's cell and line), which check and the instructor's hint; none quotes a line of the solutions,
    and every hint is the instructor's literal text (whatever the reference run computed in it is elided)."""
    r = runs["batch"]
    secret = _solution_lines()
    assert len(secret) > 100
    blocks = _blocks(r["table"])
    suites = {s.get("name"): ET.tostring(s, encoding="unicode") for s in ET.parse(r["junit"]).getroot()}
    for path in EXERCISES:
        nb = _nb(runs, path)
        literals = _hint_texts(ROOT / "solutions" / path.name)
        formats = {"text": blocks[nb["notebook"]], "json": json.dumps(nb), "junit": suites[nb["notebook"]]}
        for fmt, out in formats.items():
            leaked = [line for line in secret if line in out]
            assert not leaked, f"{path.name}: the {fmt} report quotes the solution: {leaked[:3]}"
        for gid, p in _parts(nb).items():
            assert p["case"], f"{path.name}/{gid}: no failing case named"
            if p["status"] != "error":
                continue   # (a check_raises records the stub's NotImplementedError: a wrong value, no line)
            assert p["where"].startswith("solution cell '") and "NotImplementedError" in p["where"] + p["message"], \
                f"{path.name}/{gid}: {p}"
            for fragment in filter(None, (f.strip(" .") for f in p["hint"].split("..."))):   # ("optim....": "." + ...)
                assert any(fragment in lit for lit in literals), f"{path.name}/{gid}: hint {p['hint']!r}"
            for fmt, out in formats.items():
                shown = out if fmt != "json" else json.loads(out)["parts"]
                assert p["where"] in str(shown) or fmt == "json", f"{path.name}/{gid}: no line in the {fmt} report"
    hint = "sum over every axis where the target size is 1, with keepdims=True"
    nb = _nb(runs, ROOT / "exercises" / "01_unbroadcast.ipynb")
    assert _parts(nb)["size_one_axes"]["hint"] == hint
    assert f"hint: {hint}" in blocks[nb["notebook"]] and f"hint: {hint}" in suites[nb["notebook"]]
