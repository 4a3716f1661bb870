"""Collecting a batch (no grading here: that is tests/test_course_batch.py): who handed in which exercise.

Canvas, Moodle, nbgrader, per-student folders and flat folders; the exercise from the notebook's
metadata (or its grade_ids), never from its file name; duplicates, unknown files, corrupt notebooks
and notebooks of another course reported without stopping the batch; hostile zips refused; shards
that partition the batch; the gradebook's CSV layout and the merge's checks.
"""
from __future__ import annotations

import csv
import io
import json
import shutil
import zipfile
from pathlib import Path

import pytest

from gradlab.course import collect as C, gradebook
from gradlab.course.course_dir import Course
from gradlab.course.notebook import CourseError

from .course_downloads import NAMES, ROOT, canvas_name, canvas_zip, class_of, moodle_zip

COURSE = Course(str(ROOT))
EXS = ["01_unbroadcast", "02_matmul_vjp", "03_softmax"]


def test_identity_as_each_system_names_it():
    assert C.identify("doejane_1234_998877_homework.ipynb") == ("1234", "doejane", "canvas")
    assert C.identify("doejane_late_1234_998877_my_file_2.ipynb") == ("1234", "doejane", "canvas")
    assert C.identify("Jane Doe_654321_assignsubmission_file_/hw 1.ipynb") == ("654321", "Jane Doe", "moodle")
    assert C.identify("Jane Doe_654321_assignsubmission_file_hw.ipynb") == ("654321", "Jane Doe", "moodle")
    assert C.identify("course/submitted/alice/ps1/03_softmax.ipynb") == ("alice", "alice", "nbgrader")
    assert C.identify("alice/whatever.ipynb") == ("alice", "alice", "folders")
    assert C.identify("alice_03_softmax.ipynb") == ("alice_03_softmax", "alice_03_softmax", "flat")


def test_a_canvas_zip_of_20_students_with_a_duplicate_and_a_corrupt_file(tmp_path):
    work = class_of(20, EXS)
    resubmitted = (ROOT / "solutions" / "03_softmax.ipynb").read_bytes()
    extra = [(canvas_name(4, "homework03-1.ipynb"), resubmitted, (2026, 3, 2, 9, 0, 0)),   # newer: graded
             (canvas_name(7, "homework02.ipynb").replace("_50007_", "_60007_"), b'{"cells": [', (2026, 3, 1, 0, 0, 0)),
             (canvas_name(9, "notes.pdf"), b"%PDF-1.4", (2026, 3, 1, 0, 0, 0))]
    # student 7's only 02 is the corrupt one; student 4 handed in 03 twice
    del work[(7, "02_matmul_vjp")]
    batch = C.collect([canvas_zip(tmp_path / "canvas.zip", work, extra)], COURSE)
    try:
        assert len(batch.submissions) == 59
        by = {(s.student, s.exercise): s for s in batch.submissions}
        for (k, ex), nb in work.items():
            s = by[(str(1000 + k), ex)]
            assert s.name.startswith(NAMES[k % 20]) and s.layout == "canvas"
            want = resubmitted if (k, ex) == (4, "03_softmax") else Path(nb).read_bytes()
            assert Path(s.path).read_bytes() == want and Path(s.path).name == f"{ex}.ipynb"
        probs = {p["problem"].split(":")[0]: p for p in batch.problems}
        assert set(probs) == {"duplicate", "not graded", "unknown file"}, batch.problems
        assert probs["duplicate"]["student"] == "1004" and "homework03-1" in probs["duplicate"]["problem"]
        assert probs["not graded"]["student"] == "1007" and "malformed JSON" in probs["not graded"]["problem"]
        assert probs["unknown file"]["source"].endswith("notes.pdf")
    finally:
        batch.cleanup()
    assert not Path(batch.workdir).exists()


def test_moodle_nbgrader_folders_and_flat(tmp_path):
    work = class_of(3, EXS[:2])
    batch = C.collect([moodle_zip(tmp_path / "moodle.zip", work)], COURSE)
    assert sorted((s.student, s.exercise, s.layout) for s in batch.submissions) == \
        sorted((str(300 + k), ex, "moodle") for k, ex in work)
    batch.cleanup()
    tree = tmp_path / "course" / "submitted"
    for (k, ex), nb in work.items():
        d = tree / NAMES[k] / "ps1"
        d.mkdir(parents=True, exist_ok=True)
        shutil.copy(nb, d / f"{ex}.ipynb")
    flat = tmp_path / "flat"
    flat.mkdir()
    for (k, ex), nb in work.items():
        shutil.copy(nb, flat / f"{NAMES[k]}_{ex}.ipynb")
    for inp, layout in ((tmp_path / "course", "nbgrader"), (tree / NAMES[0], "folders"), (flat, "flat")):
        batch = C.collect([inp], COURSE)
        got = sorted((s.student, s.exercise) for s in batch.submissions)
        batch.cleanup()
        if layout == "folders":   # one student's folder of two exercises: ps1 is the student's folder
            assert got == [("ps1", "01_unbroadcast"), ("ps1", "02_matmul_vjp")]
        else:
            assert got == sorted((NAMES[k], ex) for k, ex in work), (layout, got)
            assert {s.layout for s in batch.submissions} == {layout}


def test_exercise_from_metadata_or_grade_ids_never_the_file_name(tmp_path):
    nb = json.loads((ROOT / "solutions" / "03_softmax.ipynb").read_text())
    (tmp_path / "alice_01_unbroadcast.ipynb").write_text(json.dumps(nb))   # misleading name
    del nb["metadata"]["gradlab"]
    (tmp_path / "bob.ipynb").write_text(json.dumps(nb))                     # no metadata: its grade_ids
    nb["metadata"]["gradlab"] = {"exercise": "07_quantum_gravity"}
    (tmp_path / "carol.ipynb").write_text(json.dumps(nb))                   # another course
    batch = C.collect([tmp_path], COURSE)
    batch.cleanup()
    assert sorted((s.student, s.exercise) for s in batch.submissions) == [
        ("alice_01_unbroadcast", "03_softmax"), ("bob", "03_softmax")]
    (p,) = batch.problems
    assert p["student"] == "carol" and "another course" in p["problem"]


def test_hostile_zips_are_refused_and_bounded(tmp_path, monkeypatch):
    good = (ROOT / "solutions" / "01_unbroadcast.ipynb").read_bytes()
    path = tmp_path / "evil.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("../../escape.ipynb", good)
        z.writestr("/etc/abs.ipynb", good)
        z.writestr("C:/win.ipynb", good)
        link = zipfile.ZipInfo("link.ipynb")
        link.external_attr = (0o120777 << 16)
        z.writestr(link, "/etc/passwd")
        z.writestr("bomb_1_2_big.ipynb", b"0" * (3 * 2**20))   # 3 MiB of zeros: a few KiB compressed
        z.writestr("doejane_1_2_ok.ipynb", good)
    monkeypatch.setattr(C, "MAX_FILE_BYTES", 2**20)
    batch = C.collect([path], COURSE)
    batch.cleanup()
    assert [(s.student, s.exercise) for s in batch.submissions] == [("1", "01_unbroadcast")]
    why = {p["source"].split(":", 1)[1]: p["problem"] for p in batch.problems}
    assert all(why[n].startswith("refused: an unsafe path") for n in ("../../escape.ipynb", "/etc/abs.ipynb",
                                                                       "C:/win.ipynb"))
    assert why["link.ipynb"].startswith("refused: a symbolic link")
    assert why["bomb_1_2_big.ipynb"].startswith("refused: larger than 1 MiB")
    assert not (tmp_path.parent / "escape.ipynb").exists() and not Path("/etc/abs.ipynb").exists()
    monkeypatch.setattr(C, "MAX_ZIP_BYTES", len(good) // 2)
    with pytest.raises(CourseError, match="zip bomb"):
        C.collect([path], COURSE)
    (tmp_path / "notzip.zip").write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(CourseError, match="not a readable zip|no such"):
        C.extract_zip(tmp_path / "notzip.zip", tmp_path, [])


def test_shards_partition_the_batch_deterministically(tmp_path):
    batch = C.collect([canvas_zip(tmp_path / "c.zip", class_of(20, EXS))], COURSE)
    try:
        keys = [(s.student, s.exercise) for s in batch.submissions]
        parts = [[(s.student, s.exercise) for s in C.take_shard(batch, i, 3).submissions] for i in (1, 2, 3)]
        assert sorted(sum(parts, [])) == sorted(keys) and all(parts)
        assert parts == [[(s.student, s.exercise) for s in C.take_shard(batch, i, 3).submissions] for i in (1, 2, 3)]
    finally:
        batch.cleanup()


def _report(shard, students):
    return {"format": gradebook.FORMAT, "shard": shard, "exercises": {"01_unbroadcast": {"possible": 8}},
            "students": {sid: {"name": sid.upper(), "exercises": {"01_unbroadcast": {
                "earned": pts, "possible": 8, "error": None, "parts": [], "notes": [], "tamper": [],
                "source": f"{sid}.ipynb"}}} for sid, pts in students.items()}, "problems": []}


def test_gradebook_csv_layout_and_merge_checks():
    merged = gradebook.merge([_report("2/2", {"b": 3}), _report("1/2", {"a": 8})])
    rows = list(csv.reader(io.StringIO(gradebook.to_csv(merged))))
    assert rows == [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "01_unbroadcast", "Total"],
                    ["A", "a", "", "", "", "8", "8"], ["B", "b", "", "", "", "3", "3"]]
    with pytest.raises(gradebook.ReportError, match="missing 2/2"):
        gradebook.merge([_report("1/2", {"a": 8})])
    with pytest.raises(gradebook.ReportError, match="in two shards"):
        gradebook.merge([_report("1/2", {"a": 8}), _report("2/2", {"a": 8})])
    with pytest.raises(gradebook.ReportError, match="not shards"):
        gradebook.merge([_report("all", {"a": 8})])


def test_a_batch_with_nothing_to_grade_is_a_clear_error(tmp_path, capsys):
    from gradlab.cli import main
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["grade", str(empty), "--course", str(ROOT)]) == 2
    assert "empty batch: no notebooks in" in capsys.readouterr().err
    (empty / "essay.pdf").write_bytes(b"%PDF")
    assert main(["grade", str(empty), "--course", str(ROOT)]) == 2
    assert "none of the 1 files" in capsys.readouterr().err
    assert main(["grade", str(empty), "--junit", str(tmp_path / "x.xml")]) == 2
    assert "--junit is for single notebooks" in capsys.readouterr().err
    assert main(["grade", "merge", str(empty / "essay.pdf")]) == 2
    assert "not a readable batch report" in capsys.readouterr().err
