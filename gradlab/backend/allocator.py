"""Opt-in: let the C allocator keep freed arrays for reuse (PyTorch's caching allocator, in spirit).

Every gradlab op returns a fresh NumPy array. glibc serves big arrays (over
128 KiB by default) with ``mmap`` and hands them back to the operating system
on ``free``, so the next array of the same size page-faults its memory in
again: for a transformer's activations that is a large share of a training
step. PyTorch avoids it with its own caching allocator. Raising glibc's mmap
and trim thresholds keeps freed blocks in the heap, where the next array reuses
them.

It changes the whole process (memory is returned to the OS later), so gradlab
never does it on import: call ``gradlab.backend.keep_freed_memory()`` once at
the top of a training script or notebook. Elsewhere than glibc it does nothing
and returns False.
"""
from __future__ import annotations

import ctypes
import ctypes.util

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3


def keep_freed_memory(mmap_threshold: int = 512 << 20, trim_threshold: int = 1 << 30) -> bool:
    """Keep freed arrays for reuse; returns True if the setting took effect (glibc only)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(M_MMAP_THRESHOLD, int(mmap_threshold))) and bool(
            libc.mallopt(M_TRIM_THRESHOLD, int(trim_threshold)))
    except (OSError, AttributeError):
        return False
