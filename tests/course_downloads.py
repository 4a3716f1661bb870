"""Submission downloads as Canvas, Moodle and nbgrader give them, made from the course's own notebooks.

``pool(exercise)``: the notebooks a class might hand in for an exercise (the solution, the untouched
exercise, each wrong and each correct alternative fixture), with the parts each must lose
(``expected_lost``). ``canvas_zip`` writes Canvas's flat ``lastfirst_USERID_ATTACHMENTID_name`` zip,
``moodle_zip`` Moodle's ``Full Name_ID_assignsubmission_file_/`` folders; the original file names
are deliberately unrelated to the exercise, so only the notebook's metadata can tell which it is.
"""
from __future__ import annotations

import json
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "submissions"
NAMES = ["doejane", "smithbob", "leeann", "kumarraj", "garciaana", "nguyenbao", "muller", "okafor", "rossi",
         "tanaka", "silva", "ivanova", "cohen", "dubois", "kowalski", "hansen", "obrien", "park", "haddad", "moreau"]


def pool(exercise):
    """[(notebook path, set of parts it loses or None for all of them)] for ``exercise``."""
    lost = {}
    for f in sorted(FIXTURES.glob("expected_*.json")):
        lost.update(json.loads(f.read_text()))
    out = [(ROOT / "solutions" / f"{exercise}.ipynb", set()), (ROOT / "exercises" / f"{exercise}.ipynb", None)]
    for f in sorted(FIXTURES.glob("*.ipynb")):
        if json.loads(f.read_text())["metadata"].get("gradlab", {}).get("exercise") == exercise:
            out.append((f, set(lost.get(f.name, ()))))
    return out


def canvas_name(k, original):
    return f"{NAMES[k % len(NAMES)]}{k // len(NAMES) or ''}_{1000 + k}_{50000 + k}_{original}"


def class_of(students, exercises):
    """{(student k, exercise): notebook path}: student k hands in the k-th notebook of each pool."""
    return {(k, ex): pool(ex)[(k + i) % len(pool(ex))][0]
            for i, ex in enumerate(exercises) for k in range(students)}


def canvas_zip(path, work, extra=()):
    """Canvas's flat zip of ``work`` ({(k, ex): notebook}) plus ``extra`` [(name, bytes, date)]."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for (k, ex), nb in sorted(work.items()):
            info = zipfile.ZipInfo(canvas_name(k, f"homework{ex[:2]}.ipynb"), date_time=(2026, 3, 1, 12, 0, 0))
            z.writestr(info, Path(nb).read_bytes())
        for name, data, when in extra:
            z.writestr(zipfile.ZipInfo(name, date_time=when), data)
    return path


def moodle_zip(path, work):
    with zipfile.ZipFile(path, "w") as z:
        for (k, ex), nb in sorted(work.items()):
            folder = f"{NAMES[k % len(NAMES)].title()} Student_{300 + k}_assignsubmission_file_"
            z.writestr(f"{folder}/my work {ex[:2]}.ipynb", Path(nb).read_bytes())
    return path
