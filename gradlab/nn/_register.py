"""How the functions of ``gradlab.nn.functional`` enter the op registry (one namespace, one oracle lookup).

* ``NS``: the registry namespace of every ``F`` function, ``"gradlab.nn.functional"``;
* ``torch_f(name)``: the oracle, PyTorch's ``torch.nn.functional.<name>``;
* ``register_table(rows, **options)``: register each ``(function, samples, formula)`` row under the
  function's own name (the tables at the end of each ``nn/_*.py`` file).
"""
from __future__ import annotations

from ..ops.registry import (
    register,
    torch_functional as torch_f,  # one home: the registry's oracle lookup
)

NS = "gradlab.nn.functional"


def register_table(rows, **options):
    """Register every ``(function, samples, formula)`` row in namespace ``NS``, compared with ``torch_f``."""
    for fn, samples, formula in rows:
        register(fn.__name__, samples=samples, formula=formula, namespace=NS, torch=torch_f(fn.__name__),
                 **options)(fn)
