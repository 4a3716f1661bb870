"""Sample-input generators shared by many registry entries.

Each returns a function ``samples(src)`` yielding :class:`Sample` s built
from a :class:`SampleSource`: generated shapes (empty and size-1 dimensions
included), broadcasting in both directions, Python scalars on either side,
negative dims.
"""
from __future__ import annotations

from .registry import Sample


def unary_samples(low=-2.0, high=2.0, away_from=None, max_dims=3):
    def samples(src):
        kw = dict(low=low, high=high, away_from=away_from)
        yield Sample((src.tensor(src.shape(0, max_dims, 0, 4), **kw),), desc="any shape")
        yield Sample((src.tensor(src.shape(1, max_dims, 1, 4), **kw),), desc="non-empty")
        yield Sample((src.tensor((), **kw),), desc="0-d")
    return samples


def binary_samples(name):
    def samples(src):
        sa, sb = src.broadcast_pair()
        if name == "div":
            yield Sample((src.tensor(sa), src.tensor(sb, away_from=0.0, low=-3, high=3)), desc="broadcast")
            yield Sample((src.tensor(sa), 2.5), desc="tensor / scalar")
            yield Sample((1.5, src.tensor(sb, low=0.5, high=2)), desc="scalar / tensor")
        elif name == "pow":
            yield Sample((src.tensor(sa, low=0.3, high=2.0), src.tensor(sb, low=-2, high=2)), desc="broadcast")
            yield Sample((src.tensor(sa), src.choice([2, 3])), desc="integer power")
            yield Sample((src.tensor(sa, low=0.3, high=2.0), -1.5), desc="negative power")
            yield Sample((2.0, src.tensor(sb)), desc="scalar base")
        else:
            yield Sample((src.tensor(sa), src.tensor(sb)), desc="broadcast")
            yield Sample((src.tensor(sa), 1.5), desc="tensor, scalar")
            yield Sample((-0.5, src.tensor(sb)), desc="scalar, tensor")
            a = src.shape(1, 3, 1, 4)
            yield Sample((src.tensor(a), src.tensor(a)), desc="same shape")
            yield Sample((src.tensor((3, 1)), src.tensor((1, 3))), desc="x(3,1) * y(1,3)")
    return samples


def reduce_samples(away_from=None, distinct=False, allow_empty=True, tuple_dims=True):
    def samples(src):
        kw = dict(away_from=away_from, distinct=distinct)
        shape = src.shape(1, 3, 1 if not allow_empty else 1, 4)
        x = src.tensor(shape, **kw)
        yield Sample((x,), desc="all dims")
        yield Sample((src.tensor(shape, **kw),), dict(dim=src.dim(len(shape)), keepdim=src.boolean()), desc="one dim")
        if tuple_dims and len(shape) >= 2:
            d0 = src.dim(len(shape))
            d1 = (d0 + 1) % len(shape)
            yield Sample((src.tensor(shape, **kw),), dict(dim=(d0, d1 - len(shape)), keepdim=src.boolean()),
                         desc="two dims")
        yield Sample((src.tensor((), **kw),), desc="0-d")
        if allow_empty:
            yield Sample((src.tensor((0, 3), **kw),), dict(dim=1), desc="empty rows")
    return samples
