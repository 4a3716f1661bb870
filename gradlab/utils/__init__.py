"""Utilities: activation checkpointing (``gradlab.utils.checkpoint``)."""
from .checkpoint import checkpoint, checkpoint_sequential

__all__ = ["checkpoint", "checkpoint_sequential"]
