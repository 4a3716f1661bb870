"""``check``: the tamper-proof way to write a graded test.

A graded test cell calls ``check(name, value, expected=...)`` for each thing it
wants to compare. What happens depends on where the cell runs:

* **In the student's JupyterLab** (and in ``pytest --nbval-lax``): ``check``
  compares ``value`` with ``expected`` (when given) and raises an
  ``AssertionError`` with a helpful message, so the student gets feedback at once.
* **Under ``gradlab grade``**: ``check`` also *records* ``value``, serialised
  as plain data (arrays, numbers, shapes, strings), as an output of the cell.
  The same test cell runs a second time in a separate reference kernel on the
  instructor's own solution. The grader compares the student's record with the
  reference's record in its own process, with the tolerance the *reference*
  run asked for. Patching NumPy, builtins, IPython or gradlab inside the
  student's kernel can then only change the student's own numbers, never the
  comparison.

So the verdict of a ``check`` does not depend on anything the student's kernel
says except the values themselves. A plain ``assert`` in a test cell is still
allowed for simple checks, but it runs in the student's kernel and can be
defeated there (see docs/instructors.md, "What is defended").

Functions:

* ``check(name, value, expected=None, rtol=1e-6, atol=1e-8, exact=False, msg=None)``
* ``check_raises(name, fn, *args, **kwargs)``: records which exception ``fn`` raised (or none)
* ``encode(value)`` / ``decode(doc)``: the plain-data form of a value (``allow_pickle=False``)
* ``compare(student, reference)``: one student record against one reference record (grader side), by
  ``close(got, want, rtol, atol, exact)`` ('' when they match, else why not)
* ``recorded(exercise)``: from now on, a ``check`` without ``expected=`` compares with the solution's value
  of the same name, recorded by ``gradlab course build`` in ``exercises/expected/EXERCISE.json``
  (``recorded_values.py``): the exercise's visible checks need no reference code
"""
from __future__ import annotations

import base64
import io
import math

import numpy as np

MIME = "application/vnd.gradlab.check+json"
MAX_BYTES = 64 * 2**20   # a record larger than this is refused (a check compares results, not data sets)
MAX_DEPTH = 20           # lists and dicts nested deeper than this are refused (a record is results, not a tree)
MAX_ITEMS = 100_000      # entries of one list or dict record
MAX_HINT = 300           # characters of a hint (msg=) kept in a record

_sink = {"records": None}   # set by an in-process runner (gradlab course mutants) to collect records in a list
_recorded: dict = {}        # check name -> [the solution's records of that name], loaded by ``recorded``


def _as_array(value):
    """A NumPy array for anything array-like: gradlab and torch tensors, NumPy scalars, Python numbers."""
    if hasattr(value, "detach") and hasattr(value, "numpy"):   # a gradlab.Tensor (or a torch tensor)
        value = value.detach()
        if hasattr(value, "cpu"):
            value = value.cpu()
        return np.array(value.numpy())
    return np.asarray(value)


def encode(value):
    """The plain-data form of ``value``: nested dicts/lists of JSON types, arrays as .npy bytes (base64).

    Python numbers, NumPy scalars and 0-d arrays all become arrays, so ``True``
    and ``numpy.bool_(True)``, ``1.0`` and ``numpy.float64(1.0)`` compare equal.
    """
    if value is None:
        return {"t": "none"}
    if isinstance(value, str):
        return {"t": "str", "v": value}
    if isinstance(value, dict):
        return {"t": "dict", "v": [[str(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, (list, tuple)) and not all(isinstance(v, (int, float, bool)) for v in value):
        return {"t": "list", "v": [encode(v) for v in value]}
    if isinstance(value, (list, tuple)) and not value:
        return {"t": "list", "v": []}
    arr = _as_array(value)
    if arr.dtype == object or arr.dtype.kind not in "biufc":
        raise TypeError(f"check: cannot record a value of type {type(value).__name__} "
                        f"(dtype {arr.dtype}); record arrays, numbers, strings, lists or dicts of them")
    if arr.dtype.kind == "f" and arr.dtype.itemsize < 4:   # float16 / bfloat16: keep the values, widen the type
        arr = arr.astype(np.float32)
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(arr), allow_pickle=False)
    raw = buf.getvalue()
    if len(raw) > MAX_BYTES:
        raise ValueError(f"check: a record of {len(raw)} bytes is too large (at most {MAX_BYTES})")
    return {"t": "array", "v": base64.b64encode(raw).decode("ascii")}


def decode(doc, _depth=0):
    """The value ``encode`` made, read without pickle (a hostile record cannot run code).

    A record is data from an untrusted kernel: anything that is not what ``encode``
    writes (another type, nesting deeper than ``MAX_DEPTH``, more than ``MAX_ITEMS``
    entries in a list or dict, more than ``MAX_BYTES``) raises ``ValueError``.
    """
    if not isinstance(doc, dict):
        raise ValueError("not a check record")
    if _depth > MAX_DEPTH:
        raise ValueError(f"check record nested deeper than {MAX_DEPTH} levels")
    t, v = doc.get("t"), doc.get("v")
    if t == "none":
        return None
    if t == "str":
        if not isinstance(v, str) or len(v) > MAX_BYTES:
            raise ValueError("a string record that is not a (reasonably sized) string")
        return v
    if t in ("dict", "list", "raised"):
        if not isinstance(v, list) or len(v) > MAX_ITEMS:
            raise ValueError(f"a {t} record that is not a list of at most {MAX_ITEMS} entries")
    if t == "dict":
        if not all(isinstance(kv, list) and len(kv) == 2 and isinstance(kv[0], str) for kv in v):
            raise ValueError("a dict record whose entries are not [key, value] pairs")
        return {k: decode(x, _depth + 1) for k, x in v}
    if t == "list":
        return [decode(x, _depth + 1) for x in v]
    if t == "array":
        if not isinstance(v, str) or len(v) > MAX_BYTES * 4 // 3 + 4:
            raise ValueError("check record too large")
        raw = base64.b64decode(v.encode("ascii"), validate=True)
        arr = np.load(io.BytesIO(raw), allow_pickle=False)
        if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "biufc":
            raise ValueError("an array record that holds no numbers")
        return arr
    if t == "raised":
        if not all(isinstance(x, str) for x in v):
            raise ValueError("a 'raised' record that is not a list of class names")
        return {"raised": list(v)}
    raise ValueError(f"unknown check record type {str(t)[:40]!r}")


def _spec(rtol, atol, exact):
    return {"rtol": float(rtol), "atol": float(atol), "exact": bool(exact)}


def _emit(record):
    if _sink["records"] is not None:
        _sink["records"].append(record)
        return
    try:
        from IPython import get_ipython
    except ImportError:   # plain Python: nothing to record into
        return
    if get_ipython() is None:
        return
    from IPython.display import display
    display({MIME: record}, raw=True)


def _describe(arr):
    return f"shape {tuple(arr.shape)}" if isinstance(arr, np.ndarray) and arr.ndim else repr(arr)


def _kind(x) -> str:
    """What a decoded record holds, in the words a report uses."""
    if x is None:
        return "None"
    if isinstance(x, dict):
        return "an exception record" if set(x) == {"raised"} else "a dict"
    if isinstance(x, list):
        return "a list"
    if isinstance(x, str):
        return "a string"
    if isinstance(x, np.ndarray):
        return f"an array of shape {tuple(x.shape)}" if x.ndim else "a number"
    return type(x).__name__


def _magnitude(x: float) -> str:
    """``x`` to the nearest power of ten: how far off, without giving the reference away."""
    if not math.isfinite(x):
        return "inf"
    return f"1e{round(math.log10(x)):+03d}" if x > 0 else "0"


def close(got, want, rtol=1e-6, atol=1e-8, exact=False, reveal=True):
    """'' when ``got`` matches ``want`` (same structure, shape, values within tolerance), else why not.

    ``got`` is validated against ``want`` by type and shape before any value is
    compared, so a record of the wrong kind (an array where a string was recorded,
    a list of the wrong length, an object) is a reason, never an exception.
    ``reveal=False`` (the grader's reports) never puts a value of ``want`` in the
    reason: a wrong number or string is quoted as the student's, with the largest
    difference to the nearest power of ten; structure (types, keys, lengths,
    shapes, exception classes) is still said.
    """
    if isinstance(want, dict) and set(want) == {"raised"}:
        if not (isinstance(got, dict) and set(got) == {"raised"} and isinstance(got["raised"], list)):
            return f"expected it to raise {want['raised'][0] if want['raised'] else 'nothing'}"
        if want["raised"] and not got["raised"]:
            return f"expected {want['raised'][0]}, but nothing was raised"
        if not want["raised"] and got["raised"]:
            return f"expected no exception, but it raised {str(got['raised'][0])[:80]}"
        if want["raised"] and want["raised"][0] not in got["raised"]:
            return f"expected {want['raised'][0]}, got {str(got['raised'][0])[:80]}"
        return ""
    if want is None or isinstance(want, str):
        if type(got) is not type(want):
            return f"expected {_kind(want)}, got {_kind(got)}"
        if got == want:
            return ""
        return f"expected {want!r}, got {got[:200]!r}" if reveal else f"got {got[:200]!r}, not the expected string"
    if isinstance(want, dict):
        if not isinstance(got, dict) or set(got) != set(want):
            return f"expected a dict with keys {sorted(want)}, got {_kind(got)}" + (
                f" with keys {sorted(got)[:10]}" if isinstance(got, dict) else "")
        for k in want:
            why = close(got[k], want[k], rtol, atol, exact, reveal)
            if why:
                return f"[{k!r}]: {why}"
        return ""
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return f"expected {len(want)} items, got {len(got) if isinstance(got, list) else _kind(got)}"
        for i, (g, w) in enumerate(zip(got, want)):
            why = close(g, w, rtol, atol, exact, reveal)
            if why:
                return f"[{i}]: {why}"
        return ""
    want = np.asarray(want)
    if isinstance(got, (dict, list, str)) or got is None:
        return f"expected {_kind(want)}, got {_kind(got)}"
    try:
        got = _as_array(got)
    except Exception:   # an object that is no array at all
        return f"expected {_kind(want)}, got {type(got).__name__}"
    if not isinstance(got, np.ndarray) or got.dtype == object or got.dtype.kind not in "biufc":
        return f"expected numbers, got an array of dtype {getattr(got, 'dtype', '?')}"
    if got.shape != want.shape:
        return f"expected shape {tuple(want.shape)}, got shape {tuple(got.shape)}"
    if want.dtype.kind == "b" and got.dtype.kind != "b":
        return f"expected booleans, got dtype {got.dtype}"
    if exact or want.dtype.kind in "biu" and got.dtype.kind in "biu":
        if np.array_equal(got, want, equal_nan=want.dtype.kind in "fc" and got.dtype.kind in "fc"):
            return ""
        bad = int(np.sum(got != want))
        if want.ndim:
            return f"{bad} of {want.size} entries differ"
        return f"expected {want!r}, got {got!r}" if reveal else f"got {got!r}, not the expected value"
    g = got.astype(np.complex128 if np.iscomplexobj(got) or np.iscomplexobj(want) else np.float64)
    w = want.astype(g.dtype)
    ok = np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
    if ok.all():
        return ""
    bad = ~ok
    err = np.abs(g - w)
    err = np.where(np.isnan(err), np.inf, err)
    worst = float(err[bad].max()) if bad.any() else math.inf
    if want.ndim == 0:
        if reveal:
            return f"expected {w.item()!r}, got {g.item()!r}"
        return f"got {g.item()!r}, off by about {_magnitude(worst)} (rtol={rtol:g}, atol={atol:g})"
    return (f"{int(bad.sum())} of {want.size} entries differ (largest difference "
            f"{f'{worst:.3g}' if reveal else f'about {_magnitude(worst)}'}, rtol={rtol:g}, atol={atol:g})")


def _find_recorded(exercise):
    """``exercises/expected/EXERCISE.json`` for a kernel in ``exercises/``, ``workspace/exercises/`` or
    anywhere below the course (walking up from the working folder), else the folder ``GRADLAB_EXPECTED``
    names (a self-check's kernel runs in a temporary folder); None when there is none."""
    import os
    name = os.path.basename(str(exercise)) + ".json"
    here = os.getcwd()
    candidates = [os.path.join(here, "expected", name)]
    while True:
        candidates.append(os.path.join(here, "exercises", "expected", name))
        up = os.path.dirname(here)
        if up == here:
            break
        here = up
    if os.environ.get("GRADLAB_EXPECTED"):
        candidates.insert(0, os.path.join(os.environ["GRADLAB_EXPECTED"], name))
    return next((c for c in candidates if os.path.isfile(c)), None)


def recorded(exercise):
    """Let the visible checks of ``exercise`` compare with its solution's recorded values.

    Called by the exercise's set-up cell. Returns how many values were loaded (0, and nothing
    changes, where the file is not found: under the grader, which compares in its own process).
    """
    import json
    _recorded.clear()
    path = _find_recorded(exercise)
    if path is None:
        return 0
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    for records in doc.get("records", {}).values():
        for rec in records:
            _recorded.setdefault(rec["name"], []).append(rec)
    return sum(len(v) for v in _recorded.values())


def _against_recorded(name, doc):
    """'' when the value (its record ``doc``) matches a recorded value named ``name`` (or none is recorded),
    else why not, against the first of them."""
    whys = []
    for rec in _recorded.get(name, ()):
        spec = rec.get("spec") or {}
        why = close(decode(doc), decode(rec["value"]), rtol=spec.get("rtol", 1e-6), atol=spec.get("atol", 1e-8),
                    exact=spec.get("exact", False))
        if not why:
            return ""
        whys.append(why)
    return whys[0] if whys else ""


def check(name, value, expected=None, rtol=1e-6, atol=1e-8, exact=False, msg=None):
    """Compare ``value`` with ``expected`` here, and record ``value`` for the grader.

    ``name`` identifies the record (one test cell may check many values);
    ``expected`` is optional local feedback; the grader always compares with
    the instructor's solution run in its own kernel, with this call's
    ``rtol``/``atol``/``exact`` *as the reference run gave them*. Returns ``value``.
    """
    try:
        doc = encode(value)
    except (TypeError, ValueError) as e:
        doc = {"t": "str", "v": f"<unrecordable: {e}>"}
    record = {"name": str(name), "value": doc, "spec": _spec(rtol, atol, exact)}
    if msg is not None:
        record["msg"] = str(msg)[:MAX_HINT]
    _emit(record)
    if expected is not None:
        try:
            want = decode(encode(expected))
            got = decode(doc) if doc["t"] != "str" or not doc["v"].startswith("<unrecordable") else value
        except (TypeError, ValueError):
            want, got = expected, value
        why = close(got, want, rtol, atol, exact)
        if why:
            raise AssertionError(f"{name}: {msg + ': ' if msg else ''}{why}")
    elif str(name) in _recorded:
        why = (f"could not be recorded: {doc['v']}" if doc["t"] == "str" and
               doc["v"].startswith("<unrecordable") else _against_recorded(str(name), doc))
        if why:
            raise AssertionError(f"{name}: {msg + ': ' if msg else ''}{why}")
    return value


def check_raises(name, fn, *args, expected=None, **kwargs):
    """Call ``fn(*args, **kwargs)`` and record which exception it raised (or that it raised none).

    ``expected``: an exception class for local feedback (``check_raises('bad shape', f, x,
    expected=ValueError)``). The grader compares the class names with the reference run's.
    """
    try:
        fn(*args, **kwargs)
        raised = []
    except Exception as e:   # any exception is a result here
        raised = [c.__name__ for c in type(e).__mro__ if c is not object]
    doc = {"t": "raised", "v": raised}
    _emit({"name": str(name), "value": doc, "spec": _spec(0, 0, True)})
    if expected is None and str(name) in _recorded:
        why = _against_recorded(str(name), doc)
        if why:
            raise AssertionError(f"{name}: {why}")
    if expected is not None:
        want = expected.__name__
        if want not in raised:
            got = raised[0] if raised else "nothing"
            raise AssertionError(f"{name}: expected {want} to be raised, got {got}")
    return raised[0] if raised else None


def _number(x, default):
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else default


def compare(student, reference):
    """'' when a student record matches the reference record, else a one-line reason.

    Both are records as emitted by ``check``; the tolerance is the reference's;
    the reason never holds a reference value (``close(..., reveal=False)``).
    Never raises for anything in ``student`` (an untrusted kernel's record): a
    record that cannot be read, or compared, is a reason.
    """
    spec = reference.get("spec") or {}
    try:
        want = decode(reference["value"])
    except Exception as e:   # the reference itself is broken: the instructor's problem
        raise ValueError(f"reference record {reference.get('name')!r} cannot be read: {e}") from None
    try:
        got = decode(student.get("value")) if isinstance(student, dict) else decode(None)
    except Exception as e:
        return f"the recorded value could not be read ({str(e)[:120]})"
    try:
        return close(got, want, rtol=_number(spec.get("rtol"), 1e-6), atol=_number(spec.get("atol"), 1e-8),
                     exact=bool(spec.get("exact", False)), reveal=False)
    except Exception as e:   # (close validates first; this is the last line of defence)
        return f"the recorded value could not be compared ({type(e).__name__})"
