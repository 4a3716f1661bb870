"""``gradlab course release OUT``: write the students' repository, and prove that nothing secret is in it.

What a student gets (``SHIPPED`` copied from the course, the rest written here):

* the package (``gradlab/``, ``widgets/``, ``pyproject.toml``, ``LICENSE``): what the lab runs;
* ``notebooks/`` (the course) and ``exercises/``, built afresh from ``solutions/`` (``build``), so a
  stale or hand-edited ``exercises/`` can never ship;
* ``docs/debugging.md`` and ``docs/images/``;
* a students' ``README.md`` and ``Makefile`` (``make lab``, ``make test``) and ``tests/`` (the
  course's ``tests/student/``: the set-up works, every notebook is well formed).

What a student never gets: ``solutions/``, the hidden tests, the test suite and its fixtures
(wrong and alternative submissions, expected parts), ``scripts/``, ``benchmarks/``, CI and the
instructor's documentation (``docs/instructors.md``, ``docs/ARCHITECTURE.md``).

``leaks(out, course)`` scans **every file** of a release for the instructor's secrets: each line of
a solution region or a hidden-test region that the public files do not also contain (a line such
as ``import numpy as np`` is no secret), each such region as a block, a copy of any solution or
fixture file, and solution markers left in a notebook. ``release`` refuses to finish (and says
what leaked) if the scan finds anything; the tests run the same scan, and a second, independent
one.

Holds ``release(out, course)``, ``leaks(out, course)``, ``SHIPPED`` and ``reference_helpers(course)``
(the helpers the instructor's cells define, which no release may contain).
"""
from __future__ import annotations

import glob
import json
import os
import shutil

from .course_dir import Course
from .exercise_build import build
from .notebook import BEGIN_HIDDEN, BEGIN_SOLUTION, END_HIDDEN, END_SOLUTION, CourseError, marker_regions, read_notebook
from .references import reference_seeds

SHIPPED = ("LICENSE", "pyproject.toml", "gradlab", "widgets", "notebooks", "docs/debugging.md", "docs/images")
STUDENT_TESTS = "tests/student"        # the students' own tests, shipped as tests/
MIN_SECRET_LEN = 12                   # shorter lines ("return out") say nothing about a solution
_SKIP = ("__pycache__", ".ipynb_checkpoints", ".pytest_cache")

STUDENT_MAKEFILE = """\
# The students' commands:
#   make lab   -- set up a virtual environment and open the course in JupyterLab
#                 (make lab PORT=8899 ARGS="--no-browser --ip=0.0.0.0"; works as root too)
#   make test  -- set up the virtual environment and check that it works (tests/)
# pip runs only when the venv is new or pyproject.toml changed: a second run works offline.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.gradlab-installed-dev-lab-data
PORT ?=
ARGS ?=

.PHONY: lab test venv clean

$(BIN)/python:
\t$(PYTHON) -m venv $(VENV)
\t$(BIN)/python -m pip install --upgrade pip >/dev/null

$(STAMP): pyproject.toml | $(BIN)/python
\t$(BIN)/python -m pip install -q -e ".[dev,lab,data]"
\t@touch $@

venv: $(STAMP)

lab: venv
\t$(BIN)/python -m gradlab lab $(if $(PORT),--port $(PORT)) $(ARGS)

test: venv
\t$(BIN)/python -m pytest tests -q

clean:
\trm -rf $(VENV) .pytest_cache
"""

STUDENT_README = """\
# gradlab: the course

A Jupyter-first course on the machinery under deep learning: tensors, autograd, operators, optimizers,
memory and debugging, with a small autograd engine (`gradlab/`) you can read and step through.

## Start

```bash
make lab          # sets up .venv once, then opens JupyterLab at this folder
make test         # checks that the set-up works
```

Without make (Windows, or anywhere):

```bash
python -m venv .venv
.venv/bin/python -m pip install -e ".[dev,lab,data]"   # Windows: .venv\\Scripts\\python -m pip ...
.venv/bin/python -m gradlab lab                          # --port N and jupyter lab flags work too
```

## What is here

* `notebooks/`: the course, numbered; start with `00_welcome.ipynb` (it opens by itself).
* `exercises/`: the graded exercises. Fill in the cells marked `# YOUR CODE HERE`; each graded cell
  checks your results against the exercise's own references as you run it.
* `docs/debugging.md`: what to do when training goes wrong.

## Check an exercise

```bash
.venv/bin/python -m gradlab grade exercises/01_unbroadcast.ipynb
```

runs your notebook in a fresh kernel and prints each graded part with its points and, where it
fails, the case and a hint. This is a self-check with the tests you can see; your instructor grades
your submission with the same parts and more cases. Submit the notebook file itself (its metadata
names the exercise, so keep the cells' metadata as it is).
"""


def _walk(path):
    """Every file under ``path`` (or ``path`` itself), skipping caches."""
    if os.path.isfile(path):
        yield path
        return
    for d, dirs, files in os.walk(path):
        dirs[:] = sorted(x for x in dirs if x not in _SKIP)
        for f in sorted(files):
            if not f.endswith((".pyc", ".pyo")):
                yield os.path.join(d, f)


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


def release(course: Course, out) -> list:
    """Write the students' repository for ``course`` into ``out`` (a new or empty folder); returns its files."""
    out = os.path.abspath(os.fspath(out))
    if not course.is_instructors:
        raise CourseError(f"course release: {course.root} has no solutions/ notebooks: it is already a "
                          "students' copy (release from the instructor's repository)")
    if os.path.exists(out) and (not os.path.isdir(out) or os.listdir(out)):
        raise CourseError(f"course release: {out} exists and is not empty; release into a new folder "
                          "(nothing is overwritten)")
    if os.path.commonpath([out, course.root]) == course.root and \
            os.path.relpath(out, course.root).split(os.sep)[0] in ("solutions", "exercises", "notebooks", "gradlab"):
        raise CourseError(f"course release: {out} is inside the course's own folders; pick a folder outside them")
    os.makedirs(out, exist_ok=True)
    for rel in SHIPPED:
        src = os.path.join(course.root, rel)
        if not os.path.exists(src):
            continue
        for f in _walk(src):
            dst = os.path.join(out, os.path.relpath(f, course.root))
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy2(f, dst)
    build(course.solutions, os.path.join(out, "exercises"))
    tests = os.path.join(course.root, STUDENT_TESTS)
    for f in _walk(tests) if os.path.isdir(tests) else ():
        dst = os.path.join(out, "tests", os.path.relpath(f, tests))
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(f, dst)
    _write(os.path.join(out, "README.md"), STUDENT_README)
    _write(os.path.join(out, "Makefile"), STUDENT_MAKEFILE)
    _write(os.path.join(out, ".gitignore"), "__pycache__/\n*.pyc\n.venv/\n*.egg-info/\n.pytest_cache/\n"
                                            ".ipynb_checkpoints/\n")
    found = leaks(out, course)
    if found:
        raise CourseError(f"course release: {len(found)} secret(s) would ship in {out}; first: {found[0]}. "
                          "Nothing was published; fix the course (or this release list) and release again")
    return sorted(_walk(out))


# --------------------------------------------------------------------------- the leak scan

def _regions(source: str, begin: str, end: str, where: str):
    lines = source.split("\n")
    for start, stop, _ in marker_regions(lines, begin, end, where):
        yield [ln.strip() for ln in lines[start + 1: stop] if ln.strip()]


def _outside_regions(source: str, where: str):
    """The lines of a cell that are in no solution or hidden-test region (what a student sees anyway)."""
    lines = source.split("\n")
    inside = set()
    for begin, end in ((BEGIN_SOLUTION, END_SOLUTION), (BEGIN_HIDDEN, END_HIDDEN)):
        for start, stop, _ in marker_regions(lines, begin, end, where):
            inside.update(range(start, stop + 1))
    return {ln.strip() for i, ln in enumerate(lines) if i not in inside}


def _text_of(path) -> str:
    """What a file says, for the scan: a notebook's cell sources and outputs; any other file decoded."""
    with open(path, "rb") as f:
        raw = f.read()
    text = raw.decode("utf-8", "replace")
    if path.endswith(".ipynb"):
        try:
            nb = json.loads(text)
        except ValueError:
            return text
        parts = []
        for cell in nb.get("cells", []):
            src = cell.get("source", "")
            parts.append(src if isinstance(src, str) else "".join(src))
            parts.append(json.dumps(cell.get("outputs", []), ensure_ascii=False))
        text += "\n" + "\n".join(parts)
    return text


def _normalized(text: str) -> str:
    return "\n".join(ln.strip() for ln in text.split("\n") if ln.strip())


def secrets(course: Course):
    """(secret lines, secret blocks): the solution and hidden-test regions' lines that no public file has."""
    lines, blocks, public = set(), [], set()
    for p in sorted(glob.glob(os.path.join(course.solutions, "*.ipynb"))):
        nb = read_notebook(p)
        for i, cell in enumerate(nb.cells):
            where = f"{p}, cell {i}"
            public.update(_outside_regions(cell.source, where))
            for begin, end in ((BEGIN_SOLUTION, END_SOLUTION), (BEGIN_HIDDEN, END_HIDDEN)):
                for region in _regions(cell.source, begin, end, where):
                    keep = [ln for ln in region if len(ln) >= MIN_SECRET_LEN]
                    lines.update(keep)
                    if len(keep) >= 2:
                        blocks.append("\n".join(region))
    for rel in SHIPPED:
        for f in _walk(os.path.join(course.root, rel)) if os.path.exists(os.path.join(course.root, rel)) else ():
            public.update(ln.strip() for ln in _text_of(f).split("\n"))
    return lines - public, [b for b in blocks if any(ln in lines - public for ln in b.split("\n"))]


def reference_helpers(course: Course) -> list:
    """[(name, normalized source, solution)]: the reference helpers the instructor's set-up and test cells
    define (``references.reference_seeds``), which compute the expected values: none may ship."""
    import ast
    out = []
    for p in sorted(glob.glob(os.path.join(course.solutions, "*.ipynb"))):
        nb = read_notebook(p)
        seeds = reference_seeds(nb)
        for cell in nb.cells:
            try:
                tree = ast.parse(cell.source) if cell.cell_type == "code" else None
            except SyntaxError:
                continue
            for node in tree.body if tree else ():
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name in seeds:
                    out.append((node.name, _normalized(ast.get_source_segment(cell.source, node)),
                                os.path.relpath(p, course.root)))
    return out


def leaks(out, course: Course) -> list:
    """Every secret found in the files under ``out``, as 'file: what' lines (empty: nothing leaks)."""
    lines, blocks = secrets(course)
    helpers = reference_helpers(course)
    forbidden = {}
    for folder in (course.solutions, os.path.join(course.root, "tests", "fixtures")):
        for f in _walk(folder) if os.path.isdir(folder) else ():
            with open(f, "rb") as fh:
                forbidden[fh.read()] = os.path.relpath(f, course.root)
    found = []
    for f in _walk(out):
        rel = os.path.relpath(f, out)
        if "solutions" in rel.split(os.sep)[:-1]:
            found.append(f"{rel}: a solutions folder")
        with open(f, "rb") as fh:
            raw = fh.read()
        if raw in forbidden:
            found.append(f"{rel}: a copy of {forbidden[raw]}")
            continue
        text = _text_of(f)
        if f.endswith(".ipynb") and any(m in text for m in (BEGIN_SOLUTION, END_SOLUTION, BEGIN_HIDDEN)):
            found.append(f"{rel}: a notebook with solution or hidden-test markers")
        have = {ln.strip() for ln in text.split("\n")}
        for ln in sorted(lines & have):
            found.append(f"{rel}: solution/hidden-test line {ln!r}")
        norm = _normalized(text)
        found.extend(f"{rel}: a solution/hidden-test region starting {b.splitlines()[0]!r}"
                     for b in blocks if b in norm)
        found.extend(f"{rel}: the reference helper {name} of {sol}" for name, block, sol in helpers
                     if block in norm or (rel.startswith("exercises") and f"def {name}(" in text))
    return found
