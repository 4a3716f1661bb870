"""The fuzz suite of issue #24: generated wrong calls across the public API (every registry op with an
oracle, F.*, module constructors and forwards, optimizers, func.*, factories, and the hand-written cases
of the issue), each also run in PyTorch (``tests/fuzz_calls.py``).

It fails on

* a bare NumPy/Python error from inside gradlab (not one of gradlab's classes);
* silent acceptance of a call PyTorch refuses;
* a refusal of a call PyTorch accepts, unless listed with its reason in
  ``gradlab.checks.STRICTER_THAN_PYTORCH`` (the one list of deliberate strictness);
* an error that ``except <PyTorch's class>`` would not catch, or whose message does not name the
  function called;
* differing values where both succeed.

Every case of every class passes (the first classes: a wrong kind, a wrong dtype, a value out of its
domain, the hand-written cases; those added later: list and ndarray operands, non-bool flag values,
empty inputs, dtype strings, in-place changes through views): there is no list of known gaps. A call
gradlab refuses on purpose is listed, with its reason, in ``STRICTER_THAN_PYTORCH``: one op and one
argument per entry, no patterns. Every case has its own id (the call mutated, then the mutation).
Oversized results (under an address-space limit, in a subprocess) are ``tests/test_out_of_memory.py``
and two threads are ``tests/test_thread_modes.py``. Everything is seeded; it runs in seconds.
"""
from __future__ import annotations

import collections

import pytest

from gradlab.checks import stricter_reason

from . import fuzz_calls as fc

FAILURES = ("bare", "silent", "unlisted-strict", "wrong-class", "wrong-name", "values", "warning")


@pytest.fixture(scope="module")
def cases():
    return fc.all_cases()


@pytest.fixture(scope="module")
def outcomes(torch, cases):
    return {case.id: fc.classify(case, torch, stricter_reason(case.fn, case.what)) for case in cases}


def test_every_case_has_its_own_id(cases):
    ids = collections.Counter(case.id for case in cases)
    assert not [i for i, n in ids.items() if n > 1], "two cases with one id: give the second an origin"


def test_no_failures_in_any_class(cases, outcomes):
    """Prints the suite's figures: cases per class, outcomes per class, and the allow-list entries used."""
    by_class = collections.defaultdict(collections.Counter)
    entries = collections.defaultdict(set)
    for case in cases:
        kind, _ = outcomes[case.id]
        by_class[case.klass][kind] += 1
        if kind == "stricter":
            entries[case.klass].add((case.fn, case.what.split(" -> ")[0]))
    from gradlab.checks import STRICTER_THAN_PYTORCH
    print(f"\nfuzz: {len(cases)} cases; {len(STRICTER_THAN_PYTORCH)} allow-list entries (each may serve several classes)")
    for klass, counts in sorted(by_class.items()):
        print(f"  {klass}: {sum(counts.values())} cases ({', '.join(f'{k} {v}' for k, v in sorted(counts.items()))}); "
              f"{len(entries[klass])} allow-list entries used")
    failed = {case.id: outcomes[case.id] for case in cases if outcomes[case.id][0] in FAILURES}
    assert not failed, "\n".join(f"{kind}: {i}: {detail}" for i, (kind, detail) in sorted(failed.items()))


def test_every_allow_list_entry_is_used(cases, outcomes):
    """A stale entry (nothing refused there any more) would excuse a future refusal unseen: remove it."""
    from gradlab.checks import STRICTER_THAN_PYTORCH
    used = {(c.fn, c.what.split(" -> ")[0]) for c in cases if outcomes[c.id][0] == "stricter"}
    assert not set(STRICTER_THAN_PYTORCH) - used, sorted(set(STRICTER_THAN_PYTORCH) - used)


def test_stricter_list_names_one_op_and_one_argument_each():
    from gradlab.checks import STRICTER_THAN_PYTORCH
    for fn, arg in STRICTER_THAN_PYTORCH:
        assert not set("*?[") & set(fn + arg), f"a pattern in the allow-list: {(fn, arg)}"
        assert " -> " not in arg, f"an entry names a value, not an argument: {(fn, arg)}"


def test_every_public_area_is_fuzzed(cases):
    from gradlab.ops.registry import REGISTRY
    names = {case.fn for case in cases}
    with_oracle = {info.name for info in REGISTRY.values() if info.torch is not None}
    assert len(with_oracle & names) > 0.9 * len(with_oracle), "most registry ops must get wrong calls"
    for must in ("Linear", "Conv2d", "LSTM", "MultiheadAttention", "Adam", "SGD", "zeros", "linspace", "randint",
                 "softshrink", "hardtanh", "avg_pool2d", "vmap_bad_dim", "jacrev_float"):
        assert must in names, must
    classes = {case.klass for case in cases}
    assert set(fc.CLASSES.values()) | {"hand-written"} <= classes, "a class without cases"


def test_stricter_list_has_reasons():
    from gradlab.checks import STRICTER_THAN_PYTORCH
    assert all(isinstance(r, str) and len(r) > 30 for r in STRICTER_THAN_PYTORCH.values())
