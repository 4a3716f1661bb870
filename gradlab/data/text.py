"""Character-level text: a corpus every Python install has, and ``CharDataset``.

Nothing is downloaded. ``stdlib_text()`` collects the docstrings (English prose
about programming) of a fixed, ordered list of pure-Python standard-library
modules, read from their source files with ``ast`` (nothing is imported or
run). The list is fixed, so the corpus is the same on every run of the same
Python version. ``CharDataset.from_file(path)`` takes any text you bring.

``CharDataset(text, block_size)``: the vocabulary is the sorted set of
characters; item ``i`` is ``(x, y)`` with ``x = text[i : i+block_size]`` and
``y`` the same window shifted by one character (predict the next character).
"""
from __future__ import annotations

import ast
import os
import sysconfig

import numpy as np

from .._tensor import Tensor
from ..errors import ArgumentError
from .dataloader import Dataset

STDLIB_MODULES = (
    "textwrap", "string", "difflib", "functools", "collections/__init__", "argparse", "pathlib", "inspect",
    "statistics", "random", "fractions", "calendar", "shutil", "subprocess", "typing", "dataclasses",
    "enum", "heapq", "bisect", "copy", "pprint", "tempfile", "glob", "fnmatch", "csv", "configparser",
    "logging/__init__", "unittest/case", "json/__init__", "json/decoder", "email/message", "urllib/parse",
    "http/client", "tarfile", "zipfile/__init__", "zipfile", "pydoc", "doctest", "pdb", "cmd", "codecs",
    "contextlib", "abc", "numbers", "decimal", "_pydecimal", "datetime", "_strptime", "locale", "gettext",
    "threading", "queue", "sched", "socketserver", "smtplib", "imaplib", "ftplib", "mailbox", "optparse",
    "getopt", "shlex", "trace", "timeit", "tokenize", "ast", "dis", "pickle", "weakref", "operator",
    "selectors", "asyncio/events", "asyncio/tasks", "asyncio/base_events", "concurrent/futures/_base",
    "multiprocessing/pool", "xml/dom/minidom", "html/parser", "wave", "turtle", "tkinter/__init__",
)


def _docstrings(source: str):
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=True)
            if doc and len(doc) > 40:
                out.append(doc)
    return out


def stdlib_text(max_chars: int = 1_000_000) -> str:
    """Docstrings of standard-library modules (in a fixed order), up to ``max_chars`` characters."""
    root = sysconfig.get_paths()["stdlib"]
    parts, total = [], 0
    for mod in STDLIB_MODULES:
        path = os.path.join(root, *mod.split("/")) + ".py"
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            docs = _docstrings(f.read())
        for d in docs:
            parts.append(d)
            total += len(d) + 2
            if total >= max_chars:
                return "\n\n".join(parts)[:max_chars]
    if not parts:  # a stripped install without sources: fall back on the builtins' docstrings
        import builtins
        parts = [getattr(builtins, n).__doc__ or "" for n in sorted(dir(builtins))]
    return "\n\n".join(p for p in parts if p)[:max_chars]


class CharDataset(Dataset):
    """Next-character prediction windows over a text (see the module docstring)."""

    def __init__(self, text: str, block_size: int = 64, chars=None):
        if not isinstance(text, str):
            raise ArgumentError(f"CharDataset: text must be a str, got {type(text).__name__}")
        if len(text) <= block_size:
            raise ArgumentError(f"CharDataset: the text has {len(text)} characters, fewer than block_size+1 "
                                f"({block_size + 1}); use more text or a smaller block_size")
        self.text, self.block_size = text, int(block_size)
        self.chars = sorted(set(text)) if chars is None else list(chars)
        self.vocab_size = len(self.chars)
        self.stoi = {c: i for i, c in enumerate(self.chars)}
        self.itos = dict(enumerate(self.chars))
        self.data = self.encode(text)

    @classmethod
    def from_file(cls, path, block_size: int = 64, encoding: str = "utf-8", **kw):
        with open(path, encoding=encoding) as f:
            return cls(f.read(), block_size, **kw)

    @classmethod
    def from_stdlib(cls, block_size: int = 64, max_chars: int = 1_000_000, **kw):
        return cls(stdlib_text(max_chars), block_size, **kw)

    def encode(self, s: str) -> np.ndarray:
        try:
            return np.fromiter((self.stoi[c] for c in s), dtype=np.int64, count=len(s))
        except KeyError as e:
            raise ArgumentError(f"CharDataset.encode: character {e.args[0]!r} is not in the vocabulary") from None

    def decode(self, ids) -> str:
        ids = ids._data if isinstance(ids, Tensor) else ids
        return "".join(self.itos[int(i)] for i in np.asarray(ids).ravel())

    def split(self, val_fraction: float = 0.1):
        """``(train, val)``: the first and last parts of the text, sharing this vocabulary."""
        cut = int(len(self.text) * (1 - val_fraction))
        return (CharDataset(self.text[:cut], self.block_size, self.chars),
                CharDataset(self.text[cut:], self.block_size, self.chars))

    def __len__(self):
        return len(self.data) - self.block_size

    def __getitem__(self, i):
        chunk = self.data[i:i + self.block_size + 1]
        return Tensor._make(chunk[:-1].copy()), Tensor._make(chunk[1:].copy())

    def batch(self, batch_size: int, generator=None):
        """A random batch ``(x, y)`` of shape ``(batch_size, block_size)`` (fast: one fancy index)."""
        from ..backend import random as _random
        g = generator or _random.generator()
        starts = g.integers(0, len(self), size=batch_size)
        idx = starts[:, None] + np.arange(self.block_size + 1)
        chunk = self.data[idx]
        return Tensor._make(chunk[:, :-1]), Tensor._make(chunk[:, 1:])
