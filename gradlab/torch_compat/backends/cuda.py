"""``torch.backends.cuda``: ``matmul.allow_tf32`` & co. and the scaled-dot-product-attention switches, kept
as flags that change nothing (gradlab's matmuls are CuPy's, its attention is written with ops)."""
from __future__ import annotations


class _Matmul:
    def __init__(self):
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True
        self.fp32_precision = "none"


matmul = _Matmul()
_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def is_built() -> bool:
    """Whether gradlab can reach CUDA at all (CuPy importable)."""
    try:
        import cupy  # noqa: F401
    except ImportError:
        return False
    return True


def _switch(name):
    def enable(enabled: bool) -> None:
        _sdp[name] = bool(enabled)

    def query() -> bool:
        return _sdp[name]
    return enable, query


enable_flash_sdp, flash_sdp_enabled = _switch("flash")
enable_mem_efficient_sdp, mem_efficient_sdp_enabled = _switch("mem_efficient")
enable_math_sdp, math_sdp_enabled = _switch("math")
enable_cudnn_sdp, cudnn_sdp_enabled = _switch("cudnn")
