"""Layer 5: optimizers and learning-rate schedules (``gradlab.optim``), as in PyTorch.

* ``optimizer.py``: ``Optimizer``, the base (param groups, state, ``zero_grad``, ``state_dict``);
* ``sgd.py``: ``SGD`` (momentum, Nesterov, weight decay); ``adam.py``: ``Adam``, ``AdamW``;
  ``adagrad.py``: ``Adagrad``; ``rmsprop.py``: ``RMSprop``;
* ``scheduler.py``: ``LRScheduler``, the base of every schedule; ``lr_scheduler.py``: the schedules
  (``StepLR``, ``CosineAnnealingLR``, ``LinearLR``...), with ``onecycle.py`` (``OneCycleLR``) and
  ``plateau.py`` (``ReduceLROnPlateau``) importable from it as in ``torch.optim.lr_scheduler``.

Every ``step()`` updates parameters in place, under ``no_grad``, exactly as PyTorch orders the
arithmetic, so trajectories match PyTorch's to float rounding (tests/test_optim.py).
"""
from . import lr_scheduler  # noqa: F401
from .adagrad import Adagrad  # noqa: F401
from .adam import Adam, AdamW  # noqa: F401
from .optimizer import Optimizer  # noqa: F401
from .rmsprop import RMSprop  # noqa: F401
from .sgd import SGD  # noqa: F401
