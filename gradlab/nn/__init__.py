"""Layer 5: neural-network building blocks (``gradlab.nn``), as in PyTorch.

* ``Module`` (``module.py``) and ``Parameter`` (``parameter.py``): the base of every layer;
* the layers (``modules/``, one file per kind), re-exported here: ``Linear``, ``Conv2d``, ``GPT``...;
* ``functional`` (``F``): the functions the layers call, implemented in ``nn/_<kind>.py``;
* ``init`` (initialisers) and ``utils`` (gradient clipping, weight norm, ``utils.rnn``);
* ``coverage/``: the rest of PyTorch's ``torch.nn`` (CTC, lazy layers, rare losses...), off the reading path.
"""
from . import functional, init, utils  # noqa: F401
from .module import Module  # noqa: F401
from .modules import *  # noqa: F401,F403 - Linear, Embedding, GPT...
from .parameter import Parameter  # noqa: F401
from . import parallel  # noqa: F401,E402 - torch.nn.parallel (after the layers it re-exports)
