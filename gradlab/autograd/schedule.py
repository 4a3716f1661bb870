"""The order of a backward pass: which nodes run, and in what order.

``schedule(roots)`` walks the graph from the roots and returns every node
reachable from them, each after all the nodes that send it a gradient. The
engine (``engine.py``) runs them in that order.
"""
from __future__ import annotations

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
    The op nodes are sorted in C by their sequence numbers; each leaf's
    accumulator is then placed behind its first-created user.
    """
    seen = set(starts)
    stack = list(seen)
    ops = []
    first_user = {}  # AccumulateGrad node -> (its first-created user, argument position there)
    while stack:
        node = stack.pop()
        if type(node) is AccumulateGrad:
            continue
        ops.append(node)
        for e in node.next_functions:
            if e is None:
                continue
            nxt = e[0]
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
            if type(nxt) is AccumulateGrad:
                u = first_user.get(nxt)
                if u is None or node.seq < u[0].seq:
                    first_user[nxt] = (node, node.next_functions.index(e))
    ops.sort(key=_seq_of, reverse=True)
    roots = [n for n in starts if type(n) is AccumulateGrad and n not in first_user]  # a root leaf: runs first
    if not first_user:
        return roots + ops if roots else ops
    behind = {}  # op node -> [(position, accumulator)]
    for acc, (user, pos) in first_user.items():
        behind.setdefault(user, []).append((pos, acc))
    order = sorted(roots, key=_seq_of, reverse=True)
    for node in ops:
        order.append(node)
        accs = behind.get(node)
        if accs is not None:
            if len(accs) > 1:
                accs.sort(key=_first)
            for _, acc in accs:
                order.append(acc)
    return order


_seq_of = operator.attrgetter("seq")
_first = operator.itemgetter(0)
