"""A small pytest plugin loaded next to nbval when ``gradlab grade`` runs notebooks.

nbval runs every code cell as one pytest item in one fresh kernel per notebook.
This plugin only *observes*: for each cell it records which graded part it is
(the ``gradlab`` cell metadata written by the assembler), whether it passed,
a one-line reason when it did not (the assertion's message, a timeout, a
dead kernel), and the ``check`` records and tamper-probe findings the cell
displayed, into a JSON-lines file read back by the grader. The plugin runs in
the grader's pytest process, outside the kernel's sandbox: the kernel can
neither see nor write that file (see ``sandbox.py``). It also makes
nbval notice a crashed kernel at once instead of waiting for the cell timeout.
"""
from __future__ import annotations

import json
import re
import sys
import time
from queue import Empty

import pytest

from .graded import WHERE_MIME

# jsonschema (under nbformat) imports rfc3987_syntax when present, which builds a grammar on
# import (seconds of start-up per process) for IRI formats no notebook uses: skip it here.
if "rfc3987_syntax" not in sys.modules:
    sys.modules["rfc3987_syntax"] = None

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_ARROW = re.compile(r"^\s*-+>\s*\d+\s(.*)$")   # IPython's "---> 12 code" (dashes pad the number)
MAX_MESSAGE = 400


def _patch_kernel():
    """Poll the kernel in short slices so a dead kernel is reported in about a second."""
    from nbval.kernel import RunningKernel
    if getattr(RunningKernel, "_gradlab_patched", False):
        return
    orig = RunningKernel.get_message

    def get_message(self, stream, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = 0.5 if deadline is None else max(0.0, min(0.5, deadline - time.monotonic()))
            try:
                return orig(self, stream, timeout=left)
            except Empty:
                if not self.is_alive():
                    self._gradlab_dead = True
                    raise
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    RunningKernel.get_message = get_message
    RunningKernel._gradlab_patched = True


def pytest_addoption(parser):
    parser.addoption("--gradlab-results", default=None, help="gradlab grade: JSON-lines file for per-cell results")


def pytest_configure(config):
    _patch_kernel()


def _short(text: str, limit: int = MAX_MESSAGE) -> str:
    text = " ".join(_ANSI.sub("", str(text)).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _failing_line(traceback_lines):
    """The line of the cell that raised (IPython marks it with '---->')."""
    for frame in traceback_lines or ():
        for line in _ANSI.sub("", frame).split("\n"):
            m = _ARROW.match(line)
            if m:
                return m.group(1).strip()
    return ""


def _message(item, call):
    exc = call.excinfo.value
    text = str(exc)
    if isinstance(exc, RuntimeError) and "Kernel dead" in text:
        return "not-run", "not run: the kernel died in an earlier cell"
    kernel = getattr(item.parent, "kernel", None)
    if kernel is not None and getattr(kernel, "_gradlab_dead", False):
        return "crash", "the kernel died while running this cell (os._exit, a segfault or out of memory?)"
    err = next((o for o in (getattr(item, "test_outputs", None) or ()) if o.get("output_type") == "error"), None)
    if "Timeout" in text:
        return "timeout", f"timed out after {item.config.option.nbval_cell_timeout:g} s (an infinite loop?)"
    if err is not None:
        ename, evalue = err.get("ename", "Error"), err.get("evalue", "")
        line = _failing_line(err.get("traceback"))
        msg = f"{ename}: {evalue}" if evalue else ename
        graded = item.cell.metadata.get("gradlab", {}).get("kind") == "test"
        if not evalue and line and not graded:   # (a graded cell's lines are the instructor's, maybe hidden)
            msg += f" at `{line}`"
        return "error", _short(msg)
    return "error", _short(text or type(exc).__name__)


CHECK_MIME = "application/vnd.gradlab.check+json"
PROBE_MIME = "application/vnd.gradlab.probe+json"
MAX_RECORDS = 2000


def _records(outputs):
    """The check records, tamper-probe findings and the frames of an exception's way through the notebook's
    cells (``graded.py``) that a cell displayed, in order (plain JSON, nothing run)."""
    records, probe, where = [], [], []
    for out in outputs:
        data = out.get("data") if out.get("output_type") in ("display_data", "execute_result") else None
        if not isinstance(data, dict):
            continue
        rec = data.get(CHECK_MIME)
        if isinstance(rec, dict) and len(records) < MAX_RECORDS:
            records.append(rec)
        found = data.get(PROBE_MIME)
        if isinstance(found, dict):
            probe.append(found)
        frames = data.get(WHERE_MIME)
        if isinstance(frames, dict) and isinstance(frames.get("frames"), list) and not where:
            where = frames["frames"][:8]
    return records, probe, where


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if not hasattr(item, "cell") or call.when == "teardown":
        return
    if call.when == "setup" and not rep.failed:
        return
    info = dict(item.cell.metadata.get("gradlab", {}))
    info["cell"] = item.cell_num
    info["after_timeout"] = bool(getattr(item.parent, "timed_out", False))
    if call.excinfo is None:
        info["status"], info["message"] = "ok", ""
    elif call.when == "setup":
        info["status"], info["message"] = "no-kernel", _short(f"the kernel did not start: {call.excinfo.value}")
    else:
        info["status"], info["message"] = _message(item, call)
    info["duration"] = round(call.stop - call.start, 3)
    if call.when == "call":
        info["records"], info["probe"], info["where"] = _records(getattr(item, "test_outputs", None) or ())
    rep.user_properties.append(("gradlab", json.dumps(info)))
    item.test_outputs = None  # do not keep megabytes of printed output around


def pytest_runtest_logreport(report):
    for key, value in getattr(report, "user_properties", ()):
        if key == "gradlab":
            _write(report, value)


_RESULTS = {"path": None, "worker": False}


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session):
    _RESULTS["path"] = session.config.getoption("--gradlab-results")
    _RESULTS["worker"] = hasattr(session.config, "workerinput")


def _write(report, value):
    if _RESULTS["worker"] or not _RESULTS["path"]:
        return
    rec = json.loads(value)
    rec["file"] = report.nodeid.split("::")[0]
    if rec["status"] == "ok" and not report.passed:
        rec["status"] = "error"
    with open(_RESULTS["path"], "a", encoding="utf-8") as f:
        f.write(json.dumps(rec) + "\n")
