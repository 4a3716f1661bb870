"""``torch.nn.modules.utils``: ``_single``, ``_pair``, ``_triple``, ``_quadruple``, ``_ntuple`` (a value repeated
into a tuple, as layers write their kernel sizes), and ``consume_prefix_in_state_dict_if_present``."""
from __future__ import annotations

import collections.abc
import itertools


def _ntuple(n, name="parse"):
    def parse(x):
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(itertools.repeat(x, n))
    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def consume_prefix_in_state_dict_if_present(state_dict, prefix):
    """Strip ``prefix`` from the keys of ``state_dict`` that start with it (in place), e.g. the ``module.``
    a ``DataParallel``/``DistributedDataParallel`` wrapper adds."""
    keys = list(state_dict.keys())
    for key in keys:
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    meta = getattr(state_dict, "_metadata", None)
    if meta is not None:
        for key in list(meta.keys()):
            if key.startswith(prefix) or key == prefix.rstrip("."):
                meta[key[len(prefix):] if key.startswith(prefix) else ""] = meta.pop(key)
