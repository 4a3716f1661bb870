"""2-D convolution by im2col + matmul, ``unfold``/``fold`` (im2col/col2im), and ``conv2d_naive``.

A convolution slides a ``(C, kh, kw)`` kernel over the image. **im2col**
("image to columns", ``unfold``) copies every patch the kernel visits into
one column of a matrix of shape ``(C*kh*kw, L)`` (``L`` = number of output
positions), so the whole convolution becomes *one* matrix product::

    Y[n] = W.reshape(OC, C*kh*kw) @ unfold(X)[n]          (+ bias)

and its backward is two more::

    dW = sum_n dY[n] @ unfold(X)[n]^T         dX = fold(W^T @ dY[n])

``fold`` (col2im) is the adjoint of ``unfold``: it adds each column back onto
the patch it came from; where patches overlap, their contributions add up.
``unfold``'s VJP is ``fold`` and ``fold``'s VJP is ``unfold`` -- both are
linear -- so conv2d's backward is itself differentiable (higher order works).

On arrays (the forward, and the backward when no second derivative is wanted) the same products
run a few images at a time (``Columns``: each chunk's columns are built and multiplied while they
are still in cache), and the input gradient of a stride-1 convolution is one more convolution
(``conv_input_grad``: ``dY`` correlated with the flipped kernel, no loop over kernel offsets); a
strided one is ``fold(W^T @ dY)`` done phase by phase (``conv_input_grad_fold``).

Holds: the array helpers ``spread`` (zero padding, and zeros between rows), ``im2col``, ``col2im``,
``Loop`` and ``run_loops`` (several parallel loops run as one: a layer's ``dW`` and ``dX``),
``Columns`` (im2col chunk by chunk), ``conv_arrays``/``conv_job`` (the forward), ``conv_weight_grad``,
``conv_input_grad`` and ``conv_input_grad_fold`` (with ``_phase_taps``); the ops ``conv2d``,
``unfold``, ``fold`` and ``conv2d_naive``, the same convolution written as the definition (one
output pixel at a time, at the end of this file), for teaching and benchmarking.
(1-D, 3-D and transposed convolutions are written with these in ``gradlab.nn``.)
"""
from __future__ import annotations

import bisect
from typing import Callable, NamedTuple

import numpy as np

from .. import checks as _c, ops as O
from ..autograd.function import Op
from ..autograd.grad_mode import state as _grad_state
from ..backend import dtypes as _dt, xp_of
from ..backend.threads import is_host, parallel_items
from ..errors import ArgumentError, DTypeError, GradError, ShapeError, fmt_shape
from ._util import check_tensor
from .layer_batch_norm import _channel_sums, _per_channel
from .registry import Sample, register

NS = "gradlab.nn.functional"


def pair(v, op, arg, allow_zero=False):
    """``3 -> (3, 3)``; ``(2, 3)`` and ``(3,)`` (repeated) stay; anything else is a clear error
    (``gradlab.checks.sizes``: a float or a string is a TypeError, never rounded down)."""
    if isinstance(v, (list, tuple)) and len(v) == 1:
        v = (v[0], v[0])
    return _c.sizes(v, 2, op, arg, 0 if allow_zero else 1)


def out_size(size, k, d, p, s):
    """Number of kernel positions along one axis: ``(size + 2p - d*(k-1) - 1) // s + 1``."""
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


# ---------------------------------------------------------------- array level
def strided_view(a, shape, strides):
    """A read-only strided view of ``a`` (NumPy or CuPy): the windows, without copying anything."""
    xp = xp_of(a)
    if xp is np:
        return np.lib.stride_tricks.as_strided(a, shape, strides, writeable=False)
    return xp.lib.stride_tricks.as_strided(a, shape, strides)


def spread(a, offset, step, size):
    """``a`` (``(N, C, h, w)``) placed into zeros of shape ``(N, C, *size)``: row ``i`` of ``a`` lands on
    row ``offset[0] + i * step[0]`` (columns alike); whatever falls outside ``size`` is dropped.

    With ``step`` 1 it is zero padding (``offset`` = the padding; one zeroed array and one copy,
    cheaper than ``np.pad``'s general machinery). With ``step`` = a convolution's stride it also
    puts ``step - 1`` zeros between neighbouring rows and columns: how conv2d's input gradient
    turns back into a plain stride-1 convolution (see :func:`conv_input_grad`). A negative
    ``offset`` crops the first rows.
    """
    xp = xp_of(a)
    out = xp.zeros(a.shape[:2] + tuple(size), dtype=a.dtype)
    src, dst = [slice(None)] * 2, [slice(None)] * 2
    for ax in range(2):
        o, st, n = offset[ax], step[ax], a.shape[2 + ax]
        first = max(0, -(o // st))                              # first row that lands at index >= 0
        last = min(n, (size[ax] - o + st - 1) // st)            # one past the last that lands < size
        if last <= first:
            return out
        src.append(slice(first, last))
        dst.append(slice(o + first * st, o + (last - 1) * st + 1, st))
    out[tuple(dst)] = a[tuple(src)]
    return out


def im2col(a, k, d, p, s):
    """``(N, C, H, W)`` array -> ``(N, C*kh*kw, OH*OW)`` columns (a strided view, then one copy)."""
    if p[0] or p[1]:
        a = spread(a, p, (1, 1), (a.shape[2] + 2 * p[0], a.shape[3] + 2 * p[1]))
    n, c, hp, wp = a.shape
    oh = (hp - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (wp - d[1] * (k[1] - 1) - 1) // s[1] + 1
    sn, sc, sh, sw = a.strides
    win = strided_view(a, (n, c, k[0], k[1], oh, ow), (sn, sc, sh * d[0], sw * d[1], sh * s[0], sw * s[1]))
    return win.reshape(n, c * k[0] * k[1], oh * ow)


def col2im(cols, hw, k, d, p, s):
    """The adjoint of :func:`im2col`: add every column back onto its patch (one strided add per kernel offset)."""
    xp = xp_of(cols)
    n, ckk, _ = cols.shape
    c = ckk // (k[0] * k[1])
    h, w = hw
    oh, ow = out_size(h, k[0], d[0], p[0], s[0]), out_size(w, k[1], d[1], p[1], s[1])
    c6 = cols.reshape(n, c, k[0], k[1], oh, ow)
    out = xp.zeros((n, c, h + 2 * p[0], w + 2 * p[1]), dtype=cols.dtype)
    for i in range(k[0]):
        for j in range(k[1]):
            r, q = i * d[0], j * d[1]
            out[:, :, r:r + s[0] * (oh - 1) + 1:s[0], q:q + s[1] * (ow - 1) + 1:s[1]] += c6[:, :, i, j]
    return out[:, :, p[0]:p[0] + h, p[1]:p[1] + w]


# ------------------------------------------------------------------ unfold/fold
class Unfold(Op):
    name = "unfold"
    formula = "dX = fold(dY)   (each patch's gradient is added back where the patch came from)"

    @staticmethod
    def forward(ctx, x, k, d, p, s):
        ctx.geom, ctx.hw = (k, d, p, s), x.shape[-2:]
        return im2col(x._data, k, d, p, s)

    def vjp(self, g):
        return (Fold.apply(g, self.hw, *self.geom),) + (None,) * 4

    def jvp(self, t, *_):
        return Unfold.apply(t, *self.geom)


class Fold(Op):
    name = "fold"
    formula = "dX = unfold(dY)   (fold is unfold's adjoint)"

    @staticmethod
    def forward(ctx, cols, hw, k, d, p, s):
        ctx.geom = (k, d, p, s)
        return col2im(cols._data, hw, k, d, p, s)

    def vjp(self, g):
        return (Unfold.apply(g, *self.geom),) + (None,) * 5

    def jvp(self, t, *_):
        return Fold.apply(t, self.out.shape[-2:], *self.geom)


class Loop(NamedTuple):
    """A parallel loop described, not yet run: ``fn(i, mine)`` for every ``i < n``, ``mine`` what
    ``setup()`` (if any) made for the thread that runs it, the loop touching ``work`` elements (the
    size threshold of ``threads.parallel_items``). Run by :func:`run_loops`, alone or with others."""
    n: int
    fn: Callable
    work: int
    setup: Callable | None = None


def run_loops(*jobs):
    """Run ``jobs``, ``(loop, finish)`` pairs, and return their ``finish()`` results, in order: the
    items of all the :class:`Loop` s as ONE loop of ``threads.parallel_items`` (their BLAS calls on one
    thread each), the loops' items one after another; a thread makes a loop's ``setup()`` the first
    time it takes one of its items.

    Why one loop: a conv layer's backward has two independent loops, ``dW``'s and ``dX``'s, of a few
    items each. Every parallel loop pays for waking a worker and for waiting on its last item (the
    threads finish apart by up to one item); run as one loop, a layer pays once, and the thread ahead
    at the end of ``dW``'s items goes straight on to ``dX``'s. What it buys is small: the ResNet of
    ``benchmarks/bench_conv_bn_programs.py`` has 26 -> 18 parallel loops per step, and its 3 steps at
    2 threads, median of 5 (the benchmark itself, load 2.0), took 321 ms against 324 before (the same
    within noise; 478 -> 434 ms in alternating runs at load 1.7-2.0, the noise larger than the gain).
    Where the rest of the 2-thread time goes: the calling thread's work between loops runs alone
    (batch norm and relu, memory-bound, then the engine and the optimizer: about 45 ms of a step's
    110-135 at 2 threads, timed around each loop, load 2.1).
    Same bits: each item writes its own outputs or its own partial sum, whichever thread runs it."""
    loops = [lp for lp, _ in jobs if lp.n]
    starts = [0]
    for lp in loops:
        starts.append(starts[-1] + lp.n)

    def fn(i, mine):
        j = bisect.bisect_right(starts, i) - 1
        if j not in mine:
            mine[j] = loops[j].setup() if loops[j].setup is not None else None
        loops[j].fn(i - starts[j], mine[j])
    parallel_items(fn, starts[-1], work=sum(lp.work for lp in loops), blas=True, setup=dict)
    return [finish() for _, finish in jobs]


CHUNK_BYTES = 1 << 21  # the columns of one chunk of images: 2 MB, so they are still in cache when the matmul reads them
MIN_CHUNKS = 8         # a batch is cut into at least this many chunks (when it has the images), so threads share them


def chunk_images(n, per_image):
    """Images per chunk, for ``n`` images of ``per_image`` bytes of columns: about :data:`CHUNK_BYTES`,
    and at most ``n / MIN_CHUNKS``. Why the second: a batch in one chunk would run on one gradlab
    thread, with BLAS's own threads, and BLAS's idle workers spin for about 0.1 s after such a call,
    taking a core from gradlab's threads in the next layers. Why 8, not 4: threads take chunks as they
    free up (``threads.parallel_items``), so a thread may wait up to one chunk at a loop's end: an eighth
    of it, not a quarter (the ResNet's conv calls, one thread: 150.5 ms CPU at 8 vs 152.8 at 4). Both
    bounds are fixed (never the thread count): the chunks and results are the same for any threads."""
    return int(max(1, min(CHUNK_BYTES // max(1, per_image), -(-n // MIN_CHUNKS))))


class Columns:
    """im2col of a batch of images, a few images at a time, into one reused buffer (the fast path of
    :func:`conv_arrays` and :func:`conv_weight_grad`).

    Why chunks: the columns are ``kh*kw`` times the image (38 MB for a batch of 64 16-channel 32x32
    images and a 3x3 kernel). Built all at once, they go out to main memory and come back for the
    matmul; a chunk of about :data:`CHUNK_BYTES` is written, multiplied and overwritten while it is
    still in cache. The padding is written into the chunk's own zeroed buffer (only its middle is
    overwritten for the next chunk, so its border stays zero): no ``np.pad`` of the whole batch.

    Why one ``(C*kh*kw, m*L)`` matrix per chunk (``m`` images side by side), not ``m`` matrices of
    ``(C*kh*kw, L)``: one BLAS call per chunk instead of one per image, wide enough for BLAS to split
    across threads. Measured, 16 -> 16 channels at 32x32, the forward's matmuls: 5.8 ms vs 8.5 ms on
    one thread, 8.3 vs 15.7 ms on two.

    Why "rows" wider than the output (stride 1): lay the padded chunk out flat. Kernel tap ``(i, j)``
    of output pixel ``(a, b)`` reads flat index ``(a + i*dh)*Wp + b + j*dw``, so tap ``(i, j)`` of *all*
    output pixels is one contiguous run of ``oh*Wp`` values starting at ``i*dh*Wp + j*dw``, if each
    output row is computed ``Wp`` wide (the padded width) instead of ``ow``: its last
    ``dw*(kw-1)`` "margin" columns straddle two rows and are thrown away (:meth:`crop`). The copy
    then moves long contiguous runs instead of ``ow``-long pieces: 64 channels of 8x8 images
    2.5 ms -> 0.8 ms (one thread), more than the margin's extra products cost. With a stride the
    runs are strided anyway: ``row`` is ``ow``, no margin.

    Why the padded rows are ``Wp = w + p`` wide, not ``w + 2p`` (stride 1): laid out flat, the zeros
    right of one row are the zeros left of the next, so one gap of ``p`` zeros serves both (taps past
    a row's right end read the next row's left padding). Each output row is ``w + p`` columns (at least
    ``ow``), ``p`` of them margin in a "same" convolution: 3x3, padding 1, 8x8 images, 72 columns per
    image instead of 80 (64 wanted). The ResNet's 3x3 layers, batch 64, forward + backward, one
    thread, CPU time (alternating runs, load 2.8-5.2): 64 -> 64 at 8x8 17.7-18.7 -> 15.4-16.5 ms;
    32 -> 32 at 16x16 18.0-18.9 -> 17.0-17.3 ms.

    Why the chunks are shared among threads (``backend.threads.parallel_items``: each thread, with its
    own buffers, takes the next chunk not yet taken): the copies that build the columns run on
    one core otherwise, while the matmuls use BLAS's threads. Each thread's matmuls then run with
    BLAS held to one thread (``parallel_items(..., blas=True)``), and every layer has at least
    :data:`MIN_CHUNKS` chunks, so no conv call leaves BLAS's idle workers spinning beside gradlab's
    threads (see :func:`chunk_images`). Measured on a shared 2-core machine (load 1.4-1.5), the
    ResNet of ``benchmarks/bench_conv_bn_programs.py``, 3 steps at the default 2 threads,
    alternating with the tree before: 407-481 ms vs 469-486 ms, CPU time 625-727 vs 933-967 ms.
    The chunk size does not depend on the thread count, so neither do the results.

    :meth:`run` calls ``body(part, lo, hi, cols)`` for every chunk: ``cols`` is ``(C*kh*kw, (hi - lo) * oh*row)``,
    the columns of images ``lo:hi`` side by side (a view of the thread's buffer: valid until its next chunk).
    """

    def __init__(self, x, k, d, p, s, dtype):
        self.x, self.xp = x, xp_of(x)
        n, c, h, w = x.shape
        self.hw, self.p, self.dtype = (h, w), p, dtype
        self.oh, self.ow = out_size(h, k[0], d[0], p[0], s[0]), out_size(w, k[1], d[1], p[1], s[1])
        flat = s == (1, 1)
        # the padded rows' length: stride 1, one shared zero gap of p between rows (see the class docstring)
        self.hpw = (h + 2 * p[0], max(w + p[1], self.ow) if flat else w + 2 * p[1])
        self.row = self.hpw[1] if flat else self.ow
        self.size = self.oh * self.row                                        # columns per image
        isz = np.dtype(dtype).itemsize
        self.nb = chunk_images(n, c * k[0] * k[1] * self.size * isz)
        self.nchunks = -(-n // self.nb)
        self.geom = (k, d, s, flat)
        self.k = c * k[0] * k[1]

    def _buffers(self):
        """One thread's buffers: the zero-padded chunk of images, the windows into it, the columns."""
        (k, d, s, flat), xp, nb = self.geom, self.xp, self.nb
        c, (hp, wp) = self.x.shape[1], self.hpw
        isz = np.dtype(self.dtype).itemsize
        margin = d[1] * (k[1] - 1) if flat else 0                             # the last window reads past the end
        buf = xp.zeros(nb * c * hp * wp + margin, dtype=self.dtype)
        padded = buf[:nb * c * hp * wp].reshape(nb, c, hp, wp)
        sn, sc, sh, sw = c * hp * wp * isz, hp * wp * isz, wp * isz, isz
        taps = (c, k[0], k[1], nb)                                            # (C, kh, kw, images, ...)
        if flat:
            win = strided_view(buf, taps + (self.size,), (sc, sh * d[0], sw * d[1], sn, sw))
        else:
            win = strided_view(buf, taps + (self.oh, self.ow), (sc, sh * d[0], sw * d[1], sn, sh * s[0], sw * s[1]))
        return padded, win, xp.empty(win.shape, dtype=self.dtype)

    def loop(self, body, parts=None, zero_margin=False, scratch=None):
        """The :class:`Loop` (not yet run: :func:`run_loops`) of ``body(part, lo, hi, cols, mine)`` for every
        chunk, the chunks split into ``parts`` runs of consecutive chunks (default: one per chunk) shared
        among threads; the chunks of one part go to one thread, in order. ``mine`` is what ``scratch()``
        made for this thread (``None`` without it): buffers of the caller's own. ``zero_margin``: the
        margin columns are zeros (not values of the neighbouring row), for products that sum over columns
        (an infinite input would give 0 * inf = nan)."""
        (h, w), p = self.hw, self.p
        n, nb, total = self.x.shape[0], self.nb, self.nchunks
        parts = total if parts is None else max(1, min(parts, total))

        def setup():  # one thread's buffers (the padded chunk, its windows, the columns) and the caller's
            return self._buffers() + ((None if scratch is None else scratch()),)

        def run_part(part, bufs):  # the chunks of one part, in order, in whichever thread took the part
            padded, win, buf, mine = bufs
            for ci in range(part * total // parts, (part + 1) * total // parts):
                lo = ci * nb
                m = min(nb, n - lo)
                padded[:m, :, p[0]:p[0] + h, p[1]:p[1] + w] = self.x[lo:lo + m]
                buf[:, :, :, :m] = win[:, :, :, :m]
                cols = buf.reshape(self.k, nb, self.oh, self.row)[:, :m]
                if zero_margin and self.row != self.ow:
                    cols[..., self.ow:] = 0
                body(part, lo, lo + m, cols.reshape(self.k, m * self.size), mine)
        # (CuPy: work 0, one thread: the device runs one stream)
        return Loop(parts, run_part, self.k * self.size * n if is_host(self.x) else 0, setup)

    def crop(self, rows, m):
        """``(OC, m*oh*row)`` matmul results -> ``(m, OC, oh, ow)``, the margin columns dropped (a view)."""
        return rows.reshape(rows.shape[0], m, self.oh, self.row)[..., :self.ow].transpose(1, 0, 2, 3)


PARTIAL_SUMS = 8  # the weight gradient's partial sums: chunks are summed in this many runs, then the runs in order


def conv_arrays(x, w, d, p, s, groups):
    """conv2d on arrays (the forward): :func:`conv_job`, run."""
    return run_loops(conv_job(x, w, d, p, s, groups))[0]


def conv_job(x, w, d, p, s, groups):
    """conv2d on arrays, as a job for :func:`run_loops` (``(loop, finish)``, ``finish()`` -> ``Y``):
    ``Y[n] = W.reshape(OC, C*kh*kw) @ unfold(X)[n]``, im2col and matmul a chunk of
    images at a time (:class:`Columns`: the chunk's columns stay in cache between the two; the chunks
    shared among threads, each writing its own images of ``Y``). Measured on
    one thread, batch 64, 3x3 kernel, padding 1: 16 -> 16 channels at 32x32 10.4 ms -> 7.2 ms,
    64 -> 64 at 8x8 7.0 -> 5.6 ms, against im2col of the whole batch, then one matmul."""
    xp = xp_of(x)
    n, oc = x.shape[0], w.shape[0]
    cols = Columns(x, w.shape[2:], d, p, s, w.dtype)
    wg = w.reshape(groups, oc // groups, -1)
    y = xp.empty((n, oc, cols.oh, cols.ow), dtype=w.dtype)

    def body(part, lo, hi, c, _):
        m = hi - lo
        if straight:  # no margin columns: each image's product written where it belongs, no crop copy
            xp.matmul(wg, c.reshape(groups, -1, m, cols.size).transpose(2, 0, 1, 3),
                      out=y[lo:hi].reshape(m, groups, oc // groups, cols.size))
            return
        yg = xp.matmul(wg, c.reshape(groups, -1, c.shape[1]))                   # (G, OC/G, m*oh*row)
        y[lo:hi] = cols.crop(yg.reshape(oc, -1), m)    # (16-bit operands: float32 products, cast here)
    # Why ``straight`` (a strided layer's rows have no margin; same dtypes, host arrays): one
    # matmul per image of the chunk into Y's own images, instead of the chunk's one matmul and then a
    # copy that moves Y's channels ahead of its images. Batch 64, one thread, alternating in one
    # process (load 1.8): 1x1 stride 2, 16 -> 32 at 32x32 0.80 -> 0.73 ms, 32 -> 64 at 16x16 0.58 ->
    # 0.54; 3x3 stride 2 the same within 1% (the product, not the copy, is most of their time)
    straight = cols.row == cols.ow and w.dtype == x.dtype and is_host(x)
    return cols.loop(body), lambda: y


def conv_weight_grad(x, g, wshape, d, p, s, groups):
    """conv2d's weight gradient on arrays, as a job for :func:`run_loops` (``finish()`` -> ``dW``):
    ``dW = sum_n dY[n] @ unfold(X)[n]^T``, a chunk of images at a
    time as :func:`conv_arrays`, each chunk one matmul, written ``cols @ dY^T`` (``dW^T``, transposed
    back at the end): the same product as ``dY (OC, m*L) @ cols^T``, but BLAS packs it faster here
    (measured on one thread, a chunk of 16 -> 16 channels at 32x32: 0.22 vs 0.26 ms; 64 -> 64 at
    8x8: 0.73 vs 0.78 ms). The columns are
    rebuilt from the saved input, not kept from the forward: that would hold ``kh*kw`` copies of every
    conv layer's input until the backward.

    Threads: the chunks are cut into :data:`PARTIAL_SUMS` runs of consecutive chunks (a number that does not
    depend on the thread count); each run's products are added up in order into its own partial
    sum, in whichever thread runs it, and the partial sums are added in run order at the end: the same
    bits for any thread count."""
    xp = xp_of(g)
    n, oc = g.shape[:2]
    cols = Columns(x, wshape[2:], d, p, s, g.dtype)
    parts = min(PARTIAL_SUMS, cols.nchunks)
    sums = [None] * parts

    def staging():  # one thread's copy of dY's chunk, images side by side (zero margin columns)
        return xp.zeros((oc, cols.nb, cols.oh, cols.row), dtype=g.dtype)

    def body(part, lo, hi, c, gt):
        m = hi - lo
        gt[:, :m, :, :cols.ow] = g[lo:hi].transpose(1, 0, 2, 3)
        prod = xp.matmul(c.reshape(groups, -1, c.shape[1]), gt[:, :m].reshape(groups, oc // groups, -1).swapaxes(-1, -2))
        sums[part] = prod if sums[part] is None else xp.add(sums[part], prod, out=sums[part])   # (G, K/G, OC/G)
    # the margin columns hold the next row's values; against dY's zeros they add nothing unless one is
    # infinite or nan (0 * inf = nan): one pass over X instead of zeroing them in every chunk (a write
    # of one value per row, slow): dW of 16 -> 16 channels at 32x32 7.46 -> 7.15 ms, one thread, same bits
    def finish():
        if not n:
            return xp.zeros(wshape, dtype=g.dtype)
        dwt = sums[0]
        for t in sums[1:]:
            dwt += t
        return xp.ascontiguousarray(dwt.swapaxes(-1, -2)).reshape(wshape)
    # (a strided layer's columns have no margin: no pass over X to look for infinities)
    margin = cols.row != cols.ow
    return cols.loop(body, parts, zero_margin=margin and not bool(xp.isfinite(x).all()), scratch=staging), finish


def conv_input_grad(g, w, x_hw, d, p, groups):
    """A stride-1 conv2d's input gradient on arrays, as one more convolution (:func:`conv_job`: a job
    for :func:`run_loops`).

    Each input pixel ``x[u]`` met kernel tap ``i`` in output ``y[a]`` when ``u + p = a + i*d``, so
    ``dX[u] = sum_i W[i] dY[u + p - i*d]``: with ``dY`` padded by ``q = d*(k-1) - p`` on each side that
    is a plain stride-1 correlation with the kernel flipped (``i -> k-1-i``) and its two channel axes
    swapped. So the backward is built from the forward's own pieces (im2col and matmul) with no
    Python loop over kernel offsets, unlike ``fold(W^T @ dY)`` (:func:`col2im`'s ``kh*kw`` strided
    adds, and a matmul whose inner dimension is only OC). Measured on one thread, batch 64, 3x3
    kernels (forward + backward of the layer): 16 -> 16 channels at 32x32 37.7 ms this way vs 46.8 ms
    by fold, 64 -> 64 at 8x8 24.3 vs 32.1. With a stride, ``dY`` would have to be spread out with
    ``s - 1`` zeros between its rows (:func:`spread`), three quarters of them multiplied for nothing at
    stride 2 (16 -> 32 at 32x32: 42 ms vs 22 ms by fold), so ``Conv2d.vjp_arrays`` uses this for stride 1 only
    (and not for a layer that widens the channels more than 4x: its columns are ``OC*kh*kw`` rows).
    (A padding larger than the kernel's reach makes ``q`` negative: ``dY``'s border is cropped instead.)
    """
    oc, cg, kh, kw = w.shape
    h, wd = x_hw
    q = (d[0] * (kh - 1) - p[0], d[1] * (kw - 1) - p[1])
    g = g[:, :, max(0, -q[0]):g.shape[2] - max(0, -q[0]), max(0, -q[1]):g.shape[3] - max(0, -q[1])]
    # W (OC, C/G, kh, kw) -> (C, OC/G, kh, kw), taps flipped, per group: a small copy
    wf = w.reshape(groups, oc // groups, cg, kh, kw)[..., ::-1, ::-1].transpose(0, 2, 1, 3, 4)
    wf = xp_of(w).ascontiguousarray(wf).reshape(groups * cg, oc // groups, kh, kw)
    return conv_job(g, wf, d, (max(0, q[0]), max(0, q[1])), (1, 1), groups)        # dX (N, C, H, W)


def _phase_taps(k, d, p, s, size, osize):
    """One axis of a strided conv's input gradient, by phase: for each ``r < s``, the kernel taps ``(i, e)``
    that reach input rows ``u = r + s*t`` (from output row ``t + e``: ``u + p = (t + e)*s + i*d``) and
    how many such rows there are; then the zero rows ``dY`` needs before and after (``pre``, ``post``) so
    that every ``t + e`` read lands inside the padded frame, and the frame's length."""
    phases = [([(i, (r + p - i * d) // s) for i in range(k) if (r + p - i * d) % s == 0], len(range(r, size, s)))
              for r in range(s)]
    es = [e for taps, nt in phases if nt for _, e in taps]
    pre = max([0] + [-e for e in es])
    post = max([0] + [nt - 1 + max(e for _, e in taps) - (osize - 1) for taps, nt in phases if nt and taps])
    return phases, pre, max(pre + osize + post, pre + max(nt for _, nt in phases))


def conv_input_grad_fold(gr, w, x_hw, d, p, s):
    """A strided conv2d's input gradient on arrays (a job for :func:`run_loops`), ``fold(W^T @ dY)``, a
    chunk of images at a time, the
    fold done phase by phase on long contiguous runs (also a stride-1 layer that widens the channels more
    than 4x: one phase; see ``Conv2d.vjp_arrays``).

    ``gr`` is ``dY`` as ``(N, G, OC/G, L)``. Why not :func:`col2im` on ``W^T @ dY``: its ``kh*kw``
    adds go to every ``s``-th pixel of rows only ``ow`` long, so NumPy runs thousands of 16-element
    loops per chunk (a 3x3 stride-2 layer, 16 -> 32 channels at 32x32: 2.8 ms of adds per batch vs
    2.5 ms for the products). Instead, split the input pixels into ``s*s`` phases (row ``u = r + s*t``,
    column alike): kernel tap ``i`` reaches phase ``r`` only if ``u + p - i*d`` is a multiple of ``s``,
    and then from output row ``t + e`` (:func:`_phase_taps`), a fixed shift. With ``dY`` copied into a
    zero-bordered frame (``pre`` zero rows before, ``post`` after, the same for columns: the taps that
    fall outside the output read zeros), each tap's share of a phase is *one* add of the whole chunk,
    every channel, shifted by ``e*row + f`` in the flat frame; the phase is then written into its
    pixels of ``dX`` (every pixel exactly once: no zeroing, no crop; a phase one tap reaches is written
    straight from the products). One matmul per chunk, the images side by side (as :class:`Columns`).
    Measured on one thread, CPU time, batch 64 (load 6-7, alternating): 3x3 stride 2, 16 -> 32 channels
    at 32x32 6.8 -> 4.5 ms, 32 -> 64 at 16x16 5.7 -> 4.4 ms; 1x1 stride 2 1.24 -> 0.98 and 0.67 -> 0.61
    ms, against ``col2im`` per chunk. (Also tried: building stride-2 *columns* from such phases, one
    contiguous copy per tap: slower, 4.0 -> 4.2 ms forward, the extra margin column's products and
    nine copies per chunk costing more than the strided copy saved.) The chunks are shared among threads
    (``backend.threads.parallel_items``); each image's gradient is its own products and adds in a
    fixed order, the chunks fixed by :func:`chunk_images`: the same bits for any thread count."""
    xp = xp_of(gr)
    n, groups, ocg, lcount = gr.shape
    _, cg, kh, kw = w.shape
    h, wd = x_hw
    c, oc = groups * cg, groups * ocg
    oh, ow = out_size(h, kh, d[0], p[0], s[0]), out_size(wd, kw, d[1], p[1], s[1])
    rows, pre_h, fh = _phase_taps(kh, d[0], p[0], s[0], h, oh)
    cols, pre_w, fw = _phase_taps(kw, d[1], p[1], s[1], wd, ow)
    frame = fh * fw
    wt = w.reshape(groups, ocg, cg * kh * kw).swapaxes(-1, -2)                 # (G, K/G, OC/G)
    dx = xp.empty((n, c, h, wd), dtype=xp.result_type(gr, w))
    nb = chunk_images(n, c * kh * kw * frame * dx.itemsize)
    g4 = gr.reshape(n, oc, oh, ow)

    def scratch():  # one thread's dY frame (its zero border written once) and the phase sums
        return xp.zeros((oc, nb, fh, fw), dtype=gr.dtype), xp.empty((c, nb * frame), dtype=dx.dtype)

    untouched = any(not taps for taps, _ in rows) or any(not taps for taps, _ in cols)

    def pixels(flat, m, e, f, nth, ntw):  # (C, m*frame) -> a phase's (m, C, nth, ntw) pixels, shifted by (e, f)
        return flat.reshape(c, m, fh, fw)[:, :, pre_h + e:pre_h + e + nth, pre_w + f:pre_w + f + ntw].transpose(1, 0, 2, 3)

    def chunk(ci, bufs):
        st, acc = bufs
        a, b = ci * nb, min(ci * nb + nb, n)
        m, size = b - a, (b - a) * frame
        st[:, :m, pre_h:pre_h + oh, pre_w:pre_w + ow] = g4[a:b].transpose(1, 0, 2, 3)
        dcols = xp.matmul(wt, st[:, :m].reshape(groups, ocg, size)).reshape(c, kh, kw, size)
        if untouched:   # pixels no tap reaches (a 1x1 kernel at stride 2: three in four): one contiguous fill
            dx[a:b] = 0
        for (taps_h, nth), r in zip(rows, range(s[0])):
            for (taps_w, ntw), q in zip(cols, range(s[1])):
                if not nth or not ntw:
                    continue
                out = dx[a:b, :, r::s[0], q::s[1]]
                taps = [(i, j, e, f) for i, e in taps_h for j, f in taps_w]
                if len(taps) < 2:   # no tap reaches these pixels (zeroed above), or one: its values go straight to dX
                    if taps:
                        out[...] = pixels(dcols[:, taps[0][0], taps[0][1]], m, *taps[0][2:], nth, ntw)
                    continue
                for t, (i, j, e, f) in enumerate(taps):   # acc[X] (+)= dcols[tap, X + sh], X + sh inside the chunk
                    sh = e * fw + f
                    lo, hi = max(0, -sh), min(size, size - sh)
                    src = dcols[:, i, j, lo + sh:hi + sh]
                    if t:
                        xp.add(acc[:, lo:hi], src, out=acc[:, lo:hi])
                    else:
                        acc[:, lo:hi] = src
                out[...] = pixels(acc[:, :size], m, 0, 0, nth, ntw)
    return Loop(-(-n // nb), chunk, n * c * kh * kw * frame if is_host(gr) else 0, scratch), lambda: dx


def _geometry(op, kernel_size, dilation, padding, stride):
    return (pair(kernel_size, op, "kernel_size"), pair(dilation, op, "dilation"),
            pair(padding, op, "padding", allow_zero=True), pair(stride, op, "stride"))


def _check_float(op, x, arg="input"):
    if not _dt.is_floating(x.dtype):
        raise DTypeError(f"{op}: {arg} has dtype {_dt.dtype_name(x.dtype)}; it needs a floating tensor (use .float())")


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """im2col: ``(N, C, H, W) -> (N, C*kh*kw, L)``, one column per kernel position (as PyTorch)."""
    x = check_tensor(input, "unfold")
    if x.ndim not in (3, 4):
        raise ShapeError(f"unfold: input must be (N, C, H, W) or (C, H, W), got {fmt_shape(x.shape)}")
    if x.dtype != np.bool_:  # (PyTorch unfolds bool tensors too, but no integer ones)
        _c.floating(x, "unfold", "input")
    k, d, p, s = _geometry("unfold", kernel_size, dilation, padding, stride)
    unbatched = x.ndim == 3
    if unbatched:
        x = O.unsqueeze(x, 0)
    oh, ow = (out_size(x.shape[2], k[0], d[0], p[0], s[0]), out_size(x.shape[3], k[1], d[1], p[1], s[1]))
    if oh < 1 or ow < 1:
        raise ShapeError(f"unfold: kernel {k} (dilation {d}) does not fit in input {fmt_shape(x.shape)} "
                         f"padded by {p}; make the kernel smaller or pad more")
    out = Unfold.apply(x, k, d, p, s)
    return O.squeeze(out, 0) if unbatched else out


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """col2im: ``(N, C*kh*kw, L) -> (N, C, H, W)``, summing where patches overlap (as PyTorch)."""
    x = check_tensor(input, "fold")
    if x.ndim not in (2, 3):
        raise ShapeError(f"fold: input must be (N, C*kh*kw, L) or (C*kh*kw, L), got {fmt_shape(x.shape)}")
    _c.floating(x, "fold", "input")
    k, d, p, s = _geometry("fold", kernel_size, dilation, padding, stride)
    hw = pair(output_size, "fold", "output_size")
    unbatched = x.ndim == 2
    if unbatched:
        x = O.unsqueeze(x, 0)
    kk = k[0] * k[1]
    oh, ow = out_size(hw[0], k[0], d[0], p[0], s[0]), out_size(hw[1], k[1], d[1], p[1], s[1])
    if x.shape[1] % kk:
        raise ShapeError(f"fold: input {fmt_shape(x.shape)} has {x.shape[1]} rows, not a multiple of "
                         f"kh*kw = {kk} for kernel_size {k}")
    if oh < 1 or ow < 1 or x.shape[2] != oh * ow:
        raise ShapeError(f"fold: input {fmt_shape(x.shape)} has {x.shape[2]} columns, but output_size {hw} with "
                         f"kernel {k}, dilation {d}, padding {p}, stride {s} gives {max(oh, 0)} x {max(ow, 0)} = "
                         f"{max(oh, 0) * max(ow, 0)} kernel positions")
    out = Fold.apply(x, hw, k, d, p, s)
    return O.squeeze(out, 0) if unbatched else out


# --------------------------------------------------------------------- conv2d
class Conv2d(Op):
    name = "conv2d"
    formula = "dX = fold(W^T @ dY) ; dW = sum_n dY @ unfold(X)^T ; dB = sum(dY, (0, 2, 3))"

    @staticmethod
    def forward(ctx, x, w, b, s, p, d, groups):
        ctx.save_for_backward(x, w)
        ctx.conf = (s, p, d, groups)
        y = conv_arrays(x._data, w._data, d, p, s, groups)                 # (N, OC, oh, ow)
        if b is not None:
            bias = b._data.reshape(1, -1, 1, 1)
            if np.result_type(y, bias) == y.dtype:
                y += _per_channel(bias, y)  # in place on the fresh product; against the bias spread over
                # one image (NumPy's loop with a repeated scalar operand is slower: layer_batch_norm._per_channel)
            else:
                y = y + bias
        return y

    def vjp(self, g):
        x, w = self.saved_tensors
        s, p, d, groups = self.conf
        n, c, h, wd = x.shape
        oc, cg, kh, kw = w.shape
        k, lcount = (kh, kw), g.shape[2] * g.shape[3]
        gr = O.reshape(g, (n, groups, oc // groups, lcount))
        wg = O.reshape(w, (groups, oc // groups, cg * kh * kw))
        dx = dw = db = None
        if self.needs_input_grad[0]:
            dcols = O.matmul(wg.mT, gr)                               # (N, G, K/G, L)
            dx = Fold.apply(O.reshape(dcols, (n, c * kh * kw, lcount)), (h, wd), k, d, p, s)
        if self.needs_input_grad[1]:
            cols = O.reshape(Unfold.apply(x, k, d, p, s), (n, groups, cg * kh * kw, lcount))
            dw = O.reshape(O.sum(O.matmul(gr, cols.mT), dim=0), w.shape)  # sum_n dY @ cols^T
        if self.needs_input_grad[2]:
            db = O.sum(g, dim=(0, 2, 3))
        return dx, dw, db, None, None, None, None

    def vjp_arrays(self, g):
        """``vjp`` on arrays, only for the inputs that need a gradient: ``dX`` (stride 1: a convolution of
        ``dY`` by the flipped kernel, :func:`conv_input_grad`; else ``fold(W^T @ dY)`` as in ``vjp``),
        ``dW = sum_n dY @ unfold(X)^T``, ``dB``.

        Why a twin (measured on one thread, forward + backward): ``vjp`` builds ``dX`` with ``Fold``
        so that it is itself differentiable; on arrays the stride-1 rule above is faster and the ops'
        per-call checks and Tensor wrappers are skipped: batch 64, 16 -> 16 channels, 32x32, 3x3:
        35 ms with this twin vs 48 ms through ``vjp`` (1.35x); a tiny (2, 3, 8, 8): 1.6x.
        (``Unfold``, ``Fold`` and the pooling ops have no twin: their ``vjp`` is one op whose
        forward is the same array function, within 10 us of a twin.)
        """
        x, w = self.saved_arrays
        s, p, d, groups = self.conf
        n, c, h, wd = x.shape
        oc, cg, kh, kw = w.shape
        lcount = g.shape[2] * g.shape[3]
        g = xp_of(g).ascontiguousarray(g)  # a broadcast dY (from y.sum()) would send matmul to its slow loop
        gr = g.reshape(n, groups, oc // groups, lcount)
        nf = self.next_functions
        jobs, db = [], None
        if nf[1] is not None:
            jobs.append(conv_weight_grad(x, g, w.shape, d, p, s, groups))           # sum_n dY @ cols^T
        if nf[0] is not None:
            # stride 1: a convolution of dY, whose columns have OC*kh*kw rows to make C channels; a layer
            # that widens the channels more than 4x folds instead (one thread, batch 32, 32x32: 3 -> 16
            # channels 2.9 vs 1.8 ms by fold, 3 -> 64 6.5 vs 2.2; at 4x the two are within 10%)
            if s == (1, 1) and oc <= 4 * c:
                jobs.append(conv_input_grad(g, w, x.shape[2:], d, p, groups))
            else:  # vjp's formula on arrays: fold(W^T @ dY)
                jobs.append(conv_input_grad_fold(gr, w, (h, wd), d, p, s))
        # dW's and dX's chunks as one parallel loop (run_loops: why), dW's (its runs of chunks, the
        # larger items) first
        out = run_loops(*jobs)
        dw = out.pop(0) if nf[1] is not None else None
        dx = out.pop(0) if nf[0] is not None else None
        if nf[2] is not None:
            db = _channel_sums(g)  # (a sum per row of H*W values, then over N: faster than over the axes)
        return dx, dw, db, None, None, None, None

    def jvp(self, tx, tw, tb, *conf):
        x, w, b = self.args[:3]
        out = None
        if tx is not None:
            out = Conv2d.apply(tx, w, None, *self.conf)
        if tw is not None:
            t = Conv2d.apply(x, tw, None, *self.conf)
            out = t if out is None else out + t
        if tb is not None:
            t = O.broadcast_to(O.reshape(tb, (1, -1, 1, 1)), self.out.shape)
            out = t if out is None else out + t
        return out


def check_conv_args(op, input, weight, bias, stride, padding, dilation, groups):
    """Validate conv2d's arguments; returns ``(x, w, b, stride, padding, dilation, groups, unbatched)``.

    ``padding='same'`` becomes explicit (extra padding on the bottom/right when the total is odd, as
    PyTorch); ``'valid'`` is 0.
    """
    x = check_tensor(input, op)
    w = check_tensor(weight, op, "weight")
    _check_float(op, x)
    _check_float(op, w, "weight")
    _c.same_dtype(op, hint="convert one, e.g. weight.to(input.dtype); " + _c.PARAMS_HINT, input=x, weight=w)
    if x.ndim not in (3, 4):
        raise ShapeError(f"{op}: input must be 4-D (N, C, H, W) (or 3-D (C, H, W) unbatched), got "
                         f"{fmt_shape(x.shape)}; add a batch dim with x.unsqueeze(0)")
    if w.ndim != 4:
        raise ShapeError(f"{op}: weight must be 4-D (out_channels, in_channels/groups, kH, kW), got "
                         f"{fmt_shape(w.shape)}")
    unbatched = x.ndim == 3
    if unbatched:
        x = O.unsqueeze(x, 0)
    groups = _c.size(groups, op, "groups", 1)
    _c.conv_weight(w, groups, op)
    c, oc = x.shape[1], w.shape[0]
    if c % groups or oc % groups:
        raise ShapeError(f"{op}: groups={groups} must divide both in_channels {c} (input {fmt_shape(x.shape)}) "
                         f"and out_channels {oc} (weight {fmt_shape(w.shape)})")
    if w.shape[1] * groups != c:
        raise ShapeError(
            f"{op}: weight {fmt_shape(w.shape)} expects {w.shape[1] * groups} input channels "
            f"(weight.shape[1]={w.shape[1]} x groups={groups}), but input {fmt_shape(x.shape)} has {c} channels; "
            f"weight.shape[1] must be in_channels / groups = {c // groups}")
    b = None
    if bias is not None:
        b = check_tensor(bias, op, "bias")
        if b.shape != (oc,):
            raise ShapeError(f"{op}: bias has shape {fmt_shape(b.shape)}; it needs one value per output channel: "
                             f"({oc},) for weight {fmt_shape(w.shape)}")
        _c.same_dtype(op, input=x, bias=b)
    s, d = pair(stride, op, "stride"), pair(dilation, op, "dilation")
    k = w.shape[2:]
    if isinstance(padding, str):
        if padding == "valid":
            p = (0, 0)
        elif padding == "same":
            if s != (1, 1):
                raise ArgumentError(f"{op}: padding='same' needs stride 1 (got stride {s}); pad explicitly instead")
            total = (d[0] * (k[0] - 1), d[1] * (k[1] - 1))
            p = (total[0] // 2, total[1] // 2)
            extra = (total[0] - 2 * p[0], total[1] - 2 * p[1])
            if any(extra):
                from .pad import pad as _pad
                x = _pad(x, (0, extra[1], 0, extra[0]))
        else:
            raise ArgumentError(f"{op}: padding must be an int, a pair, 'same' or 'valid', got {padding!r}")
    else:
        p = pair(padding, op, "padding", allow_zero=True)
    h, wd = x.shape[2], x.shape[3]
    if out_size(h, k[0], d[0], p[0], s[0]) < 1 or out_size(wd, k[1], d[1], p[1], s[1]) < 1:
        raise ShapeError(f"{op}: kernel {tuple(k)} (dilation {d}) is larger than input {fmt_shape(x.shape)} "
                         f"padded by {p}; use a smaller kernel or more padding")
    return x, w, b, s, p, d, groups, unbatched


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution (really cross-correlation, as in PyTorch) of ``(N, C, H, W)`` by ``(OC, C/groups, kh, kw)``.

    Computed as im2col + one matrix product; see the module docstring.
    """
    x, w, b, s, p, d, g, unbatched = check_conv_args("conv2d", input, weight, bias, stride, padding, dilation, groups)
    out = Conv2d.apply(x, w, b, s, p, d, g)
    return O.squeeze(out, 0) if unbatched else out


# -------------------------------------------------------------- registry entries
def conv_samples(src):
    n, g = src.integers(1, 2), src.choice([1, 1, 2])
    cin, cout = g * src.integers(1, 2), g * src.integers(1, 2)
    kh, kw = src.integers(1, 3), src.integers(1, 3)
    s, d = (src.integers(1, 2), src.integers(1, 2)), (src.integers(1, 2), 1)
    p = (src.integers(0, 1), src.integers(0, 2))
    h = d[0] * (kh - 1) + 1 + src.integers(0, 3)
    w = d[1] * (kw - 1) + 1 + src.integers(0, 3)
    yield Sample((src.tensor((n, cin, h, w)), src.tensor((cout, cin // g, kh, kw)), src.tensor((cout,))),
                 dict(stride=s, padding=p, dilation=d, groups=g), desc="stride, padding, dilation, groups")
    yield Sample((src.tensor((1, 1, 3, 3)), src.tensor((1, 1, 2, 2))), desc="tiny (gradgradcheck)")
    yield Sample((src.tensor((1, 2, 4, 3)), src.tensor((2, 1, 3, 2)), src.tensor((2,))),
                 dict(padding="same", groups=2, dilation=(1, 2)), desc="'same' (odd total padding), depthwise")
    yield Sample((src.tensor((2, 4, 4)), src.tensor((3, 2, 3, 3))), dict(padding=1), desc="unbatched")


def _unfold_samples(src):
    k = (src.integers(1, 3), src.integers(1, 2))
    d, p, s = (src.integers(1, 2), 1), (src.integers(0, 1), src.integers(0, 1)), (src.integers(1, 2), src.integers(1, 2))
    h, w = d[0] * (k[0] - 1) + 1 + src.integers(0, 2), k[1] + src.integers(0, 2)
    yield Sample((src.tensor((src.integers(1, 2), 2, h, w)), k), dict(dilation=d, padding=p, stride=s))
    yield Sample((src.tensor((2, 3, 3)), 2), desc="unbatched, overlapping patches")


def _fold_samples(src):
    k, s, p = (2, src.integers(1, 2)), (1, src.integers(1, 2)), (src.integers(0, 1), 0)
    hw = (3, 4)
    L = out_size(3, k[0], 1, p[0], s[0]) * out_size(4, k[1], 1, p[1], s[1])
    yield Sample((src.tensor((src.integers(1, 2), 2 * k[0] * k[1], L)), hw, k), dict(padding=p, stride=s))
    yield Sample((src.tensor((4, 4)), (3, 3), 2), desc="unbatched")


conv2d = register("conv2d", op=Conv2d, samples=conv_samples, namespace=NS, autocast="lower",
                  torch=lambda torch, *a, **k: torch.nn.functional.conv2d(*a, **k))(conv2d)
register("unfold", op=Unfold, samples=_unfold_samples, namespace=NS,
         torch=lambda torch, *a, **k: torch.nn.functional.unfold(*a, **k))(unfold)
register("fold", op=Fold, samples=_fold_samples, namespace=NS,
         torch=lambda torch, *a, **k: torch.nn.functional.fold(*a, **k))(fold)


def _patch(k, d, s, i, j):
    """The slices of the padded input under the kernel for output pixel ``(i, j)``."""
    return (slice(i * s[0], i * s[0] + d[0] * (k[0] - 1) + 1, d[0]),
            slice(j * s[1], j * s[1] + d[1] * (k[1] - 1) + 1, d[1]))


class Conv2dNaive(Op):
    name = "conv2d_naive"
    formula = "for each output pixel: dW += dY[:, :, i, j]^T . patch ; dpatch += dY[:, :, i, j] . W"

    @staticmethod
    def forward(ctx, x, w, b, s, p, d, groups):
        ctx.save_for_backward(x, w)
        ctx.conf = (s, p, d, groups)
        xp = xp_of(x._data)
        a = xp.pad(x._data, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
        n, c, h, wd = x.shape
        oc, cg, kh, kw = w.shape
        k, ocg = (kh, kw), oc // groups
        oh, ow = out_size(h, kh, d[0], p[0], s[0]), out_size(wd, kw, d[1], p[1], s[1])
        out = xp.zeros((n, oc, oh, ow), dtype=w.dtype)
        for g in range(groups):
            wg = w._data[g * ocg:(g + 1) * ocg]
            xg = a[:, g * cg:(g + 1) * cg]
            for i in range(oh):
                for j in range(ow):
                    rows, cols = _patch(k, d, s, i, j)
                    patch = xg[:, :, rows, cols]                                  # (N, C/G, kh, kw)
                    out[:, g * ocg:(g + 1) * ocg, i, j] = xp.tensordot(patch, wg, axes=([1, 2, 3], [1, 2, 3]))
        if b is not None:
            out += b._data.reshape(1, oc, 1, 1)
        return out

    def vjp(self, grad):
        if _grad_state.enabled:  # backward with create_graph=True: the loops below record no graph
            raise GradError("conv2d_naive: its backward is plain loops over arrays, so it cannot be "
                            "differentiated again (create_graph=True); use gradlab.nn.functional.conv2d "
                            "for higher-order gradients")
        dx, dw, db = Conv2dNaiveBackward.apply(grad, self)
        return dx, dw, (db if self.needs_input_grad[2] else None), None, None, None, None


class Conv2dNaiveBackward(Op):
    """The loop-by-loop backward of :class:`Conv2dNaive` (arrays in, arrays out: no second order)."""

    name = "conv2d_naive_backward"
    formula = "(not differentiable again: use F.conv2d for higher-order gradients)"

    @staticmethod
    def forward(ctx, grad, node):
        x, w = node.saved_tensors
        s, p, d, groups = node.conf
        xp = xp_of(x._data)
        a = xp.pad(x._data, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
        da = xp.zeros_like(a)
        dw = xp.zeros_like(w._data)
        oc, cg, kh, kw = w.shape
        k, ocg = (kh, kw), oc // groups
        g_ = grad._data
        for g in range(groups):
            co, ci = slice(g * ocg, (g + 1) * ocg), slice(g * cg, (g + 1) * cg)
            wg = w._data[co]
            for i in range(g_.shape[2]):
                for j in range(g_.shape[3]):
                    rows, cols = _patch(k, d, s, i, j)
                    gij = g_[:, co, i, j]                                            # (N, OC/G)
                    dw[co] += xp.tensordot(gij, a[:, ci, rows, cols], axes=([0], [0]))
                    da[:, ci, rows, cols] += xp.tensordot(gij, wg, axes=([1], [0]))
        h, wd = x.shape[2:]
        dx = da[:, :, p[0]:p[0] + h, p[1]:p[1] + wd]
        return dx.astype(x.dtype, copy=False), dw, g_.sum(axis=(0, 2, 3))

    def vjp(self, *grads):  # pragma: no cover - Conv2dNaive.vjp refuses create_graph first
        raise GradError("conv2d_naive: gradients of its gradient are not implemented (it is the teaching "
                        "version); use gradlab.nn.functional.conv2d for higher-order gradients")


def conv2d_naive(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """The same result as ``F.conv2d``, computed with a Python loop over output pixels (slow; for teaching)."""
    x, w, b, s, p, d, g, unbatched = check_conv_args("conv2d_naive", input, weight, bias, stride, padding,
                                                     dilation, groups)
    out = Conv2dNaive.apply(x, w, b, s, p, d, g)
    return out.squeeze(0) if unbatched else out


register("conv2d_naive", op=Conv2dNaive, samples=conv_samples, order=1, jvp=False, namespace="gradlab.ops.conv",  # not in F: PyTorch has no such function
         torch=lambda torch, *a, **k: torch.nn.functional.conv2d(*a, **k))(conv2d_naive)
