"""The mutation report: what ``gradlab course mutants`` prints and writes.

Holds ``table(results)`` (a row per exercise: mutants, killed, survived, equivalent, score),
``survivor_lines(result)`` (one line per survivor: where, before -> after) and ``to_json(results)``;
``results`` are ``mutants.ExerciseResult`` objects.
"""
from __future__ import annotations

import json


def _pct(x):
    return "-" if x is None else f"{100 * x:.1f}%"


def table(results, min_score=None) -> str:
    """exercise | mutants | killed (of them, by an exception) | survived | equivalent | score, and a total."""
    w = max([len(r.exercise) for r in results] + [8])
    head = (f"{'exercise':<{w}}  {'mutants':>7}  {'killed':>6}  {'(raised)':>8}  {'survived':>8}  "
            f"{'equivalent':>10}  {'score':>6}")
    out = [head, "-" * len(head)]
    for r in results:
        if r.error:
            out.append(f"{r.exercise:<{w}}  ERROR: {r.error}")
            continue
        flag = "  < min" if min_score is not None and r.score is not None and r.score < min_score else ""
        out.append(f"{r.exercise:<{w}}  {len(r.mutants):>7}  {r.killed:>6}  {r.raised:>8}  {r.survived:>8}  "
                   f"{r.equivalent:>10}  {_pct(r.score):>6}{flag}")
    ok = [r for r in results if not r.error]
    k, s = sum(r.killed for r in ok), sum(r.survived for r in ok)
    out.append("-" * len(head))
    out.append(f"{'total':<{w}}  {sum(len(r.mutants) for r in ok):>7}  {k:>6}  {sum(r.raised for r in ok):>8}  {s:>8}  "
               f"{sum(r.equivalent for r in ok):>10}  {_pct(k / (k + s) if k + s else None):>6}")
    return "\n".join(out)


def survivor_lines(result, equivalent=False) -> list:
    """One line per survived (and with ``equivalent``, equivalent) mutant: file, cell, line, before -> after."""
    out = []
    for m in result.mutants:
        if m.status == "survived" or (equivalent and m.status == "equivalent"):
            tag = "survived" if m.status == "survived" else "equivalent"
            line = (f"{result.notebook}:cell {m.cell} ({m.grade_id}):{m.line}: [{m.operator}] "
                    f"{m.before} -> {m.after}  ({tag}{': ' + m.why if m.why else ''})")
            out.append(line)
    return out


def to_json(results, min_score=None) -> str:
    return json.dumps({"min_score": min_score, "exercises": [r.as_dict() for r in results]}, indent=1) + "\n"
