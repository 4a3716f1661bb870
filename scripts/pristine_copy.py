"""Copy folders of the repository *as committed* into a temporary folder; print where.

    python scripts/pristine_copy.py notebooks [solutions ...]   ->  prints /tmp/gradlab-pristine-XXXX

``make test`` runs the course notebooks from this copy, so that a notebook a
student ran, edited or JupyterLab autosaved does not make the tests fail (and
is never touched). Inside a git checkout the files come from ``HEAD`` (``git
archive``; no stash, nothing in the working tree changes). Outside git (an
unpacked release) the working tree is copied as it is, and a line on stderr
says so.
"""
from __future__ import annotations

import io
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def pristine_copy(folders, dest=None, root=ROOT) -> tuple[Path, str]:
    """Copy ``folders`` (relative to ``root``) into ``dest`` (a new temp folder); returns (dest, where from)."""
    dest = Path(dest or tempfile.mkdtemp(prefix="gradlab-pristine-"))
    try:
        r = subprocess.run(["git", "-C", str(root), "archive", "--format=tar", "HEAD", "--", *folders],
                           capture_output=True, timeout=120)
        ok = r.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    if ok:
        with tarfile.open(fileobj=io.BytesIO(r.stdout)) as tar:
            tar.extractall(dest, filter="data") if hasattr(tarfile, "data_filter") else tar.extractall(dest)
        return dest, "git HEAD"
    for f in folders:
        src = Path(root) / f
        if src.is_dir():
            shutil.copytree(src, dest / f, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    return dest, "the working tree (not a git checkout)"


def main(argv=None) -> int:
    folders = (argv if argv is not None else sys.argv[1:]) or ["notebooks"]
    dest, where = pristine_copy(folders)
    print(f"pristine_copy: {', '.join(folders)} from {where} -> {dest}", file=sys.stderr)
    print(dest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
