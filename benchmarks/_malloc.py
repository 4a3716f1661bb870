"""``--system-malloc`` for the benchmarks: run with glibc's own thresholds instead of gradlab's.

gradlab sets glibc's allocator thresholds when it is imported (see
gradlab/backend/allocator.py); this must run before that import.
"""
from __future__ import annotations

import os


def add_flag(parser):
    parser.add_argument("--system-malloc", action="store_true",
                        help="keep glibc's own allocator thresholds (GRADLAB_MALLOC=system; see "
                             "gradlab/backend/allocator.py)")


def apply(args) -> str:
    """Set the environment before gradlab is imported; returns a line describing the allocator."""
    if args.system_malloc:
        os.environ["GRADLAB_MALLOC"] = "system"
        return "allocator: glibc's own thresholds (GRADLAB_MALLOC=system: freed arrays go back to the OS)"
    return "allocator: gradlab's default (freed arrays kept for reuse, see gradlab/backend/allocator.py)"
