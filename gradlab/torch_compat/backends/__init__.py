"""``torch.backends``: the switches programs set for speed (``torch.backends.cudnn.benchmark = True``,
``torch.backends.cuda.matmul.allow_tf32 = True``) and the backends they ask about (``torch.backends.mps``).

gradlab computes with NumPy (and CuPy on a GPU), not cuDNN or MPS: the flags are accepted and kept, so such
programs run unchanged, and change nothing (documented pass-throughs); ``is_available()`` answers honestly.
"""
from . import cpu, cuda, cudnn, mkldnn, mps, opt_einsum  # noqa: F401
