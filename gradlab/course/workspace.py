"""The student's workspace: their own copies of the course, apart from what ships.

Holds :func:`sync` (what ``gradlab lab`` runs at every start), :func:`fresh`
(``gradlab fresh NOTEBOOK``), :func:`resolve` (which copy a name means) and the
folder names.

``workspace/`` (git-ignored) mirrors the shipped folders, so relative links
such as ``../exercises/01_unbroadcast.ipynb`` work in both places::

    notebooks/05_graphs.ipynb          shipped (tracked, never opened by the lab)
    workspace/notebooks/05_graphs.ipynb  the student's copy (opened, run, saved)

Opening, running and saving in JupyterLab touch only the copies, so ``git
status`` stays clean and ``git pull`` of a course update never conflicts with a
student's work. At every start :func:`sync` merges the course into the
workspace, as nbgitpuller merges a course repository into a user's folder:

* a shipped notebook with no copy yet (new in the course, or deleted by the
  student) is copied in;
* a copy that still holds exactly what gradlab wrote (the manifest of hashes,
  ``gradlab/course/written.py``) follows the course: an update replaces it;
* a copy the student changed (opened and saved counts) is never touched; if
  the course has a newer version, ``gradlab fresh NAME`` gets it and keeps the
  student's copy as ``NAME.backup-DATE.ipynb``.

``gradlab lab`` signs every copy that holds what gradlab wrote in the notary
(``jupyter trust``), so the stored graphs render on first open;
``gradlab.lab.pre_save_hook`` keeps the signature across JupyterLab's saves.

Holds ``workspace_dir(root)``, ``sync`` (and its ``SyncReport``), ``fresh`` and ``resolve``.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from .notebook import CourseError
from .written import Manifest, backup_path, digest

WORKSPACE = "workspace"
FOLDERS = ("notebooks", "exercises")
README = "README.md"
README_TEXT = """\
# Your workspace

These are your own copies of the course: `notebooks/` (the lessons) and `exercises/` (the exercises
to fill in). Run, edit and save them freely: the shipped files (`../notebooks`, `../exercises`) are
never opened, so `git pull` brings course updates without conflicts.

* `gradlab lab` (or `make lab`) adds new course material here at every start and never changes a
  copy you have edited.
* `gradlab fresh notebooks/05_graphs.ipynb` gives you a fresh copy of one notebook and keeps yours
  as `05_graphs.backup-DATE.ipynb` next to it.
* `gradlab grade workspace/exercises/01_unbroadcast.ipynb`, from the course folder (the one above
  this), checks an exercise.

This folder is ignored by git: back it up (or commit it to a repository of your own) if it matters.
"""


@dataclasses.dataclass
class SyncReport:
    """What :func:`sync` did, as paths relative to the workspace."""
    added: list = dataclasses.field(default_factory=list)      # new copies
    updated: list = dataclasses.field(default_factory=list)    # untouched copies that followed the course
    kept: list = dataclasses.field(default_factory=list)       # the student's edited copies, left alone
    newer: list = dataclasses.field(default_factory=list)      # ... of which the course ships a newer version
    as_written: list = dataclasses.field(default_factory=list)  # copies (paths) holding what gradlab wrote

    def lines(self) -> list[str]:
        out = []
        if self.added:
            out.append(f"{len(self.added)} new file{'s' if len(self.added) != 1 else ''} of the course copied in")
        if self.updated:
            out.append(f"{len(self.updated)} untouched cop{'ies' if len(self.updated) != 1 else 'y'} updated to "
                       "the course's new version")
        if self.kept:
            out.append(f"{len(self.kept)} of your edited cop{'ies' if len(self.kept) != 1 else 'y'} kept as "
                       "you left them")
        for rel in self.newer:
            out.append(f"the course has a newer {rel}; yours is kept (gradlab fresh {rel} gets the new one and "
                       "keeps yours as a backup)")
        return out


def workspace_dir(root) -> Path:
    return Path(root) / WORKSPACE


def shipped(root) -> dict[str, Path]:
    """The course as shipped: ``{"notebooks/00_welcome.ipynb": path}`` for every notebook in FOLDERS."""
    root = Path(root)
    return {f"{d}/{p.name}": p for d in FOLDERS for p in sorted((root / d).glob("*.ipynb"))}


def sync(root) -> SyncReport:
    """Merge the shipped course into ``root/workspace`` (rules in the module docstring); returns a report.

    ``report.as_written`` lists the notebooks that now hold exactly what gradlab
    wrote: the lab signs those (they are the course's own), never the student's.
    """
    ws = workspace_dir(root)
    man = Manifest(ws)
    rep = SyncReport()
    items = [(rel, src.read_bytes()) for rel, src in shipped(root).items()]
    items.append((README, README_TEXT.encode("utf-8")))
    for rel, data in items:
        dest = ws / rel
        if not dest.exists():
            man.write(dest, data)
            rep.added.append(rel)
        elif dest.read_bytes() == data:
            man.write(dest, data)           # the same bytes: recorded, so that a course update may follow
        elif man.untouched(dest):
            man.write(dest, data)
            rep.updated.append(rel)
        else:
            rep.kept.append(rel)
            if man.recorded(dest) is not None and man.recorded(dest) != digest(data):
                rep.newer.append(rel)
            continue
        if rel.endswith(".ipynb"):
            rep.as_written.append(dest)
    man.save()
    return rep


def resolve(root, name) -> str:
    """The shipped notebook ``name`` means, as ``"notebooks/05_graphs.ipynb"``.

    Accepts that form, the workspace path (``workspace/notebooks/05_graphs.ipynb``,
    absolute or relative to ``root``), a bare file name or stem (``05_graphs``)
    when only one folder has it.
    """
    course = shipped(root)
    text = str(name).replace("\\", "/")
    p = Path(text)
    if p.is_absolute():
        try:
            text = p.resolve().relative_to(Path(root).resolve()).as_posix()
        except ValueError:
            text = p.name
    text = text.removeprefix("./").removeprefix(f"{WORKSPACE}/")
    if not text.endswith(".ipynb"):
        text += ".ipynb"
    if text in course:
        return text
    hits = [rel for rel in course if rel.split("/", 1)[1] == Path(text).name]
    if len(hits) == 1:
        return hits[0]
    if hits:
        raise CourseError(f"fresh: {name!r} is in more than one folder ({', '.join(hits)}); say which, "
                          f"e.g. gradlab fresh {hits[0]}")
    raise CourseError(f"fresh: no shipped notebook {name!r} in {', '.join(f'{d}/' for d in FOLDERS)} of "
                      f"{root}; the names are like notebooks/05_graphs.ipynb or exercises/01_unbroadcast.ipynb")


def fresh(root, name) -> tuple[Path, Path | None]:
    """A fresh copy of one shipped notebook in the workspace; the student's copy is kept as a backup.

    Returns ``(the new copy, the backup)``; the backup is None when there was no
    copy or it was unchanged (nothing to keep).
    """
    rel = resolve(root, name)
    ws = workspace_dir(root)
    man = Manifest(ws)
    dest = ws / rel
    data = shipped(root)[rel].read_bytes()
    backup = None
    if dest.exists() and dest.read_bytes() != data:
        backup = backup_path(dest)
        dest.replace(backup)
    man.write(dest, data)
    man.save()
    return dest, backup
