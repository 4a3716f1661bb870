"""Tasks that misbehave on a Dask worker, for tests/test_course_cluster.py (imported by the workers).

Each has ``cluster.grade_task``'s signature; ``marker`` (bound with functools.partial) is a file that
says whether a first attempt already happened.
"""
from __future__ import annotations

import os
import time

from gradlab.course.cluster import grade_task


def kill_worker_once(exercise, submission, solution, reference, options, marker):
    """The first attempt kills its worker process (as an out-of-memory kill would); the retry grades."""
    if not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(1)
    return grade_task(exercise, submission, solution, reference, options)


def always_kill_worker(exercise, submission, solution, reference, options, marker):
    with open(marker, "a") as f:
        f.write("x")
    os._exit(1)


def never_finish(exercise, submission, solution, reference, options, marker):
    with open(marker, "a") as f:
        f.write("x")
    time.sleep(6)
    return {}
