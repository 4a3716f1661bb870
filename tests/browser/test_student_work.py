"""A student's work, in real JupyterLab + Chromium, with exactly the settings ``gradlab lab`` gives them.

One course, cloned from a (local, bare) upstream as a student clones it, and one lab as ``gradlab lab``
starts it (the workspace filled and trusted, JupyterLab's defaults written into the environment, no user
settings; tests/browser/conftest.py). Then what a student does:

* run lesson 00 and save it (Ctrl+S); fill in an exercise and save it; leave a lesson open past
  JupyterLab's autosave interval (its default, 120 s): ``git status`` stays clean;
* stop the server, start it again, reopen lesson 00: the widget shows (live, from its saved state, or
  its static picture), never "Error displaying widget: model not found";
* ``gradlab course build``, ``git pull`` of a new commit of the course and the student's own tests:
  the filled-in exercise survives all three, and the new lesson appears in the workspace.

The autosave wait is two minutes from the lesson's opening, so the lesson is opened first, in a window of
its own, and the rest runs during the wait: lesson 00 and the exercise in a second window, and, without a
browser, in the same clone with the lab open (as a student would have it), ``gradlab course build``, the
teacher's new commit, and the student's tests (in the background; their result is read at the end). The
``git status`` after the wait then covers those too.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from .conftest import REPO, LabPage, start_lab, stop_lab

pytestmark = [pytest.mark.browser, pytest.mark.slow]

AUTOSAVE_S = 120          # JupyterLab's default autosave interval (docmanager-extension:plugin)
ANSWER = "# my answer, typed in JupyterLab\n"


def _git(cwd, *args, check=True):
    r = subprocess.run(["git", "-C", str(cwd), "-c", "user.email=s@example.org", "-c", "user.name=student", *args],
                       capture_output=True, text=True, timeout=120)
    if check:
        assert r.returncode == 0, f"git {' '.join(args)}: {r.stderr}"
    return r


def _gradlab(cwd, *args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-m", "gradlab", *args], cwd=str(cwd), env=env, capture_output=True,
                          text=True, timeout=300)


def _widget_state(page):
    """What the reopened notebook's widget outputs show: error texts, live players, static pictures."""
    return page.evaluate("""() => {
        const nb = window.jupyterapp.shell.currentWidget.content.node;
        const errors = [...nb.querySelectorAll('.jp-OutputArea-output')].map(o => o.innerText)
                        .filter(t => /Error displaying widget/.test(t));
        return {errors, live: nb.querySelectorAll('.gl-root .gl-graph svg').length,
                pictures: nb.querySelectorAll('.jp-RenderedSVG, .jp-OutputArea-output svg').length,
                loading: [...nb.querySelectorAll('.jp-OutputArea-output')].filter(o => /Loading widget/.test(o.innerText)).length};
    }""")


def _students_tests(student):
    """The student's own tests of the course build and the workspace, started in the background."""
    env = dict(os.environ, PYTHONPATH=str(student))
    env.pop("GRADLAB_TORCH_SKIPS", None)
    return subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             "tests/test_course_build.py", "tests/test_workspace.py"],
                            cwd=student, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _teacher_pushes_an_update(tmp_path, upstream):
    """A new commit of the course upstream: a new lesson, and a changed one (05_graphs, the one left open)."""
    teacher = tmp_path / "teacher"
    _git(tmp_path, "clone", "-q", str(upstream), str(teacher))
    shutil.copy(teacher / "notebooks" / "00_welcome.ipynb", teacher / "notebooks" / "99_new_lesson.ipynb")
    nb = json.loads((teacher / "notebooks" / "05_graphs.ipynb").read_text())
    nb["cells"].append({"cell_type": "markdown", "id": "course-update", "metadata": {}, "source": "An update."})
    (teacher / "notebooks" / "05_graphs.ipynb").write_text(json.dumps(nb, indent=1) + "\n")
    _git(teacher, "add", "-A")
    _git(teacher, "commit", "-q", "-m", "a new lesson and an update")
    _git(teacher, "push", "-q", "origin", "HEAD")


@pytest.fixture
def background():
    """Processes a test starts in the background; any still running at its end (it failed early) are stopped."""
    procs = []
    yield procs
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.communicate()


@pytest.mark.timeout(1200)
def test_the_students_work_survives_save_restart_build_pull_and_tests(browser, browser_requirements, tmp_path,
                                                                      background):
    from nbformat.sign import NotebookNotary

    from gradlab import lab
    # the course upstream (a bare clone of this commit) and the student's clone of it
    upstream, student = tmp_path / "upstream.git", tmp_path / "student"
    _git(tmp_path, "clone", "-q", "--bare", str(REPO), str(upstream))
    _git(tmp_path, "clone", "-q", str(upstream), str(student))
    base = tmp_path / "lab"
    (base / "jupyter-data").mkdir(parents=True)
    notary = NotebookNotary(data_dir=str(base / "jupyter-data"))

    def start():
        ws = lab.prepare(student, notary=notary, quiet=True)      # what `gradlab lab` does before the server
        return start_lab(ws, base)

    proc, url = start()
    ws = student / "workspace"
    exercise = ws / "exercises" / "01_unbroadcast.ipynb"
    try:
        # 3 (first, so that its autosave time passes during 1 and 2). A lesson left open past JupyterLab's
        # autosave interval, in a window of its own (opening another notebook in the same window would close
        # it): JupyterLab rewrites its kernelspec and language_info, and its autosave timer starts on open
        left_open = browser.new_context(viewport={"width": 1400, "height": 1000})
        left_page = left_open.new_page()
        left_page.set_default_timeout(60_000)
        LabPage(left_page, url).open("notebooks/05_graphs.ipynb")
        t_open = time.monotonic()
        ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = ctx.new_page()
        page.set_default_timeout(60_000)
        lp = LabPage(page, url)
        # 1. run lesson 00 and save it
        lp.open("notebooks/00_welcome.ipynb")
        lp.run_all(timeout=240_000)
        assert lp.cell_errors() == []
        page.locator(".gl-root .gl-graph svg").first.wait_for(state="attached", timeout=60_000)
        lp.save()
        saved = json.loads((ws / "notebooks" / "00_welcome.ipynb").read_text())
        assert saved["metadata"].get("widgets"), "the widget state was not saved with the notebook"
        # 2. fill in an exercise and save it
        lp.open("exercises/01_unbroadcast.ipynb")
        page.evaluate("""(answer) => { const nb = window.jupyterapp.shell.currentWidget.content;
            const c = nb.widgets.find(w => w.model.type === 'code' &&
                                      w.model.sharedModel.getSource().includes('YOUR CODE HERE'));
            c.model.sharedModel.setSource(answer + c.model.sharedModel.getSource()); }""", ANSWER)
        lp.save()
        assert any(ANSWER in "".join(c["source"]) for c in json.loads(exercise.read_text())["cells"])
        mine = exercise.read_bytes()
        # while lesson 05 stays open: the filled-in exercise survives `gradlab course build`...
        r = _gradlab(student, "course", "build")
        assert r.returncode == 0, r.stdout + r.stderr
        assert exercise.read_bytes() == mine
        # ... the student's tests start (read at the end) and the teacher pushes a new commit of the course
        students_tests = _students_tests(student)
        background.append(students_tests)
        _teacher_pushes_an_update(tmp_path, upstream)
        time.sleep(max(0.0, AUTOSAVE_S + 15 - (time.monotonic() - t_open)))
        assert left_page.evaluate("() => window.jupyterapp.shell.currentWidget.context.path") == \
            "notebooks/05_graphs.ipynb", "lesson 05 was not open for the whole autosave interval"
        status = _git(student, "status", "--porcelain").stdout
        assert status == "", f"opening, running and saving (and course build) changed tracked files:\n{status}"
        ctx.close()
        left_open.close()
    finally:
        stop_lab(proc)

    # 4. restart the server, reopen lesson 00: the widget from its saved state (or its picture), no error
    proc, url = start()
    try:
        ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = ctx.new_page()
        page.set_default_timeout(60_000)
        lp = LabPage(page, url)
        lp.open("notebooks/00_welcome.ipynb")
        # scroll to the first cell whose saved output is a widget, and wait until it shows something
        page.evaluate("""() => { const nb = window.jupyterapp.shell.currentWidget.content;
            const c = nb.widgets.find(w => w.model.type === 'code' && w.model.outputs.toJSON().some(
                o => o.data && o.data['application/vnd.jupyter.widget-view+json']));
            c.node.scrollIntoView(); }""")
        try:
            page.wait_for_function("""() => { const nb = window.jupyterapp.shell.currentWidget.content.node;
                return nb.querySelector('.gl-root .gl-graph svg') ||
                       [...nb.querySelectorAll('.jp-OutputArea-output')].some(o => /Error displaying widget/.test(o.innerText)); }""",
                                   timeout=90_000)
        except Exception:
            lp.screenshot("reopened_after_restart_timeout.png")
            raise
        state = _widget_state(page)
        lp.screenshot("reopened_after_restart.png")
        assert state["errors"] == [], f"a reopened widget shows an error: {state['errors']}"
        assert state["live"] + state["pictures"] > 0, state
        assert state["live"] >= 1, "the saved widget state did not bring the live widget back"
        assert not [e for e in lp.console_errors if "model not found" in e.lower()], lp.console_errors
        ctx.close()
    finally:
        stop_lab(proc)

    # 5. ... a `git pull` of the new commit of the course (a new lesson, a changed one) ...
    pull = _git(student, "pull", "-q", "--no-rebase", check=False)
    assert pull.returncode == 0, f"git pull of a course update failed: {pull.stdout}{pull.stderr}"
    rep = __import__("gradlab.course.workspace", fromlist=["sync"]).sync(student)   # the next `gradlab lab`
    assert "notebooks/99_new_lesson.ipynb" in rep.added
    assert "notebooks/05_graphs.ipynb" in rep.kept + rep.updated   # kept if it was autosaved (the student's now)
    assert exercise.read_bytes() == mine
    # ... and the student's tests (started during the autosave wait)
    out, err = students_tests.communicate(timeout=600)
    assert students_tests.returncode == 0, out[-3000:] + err[-2000:]
    assert exercise.read_bytes() == mine
    assert _git(student, "status", "--porcelain").stdout == ""
