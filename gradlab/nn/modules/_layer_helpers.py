"""``new_param``: the uninitialised parameter every layer creates and then fills in ``reset_parameters``;
``reset_weight_and_bias``: how ``Linear`` and the convolutions fill theirs (PyTorch's default); ``rest_from``:
the names a ``torch.nn.modules.<file>`` keeps but gradlab keeps elsewhere."""
from __future__ import annotations

import math

from ...backend import dtypes as _dt
from ...factories import empty
from .. import init
from ..parameter import Parameter


def new_param(*shape, dtype=None, device=None, requires_grad=True):
    """An uninitialised parameter (every layer fills it in ``reset_parameters``)."""
    return Parameter(empty(*shape, dtype=_dt.as_dtype(dtype) if dtype is not None else None, device=device),
                     requires_grad=requires_grad)


def reset_weight_and_bias(weight, bias):
    """PyTorch's default for ``Linear`` and the convolutions: ``kaiming_uniform_(weight, a=sqrt(5))``, which
    amounts to ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``, and the same bound for ``bias`` (if any).

    The bound shrinks as ``fan_in`` (the inputs summed into each output) grows, so the output's variance
    does not grow with the layer's width. An empty weight (``fan_in == 0``) leaves the bias at zero.
    """
    init.kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = init._calculate_fan_in_and_fan_out(weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        init.uniform_(bias, -bound, bound)


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
