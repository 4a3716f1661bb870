"""The docs name things that exist (issue 22: the reading path cannot go stale).

Every ``gradlab/...py`` path (and ``tests/``, ``benchmarks/``, ``scripts/`` path) written in
README.md, CONTRIBUTING.md and docs/*.md must be a file of the checkout, and every dotted name
``gradlab.x.y`` must resolve: import the longest importable prefix, then ``getattr`` the rest.
A name that is meant to be hypothetical goes in ``SKIP`` below, with its reason; keep it short.
"""
from __future__ import annotations

import pathlib
import re

import pytest

from .dotted_names import reads_as_written, resolves

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]

#: Written in the docs on purpose though they are not there; each with why.
SKIP: dict[str, str] = {}

# a path: gradlab/x/y.py (also tests/, benchmarks/, scripts/); no glob characters
PATH = re.compile(r"(?<![\w./-])((?:gradlab|tests|benchmarks|scripts)/[\w/]*\w\.py)\b")
# a dotted name starting at the package: gradlab.nn.functional.cross_entropy
DOTTED = re.compile(r"(?<![\w./])(gradlab(?:\.[A-Za-z_]\w*)+)")


def _text(doc):
    return doc.read_text(encoding="utf-8")


def _occurrences(regex):
    seen = {}
    for doc in DOCS:
        if not doc.is_file():
            continue
        for i, line in enumerate(_text(doc).splitlines(), 1):
            for m in regex.finditer(line):
                seen.setdefault(m.group(1), f"{doc.relative_to(ROOT)}:{i}")
    return seen




PATHS = _occurrences(PATH)
NAMES = _occurrences(DOTTED)


def test_the_docs_exist_and_name_things():
    assert (ROOT / "CONTRIBUTING.md").is_file(), "CONTRIBUTING.md is missing"
    assert (ROOT / "docs" / "ARCHITECTURE.md").is_file()
    assert len(PATHS) > 20 and len(NAMES) > 20, (len(PATHS), len(NAMES))


def test_skip_list_is_short_and_still_needed():
    assert len(SKIP) <= 5, "the skip-list of hypothetical names grew: make the docs name real things"
    text = "".join(_text(d) for d in DOCS if d.is_file())
    unused = [k for k in SKIP if k not in text]
    assert not unused, f"SKIP entries no doc mentions any more (delete them): {unused}"


@pytest.mark.parametrize("path", sorted(PATHS), ids=str)
def test_named_file_exists(path):
    if path in SKIP:
        pytest.skip(SKIP[path])
    assert (ROOT / path).is_file(), f"{PATHS[path]} names {path}, which does not exist (moved or renamed?)"


@pytest.mark.parametrize("name", sorted(NAMES), ids=str)
def test_named_object_resolves(name):
    if name in SKIP:
        pytest.skip(SKIP[name])
    assert resolves(name), f"{NAMES[name]} names {name}, which gradlab does not have (moved or renamed?)"
    assert reads_as_written(name), (f"{NAMES[name]} names {name}, which imports but does not work typed as written: "
                                    "a function of the same name hides a module on the way; name the file, "
                                    "or write it as `from ... import ...`")


def test_architecture_tour_names_a_function_at_every_stop():
    """Each stop of the tour (a '### ' heading) names a file and a function or class in it."""
    text = _text(ROOT / "docs" / "ARCHITECTURE.md")
    stops = re.split(r"^### ", text, flags=re.M)[1:]
    assert len(stops) >= 6, "the tour has fewer than six stops"
    for stop in stops:
        title = stop.splitlines()[0]
        assert PATH.search(stop), f"tour stop {title!r} names no gradlab/... file"
        assert DOTTED.search(stop), f"tour stop {title!r} names no gradlab.x.y function"
