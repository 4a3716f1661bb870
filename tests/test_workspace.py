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


# ------------------------------------------------- the reports of gradlab grade (and course mutants)
# The same rule, through the same helper (written.write_files): --json, --junit, --csv and --feedback files.
def _fake_grading(monkeypatch, calls):
    """``gradlab grade`` with the grading itself replaced by a fixed result (no kernel: the writing is tested)."""
    from gradlab.course import practice
    from gradlab.course.grading import NotebookResult, Part

    def grade_drills(grade, submissions, **kw):
        calls.append(list(submissions))
        return [NotebookResult(notebook=str(submissions[0]), against="sol.ipynb",
                               parts=[Part("p1", 2.0, earned=2.0, status="ok"),
                                      Part("p2", 1.0, status="failed", message="wrong", hint="sum over axis 0")])]
    monkeypatch.setattr(practice, "grade_drills", grade_drills)


def test_grade_reports_are_never_written_over_an_edited_file(tmp_path, monkeypatch, capsys):
    calls = []
    _fake_grading(monkeypatch, calls)
    out_json, out_xml = tmp_path / "reports" / "scores.json", tmp_path / "reports" / "scores.xml"
    argv = ["grade", str(tmp_path / "sub.ipynb"), "--against", str(tmp_path / "sol.ipynb"),
            "--json", str(out_json), "--junit", str(out_xml)]
    assert main(argv) == 1                                     # a part failed; the reports are written
    first = out_json.read_bytes(), out_xml.read_bytes()
    assert b"sum over axis 0" in first[0] and b"sum over axis 0" in first[1]
    assert json.loads((out_json.parent / MANIFEST_NAME).read_text())["files"].keys() == {"scores.json", "scores.xml"}
    assert main(argv) == 1 and len(calls) == 2                 # what gradlab wrote: replaced again, no question
    assert (out_json.read_bytes(), out_xml.read_bytes()) == first
    # an instructor's note in the JUnit file: refused before grading anything, both files as they were
    out_xml.write_text(first[1].decode() + "<!-- checked by hand -->\n")
    edited = out_xml.read_bytes()
    capsys.readouterr()
    assert main(argv) == 1 and len(calls) == 2, "graded although the report could not be written"
    err = capsys.readouterr().err
    assert f"refusing to overwrite {out_xml}" in err and "--force" in err
    assert out_xml.read_bytes() == edited and out_json.read_bytes() == first[0]
    # --force replaces it and keeps the edited one as a backup
    assert main([*argv, "--force"]) == 1 and len(calls) == 3
    assert f"kept your {out_xml} as " in capsys.readouterr().out
    backups = list(out_xml.parent.glob("scores.backup-*.xml"))
    assert [b.read_bytes() for b in backups] == [edited] and out_xml.read_bytes() == first[1]


def _shard(i, sid):
    part = {"grade_id": "p1", "points": 2, "earned": i - 1, "status": "ok" if i == 2 else "failed",
            "message": "" if i == 2 else "wrong shape", "case": "", "hint": "", "where": ""}
    return {"format": "gradlab-batch-1", "shard": f"{i}/2", "exercises": {"01_unbroadcast": {"possible": 2}},
            "students": {sid: {"name": f"name{sid}", "total": {"earned": i - 1, "possible": 2},
                               "exercises": {"01_unbroadcast": {"earned": i - 1, "possible": 2, "source": "x.ipynb",
                                                                "error": None, "parts": [part], "notes": [],
                                                                "tamper": []}}}},
            "problems": []}


def test_gradebook_csv_json_and_feedback_are_never_written_over_edits(tmp_path, capsys):
    shards = []
    for i, sid in ((1, "111"), (2, "222")):
        shards.append(tmp_path / f"s{i}.json")
        shards[-1].write_text(json.dumps(_shard(i, sid)))
    out, fb = tmp_path / "out", tmp_path / "out" / "feedback"
    argv = ["grade", "merge", *map(str, shards), "--csv", str(out / "gb.csv"), "--feedback", str(fb)]
    assert main(argv) == 1                                     # a failed part: exit 1, everything written
    note = fb / "111.md"
    written = {p.name: p.read_bytes() for p in [out / "gb.csv", note, fb / "222.md"]}
    assert b"wrong shape" in written["111.md"] and b"name222" in written["gb.csv"]
    assert main(argv) == 1                                     # gradlab's own files: replaced
    # the instructor adds a comment to one student's feedback: nothing at all is written (all or nothing)
    note.write_text(note.read_text() + "\nSee me after class.\n")
    edited = note.read_bytes()
    capsys.readouterr()
    assert main([*argv, "--json", str(out / "gb.json")]) == 1
    err = capsys.readouterr().err
    assert f"refusing to overwrite {note}" in err and "--force" in err
    assert note.read_bytes() == edited and not (out / "gb.json").exists()
    # an edited gradebook is refused before the merge even starts
    hand = "Student,ID,Total\nfixed by hand,111,2\n"
    (out / "gb.csv").write_text(hand)
    assert main(argv) == 1 and "refusing to overwrite" in capsys.readouterr().err
    assert (out / "gb.csv").read_text() == hand
    # --force: both replaced, each kept as a backup next to it
    assert main([*argv, "--force"]) == 1
    assert note.read_bytes() == written["111.md"] and (out / "gb.csv").read_bytes() == written["gb.csv"]
    assert [b.read_bytes() for b in fb.glob("111.backup-*.md")] == [edited]
    assert [b.read_text() for b in out.glob("gb.backup-*.csv")] == [hand]


def test_course_mutants_json_is_refused_over_an_edited_file_before_running(tmp_path, monkeypatch, capsys):
    from gradlab.course import mutants
    monkeypatch.setattr(mutants, "run_all", lambda *a, **k: pytest.fail("ran the mutants; the report was refused"))
    out = tmp_path / "mutants.json"
    out.write_text("{\"my\": \"notes\"}\n")
    assert main(["course", "mutants", str(ROOT / "solutions" / "01_unbroadcast.ipynb"), "--json", str(out)]) == 1
    assert f"refusing to overwrite {out}" in capsys.readouterr().err
    assert out.read_text() == "{\"my\": \"notes\"}\n"


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


def test_what_gradlab_lab_prepares_is_what_a_fresh_jupyterlab_reads(course, tmp_path, monkeypatch):
    # Through lab.prepare (what `gradlab lab` runs before the server starts), not install_lab_settings
    # called by the test: a fresh JupyterLab application folder and no user settings at all, then the
    # settings as JupyterLab itself merges them carry gradlab's defaults (saved widget state, no news).
    pytest.importorskip("jupyterlab")
    su = pytest.importorskip("jupyterlab_server.settings_utils")
    from jupyterlab.labapp import LabApp
    from nbformat.sign import NotebookNotary
    monkeypatch.setenv("JUPYTERLAB_DIR", str(tmp_path / "app"))
    monkeypatch.setenv("JUPYTERLAB_SETTINGS_DIR", str(tmp_path / "user-settings"))
    (tmp_path / "jupyter-data").mkdir()
    settings = Path(LabApp().app_settings_dir)
    assert not settings.exists()                                   # nothing there before gradlab lab
    lab.prepare(course, notary=NotebookNotary(data_dir=str(tmp_path / "jupyter-data")), quiet=True)
    merged, error = su._get_overrides(str(settings))
    assert not error
    for plugin, values in lab.LAB_SETTINGS.items():
        assert merged[plugin] == values, plugin
    assert not (tmp_path / "user-settings").exists()               # the student's own settings untouched


def test_gradlab_lab_writes_its_defaults_where_jupyterlab_reads_them(tmp_path, monkeypatch):
    pytest.importorskip("jupyterlab")
    from jupyterlab.labapp import LabApp
    monkeypatch.setenv("JUPYTERLAB_DIR", str(tmp_path / "app"))
    assert lab.lab_settings_dir() == Path(LabApp().app_settings_dir)
