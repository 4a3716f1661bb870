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
from .adadelta import Adadelta  # noqa: F401
from .adagrad import Adagrad  # noqa: F401
from .adam import Adam, AdamW  # noqa: F401
from .adamax import Adamax  # noqa: F401
from .asgd import ASGD  # noqa: F401
from .lbfgs import LBFGS  # noqa: F401
from .nadam import NAdam  # noqa: F401
from .radam import RAdam  # noqa: F401
from .rprop import Rprop  # noqa: F401
from .sparse_adam import SparseAdam  # noqa: F401
from .optimizer import Optimizer  # noqa: F401
from .rmsprop import RMSprop  # noqa: F401
from .sgd import SGD  # noqa: F401

#: torch.optim names gradlab does not build, and what to use instead (a clear error, not a bare AttributeError).
_NOT_BUILT = {
    "Adafactor": "use gradlab.optim.AdamW (Adafactor's factored second moment is not implemented)",
    "Muon": "use gradlab.optim.AdamW or SGD(momentum=0.9, nesterov=True) (Muon's orthogonalised update is not "
            "implemented)",
    "swa_utils": "keep a running average of the weights by hand (gradlab.optim.ASGD keeps one in state['ax'])",
}


def __getattr__(name):
    if name in _NOT_BUILT:
        raise AttributeError(f"gradlab.optim has no {name} (torch.optim.{name}): {_NOT_BUILT[name]}")
    raise AttributeError(f"module 'gradlab.optim' has no attribute {name!r}")
