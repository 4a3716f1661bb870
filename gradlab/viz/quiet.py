"""Keep Graphviz's chatter on stderr out of notebooks.

The fontconfig bundled in the ``pygraphviz`` wheel prints a one-time
"Fontconfig warning" to file descriptor 2 the first time it loads fonts
(it reads the system's config, which may be newer than it understands).
Jupyter kernels forward fd 2 to the notebook as a red stderr stream, and
nbval compares stderr, so the warning must never get there. Redirecting
``sys.stderr`` is not enough: the C library writes to the descriptor itself.
"""
from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile


@contextlib.contextmanager
def quiet_stderr():
    """Send fd 2 (C-level stderr) and ``sys.stderr`` to a scratch file while Graphviz runs.

    Fontconfig's one-time warning is dropped; any other message is passed on
    to ``sys.stderr`` afterwards so that real problems are not hidden.
    """
    try:
        sys.stderr.flush()
    except Exception:  # pragma: no cover - a closed stderr
        pass
    saved = tmp = None
    try:
        tmp = tempfile.TemporaryFile()
        saved = os.dup(2)
        os.dup2(tmp.fileno(), 2)
    except OSError:  # pragma: no cover - no fd 2 at all
        saved = None
    py_err = io.StringIO()
    try:
        with contextlib.redirect_stderr(py_err):
            yield
    finally:
        text = ""
        if saved is not None:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            text = tmp.read().decode("utf-8", "replace")
        if tmp is not None:
            tmp.close()
        text += py_err.getvalue()
        rest = [ln for ln in text.splitlines()
                if ln.strip() and not ln.startswith("Fontconfig") and "layout may take a long time" not in ln]
        if rest:
            sys.stderr.write("\n".join(rest) + "\n")
