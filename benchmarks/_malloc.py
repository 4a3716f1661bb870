"""The benchmarks turn on gradlab's opt-in allocator setting (see gradlab/backend/allocator.py)."""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from gradlab.backend.allocator import keep_freed_memory  # noqa: E402,F401
