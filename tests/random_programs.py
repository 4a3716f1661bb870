"""Random small programs for the tests that run one program two ways and compare.

``build(steps, watched_at, dtype)`` turns a list of ``(kind, p, q)`` triples
(hypothesis draws them; see ``steps_strategy``) into a graph that mixes
broadcasting, a float64 leaf beside float32 ones, an integer input, leaves used
many times, reductions, views and multi-output ops. Steps whose index is in
``watched_at`` get ``retain_grad()`` and, on odd steps, a hook that doubles the
gradient. Returns ``(leaves, pool, watched)``.
"""
from hypothesis import strategies as st

import gradlab

UNARY = [lambda t: t.tanh(), lambda t: t.sigmoid(), lambda t: t.exp().clamp(max=5.0), lambda t: -t,
         lambda t: t.relu(), lambda t: t * 1.5, lambda t: 0.25 - t, lambda t: t.sum(-1, keepdim=True),
         lambda t: t.reshape(-1).reshape(t.shape), lambda t: t.abs().sqrt(), lambda t: t.T.T,
         lambda t: gradlab.cat(t.chunk(2, dim=0), dim=0), lambda t: t.max(dim=0, keepdim=True)[0],
         lambda t: t.softmax(-1), lambda t: t[1:] * 2.0 if t.shape[0] > 1 else t]
BINARY = [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / (b * b + 1.0),
          lambda a, b: gradlab.maximum(a, b), lambda a, b: gradlab.where(a > b, a, b),
          lambda a, b: (a @ b.transpose(-1, -2).to(a.dtype)[..., :a.shape[-1]]  # one dtype in matmul, as PyTorch
                        if a.shape[-1] == 3 and b.shape[-1] == 3 else a * b)]


def steps_strategy(max_size=14):
    return st.lists(st.tuples(st.integers(0, len(UNARY) + len(BINARY) - 1), st.integers(0, 40), st.integers(0, 40)),
                    min_size=1, max_size=max_size)


def build(steps, watched_at, dtype):
    gradlab.manual_seed(0)
    x = gradlab.randn(4, 3, dtype=dtype, requires_grad=True)
    w = gradlab.randn(1, 3, dtype=gradlab.float64, requires_grad=True)  # float64 beside float32: casts
    k = gradlab.arange(3)  # an integer input: no gradient for it
    pool = [x, w, x * k]
    watched = []
    for i, (kind, p, q) in enumerate(steps):
        a, b = pool[p % len(pool)], pool[q % len(pool)]
        t = UNARY[kind % len(UNARY)](a) if kind < len(UNARY) else BINARY[kind % len(BINARY)](a, b)
        if i in watched_at:
            if i % 2:
                t.register_hook(lambda g: g * 2)
            t.retain_grad()
            watched.append(t)
        pool.append(t)
    return (x, w), pool, watched
