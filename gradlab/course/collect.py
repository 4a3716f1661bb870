"""Collecting submissions as instructors download them: who handed in which exercise.

``collect(inputs, course)`` takes notebooks, folders and zip files and returns a ``Batch``: one
``Submission`` (student, exercise, the file to grade, where it came from) per student and exercise,
and a list of ``problems`` (duplicates, unknown files, unreadable notebooks, notebooks of another
course), each reported, none stopping the batch.

Who handed it in comes from the file or folder name, as each system names it (``identify``):

* **Canvas** ("Download Submissions"): one flat zip of files named
  ``lastfirst_USERID_ATTACHMENTID_original.ipynb``, with ``_late`` after the name when late
  (``doejane_late_12345_678_softmax.ipynb``). The student is the Canvas user ID (the gradebook's
  ``ID`` column), named ``doejane``.
* **Moodle** ("Download all submissions"): files or folders named
  ``Full Name_PARTICIPANTID_assignsubmission_file_`` (+ the original name for a file). The student
  is the participant number, named ``Full Name``.
* **nbgrader**'s exchange: ``submitted/STUDENT/ASSIGNMENT/NAME.ipynb``.
* **one folder per student**: ``STUDENT/NAME.ipynb`` (the folder holding the notebook).
* **flat folder**: ``STUDENT.ipynb`` or ``STUDENT_EXERCISE.ipynb`` (the file name, less the exercise).

Which exercise it is comes from the notebook itself, never its file name: its
``metadata.gradlab.exercise`` (set by ``gradlab course build``), else the exercise whose graded
grade_ids it shares. Two notebooks of one student for one exercise: the newer (by the file's time,
then its name) is graded, the other reported as a duplicate.

Zip files are read defensively (``extract_zip``): member names with absolute paths, ``..``, drive
letters or links are refused, every member is read with a size cap (the sizes a zip declares are not
trusted), and the whole archive has a cap on members and on bytes, so a hostile zip can neither
write outside the batch's folder nor fill the disk.

Holds ``collect``, ``Batch``, ``Submission``, ``identify``, ``extract_zip``, ``exercise_of(nb, ...)``
(the exercise a notebook belongs to) and the shards: ``shard_of(key, n)`` (a stable hash) and
``take_shard(batch, i, n)``.
"""
from __future__ import annotations

import calendar
import hashlib
import os
import re
import shutil
import stat
import tempfile
import zipfile
from dataclasses import dataclass, field

from .assemble import answer_ids
from .course_dir import Course
from .notebook import CourseError, read_notebook

MAX_MEMBERS = 20_000               # entries in one zip
MAX_FILE_BYTES = 64 * 2**20        # one notebook (a submission larger than this is not a notebook a student wrote)
MAX_ZIP_BYTES = 2 * 2**30          # all the notebooks of one zip, uncompressed

_CANVAS = re.compile(r"^(?P<name>[a-z0-9]+?)(?:_late)?_(?P<id>\d+)_(?P<att>\d+)_(?P<file>.+)$", re.I)
_MOODLE = re.compile(r"^(?P<name>.+?)_(?P<id>\d+)_assignsubmission_[a-z]+_(?P<file>.*)$", re.I)


@dataclass
class Submission:
    student: str          # the identity the LMS matches on (Canvas user ID, Moodle participant, a name)
    name: str             # as the download names the student
    exercise: str
    path: str             # the file to grade (extracted or copied into the batch's folder)
    source: str           # where it came from, as the instructor downloaded it
    layout: str           # canvas | moodle | nbgrader | folders | flat
    time: tuple = ()      # the file's time (zip entry date or mtime): the newer of two duplicates wins


@dataclass
class Batch:
    submissions: list = field(default_factory=list)
    problems: list = field(default_factory=list)   # {"source", "student", "name", "exercise", "problem"}
    workdir: str = ""

    def cleanup(self):
        if self.workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)


def identify(relpath: str):
    """(student, name, layout) from a submission's path inside its download (``/``-separated)."""
    parts = [p for p in relpath.split("/") if p]
    base = parts[-1]
    m = _CANVAS.match(base)
    if m:
        return m["id"], m["name"], "canvas"
    for p in reversed(parts):
        m = _MOODLE.match(p)
        if m:
            return m["id"], m["name"], "moodle"
    if "submitted" in parts[:-3]:
        i = len(parts) - 1 - parts[::-1].index("submitted")
        if len(parts) - i == 4:
            return parts[i + 1], parts[i + 1], "nbgrader"
    if len(parts) > 1:
        return parts[-2], parts[-2], "folders"
    stem = os.path.splitext(base)[0]
    return stem, stem, "flat"


def _safe_member(name: str):
    """The member's path if it is a plain relative path, else None (absolute, '..', a drive, a NUL)."""
    name = name.replace("\\", "/")
    if not name or name.startswith("/") or "\0" in name or re.match(r"^[A-Za-z]:", name):
        return None
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if not parts or any(p == ".." for p in parts):
        return None
    return "/".join(parts)


def extract_zip(path, dest, problems):
    """Extract the notebooks of zip ``path`` into ``dest`` under names chosen here.

    Returns [(name inside the zip, extracted path, entry time)]; everything refused or skipped is
    added to ``problems``. Raises CourseError when ``path`` is not a readable zip at all.
    """
    label = os.path.basename(os.fspath(path))
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as e:
        raise CourseError(f"{path}: not a readable zip file ({e}); download it again") from None
    out, total = [], 0
    with zf:
        infos = zf.infolist()
        if len(infos) > MAX_MEMBERS:
            raise CourseError(f"{path}: {len(infos)} entries, more than the {MAX_MEMBERS} a batch may have; "
                              "split the download")
        for k, info in enumerate(infos):
            if info.is_dir():
                continue
            src = f"{label}:{info.filename}"
            name = _safe_member(info.filename)
            mode = info.external_attr >> 16
            if name is None:
                problems.append(_problem(src, "refused: an unsafe path in the zip (absolute or with '..')"))
                continue
            if stat.S_ISLNK(mode):
                problems.append(_problem(src, "refused: a symbolic link in the zip"))
                continue
            if not name.lower().endswith(".ipynb"):
                problems.append(_problem(src, "unknown file: not a notebook (.ipynb); not graded"))
                continue
            if info.flag_bits & 0x1:
                problems.append(_problem(src, "refused: an encrypted zip entry"))
                continue
            target = os.path.join(dest, f"z{k:05d}.ipynb")
            size = _copy_capped(zf, info, target)
            if size is None:
                problems.append(_problem(src, f"refused: larger than {MAX_FILE_BYTES // 2**20} MiB uncompressed"))
                continue
            total += size
            if total > MAX_ZIP_BYTES:
                raise CourseError(f"{path}: more than {MAX_ZIP_BYTES // 2**30} GiB of notebooks uncompressed; "
                                  "refusing the rest (a zip bomb?)")
            out.append((name, target, (calendar.timegm(tuple(info.date_time) + (0, 0, 0)),)))
    return out


def _copy_capped(zf, info, target):
    """Copy one member, stopping at MAX_FILE_BYTES whatever its header claims; bytes written or None."""
    n = 0
    try:
        with zf.open(info) as src, open(target, "wb") as dst:
            while True:
                chunk = src.read(1 << 20)
                if not chunk:
                    return n
                n += len(chunk)
                if n > MAX_FILE_BYTES:
                    break
                dst.write(chunk)
    except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError):
        # a damaged entry: leave an empty file; reading it says "not a notebook"
        open(target, "wb").close()
        return n
    os.remove(target)
    return None


def _problem(source, problem, student="", name="", exercise=""):
    return {"source": source, "student": student, "name": name, "exercise": exercise, "problem": problem}


def _exercise_index(course: Course):
    """{grade_id: exercise} for the course's graded ids, and the set of exercise names."""
    names = course.exercise_names()
    folder = course.solutions if course.is_instructors else course.exercises
    ids = {}
    for ex in names:
        try:
            nb = read_notebook(os.path.join(folder, ex + ".ipynb"))
        except CourseError:
            continue
        for gid in answer_ids(nb):
            ids.setdefault(gid, set()).add(ex)
    return ids, set(names)


def exercise_of(nb, course_ids, names):
    """The exercise a notebook belongs to (from its metadata or its grade_ids), or a CourseError why none."""
    meta = nb.metadata.get("gradlab") if isinstance(nb.metadata.get("gradlab"), dict) else {}
    ex = meta.get("exercise")
    if isinstance(ex, str):
        if ex in names:
            return ex
        raise CourseError(f"a notebook of exercise '{ex}', which this course does not have "
                          "(a notebook of another course?)")
    votes = {}
    for gid in answer_ids(nb):
        for e in course_ids.get(gid, ()):
            votes[e] = votes.get(e, 0) + 1
    if not votes:
        raise CourseError("unknown notebook: no exercise in its metadata and none of this course's graded cells")
    best = max(votes.values())
    top = sorted(e for e, v in votes.items() if v == best)
    if len(top) > 1:
        raise CourseError(f"ambiguous notebook: its graded cells fit {', '.join(top)} equally")
    return top[0]


def _files(inputs, workdir, problems):
    """(relative name for identity, local path, source label, time) for every file of every input."""
    for inp in inputs:
        inp = os.fspath(inp)
        if not os.path.exists(inp):
            raise CourseError(f"{inp}: no such file or folder")
        if os.path.isdir(inp):
            for d, dirs, files in os.walk(inp):
                dirs.sort()
                for f in sorted(files):
                    p = os.path.join(d, f)
                    rel = os.path.relpath(p, inp).replace(os.sep, "/")
                    src = f"{os.path.basename(os.path.abspath(inp))}/{rel}"
                    if os.path.islink(p) or not f.lower().endswith(".ipynb"):
                        problems.append(_problem(src, "unknown file: not a notebook (.ipynb); not graded"))
                        continue
                    yield rel, p, src, (int(os.stat(p).st_mtime),)
        elif zipfile.is_zipfile(inp) and not inp.lower().endswith(".ipynb"):
            sub = tempfile.mkdtemp(prefix="zip-", dir=workdir)
            label = os.path.basename(inp)
            for name, path, t in extract_zip(inp, sub, problems):
                yield name, path, f"{label}:{name}", t
        else:
            yield os.path.basename(inp), inp, os.path.basename(inp), ()


def collect(inputs, course: Course) -> Batch:
    """Every submission in ``inputs`` (notebooks, folders, zips), matched to a student and an exercise."""
    batch = Batch(workdir=tempfile.mkdtemp(prefix="gradlab-batch-"))
    try:
        return _collect(inputs, course, batch)
    except BaseException:
        batch.cleanup()
        raise


def _collect(inputs, course, batch):
    course_ids, names = _exercise_index(course)
    entries = []
    for rel, path, src, t in _files(inputs, batch.workdir, batch.problems):
        student, name, layout = identify(rel)
        try:
            nb = read_notebook(path)
            ex = exercise_of(nb, course_ids, names)
        except CourseError as e:
            why = str(e)
            why = why.split(": ", 1)[1] if why.startswith(path) else why
            batch.problems.append(_problem(src, f"not graded: {why}", student, name))
            continue
        entries.append([rel, path, src, t, student, name, layout, ex])
    # a folder holding two notebooks of one exercise is no student's folder (a wrapper folder of a
    # flat download): its notebooks are named by file
    per_folder = {}
    for e in entries:
        if e[6] == "folders":
            per_folder.setdefault((e[0].rsplit("/", 1)[0], e[7]), []).append(e)
    for group in per_folder.values():
        if len(group) > 1:
            for e in group:
                stem = os.path.splitext(e[0].rsplit("/", 1)[1])[0]
                e[4], e[5], e[6] = stem, stem, "flat"
    found = {}
    for rel, path, src, t, student, name, layout, ex in entries:
        if layout == "flat":   # STUDENT_EXERCISE.ipynb: the student is the rest of the name
            student = name = re.sub(rf"[_\- ]*{re.escape(ex)}[_\- ]*", "", name) or name
        found.setdefault((student, ex), []).append(Submission(student, name, ex, path, src, layout, t))
    for (student, ex), subs in sorted(found.items()):
        subs.sort(key=lambda s: (s.time, s.source))
        keep = subs[-1]
        for s in subs[:-1]:
            batch.problems.append(_problem(s.source, f"duplicate: {student} handed in {ex} more than once; "
                                           f"graded the newer {keep.source}", student, s.name, ex))
        k = len(batch.submissions)
        stage = os.path.join(batch.workdir, f"s{k:05d}")
        os.makedirs(stage)
        staged = os.path.join(stage, ex + ".ipynb")     # named as its exercise: nothing of the upload's name
        shutil.copyfile(keep.path, staged)
        keep.path = staged
        batch.submissions.append(keep)
    batch.problems.sort(key=lambda p: (p["source"], p["problem"]))
    return batch


def shard_of(key: str, n: int) -> int:
    """The shard (1..n) a submission belongs to: a hash of its key, the same on every machine and run."""
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest(), 16) % n + 1


def take_shard(batch: Batch, i: int, n: int) -> Batch:
    """The part of ``batch`` that shard ``i`` of ``n`` grades (and the problems it reports)."""
    subs = [s for s in batch.submissions if shard_of(f"{s.student}/{s.exercise}", n) == i]
    probs = [p for p in batch.problems if shard_of(p["source"], n) == i]
    return Batch(subs, probs, batch.workdir)
