"""Real-browser test harness: JupyterLab in a subprocess, driven by headless Chromium.

What it sets up (once per test session):

* a JupyterLab server on ``127.0.0.1`` and a free port, started as ``gradlab
  lab`` starts it (``gradlab.lab.lab_command``: its save hook, ``--allow-root``;
  ``gradlab.lab.install_lab_settings``: the JupyterLab defaults it writes into
  the environment) with nothing else set: no user settings at all (an empty
  settings folder, as on a student's fresh machine), so the tests see exactly
  what a student sees. On top, only what drives the page:
  ``jupyterlab.galata.configure_jupyter_server`` (no token, the app exposed as
  ``window.jupyterapp``), a temporary root, its own notary (trust) database;
* Debian's ``chromium`` (``/usr/bin/chromium``, or ``$GRADLAB_CHROMIUM``)
  launched headless through Python Playwright's ``executable_path``. Playwright's
  own browser download is never used.

Missing pieces (Chromium, Playwright, JupyterLab, anywidget) make the tests
*skip* with the reason on a developer machine, and *fail* in CI (``CI`` set),
where ``.ci/run`` installs them: a CI run that silently skipped the browser
would prove nothing.
"""
from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / "artifacts" / "screenshots"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _missing(reason: str):
    """Skip outside CI; fail inside it (CI must really run the browser)."""
    if in_ci():
        pytest.fail(f"browser tests cannot run in CI: {reason}", pytrace=False)
    pytest.skip(reason)


def chromium_path() -> str | None:
    """``$GRADLAB_CHROMIUM`` if set (and only it), else Debian's ``/usr/bin/chromium`` or one on PATH."""
    env = os.environ.get("GRADLAB_CHROMIUM")
    if env:
        return env if Path(env).exists() else None
    if Path("/usr/bin/chromium").exists():
        return "/usr/bin/chromium"
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def browser_requirements():
    """Check every piece the browser tests need, before starting anything."""
    exe = chromium_path()
    if exe is None:
        _missing("Chromium is not installed (Debian: apt-get install -y chromium); "
                 "the real-browser widget tests need /usr/bin/chromium")
    for mod, pkg in (("playwright", "playwright"), ("jupyterlab", "jupyterlab"), ("anywidget", "anywidget"),
                     ("ipywidgets", "ipywidgets"), ("ipykernel", "ipykernel")):
        try:
            __import__(mod)
        except ImportError:
            _missing(f"the Python package {pkg!r} is not installed (pip install -e '.[dev,lab]')")
    return exe


@pytest.fixture(scope="session")
def lab_base():
    """A scratch folder for the server's config, settings and log; the notebooks live in ``root/``."""
    base = Path(tempfile.mkdtemp(prefix="gradlab-lab-"))
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def lab_root(lab_base):
    root = lab_base / "root"
    root.mkdir()
    return root


def start_lab(root: Path, base: Path, port: int | None = None):
    """Start JupyterLab on ``root`` as ``gradlab lab`` does, plus galata's test hooks; returns (process, URL).

    ``base`` holds this server's config, notary (``base/jupyter-data``), empty user settings and log
    (``base/server.log``, appended to, so a restarted server keeps one log).
    """
    from gradlab import lab
    port = port or _free_port()
    cfg = base / "config.py"
    cfg.write_text(
        "from jupyterlab.galata import configure_jupyter_server\n"
        "configure_jupyter_server(c)\n"
        "c.ServerApp.ip = '127.0.0.1'\n"
        f"c.LabApp.workspaces_dir = {str(base / 'workspaces')!r}\n"
        "c.ServerApp.open_browser = False\n"
    )
    lab.install_lab_settings()          # what `gradlab lab` writes: JupyterLab's defaults, in this environment
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env["JUPYTER_CONFIG_DIR"] = str(base / "jupyter-config")
    env["JUPYTER_DATA_DIR"] = str(base / "jupyter-data")      # its own notary (trust) database
    env["JUPYTERLAB_SETTINGS_DIR"] = str(base / "user-settings")   # empty: a student's fresh machine
    env.pop("JUPYTER_TOKEN", None)
    cmd = lab.lab_command(root, port, [f"--config={cfg}", "--no-browser"], open_file=None)
    log = open(base / "server.log", "a")
    proc = subprocess.Popen(cmd, cwd=str(root), env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    log.close()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        if proc.poll() is not None:
            pytest.fail("JupyterLab exited at start:\n" + (base / "server.log").read_text()[-3000:], pytrace=False)
        try:
            with urllib.request.urlopen(url + "/api/status", timeout=2) as r:
                if r.status == 200:
                    return proc, url
        except OSError:
            pass
        if time.monotonic() > deadline:
            stop_lab(proc)
            pytest.fail("JupyterLab did not answer within 90 s:\n" + (base / "server.log").read_text()[-3000:],
                        pytrace=False)
        time.sleep(0.3)


def stop_lab(proc) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=15)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture(scope="session")
def lab_server(browser_requirements, lab_root):
    """A running JupyterLab on 127.0.0.1 (see :func:`start_lab`); yields its base URL."""
    proc, url = start_lab(lab_root, lab_root.parent)
    try:
        yield url
    finally:
        stop_lab(proc)


@pytest.fixture(scope="session")
def browser(browser_requirements):
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=browser_requirements, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


def notary_for(lab_root):
    """The trust database the test server reads (what ``gradlab lab`` signs into, for this server)."""
    from nbformat.sign import NotebookNotary
    return NotebookNotary(data_dir=str(lab_root.parent / "jupyter-data"))


def write_notebook(path: Path, cells: list[str]) -> Path:
    """A notebook with a kernelspec (without it JupyterLab stops at a kernel picker)."""
    nb = {
        "cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                   "source": src} for src in cells],
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4, "nbformat_minor": 5,
    }
    path.write_text(json.dumps(nb, indent=1))
    return path


_workspace_ids = itertools.count()


class LabPage:
    """A Playwright page on a notebook in JupyterLab, collecting console errors."""

    def __init__(self, page, url):
        self.page = page
        self.url = url
        self.console_errors: list[str] = []
        page.on("console", lambda m: m.type == "error" and self.console_errors.append(m.text))
        page.on("pageerror", lambda e: self.console_errors.append(f"pageerror: {e}"))

    def open(self, name: str, timeout=90_000):
        """Open notebook ``name`` in a fresh workspace (nothing else open) and wait for its kernel."""
        self.name = name
        ws = f"t{next(_workspace_ids)}"
        self.page.goto(f"{self.url}/lab/workspaces/{ws}/tree/{name}?reset", timeout=timeout)
        self.page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell", timeout=timeout)
        self.page.wait_for_function(
            """(name) => { const w = window.jupyterapp.shell.currentWidget;
                       return w && w.context && w.context.path === name && w.sessionContext &&
                              w.sessionContext.session && w.sessionContext.session.kernel &&
                              w.sessionContext.session.kernel.status === 'idle'; }""",
            arg=name, timeout=timeout)

    def run_all(self, timeout=120_000):
        self.page.evaluate(
            """(name) => { const w = window.jupyterapp.shell.currentWidget;
                           if (!w || w.context.path !== name) throw new Error('the current tab is not ' + name);
                           return window.jupyterapp.commands.execute('notebook:run-all-cells'); }""", self.name)
        # every code cell ran (or one failed, which stops run-all) and the kernel is idle again
        try:
            self.page.wait_for_function(
                """() => { const w = window.jupyterapp.shell.currentWidget;
                           const cells = w.content.widgets.filter(c => c.model.type === 'code');
                           const failed = cells.some(c => c.model.outputs.toJSON().some(o => o.output_type === 'error'));
                           return (failed || cells.every(c => c.model.executionCount !== null)) &&
                                  w.sessionContext.session.kernel.status === 'idle'; }""",
                timeout=timeout)
        except Exception:
            self.screenshot("run_all_timeout.png")
            raise

    def cell_errors(self) -> list[str]:
        """Error outputs (tracebacks) of the notebook's cells, as text."""
        return self.page.evaluate(
            """() => { const w = window.jupyterapp.shell.currentWidget; const out = [];
                       for (const c of w.content.widgets) { if (c.model.type !== 'code') continue;
                         const o = c.model.outputs.toJSON();
                         for (const x of o) if (x.output_type === 'error') out.push(x.ename + ': ' + x.evalue); }
                       return out; }""")

    def save(self, timeout=30_000):
        """Save the notebook through JupyterLab (as a student's Ctrl+S would)."""
        self.page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
        self.page.wait_for_function(
            "() => { const w = window.jupyterapp.shell.currentWidget; return w && !w.context.model.dirty; }",
            timeout=timeout)

    def screenshot(self, name: str, locator=None) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / name
        (locator or self.page).screenshot(path=str(path))
        return path


@pytest.fixture
def lab_page(browser, lab_server):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = ctx.new_page()
    page.set_default_timeout(60_000)
    lp = LabPage(page, lab_server)
    yield lp
    ctx.close()


def run_recording_notebook(browser, lab_server, lab_root, name, cells, recorded, timeout):
    """Write ``cells`` as ``name`` in the lab, open it, run it all, wait for its first two graph widgets and
    read back the JSON files its cells recorded (``recorded``: {key: file name}) as ``lp.recorded``.
    Returns ``(ctx, lp)``: the caller closes ``ctx`` when done (the notebook fixtures of the widget tests)."""
    write_notebook(lab_root / name, cells)
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = ctx.new_page()
    page.set_default_timeout(60_000)
    lp = LabPage(page, lab_server)
    lp.open(name)
    lp.run_all(timeout=timeout)
    assert lp.cell_errors() == [], f"the notebook raised: {lp.cell_errors()}"
    roots = page.locator(".gl-root")
    for i in range(2):
        roots.nth(i).locator(".gl-graph svg").wait_for(state="attached", timeout=60_000)
    lp.recorded = {k: json.loads((lab_root / f).read_text()) for k, f in recorded.items()}
    return ctx, lp
