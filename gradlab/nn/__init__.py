"""Layer 5: neural-network building blocks (``gradlab.nn``), as in PyTorch."""
from . import functional  # noqa: F401
from . import init, utils  # noqa: F401,E402
from .module import Module  # noqa: F401,E402
from .parameter import Parameter  # noqa: F401,E402
from .modules import *  # noqa: F401,F403,E402 - Linear, Embedding, GPT...
