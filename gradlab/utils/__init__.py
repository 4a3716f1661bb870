"""Utilities: activation checkpointing (``gradlab.utils.checkpoint``)."""
from . import checkpoint as _checkpoint_mod
from .checkpoint import checkpoint, checkpoint_sequential

__all__ = ["checkpoint", "checkpoint_sequential"]
