"""``gradlab grade`` over a download: collect, take this shard, grade, and report by student.

``grade_batch(inputs, course, shard=(I, N), scheduler=None, **grade_options)`` runs the pipeline
``collect`` -> ``take_shard`` -> the grader (``grade.grade`` in this process, or spread over a Dask
cluster by ``cluster.grade_on_cluster``) -> ``gradebook.batch_report``. Grading is the grader's:
this module only decides which files go in and reads its JSON report back.

Holds ``grade_batch`` and ``parse_shard(text)`` ('I/N' -> (I, N), checked).
"""
from __future__ import annotations

import os

from . import gradebook
from .collect import collect, take_shard
from .notebook import CourseError


def parse_shard(text):
    """'I/N' -> (I, N), checked (1 <= I <= N)."""
    try:
        i, n = (int(x) for x in str(text).split("/"))
    except ValueError:
        raise CourseError(f"--shard {text}: expected I/N, such as 1/4 (the first of four shards)") from None
    if n < 1 or not 1 <= i <= n:
        raise CourseError(f"--shard {text}: I must be between 1 and N (got {i}/{n})")
    return i, n


def grade_batch(inputs, course, shard=None, scheduler=None, **options) -> dict:
    """The batch report (``gradebook``) of the submissions in ``inputs``, or of shard ``(I, N)`` of them."""
    from .grading import grade
    from .report import to_json
    batch = collect(inputs, course)
    try:
        if not batch.submissions and not batch.problems:
            raise CourseError("empty batch: no notebooks in " + ", ".join(map(str, inputs)))
        if not batch.submissions:
            raise CourseError(f"empty batch: none of the {len(batch.problems)} files in "
                              f"{', '.join(map(str, inputs))} is a notebook of this course "
                              f"(first: {batch.problems[0]['source']}: {batch.problems[0]['problem']})")
        label = "all"
        if shard is not None:
            i, n = shard
            batch, label = take_shard(batch, i, n), f"{i}/{n}"
        paths = [s.path for s in batch.submissions]
        if not paths:
            results_json = to_json([])
        elif scheduler:
            from .cluster import grade_on_cluster
            subs = [(s.path, s.exercise, os.path.join(course.solutions, s.exercise + ".ipynb"))
                    for s in batch.submissions]
            results_json = grade_on_cluster(subs, scheduler, **options)
        else:
            results_json = to_json(grade(paths, solutions_dir=course.solutions, **options))
        return gradebook.batch_report(batch, results_json, course, shard=label)
    finally:
        batch.cleanup()
