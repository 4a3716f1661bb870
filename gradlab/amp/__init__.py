"""Layer 5: mixed precision (``gradlab.amp``): ``autocast`` and ``GradScaler``.

Importing this package must stay light (no ``gradlab.ops`` at import time):
the op layer imports :mod:`gradlab.amp.state` to check whether autocast is on.
"""
from . import state  # noqa: F401
from .autocast_mode import autocast, get_autocast_dtype, is_autocast_enabled  # noqa: F401
from .grad_scaler import GradScaler  # noqa: F401
