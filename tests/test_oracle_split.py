"""CI runs the suite once without PyTorch (as a student has it) and then, with it, only what skipped for
want of it: tests/conftest.py lists those skips (GRADLAB_TORCH_SKIPS), scripts/run_oracle_tests.py reads
the list. Checked here in a child pytest on 2 workers with `import torch` made to fail."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLE = "tests/test_grad_attribute.py"     # one test uses the `torch` fixture, the others do not


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_skips_for_want_of_torch_are_listed_for_the_oracle_run(tmp_path):
    pytest.importorskip("xdist")
    blocker = tmp_path / "no_torch"
    blocker.mkdir()
    (blocker / "torch.py").write_text("raise ImportError(\"No module named 'torch' (blocked by the test)\")\n")
    skips = tmp_path / "skipped.txt"
    env = dict(os.environ, GRADLAB_TORCH_SKIPS=str(skips),
               PYTHONPATH=os.pathsep.join([str(blocker), str(REPO)]))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider", SAMPLE],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=280)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    listed = skips.read_text().splitlines()
    assert listed == [f"{SAMPLE}::test_assigning_a_gradient_of_the_wrong_shape_dtype_or_kind_is_refused"], listed
    assert "skipped" in r.stdout
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        from run_oracle_tests import notebooks_needing_torch, skipped_ids
    finally:
        sys.path.pop(0)
    (tmp_path / "with_gone.txt").write_text("\n".join(listed + ["tests/test_no_such_file.py::test_x", ""]))
    assert skipped_ids(tmp_path / "with_gone.txt") == listed          # tests that no longer exist are dropped
    assert skipped_ids(tmp_path / "missing.txt") == []                 # no list: the script runs -m oracle
    assert "27_pytorch_seen_through_gradlab.ipynb" in notebooks_needing_torch()
