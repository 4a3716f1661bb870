"""Every lesson asks something of the student, and leads to its exercise (issue 33).

* at least three code cells tagged ``your-turn`` (JupyterLab's cell tags), each ending in a check:
  ``predict`` (predict, then run), ``write_it`` (write it) or ``change_it`` (change it and explain),
  and all three kinds in every notebook;
* a shipped notebook's your-turn cells store the friendly "your turn" notice: run without answers,
  the student sees notices, never a traceback (the stored run is the one a student would make);
* the first cell says what the lesson teaches, what it needs and how long it takes;
* the notebook ends with a link into ``../exercises/`` (a notebook that exists), and no notebook
  points at ``solutions/``;
* no notebook shows an exercise's answer before the student meets that exercise, outside a
  your-turn cell (where the student writes it).
"""
from __future__ import annotations

import ast
import pathlib
import re

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
KINDS = {"predict": "predict, then run", "write_it": "write it", "change_it": "change it and explain"}
EXERCISE_LINK = re.compile(r"\]\(\.\./exercises/([0-9]{2}_\w+\.ipynb)\)")

#: an exercise's answer, as code that would give it away (exercise -> patterns)
ANSWERS = {
    "07_gradcheck.ipynb": [r"def \w*gradcheck\w*\(", r"def numerical_\w+\("],
    "06_mini_engine.ipynb": [r"def topo_\w+\(", r"def visit\(", r"order\.append\("],
    "12_attention.ipynb": [r"\.triu\(diagonal=1\)", r"masked_fill\([^)]*-inf"],
}


def _nb(path):
    return nbformat.read(path, as_version=4)


def _your_turn(nb):
    return [c for c in nb.cells if c.cell_type == "code" and "your-turn" in c.metadata.get("tags", [])]


def _checks_called(src):
    """Names of the your-turn checks a cell calls (its last statement must be one of them)."""
    tree = ast.parse(src)
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    last = tree.body[-1] if tree.body else None
    shown = (isinstance(last, ast.Expr) and isinstance(last.value, ast.Call)
             and isinstance(last.value.func, ast.Name) and last.value.func.id in KINDS)
    return called & set(KINDS), shown


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_at_least_three_your_turn_cells_of_every_kind(path):
    cells = _your_turn(_nb(path))
    assert len(cells) >= 3, f"{path.name} has {len(cells)} cells tagged 'your-turn' (needs at least 3)"
    kinds = set()
    for c in cells:
        called, shown = _checks_called(c.source)
        assert called, f"{path.name}: a your-turn cell calls no check (predict/write_it/change_it):\n{c.source[:300]}"
        assert shown, (f"{path.name}: a your-turn cell must end with its check, so JupyterLab shows the "
                       f"feedback:\n{c.source[-300:]}")
        kinds |= called
    missing = sorted(KINDS[k] for k in set(KINDS) - kinds)
    assert not missing, f"{path.name} has no {', '.join(missing)} cell"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_unanswered_cells_store_a_notice_not_a_traceback(path):
    for c in _your_turn(_nb(path)):
        if c.execution_count is None:   # a notebook stored without outputs has nothing to show
            continue
        texts = [o.get("data", {}).get("text/plain", "") for o in c.outputs if o.get("output_type") == "execute_result"]
        assert not [o for o in c.outputs if o.get("output_type") == "error"], f"{path.name}: a your-turn cell stored an error"
        assert texts and texts[-1].startswith("✋"), (
            f"{path.name}: an unanswered your-turn cell should show the 'your turn' notice, it shows "
            f"{texts[-1][:200] if texts else 'nothing'!r}:\n{c.source[:200]}")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_says_what_it_teaches_needs_and_takes(path):
    top = _nb(path).cells[0]
    assert top.cell_type == "markdown"
    for what in ("**In this lesson you will**", "**Before it:**", "**Time:**"):
        assert what in top.source, f"{path.name}'s first cell lacks {what!r} (objectives, prerequisites, time)"
    assert re.search(r"\*\*Time:\*\* about \d+ minutes", top.source), f"{path.name}: say the time in minutes"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_ends_with_its_exercise_and_never_points_at_solutions(path):
    nb = _nb(path)
    last = nb.cells[-1]
    assert last.cell_type == "markdown" and last.source.startswith("## Practise it"), (
        f"{path.name} should end with a '## Practise it' cell linking its exercise")
    links = EXERCISE_LINK.findall(last.source)
    assert links, f"{path.name}'s last cell links no exercise as (../exercises/NN_name.ipynb)"
    for name in links:
        assert (ROOT / "exercises" / name).is_file(), f"{path.name} links ../exercises/{name}, which does not exist"
    for c in nb.cells:
        assert "solutions/" not in c.source, (f"{path.name} points at solutions/ (the instructor's answers); "
                                              "link the exercise in ../exercises/ instead")


def _first_meeting():
    """exercise file -> the index (in course order) of the first notebook that links it."""
    first = {}
    for i, path in enumerate(NOTEBOOKS):
        for c in _nb(path).cells:
            if c.cell_type == "markdown":
                for name in EXERCISE_LINK.findall(c.source):
                    first.setdefault(name, i)
    return first


@pytest.mark.parametrize("exercise", sorted(ANSWERS))
def test_no_lesson_gives_an_exercise_away_before_the_student_meets_it(exercise):
    first = _first_meeting()
    assert exercise in first, f"no notebook links ../exercises/{exercise}"
    for path in NOTEBOOKS[: first[exercise] + 1]:
        for c in _nb(path).cells:
            if c.cell_type != "code" or "your-turn" in c.metadata.get("tags", []):
                continue
            for pattern in ANSWERS[exercise]:
                assert not re.search(pattern, c.source), (
                    f"{path.name} shows exercise {exercise}'s answer ({pattern!r}) before the student has met "
                    f"the exercise: make it a your-turn cell, or use gradlab.course.lessons:\n{c.source[:300]}")
