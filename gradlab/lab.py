"""``gradlab lab`` (also ``python -m gradlab lab`` and ``make lab``): open the course in JupyterLab.

What it does, the same on Linux, macOS and Windows:

* roots JupyterLab at the repository (so ``notebooks/``, ``exercises/`` and the
  README are all in reach) and opens ``notebooks/00_welcome.ipynb``;
* marks the shipped notebooks trusted (as ``jupyter trust`` does): the ones in
  ``notebooks/`` and ``exercises/`` that are unchanged since the last commit
  (all of them outside a git checkout), so their stored graphs render on first
  open instead of showing as text;
* keeps a trusted notebook trusted when JupyterLab saves it (``pre_save_hook``
  below): JupyterLab 4 does not send the cells' trust back with a save, so
  without the hook an autosaved notebook reopens untrusted;
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

TRUSTED_DIRS = ("notebooks", "exercises")
WELCOME = "notebooks/00_welcome.ipynb"


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


def _git(root, *args):
    try:
        r = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout if r.returncode == 0 else None


def shipped_notebooks(root) -> list[Path]:
    """The course's notebooks as shipped: in git, those unchanged since HEAD; outside git, all of them."""
    root = Path(root)
    all_nbs = sorted(p for d in TRUSTED_DIRS for p in (root / d).glob("*.ipynb"))
    tracked = _git(root, "ls-files", "--", *TRUSTED_DIRS)
    if tracked is None:
        return all_nbs
    tracked = {root / p for p in tracked.splitlines()}
    changed = _git(root, "diff", "--name-only", "HEAD", "--", *TRUSTED_DIRS) or ""
    changed = {root / p for p in changed.splitlines()}
    return [p for p in all_nbs if p in tracked and p not in changed]


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


# ----------------------------------------------------------------- server
def find_root(start=None) -> Path:
    """The course folder: ``start`` (or the current folder) or the nearest parent with ``notebooks/``;
    else the checkout this gradlab was imported from."""
    here = Path(start or os.getcwd()).resolve()
    for d in (here, *here.parents):
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
    """The ``jupyter lab`` command line ``gradlab lab`` runs (a list)."""
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


def main(argv=None) -> int:
    import argparse
    p = argparse.ArgumentParser(prog="gradlab lab", description=(
        "Open the gradlab course in JupyterLab, rooted at the course folder (notebooks/, exercises/, README). "
        "Other flags go to jupyter lab (e.g. --no-browser, --ip=0.0.0.0)."))
    p.add_argument("--port", type=int, default=None, help="port to serve on (default: the first free from 8888)")
    p.add_argument("--root", default=None, help="the course folder (default: found from the current folder)")
    p.add_argument("--no-trust", action="store_true", help="do not mark the shipped notebooks trusted")
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
    if not args.no_trust:
        n = trust_notebooks(shipped_notebooks(root))
        print(f"gradlab lab: {n} shipped notebook{'s' if n != 1 else ''} marked trusted "
              "(their stored graphs show on open)")
    cmd = lab_command(root, port, extra, token)
    url = url_of(port, token, extra, root=root)
    if args.dry_run:
        print(" ".join(cmd))
        print(url)
        return 0
    env = dict(os.environ, JUPYTER_TOKEN=token)
    print(f"gradlab lab: the course is at {root}\ngradlab lab: open {url}", flush=True)
    if is_root():
        print("gradlab lab: running as root, so JupyterLab gets --allow-root", flush=True)
    if os.name == "posix":      # become the server: Ctrl+C and signals reach JupyterLab directly
        os.chdir(root)
        os.execve(cmd[0], cmd, env)
    try:                        # pragma: no cover - Windows
        return subprocess.call(cmd, cwd=str(root), env=env)
    except KeyboardInterrupt:   # pragma: no cover
        return 130
