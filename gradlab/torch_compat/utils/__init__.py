"""Utilities at PyTorch's paths: activation checkpointing (the module ``gradlab.utils.checkpoint``, as
``torch.utils.checkpoint``: ``gradlab.utils.checkpoint.checkpoint(fn, x)``) and data loading
(``gradlab.utils.data``, PyTorch's ``torch.utils.data``)."""
from . import checkpoint, data  # noqa: F401 - reachable after ``import gradlab`` as torch.utils.checkpoint/.data

__all__ = ["checkpoint", "data"]
