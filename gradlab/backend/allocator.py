"""How freed arrays are reused: glibc's allocator thresholds, set once when gradlab is imported.

Every gradlab op returns a fresh NumPy array, and a training step makes and
drops hundreds of them (activations, gradients, temporaries of 1-4 MB for the
course's GPT). glibc serves a big array with ``mmap`` or from the top of its
heap, and by default gives freed memory back to the operating system as soon
as more than about twice the largest recently freed block is free there. The
next step then asks for the same memory again, and every 4 KiB page of it
faults in and is zeroed anew: about 13 000 page faults per step of the
benchmark GPT (``benchmarks/bench_gpt_step.py``), against about 700 for
PyTorch, whose tensors happen to come and go in an order glibc keeps.

So on import gradlab sets two glibc limits (what ``MALLOC_MMAP_THRESHOLD_`` and
``MALLOC_TRIM_THRESHOLD_`` would set from the environment):

* arrays up to ``DEFAULT_MMAP`` (64 MiB) come from the heap, where freed ones
  are reused; bigger ones are still mapped and unmapped on their own;
* up to ``DEFAULT_TRIM`` (256 MiB) of freed heap stays in the process for the
  next arrays instead of going back to the OS at once.

The cost is bounded: a process keeps at most that much freed memory (call
:func:`release_freed_memory` to hand it back now). Set the environment variable
``GRADLAB_MALLOC=system`` before importing gradlab to keep glibc's own
behaviour; :func:`keep_freed_memory` sets other limits. Elsewhere than glibc
(macOS, Windows, musl) nothing changes and these functions return False.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
DEFAULT_MMAP = 64 << 20
DEFAULT_TRIM = 256 << 20

#: ``(mmap_threshold, trim_threshold)`` in force, or None while glibc's own defaults apply.
settings = None


def _libc():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "mallopt") else None
    except OSError:
        return None


def keep_freed_memory(mmap_threshold: int = DEFAULT_MMAP, trim_threshold: int = DEFAULT_TRIM) -> bool:
    """Keep up to ``trim_threshold`` bytes of freed memory for reuse, and serve arrays up to
    ``mmap_threshold`` bytes from the heap. Returns True if glibc took the setting."""
    global settings
    libc = _libc()
    if libc is None:
        return False
    ok = bool(libc.mallopt(M_MMAP_THRESHOLD, int(mmap_threshold))) and bool(
        libc.mallopt(M_TRIM_THRESHOLD, int(trim_threshold)))
    if ok:
        settings = (int(mmap_threshold), int(trim_threshold))
    return ok


def release_freed_memory() -> bool:
    """Give the freed memory the process is keeping back to the OS now (glibc's ``malloc_trim``)."""
    libc = _libc()
    if libc is None or not hasattr(libc, "malloc_trim"):
        return False
    return bool(libc.malloc_trim(0))


def configure_from_environment() -> bool:
    """What ``import gradlab`` does: :func:`keep_freed_memory` unless ``GRADLAB_MALLOC=system``."""
    if os.environ.get("GRADLAB_MALLOC", "").strip().lower() == "system":
        return False
    return keep_freed_memory()
