"""Score tables for people (text) and for tools (JSON, JUnit XML).

A failed part says why (``message``) and, where the grader knows them, the check that failed
(``case``), the instructor's hint for it (``hint``, from ``msg=``) and, for an exception, the
student's cell and line it passed through (``where``): the same three in every format
(``details``). The reference's values and code are never part of a report.

Holds ``pts(x)`` (points as a person writes them), ``details(part)``, ``table(results)``,
``to_json(results)`` and ``to_junit(results)`` (one testcase per graded part).
"""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET


def pts(x) -> str:
    """Points as a person writes them: ``2``, ``1.5`` (never ``2.0``); the gradebook's too."""
    return f"{x:g}"


def details(part) -> list:
    """(label, text) lines that help with a failed part: the failing case, the hint, the student's line."""
    if part.status == "ok":
        return []
    out = [("in", part.where)] if part.where else []
    if part.case and part.case not in (part.message or ""):
        out.append(("case", part.case))
    if part.hint:
        out.append(("hint", part.hint))
    return out


def table(results) -> str:
    """The per-notebook, per-part score table ``gradlab grade`` prints."""
    out = []
    for r in results:
        if r.error:
            out.append(f"{r.notebook}: NOT GRADED: {r.error}")
            out.append("")
            continue
        out.append(f"{r.notebook}  (against {r.against})  {pts(r.earned)} / {pts(r.possible)}")
        w = max([len(p.grade_id) for p in r.parts] + [4])
        out.append(f"  {'part':<{w}}  {'points':>9}  result")
        for p in r.parts:
            score = f"{pts(p.earned)} / {pts(p.points)}"
            line = f"  {p.grade_id:<{w}}  {score:>9}  {'ok' if p.status == 'ok' else 'FAIL'}"
            if p.status != "ok" and p.message:
                line += f"  {p.message}"
            out.append(line)
            out.extend(f"  {'':<{w}}  {'':>9}    {label}: {text}" for label, text in details(p))
        for n in r.notes:
            out.append(f"  note: {n}")
        for t in r.tamper:
            out.append(f"  tamper: {t}")
        out.append("")
    graded = [r for r in results if not r.error]
    earned = sum(r.earned for r in graded)
    possible = sum(r.possible for r in graded)
    nparts = sum(len(r.parts) for r in graded)
    nfail = sum(1 for r in graded for p in r.parts if p.status != "ok")
    line = (f"TOTAL {len(graded)} notebook{'s' if len(graded) != 1 else ''} graded: "
            f"{pts(earned)} / {pts(possible)} points, {nfail} of {nparts} parts failed")
    bad = len(results) - len(graded)
    if bad:
        line += f"; {bad} not graded (bad input)"
    tampered = sum(1 for r in results if r.tamper)
    if tampered:
        line += f"; {tampered} with tamper evidence"
    out.append(line)
    return "\n".join(out)


def to_json(results) -> str:
    graded = [r for r in results if not r.error]
    doc = {
        "notebooks": [r.as_dict() for r in results],
        "total": {"earned": sum(r.earned for r in graded), "possible": sum(r.possible for r in graded),
                  "failed_parts": sum(1 for r in graded for p in r.parts if p.status != "ok"),
                  "not_graded": len(results) - len(graded),
                  "with_tamper_evidence": sum(1 for r in results if r.tamper)},
    }
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def to_junit(results) -> str:
    """JUnit XML: one testsuite per notebook, one testcase per graded part (CI systems show these)."""
    root = ET.Element("testsuites", name="gradlab grade")
    for r in results:
        suite = ET.SubElement(root, "testsuite", name=r.notebook, tests=str(max(1, len(r.parts))),
                              failures=str(sum(1 for p in r.parts if p.status != "ok")),
                              errors="1" if r.error else "0")
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="earned", value=pts(r.earned))
        ET.SubElement(props, "property", name="possible", value=pts(r.possible))
        if r.error:
            case = ET.SubElement(suite, "testcase", classname=r.notebook, name="notebook")
            ET.SubElement(case, "error", message=r.error)
            continue
        for p in r.parts:
            case = ET.SubElement(suite, "testcase", classname=r.notebook, name=p.grade_id)
            if p.status != "ok":
                fail = ET.SubElement(case, "failure", message=p.message or p.status, type=p.status)
                fail.text = "\n".join([f"{pts(p.earned)} / {pts(p.points)} points: {p.message}",
                                       *(f"{label}: {text}" for label, text in details(p))])
        if r.notes:
            ET.SubElement(suite, "system-out").text = "\n".join(r.notes)
        if r.tamper:   # tamper evidence: a property (machines) and system-err (people)
            ET.SubElement(props, "property", name="tamper", value=str(len(r.tamper)))
            ET.SubElement(suite, "system-err").text = "\n".join("tamper: " + t for t in r.tamper)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode") + "\n"
