"""The ``gradlab`` command.

    gradlab lab [--port N] [JUPYTER LAB FLAGS...]      open the course in JupyterLab (gradlab/lab.py)
    gradlab grade exercises/NN_name.ipynb               check your exercise (students and instructors)

    gradlab course build [--solutions solutions/] [--out exercises/] [--check]
    gradlab course mutants [NOTEBOOK...] [--solutions solutions/] [--min-score 0.9] [--json out.json]
                   [--timeout S] [-n N] [--limit 120] [--verbose]
    gradlab practice OP | --list                        a drill: write the VJP (and JVP) of any op
    gradlab grade SUBMISSION.ipynb... [--against solutions/NAME.ipynb] [--hidden]
                  [--timeout S] [--json out.json] [--junit out.xml] [-n N] [--keep DIR]

Exit codes: 0 everything passed; 1 some graded part failed (or ``--check``
found exercises out of date); 2 bad input (not a notebook, malformed JSON,
a notebook from another exercise, bad arguments).
"""
from __future__ import annotations

import argparse
import os
import sys


def _parser():
    p = argparse.ArgumentParser(
        prog="gradlab", description="gradlab: the course's command. Students: `gradlab lab` opens the course, "
        "`gradlab grade exercises/NN_name.ipynb` checks an exercise. Instructors: `gradlab course build`, "
        "`gradlab course mutants`, `gradlab grade` over many submissions.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser("lab", help="open the course in JupyterLab (--port N; other flags go to jupyter lab)",
                   add_help=False)
    course = sub.add_parser("course", help="build the student exercises from the instructor's notebooks")
    csub = course.add_subparsers(dest="course_command", metavar="ACTION")
    b = csub.add_parser("build", help="generate exercises/ from solutions/ (deterministic)")
    b.add_argument("--solutions", default="solutions", help="instructor notebooks (default: solutions)")
    b.add_argument("--out", default="exercises", help="where the student notebooks go (default: exercises)")
    b.add_argument("--check", action="store_true", help="write nothing; exit 1 if --out is not up to date")
    _mutants_parser(csub)
    g = sub.add_parser("grade", help="check exercise notebooks (yours, or submissions) and print a score table")
    g.add_argument("submissions", nargs="+", metavar="SUBMISSION.ipynb")
    g.add_argument("--against", default=None, help="the instructor notebook (default: matched in --solutions)")
    g.add_argument("--solutions", default="solutions", help="where to match submissions (default: solutions)")
    g.add_argument("--hidden", action="store_true", help="also run the instructor's hidden tests")
    g.add_argument("--timeout", type=float, default=60.0, help="seconds per cell before it is interrupted (default 60)")
    g.add_argument("--json", default=None, metavar="OUT.json", help="also write the scores as JSON")
    g.add_argument("--junit", default=None, metavar="OUT.xml", help="also write JUnit XML (one testcase per part)")
    g.add_argument("-n", dest="workers", type=int, default=1, help="grade N notebooks in parallel (pytest-xdist)")
    g.add_argument("--keep", default=None, metavar="DIR",
                   help="keep the notebooks exactly as run, nbval's log and per-cell results in DIR")
    g.add_argument("--sandbox", choices=("auto", "on", "off"), default="auto",
                   help="isolate each submission's kernel (Linux namespaces): auto (when this machine can, "
                        "else say so on every report), on (refuse without it), off (trusted notebooks only)")
    _practice_parser(sub)
    p._course = course
    return p


def _practice_parser(sub):
    p = sub.add_parser("practice", help="write a drill notebook: the VJP (and JVP) of any op of the registry")
    p.add_argument("op", nargs="?", help="the op's registry name (gradlab practice --list lists them)")
    p.add_argument("--list", action="store_true", help="list the ops a drill can check")
    p.add_argument("--out", default="practice", help="folder for the drill (default: practice/)")
    p.add_argument("--force", action="store_true", help="replace an existing drill (it is kept as .bak)")


def _practice(args) -> int:
    from .course import practice
    if args.list:
        ops = practice.drillable()
        print(f"{len(ops)} ops can be practised (gradlab practice OP):")
        print("\n".join(ops))
        return 0
    if not args.op:
        return _error("practice: name an op (gradlab practice matmul), or --list to see them")
    path = practice.write_drill(args.op, args.out, force=args.force)
    print(f"wrote {path}: write vjp() (and jvp()), then `gradlab grade {path}`; hint() gives a hint")
    return 0


def _mutants_parser(csub):
    m = csub.add_parser("mutants", help="mutation testing: do the graded tests catch small mistakes in the solutions?")
    m.add_argument("notebooks", nargs="*", metavar="NOTEBOOK", help="solution notebooks (default: all in --solutions)")
    m.add_argument("--solutions", default="solutions", help="instructor notebooks (default: solutions)")
    m.add_argument("--min-score", type=float, default=0.9,
                   help="exit 1 if an exercise's score killed/(killed+survived) is below this (default 0.9)")
    m.add_argument("--json", default=None, metavar="OUT.json", help="also write every mutant and its class as JSON")
    m.add_argument("--timeout", type=float, default=None,
                   help="seconds per mutant before it is killed (default: 5x the solution's time, at least 5)")
    m.add_argument("-n", dest="workers", type=int, default=1, help="grade N mutants at once (processes)")
    m.add_argument("--limit", type=int, default=120, help="at most this many mutants per exercise (default 120)")
    m.add_argument("--verbose", "-v", action="store_true",
                   help="list each survived (and equivalent) mutant: file, cell, line, before -> after")


def _course_mutants(args) -> int:
    if args.timeout is not None and args.timeout <= 0:
        return _error(f"--timeout must be positive, got {args.timeout:g}")
    if args.workers < 1:
        return _error(f"-n must be at least 1, got {args.workers}")
    from .course import mutants
    paths = mutants.find_notebooks(args.notebooks, args.solutions)

    def progress(r):
        what = f"ERROR: {r.error}" if r.error else f"{len(r.mutants)} mutants, {r.seconds:.1f} s"
        print(f"  {r.exercise}: {what}", file=sys.stderr, flush=True)

    results = mutants.run_all(paths, limit=args.limit, timeout=args.timeout, workers=args.workers,
                              progress=progress)
    print(mutants.table(results, args.min_score))
    for r in results:
        lines = mutants.survivor_lines(r, equivalent=args.verbose) if args.verbose else []
        for w in r.warnings:
            print(f"{r.exercise}: warning: {w}")
        if lines:
            print(f"\n{r.exercise}:")
            print("\n".join(f"  {ln}" for ln in lines))
    if args.json:
        _write(args.json, mutants.to_json(results, args.min_score))
    if any(r.error for r in results):
        return 2
    low = [r.exercise for r in results if r.score is not None and r.score < args.min_score]
    if low:
        print(f"below --min-score {args.min_score:g}: {', '.join(low)}", file=sys.stderr)
        return 1
    return 0


def _error(msg: str, code: int = 2) -> int:
    print(f"gradlab: error: {msg}", file=sys.stderr)
    return code


def _write(path, text):
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def main(argv=None) -> int:
    args_list = sys.argv[1:] if argv is None else list(argv)
    if args_list[:1] == ["lab"]:
        from .lab import main as lab_main
        return lab_main(args_list[1:])
    parser = _parser()
    args = parser.parse_args(argv)
    if argv is None:  # the `gradlab` command's own process: skip jsonschema's slow optional IRI grammar
        sys.modules.setdefault("rfc3987_syntax", None)  # (see course/_nbval_plugin.py); not when called as a library
    from .course.notebook import CourseError
    try:
        if args.command == "course" and args.course_command == "build":
            from .course import build
            paths = build(args.solutions, args.out, check_only=args.check)
            verb = "up to date" if args.check else "written"
            print(f"{len(paths)} exercise notebook{'s' if len(paths) != 1 else ''} {verb} in {args.out}/")
            return 0
        if args.command == "course" and args.course_command == "mutants":
            return _course_mutants(args)
        if args.command == "practice":
            return _practice(args)
        if args.command == "grade":
            if args.timeout <= 0:
                return _error(f"--timeout must be positive, got {args.timeout:g}")
            if args.workers < 1:
                return _error(f"-n must be at least 1, got {args.workers}")
            from .course import grade, table, to_json, to_junit
            from .course.practice import grade_drills  # a practice drill is graded against its op's rules
            results = grade_drills(grade, args.submissions, against=args.against, solutions_dir=args.solutions,
                                   hidden=args.hidden, timeout=args.timeout, workers=args.workers,
                                   keep_dir=args.keep, sandbox=args.sandbox)
            print(table(results))
            if args.json:
                _write(args.json, to_json(results))
            if args.junit:
                _write(args.junit, to_junit(results))
            if any(r.error for r in results):
                return 2
            return 1 if any(r.failed for r in results) else 0
    except CourseError as e:
        return _error(str(e), 1 if "--check" in str(e) else 2)
    except OSError as e:
        return _error(f"{e.filename or ''}: {e.strerror}".strip(": "))
    except KeyboardInterrupt:
        return 130
    (parser._course if args.command == "course" else parser).print_help()
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
