"""``new_param``: the uninitialised parameter every layer creates and then fills in ``reset_parameters``."""
from __future__ import annotations

from ...backend import dtypes as _dt
from ...factories import empty
from ..parameter import Parameter


def new_param(*shape, dtype=None, device=None, requires_grad=True):
    """An uninitialised parameter (every layer fills it in ``reset_parameters``)."""
    return Parameter(empty(*shape, dtype=_dt.as_dtype(dtype) if dtype is not None else None, device=device),
                     requires_grad=requires_grad)



def rest_from(module_name, *sources):
    """A module ``__getattr__`` (PEP 562) for a file named as ``torch.nn.modules.<file>``: the names PyTorch keeps
    in that file but gradlab keeps elsewhere (``nn/coverage/modules/`` for the rarer layers) are found there, on
    first use, so ``from gradlab.nn.modules.loss import CTCLoss`` works as with torch. ``sources`` are module
    paths; they are imported only when such a name is asked for (no import cycle at load time)."""
    def __getattr__(name):
        import importlib
        if not name.startswith("__"):
            for src in sources:
                mod = importlib.import_module(src)
                if hasattr(mod, name):
                    return getattr(mod, name)
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
    return __getattr__
