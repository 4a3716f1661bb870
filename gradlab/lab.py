"""``gradlab lab`` (also ``python -m gradlab lab`` and ``make lab``): open the course in JupyterLab.

What it does, the same on Linux, macOS and Windows:

* fills the student's workspace (``workspace/``, git-ignored, mirroring
  ``notebooks/`` and ``exercises/``; ``gradlab/course/workspace.py``) on first
  start, and at every later start adds new course material without touching a
  copy the student has edited;
* roots JupyterLab at the workspace and opens ``notebooks/00_welcome.ipynb``
  there: the student runs and saves their own copies, never a tracked file,
  and ``solutions/`` is not in the file browser;
* signs the copies that hold what gradlab wrote in the notary (as ``jupyter
  trust`` does), so their stored graphs render on first open instead of
  showing as text; ``pre_save_hook`` below keeps a trusted notebook trusted
  when JupyterLab saves it (JupyterLab 4 does not send the cells' trust back);
* writes the JupyterLab settings the course needs through JupyterLab's own
  mechanism for defaults (:func:`install_lab_settings`): widget state saved
  with the notebook, no news pop-up;
* passes ``--allow-root`` when run as root (containers, cloud VMs);
* takes ``--port`` (default: the first free port from 8888) and passes any
  other flags to ``jupyter lab`` (``gradlab lab --no-browser``);
* prints the URL to open, with its token.
"""
from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
from pathlib import Path

WELCOME = "notebooks/00_welcome.ipynb"   # relative to the workspace (the lab's root)

#: The JupyterLab settings the course needs, as defaults (a student's own settings still win):
#: - widget state is saved with the notebook, so a reopened notebook shows the live widget from its saved
#:   state (JupyterLab's default, False, saves the widget's output but not its model: after a restart it
#:   reads "Error displaying widget: model not found");
#: - no news pop-up and no update check (a course machine may be offline; a student should see the lesson).
LAB_SETTINGS = {
    "@jupyter-widgets/jupyterlab-manager:plugin": {"saveState": True},
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
}
SETTINGS_FILE = "gradlab.json"


# ------------------------------------------------------------------ trust
def _notary(contents_manager=None):
    if contents_manager is not None and getattr(contents_manager, "notary", None) is not None:
        return contents_manager.notary
    from nbformat.sign import NotebookNotary
    return NotebookNotary()


def _signed_on_disk(os_path, notary) -> bool:
    import nbformat
    try:
        nb = nbformat.read(os_path, as_version=4)
    except Exception:  # noqa: BLE001 - unreadable or not a notebook: not trusted
        return False
    return bool(notary.check_signature(nb))


def _has_outputs(content) -> bool:
    return any(c.get("outputs") for c in content.get("cells", ()) if c.get("cell_type") == "code")


def pre_save_hook(model, path, contents_manager, **kwargs):
    """Keep a trusted notebook trusted across a save (``ContentsManager.pre_save_hook``).

    Before the server writes a notebook it signs it only if every code cell is
    marked ``trusted``; JupyterLab 4 does not send that mark. So: when the copy
    on disk is signed (it was trusted, e.g. by ``gradlab lab`` or ``jupyter
    trust``, or by this hook at the previous save), or the notebook is new and
    has no outputs yet, mark the cells trusted so that the server signs the new
    content. An untrusted notebook (downloaded from somewhere, say) stays
    untrusted: trust is only ever carried forward, never invented.
    """
    if model.get("type") != "notebook" or not isinstance(model.get("content"), dict):
        return
    content = model["content"]
    try:
        os_path = contents_manager._get_os_path(path.strip("/"))
    except Exception:  # noqa: BLE001 - a contents manager without files: leave it alone
        return
    notary = _notary(contents_manager)
    if os.path.exists(os_path):
        keep = _signed_on_disk(os_path, notary)
    else:
        keep = not _has_outputs(content)
    if keep:
        for cell in content.get("cells", ()):
            if cell.get("cell_type") == "code":
                cell.setdefault("metadata", {})["trusted"] = True


def trust_notebooks(paths, notary=None) -> int:
    """Sign ``paths`` in the notary database (``jupyter trust``); returns how many were signed."""
    import nbformat
    notary = notary or _notary()
    n = 0
    for p in paths:
        try:
            nb = nbformat.read(str(p), as_version=4)
        except Exception as exc:  # noqa: BLE001 - one bad file must not stop the lab
            print(f"gradlab lab: could not read {p} to trust it: {exc}", file=sys.stderr)
            continue
        if not notary.check_signature(nb):
            notary.sign(nb)
        n += 1
    return n


# --------------------------------------------------------------- settings
def lab_settings_dir() -> Path:
    """JupyterLab's application settings folder: ``{sys.prefix}/share/jupyter/lab/settings`` (or under
    ``$JUPYTERLAB_DIR``), found the way JupyterLab finds it."""
    try:
        from jupyterlab.commands import get_app_dir
        return Path(get_app_dir()) / "settings"
    except ImportError:
        return Path(sys.prefix) / "share" / "jupyter" / "lab" / "settings"


def install_lab_settings(settings_dir=None) -> Path | None:
    """Write :data:`LAB_SETTINGS` as ``overrides.d/gradlab.json`` in JupyterLab's settings folder.

    Why there: JupyterLab reads its defaults from ``{settings}/overrides.d/*.json``
    (one file per package) and then ``{settings}/overrides.json`` (the person's
    own, which wins). A file of our own in the environment (a) never edits or
    clobbers anyone's ``overrides.json``, (b) changes defaults, not the
    student's settings, and not for other environments (nothing in the home
    folder), and (c) is rewritten at every start, so it also reaches venvs made
    before it existed and editable installs (which need not install data
    files). Returns the file, or None (with a warning) when the folder is not
    writable: the lab still starts, without saved widget state.
    """
    import json
    d = Path(settings_dir) if settings_dir is not None else lab_settings_dir()
    path = d / "overrides.d" / SETTINGS_FILE
    text = json.dumps(LAB_SETTINGS, indent=2, sort_keys=True) + "\n"
    try:
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            return path
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{SETTINGS_FILE}.{os.getpid()}.tmp")   # two labs starting at once: no clash
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        print(f"gradlab lab: could not write JupyterLab's defaults to {path} ({exc.strerror}); widgets will not "
              "keep their state when a notebook is saved. Set 'saveState' under Settings > Widgets instead.",
              file=sys.stderr)
        return None
    return path


# ----------------------------------------------------------------- server
def find_root(start=None) -> Path:
    """The course folder: ``start`` (or the current folder) or the nearest parent with ``notebooks/``
    (a workspace, which mirrors it, is skipped); else the checkout this gradlab was imported from."""
    from .course.written import MANIFEST_NAME
    here = Path(start or os.getcwd()).resolve()
    for d in (here, *here.parents):
        if (d / MANIFEST_NAME).is_file():   # a workspace mirrors notebooks/ and exercises/: the course is above
            continue
        if (d / "notebooks").is_dir() and ((d / "exercises").is_dir() or (d / "pyproject.toml").is_file()):
            return d
    src = Path(__file__).resolve().parents[1]
    if (src / "notebooks").is_dir():
        return src
    return here


def _port_free(port: int, host="127.0.0.1") -> bool:
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def pick_port(start=8888, tries=50) -> int:
    for p in range(start, start + tries):
        if _port_free(p):
            return p
    return start


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def lab_command(root, port, extra=(), token="", open_file=WELCOME):
    """The ``jupyter lab`` command line ``gradlab lab`` runs (a list); ``root`` is the folder it serves
    (the workspace)."""
    root = Path(root)
    cmd = [sys.executable, "-m", "jupyterlab",
           f"--ServerApp.root_dir={root}",
           f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
           "--ContentsManager.pre_save_hook=gradlab.lab.pre_save_hook"]
    if is_root():
        cmd.append("--allow-root")
    cmd += list(extra)
    if open_file and (root / open_file).is_file():
        cmd.append(str(root / open_file))
    return cmd


def url_of(port, token, extra=(), open_file=WELCOME, root=None) -> str:
    host = "localhost"
    for a in extra:
        if a.startswith(("--ip=", "--ServerApp.ip=")):
            v = a.split("=", 1)[1]
            host = v if v not in ("", "0.0.0.0", "*", "::") else "localhost"
    path = f"/lab/tree/{open_file}" if open_file and (root is None or (Path(root) / open_file).is_file()) else "/lab"
    return f"http://{host}:{port}{path}" + (f"?token={token}" if token else "")


def prepare(root, notary=None, quiet=False) -> Path:
    """Everything ``gradlab lab`` does before the server starts; returns the workspace (the lab's root).

    Fills/merges the workspace, signs the copies gradlab wrote, writes the
    JupyterLab defaults. ``notary``: the trust database (default: the user's).
    """
    from .course import workspace
    root = Path(root).resolve()
    rep = workspace.sync(root)
    n = trust_notebooks(rep.as_written, notary)
    install_lab_settings()
    if not quiet:
        ws = workspace.workspace_dir(root)
        for line in rep.lines():
            print(f"gradlab lab: {line}")
        print(f"gradlab lab: your copies are in {ws} ({n} as shipped, marked trusted so their stored graphs show)")
    return workspace.workspace_dir(root)


def main(argv=None) -> int:
    import argparse
    p = argparse.ArgumentParser(prog="gradlab lab", description=(
        "Open the gradlab course in JupyterLab, on your own copies in workspace/ (filled on first start; later "
        "starts add new course material and never change a copy you edited). "
        "Other flags go to jupyter lab (e.g. --no-browser, --ip=0.0.0.0)."))
    p.add_argument("--port", type=int, default=None, help="port to serve on (default: the first free from 8888)")
    p.add_argument("--root", default=None, help="the course folder (default: found from the current folder)")
    p.add_argument("--dry-run", action="store_true", help="print the jupyter lab command and exit")
    args, extra = p.parse_known_args(argv)
    extra = [a for a in extra if a != "--"]
    root = find_root(args.root)
    try:
        import jupyterlab  # noqa: F401
    except ImportError:
        print("gradlab lab: JupyterLab is not installed here; install it with: "
              "python -m pip install -e '.[lab]'  (or: make lab)", file=sys.stderr)
        return 2
    port = args.port if args.port else pick_port()
    if args.port and not _port_free(args.port):
        print(f"gradlab lab: port {args.port} is already in use; pick another with --port (make lab PORT=...)",
              file=sys.stderr)
        return 2
    token = os.environ.get("JUPYTER_TOKEN")
    if token is None:
        token = secrets.token_hex(24)
    if args.dry_run:            # nothing written: the command and URL the lab would use
        from .course.workspace import workspace_dir
        ws = workspace_dir(root)
    else:
        ws = prepare(root)
    cmd = lab_command(ws, port, extra, token)
    url = url_of(port, token, extra, root=ws)
    if args.dry_run:
        print(" ".join(cmd))
        print(url)
        return 0
    env = dict(os.environ, JUPYTER_TOKEN=token)
    print(f"gradlab lab: the course is at {root}\ngradlab lab: open {url}", flush=True)
    if is_root():
        print("gradlab lab: running as root, so JupyterLab gets --allow-root", flush=True)
    if os.name == "posix":      # become the server: Ctrl+C and signals reach JupyterLab directly
        os.chdir(ws)
        os.execve(cmd[0], cmd, env)
    try:                        # pragma: no cover - Windows
        return subprocess.call(cmd, cwd=str(ws), env=env)
    except KeyboardInterrupt:   # pragma: no cover
        return 130
