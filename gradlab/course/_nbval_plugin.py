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

Holds ``launcher_status(kernel)`` (what the sandbox launcher wrote when a kernel ended) and the pytest
hooks: ``pytest_addoption`` / ``pytest_configure`` (the results file, the sandbox plan, the limits),
``pytest_sessionstart``, ``pytest_runtest_makereport`` (one record per cell) and
``pytest_runtest_logreport`` (written to the results file).
"""
from __future__ import annotations

import json
import re
import sys
import time
from queue import Empty

import pytest

from .graded import WHERE_MIME
from .runner import GRACE_S
from .sandbox import launcher_argv

# jsonschema (under nbformat) imports rfc3987_syntax when present, which builds a grammar on
# import (seconds of start-up per process) for IRI formats no notebook uses: skip it here.
if "rfc3987_syntax" not in sys.modules:
    sys.modules["rfc3987_syntax"] = None

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_ARROW = re.compile(r"^\s*-+>\s*\d+\s(.*)$")   # IPython's "---> 12 code" (dashes pad the number)
MAX_MESSAGE = 400


class _Spec:
    """What the sandboxed kernels of this run get (set from the command line in ``pytest_configure``)."""
    plan = None          # the sandbox plan file (``sandbox.plan``), or None: kernels run unsandboxed
    channels = None      # the folder under which each kernel gets its private channels folder
    timeout = 60.0       # nbval's cell timeout
    grace = GRACE_S      # how long an interrupted cell may take to stop before its kernel is killed
    output = 64 << 20    # bytes a kernel may print, all cells together (the runner passes Limits.output_mb)


def _spec_manager():
    """A kernelspec manager that knows one kernel, held in memory: the sandbox launcher.

    No ``kernel.json`` on disk: nothing a kernel writes can change how the next one is started.
    """
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager

    class SandboxSpecs(KernelSpecManager):
        def get_kernel_spec(self, kernel_name):
            return KernelSpec(argv=[*launcher_argv(), _Spec.plan, "--", "-f", "{connection_file}"],
                              display_name="gradlab grading sandbox",
                              language="python", interrupt_mode="message", env={}, resource_dir="")
    return SandboxSpecs()


def _start_sandboxed(self, kernel_name, cwd=None, startup_timeout=60):
    """``RunningKernel.__init__`` for sandboxed kernels: channels over unix sockets in a private folder.

    jupyter_client would put the connection file (with its key) in a shared runtime folder and the
    sockets on loopback TCP; here both live in ``CHANNELS/kNNN/c/``, which only this kernel's
    sandbox mounts. The launcher's ``status.json`` lands in ``kNNN/``, out of the kernel's sight.
    """
    import os
    import tempfile

    from jupyter_client.manager import KernelManager
    self._gradlab_home = tempfile.mkdtemp(prefix="k", dir=_Spec.channels)
    chan = os.path.join(self._gradlab_home, "c")
    os.mkdir(chan, 0o700)
    km = KernelManager(kernel_name="gradlab-sandbox", kernel_spec_manager=_spec_manager(), transport="ipc",
                       ip=os.path.join(chan, "k"), connection_file=os.path.join(chan, "kernel.json"))
    km.start_kernel(stderr=open(os.devnull, "w"), cwd=self._gradlab_home)
    # a message larger than the output cap is refused by ZeroMQ (the connection dropped) before the grader
    # holds it in memory; the monitor tells us the kernel's output channel was dropped
    import zmq
    self._gradlab_context = zmq.Context()
    self._gradlab_context.setsockopt(zmq.MAXMSGSIZE, _Spec.output + (1 << 20))
    kc = km.client(context=self._gradlab_context)
    kc.start_channels()
    self._gradlab_monitor = kc.iopub_channel.socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)
    self.km, self.kc = km, kc
    try:
        kc.wait_for_ready(timeout=startup_timeout)
    except RuntimeError:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        raise
    self._ensure_iopub_up()


def launcher_status(kernel):
    """What the sandbox launcher wrote when this kernel ended ({} while it runs, or unsandboxed)."""
    import os
    home = getattr(kernel, "_gradlab_home", None)
    try:
        with open(os.path.join(home, "status.json"), encoding="utf-8") as f:
            doc = json.load(f)
        return doc if isinstance(doc, dict) else {}
    except (OSError, TypeError, ValueError):
        return {}


def _size(msg):
    """Roughly how many bytes an iopub message carries (what a cell printed or displayed)."""
    content = msg.get("content") or {}
    n = len(content.get("text") or "")
    for v in (content.get("data") or {}).values():
        n += len(v) if isinstance(v, (str, bytes)) else len(json.dumps(v))
    return n + sum(len(str(t)) for t in content.get("traceback") or ())


def _kill(kernel, why):
    """SIGKILL the kernel's whole process tree (the launcher's process group; the sandbox dies with it)."""
    import signal
    kernel._gradlab_killed = why
    try:
        kernel.km.signal_kernel(signal.SIGKILL)
    except Exception:   # (already gone)
        pass


def _patch_kernel():
    """Sandboxed start, a hard deadline and an output cap per cell, and a dead kernel noticed in a second.

    nbval interrupts a cell at its timeout and then reads outputs until the kernel is idle: a cell that
    ignores the interrupt and keeps printing would hold the batch for ever. Here, ``grace`` seconds after
    the timeout, or once the kernel has printed more than ``output`` bytes, its process tree is killed
    (SIGKILL, not SIGINT) and the cell fails with that reason.
    """
    from nbval.kernel import RunningKernel
    if getattr(RunningKernel, "_gradlab_patched", False):
        return
    orig_get, orig_init, orig_exec, orig_stop = (RunningKernel.get_message, RunningKernel.__init__,
                                                 RunningKernel.execute_cell_input, RunningKernel.stop)

    def __init__(self, kernel_name, cwd=None, startup_timeout=60):
        self._gradlab_printed, self._gradlab_deadline, self._gradlab_killed = 0, None, ""
        if _Spec.plan:
            _start_sandboxed(self, kernel_name, cwd=cwd, startup_timeout=startup_timeout)
        else:
            orig_init(self, kernel_name, cwd=cwd, startup_timeout=startup_timeout)

    def execute_cell_input(self, cell_input, allow_stdin=None):
        self._gradlab_deadline = time.monotonic() + _Spec.timeout + _Spec.grace
        self._gradlab_running = orig_exec(self, cell_input, allow_stdin=allow_stdin)
        return self._gradlab_running

    def stop(self):
        import shutil
        try:
            orig_stop(self)
        finally:
            context = getattr(self, "_gradlab_context", None)
            if context is not None:
                context.destroy(linger=0)
            home = getattr(self, "_gradlab_home", None)
            if home:
                self._gradlab_status = launcher_status(self)
                shutil.rmtree(home, ignore_errors=True)

    def get_message(self, stream, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        if self._gradlab_killed:
            raise Empty
        while True:
            now = time.monotonic()
            if self._gradlab_deadline is not None and now > self._gradlab_deadline:
                _kill(self, "timeout")
                raise Empty
            left = 0.5 if deadline is None else max(0.0, min(0.5, deadline - now))
            try:
                msg = orig_get(self, stream, timeout=left)
            except Empty:
                if not self.is_alive():
                    self._gradlab_dead = True
                    raise
                monitor = getattr(self, "_gradlab_monitor", None)
                if monitor is not None and monitor.poll(0):
                    # iopub was dropped: the kernel died (its launcher ends within a poll or two), or it sent
                    # one message larger than the output cap (it lives on)
                    end = time.monotonic() + 2.0
                    while self.is_alive() and time.monotonic() < end:
                        time.sleep(0.05)
                    if not self.is_alive():
                        self._gradlab_dead = True
                        raise
                    _kill(self, "output")
                    raise
                if deadline is not None and time.monotonic() >= deadline:
                    raise
                continue
            if stream == "iopub":
                self._gradlab_printed += _size(msg)
                if self._gradlab_printed > _Spec.output:
                    _kill(self, "output")
                    raise Empty
                if msg.get("msg_type") == "status" and (msg.get("content") or {}).get("execution_state") == "idle" \
                        and (msg.get("parent_header") or {}).get("msg_id") == getattr(self, "_gradlab_running", 0):
                    self._gradlab_deadline = None
            return msg

    RunningKernel.__init__ = __init__
    RunningKernel.execute_cell_input = execute_cell_input
    RunningKernel.stop = stop
    RunningKernel.get_message = get_message
    RunningKernel._gradlab_patched = True


def pytest_addoption(parser):
    parser.addoption("--gradlab-results", default=None, help="gradlab grade: JSON-lines file for per-cell results")
    parser.addoption("--gradlab-sandbox", default=None, help="gradlab grade: the sandbox plan (sandbox.plan)")
    parser.addoption("--gradlab-channels", default=None, help="gradlab grade: where each kernel's channels go")
    parser.addoption("--gradlab-output-mb", type=float, default=64, help="gradlab grade: output cap per kernel")


def pytest_configure(config):
    _Spec.plan = config.getoption("--gradlab-sandbox")
    _Spec.channels = config.getoption("--gradlab-channels")
    _Spec.output = int(config.getoption("--gradlab-output-mb") * 2**20)
    _Spec.timeout = float(config.getoption("--nbval-cell-timeout", 60) or 60)
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


def _death(kernel):
    """Why a dead kernel died, from what the grader did and what the sandbox launcher saw."""
    killed = getattr(kernel, "_gradlab_killed", "")
    if killed == "timeout":
        return "timeout", (f"still running {_Spec.grace:g} s after its {_Spec.timeout:g} s timeout and interrupt; "
                           "its kernel was killed")
    if killed == "output":
        return "output", f"printed more than {_Spec.output >> 20} MB; its kernel was killed"
    status = getattr(kernel, "_gradlab_status", None) or launcher_status(kernel)
    if status.get("killed"):
        return "limit", f"the kernel was killed: {status['killed']}"
    code = status.get("exit")
    if isinstance(code, int) and code > 128:
        return "crash", f"the kernel was killed by signal {code - 128} while running this cell (a segfault?)"
    if isinstance(code, int):
        return "exit", f"the kernel exited (code {code}) while running this cell (os._exit?)"
    return "crash", "the kernel died while running this cell (os._exit, a segfault or out of memory?)"


def _message(item, call):
    exc = call.excinfo.value
    text = str(exc)
    if isinstance(exc, RuntimeError) and "Kernel dead" in text:
        return "not-run", "not run: the kernel died in an earlier cell"
    kernel = getattr(item.parent, "kernel", None)
    if kernel is not None and (getattr(kernel, "_gradlab_dead", False) or getattr(kernel, "_gradlab_killed", "")):
        how, why = _death(kernel)
        return ("timeout" if how == "timeout" else "crash"), why
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


def _evidence(item):
    """For the tamper report: the exception a failed cell raised, and how its kernel ended if it did."""
    out = {}
    err = next((o for o in (getattr(item, "test_outputs", None) or ()) if o.get("output_type") == "error"), None)
    if err is not None:
        out["ename"] = str(err.get("ename", ""))[:100]
    kernel = getattr(item.parent, "kernel", None)
    if kernel is not None and (getattr(kernel, "_gradlab_dead", False) or getattr(kernel, "_gradlab_killed", "")):
        out["ended"] = _death(kernel)[0]
    return out


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
        info.update(_evidence(item))
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
