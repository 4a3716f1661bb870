"""`gradlab course release OUT`: the students' repository works and holds nothing of the solutions.

One release (module fixture) is checked three ways: the release's own leak scan finds nothing (and
finds each kind of secret when one is planted: it has teeth); an independent scan finds no solution
or hidden-test region, as a block, in any file; and inside OUT, with only OUT on the path, the
students' tests pass, `gradlab lab` starts a JupyterLab that answers, `make lab` / `make test` run
those commands, and `gradlab grade` self-checks an exercise. `--course` and its errors are here too.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from gradlab.cli import main
from gradlab.course.course_dir import Course, find_course
from gradlab.course.notebook import BEGIN_HIDDEN, BEGIN_SOLUTION, END_HIDDEN, END_SOLUTION, read_notebook
from gradlab.course.release import leaks, reference_helpers, release

ROOT = Path(__file__).resolve().parents[1]
COURSE = Course(str(ROOT))


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    d = tmp_path_factory.mktemp("release") / "students"
    files = release(COURSE, d)
    assert len(files) > 100
    return d


def _env(out):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "JUPYTER"))}
    env["PYTHONPATH"] = str(out)          # the released package, nothing of the instructor's checkout
    return env


def _regions(source, begin, end):
    lines, block, inside = source.split("\n"), [], False
    for ln in lines:
        if ln.strip() == begin:
            inside, block = True, []
        elif ln.strip() == end and inside:
            inside = False
            yield [x.strip() for x in block if x.strip()]
        elif inside:
            block.append(ln)


def test_what_ships_and_what_does_not(out):
    top = sorted(p.name for p in out.iterdir())
    assert {"gradlab", "notebooks", "exercises", "README.md", "Makefile", "pyproject.toml", "tests"} <= set(top)
    for secret in ("solutions", "scripts", "benchmarks", ".ci", "tests/fixtures", "docs/instructors.md",
                   "docs/ARCHITECTURE.md", "tests/test_course_grade.py"):
        assert not (out / secret).exists(), f"{secret} was released"
    assert sorted(p.name for p in (out / "exercises").glob("*.ipynb")) == \
        sorted(p.name for p in (ROOT / "solutions").glob("*.ipynb"))
    assert leaks(out, COURSE) == []


def test_no_solution_or_hidden_region_in_any_file(out):
    """Independent of the release's scan: every region (as its run of lines) against every file's text."""
    blocks = []
    for p in sorted((ROOT / "solutions").glob("*.ipynb")):
        for cell in read_notebook(p).cells:
            for b, e in ((BEGIN_SOLUTION, END_SOLUTION), (BEGIN_HIDDEN, END_HIDDEN)):
                blocks += [r for r in _regions(cell.source, b, e) if sum(len(x) for x in r) >= 40]
    texts, public = _texts(out), _texts(ROOT / "notebooks", ROOT / "gradlab")   # a lesson may show a solution
    blocks = [b for b in blocks if not any("\n".join(b) in t for t in public.values())]
    assert len(blocks) > 40
    for block in blocks:
        needle = "\n".join(block)
        hits = [str(f.relative_to(out)) for f, t in texts.items() if needle in t]
        assert not hits, f"a solution/hidden region leaked into {hits}: {block[0]!r}"


def _texts(*folders):
    texts = {}
    for folder in folders:
        for f in folder.rglob("*"):
            if f.is_file() and "__pycache__" not in f.parts:
                raw = f.read_text(encoding="utf-8", errors="replace")
                if f.suffix == ".ipynb":
                    raw = "\n".join(c["source"] if isinstance(c["source"], str) else "".join(c["source"])
                                    for c in json.loads(raw)["cells"])
                texts[f] = "\n".join(x.strip() for x in raw.split("\n") if x.strip())
    return texts


def test_the_leak_scan_has_teeth(out, tmp_path):
    sol = read_notebook(ROOT / "solutions" / "03_softmax.ipynb")
    sol_line = next(r for c in sol.cells for r in _regions(c.source, BEGIN_SOLUTION, END_SOLUTION) if r)
    hidden = [r for p in sorted((ROOT / "solutions").glob("*.ipynb")) for c in read_notebook(p).cells
              for r in _regions(c.source, BEGIN_HIDDEN, END_HIDDEN) if r]
    helper = next(src for name, src, _ in reference_helpers(COURSE) if name == "_ref_topk_grad")
    planted = {
        "notebooks/99_copy.ipynb": (ROOT / "solutions" / "03_softmax.ipynb").read_text(),
        "gradlab/planted_reference.py": "import numpy as np\n\n" + helper + "\n",   # re-indented does not hide it
        "gradlab/planted.py": "x = 1\n" + "\n".join("    " + ln for ln in sol_line) + "\n",
        "docs/notes.md": "\n".join(max(hidden, key=len)) + "\n",
    }
    for rel, text in planted.items():
        target = out / rel
        target.write_text(text, encoding="utf-8")
        try:
            found = leaks(out, COURSE)
        finally:
            target.unlink()
        assert any(f.startswith(rel) for f in found), (rel, found[:3])
    assert leaks(out, COURSE) == []


def test_no_reference_helper_ships_and_the_checks_read_recorded_values(out):
    """The exercises show no reference helper (they computed the visible checks' expected values, and gave
    the math away) and no expected=: each calls recorded(NAME), and exercises/expected/NAME.json holds the
    solution's value of every visible check, and of no hidden one."""
    helpers = reference_helpers(COURSE)
    assert {"_ref_topk_grad", "_ref_bn_grads", "_autograd_layer_norm", "_conv2d_backward_loop", "_numpy_gd",
            "_ref_gated_grads"} <= {name for name, _, _ in helpers}
    hidden_names = set()
    for p in sorted((ROOT / "solutions").glob("*.ipynb")):
        for cell in read_notebook(p).cells:
            for region in _regions(cell.source, BEGIN_HIDDEN, END_HIDDEN):
                hidden_names.update(x.split("(", 1)[1].split(",")[0].strip("f'\"") for x in region
                                    if x.startswith("check("))
    for p in sorted((out / "exercises").glob("*.ipynb")):
        text = "\n".join(c.source for c in read_notebook(p).cells if c.cell_type == "code")
        assert "expected=" not in text and f'recorded("{p.stem}")' in text, p.name
        assert not [name for name, _, _ in helpers if f"def {name}(" in text], p.name
        records = json.loads((out / "exercises" / "expected" / f"{p.stem}.json").read_text())["records"]
        names = {r["name"] for recs in records.values() for r in recs}
        assert names and not names & hidden_names, (p.name, sorted(names & hidden_names)[:3])


def _filled(exercise, solution, replace=None):
    """The exercise with every answer cell holding the solution's code (or ``replace[grade_id]``)."""
    import copy

    from gradlab.course.notebook import grade_id, is_solution
    nb = copy.deepcopy(read_notebook(exercise))
    answers = {grade_id(c): c.source for c in read_notebook(solution).cells if is_solution(c)}
    answers.update(replace or {})
    for cell in nb.cells:
        if is_solution(cell) and grade_id(cell) in answers:
            cell.source = answers[grade_id(cell)]
    return nb


# the exercises that showed NumPy reference math before their checks read recorded values
RECORDED = ("04_layer_norm", "05_conv2d_im2col", "13_debug_training_loop", "16_inplace_bugs", "17_custom_function")


def test_exercises_filled_in_pass_their_checks_and_a_wrong_answer_fails(out, monkeypatch):
    """A released exercise, its answers filled in from the solution, passes each visible check against
    the recorded values (run in-process, as nbval would, from inside exercises/); a wrong answer fails.
    (Every exercise was run so once, 21 of 21 passing; these five keep it to seconds.)"""
    from gradlab.course.inprocess import grade_notebook
    monkeypatch.chdir(out / "exercises")
    for p in [out / "exercises" / f"{name}.ipynb" for name in RECORDED]:
        cells, batch = grade_notebook(_filled(p, ROOT / "solutions" / p.name), hidden=False, probes=False)
        failed = [(c.grade_id, r.message) for c, r in zip(cells, batch.reference.cells) if c.graded and r.status != "ok"]
        assert not failed and any(r.records for r in batch.reference.cells), (p.name, failed[:2])
    nb = _filled(out / "exercises" / "04_layer_norm.ipynb", ROOT / "solutions" / "04_layer_norm.ipynb")
    for cell in nb.cells:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "layer_norm_backward":
            cell.source += "\n\n_right = layer_norm_backward\n" \
                           "def layer_norm_backward(g, cache):\n    dx, dw, db = _right(g, cache)\n    return dx * 1.01, dw, db\n"
    cells, batch = grade_notebook(nb, hidden=False, probes=False)
    status = {c.grade_id: (r.status, r.message) for c, r in zip(cells, batch.reference.cells) if c.graded}
    assert status["backward_dw_db"][0] == "ok" and status["forward"][0] == "ok", status
    assert status["backward_dx"][0] != "ok" and "dx (4, 8)" in status["backward_dx"][1], status


def test_students_tests_pass_inside_the_release(out):
    env = _env(out)
    where = subprocess.run([sys.executable, "-c", "import gradlab; print(gradlab.__file__)"], cwd=out, env=env,
                           capture_output=True, text=True, timeout=60)
    assert where.stdout.strip().startswith(str(out)), where.stdout + where.stderr
    r = subprocess.run([sys.executable, "-m", "pytest", "tests", "-q", "-p", "no:cacheprovider"], cwd=out, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and " passed" in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]


def test_make_lab_and_make_test_run_the_students_commands(out):
    make = shutil.which("make")
    assert make, "make is needed for the students' `make lab` (apt-get install make)"
    r = subprocess.run([make, "-n", "lab", "test"], cwd=out, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "-m gradlab lab" in r.stdout and "-m pytest tests" in r.stdout and 'pip install -q -e ".[dev,lab,data]"' \
        in r.stdout, r.stdout


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_lab_starts_inside_the_release(out, tmp_path):
    pytest.importorskip("jupyterlab", reason="JupyterLab is in the lab extra")
    port, token = _free_port(), "releasetest"
    env = dict(_env(out), JUPYTER_TOKEN=token, JUPYTER_DATA_DIR=str(tmp_path / "data"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), JUPYTER_CONFIG_DIR=str(tmp_path / "config"))
    proc = subprocess.Popen([sys.executable, "-m", "gradlab", "lab", "--no-browser", "--port", str(port)], cwd=out,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline, status = time.monotonic() + 120, None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/contents/notebooks?token={token}",
                                            timeout=5) as resp:
                    status = json.load(resp)
                break
            except OSError:
                time.sleep(1)
        assert status is not None, f"the lab did not answer (exit {proc.poll()})"
        names = {c["name"] for c in status["content"]}
        assert "00_welcome.ipynb" in names
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def test_a_student_self_checks_an_exercise_inside_the_release(out, tmp_path):
    solved = tmp_path / "mine.ipynb"
    shutil.copy(ROOT / "solutions" / "01_unbroadcast.ipynb", solved)
    r = subprocess.run([sys.executable, "-m", "gradlab", "grade", "exercises/01_unbroadcast.ipynb", str(solved),
                        "--sandbox", "off"], cwd=out, env=_env(out), capture_output=True, text=True, timeout=600)
    assert r.returncode == 1, r.stdout + r.stderr    # the shipped stub fails, the solved copy passes
    assert "exercises/01_unbroadcast.ipynb  (against (self-check))  0 / 8" in r.stdout, r.stdout
    assert f"{solved}  (against (self-check))  8 / 8" in r.stdout, r.stdout
    assert "self-check" in r.stdout


def _run(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(argv))
    return rc, out.getvalue(), err.getvalue()


def test_release_refuses_to_overwrite_or_to_release_a_students_copy(out, tmp_path):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "keep.txt").write_text("mine")
    rc, _, err = _run("course", "release", str(tmp_path / "busy"), "--course", str(ROOT))
    assert rc == 2 and "not empty" in err and (tmp_path / "busy" / "keep.txt").read_text() == "mine"
    rc, _, err = _run("course", "release", str(tmp_path / "again"), "--course", str(out))
    assert rc == 2 and "already a students' copy" in err


def test_the_course_is_found_from_below_and_errors_are_clear(tmp_path, monkeypatch):
    assert find_course(start=ROOT / "tests" / "fixtures").root == str(ROOT)
    monkeypatch.chdir(tmp_path)
    nb = tmp_path / "x.ipynb"
    shutil.copy(ROOT / "exercises" / "01_unbroadcast.ipynb", nb)
    rc, _, err = _run("grade", str(nb))
    assert rc == 2 and "no course here" in err and "--course" in err
    rc, _, err = _run("grade", str(nb), "--course", str(tmp_path / "nowhere"))
    assert rc == 2 and "no such folder" in err
    rc, _, err = _run("course", "build", "--check", "--course", str(ROOT))
    assert rc == 0, err
