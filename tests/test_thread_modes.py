"""Grad mode, inference mode, anomaly mode, autocast and the engine's own state are per thread.

As in PyTorch, a ``no_grad()`` block in one thread, or a ``backward()`` running in one thread (the
engine records nothing while it runs unless ``create_graph``), never stops another thread from
recording, and a new thread starts with grad enabled. Each test orders the two threads' steps with
semaphores, events and hooks inside backward, never with sleeps, so every run interleaves the same
way; each runs ``RUNS`` times in a row, since a shared switch would fail only on some interleavings.
"""
from __future__ import annotations

import threading

import numpy as np
import pytest

import gradlab
from gradlab import nn

RUNS = 200
WAIT = 10.0  # seconds a step waits for the other thread before the test fails (a deadlock, not a hang)


def run_threads(*fns):
    """Run each function in its own thread; re-raise the first error one of them raised."""
    errors = []

    def wrap(fn):
        def body():
            try:
                fn()
            except BaseException as e:  # noqa: BLE001 - handed to the main thread
                errors.append(e)
        return body

    threads = [threading.Thread(target=wrap(f)) for f in fns]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT * 4)
        assert not t.is_alive(), "a thread is stuck: the test's ordering deadlocked"
    if errors:
        raise errors[0]


def wait(sem):
    assert sem.acquire(timeout=WAIT), "the other thread never reached its step"


def test_backward_in_one_thread_does_not_stop_another_recording():
    """The issue's repro: part2 computed in B while A's backward runs must still be recorded."""
    x = gradlab.tensor([1.0, 2.0, 3.0])
    for _ in range(RUNS):
        w1 = gradlab.ones(3, requires_grad=True)
        w2 = gradlab.ones(3, requires_grad=True)
        in_backward, b_done = threading.Semaphore(0), threading.Semaphore(0)
        got = {}

        def a():
            part1 = (w1 * x).sum()

            def pause(g):  # runs inside A's backward: let B compute while it is paused
                in_backward.release()
                wait(b_done)
            part1.register_hook(pause)
            part1.backward()

        def b():
            wait(in_backward)
            got["part2"] = (w2 * x).sum()
            b_done.release()

        run_threads(a, b)
        assert got["part2"].requires_grad and got["part2"].grad_fn is not None
        got["part2"].backward()
        np.testing.assert_array_equal(w1.grad.numpy(), x.numpy())
        np.testing.assert_array_equal(w2.grad.numpy(), x.numpy())


def test_no_grad_in_one_thread_beside_another_recording():
    """A is inside no_grad while B records; their no_grad blocks interleave (A in, B in, A out,
    B out), which with one process-wide switch would leave grad off for everyone."""
    for _ in range(RUNS):
        w = gradlab.ones(2, requires_grad=True)
        a_in, b_recorded, b_in, a_out = (threading.Semaphore(0) for _ in range(4))
        seen = {}

        def a():
            with gradlab.no_grad():
                a_in.release()
                wait(b_recorded)
                seen["a_inside"] = (w * 2).requires_grad
                wait(b_in)
            seen["a_after"] = gradlab.is_grad_enabled()
            a_out.release()

        def b():
            wait(a_in)
            y = (w * 3).sum()
            seen["b_while_a_in_no_grad"] = y.requires_grad
            y.backward()
            b_recorded.release()
            with gradlab.no_grad():
                b_in.release()
                wait(a_out)
            seen["b_after"] = gradlab.is_grad_enabled() and (w * 2).requires_grad

        run_threads(a, b)
        assert seen == {"a_inside": False, "b_while_a_in_no_grad": True, "a_after": True, "b_after": True}
        np.testing.assert_array_equal(w.grad.numpy(), [3.0, 3.0])
        assert gradlab.is_grad_enabled()


def test_a_new_thread_starts_with_grad_enabled():
    w = gradlab.ones(2, requires_grad=True)
    seen = {}

    def child():
        seen["enabled"] = gradlab.is_grad_enabled()
        seen["inference"] = gradlab.is_inference_mode_enabled()
        seen["records"] = (w * 2).requires_grad

    with gradlab.no_grad():
        run_threads(child)
    assert seen == {"enabled": True, "inference": False, "records": True}
    with gradlab.inference_mode():
        run_threads(child)
    assert seen == {"enabled": True, "inference": False, "records": True}


def _model(seed):
    gradlab.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))


def _data(seed):
    rng = np.random.default_rng(seed)
    return (gradlab.from_numpy(rng.standard_normal((5, 3)).astype(np.float32)),
            gradlab.from_numpy(rng.standard_normal((5, 1)).astype(np.float32)))


def _train(model, data, steps, before_forward=lambda k: None, in_backward=lambda k: None,
           after_forward=lambda k: None):
    opt = gradlab.optim.SGD(model.parameters(), lr=0.1)
    x, y = data
    for k in range(steps):
        before_forward(k)
        loss = ((model(x) - y) ** 2).mean()
        after_forward(k)
        loss.register_hook(lambda g, k=k: None if in_backward(k) else None)  # (a hook returns None)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return [p.detach().numpy().copy() for p in model.parameters()]


def test_two_threads_train_different_models_at_once():
    """Each thread's forward runs while the other's backward is paused inside (a hook), every step:
    both must train exactly as they do alone."""
    steps = 3
    alone = [_train(_model(s), _data(s), steps) for s in (0, 1)]
    for _ in range(RUNS):
        models, data = [_model(0), _model(1)], [_data(0), _data(1)]
        a_in_bwd, b_in_bwd, a_fwd, b_fwd = (threading.Semaphore(0) for _ in range(4))
        out = {}

        def a():  # step k: forward while B's step k-1 backward is paused; pause own backward for B's forward
            out["a"] = _train(models[0], data[0], steps,
                              before_forward=lambda k: k and wait(b_in_bwd),
                              after_forward=lambda k: k and a_fwd.release(),
                              in_backward=lambda k: (a_in_bwd.release(), wait(b_fwd)))

        def b():
            out["b"] = _train(models[1], data[1], steps,
                              before_forward=lambda k: wait(a_in_bwd),
                              after_forward=lambda k: b_fwd.release(),
                              in_backward=lambda k: (b_in_bwd.release(), k < steps - 1 and wait(a_fwd)))

        run_threads(a, b)
        for got, ref in zip((out["a"], out["b"]), alone):
            for g, r in zip(got, ref):
                np.testing.assert_array_equal(g, r)


def test_inference_mode_is_per_thread():
    w = gradlab.ones(2, requires_grad=True)
    inside, checked = threading.Semaphore(0), threading.Semaphore(0)
    seen = {}

    def a():
        with gradlab.inference_mode():
            inside.release()
            wait(checked)
            seen["a"] = gradlab.is_inference_mode_enabled()

    def b():
        wait(inside)
        seen["b"] = (gradlab.is_inference_mode_enabled(), (w * 2).requires_grad)
        checked.release()

    for _ in range(RUNS):
        run_threads(a, b)
        assert seen == {"a": True, "b": (False, True)}


def test_saved_tensor_hooks_are_per_thread():
    """A ``saved_tensors_hooks`` block in one thread packs only that thread's saved tensors (PyTorch's
    hook stack is per thread): another thread's tanh saves its output as it is, and a new thread starts
    with no hooks."""
    inside, checked = threading.Semaphore(0), threading.Semaphore(0)
    packed_by = []
    seen = {}

    def pack(t):
        packed_by.append(threading.current_thread().name)
        return t

    def a():
        with gradlab.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            inside.release()
            wait(checked)
            y = gradlab.ones(2, requires_grad=True).tanh()
            seen["a"] = y.grad_fn.saved[0].packed is not None

    def b():
        wait(inside)
        y = gradlab.ones(2, requires_grad=True).tanh()
        seen["b"] = (y.grad_fn.saved[0].packed is None, list(gradlab.autograd.function.saved_tensor_hooks()))
        y.sum().backward()
        checked.release()

    for _ in range(RUNS // 10):
        packed_by.clear()
        run_threads(a, b)
        assert seen == {"a": True, "b": (True, [])}
        assert len(packed_by) == 1, packed_by


def _nan_grad_backward():
    x = gradlab.tensor([0.0], requires_grad=True)
    gradlab.sqrt(x).sum().backward()  # d sqrt / dx at 0 is inf
    return x.grad


def test_anomaly_mode_is_per_thread():
    """A's detect_anomaly() stops A at the Inf gradient; B, running beside it without, is not stopped."""
    inside, b_done = threading.Semaphore(0), threading.Semaphore(0)
    seen = {}

    def a():
        with gradlab.autograd.detect_anomaly():
            inside.release()
            wait(b_done)
            with pytest.raises(gradlab.autograd.anomaly.AnomalyError):
                _nan_grad_backward()
            seen["a"] = gradlab.autograd.is_anomaly_enabled()

    def b():
        wait(inside)
        seen["b"] = (gradlab.autograd.is_anomaly_enabled(), bool(np.isinf(_nan_grad_backward().numpy()).all()))
        b_done.release()

    for _ in range(20):  # (the creation hook walks the stack: slower per run)
        run_threads(a, b)
        assert seen == {"a": True, "b": (False, True)}
    assert not gradlab.autograd.is_anomaly_enabled()
    assert not gradlab.autograd.function.node_observers  # the hooks are gone once no thread has it on


def test_autocast_is_per_thread():
    a_in, checked = threading.Semaphore(0), threading.Semaphore(0)
    x = gradlab.ones(2, 2)
    seen = {}

    def a():
        with gradlab.autocast("cpu"):
            seen["a"] = (x @ x).dtype
            a_in.release()
            wait(checked)

    def b():
        wait(a_in)
        seen["b"] = (x @ x).dtype
        checked.release()

    run_threads(a, b)
    assert seen == {"a": gradlab.bfloat16, "b": gradlab.float32}
