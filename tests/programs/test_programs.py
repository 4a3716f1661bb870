"""tests/programs: small complete training programs (tutorial style), each run on PyTorch and on gradlab with
only the imports changed; losses per step, the last gradients and the final weights must agree."""
from __future__ import annotations

import pytest

from .harness import HERE, PROGRAMS, changed_lines, compare, run

pytestmark = pytest.mark.oracle


def test_there_are_programs():
    assert len(PROGRAMS) >= 8, PROGRAMS


@pytest.mark.parametrize("name", PROGRAMS)
def test_program_runs_on_gradlab_with_only_the_imports_changed(name, torch):
    source = (HERE / f"{name}.py").read_text()
    assert changed_lines(source) >= 1
    t = run(name, "torch")
    g = run(name, "gradlab")
    assert len(t["losses"]) >= 5
    compare(g, t)
