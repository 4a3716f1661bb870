"""The first hour on a fresh machine: ``make lab`` / ``gradlab lab``, the set-up stamp, trust, pristine notebooks.

These run without a browser: the server is started for real (as root when the
tests run as root) on a loopback port and polled through ``/api/status``.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import warnings
from pathlib import Path

import pytest

from .browser.conftest import stop_lab

REPO = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------ packaging
def _requirement(specs, name):
    """The ``name>=X`` entry of a requirements list (``["setuptools>=77", ...]`` -> ``"setuptools>=77"``)."""
    return next(r for r in specs if r.split(">")[0].split("=")[0].strip() == name)


def _pyproject_text_requirements():
    """[build-system].requires and the dev extra, read without tomllib (Python 3.10 has none)."""
    text = (REPO / "pyproject.toml").read_text()
    build = re.search(r"^requires = \[(.*?)\]", text, re.M).group(1)
    dev = re.search(r"^dev = \[(.*?)^\]", text, re.M | re.S).group(1)
    strings = lambda block: re.findall(r'^\s*"([^"]+)"', block, re.M) or re.findall(r'"([^"]+)"', block)
    return strings(build), strings(dev)


def test_the_test_stack_brings_the_build_backend():
    """The root cause of a failure on fresh clones: the metadata test below ran whatever setuptools the venv
    brought (65.5 on Python 3.10/3.11, which rejects ``license = "MIT"``; none on 3.12), while pip builds the
    package with ``[build-system].requires``. The dev extra therefore asks for that same setuptools."""
    build, dev = _pyproject_text_requirements()
    assert _requirement(dev, "setuptools") == _requirement(build, "setuptools"), (
        "the dev extra must require the setuptools that [build-system] requires")


def test_project_metadata_has_no_deprecation_warnings():
    import setuptools
    from setuptools.config.pyprojecttoml import apply_configuration
    from setuptools.dist import Distribution
    need = int(_requirement(_pyproject_text_requirements()[0], "setuptools").split(">=")[1])
    have = int(setuptools.__version__.split(".")[0])
    assert have >= need, (f"setuptools {setuptools.__version__} is older than the {need} that pyproject.toml's "
                          "[build-system] requires; reinstall the test stack: pip install -e '.[dev]' (make test)")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dist = apply_configuration(Distribution(), REPO / "pyproject.toml")
    msgs = [f"{w.category.__name__}: {w.message}" for w in caught if "Deprecat" in w.category.__name__]
    assert msgs == []
    assert dist.metadata.license_expression == "MIT"
    assert (REPO / "LICENSE").read_text().startswith("MIT License")


def _fake_venv(tmp_path):
    """A copy of the Makefile's inputs and a venv whose python only logs how it was called."""
    work = tmp_path / "repo"
    work.mkdir()
    for f in ("Makefile", "pyproject.toml"):
        shutil.copy(REPO / f, work / f)
    bin_ = work / ".venv" / "bin"
    bin_.mkdir(parents=True)
    log = tmp_path / "calls.log"
    py = bin_ / "python"
    py.write_text(f'#!/bin/sh\necho "python $*" >> {log}\n')
    py.chmod(0o755)
    return work, log


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_second_setup_makes_no_pip_call(tmp_path):
    """``make lab`` installs the lab stack only, once; ``make test`` adds the test stack, once."""
    work, log = _fake_venv(tmp_path)
    run = lambda target: subprocess.run(["make", "-s", target], cwd=work, capture_output=True, text=True,
                                        timeout=60)
    calls = lambda: [c for c in log.read_text().splitlines() if "-m pip install" in c]
    r = run("venv")                               # what `make lab` sets up
    assert r.returncode == 0, r.stderr
    first = calls()
    assert len(first) == 1 and "-e .[lab,data]" in first[0], first    # the lab stack, once
    for lab_only in ("pytest", "ruff", "playwright", "hypothesis", "dev"):
        assert lab_only not in first[-1]
    log.write_text("")
    assert run("venv").returncode == 0
    assert log.read_text() == "", "the second set-up ran pip again"
    # make test: the test stack, once; after it, make lab runs no pip
    assert run("venv-test").returncode == 0
    assert calls() == [c for c in calls() if "-e .[dev,lab,data]" in c] and len(calls()) == 1
    log.write_text("")
    assert run("venv").returncode == 0 and run("venv-test").returncode == 0
    assert log.read_text() == ""
    # pyproject.toml changed: pip runs again (once)
    future = time.time() + 5
    os.utime(work / "pyproject.toml", (future, future))
    assert run("venv").returncode == 0
    assert len(calls()) == 1
    # the oracle (CI's second set-up) is a different set of extras: installed once too
    log.write_text("")
    assert run("venv-oracle").returncode == 0
    assert "oracle" in log.read_text()


# --------------------------------------------------------------------- trust
@pytest.fixture
def notary(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    from nbformat.sign import NotebookNotary
    return NotebookNotary(db_file=str(tmp_path / "sigs.db"), secret=b"test-secret"), nbformat


def _nb_with_svg(nbformat):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("gradlab.show_graph(loss)")
    cell.outputs = [nbformat.v4.new_output("display_data", data={
        "image/svg+xml": "<svg xmlns='http://www.w3.org/2000/svg'></svg>", "text/plain": "GraphView(...)"})]
    nb.cells = [cell, nbformat.v4.new_markdown_cell("text")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def _contents_manager(root, notary_):
    fm = pytest.importorskip("jupyter_server.services.contents.filemanager")
    from gradlab.lab import pre_save_hook
    cm = fm.FileContentsManager(root_dir=str(root))
    cm.notary = notary_
    cm.pre_save_hook = pre_save_hook
    return cm


def _save_as_jupyterlab(cm, path):
    """What JupyterLab 4 sends on save: the content, without the cells' "trusted" marks."""
    model = cm.get(path)
    content = json.loads(json.dumps(model["content"]))
    for c in content["cells"]:
        c["metadata"].pop("trusted", None)
        if c["cell_type"] == "markdown":
            c["source"] += " edited"
    cm.save({"type": "notebook", "format": "json", "content": content}, path)


def _trusted(cm, path):
    cells = cm.get(path)["content"]["cells"]
    return all(c["metadata"].get("trusted") for c in cells if c["cell_type"] == "code")


def test_saved_trusted_notebook_stays_trusted(tmp_path, notary):
    notary_, nbformat = notary
    from gradlab.lab import trust_notebooks
    nbformat.write(_nb_with_svg(nbformat), str(tmp_path / "a.ipynb"))
    nbformat.write(_nb_with_svg(nbformat), str(tmp_path / "untrusted.ipynb"))
    assert trust_notebooks([tmp_path / "a.ipynb"], notary_) == 1
    cm = _contents_manager(tmp_path, notary_)
    assert _trusted(cm, "a.ipynb")
    for _ in range(2):                         # autosave, then save again
        _save_as_jupyterlab(cm, "a.ipynb")
        assert _trusted(cm, "a.ipynb"), "a trusted notebook reopened untrusted after a save"
    assert "edited edited" in nbformat.read(str(tmp_path / "a.ipynb"), 4).cells[1].source
    # trust is carried forward, never invented: an untrusted notebook stays untrusted when saved
    _save_as_jupyterlab(cm, "untrusted.ipynb")
    assert not _trusted(cm, "untrusted.ipynb")
    # "trusted" never lands in the file (it is transient)
    assert "trusted" not in (tmp_path / "a.ipynb").read_text()


def test_without_the_hook_a_save_loses_trust(tmp_path, notary):
    """The defect the hook fixes (if JupyterLab ever sends the marks again, this tells us)."""
    notary_, nbformat = notary
    from gradlab.lab import trust_notebooks
    nbformat.write(_nb_with_svg(nbformat), str(tmp_path / "a.ipynb"))
    trust_notebooks([tmp_path / "a.ipynb"], notary_)
    cm = _contents_manager(tmp_path, notary_)
    cm.pre_save_hook = None
    _save_as_jupyterlab(cm, "a.ipynb")
    assert not _trusted(cm, "a.ipynb")


def test_lab_command_line(tmp_path):
    from gradlab import lab
    ws = tmp_path / "workspace"
    (ws / "notebooks").mkdir(parents=True)
    (ws / "notebooks" / "00_welcome.ipynb").write_text("{}")
    cmd = lab.lab_command(ws, 8899, ["--no-browser"])
    assert f"--ServerApp.root_dir={ws}" in cmd and "--ServerApp.port=8899" in cmd
    assert "--no-browser" in cmd and cmd[-1].endswith("00_welcome.ipynb")
    assert ("--allow-root" in cmd) == (hasattr(os, "geteuid") and os.geteuid() == 0)
    assert lab.url_of(8899, "tok", root=ws) == "http://localhost:8899/lab/tree/notebooks/00_welcome.ipynb?token=tok"
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "exercises").mkdir()
    assert lab.find_root(tmp_path / "notebooks") == tmp_path


def test_gradlab_help_is_for_students_too():
    from gradlab.cli import _parser
    text = _parser().format_help()
    assert "course tooling for instructors" not in text      # it used to say it was only for them
    assert "gradlab lab" in text and "gradlab grade exercises/" in text


# ----------------------------------------------------------- pristine copies
@pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(), reason="not a git checkout")
def test_make_test_checks_pristine_notebooks(tmp_path):
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        from pristine_copy import pristine_copy
    finally:
        sys.path.pop(0)
    dest, where = pristine_copy(["notebooks"], tmp_path / "copy")
    assert where == "git HEAD"
    tracked = subprocess.run(["git", "-C", str(REPO), "ls-files", "notebooks"], capture_output=True, text=True
                             ).stdout.split()
    for p in tracked:
        head = subprocess.run(["git", "-C", str(REPO), "show", f"HEAD:{p}"], capture_output=True).stdout
        assert (dest / p).read_bytes() == head
    # outside git: the working tree
    fake = tmp_path / "release"
    (fake / "notebooks").mkdir(parents=True)
    (fake / "notebooks" / "a.ipynb").write_text("{}")
    dest2, where2 = pristine_copy(["notebooks"], tmp_path / "copy2", root=fake)
    assert "working tree" in where2 and (dest2 / "notebooks" / "a.ipynb").read_text() == "{}"


# ------------------------------------------------------------ make lab, live
def _wait_status(url, token, proc, deadline):
    req = urllib.request.Request(url + "/api/status", headers={"Authorization": f"token {token}"})
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return None
        try:
            with urllib.request.urlopen(req, timeout=2) as r:
                if r.status == 200:
                    return json.loads(r.read())
        except OSError:
            pass
        time.sleep(0.5)
    return None


@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_lab_starts_with_a_given_port(tmp_path):
    pytest.importorskip("jupyterlab")
    venv = Path(sys.prefix)
    stamp = venv / ".gradlab-installed-lab"
    port = _free_port()
    token = "gradlab-test-token"
    env = dict(os.environ, JUPYTER_TOKEN=token, JUPYTER_DATA_DIR=str(tmp_path / "data"),
               JUPYTER_CONFIG_DIR=str(tmp_path / "config"), JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "ws"))
    env.pop("GRADLAB_ORACLE", None)
    # -o: treat the set-up stamp as done (this test must never pip-install into the venv running it)
    # a copy of the course, so that the test never writes into this checkout's own workspace/
    course = tmp_path / "course"
    for d in ("notebooks", "exercises"):
        shutil.copytree(REPO / d, course / d, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    cmd = ["make", "-s", "lab", f"VENV={venv}", f"PORT={port}",
           f"ARGS=--root={course} --no-browser --ServerApp.ip=127.0.0.1", "-o", str(stamp)]
    log = open(tmp_path / "lab.log", "w+")
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        status = _wait_status(f"http://127.0.0.1:{port}", token, proc, time.monotonic() + 180)
        started = time.monotonic() - t0
        log.flush()
        text = (tmp_path / "lab.log").read_text()
        assert status is not None, "make lab did not answer on /api/status:\n" + text[-3000:]
        print(f"\nmake lab answered /api/status after {started:.1f} s")
        assert f"http://127.0.0.1:{port}/lab/tree/notebooks/00_welcome.ipynb?token={token}" in text
        if hasattr(os, "geteuid") and os.geteuid() == 0:      # as root: JupyterLab got --allow-root and started
            assert "running as root, so JupyterLab gets --allow-root" in text
        # rooted at the student's workspace: their copies of notebooks/ and exercises/, and its README;
        # solutions/ is not in the file browser
        req = urllib.request.Request(f"http://127.0.0.1:{port}/api/contents", headers={"Authorization": f"token {token}"})
        with urllib.request.urlopen(req, timeout=10) as r:
            names = {c["name"] for c in json.loads(r.read())["content"]}
        assert {"notebooks", "exercises", "README.md"} <= names and "solutions" not in names
        assert "workspace" in text
        # the workspace copies were signed in this (temporary) notary database
        assert (tmp_path / "data" / "nbsignatures.db").exists()
    finally:
        stop_lab(proc)
        log.close()
