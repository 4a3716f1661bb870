"""A student's work is never lost: the workspace, ``gradlab fresh``, the manifest, ``course build``'s refusal,
and the JupyterLab defaults ``gradlab lab`` writes.

No server and no browser here (fast); tests/browser/test_student_work.py drives the same in JupyterLab.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="the course tooling needs nbformat (pip install 'gradlab[dev]')")

from gradlab import lab  # noqa: E402
from gradlab.cli import main  # noqa: E402
from gradlab.course import workspace  # noqa: E402
from gradlab.course.written import MANIFEST_NAME, Manifest, WouldOverwrite  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _nb(text: str) -> bytes:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(text, id="c0")]   # a fixed id: the same text gives the same bytes
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nbformat.writes(nb).encode()


@pytest.fixture
def course(tmp_path):
    root = tmp_path / "course"
    for rel in ("notebooks/00_welcome.ipynb", "notebooks/05_graphs.ipynb", "exercises/01_unbroadcast.ipynb"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(_nb(f"# {rel}"))
    return root


def _git(root, *args):
    return subprocess.run(["git", "-C", str(root), "-c", "user.email=s@s", "-c", "user.name=s", *args],
                          check=True, capture_output=True, text=True).stdout


# ------------------------------------------------------------------- sync
def test_first_start_fills_the_workspace_mirroring_the_course(course):
    rep = workspace.sync(course)
    ws = course / "workspace"
    assert sorted(rep.added) == sorted(["README.md", "notebooks/00_welcome.ipynb", "notebooks/05_graphs.ipynb",
                                        "exercises/01_unbroadcast.ipynb"])
    for rel, src in workspace.shipped(course).items():
        assert (ws / rel).read_bytes() == src.read_bytes()
    assert sorted(p.name for p in rep.as_written) == ["00_welcome.ipynb", "01_unbroadcast.ipynb", "05_graphs.ipynb"]
    again = workspace.sync(course)
    assert again.added == again.updated == again.kept == []


def test_later_starts_add_new_material_and_never_touch_an_edited_copy(course):
    workspace.sync(course)
    ws = course / "workspace"
    mine = _nb("my answer: x.sum(axis=0, keepdims=True)")
    (ws / "exercises/01_unbroadcast.ipynb").write_bytes(mine)
    # the course is updated: a new lesson, a new version of the edited exercise and of an untouched lesson
    (course / "notebooks/06_reverse_mode.ipynb").write_bytes(_nb("new lesson"))
    (course / "exercises/01_unbroadcast.ipynb").write_bytes(_nb("exercise, version 2"))
    (course / "notebooks/05_graphs.ipynb").write_bytes(_nb("lesson, version 2"))
    (ws / "notebooks/00_welcome.ipynb").unlink()          # deleted by the student: restored, as nbgitpuller does
    rep = workspace.sync(course)
    assert (ws / "exercises/01_unbroadcast.ipynb").read_bytes() == mine
    assert rep.kept == ["exercises/01_unbroadcast.ipynb"] and rep.newer == ["exercises/01_unbroadcast.ipynb"]
    assert sorted(rep.added) == ["notebooks/00_welcome.ipynb", "notebooks/06_reverse_mode.ipynb"]
    assert rep.updated == ["notebooks/05_graphs.ipynb"]
    assert (ws / "notebooks/05_graphs.ipynb").read_bytes() == _nb("lesson, version 2")
    assert ws / "exercises/01_unbroadcast.ipynb" not in rep.as_written   # the student's copy is never re-signed
    assert any("gradlab fresh exercises/01_unbroadcast.ipynb" in line for line in rep.lines())


def test_fresh_gives_a_new_copy_and_keeps_the_old_one(course, capsys):
    workspace.sync(course)
    ws = course / "workspace"
    mine = _nb("half done")
    (ws / "notebooks/05_graphs.ipynb").write_bytes(mine)
    dest, backup = workspace.fresh(course, "05_graphs")
    assert dest == ws / "notebooks/05_graphs.ipynb" and dest.read_bytes() == _nb("# notebooks/05_graphs.ipynb")
    assert backup.parent == dest.parent and backup.name.startswith("05_graphs.backup-") and backup.suffix == ".ipynb"
    assert backup.read_bytes() == mine
    # an unchanged copy: nothing to keep
    assert workspace.fresh(course, "workspace/notebooks/05_graphs.ipynb")[1] is None
    # the command, from inside the workspace (which mirrors the course: the course folder is found above it)
    (ws / "exercises/01_unbroadcast.ipynb").write_bytes(mine)
    assert main(["fresh", "exercises/01_unbroadcast.ipynb", "--root", str(ws / "exercises")]) == 0
    out = capsys.readouterr().out
    assert "01_unbroadcast.backup-" in out and (ws / "exercises/01_unbroadcast.ipynb").read_bytes() != mine
    assert main(["fresh", "no_such_lesson", "--root", str(course)]) == 2
    assert "no shipped notebook 'no_such_lesson'" in capsys.readouterr().err
    assert lab.find_root(ws / "notebooks") == course.resolve()


# --------------------------------------------------------- course build
def _solutions(tmp_path):
    sol = tmp_path / "solutions"
    sol.mkdir()
    for p in sorted((ROOT / "solutions").glob("*.ipynb"))[:2]:
        shutil.copy(p, sol / p.name)
    return sol


def test_course_build_refuses_to_overwrite_an_edited_exercise(tmp_path, capsys):
    sol, out = _solutions(tmp_path), tmp_path / "exercises"
    assert main(["course", "build", "--solutions", str(sol), "--out", str(out)]) == 0
    assert (out / MANIFEST_NAME).is_file()
    assert main(["course", "build", "--solutions", str(sol), "--out", str(out)]) == 0   # what it wrote: fine
    victim = sorted(out.glob("*.ipynb"))[0]
    filled = victim.read_text().replace("raise NotImplementedError()", "return x.sum(0)", 1)
    victim.write_text(filled)
    capsys.readouterr()
    assert main(["course", "build", "--solutions", str(sol), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert victim.read_text() == filled, "course build overwrote an edited exercise"
    assert f"refusing to overwrite {victim}" in err and "workspace/exercises" in err
    assert not list(out.glob("*.backup-*"))
    # --force rebuilds it and keeps the edited file
    assert main(["course", "build", "--solutions", str(sol), "--out", str(out), "--force"]) == 0
    backups = list(out.glob(victim.name.replace(".ipynb", ".backup-*.ipynb")))
    assert len(backups) == 1 and backups[0].read_text() == filled
    assert "NotImplementedError" in victim.read_text()


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_a_committed_unchanged_file_may_be_replaced_an_edited_one_not(tmp_path):
    root = tmp_path / "repo"
    (root / "exercises").mkdir(parents=True)
    f = root / "exercises" / "a.ipynb"
    f.write_bytes(_nb("v1"))
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "v1")
    man = Manifest(root / "exercises")              # no manifest yet (a fresh clone)
    assert man.replaceable(f, _nb("v2"))            # git still has it
    f.write_bytes(_nb("edited"))
    assert not man.replaceable(f, _nb("v2"))
    with pytest.raises(WouldOverwrite):
        man.write(f, _nb("v2"))
    assert f.read_bytes() == _nb("edited")


def test_no_message_tells_a_student_to_run_an_overwriting_command():
    """The old advice ('exercises/ is out of date... run gradlab course build') is gone everywhere."""
    pattern = "run 'gradlab course build'"
    places = [*ROOT.glob("gradlab/**/*.py"), *ROOT.glob("tests/**/*.py"), *ROOT.glob("*.md"), *ROOT.glob("docs/*.md")]
    found = [str(p.relative_to(ROOT)) for p in places if p != Path(__file__)
             and (pattern in p.read_text(encoding="utf-8") or pattern.replace("'", "`") in p.read_text(encoding="utf-8"))]
    assert found == []


# ---------------------------------------------------------- lab settings
def test_lab_settings_are_jupyterlab_defaults_and_keep_the_overrides_file(tmp_path):
    settings = tmp_path / "share" / "jupyter" / "lab" / "settings"
    settings.mkdir(parents=True)
    theirs = {"@jupyterlab/apputils-extension:themes": {"theme": "JupyterLab Dark"},
              "@jupyterlab/apputils-extension:notification": {"fetchNews": "true"}}
    (settings / "overrides.json").write_text(json.dumps(theirs))
    path = lab.install_lab_settings(settings)
    assert path == settings / "overrides.d" / "gradlab.json"
    assert json.loads((settings / "overrides.json").read_text()) == theirs     # never edited
    mtime = path.stat().st_mtime_ns
    assert lab.install_lab_settings(settings) == path and path.stat().st_mtime_ns == mtime   # idempotent
    # what JupyterLab itself reads from that folder: ours merged in, the person's overrides.json winning
    su = pytest.importorskip("jupyterlab_server.settings_utils")
    merged, error = su._get_overrides(str(settings))
    assert not error
    assert merged["@jupyter-widgets/jupyterlab-manager:plugin"] == {"saveState": True}
    assert merged["@jupyterlab/apputils-extension:themes"] == {"theme": "JupyterLab Dark"}
    assert merged["@jupyterlab/apputils-extension:notification"] == {"fetchNews": "true", "checkForUpdates": False}


def test_gradlab_lab_writes_its_defaults_where_jupyterlab_reads_them(tmp_path, monkeypatch):
    pytest.importorskip("jupyterlab")
    from jupyterlab.labapp import LabApp
    monkeypatch.setenv("JUPYTERLAB_DIR", str(tmp_path / "app"))
    assert lab.lab_settings_dir() == Path(LabApp().app_settings_dir)
