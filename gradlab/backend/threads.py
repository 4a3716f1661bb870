"""All cores for large arrays: the one chunking helper, and ``set_num_threads``/``get_num_threads``.

NumPy's ufunc loops, reductions and BLAS calls release the GIL, so a large elementwise
computation split into pieces runs on several cores from plain Python threads (what ``numexpr``
does). :func:`parallel_for` runs ``part(lo, hi)`` over ``[0, n)`` in pieces of whole ``grain``s,
one piece per thread; :func:`map_rows` applies an array function to row blocks of its inputs.

* **Which ops**: GELU (both forms) and ``erf``, ``softmax``/``log_softmax`` (forward and
  backward), ``layer_norm`` (forward and backward), ``cross_entropy`` (its log-softmax), the
  table's ``exp``/``tanh``/``sigmoid`` and the fused ``gradlab.compile`` kernels, on arrays of at
  least :data:`MIN_ELEMENTS` elements. Smaller arrays never leave the calling thread.
* **Same bits as one thread**: every split is along rows that are computed independently
  (elementwise work, or a reduction along the last axis, each row reduced by the same NumPy call
  whatever block it lands in), so the results are bit for bit those of one thread, whatever the
  thread count. Reductions *across* the split (``x.sum()`` of a whole tensor, ``sum(dim=0)``,
  the batch-mean of a loss) are not split: they stay one NumPy call, as before.
* **Default**: as PyTorch, the number of cores this process may run on (``os.sched_getaffinity``),
  unless ``GRADLAB_NUM_THREADS`` or ``OMP_NUM_THREADS`` says otherwise; BLAS keeps its own
  setting (``OPENBLAS_NUM_THREADS``...), as NumPy does.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

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


_state = {"threads": _default_threads(), "pool": None, "pool_size": 0}
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


def _pool(n):
    with _lock:
        if _state["pool"] is None or _state["pool_size"] < n:
            if _state["pool"] is not None:
                _state["pool"].shutdown(wait=False)
            _state["pool"] = ThreadPoolExecutor(n, thread_name_prefix="gradlab-worker")
            _state["pool_size"] = n
        return _state["pool"]


def _run_piece(part, lo, hi, err=None):
    _local.busy = True
    try:
        if err is None:
            part(lo, hi)
        else:  # the caller's np.errstate (thread-local in NumPy): the same warnings as one thread
            with np.errstate(**err):
                part(lo, hi)
    finally:
        _local.busy = False


def threads_for(work: int) -> int:
    """How many threads a computation touching ``work`` elements gets (1 below :data:`MIN_ELEMENTS`)."""
    n = _state["threads"]
    if n <= 1 or work < MIN_ELEMENTS or getattr(_local, "busy", False):
        return 1
    return max(1, min(n, work // GRAIN))


def parallel_for(part, n: int, grain: int = 1, work: int | None = None) -> None:
    """Run ``part(lo, hi)`` over ``[0, n)``, split into one piece of whole ``grain``s per thread.

    ``work`` is the number of elements the whole loop touches (default ``n``): below
    :data:`MIN_ELEMENTS`, or with one thread, ``part(0, n)`` runs in the calling thread. The calling
    thread computes the first piece itself. A piece that calls ``parallel_for`` again runs it inline.
    """
    grain = max(1, grain)
    nthreads = min(threads_for(n if work is None else work), -(-n // grain))
    if nthreads <= 1:
        part(0, n)
        return
    per = -(-n // nthreads)
    per = -(-per // grain) * grain
    bounds = [(lo, min(lo + per, n)) for lo in range(0, n, per)]
    pool = _pool(_state["threads"])
    err = np.geterr()
    futures = [pool.submit(_run_piece, part, lo, hi, err) for lo, hi in bounds[1:]]
    try:
        _run_piece(part, *bounds[0])
    finally:
        for f in futures:
            f.result()


def map_rows(fn, out, *arrays, axis_len: int = 1) -> None:
    """``out[...] = fn(*arrays)`` computed in blocks of leading rows, split across threads.

    ``fn`` maps arrays of the same leading length to one array of ``out``'s shape; every input
    and ``out`` are NumPy arrays whose first dimension is the row axis (use ``reshape(-1, ...)``).
    ``fn`` must treat rows independently (elementwise, or reducing within a row): then the result
    is the same bits as one call. ``axis_len``: elements per row (for the size threshold).
    """
    n = out.shape[0]

    def part(lo, hi):
        out[lo:hi] = fn(*(a[lo:hi] for a in arrays))
    parallel_for(part, n, grain=row_grain(axis_len), work=n * max(axis_len, 1))


def row_grain(axis_len: int) -> int:
    """Rows per piece for rows of ``axis_len`` elements: about :data:`GRAIN` elements, and a multiple
    of 16 rows, so a piece's rows sit in the same positions of BLAS's row groups (gemv kernels take
    rows 4 or 8 at a time and finish a ragged tail another way) as in one call over all rows."""
    rows = max(1, GRAIN // max(axis_len, 1))
    return -(-rows // 16) * 16


def map_blocks(fn, *arrays, dtype=None):
    """``fn(*arrays)`` for an elementwise ``fn`` of same-shape NumPy arrays, computed block by block.

    The inputs are flattened (C order) and cut into blocks of :data:`GRAIN` elements, so every
    temporary ``fn`` makes stays in cache; the blocks are shared among the threads when there are at
    least :data:`MIN_ELEMENTS`. ``fn`` maps 1-D blocks to a 1-D block of the same length (of
    ``dtype``, default the first input's). Elementwise, so the result is the same bits as
    ``fn(*arrays)`` in one call (NumPy's SIMD loops give each element the same bits in any block).
    The first block runs in the calling thread first (it tells the result's dtype).
    """
    a0 = arrays[0]
    flats = [np.ascontiguousarray(a).reshape(-1) for a in arrays]
    n = flats[0].size
    if not n:
        return fn(*arrays) if dtype is None else np.empty(a0.shape, dtype)
    first = fn(*(f[:GRAIN] for f in flats))   # (also tells the result's dtype)
    out = np.empty(n, dtype or first.dtype)
    out[:first.size] = first

    def part(lo, hi):
        for s in range(lo, hi, GRAIN):
            e = min(s + GRAIN, hi)
            out[s:e] = fn(*(f[s:e] for f in flats))
    if n > GRAIN:
        parallel_for(lambda lo, hi: part(lo + GRAIN, hi + GRAIN), n - GRAIN, grain=GRAIN, work=n)
    return out.reshape(a0.shape)


def big(a) -> bool:
    """True for a plain NumPy array large enough for the threaded/blocked paths (CuPy, simulated and
    small arrays take the plain one-call path)."""
    return type(a) is np.ndarray and a.size >= MIN_ELEMENTS


def is_host(a) -> bool:
    """True for a plain NumPy array (the threaded paths are CPU-only; CuPy and simulated arrays skip them)."""
    return type(a) is np.ndarray
