"""No lesson shows an exercise's answer: the code of every solution region stays out of notebooks/.

A lesson teaches the idea on another instance (another op, another optimizer) and points the student
at the exercise; if it printed the answer first, the exercise would be copying, not practice.

The solution regions are the ``### BEGIN SOLUTION`` ... ``### END SOLUTION`` blocks of
``solutions/*.ipynb`` (the same markers ``gradlab course build`` strips to make ``exercises/``), read
with the build's own parser. A region counts as shown in a lesson when a lesson cell (its source, or
the text it printed) holds

* two of the region's lines one after the other, or
* one long line of it (16 tokens or more), or
* the whole of a one-line region (10 tokens or more),

and the piece does some arithmetic (``+ - * / @ **``...): a loop header or a constructor call is the
language's vocabulary, not an answer.

Lines are compared as tokens, without whitespace, comments or ``self.``, and with the names of values
numbered in order of appearance: ``self.tan * o.val`` reads as ``tangent * other.value`` does, so
renaming or re-spacing the answer does not hide it; what is *called* keeps its name, so
``g * x.tanh()`` is not ``g * x.sigmoid()``. Lines of fewer than 6 tokens (``continue``,
``return True``) say nothing and are skipped on both sides.
"""
from __future__ import annotations

import keyword
import pathlib
import re
import tempfile

import nbformat
import pytest

from gradlab.course.notebook import BEGIN_SOLUTION, END_SOLUTION, is_solution, marker_regions, read_notebook

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOLUTIONS = sorted((ROOT / "solutions").glob("*.ipynb"))
LESSONS = sorted((ROOT / "notebooks").glob("*.ipynb"))

SHORT = 6       # a line of fewer tokens (``continue``, ``return True``) is boilerplate, skipped on both sides
LONG = 16       # a line of this many tokens is distinctive on its own
ONE_LINE = 10   # a one-line region of this many tokens counts when it appears
_TOKEN = re.compile(r"[A-Za-z_]\w*|\d+\.?\d*(?:[eE][-+]?\d+)?|\"[^\"]*\"|'[^']*'"
                    r"|\*\*=?|//=?|[-+*/@%<>=!]=|->|\S")
# a piece without arithmetic (a loop header, a constructor call) is vocabulary, not an answer
_ARITHMETIC = {"+", "-", "*", "/", "@", "**", "//", "%", "+=", "-=", "*=", "/=", "@=", "**="}


def canonical(tokens: list[str]) -> tuple[str, ...]:
    """Tokens with the names of values (variables, plain attributes) numbered in order of appearance.

    ``self.tan * o.val`` and ``self.tangent * other.value`` read the same; what is called (``x.sigmoid()``,
    ``np.sqrt(...)``), keywords, numbers, strings and operators are kept, so ``g * x.tanh()`` is not
    ``g * x.sigmoid()``."""
    names, out = {}, []
    for i, tok in enumerate(tokens):
        called = i + 1 < len(tokens) and tokens[i + 1] == "("
        if (tok[0].isalpha() or tok[0] == "_") and not keyword.iskeyword(tok) and not called:
            tok = names.setdefault(tok, f"v{len(names)}")
        out.append(tok)
    return tuple(out)


def normalise(text: str) -> list[list[str]]:
    """The text's lines as tokens, without comments, ``self.`` or the short lines."""
    out = []
    for line in text.split("\n"):
        line = re.sub(r"(^|\s)#.*$", "", line)       # a comment (a '#' inside a string stays: it follows no space)
        line = re.sub(r"\bself\s*\.\s*", "", line)    # self.lr and lr are the same value
        tokens = _TOKEN.findall(line)
        if len(tokens) >= SHORT:
            out.append(tokens)
    return out


def solution_regions():
    """(exercise, cell index, normalised lines) for every solution region of every solution notebook."""
    regions = []
    for path in SOLUTIONS:
        nb = read_notebook(path)
        for index, cell in enumerate(nb.cells):
            if not is_solution(cell):
                continue
            lines = cell.source.split("\n")
            for start, stop, _ in marker_regions(lines, BEGIN_SOLUTION, END_SOLUTION, f"{path.name}, cell {index}"):
                body = normalise("\n".join(lines[start + 1:stop]))
                if body:
                    regions.append((path.stem, index, body))
    return regions


def window(lines: list[list[str]], start: int, n: int) -> tuple[str, ...]:
    """n lines from start as one canonical token tuple (names numbered across the lines, a break between)."""
    joined = []
    for tokens in lines[start:start + n]:
        joined += tokens + ["\n"]
    return canonical(joined)


def signatures(body: list[list[str]]) -> list[tuple[int, tuple[str, ...]]]:
    """The pieces of a region, as (number of lines, canonical tokens), whose presence shows the answer."""
    if len(body) == 1:
        pieces = [(1, window(body, 0, 1))] if len(body[0]) >= ONE_LINE else []
    else:
        pieces = [(2, window(body, i, 2)) for i in range(len(body) - 1)]
        pieces += [(1, window(body, i, 1)) for i, line in enumerate(body) if len(line) >= LONG]
    return [piece for piece in pieces if _ARITHMETIC & set(piece[1])]


def cell_texts(cell):
    """The source of a cell and every text it printed (stream output, text/plain results)."""
    yield "source", cell.source
    for output in cell.get("outputs", []):
        if "text" in output:
            yield "output", output["text"]
        elif "text/plain" in output.get("data", {}):
            yield "output", output["data"]["text/plain"]


def windows(lines: list[list[str]]) -> set[tuple[int, tuple[str, ...]]]:
    """Every piece of one and of two lines in a text, in the form signatures() gives."""
    return {(n, window(lines, i, n)) for n in (1, 2) for i in range(len(lines) - n + 1)}


def show(piece) -> str:
    """A piece as text, for the failure message."""
    return " ".join(piece[1]).replace(" \n", " /").rstrip(" /")


def shown_regions(notebook_path, regions):
    """Where a notebook shows a region: (exercise, solution cell, notebook cell, 'source'/'output', piece)."""
    found = []
    nb = read_notebook(notebook_path)
    for index, cell in enumerate(nb.cells):
        for kind, text in cell_texts(cell):
            pieces = windows(normalise(text))
            for exercise, region_cell, body in regions:
                for piece in signatures(body):
                    if piece in pieces:
                        found.append((exercise, region_cell, index, kind, piece))
                        break
    return found


REGIONS = solution_regions()


def test_every_exercise_has_an_answer_to_look_for():
    """Each solution notebook has a region with a signature (else the lesson test would check nothing)."""
    assert len(SOLUTIONS) >= 20 and len(LESSONS) >= 20
    with_pieces = {exercise for exercise, _, body in REGIONS if signatures(body)}
    assert [p.stem for p in SOLUTIONS if p.stem not in with_pieces] == []


# a string literal (kept), or a name that is not called, not a keyword and not self (renamed)
_RENAMABLE = re.compile(r"(\"[^\"\n]*\"|'[^'\n]*')|\b(?!(?:self|" + "|".join(keyword.kwlist) + r")\b)"
                        r"([A-Za-z_]\w*)\b(?!\s*\()")


def _rename(match):
    return match.group(1) or match.group(2) + "_renamed"


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_the_check_finds_each_answer_in_its_own_notebook_even_renamed(path):
    """Controls: a solution notebook shows each of its regions, and still does with every value renamed
    and the spacing changed (a lesson that renames ``value`` to ``val`` still shows the answer)."""
    own = [r for r in REGIONS if r[0] == path.stem and signatures(r[2])]
    want = {(exercise, cell) for exercise, cell, _ in own}
    assert {(e, c) for e, c, *_ in shown_regions(path, own)} == want
    nb = read_notebook(path)
    for cell in nb.cells:
        cell.source = _RENAMABLE.sub(_rename, cell.source).replace(" * ", "*").replace(", ", ",")
        if cell.cell_type == "code":
            cell.outputs = []
    renamed = pathlib.Path(tempfile.mkdtemp()) / path.name
    nbformat.write(nb, renamed)
    assert {(e, c) for e, c, *_ in shown_regions(renamed, own)} == want


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_no_lesson_shows_an_exercise_solution(path):
    found = shown_regions(path, REGIONS)
    assert not found, f"notebooks/{path.name} shows the solution of an exercise:\n" + "\n".join(
        f"  cell {cell} ({kind}) holds solutions/{exercise}.ipynb cell {rcell}'s answer: {show(piece)}"
        for exercise, rcell, cell, kind, piece in found)
