"""All cores for large arrays: the one chunking helper, and ``set_num_threads``/``get_num_threads``.

NumPy's ufunc loops, reductions and BLAS calls release the GIL, so a large elementwise
computation split into pieces runs on several cores from plain Python threads (what ``numexpr``
does). :func:`parallel_items` hands out items one at a time to whichever thread is free (conv2d's
chunks of images); :func:`parallel_for` runs ``part(lo, hi)`` over ``[0, n)`` the same way, in a few
pieces of whole ``grain``s per thread; :func:`map_rows` applies an array function to row blocks of its
inputs.

* **Which ops**: GELU (both forms) and ``erf``, ``softmax``/``log_softmax`` (forward; and
  log_softmax's backward; not ``layer_norm``, memory-bound), ``cross_entropy`` (its log-softmax), the
  table's ``exp``/``tanh``/``sigmoid`` (forward and backward), the fused ``gradlab.compile``
  kernels, ``conv2d`` (chunks of images: ``ops/conv.py``'s ``Columns``; a layer's ``dW`` and ``dX``
  as one loop) and stacks of small matrix products (attention's: ``ops/products.py``'s
  ``_stacked_matmul``), on arrays of at least :data:`MIN_ELEMENTS` elements. Smaller arrays never leave the
  calling thread. (``relu`` and ``batch_norm`` stay on the calling thread at any size: memory-bound,
  they were slower split; see their docstrings.)
* **Same bits as one thread**: every split is along rows that are computed independently
  (elementwise work, or a reduction along the last axis, each row reduced by the same NumPy call
  whatever block it lands in), so the results are bit for bit those of one thread, whatever the
  thread count. Reductions *across* the split (``x.sum()`` of a whole tensor, ``sum(dim=0)``,
  the batch-mean of a loss) are not split: they stay one NumPy call, as before. conv2d's weight
  gradient (a sum over images) adds a fixed number of partial sums, each over a fixed run of
  images, in a fixed order: the same bits for any thread count too.
* **Default**: as PyTorch, the number of cores this process may run on (``os.sched_getaffinity``),
  unless ``GRADLAB_NUM_THREADS`` or ``OMP_NUM_THREADS`` says otherwise; BLAS keeps its own
  setting (``OPENBLAS_NUM_THREADS``...), as NumPy does.
* **BLAS inside the pieces** (``parallel_for(..., blas=True)``, conv2d's chunks): each piece makes
  its own BLAS calls, so BLAS is held to one thread while the pieces run (:func:`blas_threads`),
  else two gradlab threads would each start BLAS's two threads on two cores, four threads fighting.
  That needs the OpenBLAS that NumPy's wheels bundle (its ``set_num_threads``, found with
  ``ctypes``: :func:`_openblas`); with another BLAS such loops stay on the calling thread.
* **Whose threads**: where NumPy's BLAS is the OpenBLAS of its wheels, the pieces run on OpenBLAS's own
  worker threads (its ``gotoblas_pthread``, :func:`_blas_pool`), as PyTorch runs its elementwise loops
  and its products on the same OpenMP threads; elsewhere (another BLAS, or ``GRADLAB_OWN_POOL=1``) on
  gradlab's own Python threads (:func:`_start_workers`). Why: after each product OpenBLAS's idle worker
  spins for about 0.1 s, waiting for the next; a thread of a second pool then shares a core with that
  spinning worker, and the elementwise pass after a product (GELU, softmax) ran barely faster than on
  one thread. On BLAS's worker the pass starts at once on the core that was spinning. Measured idle on
  2 cores, gradlab / PyTorch, medians of 15 steps, two rounds each: the GPT step of
  ``benchmarks/bench_gpt_step.py`` 1.46x and 1.58x with gradlab's own pool, 1.42x and 1.43x on BLAS's
  threads (three more rounds: 1.25-1.49x); the char transformer 1.30-1.38x and 1.38-1.48x (a little
  slower: its loops are just above :data:`MIN_ELEMENTS`, where a split gains nothing).
* **What two threads could buy** with gradlab's own pool, measured on the idle 2-core machine (stop 48,
  before the loops moved to BLAS's threads): the ResNet of
  ``benchmarks/bench_conv_bn_programs.py`` takes 1.22x PyTorch's time on one thread and 1.25-1.53x on two
  (PyTorch gains more from its second core). The GPT step of ``bench_gpt_step.py`` takes 262 ms with BLAS
  and this pool on one thread, 211 ms with BLAS on two, 215 ms with this pool on two as well: the products
  gain from BLAS's threads, the elementwise passes (GELU, softmax) nothing from this pool there (CPU time is
  twice the wall time either way: BLAS's idle workers spin on the other core; hence "Whose threads"). Memory-bound passes (relu,
  batch norm, layer norm) were slower split. Under a load of 5-7 on 2 cores this process got one core's
  worth of CPU, and two threads of plain BLAS products ran no faster than one.
"""
from __future__ import annotations

import contextlib
import ctypes
import glob
import itertools
import os
import queue
import threading

import numpy as np

MIN_ELEMENTS = 1 << 17      # arrays smaller than this (128K elements, 512 KB of float32) stay on one thread
GRAIN = 1 << 15             # elements per piece of work at least (a piece's temporaries stay in L2)


def _default_threads() -> int:
    for var in ("GRADLAB_NUM_THREADS", "OMP_NUM_THREADS"):
        v = os.environ.get(var, "").strip()
        if v.isdigit() and int(v) > 0:
            return int(v)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - macOS/Windows
        return max(1, os.cpu_count() or 1)


_state = {"threads": _default_threads(), "workers": 0}
_tasks = queue.SimpleQueue()   # what the worker threads run: (run, errstate, done), see _on_threads
_local = threading.local()   # .busy: this thread is already running a piece (no nested splitting)
_lock = threading.Lock()


def get_num_threads() -> int:
    """The number of threads gradlab splits large elementwise work and row-wise reductions across."""
    return _state["threads"]


def set_num_threads(n: int) -> None:
    """Use ``n`` threads for large arrays (as ``torch.set_num_threads``); 1: everything in the calling thread.

    Results do not depend on it (each thread computes whole rows; see ``gradlab/backend/threads.py``).
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        from ..errors import ArgumentError
        raise ArgumentError(f"set_num_threads(n): n must be a positive int, got {n!r}. "
                             "Use 1 for the calling thread only, os.cpu_count() for every core.")
    _state["threads"] = n


def _worker():
    """A worker thread: forever, take a task, run it, and report to its ``done`` queue (None or the error)."""
    while True:
        run, err, done = _tasks.get()
        try:
            _run_piece(run, err)
        except BaseException as e:  # handed to the calling thread, which raises it
            done.put(e)
        else:
            done.put(None)


def _start_workers(n):
    """At least ``n`` worker threads, started on first use. Why not ``concurrent.futures``'s pool: a
    parallel loop starts its helpers tens of times per training step, and its submit/result (a Future,
    a work item, a condition variable each) cost about twice the CPU of a ``queue.SimpleQueue``'s
    put/get (measured: 26 vs 17 us per loop of one helper). Daemon threads: an idle worker never
    keeps a program from exiting."""
    if _state["workers"] >= n:
        return
    with _lock:
        while _state["workers"] < n:
            threading.Thread(target=_worker, name=f"gradlab-worker_{_state['workers']}", daemon=True).start()
            _state["workers"] += 1


def _after_fork():  # a forked child has none of its parent's threads: start its own when it needs them
    global _tasks
    _state["workers"], _tasks = 0, queue.SimpleQueue()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def _run_piece(run, err=None):
    _local.busy = True   # (a parallel loop inside it runs inline: threads_for says 1)
    try:
        if err is None:
            run()
        else:  # the caller's np.errstate (thread-local in NumPy): the same warnings as one thread
            with np.errstate(**err):
                run()
    finally:
        _local.busy = False


def threads_for(work: int) -> int:
    """How many threads a computation touching ``work`` elements gets (1 below :data:`MIN_ELEMENTS`)."""
    n = _state["threads"]
    if n <= 1 or work < MIN_ELEMENTS or getattr(_local, "busy", False):
        return 1
    return max(1, min(n, work // GRAIN))


def _openblas():
    """``(get, set)``: ctypes functions reading and setting the thread count of the OpenBLAS NumPy
    uses, or None (another BLAS, or none found). Looked up once.

    NumPy's wheels bundle OpenBLAS with prefixed names (``scipy_openblas_set_num_threads64_``); a
    NumPy built against a system OpenBLAS has the plain ones. The library is already loaded (NumPy
    linked it), so opening it again by its path returns the same copy, the one NumPy calls.
    """
    if "blas" in _state:
        return _state["blas"]
    _state["blas"] = None
    paths = []
    try:
        with open("/proc/self/maps") as f:        # Linux: the libraries this process has loaded
            paths = [line.split()[-1] for line in f if "openblas" in line.lower() and "/" in line]
    except OSError:  # pragma: no cover - macOS/Windows
        pass
    here = os.path.dirname(np.__file__)
    paths += glob.glob(os.path.join(here, os.pardir, "numpy.libs", "*openblas*")) + glob.glob(
        os.path.join(here, ".dylibs", "*openblas*"))
    for path in dict.fromkeys(paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for pre, suf in (("scipy_openblas_", "64_"), ("scipy_openblas_", ""), ("openblas_", "64_"), ("openblas_", "")):
            get, set_ = (getattr(lib, f"{pre}{what}_num_threads{suf}", None) for what in ("get", "set"))
            if get is not None and set_ is not None:
                get.restype, set_.restype, set_.argtypes = ctypes.c_int, None, [ctypes.c_int]
                _state["blas"], _state["blas_lib"] = (get, set_), lib
                return _state["blas"]
    return None


@contextlib.contextmanager
def blas_threads(n: int):
    """Within the block, OpenBLAS uses ``n`` threads (restored after); a no-op if BLAS cannot be set
    (see :func:`_openblas`). Only gradlab's calling thread changes it, around a parallel loop."""
    blas = _openblas()
    old = blas[0]() if blas is not None else n
    if old != n:
        blas[1](n)
    try:
        yield
    finally:
        if old != n:
            blas[1](old)


PIECES_PER_THREAD = 2  # a parallel_for loop is cut into at most this many pieces per thread, taken as threads free up
# (Why 2: one piece per thread leaves nothing to rebalance when a thread starts late; each further piece
# costs its Python calls again, on loops of 0.1-1 ms. The ResNet at 2 threads, best CPU time of 7 runs,
# 3 rounds (load 7-8): 536-603 ms with 1 per thread, 566-628 ms with 4: within this machine's noise.)


def parallel_for(part, n: int, grain: int = 1, work: int | None = None, blas: bool = False) -> None:
    """Run ``part(lo, hi)`` over ``[0, n)``, in pieces of whole ``grain``s shared among the threads.

    ``work`` is the number of elements the whole loop touches (default ``n``): below
    :data:`MIN_ELEMENTS`, or with one thread, ``part(0, n)`` runs in the calling thread. Otherwise
    the range is cut into up to :data:`PIECES_PER_THREAD` pieces per thread, which the threads take
    one at a time as they finish the last (:func:`parallel_items`: why not one fixed piece per
    thread); the calling thread takes the first. A piece that calls ``parallel_for`` again runs it inline.
    ``blas``: the pieces call BLAS (matrix products), which then runs on one thread in each piece
    (:func:`blas_threads`); where gradlab cannot set BLAS's threads, the loop stays in this thread.
    """
    grain = max(1, grain)
    grains = -(-n // grain)
    nthreads = min(threads_for(n if work is None else work), grains)
    if nthreads > 1 and blas and _openblas() is None:
        nthreads = 1
    if nthreads <= 1:
        part(0, n)
        return
    pieces = min(grains, PIECES_PER_THREAD * nthreads)
    cuts = [min(n, i * grains // pieces * grain) for i in range(pieces + 1)]
    parallel_items(lambda i, _: part(cuts[i], cuts[i + 1]), pieces, work=0, blas=blas, threads=nthreads)


def parallel_items(fn, n: int, work: int, blas: bool = False, setup=None, threads: int | None = None) -> None:
    """``fn(i, mine)`` for every ``i`` in ``range(n)``, the items shared among the threads as they go:
    a thread that finishes an item takes the next one nobody has taken yet (``mine``: what ``setup()``
    made for this thread, e.g. its own buffers; ``None`` without ``setup``). ``work`` and ``blas`` as
    in :func:`parallel_for` (``threads``: the thread count already decided, by :func:`parallel_for`).

    Why not :func:`parallel_for`'s fixed pieces (one run of items per thread, decided up front): a
    parallel loop lasts as long as its slowest thread, and the threads do not start together. The
    worker thread wakes up tens of microseconds after the calling thread starts its own piece, the
    operating system may pause either thread (other programs on the machine), and the two halves of
    an odd number of items differ by one item. Taking items one at a time, the thread that is ahead
    simply does more of them. Measured on conv2d's chunks (then 4 to 22 per layer) in the ResNet of
    ``benchmarks/bench_conv_bn_programs.py`` at 2 threads, thread CPU time: with fixed halves the
    calling thread's share was 215 ms per 3 steps against the worker's 189 ms, and the loop waits
    for the larger one; replaying each loop's items on two idle cores (the worker starting 50 us
    late), taking them as threads free up saves 8-20 ms of the 3 steps' 330-400.

    Same bits for any thread count: an item's result never depends on which thread computes it
    (each item writes its own outputs, or adds into its own partial sum in a fixed order).
    """
    nthreads = min(threads_for(work) if threads is None else threads, n)
    if nthreads > 1 and blas and _openblas() is None:
        nthreads = 1
    if nthreads <= 1:
        mine = setup() if setup is not None else None
        for i in range(n):
            fn(i, mine)
        return
    items, take = iter(range(n)), threading.Lock()   # (a lock: taking an item stays safe without the GIL)

    def run():  # one thread: its own scratch, then items until none are left
        mine = setup() if setup is not None else None
        while True:
            with take:
                i = next(items, None)
            if i is None:
                return
            fn(i, mine)
    with blas_threads(1) if blas else contextlib.nullcontext():
        _on_threads(run, nthreads)


_PIECE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)   # void piece(void *job): what OpenBLAS's threads call
_jobs: dict = {}          # job id -> (run, errstate, errors): the loops now running on OpenBLAS's threads
_job_ids = itertools.count(1)


def _blas_piece(job_id):
    """One thread's share of a loop, called by OpenBLAS (on its worker, and on the calling thread)."""
    run, err, errors = _jobs[job_id]
    try:
        _run_piece(run, err)
    except BaseException as e:  # (a C callback cannot raise: the error is handed to the calling thread)
        errors.append(e)


_BLAS_PIECE = _PIECE(_blas_piece)   # (one C function for every loop, kept alive here; the job id says which)


def _blas_pool():
    """OpenBLAS's ``gotoblas_pthread(n, function, arg, stride)``, or None (looked up once).

    It runs ``function(arg)`` ``n`` times at once: on the calling thread and on ``n - 1`` of BLAS's
    own worker threads, and returns when all are done (its ``exec_blas``, as for a product). ctypes
    makes a Python function callable from C and takes the GIL for it, so the pieces run like those of
    Python threads (NumPy releases the GIL inside its loops). None with another BLAS, an OpenBLAS
    without it, or ``GRADLAB_OWN_POOL`` set (gradlab's own threads: for comparison)."""
    if "blas_pool" not in _state:
        _state["blas_pool"] = None
        if _openblas() is not None and not os.environ.get("GRADLAB_OWN_POOL"):
            fn = getattr(_state["blas_lib"], "gotoblas_pthread", None)
            if fn is not None:
                fn.argtypes, fn.restype = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int], ctypes.c_int
                _state["blas_pool"] = fn
    return _state["blas_pool"]


def _on_threads(run, nthreads):
    """``run()`` at once in the calling thread and in ``nthreads - 1`` other threads; returns when all
    are done (an error in any of them reaches the caller). The others run under the caller's
    ``np.errstate`` (thread-local in NumPy), so they warn as the caller would.

    The other threads are OpenBLAS's workers where it has enough of them (:func:`_blas_pool`; see the
    module docstring for why), else gradlab's own. On BLAS's workers, BLAS is held to one thread while
    the pieces run: a piece's own product (``parallel_for(..., blas=True)``, or a stack of small ones)
    must not queue work for workers that are busy running the pieces (it would wait for ever)."""
    pool = _blas_pool()
    if pool is not None and nthreads <= _state["blas"][0]():
        job = next(_job_ids)
        errors = []
        _jobs[job] = (run, np.geterr(), errors)
        try:
            with blas_threads(1):
                pool(nthreads, ctypes.cast(_BLAS_PIECE, ctypes.c_void_p), job, 0)   # (stride 0: every piece gets `job`)
        finally:
            del _jobs[job]
        if errors:
            raise errors[0]
        return
    _start_workers(nthreads - 1)
    err, done = np.geterr(), queue.SimpleQueue()
    for _ in range(nthreads - 1):
        _tasks.put((run, err, done))
    error = None
    try:
        _run_piece(run)
    except BaseException as e:  # (still wait for the workers: they use the caller's arrays)
        error = e
    for _ in range(nthreads - 1):
        e = done.get()
        error = error or e
    if error is not None:
        raise error


def map_rows(fn, out, *arrays, axis_len: int = 1) -> None:
    """``out[...] = fn(*arrays)`` computed in blocks of leading rows, split across threads.

    ``fn(*blocks, out=o)`` maps arrays of the same leading length to one array of ``out``'s shape,
    written into its block ``o`` of ``out`` when it can (no block of its own, then copied); a result
    returned elsewhere (16-bit floats computed in float32) is copied in. Every input and ``out`` are
    NumPy arrays whose first dimension is the row axis (use ``reshape(-1, ...)``). ``fn`` must treat
    rows independently (elementwise, or reducing within a row): then the result is the same bits as
    one call. ``axis_len``: elements per row (for the size threshold).
    """
    n = out.shape[0]

    def part(lo, hi):
        o = out[lo:hi]
        r = fn(*(a[lo:hi] for a in arrays), out=o)
        if r is not o:
            o[...] = r
    parallel_for(part, n, grain=row_grain(axis_len), work=n * max(axis_len, 1))


def row_grain(axis_len: int) -> int:
    """Rows per piece for rows of ``axis_len`` elements: about :data:`GRAIN` elements, and a multiple
    of 16 rows, so a piece's rows sit in the same positions of BLAS's row groups (gemv kernels take
    rows 4 or 8 at a time and finish a ragged tail another way) as in one call over all rows."""
    rows = max(1, GRAIN // max(axis_len, 1))
    return -(-rows // 16) * 16


def map_blocks(fn, *arrays, dtype=None, grain=GRAIN):
    """``fn(*arrays)`` for an elementwise ``fn`` of same-shape NumPy arrays, computed block by block.

    The inputs are flattened (C order) and cut into blocks of :data:`GRAIN` elements, so every
    temporary ``fn`` makes stays in cache; the blocks are shared among the threads when there are at
    least :data:`MIN_ELEMENTS`. ``fn`` maps 1-D blocks to a 1-D block of the same length (of
    ``dtype``, default the first input's). Elementwise, so the result is the same bits as
    ``fn(*arrays)`` in one call (NumPy's SIMD loops give each element the same bits in any block).
    The first block runs in the calling thread first (it tells the result's dtype). ``grain``: elements
    per block (default :data:`GRAIN`; a larger one for a ``fn`` of many short NumPy calls, whose per-call
    overhead then counts more than the cache: gelu's, see ``ops/activations.py``).
    """
    a0 = arrays[0]
    flats = [np.ascontiguousarray(a).reshape(-1) for a in arrays]
    n = flats[0].size
    if not n:
        return fn(*arrays) if dtype is None else np.empty(a0.shape, dtype)
    first = fn(*(f[:grain] for f in flats))   # (also tells the result's dtype)
    out = np.empty(n, dtype or first.dtype)
    out[:first.size] = first

    def part(lo, hi):
        for s in range(lo, hi, grain):
            e = min(s + grain, hi)
            out[s:e] = fn(*(f[s:e] for f in flats))
    if n > grain:
        parallel_for(lambda lo, hi: part(lo + grain, hi + grain), n - grain, grain=grain, work=n)
    return out.reshape(a0.shape)


def big(a) -> bool:
    """True for a plain NumPy array large enough for the threaded/blocked paths (CuPy, simulated and
    small arrays take the plain one-call path)."""
    return type(a) is np.ndarray and a.size >= MIN_ELEMENTS


def is_host(a) -> bool:
    """True for a plain NumPy array (the threaded paths are CPU-only; CuPy and simulated arrays skip them)."""
    return type(a) is np.ndarray
