"""The tamper probe: what a submission changed in its kernel that it should not have.

``gradlab grade`` runs ``report(where)`` in the student's kernel before every
graded cell and at the end. It looks for the usual ways of faking a result --
NumPy/builtins/gradlab functions replaced since ``snapshot()`` (taken in the
first cell, before any student code), IPython AST or input transformers,
a custom exception handler, a tracing hook, replaced ``check`` -- and for
writes outside the working folder that the sandbox's audit hook saw, and
displays what it found as one record (MIME ``application/vnd.gradlab.probe+json``).

The probe runs where the student's code runs, so a determined student can hide
from it: its findings are *evidence* for the report, never a verdict. Verdicts
come from comparing ``check`` records outside the kernel (``grading.py``).

Functions: ``snapshot()``, ``findings()`` (the list of strings), ``report(where)`` (display them).
"""
from __future__ import annotations

import os
import sys
import types

MIME = "application/vnd.gradlab.probe+json"

_WATCHED = ("builtins", "numpy", "numpy.testing", "numpy.linalg", "math")
_SNAPSHOT: dict = {}
# builtins the kernel itself swaps in and out around every execution (ipykernel's input, IPython's traps)
_KERNEL_BUILTINS = {"input", "raw_input", "getpass", "_", "__", "___", "exit", "quit", "get_ipython", "display",
                    "help"}
_SPECIAL = {"__name__", "__doc__", "__file__", "__loader__", "__spec__", "__package__", "__cached__",
            "__builtins__", "__path__", "__dict__", "__weakref__", "__annotations__", "__warningregistry__"}


def _same(a, b):
    """Values that are data, not patches (module-level counters, caches, registries, settings)."""
    if type(a) is type(b) and isinstance(a, (int, float, str, bytes, bool, tuple, frozenset, dict, list, set)):
        return True
    return False


def _modules():
    names = set(_WATCHED)
    names.update(m for m in list(sys.modules) if m == "gradlab" or m.startswith("gradlab."))
    names.discard("gradlab.course.sandbox")
    names.discard("gradlab.course.probe")
    return {n: sys.modules[n] for n in sorted(names) if isinstance(sys.modules.get(n), types.ModuleType)}


def snapshot():
    """Remember every watched module's attributes (and Tensor's), before any student code runs.

    ``gradlab grade`` calls this in the first cell of every assembled notebook.
    """
    import importlib

    import numpy  # noqa: F401  (the libraries a check leans on, loaded before the student's code)
    import numpy.testing  # noqa: F401
    for name in ("gradlab", "gradlab.nn", "gradlab.nn.functional", "gradlab.optim", "gradlab.autograd",
                 "gradlab.course.checks"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    _SNAPSHOT.clear()
    for name, mod in _modules().items():
        _SNAPSHOT[name] = (mod, dict(vars(mod)))
    tensor = getattr(sys.modules.get("gradlab"), "Tensor", None)
    if isinstance(tensor, type):
        _SNAPSHOT["gradlab.Tensor"] = (tensor, dict(vars(tensor)))
    sbx = sys.modules.get("gradlab.course.sandbox")
    if sbx is not None and hasattr(sbx, "arm"):
        sbx.arm()   # from here on, the sandbox's audit hook notes what the code does


def findings():
    """What looks tampered with in this process since ``snapshot()`` (strings, for the report)."""
    if not _SNAPSHOT:
        return ["the tamper probe had no snapshot to compare with (its first cell was changed?)"]
    out = []
    for label, (obj, before) in _SNAPSHOT.items():
        if label != "gradlab.Tensor" and sys.modules.get(label) is not obj:
            out.append(f"sys.modules['{label}'] was replaced")
        now = vars(obj)
        for name, value in before.items():
            if name in _SPECIAL or (label == "builtins" and name in _KERNEL_BUILTINS):
                continue
            if name not in now:
                out.append(f"{label}.{name} was deleted")
            elif now[name] is not value and not _same(now[name], value) and not (
                    isinstance(now[name], types.ModuleType) and now[name].__name__ == f"{label}.{name}"):
                # (importing a submodule sets it as an attribute of its package: not a patch)
                out.append(f"{label}.{name} was replaced")
    try:
        from IPython import get_ipython
        ip = get_ipython()
    except ImportError:
        ip = None
    if ip is not None:
        if getattr(ip, "ast_transformers", None):
            out.append(f"an IPython AST transformer was installed ({type(ip.ast_transformers[0]).__name__})")
        post = [t for t in getattr(ip, "input_transformers_post", ()) if
                not (getattr(t, "__module__", "") or "").startswith("IPython")]
        if post:
            out.append("an IPython input transformer was installed")
        cleanup = [t for t in getattr(ip, "input_transformers_cleanup", ()) if
                   not (getattr(t, "__module__", "") or "").startswith("IPython")]
        if cleanup:
            out.append("an IPython input-cleanup transformer was installed")
        if getattr(ip, "custom_exceptions", ()):
            out.append("a custom exception handler was installed (set_custom_exc)")
        events = getattr(ip, "events", None)
        for ev, cbs in (getattr(events, "callbacks", {}) or {}).items():
            for cb in cbs:
                mod = getattr(cb, "__module__", "") or ""
                if not mod.startswith(("IPython", "ipykernel", "matplotlib", "matplotlib_inline")):
                    out.append(f"an IPython '{ev}' event callback was registered")
                    break
    if sys.gettrace() is not None and "pydevd" not in type(sys.gettrace()).__module__:
        out.append("a tracing function was installed (sys.settrace)")
    if sys.getprofile() is not None:
        out.append("a profiling hook was installed (sys.setprofile)")
    sbx = sys.modules.get("gradlab.course.sandbox")
    for event, detail in list(getattr(sbx, "WRITE_LOG", ()) or ())[:30]:
        out.append(_AUDIT_WORDS.get(event, "tried to write outside its folder: {event} {detail}").format(
            event=event, detail=detail))
    return sorted(set(out))


# how the sandbox's audit findings read in the report (anything else is a write outside the folder)
_AUDIT_WORDS = {
    "read": "read {detail} (a notebook, results or kernel file)",
    "ran a program": "ran a program: {detail}",
    "socket connect": "connected a socket to {detail} (another kernel?)",
    "socket bind": "bound a socket to {detail}",
    "native call": "looked up {detail}() in the C library (to change mounts or namespaces?)",
}


def report(where: str):
    """Display this kernel's findings as one probe record (read by the grader's nbval plugin)."""
    from IPython.display import display
    display({MIME: {"where": str(where), "findings": findings(),
                    "sandbox": os.environ.get("GRADLAB_SANDBOX", "")}}, raw=True)
