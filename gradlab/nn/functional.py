"""``gradlab.nn.functional`` (imported as ``F``): the neural-network functions.

Each is registered in the op registry (namespace ``gradlab.nn.functional``), so
the generic suite gradchecks it and compares it with PyTorch.
"""
from __future__ import annotations

from ..ops import relu, sigmoid, tanh  # noqa: F401 - the same functions as gradlab.relu etc.
