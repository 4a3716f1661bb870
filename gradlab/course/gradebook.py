"""The gradebook of a batch: one JSON report keyed by student, a CSV an LMS imports, feedback files.

``batch_report(batch, grader_json, course)`` joins what ``collect`` found (who handed in what) with
the grader's own JSON report (``report.to_json``: read as data, so this module does not depend on
how the grader works inside). The result is plain data::

    {"format": "gradlab-batch-1", "shard": "all" | "I/N",
     "exercises": {"03_softmax": {"possible": 9}, ...},
     "students": {"12345": {"name": "doejane",
                            "exercises": {"03_softmax": {"earned": 7, "possible": 9, "source": ...,
                                                         "error": null, "parts": [...], "notes": [...],
                                                         "tamper": [...]}},
                            "total": {"earned": 7, "possible": 9}}},
     "problems": [{"source", "student", "name", "exercise", "problem"}, ...]}

It holds no timings, no temporary paths and is written with sorted keys, so the same submissions
give the same bytes on any machine, in one run or merged from shards (``merge``).

``to_csv`` writes one row per student: ``Student, ID, SIS User ID, SIS Login ID, Section``, one
column per exercise (its points; empty when not handed in or not graded) and ``Total``: the columns
of Canvas's own gradebook export, so Canvas's Gradebook import matches rows by ``ID`` and adds each
exercise as an assignment; Moodle's CSV grade import maps a column to an identifier and each exercise
column to a grade item. ``feedback`` writes ``STUDENT.md`` per student: each exercise, each part with
its points, and for a failed part the grader's message (the failing case and the instructor's hint).

Holds ``batch_report``, ``merge``, ``ReportError``, ``dumps`` / ``load`` (the report's bytes),
``to_csv``, ``feedback`` / ``feedback_files(report, folder)`` and ``summary(report)`` (what
``gradlab grade`` prints).
"""
from __future__ import annotations

import csv
import io
import json
import os
import re

from .report import pts

FORMAT = "gradlab-batch-1"
CSV_ID_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
_TMP = re.compile(r"(?:/[^\s'\"]*)?/gradlab-(?:batch|grade|kernels?)-[A-Za-z0-9_]+(?:/[^\s'\"]*)?")


class ReportError(ValueError):
    """A batch report that cannot be merged or read (wrong format, overlapping or missing shards)."""


def _clean(text, course_root):
    """A message without this run's temporary folders or the course's absolute path (deterministic)."""
    if not isinstance(text, str):
        return text
    text = text.replace(course_root + os.sep, "")
    return _TMP.sub("<submission>", text)


def batch_report(batch, grader_json: str, course, shard="all") -> dict:
    """The batch's report, keyed by student (see the module docstring)."""
    graded = json.loads(grader_json)["notebooks"]
    if len(graded) != len(batch.submissions):
        raise ReportError(f"the grader reported {len(graded)} notebooks for {len(batch.submissions)} submissions")
    root = os.path.abspath(course.root)
    students, exercises = {}, {}
    for sub, r in zip(batch.submissions, graded):
        st = students.setdefault(sub.student, {"name": sub.name, "exercises": {}})
        parts = [{k: _clean(p[k], root) for k in ("grade_id", "points", "earned", "status", "message")}
                 for p in r["parts"]]
        entry = {"earned": r["earned"], "possible": r["possible"], "source": sub.source,
                 "error": _clean(r["error"], root), "parts": parts,
                 "notes": [_clean(n, root) for n in r["notes"]], "tamper": [_clean(t, root) for t in r["tamper"]]}
        st["exercises"][sub.exercise] = entry
        if not r["error"]:
            exercises.setdefault(sub.exercise, {"possible": r["possible"]})
    for p in batch.problems:   # a student whose only file could not be graded still gets a row
        if p["student"]:
            students.setdefault(p["student"], {"name": p["name"], "exercises": {}})
    for st in students.values():
        _total(st)
    return {"format": FORMAT, "shard": shard, "exercises": exercises, "students": students,
            "problems": list(batch.problems)}


def _total(st):
    ok = [e for e in st["exercises"].values() if not e["error"]]
    st["total"] = {"earned": sum(e["earned"] for e in ok), "possible": sum(e["possible"] for e in ok)}


def dumps(report) -> str:
    return json.dumps(report, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def load(path) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise ReportError(f"{path}: not a readable batch report ({e})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ReportError(f"{path}: not a gradlab batch report (write one with gradlab grade --json on a "
                          "folder or zip, with --shard I/N for a shard)")
    return doc


def merge(reports) -> dict:
    """Join shard reports (all N shards of one batch, each once) into the report of the whole batch."""
    if not reports:
        raise ReportError("grade merge: no reports given")
    shards = [r.get("shard") for r in reports]
    ns = {s.split("/")[1] if isinstance(s, str) and "/" in s else None for s in shards}
    if None in ns or len(ns) != 1:
        raise ReportError(f"grade merge: the reports are not shards of one batch (shards {shards})")
    n = int(ns.pop())
    want = {f"{i}/{n}" for i in range(1, n + 1)}
    if sorted(shards) != sorted(want):
        missing = sorted(want - set(shards))
        raise ReportError(f"grade merge: expected each of shards {', '.join(sorted(want))} once, got "
                          f"{', '.join(shards)}" + (f"; missing {', '.join(missing)}" if missing else ""))
    out = {"format": FORMAT, "shard": "all", "exercises": {}, "students": {}, "problems": []}
    for r in reports:
        for ex, info in r["exercises"].items():
            if out["exercises"].setdefault(ex, info) != info:
                raise ReportError(f"grade merge: exercise {ex} has different points in different shards "
                                  "(graded against different solutions?)")
        for sid, st in r["students"].items():
            into = out["students"].setdefault(sid, {"name": st["name"], "exercises": {}})
            for ex, e in st["exercises"].items():
                if ex in into["exercises"]:
                    raise ReportError(f"grade merge: {sid}'s {ex} is in two shards")
                into["exercises"][ex] = e
        out["problems"].extend(r["problems"])
    for st in out["students"].values():
        _total(st)
    out["problems"].sort(key=lambda p: (p["source"], p["problem"]))
    return out


def to_csv(report) -> str:
    """One row per student, one column per exercise and a total (layout in the module docstring)."""
    exercises = sorted(report["exercises"])
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*CSV_ID_COLUMNS, *exercises, "Total"])
    for sid in sorted(report["students"]):
        st = report["students"][sid]
        cells = []
        for ex in exercises:
            e = st["exercises"].get(ex)
            cells.append("" if e is None or e["error"] else pts(e["earned"]))
        w.writerow([st["name"], sid, "", "", "", *cells, pts(st["total"]["earned"])])
    return buf.getvalue()


def feedback(report, sid) -> str:
    """A student's feedback as markdown: each exercise, each part with its points and why it failed."""
    st = report["students"][sid]
    out = [f"# Feedback for {st['name']} ({sid})", "",
           f"Total: {pts(st['total']['earned'])} / {pts(st['total']['possible'])} points", ""]
    for ex in sorted(st["exercises"]):
        e = st["exercises"][ex]
        out.append(f"## {ex}")
        out.append("")
        if e["error"]:
            out += [f"Not graded: {e['error']}", ""]
            continue
        out += [f"{pts(e['earned'])} / {pts(e['possible'])} points (graded: {e['source']})", "",
                "| part | points | result |", "| --- | --- | --- |"]
        for p in e["parts"]:
            result = "ok" if p["status"] == "ok" else "failed: " + (p["message"] or p["status"])
            result = result.replace("|", "\\|").replace("\n", " ")
            out.append(f"| {p['grade_id']} | {pts(p['earned'])} / {pts(p['points'])} | {result} |")
        out.append("")
        out += [f"* note: {n}" for n in e["notes"]] + [f"* tamper evidence: {t}" for t in e["tamper"]]
        if e["notes"] or e["tamper"]:
            out.append("")
    mine = [p for p in report["problems"] if p["student"] == sid]
    if mine:
        out += ["## Files not graded", ""] + [f"* {p['source']}: {p['problem']}" for p in mine] + [""]
    return "\n".join(out)


def feedback_files(report, folder) -> list:
    """``(folder/STUDENT.md, bytes)`` for every student of the report (``gradlab grade --feedback`` writes them
    through ``written.write_files``, which never overwrites a file an instructor edited)."""
    out = []
    for sid in sorted(report["students"]):
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", sid) or "student"
        out.append((os.path.join(folder, f"{safe}.md"), feedback(report, sid).encode("utf-8")))
    return out


def summary(report) -> str:
    """The text ``gradlab grade`` prints for a batch: a line per student, the problems, a total line."""
    out = []
    for sid in sorted(report["students"]):
        st = report["students"][sid]
        exs = ", ".join(f"{ex} {'NOT GRADED' if e['error'] else pts(e['earned']) + '/' + pts(e['possible'])}"
                        for ex, e in sorted(st["exercises"].items()))
        out.append(f"{st['name']} ({sid}): {pts(st['total']['earned'])} / {pts(st['total']['possible'])}  [{exs}]")
    for p in report["problems"]:
        out.append(f"problem: {p['source']}: {p['problem']}")
    n = sum(len(st["exercises"]) for st in report["students"].values())
    out.append(f"TOTAL {len(report['students'])} students, {n} submissions graded, "
               f"{len(report['problems'])} files with problems (shard {report['shard']})")
    return "\n".join(out)
