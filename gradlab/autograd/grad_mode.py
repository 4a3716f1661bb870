"""Grad modes: switch graph recording off (and on again).

Inside ``no_grad()`` ops still compute, but record no graph and save nothing
for backward: the memory an inference pass saves. Each mode works as a
context manager and as a decorator.

The modes are per thread, as PyTorch's are: ``state`` is a ``threading.local``,
so a ``no_grad()`` block in one thread (or the engine switching recording off
while its ``backward()`` runs) never stops another thread from recording, and
a new thread starts with grad enabled whatever the thread that started it was
doing. The stack of saved-tensor hooks (``autograd.graph.saved_tensors_hooks``)
is per thread too, as PyTorch's: a hook one thread pushes never packs the
tensors another thread saves. Everything that reads or sets a mode goes through ``state``.
"""
from __future__ import annotations

import functools
import threading


class _State(threading.local):
    """This thread's modes. ``__init__`` runs once in each thread that touches
    ``state``, so every thread starts from the defaults: recording on, not in
    inference mode, no backward running."""

    def __init__(self):
        self.enabled = True
        self.inference = False
        self.backward_root = None  # the tensor this thread's running backward() started from (for messages)
        self.saved_hooks = []  # this thread's ``saved_tensors_hooks`` stack of (pack, unpack), innermost last


state = _State()


def is_grad_enabled() -> bool:
    return state.enabled


def is_inference_mode_enabled() -> bool:
    return state.inference


class _Mode:
    """Base for the grad-mode context managers / decorators."""

    _target = True

    def __enter__(self):
        self._prev = (state.enabled, state.inference)
        self._apply()
        return self

    def _apply(self):
        state.enabled = self._target

    def __exit__(self, *exc):
        state.enabled, state.inference = self._prev
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(*self._args()):
                return fn(*args, **kwargs)
        return wrapper

    def _args(self):
        return ()


class no_grad(_Mode):
    """Record no graph inside: for evaluation and for updating parameters by hand."""
    _target = False


class enable_grad(_Mode):
    """Record the graph again inside an enclosing ``no_grad``."""
    _target = True


class set_grad_enabled(_Mode):
    """``set_grad_enabled(False)`` is ``no_grad()``; works as a call, context or decorator."""

    def __init__(self, mode: bool):
        self._target = bool(mode)
        self._prev = (state.enabled, state.inference)
        state.enabled = self._target  # as in PyTorch, calling it sets the mode at once

    def __enter__(self):
        return self

    def __call__(self, fn):
        state.enabled = self._prev[0]  # used as a decorator: undo the eager switch
        return super().__call__(fn)

    def _args(self):
        return (self._target,)


class inference_mode(_Mode):
    """``no_grad`` for pure inference; ``is_inference_mode_enabled()`` reports it.

    As in PyTorch, it is also stricter: a tensor made inside is an *inference
    tensor* (``t.is_inference()``), which a recorded op may never save for
    backward and which can be changed in place only inside inference mode
    (that is what lets PyTorch skip version counters for them). Use
    ``no_grad()`` for values that will meet autograd later.
    """

    def __init__(self, mode: bool = True):
        self._mode = bool(mode)

    def _apply(self):
        if self._mode:
            state.enabled = False
            state.inference = True

    def _args(self):
        return (self._mode,)
