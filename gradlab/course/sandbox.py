"""The grading kernel's sandbox: Linux namespaces around one student's kernel.

``gradlab grade`` starts every submission's kernel through this module
(``python -m gradlab.course.sandbox CONFIG.json -- -f CONNECTION_FILE``). Before
any student code runs, it:

1. enters new **mount and PID namespaces** (and a user namespace when not run as
   root, so no privilege is needed);
2. **hides** the paths the grader names -- the instructor's solutions, every
   submission of the batch, the grader's own working folder with the results
   and the other kernels' connection files -- by mounting an empty, read-only
   tmpfs over each: they are simply not there for the kernel;
3. remounts the rest of the file system **read-only**, and gives the kernel a
   fresh, empty, writable working folder (a tmpfs; also its ``HOME`` and ``TMPDIR``);
4. mounts a fresh ``/proc``, so that no process outside the namespace (the
   grader, other students' kernels) can be seen, signalled or read;
5. installs an **audit hook** (``sys.addaudithook``, which Python code cannot
   remove) that notes attempts to write or delete files outside the working
   folder, for the tamper report.

What this does not do: stop a student from running arbitrary code *in their own
kernel*. That is not the goal: verdicts are computed outside the kernel (see
``checks.py`` and ``grade.py``), so such code can only change the student's own
numbers. The file-system view is what keeps other people's data out of reach.

If namespaces are not available (not Linux, or a container that forbids
them), ``available()`` says why and the grader runs unisolated kernels only
when told to (``--sandbox off``), noting it on every report.

Functions: ``available()``, ``main()`` (the launcher), ``WRITE_LOG`` (what the
audit hook saw, read by the tamper probe).
"""
from __future__ import annotations

import ctypes
import json
import os
import signal
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG = 1

def _new_workdir(root=None):
    """An empty folder made outside the namespace; inside, a fresh tmpfs covers it (the kernel's HOME/TMPDIR).

    It is made under ``root`` (the grader's folder for this batch's kernels, which the grader removes
    afterwards); the folder cannot remove itself, since the process that made it sits in the
    namespace where the tmpfs and a read-only root are mounted.
    """
    import tempfile
    return tempfile.mkdtemp(prefix="gradlab-kernel-", dir=root)
WRITE_LOG: list = []   # (event, path) the audit hook saw outside the working folder

_libc = None


def _lib():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    return _libc


def _check(rc, what):
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(src, target, fstype, flags, data=None):
    enc = lambda s: None if s is None else os.fsencode(s)  # noqa: E731
    _check(_lib().mount(enc(src), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


def _unshare():
    """Enter new mount + PID namespaces (with a user namespace when not root)."""
    flags = CLONE_NEWNS | CLONE_NEWPID
    uid, gid = os.getuid(), os.getgid()
    if uid != 0:
        flags |= CLONE_NEWUSER
    _check(_lib().unshare(flags), "unshare")
    if uid != 0:   # map ourselves to root inside, so that mount() is allowed there
        with open("/proc/self/setgroups", "w") as f:
            f.write("deny")
        with open("/proc/self/uid_map", "w") as f:
            f.write(f"0 {uid} 1")
        with open("/proc/self/gid_map", "w") as f:
            f.write(f"0 {gid} 1")


def available() -> str:
    """'' when the sandbox works on this machine, else the reason it does not (tried in a child process)."""
    if not sys.platform.startswith("linux"):
        return f"Linux namespaces are not available on {sys.platform}"
    import shutil
    import subprocess
    import tempfile
    root = tempfile.mkdtemp(prefix="gradlab-sbx-")   # holds the folder to hide and the working folder
    hidden = os.path.join(root, "hidden")
    os.mkdir(hidden)
    with open(os.path.join(hidden, "secret"), "w") as f:
        f.write("x")
    code = f"from gradlab.course import sandbox; sandbox._selftest({hidden!r})"
    try:
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"the sandbox self-test did not run: {e}"
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if p.returncode != 0 or p.stdout.strip() != "sandbox ok":
        lines = (p.stderr or p.stdout).strip().splitlines()
        return "the sandbox self-test failed: " + (lines[-1] if lines else f"exit code {p.returncode}")
    return ""


def _selftest(hidden):
    """In a throw-away process: can the sandbox hide ``hidden`` and give us our own process table?"""
    def probe():
        hid = os.path.exists(os.path.join(hidden, "secret"))
        try:
            open("/etc/gradlab-sandbox-probe", "w")
            ro = False
        except OSError:
            ro = True
        sys.exit(0 if not hid and os.getpid() <= 3 and ro else 3)

    status = _enter({"hide": [hidden], "workdir": _new_workdir(os.path.dirname(hidden))}, run=probe)
    if status == 0:
        print("sandbox ok")
    else:
        sys.exit(f"sandbox did not hide a path, isolate processes or make the file system read-only "
                 f"(status {status})")


def _mountpoints():
    """(mount point, per-mount options) from /proc/self/mountinfo, parents before children."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split()
            mp = parts[4].encode().decode("unicode_escape")
            out.append((mp, set(parts[5].split(","))))
    return out


def _setup_filesystem(cfg):
    """Runs as PID 1 of the new namespace, before the kernel: hide, remount read-only, fresh /tmp and /proc."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    work = cfg["workdir"]
    protections = []
    for path in cfg.get("hide", ()):
        if os.path.isdir(path):
            _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=000")
            _mount(None, path, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
        elif os.path.exists(path):   # a single file: bind an empty file over it
            _mount("/dev/null", path, None, MS_BIND)
    protections.append("hidden paths")
    ro_fail = []
    for mp, opts in _mountpoints():
        if mp == "/proc" or mp.startswith(("/proc/", "/sys", "/dev")) or "ro" in opts:
            continue
        if any(mp == h or mp.startswith(h.rstrip("/") + "/") for h in cfg.get("hide", ())):
            continue
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY
        flags |= (MS_NOSUID if "nosuid" in opts else 0) | (MS_NODEV if "nodev" in opts else 0)
        flags |= MS_NOEXEC if "noexec" in opts else 0
        try:
            _mount(None, mp, None, flags)
        except OSError:
            ro_fail.append(mp)
    if not ro_fail:
        protections.append("read-only file system")
    # the writable places: a fresh tmpfs on the kernel's own empty folder (also HOME and TMPDIR) and
    # /dev/shm. Not a tmpfs over all of /tmp: the interpreter, the venv or gradlab may live there.
    _mount("tmpfs", work, "tmpfs", MS_NOSUID | MS_NODEV, "size=512m,mode=700")
    if os.path.isdir("/dev/shm"):
        try:
            _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=1777")
        except OSError:
            pass
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    protections.append("own process table")
    return protections


def _audit(work):
    """An audit hook noting writes and deletions outside the working folder (it cannot be removed)."""
    prefix = os.path.realpath(work).rstrip("/") + "/"
    allowed = ("/dev/shm/", "/dev/null", "/dev/tty")   # (the working folder is checked by prefix)
    log = WRITE_LOG

    def hook(event, args):
        if event == "open":
            path, mode = args[0], args[1]
            if not isinstance(path, (str, bytes)) or not mode or not any(c in str(mode) for c in "wax+"):
                return
        elif event in ("os.remove", "os.rename", "os.rmdir", "os.mkdir", "shutil.rmtree", "os.truncate",
                       "os.chmod", "os.symlink", "os.link"):
            path = args[0]
            if not isinstance(path, (str, bytes)):
                return
        else:
            return
        p = os.fsdecode(path)
        full = p if os.path.isabs(p) else os.path.join(os.getcwd(), p)
        full = os.path.normpath(full)
        if not (full + "/").startswith(prefix) and not full.startswith(allowed) and len(log) < 100:
            log.append((event, full))

    sys.addaudithook(hook)


def _enter(cfg, run):
    """Unshare, fork PID 1 of the namespace, set up the file system there, fork ``run`` under it.

    Returns the exit status (in the caller, which stays outside the namespaces).
    """
    _unshare()
    pid = os.fork()
    if pid:   # outside: wait for the namespace's init, as the kernel's launcher expects of its child
        signal.signal(signal.SIGINT, signal.SIG_IGN)   # the kernel gets SIGINT itself (process group)
        signal.signal(signal.SIGTERM, lambda *a: os.kill(pid, signal.SIGKILL))
        while True:
            try:
                _, status = os.waitpid(pid, 0)
                return os.waitstatus_to_exitcode(status)
            except InterruptedError:
                continue
    # PID 1 of the new namespace: when it ends, every process in the namespace ends with it
    try:
        _lib().prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        protections = _setup_filesystem(cfg)
    except BaseException as e:   # no kernel without a sandbox
        print(f"gradlab sandbox: {e}", file=sys.stderr)
        os._exit(70)
    child = os.fork()
    if child == 0:
        try:
            os.chdir(cfg["workdir"])
            env = {k: v for k, v in os.environ.items() if k in _KEEP_ENV}
            env.update(HOME=cfg["workdir"], TMPDIR=cfg["workdir"], GRADLAB_SANDBOX=",".join(protections),
                       MPLCONFIGDIR=os.path.join(cfg["workdir"], ".matplotlib"),
                       IPYTHONDIR=os.path.join(cfg["workdir"], ".ipython"), PYTHONNOUSERSITE="1")
            os.environ.clear()
            os.environ.update(env)
            _audit(cfg["workdir"])
            run()
            os._exit(0)
        except SystemExit as e:
            os._exit(e.code if isinstance(e.code, int) else 1)
        except BaseException:   # the kernel itself failed to start
            import traceback
            traceback.print_exc()
            os._exit(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *a: os.kill(child, signal.SIGKILL))
    code = 1
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        if pid == child:
            code = os.waitstatus_to_exitcode(status)
            break
    os._exit(code if code >= 0 else 128 - code)


# what the kernel keeps of the grader's environment (everything else, e.g. tokens and paths, is dropped)
_KEEP_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "PYTHONHASHSEED", "MPLBACKEND", "OMP_NUM_THREADS",
             "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
             "GRADLAB_FAST", "PYTHONDONTWRITEBYTECODE", "VIRTUAL_ENV", "JPY_SESSION_NAME")


def _sanitize_path(work):
    """sys.path without the grader's folders: the working folder, the standard library, site-packages."""
    keep = []
    for p in sys.path:
        if p in ("", ".") or not os.path.isabs(p):
            continue
        keep.append(p)
    sys.path[:] = [work] + keep


def main(argv=None):
    """``python -m gradlab.course.sandbox CONFIG.json -- KERNEL-ARGS...``: start ipykernel in the sandbox."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # run as ``-m``, this module is __main__: make ``gradlab.course.sandbox`` name it, so that the tamper
    # probe in the kernel reads the WRITE_LOG the audit hook fills
    sys.modules.setdefault("gradlab.course.sandbox", sys.modules[__name__])
    if len(argv) < 2 or argv[1] != "--":
        sys.exit("usage: python -m gradlab.course.sandbox CONFIG.json -- -f CONNECTION_FILE")
    with open(argv[0], encoding="utf-8") as f:
        cfg = json.load(f)
    kernel_args = argv[2:]
    # the connection file lives in a folder that gets hidden: read it now, write it into the sandbox later
    conn = None
    if "-f" in kernel_args:
        i = kernel_args.index("-f")
        with open(kernel_args[i + 1], encoding="utf-8") as f:
            conn = f.read()
    cfg["workdir"] = _new_workdir(cfg.get("workroot"))

    def run():
        _sanitize_path(cfg["workdir"])
        args = list(kernel_args)
        if conn is not None:
            path = os.path.join(cfg["workdir"], ".kernel.json")
            with open(path, "w", encoding="utf-8") as f:
                f.write(conn)
            os.chmod(path, 0o600)
            args[args.index("-f") + 1] = path
        sys.argv = ["ipykernel_launcher"] + args
        from ipykernel import kernelapp
        kernelapp.launch_new_instance()

    sys.exit(_enter(cfg, run))


if __name__ == "__main__":
    main()
