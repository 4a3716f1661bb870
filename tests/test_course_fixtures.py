"""The teeth of every exercise's checks: each wrong submission in tests/fixtures/submissions loses exactly the
parts its ``expected_NN.json`` names, and each correct alternative (``alt_*``) gets full marks.

These submissions are honest code (plausible bugs and other correct ways to write the answer): what they
test is the *checks*, not the sandbox. So they run in-process (``gradlab.course.inprocess``, the engine of
``gradlab course mutants``): the instructor's solution notebook with its hidden tests, each fixture's
answer cells put in place of the solution's, one fork per fixture, scored by the grader's own rule
(``gradlab.course.scoring.score``). That takes seconds where a sandboxed kernel per fixture took minutes.

What this leaves to tests/test_course_grade.py, which runs ``gradlab grade`` in real sandboxed kernels: the
fixtures that try to *game* the grader (``*fakes*``, ``*forged*``: they forge check records or patch what
the checks use, which only the sandbox stops), and a sample of the others, graded there against the same
expected parts, so the two paths are shown to agree.
"""
from __future__ import annotations

import pytest

from gradlab.course.cells import notebook_cells
from gradlab.course.collect import _exercise_index, exercise_of
from gradlab.course.course_dir import find_course
from gradlab.course.inprocess import run_variants
from gradlab.course.notebook import grade_id, read_notebook
from gradlab.course.scoring import score

from .submission_fixtures import ALTERNATIVES, FIXTURES, HONEST, ROOT, WRONG


def _answers(fixture_nb, cells):
    """{position in the solution's cells: the fixture's source} for every answer cell the fixture holds."""
    mine = {grade_id(c): c.source for c in fixture_nb.cells if c.get("cell_type") == "code" and grade_id(c)}
    return {c.pos: mine[c.grade_id] for c in cells if c.kind == "solution" and c.grade_id in mine}


@pytest.fixture(scope="module")
def graded():
    """{fixture stem: {grade_id: (status, why)}}: every honest fixture, one in-process batch per exercise."""
    course = find_course(ROOT)
    ids, names = _exercise_index(course)
    by_exercise = {}
    for stem in HONEST:
        nb = read_notebook(FIXTURES / f"{stem}.ipynb")
        by_exercise.setdefault(exercise_of(nb, ids, names), []).append((stem, nb))
    out = {}
    for exercise, fixtures in sorted(by_exercise.items()):
        cells = notebook_cells(read_notebook(ROOT / "solutions" / f"{exercise}.ipynb"), hidden=True,
                               where=exercise)
        batch = run_variants(cells, [_answers(nb, cells) for _, nb in fixtures], timeout=60, workers=2)
        ref = {p.grade_id: p for p in score(batch.reference, batch.reference, cells)}
        assert all(p.earned == p.points for p in ref.values()), f"{exercise}: the solution itself loses points"
        for (stem, _), run in zip(fixtures, batch.runs):
            out[stem] = {p.grade_id: ("ok" if p.earned == p.points else "lost", p.message)
                         for p in score(run, batch.reference, cells)}
    return out


def test_every_honest_fixture_is_graded(graded):
    assert set(graded) == set(HONEST) and len(HONEST) >= 100


@pytest.mark.parametrize("fixture", [s for s in HONEST if s in WRONG])
def test_wrong_implementation_loses_points(graded, fixture):
    parts = graded[fixture]
    failed = {g for g, (status, _) in parts.items() if status != "ok"}
    assert failed == WRONG[fixture], f"{fixture}: failed {sorted(failed)}, expected {sorted(WRONG[fixture])}"
    for g in failed:
        assert parts[g][1], f"{fixture}/{g} has no reason"


@pytest.mark.parametrize("fixture", [s for s in HONEST if s in ALTERNATIVES])
def test_correct_alternative_gets_full_marks(graded, fixture):
    failed = {g: why for g, (status, why) in graded[fixture].items() if status != "ok"}
    assert not failed, f"{fixture}: {failed}"


def test_the_fixtures_are_what_students_get_from_the_current_exercises():
    """Each fixture is the exercise as `gradlab course build` writes it now, with only its answer cells changed.

    A fixture left behind when an exercise's test cells change tests old checks (129 once still carried the
    reference helpers that the exercises no longer show); ``scripts/make_fixtures.py --check`` says which.
    """
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "scripts/make_fixtures.py", "--check"], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
