"""Dead ReLUs and saturated sigmoid/tanh, measured from the graph's saved outputs.

``relu``, ``sigmoid`` and ``tanh`` save their own output ``y`` for backward,
because their derivative is a function of it: ``y > 0``, ``y (1 - y)`` and
``1 - y^2``. Where that derivative is exactly zero, no gradient passes. A
*dead unit* is one whose derivative is zero for every example in the batch:
it passes no gradient at all, so the weights feeding it stop learning.
"""
from __future__ import annotations

import numpy as np

from ._common import host, is_accumulate, node_module, upstream

_KINDS = {"relu": "dead_relu", "sigmoid": "saturated_sigmoid", "tanh": "saturated_tanh"}


def path_nodes(nodes, t):
    """The nodes of ``nodes`` from which ``t``'s node can be reached (the paths loss -> t)."""
    target = t.grad_fn if t.grad_fn is not None else next(
        (n for n in nodes if is_accumulate(n) and n.variable is t), None)
    return upstream(nodes, target,
                    lambda n: [e[0] for e in getattr(n, "next_functions", ()) or () if e is not None])


class Finding:
    """One activation node: the fraction of zero-derivative entries and of dead units."""

    def __init__(self, node, zero_fraction, dead_fraction, units):
        self.node, self.zero_fraction, self.dead_fraction, self.units = node, zero_fraction, dead_fraction, units
        self.cause = _KINDS[node.name]
        self.module = node_module(node)

    def where(self):
        return f"{self.node.name} #{self.node.seq}" + (f" in {self.module}" if self.module else "")

    def describe(self):
        if self.dead_fraction is None:
            return f"{self.where()}: saved output freed by backward, cannot measure"
        what = "zero output" if self.node.name == "relu" else "saturated (derivative exactly 0)"
        return (f"{self.where()}: {self.zero_fraction:.0%} of entries have {what}; {self.dead_fraction:.0%} of its "
                f"{self.units} units are dead for every example")

    def verdict(self, name):
        if self.node.name == "relu":
            head = f"the gradient of {name} is zero because of dead ReLUs"
            fix = ("a ReLU whose input is negative for every example passes no gradient. Lower the learning rate, "
                   "check the initialisation and biases, or use leaky_relu / GELU")
        else:
            head = f"the gradient of {name} is zero because {self.node.name} is saturated"
            fix = (f"{self.node.name}'s derivative is 0 where its output is pinned at its limits. Scale the inputs "
                   "down (normalise, smaller initial weights) or use an activation that does not saturate")
        return (f"{head}: {self.dead_fraction:.0%} of the units of {self.where()} are dead for every example "
                f"({self.zero_fraction:.0%} of entries); {fix}.")


def _zero_derivative(name, y):
    y = host(y, dtype=np.float64)
    if name == "relu":
        return y <= 0
    if name == "sigmoid":
        return y * (1 - y) == 0
    return 1 - y * y == 0


def measure(path):
    """A :class:`Finding` for every relu / sigmoid / tanh node on ``path``."""
    found = []
    for n in path:
        if n.name not in _KINDS:
            continue
        outs = [s for s in n.saved if s.output_nr is not None]
        if getattr(n, "_released", False) or not outs or outs[0]._data is None:
            found.append(Finding(n, None, None, None))
            continue
        z = _zero_derivative(n.name, outs[0]._data)
        if z.ndim >= 2:
            dead = z.reshape(-1, z.shape[-1]).all(axis=0)
        else:
            dead = z.reshape(-1)
        found.append(Finding(n, float(z.mean()) if z.size else 0.0, float(dead.mean()) if dead.size else 0.0,
                             int(dead.size)))
    return found
