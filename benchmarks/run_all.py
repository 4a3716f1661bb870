"""Run gradlab's benchmarks one after another (``make bench``).

Each script prints its own side-by-side figures (gradlab, raw NumPy, PyTorch CPU
where installed). The long training runs (``train_addition.py``,
``train_chargpt.py``) and the GPU script (``bench_gpu.py``) are left out; run
them directly.
"""
from __future__ import annotations

import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
SCRIPTS = ["bench_foundation.py", "bench_conv.py", "bench_cross_entropy.py", "bench_show_graph.py",
           "bench_compile.py", "bench_layer_norm.py", "bench_gpt_step.py", "bench_defaults.py",
           "bench_char_transformer.py", "bench_lstm.py", "bench_gelu.py", "bench_conv_bn_programs.py"]


def main() -> int:
    failed = []
    for name in SCRIPTS:
        print(f"\n=== {name} ===", flush=True)
        if subprocess.call([sys.executable, str(HERE / name)]) != 0:
            failed.append(name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
