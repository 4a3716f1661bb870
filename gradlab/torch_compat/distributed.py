"""``torch.distributed`` for a library that runs in one process.

gradlab has no process groups: ``is_available()`` and ``is_initialized()`` are False, so programs that guard
their distributed code (``if dist.is_available() and dist.is_initialized(): ...``, or nanoGPT's
``ddp = int(os.environ.get('RANK', -1)) != -1``) take the single-process path. ``get_rank()`` is 0 and
``get_world_size()`` 1 (PyTorch raises there before ``init_process_group``; here the answer is the one process).
Starting a process group, or a collective (``all_reduce``...), raises :class:`gradlab.errors.DeviceError` saying
so: run the program as one process (plain ``python train.py``, not ``torchrun``).
"""
from __future__ import annotations

import enum

from ..errors import DeviceError


class ReduceOp(enum.Enum):
    SUM = "sum"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    AVG = "avg"


def is_available() -> bool:
    """False: gradlab is built without distributed support (one process)."""
    return False


def is_initialized() -> bool:
    """False: no process group is ever initialised in gradlab."""
    return False


def is_torchelastic_launched() -> bool:
    return False


def get_rank(group=None) -> int:
    """0: the one process."""
    return 0


def get_world_size(group=None) -> int:
    """1: the one process."""
    return 1


def _refuse(what):
    raise DeviceError(f"distributed.{what}: gradlab runs in one process and has no process groups "
                      "(distributed.is_available() is False); run the program as a single process (python "
                      "train.py, not torchrun) and guard distributed code with dist.is_initialized()")


def init_process_group(*args, **kwargs):
    _refuse("init_process_group")


def destroy_process_group(group=None) -> None:
    """Nothing to destroy (no process group exists)."""


def barrier(*args, **kwargs):
    _refuse("barrier")


def all_reduce(*args, **kwargs):
    _refuse("all_reduce")


def broadcast(*args, **kwargs):
    _refuse("broadcast")


def all_gather(*args, **kwargs):
    _refuse("all_gather")


def reduce(*args, **kwargs):
    _refuse("reduce")
