"""Layer 5: mixed precision (``gradlab.amp``): ``autocast`` and ``GradScaler``.

The switch the ops consult is one layer down, in :mod:`gradlab.ops.autocast` (shown here as
:mod:`gradlab.amp.state`): the op layer never imports this package.
"""
from . import state  # noqa: F401
from .autocast_mode import autocast, get_autocast_dtype, is_autocast_enabled  # noqa: F401
from .grad_scaler import GradScaler  # noqa: F401
