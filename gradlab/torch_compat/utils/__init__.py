"""Utilities: activation checkpointing (``gradlab.utils.checkpoint``) and data loading
(``gradlab.utils.data``, PyTorch's ``torch.utils.data``)."""
from . import data  # noqa: F401 - gradlab.utils.data, reachable after ``import gradlab`` as torch.utils.data
from .checkpoint import checkpoint, checkpoint_sequential

__all__ = ["checkpoint", "checkpoint_sequential", "data"]
