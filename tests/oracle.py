"""Helpers to run the same program in gradlab and in PyTorch and compare."""
from __future__ import annotations

import numpy as np

import gradlab


def to_torch(torch, a):
    """Convert gradlab tensors (recursively inside lists/tuples/dicts) to torch tensors."""
    if isinstance(a, gradlab.Tensor):
        arr = np.asarray(a._data)
        if a.dtype == gradlab.bfloat16:
            t = torch.tensor(arr.astype(np.float32)).to(torch.bfloat16)
        else:
            t = torch.from_numpy(arr.copy())
        if a.requires_grad:
            t.requires_grad_(True)
        return t
    if isinstance(a, list):
        return [to_torch(torch, x) for x in a]
    if isinstance(a, tuple):
        return tuple(to_torch(torch, x) for x in a)
    if isinstance(a, dict):
        return {k: to_torch(torch, v) for k, v in a.items()}
    return a


def leaves(a):
    """The gradlab tensors that require grad inside args (in order)."""
    out = []
    if isinstance(a, gradlab.Tensor):
        if a.requires_grad:
            out.append(a)
    elif isinstance(a, (list, tuple)):
        for x in a:
            out += leaves(x)
    elif isinstance(a, dict):
        for x in a.values():
            out += leaves(x)
    return out


def torch_leaves(torch, a):
    out = []
    if isinstance(a, torch.Tensor):
        if a.requires_grad:
            out.append(a)
    elif isinstance(a, (list, tuple)):
        for x in a:
            out += torch_leaves(torch, x)
    elif isinstance(a, dict):
        for x in a.values():
            out += torch_leaves(torch, x)
    return out


def first_output(out):
    return out[0] if isinstance(out, tuple) else out


def assert_close(actual, expected, atol=1e-8, rtol=1e-6, what="value"):
    a = np.asarray(actual, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    assert a.shape == e.shape, f"{what}: shape {a.shape} != torch's {e.shape}"
    np.testing.assert_allclose(a, e, atol=atol, rtol=rtol, err_msg=what, equal_nan=True)
