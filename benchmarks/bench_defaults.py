"""gradlab vs PyTorch at the defaults a user actually has: all cores, and no SciPy.

    python benchmarks/bench_defaults.py [--steps N] [--only gpt lstm gru small] [--setups default noscipy one]

``pip install gradlab`` brings no SciPy, and PyTorch uses every core by default; gradlab's older
benchmarks ran with one BLAS thread and SciPy installed. This script runs each comparison in a
fresh subprocess per set-up (thread counts are read when NumPy/BLAS load, and SciPy has to be
hidden before anything imports it):

* ``noscipy``: default threads (gradlab's and PyTorch's own defaults, BLAS untouched) with SciPy
  blocked from the import system (a ``sys.meta_path`` finder that refuses ``scipy``): what
  ``pip install gradlab`` gives;
* ``default``: default threads, SciPy importable (when it is installed);
* ``one``: both libraries forced to one thread (``OMP/OPENBLAS/MKL_NUM_THREADS=1``,
  ``torch.set_num_threads(1)``, ``gradlab.set_num_threads(1)``): the older benchmarks' set-up.

Programs: ``gpt``, a small GPT written once with tensor ops and ``F.gelu`` (exact), ``F.layer_norm``,
``F.softmax``, ``masked_fill`` and ``F.cross_entropy`` (4 layers, 4 heads, width 128, context 64,
batch 32), forward + backward; ``lstm``/``gru``: ``bench_small_programs``' recurrent programs
(seq 16, batch 8, hidden 32, Adam step). Steps interleave (one gradlab step, one PyTorch step) so
both see the same load, each timed once the other library's threads are idle
(``benchmarks/_timing.py``); medians of the steps after warm-up. The load average is printed with
each set-up: on a shared machine it says how much the figures can be trusted.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _setups  # noqa: E402  (the three set-ups and their subprocesses: one home, shared by every benchmark)
import _timing  # noqa: E402  (the harness: interleaved steps, each after the threads settle)

SETUPS = _setups.SETUPS


def gpt_program(lib, rng, n_layer=4, n_head=4, C=128, T=64, B=32, V=65):
    """One forward + backward of a small GPT written with tensor ops (same code for both libraries)."""
    import numpy as np
    F = lib.nn.functional

    def param(*shape, scale=0.02):
        return lib.from_numpy((rng.standard_normal(shape) * scale).astype(np.float32)).requires_grad_()

    def ones(n):
        return lib.from_numpy(np.ones(n, np.float32)).requires_grad_()

    def zeros(n):
        return lib.from_numpy(np.zeros(n, np.float32)).requires_grad_()

    P = {"wte": param(V, C), "wpe": param(T, C), "lnf_w": ones(C), "lnf_b": zeros(C)}
    for i in range(n_layer):
        P.update({f"{i}.ln1_w": ones(C), f"{i}.ln1_b": zeros(C), f"{i}.qkv": param(C, 3 * C), f"{i}.qkv_b": zeros(3 * C),
                  f"{i}.proj": param(C, C), f"{i}.proj_b": zeros(C), f"{i}.ln2_w": ones(C), f"{i}.ln2_b": zeros(C),
                  f"{i}.fc": param(C, 4 * C), f"{i}.fc_b": zeros(4 * C), f"{i}.fc2": param(4 * C, C), f"{i}.fc2_b": zeros(C)})
    mask = lib.from_numpy(np.triu(np.ones((T, T), bool), 1))
    idx = lib.from_numpy(rng.integers(0, V, (B, T)))
    tgt = lib.from_numpy(rng.integers(0, V, (B * T,)))
    pos = lib.from_numpy(np.arange(T))
    hd = C // n_head

    def step():
        for p in P.values():
            p.grad = None
        x = F.embedding(idx, P["wte"]) + F.embedding(pos, P["wpe"])
        for i in range(n_layer):
            h = F.layer_norm(x, (C,), P[f"{i}.ln1_w"], P[f"{i}.ln1_b"])
            qkv = h @ P[f"{i}.qkv"] + P[f"{i}.qkv_b"]
            q, k, v = qkv.reshape(B, T, 3, n_head, hd).permute(2, 0, 3, 1, 4)
            att = (q @ k.transpose(-2, -1)) * (1.0 / hd ** 0.5)
            att = F.softmax(att.masked_fill(mask, float("-inf")), dim=-1)
            a = (att @ v).transpose(1, 2).reshape(B, T, C)
            x = x + (a @ P[f"{i}.proj"] + P[f"{i}.proj_b"])
            h = F.layer_norm(x, (C,), P[f"{i}.ln2_w"], P[f"{i}.ln2_b"])
            h = F.gelu(h @ P[f"{i}.fc"] + P[f"{i}.fc_b"])
            x = x + (h @ P[f"{i}.fc2"] + P[f"{i}.fc2_b"])
        x = F.layer_norm(x, (C,), P["lnf_w"], P["lnf_b"])
        logits = x @ P["wte"].transpose(0, 1)
        loss = F.cross_entropy(logits.reshape(B * T, V), tgt)
        loss.backward()
        return loss.item()
    return step


def _rnn_program(kind):
    def build(lib, rng):
        sys.path.insert(0, HERE)
        import bench_small_programs as bsp
        return bsp._rnn(kind)(lib, rng)
    return build


PROGRAMS = {"gpt": gpt_program, "lstm": _rnn_program("LSTM"), "gru": _rnn_program("GRU")}


def child(setup, names, steps):
    """Runs in the subprocess: time each program with both libraries, print one JSON line."""
    import numpy as np
    sys.path.insert(0, os.path.join(HERE, ".."))
    import torch

    import gradlab
    _setups.configure(torch)
    res = {"setup": setup, "load": os.getloadavg()[0], "torch_threads": torch.get_num_threads(),
           "gradlab_threads": gradlab.get_num_threads(), "scipy": "scipy" in sys.modules or _has_scipy(),
           "programs": {}}
    for name in names:
        g = PROGRAMS[name](gradlab, np.random.default_rng(0))
        t = PROGRAMS[name](torch, np.random.default_rng(0))
        n = steps if name == "gpt" else steps * 10
        times, _ = _timing.interleaved({"gradlab": g, "PyTorch": t}, [()] * (n + 3), warmup=3)
        sg, st = _timing.stats(times["gradlab"]), _timing.stats(times["PyTorch"])
        res["programs"][name] = [v * 1e3 for v in (sg["wall"], st["wall"], sg["cpu"], st["cpu"])]
    res["load_end"] = os.getloadavg()[0]
    res["scipy_loaded"] = "scipy" in sys.modules
    print("RESULT " + json.dumps(res))


def _has_scipy():
    if _setups.current() == "noscipy":
        return False
    import importlib.util
    return importlib.util.find_spec("scipy") is not None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=10, help="GPT steps per set-up (recurrent programs: 10x)")
    ap.add_argument("--only", nargs="*", default=list(PROGRAMS), choices=list(PROGRAMS))
    ap.add_argument("--setups", nargs="*", default=list(SETUPS), choices=list(SETUPS))
    ap.add_argument("--rounds", type=int, default=1,
                    help="run the set-ups round-robin this many times (load on a shared machine changes within minutes)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child, args.only, args.steps)
        return
    print(f"gradlab vs PyTorch, medians of interleaved steps; machine: {os.cpu_count()} CPUs")
    rows = []
    for r in range(args.rounds):
        for setup in args.setups:
            out = _setups.run(__file__, ["--child", setup, "--steps", str(args.steps), "--only", *args.only],
                              setup, capture=True)
            line = next((ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")), None)
            if line is None:
                print(f"{setup}: failed\n{out.stdout}\n{out.stderr}")
                continue
            res = json.loads(line[7:])
            rows.append(res)
            print(f"\n[{setup}{f' round {r + 1}' if args.rounds > 1 else ''}] {SETUPS[setup]}: gradlab "
                  f"{res['gradlab_threads']} thread(s), PyTorch {res['torch_threads']}, SciPy "
                  f"{'loaded' if res['scipy_loaded'] else 'not loaded'}{'' if res['scipy'] else ' (not importable)'}; "
                  f"load average {res['load']:.2f} -> {res['load_end']:.2f}")
            for name, (g, t, cg, ct) in res["programs"].items():
                print(f"  {name:5s} gradlab {g:8.2f} ms   PyTorch {t:8.2f} ms   ratio {g / t:5.2f}x   "
                      f"(CPU time {cg:8.2f} vs {ct:8.2f} ms: {cg / ct:5.2f}x)")
    if args.rounds > 1:
        print("\nmedian ratio over the rounds (wall):")
        for setup in args.setups:
            for name in args.only:
                rs = [r["programs"][name][0] / r["programs"][name][1] for r in rows if r["setup"] == setup]
                if rs:
                    print(f"  {setup:8s} {name:5s} {statistics.median(rs):5.2f}x  (rounds: "
                          f"{', '.join(f'{x:.2f}' for x in rs)})")


if __name__ == "__main__":
    main()
