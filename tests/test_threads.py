"""gradlab.set_num_threads: large arrays split across threads give the same bits as one thread.

The split paths (gradlab/backend/threads.py): the unary table (exp, tanh, sigmoid...), GELU (both
forms), erf, softmax / log_softmax (so cross_entropy) forward, log_softmax's backward, conv2d (chunks
of images); layer_norm and softmax's backward run on the calling thread (memory-bound: slower split). Each is computed row by row (or
elementwise, or image by image), so the thread count cannot change a bit; the
cross-row reductions (layer_norm's dW/dB, a loss's mean) are not split at all, and conv2d's weight
gradient adds a fixed number of partial sums (one per run of chunks) in a fixed order.
"""
from __future__ import annotations

import itertools
import os
import time

import numpy as np
import pytest

import gradlab
import gradlab.nn.functional as F
from gradlab.backend import threads as backend_threads


@pytest.fixture(params=["blas", "own"])
def threads(request, monkeypatch):
    """Each test on each pool a parallel loop can run on: OpenBLAS's worker threads (where NumPy's
    OpenBLAS offers them; BLAS at 2 threads here, as a user has it: the suite's conftest holds it to 1,
    and then gradlab's loops use its own threads) and gradlab's own Python threads."""
    old = gradlab.get_num_threads()
    blas = backend_threads._openblas()
    old_blas = blas[0]() if blas is not None else None
    if request.param == "own":
        monkeypatch.setitem(backend_threads._state, "blas_pool", None)
    elif backend_threads._blas_pool() is None:
        pytest.skip("NumPy's BLAS is not OpenBLAS with gotoblas_pthread: gradlab's own threads only")
    else:
        blas[1](2)
    yield request.param
    gradlab.set_num_threads(old)
    if blas is not None:
        blas[1](old_blas)


def _program(x, w, b, t):
    x = x.detach().requires_grad_()
    w = w.detach().requires_grad_()
    b = b.detach().requires_grad_()
    h = F.layer_norm(x, (x.shape[-1],), w, b)
    h = F.gelu(h) + F.gelu(h, approximate="tanh") + gradlab.tanh(h) + gradlab.sigmoid(h) + gradlab.exp(-h * h)
    s = F.softmax(h, dim=-1)
    loss = F.cross_entropy(h.reshape(-1, h.shape[-1]), t) + (s * s).sum() + gradlab.erf(h).sum()
    loss.backward()
    return [v.detach().numpy() for v in (loss, h, s)] + [x.grad.numpy(), w.grad.numpy(), b.grad.numpy()]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("rows,n", [(2048, 96), (1531, 127)])  # 196K elements: above backend_threads.MIN_ELEMENTS
def test_results_do_not_depend_on_the_thread_count(threads, dtype, rows, n):
    rng = np.random.default_rng(0)
    assert rows * n >= backend_threads.MIN_ELEMENTS
    x = gradlab.from_numpy(rng.standard_normal((rows, n)).astype(dtype))
    w = gradlab.from_numpy(rng.standard_normal(n).astype(dtype))
    b = gradlab.from_numpy(rng.standard_normal(n).astype(dtype))
    t = gradlab.from_numpy(rng.integers(0, n, rows))
    gradlab.set_num_threads(1)
    one = _program(x, w, b, t)
    for k in (2, 3, 8):
        gradlab.set_num_threads(k)
        assert backend_threads.threads_for(rows * n) > 1
        many = _program(x, w, b, t)
        for a, c in zip(one, many):
            assert np.array_equal(a, c), f"{k} threads differ from 1"


def test_small_arrays_stay_on_the_calling_thread(threads):
    gradlab.set_num_threads(4)
    assert backend_threads.threads_for(1000) == 1
    seen = []
    backend_threads.parallel_for(lambda lo, hi: seen.append((lo, hi)), 100, grain=10, work=1000)
    assert seen == [(0, 100)]


def test_pieces_cover_the_range_once(threads):
    # up to PIECES_PER_THREAD pieces per thread, each of whole grains (the last may be shorter), taken
    # by whichever thread is free; together they cover [0, n) exactly once
    gradlab.set_num_threads(3)
    seen = []
    backend_threads.parallel_for(lambda lo, hi: seen.append((lo, hi)), 1000, grain=7, work=1 << 22)
    cover = sorted(seen)
    assert cover[0][0] == 0 and cover[-1][1] == 1000 and len(cover) == 3 * backend_threads.PIECES_PER_THREAD
    assert all(a[1] == b[0] for a, b in itertools.pairwise(cover))
    assert all((hi - lo) % 7 == 0 and hi > lo for lo, hi in cover[:-1])
    seen.clear()
    backend_threads.parallel_for(lambda lo, hi: seen.append((lo, hi)), 20, grain=7, work=1 << 22)
    assert sorted(seen) == [(0, 7), (7, 14), (14, 20)]          # fewer grains than pieces: one grain each


def test_items_are_each_taken_once_with_one_scratch_per_thread(threads):
    # parallel_items (conv2d's chunks): a free thread takes the next item; every item runs exactly
    # once, with the scratch its own thread's setup() made; an error in an item reaches the caller.
    import threading
    gradlab.set_num_threads(2)
    seen, made = [], []

    def setup():
        made.append(threading.get_ident())
        return threading.get_ident()

    def item(i, mine):
        assert mine == threading.get_ident()
        seen.append(i)
    backend_threads.parallel_items(item, 50, work=1 << 22, setup=setup)
    assert sorted(seen) == list(range(50))
    assert len(made) == 2 and len(set(made)) == 2
    seen.clear(), made.clear()
    backend_threads.parallel_items(item, 5, work=1000, setup=setup)      # small: the calling thread, in order
    assert seen == list(range(5)) and made == [threading.get_ident()]

    def broken(i, _):
        if i == 7:
            raise ValueError("item 7")
    with pytest.raises(ValueError, match="item 7"):
        backend_threads.parallel_items(broken, 20, work=1 << 22)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork: POSIX only")
def test_a_forked_child_starts_its_own_workers(threads):
    # a forked child (multiprocessing, a grading sandbox) has none of its parent's threads: its loops
    # must start new workers, not hand work to threads that do not exist there (a hang)
    gradlab.set_num_threads(2)
    backend_threads.parallel_for(lambda lo, hi: None, 100, work=1 << 22)      # the parent's workers exist
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        done = []
        backend_threads.parallel_for(lambda lo, hi: done.append(hi - lo), 100, work=1 << 22)
        os._exit(0 if sum(done) == 100 else 1)
    deadline = time.monotonic() + 60
    while True:
        got, status = os.waitpid(pid, os.WNOHANG)
        if got:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child's parallel_for did not finish in 60 s")
        time.sleep(0.02)
    assert os.waitstatus_to_exitcode(status) == 0


def test_set_num_threads_checks_its_argument(threads):
    with pytest.raises(gradlab.ArgumentError, match="set_num_threads"):
        gradlab.set_num_threads(0)
    with pytest.raises(gradlab.ArgumentError):
        gradlab.set_num_threads(2.0)
    gradlab.set_num_threads(2)
    assert gradlab.get_num_threads() == 2


def test_threaded_softmax_and_layer_norm_match_pytorch(threads):
    torch = pytest.importorskip("torch", reason="PyTorch not installed: no oracle")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1024, 256)).astype(np.float32)
    gradlab.set_num_threads(2)
    gx = gradlab.from_numpy(x).requires_grad_()
    y = F.layer_norm(F.softmax(gx, dim=-1) * 100, (256,))
    F.gelu(y).square().sum().backward()
    tx = torch.from_numpy(x).requires_grad_()
    ty = torch.nn.functional.layer_norm(torch.softmax(tx, dim=-1) * 100, (256,))
    torch.nn.functional.gelu(ty).square().sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gx.grad.numpy(), tx.grad.numpy(), rtol=1e-3, atol=1e-4)


def _conv_bn_program(lib, x, w1, w2, g, b):
    """conv (stride 1) -> batch norm -> relu -> conv (stride 2) -> batch norm, a loss, its gradients."""
    F_ = lib.nn.functional
    leaves = [lib.tensor(a).requires_grad_() for a in (x, w1, w2, g, b)]
    x_, w1_, w2_, g_, b_ = leaves
    h = lib.relu(F_.batch_norm(F_.conv2d(x_, w1_, padding=1), None, None, g_, b_, training=True))
    y = F_.batch_norm(F_.conv2d(h, w2_, padding=1, stride=2), None, None, training=True)
    loss = (y * y * y).sum()
    loss.backward()
    return [v.detach().numpy() for v in (y, loss)] + [t.grad.numpy() for t in leaves]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_conv_and_batch_norm_do_not_depend_on_the_thread_count(threads, monkeypatch, dtype):
    # conv2d's chunks of images (gradlab.ops.conv.Columns) go to threads, and the weight gradient adds
    # per-run partial sums in a fixed order (batch norm and relu stay on the calling thread). Small
    # chunks and thresholds, so that a small batch spans many chunks and pieces.
    import gradlab.ops.conv as conv
    monkeypatch.setattr(conv, "CHUNK_BYTES", 20000)
    monkeypatch.setattr(backend_threads, "MIN_ELEMENTS", 1 << 10)
    monkeypatch.setattr(backend_threads, "GRAIN", 1 << 8)
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(s).astype(dtype) for s in ((11, 4, 10, 9), (6, 4, 3, 3), (5, 6, 3, 3), (6,), (6,))]
    gradlab.set_num_threads(1)
    one = _conv_bn_program(gradlab, *arrays)
    gradlab.set_num_threads(2)
    assert backend_threads.threads_for(11 * 4 * 10 * 9) == 2        # (the patched thresholds: both threads)
    for k in (2, 3):
        gradlab.set_num_threads(k)
        many = _conv_bn_program(gradlab, *arrays)
        for a, c in zip(one, many):
            assert np.array_equal(a, c), f"{k} threads differ from 1"


@pytest.mark.parametrize("stride", [1, 2])
def test_a_conv_layers_backward_is_one_parallel_loop(threads, monkeypatch, stride):
    # dW's runs of chunks and dX's chunks go to the threads as ONE loop (gradlab.ops.conv.run_loops:
    # one worker hand-off per layer, not two), every item of both run once; the gradients are those
    # of one thread (the thread-count test above checks the bits)
    import gradlab.ops.conv as conv
    sizes, real = [], conv.parallel_items

    def counting(fn, n, **kw):
        sizes.append(n)
        return real(fn, n, **kw)
    monkeypatch.setattr(conv, "parallel_items", counting)
    rng = np.random.default_rng(4)
    x, w = (gradlab.tensor(rng.standard_normal(s), requires_grad=True) for s in ((16, 8, 32, 32), (8, 8, 3, 3)))
    grads = {}
    for k in (1, 2):
        gradlab.set_num_threads(k)
        x.grad = w.grad = None
        y = F.conv2d(x, w, padding=1, stride=stride)
        sizes.clear()
        (y * y).sum().backward()
        grads[k] = (x.grad.numpy(), w.grad.numpy())
        # 16 images, at least conv.MIN_CHUNKS (8) chunks: dW's 8 runs of chunks, then dX's 8 chunks
        assert sizes == [conv.PARTIAL_SUMS + 8]
    assert all(np.array_equal(a, b) for a, b in zip(grads[1], grads[2]))


def test_threaded_conv_and_batch_norm_match_pytorch(threads):
    torch = pytest.importorskip("torch", reason="PyTorch not installed: no oracle")
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s).astype(np.float64) for s in ((64, 8, 16, 16), (8, 8, 3, 3), (8, 8, 3, 3), (8,), (8,))]
    gradlab.set_num_threads(2)
    assert backend_threads.threads_for(64 * 8 * 16 * 16) == 2      # (big enough for both threads)
    for mine, theirs in zip(_conv_bn_program(gradlab, *arrays), _conv_bn_program(torch, *arrays)):
        np.testing.assert_allclose(mine, theirs, rtol=1e-9, atol=1e-9)


def test_blas_runs_on_one_thread_inside_pieces_that_call_it(threads):
    # conv2d's chunks each call BLAS (parallel_for(..., blas=True)): BLAS must be held to one thread
    # inside the pieces (else 2 gradlab threads x 2 BLAS threads on 2 cores), and set back after.
    # Where gradlab cannot set BLAS's threads (not OpenBLAS), such a loop stays in the calling thread.
    import threading
    blas = backend_threads._openblas()
    gradlab.set_num_threads(2)
    before = blas[0]() if blas is not None else None
    seen = []

    def piece(lo, hi):
        seen.append((threading.get_ident(), blas[0]() if blas is not None else None))
        np.ones((64, 64), np.float32) @ np.ones((64, 64), np.float32)
    backend_threads.parallel_for(piece, 4, work=1 << 20, blas=True)
    if blas is None:
        assert seen == [(threading.get_ident(), None)]
    else:
        assert len(seen) == 4 and {n for _, n in seen} == {1}                 # (4 pieces of one item)
        assert blas[0]() == before


def test_relu_stays_one_call_at_any_thread_count(threads, monkeypatch):
    # relu is bound by memory, not arithmetic: by blocks across threads it was 3x slower (Relu's
    # docstring), so it never goes to map_blocks; the same bits at 1 and 2 threads, as PyTorch's rule
    rng = np.random.default_rng(5)
    x0 = rng.standard_normal((4, 16, 64, 64)).astype(np.float32)     # 262K elements: above MIN_ELEMENTS
    g0 = rng.standard_normal(x0.shape).astype(np.float32)
    results = []
    for k in (1, 2):
        gradlab.set_num_threads(k)
        if k == 2:
            assert backend_threads.threads_for(x0.size) == 2
            monkeypatch.setattr(backend_threads, "map_blocks", lambda *a, **kw: pytest.fail("relu went by blocks"))
        x = gradlab.from_numpy(x0.copy()).requires_grad_()
        y = gradlab.relu(x)
        y.backward(gradlab.from_numpy(g0))
        results.append((y.detach().numpy(), x.grad.numpy()))
    for a, b in zip(*results):
        assert np.array_equal(a, b)
    assert np.array_equal(results[0][0], np.maximum(x0, 0))
    assert np.array_equal(results[0][1], np.where(x0 > 0, g0, 0))


def test_batch_norm_stays_on_the_calling_thread(threads, monkeypatch):
    # batch norm's passes are bound by memory: across threads they were slower (BatchNorm's docstring)
    rng = np.random.default_rng(6)
    x0 = rng.standard_normal((16, 16, 32, 32)).astype(np.float32)   # 262K elements: above MIN_ELEMENTS
    results = []
    for k in (1, 2):
        gradlab.set_num_threads(k)
        if k == 2:
            assert backend_threads.threads_for(x0.size) == 2
            for name in ("parallel_for", "parallel_items", "map_rows", "map_blocks"):
                monkeypatch.setattr(backend_threads, name, lambda *a, **kw: pytest.fail("batch norm went to threads"))
        x = gradlab.from_numpy(x0.copy()).requires_grad_()
        w = gradlab.ones(16, requires_grad=True)
        y = F.batch_norm(x, None, None, w, None, training=True)
        (y * y * y).sum().backward()
        results.append((y.detach().numpy(), x.grad.numpy(), w.grad.numpy()))
    for a, b in zip(*results):
        assert np.array_equal(a, b)
    mean, var = x0.mean(axis=(0, 2, 3), keepdims=True), x0.var(axis=(0, 2, 3), keepdims=True)
    np.testing.assert_allclose(results[0][0], (x0 - mean) / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-4)




def test_each_pool_runs_every_item_once_and_hands_errors_back(threads):
    import threading
    gradlab.set_num_threads(2)
    blas = backend_threads._openblas()
    before = blas[0]() if blas is not None else None
    seen, where, blas_inside = [], set(), set()

    def item(i, _):
        seen.append(i)
        where.add(threading.get_ident())
        deadline = time.monotonic() + 10
        while i < 2 and len(where) < 2 and time.monotonic() < deadline:   # the first two items: one per thread
            time.sleep(0.001)
        if blas is not None:
            blas_inside.add(blas[0]())
        np.exp(np.ones(1 << 15))
    backend_threads.parallel_items(item, 64, work=1 << 22)
    assert sorted(seen) == list(range(64)) and len(where) == 2 and threading.get_ident() in where
    own = [t for t in threading.enumerate() if t.name.startswith("gradlab-worker")]
    if threads == "blas":  # the other thread is BLAS's own worker (not a Python thread gradlab started)
        assert blas_inside == {1} and not any(t.ident in where for t in own)
    else:
        assert any(t.ident in where for t in own)

    def broken(i, _):
        if i == 7:
            raise ValueError("item 7")
    for _ in range(3):     # whichever thread takes item 7, its error reaches the caller
        with pytest.raises(ValueError, match="item 7"):
            backend_threads.parallel_items(broken, 20, work=1 << 22)
    if blas is not None:
        assert blas[0]() == before                      # BLAS's thread count set back, errors or not
    # nested: a loop inside a piece runs inline, on that piece's thread
    inner = []
    backend_threads.parallel_for(lambda lo, hi: backend_threads.parallel_for(
        lambda a, b: inner.append((threading.get_ident(), b - a)), 100, work=1 << 22), 4, work=1 << 22)
    assert sum(n for _, n in inner) == 400


_PRODUCTS_IN_PIECES = """
import numpy as np
import gradlab
from gradlab.backend import threads
gradlab.set_num_threads(2)
a = np.ones((256, 256), np.float32)     # 16.7M multiply-adds: a product OpenBLAS splits across its threads
out = [None] * 8

def part(lo, hi):                        # a plain loop (no blas=True) whose pieces still call BLAS
    for i in range(lo, hi):
        out[i] = float((a @ a)[0, 0])
threads.parallel_for(part, 8, work=1 << 22)
print(threads._blas_pool() is not None, out == [256.0] * 8)
"""


def test_a_product_inside_a_piece_on_blas_threads_does_not_wait_for_ever():
    # On OpenBLAS's workers a piece's product must run on its own thread: queued for the workers (busy
    # running the pieces) it would wait for ever. _on_threads holds BLAS to one thread around the loop.
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "GRADLAB_OWN_POOL")}
    out = subprocess.run([sys.executable, "-c", _PRODUCTS_IN_PIECES], capture_output=True, text=True, env=env,
                         timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[1] == "True", out.stdout
