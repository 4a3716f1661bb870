"""A batch graded for real: a Canvas zip -> the gradebook (CSV, JSON by student, feedback), in one run and
in two shards merged (the same bytes), with a duplicate and a corrupt file reported, not fatal.

The batch is small (3 students x 2 exercises, in sandboxed kernels) so that it stays a few minutes on a
loaded machine; tests/test_course_collect.py covers the 20-student zip's collection, and the README's
figures come from the 20 x 3 batch graded the same way.
"""
from __future__ import annotations

import contextlib
import csv
import io
import json

import pytest

from gradlab.cli import main
from gradlab.course.assemble import parts_of
from gradlab.course.notebook import read_notebook

from .course_downloads import NAMES, ROOT, canvas_name, canvas_zip, class_of, pool

pytest.importorskip("nbval", reason="gradlab grade needs nbval (pip install 'gradlab[dev]')")
pytest.importorskip("xdist", reason="gradlab grade -n needs pytest-xdist (pip install 'gradlab[dev]')")
pytestmark = pytest.mark.slow

EXS = ["01_unbroadcast", "02_matmul_vjp"]


def _run(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([str(a) for a in argv])
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    d = tmp_path_factory.mktemp("batch")
    work = class_of(3, EXS)
    stub = (ROOT / "exercises" / "01_unbroadcast.ipynb").read_bytes()
    extra = [(canvas_name(0, "homework01-resubmitted.ipynb"), stub, (2026, 3, 5, 0, 0, 0)),   # newer: graded
             (canvas_name(2, "broken.ipynb"), b"\x00\x01 not json", (2026, 3, 1, 0, 0, 0))]
    zpath = canvas_zip(d / "submissions.zip", work, extra)
    work[(0, "01_unbroadcast")] = ROOT / "exercises" / "01_unbroadcast.ipynb"
    common = ["--course", ROOT, "-n", "2", "--timeout", "120"]
    rc, out, err = _run("grade", zpath, *common, "--json", d / "all.json", "--csv", d / "all.csv",
                        "--feedback", d / "feedback")
    assert rc == 1, out + err           # some parts fail, two files have problems: exit 1, not a crash
    for i in (1, 2):
        rc2, out2, err2 = _run("grade", zpath, *common, "--shard", f"{i}/2", "--json", d / f"shard{i}.json")
        assert rc2 in (0, 1), out2 + err2
    return d, work, out


def _possible_and_lost(ex):
    parts = dict(parts_of(read_notebook(ROOT / "solutions" / f"{ex}.ipynb")))
    return parts, {str(p): lost for p, lost in pool(ex)}


def test_the_csv_imports_with_each_students_points(batch):
    d, work, _ = batch
    rows = list(csv.DictReader((d / "all.csv").open(encoding="utf-8", newline="")))
    assert list(rows[0]) == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *EXS, "Total"]
    assert [r["ID"] for r in rows] == ["1000", "1001", "1002"]
    for r in rows:
        k = int(r["ID"]) - 1000
        assert r["Student"] == NAMES[k]
        total = 0.0
        for ex in EXS:
            parts, lost = _possible_and_lost(ex)
            nb_lost = lost[str(work[(k, ex)])]
            want = 0.0 if nb_lost is None else sum(p for gid, p in parts.items() if gid not in nb_lost)
            assert float(r[ex]) == want, (k, ex, r)
            total += want
        assert float(r["Total"]) == total


def test_json_by_student_feedback_and_problems(batch):
    d, work, out = batch
    report = json.loads((d / "all.json").read_text())
    assert sorted(report["students"]) == ["1000", "1001", "1002"]
    assert report["students"]["1000"]["exercises"]["01_unbroadcast"]["source"].endswith("resubmitted.ipynb")
    problems = {p["problem"].split(":")[0] for p in report["problems"]}
    assert problems == {"duplicate", "not graded"}, report["problems"]
    fb = (d / "feedback" / "1001.md").read_text()      # student 1 handed in the untouched 01 exercise
    assert "## 01_unbroadcast" in fb and "| leading_axes | 0 / 2 | failed: NotImplementedError" in fb
    assert "Files not graded" in (d / "feedback" / "1002.md").read_text()
    assert "TOTAL 3 students, 6 submissions graded, 2 files with problems" in out


def test_two_shards_merged_are_the_one_run_byte_for_byte(batch):
    d, _, _ = batch
    rc, out, err = _run("grade", "merge", d / "shard2.json", d / "shard1.json", "--json", d / "merged.json",
                        "--csv", d / "merged.csv")
    assert rc == 1, out + err
    assert (d / "merged.json").read_bytes() == (d / "all.json").read_bytes()
    assert (d / "merged.csv").read_bytes() == (d / "all.csv").read_bytes()
    shards = [json.loads((d / f"shard{i}.json").read_text()) for i in (1, 2)]
    assert all(s["students"] for s in shards), "a shard of 6 submissions graded nothing"
