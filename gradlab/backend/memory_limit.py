"""The one size check where results are made: refuse an impossible allocation before it is tried.

Holds ``format_bytes`` (gradlab's one way of writing a size: ``512 B``, ``1.5 KiB``, ``3.2 MiB``,
used by the graph drawings, the widgets, ``memory_report``, ``gradlab.compile`` and these errors),
``limit_bytes`` (what this process could ever hold: physical memory plus swap, or a lower
address-space limit set with ``resource.setrlimit``), ``check_alloc`` (raise
``OutOfMemoryError`` naming the op, the shape and the bytes when a result of that shape cannot
fit) and ``out_of_memory`` (the same error made from the ``MemoryError`` NumPy raised, which
carries the shape and dtype it failed on). NumPy's own ``MemoryError`` is not a
``RuntimeError``, so torch-style ``except RuntimeError`` code would miss it; and on Linux an
allocation far above what fits may "succeed" and be killed later, so the check comes first.
"""
from __future__ import annotations

import math
import os

import numpy as np

from ..errors import OutOfMemoryError, fmt_shape

_limit = []  # computed once: [bytes]


def _physical() -> int:
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return 1 << 62
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("SwapTotal:"):
                    total += int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover - not Linux
        pass
    return total


#: Binary units, as PyTorch's memory summaries and ``nvidia-smi`` count them (1 KiB = 1024 bytes).
BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def format_bytes(n) -> str:
    """``n`` bytes for a person: ``"0 B"``, ``"812 B"``, ``"1.5 KiB"``, ``"3.2 MiB"``; ``None`` (not measured) is ``"-"``.

    One decimal above a kibibyte, whole bytes below it. Every size gradlab prints goes through here,
    and ``widgets/graph_player.js``'s ``bytes`` writes the same (a test compares them), so a number
    in a drawing, a widget and a report reads the same everywhere.
    """
    if n is None:
        return "-"
    x, k = float(n), 0
    while abs(x) >= 1024 and k < len(BYTE_UNITS) - 1:
        x, k = x / 1024, k + 1
    # half up, in the same double arithmetic as the JS (Python's format alone rounds 1.25 to "1.2", JS's to "1.3")
    return f"{int(x)} B" if k == 0 else f"{math.floor(x * 10 + 0.5) / 10:.1f} {BYTE_UNITS[k]}"


def limit_bytes() -> int:
    """The most bytes one array could take here: RAM plus swap, or the address-space limit if lower."""
    if not _limit:
        _limit.append(_physical())
    lim = _limit[0]
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY:
            lim = min(lim, soft)
    except (ImportError, ValueError, OSError):  # pragma: no cover - not POSIX
        pass
    return lim


def _message(op, shape, dtype, nbytes) -> str:
    name = np.dtype(dtype).name if dtype is not None else "?"
    return (f"{op}: the result of shape {fmt_shape(tuple(shape))} ({name}) needs {_fmt(nbytes)}, more than this "
            f"machine can hold ({_fmt(limit_bytes())}); check the sizes (a broadcast or an expand may have made "
            "them larger than meant), or work in smaller pieces")


def _fmt(n) -> str:
    """A size in an error message: readable, then exact (``3.0 GiB (3,221,225,472 bytes)``)."""
    return f"{format_bytes(n)} ({n:,} bytes)" if abs(n) >= 1024 else f"{n:,} bytes"


def check_alloc(op: str, shape, dtype) -> None:
    """Raise ``OutOfMemoryError`` if an array of ``shape`` and ``dtype`` could never fit."""
    n = math.prod(int(s) for s in shape) * np.dtype(dtype).itemsize
    if n > limit_bytes():
        raise OutOfMemoryError(_message(op, shape, dtype, n))


def out_of_memory(op: str, exc: MemoryError) -> OutOfMemoryError:
    """The ``OutOfMemoryError`` for the ``MemoryError`` NumPy raised inside ``op``."""
    if isinstance(exc, OutOfMemoryError):
        return exc
    shape, dtype = getattr(exc, "shape", None), getattr(exc, "dtype", None)
    if shape is None:
        return OutOfMemoryError(f"{op}: out of memory ({exc}); check the sizes, or work in smaller pieces")
    return OutOfMemoryError(_message(op, shape, dtype, math.prod(shape) * np.dtype(dtype).itemsize))
