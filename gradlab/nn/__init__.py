"""Layer 5: neural-network building blocks (``gradlab.nn``), as in PyTorch."""
from . import functional  # noqa: F401
