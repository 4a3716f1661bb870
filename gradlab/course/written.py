"""Never overwrite a person's edits: the manifest of files gradlab wrote, and backups.

Holds :class:`Manifest` (the hash of every file a gradlab command wrote into a
folder, kept in ``<folder>/.gradlab-written.json``, git-ignored), the rule it
enforces, :func:`write_files` (the one way a command writes its files under the
rule), :func:`backup_path` (the name a replaced file is kept under), and
:class:`WouldOverwrite` (the refusal).

The rule, for every command that writes a file a person may have edited
(``gradlab course build`` into ``exercises/``, ``gradlab lab`` and ``gradlab
fresh`` into ``workspace/``, ``gradlab grade``'s ``--json``, ``--junit``,
``--csv`` and ``--feedback`` reports, ``gradlab course mutants --json``): a
file may be replaced only when nothing would be lost, that is when

* it does not exist, or already holds exactly the new bytes;
* it holds exactly what gradlab last wrote there (its hash is in the manifest);
* or it is tracked by git and unchanged since the last commit (git still has it).

Anything else is someone's work: the command refuses (exit status 1) and says
which files, unless told ``force=True``, and then the old file is first moved
to a backup name next to it (``01_unbroadcast.backup-20260101-120000.ipynb``).
A gradebook an instructor fixed by hand is someone's work just as much as an
edited exercise, hence the same rule for the reports.

Holds ``write_files`` (the rule above, for many files at once), the manifest of what gradlab wrote and
``digest(data)`` (the hash it keeps).
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import subprocess
from pathlib import Path

from .notebook import CourseError

MANIFEST_NAME = ".gradlab-written.json"


class WouldOverwrite(CourseError):
    """A command refused to replace files that differ from what gradlab last wrote (someone's edits)."""

    def __init__(self, command: str, paths, hint: str):
        self.paths = [Path(p) for p in paths]
        names = ", ".join(str(p) for p in self.paths)
        super().__init__(f"{command}: refusing to overwrite {names}: "
                         f"{'it differs' if len(self.paths) == 1 else 'they differ'} from what gradlab last "
                         f"wrote there (edited since?), so nothing was written and your files are as they were. "
                         + hint)


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def backup_path(path) -> Path:
    """A free name next to ``path`` for keeping its old content: ``NAME.backup-YYYYmmdd-HHMMSS[-N].ext``."""
    path = Path(path)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    stem, ext = (path.name[:-len(".ipynb")], ".ipynb") if path.name.endswith(".ipynb") else (path.stem, path.suffix)
    cand, n = path.with_name(f"{stem}.backup-{stamp}{ext}"), 1
    while cand.exists():
        n += 1
        cand = path.with_name(f"{stem}.backup-{stamp}-{n}{ext}")
    return cand


def _clean_in_git(path: Path) -> bool:
    """Tracked by git and identical to the last commit (so replacing it loses nothing)."""
    try:
        r = subprocess.run(["git", "-C", str(path.parent), "status", "--porcelain", "--ignored", "--", path.name],
                           capture_output=True, text=True, timeout=30)
        t = subprocess.run(["git", "-C", str(path.parent), "ls-files", "--error-unmatch", "--", path.name],
                           capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0 and r.stdout.strip() == "" and t.returncode == 0


class Manifest:
    """What gradlab wrote under ``root``: relative path -> sha256 of the bytes, in ``root/.gradlab-written.json``."""

    def __init__(self, root):
        self.root = Path(root)
        self.path = self.root / MANIFEST_NAME
        try:
            self.files = dict(json.loads(self.path.read_text(encoding="utf-8")).get("files", {}))
        except (OSError, ValueError, AttributeError):
            self.files = {}

    def key(self, path) -> str:
        return Path(os.path.relpath(Path(path), self.root)).as_posix()

    def recorded(self, path) -> str | None:
        return self.files.get(self.key(path))

    def untouched(self, path) -> bool:
        """``path`` holds exactly what gradlab last wrote there."""
        rec = self.recorded(path)
        return rec is not None and Path(path).is_file() and digest(Path(path).read_bytes()) == rec

    def replaceable(self, path, new: bytes | None = None) -> bool:
        """Replacing ``path`` loses nothing (see the module docstring for the rule)."""
        path = Path(path)
        if not path.exists():
            return True
        old = path.read_bytes()
        if (new is not None and old == new) or self.recorded(path) == digest(old):
            return True
        return _clean_in_git(path)

    def write(self, path, data: bytes, force: bool = False) -> Path | None:
        """Write ``data`` to ``path`` and record it; returns the backup made (``force``) or None.

        Call :meth:`replaceable` first (or pass ``force``): this raises ``WouldOverwrite`` otherwise.
        """
        path = Path(path)
        backup = None
        if path.exists() and path.read_bytes() != data:
            if not self.replaceable(path, data):
                if not force:
                    raise WouldOverwrite("write", [path], "pass force=True to keep it as a backup and replace it")
                backup = backup_path(path)
                os.replace(path, backup)
        if not (path.exists() and path.read_bytes() == data):
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.gradlab-tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
        self.files[self.key(path)] = digest(data)
        return backup

    def save(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"about": "files gradlab wrote here and their sha256: gradlab replaces a file only while "
                                    "it still holds these bytes (see gradlab/course/written.py)",
                           "files": dict(sorted(self.files.items()))}, indent=1) + "\n"
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, self.path)


def write_files(command: str, planned, force: bool = False, on_backup=None, hint: str = "") -> list:
    """Write every ``(path, bytes)`` of ``planned`` under the rule; returns the paths.

    All or nothing: when any file is not replaceable and ``force`` is false, this
    raises :class:`WouldOverwrite` naming every such file (``command`` and ``hint``
    go into its message) before anything is written. With ``force``, each such
    file is first kept as a backup and ``on_backup(path, backup)`` is called.
    Each folder keeps its own manifest (``<folder>/.gradlab-written.json``).
    """
    planned = [(Path(p), data) for p, data in planned]
    manifests: dict[Path, Manifest] = {}
    for path, _ in planned:
        folder = path.parent.resolve()
        if folder not in manifests:
            manifests[folder] = Manifest(path.parent)
    refused = [p for p, data in planned if not manifests[p.parent.resolve()].replaceable(p, data)]
    if refused and not force:
        raise WouldOverwrite(command, refused, hint or f"Pass --force to replace "
                             f"{'it' if len(refused) == 1 else 'them'}, keeping each as NAME.backup-DATE next to it.")
    for path, data in planned:
        b = manifests[path.parent.resolve()].write(path, data, force=force)
        if b is not None and on_backup is not None:
            on_backup(path, b)
    for m in manifests.values():
        m.save()
    return [p for p, _ in planned]
