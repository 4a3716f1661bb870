"""Let glibc keep freed memory for reuse (benchmarks only), like PyTorch's caching allocator.

Every gradlab op returns a fresh NumPy array. glibc serves big arrays (over
128 KiB by default) with ``mmap`` and gives them back to the OS on ``free``, so
the next array of the same size page-faults its memory in again: for a
transformer's activations that is a large part of the elementwise time.
PyTorch avoids it with its own caching allocator. Raising glibc's mmap and
trim thresholds makes freed blocks stay in the heap and be reused. It is a
process-wide setting, so gradlab does not do it on import; the benchmarks
turn it on (``--no-malloc-cache`` to compare) and say so.
"""
from __future__ import annotations

import ctypes
import ctypes.util

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3


def keep_freed_memory(mmap_threshold=512 << 20, trim_threshold=1 << 30) -> bool:
    """Returns True if the setting took effect (glibc only)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(M_MMAP_THRESHOLD, mmap_threshold)) and bool(libc.mallopt(M_TRIM_THRESHOLD,
                                                                                        trim_threshold))
    except (OSError, AttributeError):
        return False
