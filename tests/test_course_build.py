"""gradlab course build: exercises/ is generated from solutions/, deterministically, and kept in sync.

No kernels here (fast): the grading tests are in test_course_grade.py.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="the course tooling needs nbformat (pip install 'gradlab[dev]')")

from gradlab.cli import main  # noqa: E402
from gradlab.course import CourseError, build  # noqa: E402
from gradlab.course.assemble import assemble  # noqa: E402
from gradlab.course.notebook import (  # noqa: E402
    check_solution_notebook,
    grade_id,
    is_solution,
    is_test,
    nbgrader_meta,
    read_notebook,
    strip_hidden,
    strip_solution,
)

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = sorted((ROOT / "solutions").glob("*.ipynb"))
EXERCISES = sorted((ROOT / "exercises").glob("*.ipynb"))


def _committed(path: Path) -> bytes | None:
    """``path`` as of git HEAD (None outside a git checkout or when it is not committed)."""
    try:
        r = subprocess.run(["git", "-C", str(ROOT), "show", f"HEAD:{path.relative_to(ROOT).as_posix()}"],
                           capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout if r.returncode == 0 else None


def test_exercises_are_up_to_date(tmp_path):
    """CI guard: the shipped exercises/ are what solutions/ generate.

    A file in exercises/ that someone edited on this machine (a student filling it in, JupyterLab
    autosaving it) is not a defect of the course: it passes when its committed version is right. The
    message on failure is for instructors, and the command it names never overwrites an edited file.
    """
    out = tmp_path / "exercises"
    build(str(ROOT / "solutions"), str(out))
    generated = sorted(p.name for p in out.glob("*.ipynb"))
    assert generated == [p.name for p in EXERCISES], "exercises/ has a different set of notebooks than solutions/"
    differ = [name for name in generated
              if (out / name).read_bytes() not in ((ROOT / "exercises" / name).read_bytes(),
                                                   _committed(ROOT / "exercises" / name))]
    assert not differ, (f"the shipped exercises/ {differ} are not what solutions/ generate: instructors "
                        "regenerate them with `gradlab course build` (it refuses to overwrite an edited file)")


def test_build_is_deterministic_and_check_mode(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["course", "build", "--solutions", str(ROOT / "solutions"), "--out", str(a)]) == 0
    assert main(["course", "build", "--solutions", str(ROOT / "solutions"), "--out", str(b)]) == 0
    for p in a.glob("*.ipynb"):
        assert p.read_bytes() == (b / p.name).read_bytes(), f"{p.name}: two builds differ"
    assert main(["course", "build", "--solutions", str(ROOT / "solutions"), "--out", str(a), "--check"]) == 0
    victim = sorted(a.glob("*.ipynb"))[0]
    victim.write_text(victim.read_text().replace("YOUR CODE HERE", "edited by hand", 1))
    capsys.readouterr()
    assert main(["course", "build", "--solutions", str(ROOT / "solutions"), "--out", str(a), "--check"]) == 1
    assert victim.name in capsys.readouterr().err


def test_solution_notebooks_are_well_formed():
    assert len(SOLUTIONS) >= 8, f"expected at least 8 exercise notebooks, found {len(SOLUTIONS)}"
    for path in SOLUTIONS:
        nb = read_notebook(path)
        check_solution_notebook(nb, str(path))  # unique grade_ids, points, paired markers
        assert nb.metadata["kernelspec"]["name"] == "python3", f"{path.name}: needs metadata.kernelspec python3"
        tests = [c for c in nb.cells if is_test(c)]
        assert len(tests) >= 3, f"{path.name}: only {len(tests)} graded parts"
        assert all(nbgrader_meta(c)["points"] > 0 for c in tests), f"{path.name}: a graded cell has no points"
        assert any(is_solution(c) for c in nb.cells), f"{path.name}: nothing for the student to write"
        for c in nb.cells:
            if "ipywidgets" in c.source or "display(" in c.source:
                assert "nbval-ignore-output" in c.metadata.get("tags", []), (
                    f"{path.name}: a cell showing widgets must be tagged nbval-ignore-output")


def test_exercises_hide_solutions_and_hidden_tests():
    for path in EXERCISES:
        text = path.read_text(encoding="utf-8")
        for marker in ("### BEGIN SOLUTION", "### END SOLUTION", "### BEGIN HIDDEN TESTS"):
            assert marker not in text, f"{path.name} still contains {marker!r}"
        nb = read_notebook(path)
        assert nb.metadata["kernelspec"]["name"] == "python3"
        for c in nb.cells:
            if c.cell_type == "code":
                assert c.outputs == [] and c.execution_count is None, f"{path.name}: outputs not cleared"
            meta = nbgrader_meta(c)
            if meta:  # nbgrader's schema 3, every field present, so nbgrader can use the notebook as it is
                assert {"grade", "grade_id", "locked", "schema_version", "solution", "task"} <= set(meta)
                assert meta["schema_version"] == 3 and meta["task"] is False
                if meta["grade"]:
                    assert "points" in meta
            if is_solution(c) and c.cell_type == "code":
                assert "raise NotImplementedError()" in c.source and "# YOUR CODE HERE" in c.source
            if is_test(c):
                assert c.metadata.get("editable") is False and c.metadata.get("deletable") is False


def test_strip_solution_keeps_indentation_and_surroundings():
    src = "def f(x):\n    y = 1\n    ### BEGIN SOLUTION\n    return x + y\n    ### END SOLUTION\n\nclass A:\n" \
          "    def g(self):\n        ### BEGIN SOLUTION\n        return 2\n        ### END SOLUTION\n"
    out = strip_solution(src)
    assert out == ("def f(x):\n    y = 1\n    # YOUR CODE HERE\n    raise NotImplementedError()\n\nclass A:\n"
                   "    def g(self):\n        # YOUR CODE HERE\n        raise NotImplementedError()\n")
    compile(out, "<stub>", "exec")
    assert strip_solution("x = 1") == "# YOUR CODE HERE\nraise NotImplementedError()"  # nbgrader: no markers
    assert strip_solution("answer", "markdown") == "YOUR ANSWER HERE"


def test_strip_hidden_and_bad_markers():
    src = "assert a\n### BEGIN HIDDEN TESTS\nassert b\n### END HIDDEN TESTS"
    assert strip_hidden(src) == "assert a"
    assert strip_hidden(src, keep=True) == "assert a\nassert b"
    with pytest.raises(CourseError, match="no matching '### END SOLUTION'"):
        strip_solution("### BEGIN SOLUTION\nx = 1")
    with pytest.raises(CourseError, match="without a '### BEGIN HIDDEN TESTS'"):
        strip_hidden("### END HIDDEN TESTS")


def _sub_and_sol(name="01_unbroadcast"):
    return read_notebook(ROOT / "exercises" / f"{name}.ipynb"), read_notebook(ROOT / "solutions" / f"{name}.ipynb")


def test_assemble_reinserts_instructor_cells_and_keeps_student_cells():
    sub, sol = _sub_and_sol()
    helper = nbformat.v4.new_code_cell("HELPER = 1")
    sol_cell = next(i for i, c in enumerate(sub.cells) if is_solution(c))
    sub.cells.insert(sol_cell + 1, helper)                      # the student's own cell after the solution
    tests = [c for c in sub.cells if is_test(c)]
    tests[0].source = "assert True"                            # an edited test cell
    sub.cells.remove(tests[1])                                 # a deleted test cell
    sub.cells.pop(sol_cell)                                    # a deleted solution cell
    nb, notes = assemble(sub, sol, "sub.ipynb", "solutions/01_unbroadcast.ipynb")
    kinds = [(c.metadata["gradlab"]["kind"], c.metadata["gradlab"].get("grade_id")) for c in nb.cells]
    sol_tests = [grade_id(c) for c in sol.cells if is_test(c)]
    assert [g for k, g in kinds if k == "test"] == sol_tests, "every instructor test, in the instructor's order"
    by_id = {c.metadata["gradlab"].get("grade_id"): c for c in nb.cells}
    instructor = {grade_id(c): c for c in sol.cells}
    # the instructor's test, as the student's graded kernel runs it: no reference helper, no expected=
    from gradlab.course.assemble import graded_source
    from gradlab.course.references import student_taint, without_references
    taint = student_taint(sol, hidden=False)
    for c in sol.cells:   # what the cells before it taint (assignments from reference values)
        if grade_id(c) == sol_tests[0]:
            break
        if c.cell_type == "code" and not is_solution(c) and (is_test(c) or c.metadata.get("nbgrader", {}).get("locked")):
            without_references(strip_hidden(c.source), taint, "cell")
    ran = graded_source(by_id[sol_tests[0]].source)   # (it runs in the grader's namespace: graded.py)
    assert ran == without_references(strip_hidden(instructor[sol_tests[0]].source), taint, "cell")
    assert "expected=" not in ran and "_reference" not in ran
    assert "raise NotImplementedError()" in by_id["unbroadcast"].source, "a deleted solution is graded as unanswered"
    assert any(c.source == "HELPER = 1" for c in nb.cells), "the student's own cells are kept"
    joined = " | ".join(notes)
    assert "was edited" in joined and "was deleted" in joined and "missing from the submission" in joined
    nb_hidden, _ = assemble(sub, sol, "sub.ipynb", "solutions/01_unbroadcast.ipynb", hidden=True)
    assert any("unbroadcast(w, (1,))" in c.source for c in nb_hidden.cells), "--hidden runs the hidden tests"
    assert not any("unbroadcast(w, (1,))" in c.source for c in nb.cells)


def test_assemble_rejects_a_different_exercise():
    sub, _ = _sub_and_sol("01_unbroadcast")
    _, other = _sub_and_sol("03_softmax")
    with pytest.raises(CourseError, match="different exercise"):
        assemble(sub, other, "exercises/01_unbroadcast.ipynb", "solutions/03_softmax.ipynb")


# ------------------------------------------------------------------ bad input: clear message, exit 2, no traceback
def _bad(tmp_path, capsys, args):
    capsys.readouterr()
    rc = main(["grade", *args, "--solutions", str(ROOT / "solutions")])
    err = capsys.readouterr()
    text = err.out + err.err
    assert rc == 2, f"exit code {rc} for bad input {args}"
    assert "Traceback" not in text
    return text


def test_bad_input_not_a_notebook(tmp_path, capsys):
    p = tmp_path / "essay.txt"
    p.write_text("my answers are in here")
    assert "not a notebook: malformed JSON" in _bad(tmp_path, capsys, [str(p)])
    assert "empty batch" in _bad(tmp_path, capsys, [str(tmp_path)])   # a folder is a batch: this one has none
    assert "no such file" in _bad(tmp_path, capsys, [str(tmp_path / "missing.ipynb")])
    b = tmp_path / "binary.ipynb"
    b.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff")
    assert "not UTF-8" in _bad(tmp_path, capsys, [str(b)])


def test_bad_input_malformed_json(tmp_path, capsys):
    text = (ROOT / "exercises" / "01_unbroadcast.ipynb").read_text()
    p = tmp_path / "01_unbroadcast.ipynb"
    p.write_text(text[: len(text) // 2])          # a half-saved upload
    assert "malformed JSON at line" in _bad(tmp_path, capsys, [str(p)])
    q = tmp_path / "other.ipynb"
    q.write_text(json.dumps({"hello": "world"}))
    assert "without 'cells'" in _bad(tmp_path, capsys, [str(q)])


def test_bad_input_different_exercise(tmp_path, capsys):
    out = _bad(tmp_path, capsys, [str(ROOT / "exercises" / "01_unbroadcast.ipynb"),
                                  "--against", str(ROOT / "solutions" / "03_softmax.ipynb")])
    assert "different exercise" in out and "NOT GRADED" in out
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("print('hello')")]
    stray = tmp_path / "stray.ipynb"
    nbformat.write(nb, str(stray))
    assert "matches no exercise" in _bad(tmp_path, capsys, [str(stray)])
    assert "has no graded test cells" in _bad(tmp_path, capsys, [str(stray), "--against", str(stray)])


def test_bad_arguments(tmp_path, capsys):
    assert "--timeout must be positive" in _bad(tmp_path, capsys, ["x.ipynb", "--timeout", "0"])
    assert os.path.exists(ROOT / "solutions")


def test_grade_retries_a_notebook_whose_kernel_did_not_start(monkeypatch):
    """A kernel that fails to start on a loaded machine is retried once, not scored as the student's zero."""
    import sys
    grade_mod = sys.modules["gradlab.course.grading"]
    from gradlab.course import grade
    calls = []

    def fake_run(jobs, timeout, workers, keep_dir=None, labels=None, **kw):
        calls.append([i for i, _ in jobs])
        status = "no-kernel" if len(calls) == 1 else "ok"
        recs = {}
        for i, nb in jobs:
            recs[i] = [dict(c.metadata["gradlab"], status=status, message="", cell=k)
                       for k, c in enumerate(nb.cells)]
        return recs, None

    monkeypatch.setattr(grade_mod, "run_notebooks", fake_run)
    (res,) = grade([str(ROOT / "solutions" / "01_unbroadcast.ipynb")], solutions_dir=str(ROOT / "solutions"))
    assert calls == [[("reference", 0), 0], [("reference", 0), 0]], "the notebook (and its reference) run again"
    assert res.earned == res.possible > 0 and not res.failed


def test_every_course_module_docstring_lists_what_the_file_holds():
    """An instructor opening a file of gradlab/course/ finds its public functions and classes named at the top."""
    import ast
    missing = {}
    for path in sorted((ROOT / "gradlab" / "course").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        doc = ast.get_docstring(tree) or ""
        public = [n.name for n in tree.body
                  if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and not n.name.startswith("_")]
        assert doc, f"{path.name} has no module docstring"
        if [n for n in public if n not in doc]:
            missing[path.name] = [n for n in public if n not in doc]
    assert not missing, f"module docstrings that do not name what the file holds: {missing}"
