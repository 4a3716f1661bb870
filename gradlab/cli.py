"""The ``gradlab`` command.

    gradlab lab [--port N] [JUPYTER LAB FLAGS...]      open the course in JupyterLab (gradlab/lab.py)
    gradlab grade exercises/NN_name.ipynb               check your exercise (students and instructors)

    gradlab fresh NOTEBOOK                               a fresh copy of a notebook in your workspace (keeps yours)

    gradlab course build [--solutions solutions/] [--out exercises/] [--check] [--force]
    gradlab course mutants [NOTEBOOK...] [--solutions solutions/] [--min-score 0.9] [--json out.json]
                   [--timeout S] [-n N] [--limit 120] [--verbose]
    gradlab practice OP | --list                        a drill: write the VJP (and JVP) of any op
    gradlab grade SUBMISSION.ipynb... [--against solutions/NAME.ipynb] [--hidden]
                  [--timeout S] [--json out.json] [--junit out.xml] [--force] [-n N] [--keep DIR]
    gradlab course release OUT                          the students' repository (no solutions), leak-scanned
    gradlab grade DOWNLOAD.zip|FOLDER... [--csv gb.csv] [--json gb.json] [--feedback DIR]
                  [--shard I/N] [--scheduler tcp://HOST:8786]   a batch, by student (Canvas, Moodle, nbgrader)
    gradlab grade merge SHARD.json... [--csv ...] [--json ...] [--feedback DIR]
    (every course command: --course DIR, default found from the current folder up; python -m gradlab ...)

Exit codes: 0 everything passed; 1 some graded part failed (or ``--check``
found exercises out of date, or a command refused to overwrite an edited
file: see gradlab/course/written.py; ``--force`` replaces it, keeping a backup); 2 bad input (not a notebook, malformed JSON,
a notebook from another exercise, bad arguments). A batch: 0 every part passed; 1 some part failed or
some file had a problem (reported); 2 nothing to grade (no course, an empty batch, an unreadable zip).
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
    _fresh_parser(sub)
    course = sub.add_parser("course", help="build the student exercises from the instructor's notebooks")
    csub = course.add_subparsers(dest="course_command", metavar="ACTION")
    b = csub.add_parser("build", help="generate exercises/ from solutions/ (deterministic)")
    b.add_argument("--solutions", default=None, help="instructor notebooks (default: the course's solutions/)")
    b.add_argument("--out", default=None, help="where the student notebooks go (default: the course's exercises/)")
    b.add_argument("--check", action="store_true", help="write nothing; exit 1 if --out is not up to date")
    b.add_argument("--force", action="store_true",
                   help="also replace files edited since the last build, keeping each as NAME.backup-DATE.ipynb")
    _mutants_parser(csub)
    g = sub.add_parser("grade", help="check exercise notebooks (yours, or submissions) and print a score table")
    g.add_argument("submissions", nargs="+", metavar="SUBMISSION",
                   help="notebooks, or folders / zip files of submissions as Canvas, Moodle or nbgrader "
                        "download them (graded by student); `gradlab grade merge REPORT...` joins shards")
    g.add_argument("--against", default=None, help="the instructor notebook (default: matched in --solutions)")
    g.add_argument("--solutions", default=None, help="where to match submissions (default: the course's solutions/)")
    g.add_argument("--hidden", action="store_true", help="also run the instructor's hidden tests")
    g.add_argument("--timeout", type=float, default=60.0, help="seconds per cell before it is interrupted (default 60)")
    g.add_argument("--json", default=None, metavar="OUT.json", help="also write the scores as JSON")
    g.add_argument("--junit", default=None, metavar="OUT.xml", help="also write JUnit XML (one testcase per part)")
    _force_flag(g)
    g.add_argument("-n", dest="workers", type=int, default=1, help="grade N notebooks in parallel (pytest-xdist)")
    g.add_argument("--keep", default=None, metavar="DIR",
                   help="keep the notebooks exactly as run, nbval's log and per-cell results in DIR")
    g.add_argument("--sandbox", choices=("auto", "on", "off"), default="auto",
                   help="isolate each submission's kernel (bubblewrap): auto (when this machine can, "
                        "else say so on every report), on (refuse without it), off (trusted notebooks only)")
    g.add_argument("--memory", type=int, default=2048, metavar="MB",
                   help="memory one sandboxed kernel may use, all its processes together (default 2048)")
    _instructor_parsers(csub, g)
    _practice_parser(sub)
    p._course = course
    return p


# ---------------------------------------------------------------- gradlab fresh (the student's workspace)
def _fresh_parser(sub):
    f = sub.add_parser("fresh", help="a fresh copy of one course notebook in your workspace; yours is kept as "
                                     "NAME.backup-DATE.ipynb")
    f.add_argument("notebook", metavar="NOTEBOOK",
                   help="e.g. notebooks/05_graphs.ipynb, exercises/01_unbroadcast.ipynb, or just 05_graphs")
    f.add_argument("--root", default=None, help="the course folder (default: found from the current folder)")


def _fresh(args) -> int:
    from .course import workspace
    from .lab import find_root, trust_notebooks
    root = find_root(args.root)
    dest, backup = workspace.fresh(root, args.notebook)
    trust_notebooks([dest])
    if backup is not None:
        print(f"your copy is kept as {backup}")
    print(f"fresh copy: {dest}")
    return 0


# --------------------------------------------------------------------------- instructors at scale
# `gradlab course release`, `--course`, batches (folders, zips), the gradebook, shards and `grade merge`,
# `--scheduler` (gradlab/course/release.py, collect.py, gradebook.py, batch.py, cluster.py)

def _instructor_parsers(csub, g):
    r = csub.add_parser("release", help="write the students' repository (no solutions, no hidden tests) to OUT")
    r.add_argument("out", metavar="OUT", help="a new (or empty) folder")
    for parser in (r, *(csub.choices[c] for c in ("build", "mutants")), g):
        parser.add_argument("--course", default=None, metavar="DIR",
                            help="the course's folder (default: found from the current folder upwards)")
    g.add_argument("--csv", default=None, metavar="OUT.csv",
                   help="a folder or zip of submissions: write the gradebook (a row per student, a column per "
                        "exercise, Total), for Canvas or Moodle import")
    g.add_argument("--feedback", default=None, metavar="DIR", help="a batch: write DIR/STUDENT.md per student")
    g.add_argument("--shard", default=None, metavar="I/N",
                   help="grade only shard I of N of the batch (deterministic); join them with `gradlab grade merge`")
    g.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="grade on a Dask cluster (tcp://HOST:8786; needs gradlab[cluster])")


def _merge_parser():
    m = argparse.ArgumentParser(prog="gradlab grade merge",
                                description="join the batch reports of all shards (gradlab grade --shard I/N "
                                            "--json ...) into the report of the whole batch")
    m.add_argument("reports", nargs="+", metavar="REPORT.json")
    m.add_argument("--json", default=None, metavar="OUT.json", help="write the merged report")
    m.add_argument("--csv", default=None, metavar="OUT.csv", help="write the merged gradebook")
    m.add_argument("--feedback", default=None, metavar="DIR", help="write DIR/STUDENT.md per student")
    _force_flag(m)
    return m


def _near(path):
    """``path`` relative to the current folder when it is below it (reports then name solutions/NN.ipynb)."""
    rel = os.path.relpath(path)
    return path if rel.startswith(os.pardir) else rel


def _course_of(args):
    from .course.course_dir import find_course
    return find_course(getattr(args, "course", None))


def _is_batch(args) -> bool:
    """A folder or zip of submissions, or a batch-only flag: grade by student (collect + gradebook)."""
    import zipfile
    inputs = [s for s in args.submissions if os.path.isdir(s) or (os.path.isfile(s) and not s.endswith(".ipynb")
                                                                   and zipfile.is_zipfile(s))]
    return bool(inputs or args.csv or args.feedback or args.shard or args.scheduler)


def _write_gradebook(report, args):
    from .course import gradebook
    print(gradebook.summary(report))
    outputs = [(args.json, lambda: gradebook.dumps(report)), (args.csv, lambda: gradebook.to_csv(report))]
    _write(args, "grade", outputs,
           gradebook.feedback_files(report, args.feedback) if args.feedback else [])
    bad = report["problems"] or any(e["error"] or e["earned"] < e["possible"]
                                    for st in report["students"].values() for e in st["exercises"].values())
    return 1 if bad else 0


def _grade_batch(args) -> int:
    from .course.batch import grade_batch, parse_shard
    for flag, value in (("--junit", args.junit), ("--against", args.against)):
        if value:
            return _error(f"{flag} is for single notebooks; a batch (folder, zip, --csv, --shard...) matches each "
                          "notebook to its exercise and writes --csv, --json and --feedback")
    course = _course_of(args)
    _writable(args, "grade", args.json, args.csv)
    if not course.is_instructors:
        return _error(f"{course.root} has no solutions/: grading a batch needs the instructor's repository "
                      "(pass --course DIR)")
    shard = parse_shard(args.shard) if args.shard else None
    report = grade_batch(args.submissions, course, shard=shard, scheduler=args.scheduler, hidden=args.hidden,
                         timeout=args.timeout, workers=args.workers, keep_dir=args.keep, sandbox=args.sandbox)
    return _write_gradebook(report, args)


def _self_check(paths, timeout, workers, keep_dir, **_):
    from .course.selfcheck import self_check
    return self_check(paths, timeout=timeout, workers=workers, keep_dir=keep_dir)


def _grade_merge(argv) -> int:
    from .course import gradebook
    from .course.written import WouldOverwrite
    args = _merge_parser().parse_args(argv)
    try:
        _writable(args, "grade merge", args.json, args.csv)
        report = gradebook.merge([gradebook.load(p) for p in args.reports])
        return _write_gradebook(report, args)
    except gradebook.ReportError as e:
        return _error(str(e))
    except WouldOverwrite as e:
        return _error(str(e), 1)


def _course_release(args) -> int:
    from .course.release import release
    course = _course_of(args)
    files = release(course, args.out)
    print(f"the students' repository: {len(files)} files in {args.out} (no solutions, no hidden tests; "
          "scanned for leaks: none)")
    return 0


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
    m.add_argument("--solutions", default=None, help="instructor notebooks (default: the course's solutions/)")
    m.add_argument("--min-score", type=float, default=0.9,
                   help="exit 1 if an exercise's score killed/(killed+survived) is below this (default 0.9)")
    m.add_argument("--json", default=None, metavar="OUT.json", help="also write every mutant and its class as JSON")
    _force_flag(m)
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
    _writable(args, "course mutants", args.json)
    if args.solutions is None and (args.course or not args.notebooks):
        args.solutions = _course_of(args).solutions
    paths = mutants.find_notebooks(args.notebooks, args.solutions or "solutions")

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
    _write(args, "course mutants", [(args.json, lambda: mutants.to_json(results, args.min_score))])
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


def _force_flag(parser):
    parser.add_argument("--force", action="store_true",
                        help="replace report files edited since gradlab wrote them, keeping each as "
                             "NAME.backup-DATE next to it (without it, such a file is never overwritten)")


def _writable(args, command, *paths):
    """Refuse before the (long) run when an output file is someone's edit and ``--force`` is not given.

    The same rule as when writing (gradlab/course/written.py), minus the case "the new bytes equal the
    old" that only the finished run can tell: better to say so now than after grading a whole batch.
    """
    from .course.written import Manifest, WouldOverwrite
    if args.force:
        return
    refused = [p for p in paths if p and not Manifest(os.path.dirname(os.path.abspath(p))).replaceable(p)]
    if refused:
        raise WouldOverwrite(command, refused, "Write the report elsewhere, or pass --force to replace "
                             f"{'it' if len(refused) == 1 else 'them'}, keeping each as NAME.backup-DATE next to it.")


def _write(args, command, outputs, more=()):
    """Write each ``(path, make_text)`` whose path was given, and the ``(path, bytes)`` of ``more``,
    all under the rule of gradlab/course/written.py (never over someone's edits without ``--force``)."""
    from .course.written import write_files
    planned = [(p, make().encode("utf-8")) for p, make in outputs if p] + list(more)
    write_files(command, planned, force=args.force, on_backup=lambda old, new: print(f"kept your {old} as {new}"))


def main(argv=None) -> int:
    args_list = sys.argv[1:] if argv is None else list(argv)
    if args_list[:2] == ["grade", "merge"]:
        return _grade_merge(args_list[2:])
    if args_list[:1] == ["lab"]:
        from .lab import main as lab_main
        return lab_main(args_list[1:])
    parser = _parser()
    args = parser.parse_args(argv)
    if argv is None:  # the `gradlab` command's own process: skip jsonschema's slow optional IRI grammar
        sys.modules.setdefault("rfc3987_syntax", None)  # (see course/_nbval_plugin.py); not when called as a library
    from .course.notebook import CourseError
    from .course.written import WouldOverwrite
    try:
        if args.command == "course" and args.course_command == "release":
            return _course_release(args)
        if args.command == "course" and args.course_command == "build":
            from .course import build
            if args.course or args.solutions is None or args.out is None:
                course = _course_of(args)
                args.solutions = args.solutions or course.solutions
                args.out = args.out or course.exercises
            paths = build(args.solutions, args.out, check_only=args.check, force=args.force,
                          on_backup=lambda old, new: print(f"kept your {old} as {new}"))
            verb = "up to date" if args.check else "written"
            n = sum(1 for p in paths if p.endswith(".ipynb"))
            print(f"{n} exercise notebook{'s' if n != 1 else ''} and their recorded values {verb} in {args.out}/")
            return 0
        if args.command == "fresh":
            return _fresh(args)
        if args.command == "course" and args.course_command == "mutants":
            return _course_mutants(args)
        if args.command == "practice":
            return _practice(args)
        if args.command == "grade":
            if args.timeout <= 0:
                return _error(f"--timeout must be positive, got {args.timeout:g}")
            if args.workers < 1:
                return _error(f"-n must be at least 1, got {args.workers}")
            if args.memory < 256:
                return _error(f"--memory must be at least 256 (MB), got {args.memory}")
            if _is_batch(args):
                return _grade_batch(args)
            _writable(args, "grade", args.json, args.junit)
            from .course import grade, table, to_json, to_junit
            if args.against is None and (args.course or args.solutions is None):
                course = _course_of(args)
                args.solutions = args.solutions or _near(course.solutions)
                grade = grade if course.is_instructors else _self_check   # a students' copy: no solutions
            from .course.practice import grade_drills  # a practice drill is graded against its op's rules
            results = grade_drills(grade, args.submissions, against=args.against, solutions_dir=args.solutions,
                                   hidden=args.hidden, timeout=args.timeout, workers=args.workers,
                                   keep_dir=args.keep, sandbox=args.sandbox, memory_mb=args.memory)
            print(table(results))
            _write(args, "grade", [(args.json, lambda: to_json(results)), (args.junit, lambda: to_junit(results))])
            if any(r.error for r in results):
                return 2
            return 1 if any(r.failed for r in results) else 0
    except WouldOverwrite as e:
        return _error(str(e), 1)
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
