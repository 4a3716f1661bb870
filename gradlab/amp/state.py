"""``gradlab.amp.state``: autocast's switch and policy, as this package shows them.

They live one layer down, in ``gradlab/ops/autocast.py``: the wrapped ops consult them on every call and
must not import ``amp``. ``autocast`` (``autocast_mode.py``) flips ``state.enabled``.
"""
from ..ops.autocast import FLOAT32, LOWER_PRECISION, autocast_arg, autocast_args, state  # noqa: F401
