"""The submissions in tests/fixtures/submissions and what each must score, for the two tests that grade them.

* ``wrong_*.ipynb``: a plausible bug; ``expected_NN.json`` maps it to the parts it must lose (``WRONG``);
* ``alt_*.ipynb``: another correct way to write the answer: full marks (``ALTERNATIVES``);
* the ones that attack the grader itself (``*fakes*``, ``*forged*``: forged check records, patched helpers),
  which only the sandboxed grader can judge (``gaming``).

tests/test_course_fixtures.py grades every honest one in-process (fast: the checks' teeth);
tests/test_course_grade.py grades the gaming ones and ``SANDBOX_SAMPLE`` of the honest ones in real
sandboxed kernels with ``gradlab grade``, against the same expectations, so the two paths must agree.
"""
from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "submissions"

WRONG = {}     # fixture stem -> the grade_ids of the parts its bug must cost (every other part still passes)
for _f in sorted(FIXTURES.glob("expected_*.json")):
    for _name, _parts_lost in json.loads(_f.read_text()).items():
        WRONG[Path(_name).stem] = set(_parts_lost)
ALTERNATIVES = sorted(p.stem for p in FIXTURES.glob("alt_*.ipynb"))


def gaming(stem: str) -> bool:
    """A fixture that attacks the grader itself: only the sandboxed grader judges it."""
    return "fakes" in stem or "forged" in stem


HONEST = sorted(s for s in [*WRONG, *ALTERNATIVES] if not gaming(s))
# every eighth honest fixture also goes through the sandbox: wrong ones and alternatives, several exercises
SANDBOX_SAMPLE = HONEST[::8]
SANDBOXED = sorted({*(s for s in [*WRONG, *ALTERNATIVES] if gaming(s)), *SANDBOX_SAMPLE})
