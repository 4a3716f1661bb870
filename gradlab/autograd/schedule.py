"""The order of a backward pass: which nodes run, and in what order.

``schedule(roots)`` walks the graph from the roots and returns every node
reachable from them, each after all the nodes that send it a gradient. The
engine (``engine.py``) runs them in that order.
"""
from __future__ import annotations

import bisect
import operator

from .function import AccumulateGrad


def schedule(starts):
    """Every node reachable from ``starts``, in the order backward runs them.

    A node must run after every node that sends it a gradient. Its users were
    all created after it, so they have higher sequence numbers: running nodes
    from the highest number down is a valid order (PyTorch's engine uses the
    same priority). A leaf's ``AccumulateGrad`` runs right after the first-created
    of its users (the last of them to run), so a leaf's ``.grad`` is final as
    early as possible; two leaves of one op in argument order.

    The walk is an explicit stack, not recursion: a 100 000-op chain is fine.
    Leaves' accumulators never go on the stack (they lead nowhere); the walk
    only notes each one's first-created user. The op nodes are then sorted by
    sequence number (``list.sort``, in C) and each accumulator is placed
    behind its user. This runs once per backward over every node, so it is
    written for speed; ``tests/test_engine_order.py`` pins the order.
    """
    seen = set(starts)
    stack = [n for n in seen if type(n) is not AccumulateGrad]
    ops = []
    first_user = {}  # AccumulateGrad node -> (its first-created user, argument position there)
    while stack:
        node = stack.pop()
        ops.append(node)
        for e in node.next_functions:
            if e is None:
                continue
            nxt = e[0]
            if type(nxt) is AccumulateGrad:
                u = first_user.get(nxt)
                if u is None or node.seq < u[0].seq:
                    first_user[nxt] = (node, node.next_functions.index(e))
            elif nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    ops.sort(key=_seq_of, reverse=True)
    roots = [n for n in starts if type(n) is AccumulateGrad and n not in first_user]  # a root leaf: runs first
    if not first_user:
        return roots + ops if roots else ops
    # Each accumulator goes right behind its user. ``ops`` is sorted, so the user's place is found by
    # bisection, and the order is then put together from slices of ``ops`` (no Python loop over every node).
    behind = sorted((bisect.bisect_left(ops, -user.seq, key=_minus_seq), pos, acc)
                    for acc, (user, pos) in first_user.items())  # (user's place, argument position, accumulator)
    order = sorted(roots, key=_seq_of, reverse=True)
    start = 0
    for i, _, acc in behind:
        order += ops[start:i + 1]  # the nodes up to and including the user ...
        order.append(acc)          # ... then the accumulator
        start = i + 1
    order += ops[start:]
    return order


_seq_of = operator.attrgetter("seq")


def _minus_seq(node):
    return -node.seq  # (``ops`` is sorted from the highest number down; bisect wants rising keys)
