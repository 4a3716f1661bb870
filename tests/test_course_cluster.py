"""`gradlab grade --scheduler`: gradings as tasks on a local Dask cluster of 2 worker processes.

The same batch gives the same report on the cluster as in one process (the reference computed once per
exercise on a worker and shipped); a worker killed mid-task is retried; a task that kills its worker
every time, or never finishes, is tried twice and then reported as not graded.
"""
from __future__ import annotations

import functools
import json

import pytest

from gradlab.course import gradebook
from gradlab.course.batch import grade_batch
from gradlab.course.cluster import grade_on_cluster
from gradlab.course.collect import collect
from gradlab.course.course_dir import Course

from . import cluster_tasks
from .course_downloads import ROOT, canvas_zip, class_of
from .optional import require

require("distributed", "--scheduler needs dask.distributed: pip install 'gradlab[cluster]'")
pytest.importorskip("nbval", reason="gradlab grade needs nbval (pip install 'gradlab[dev]')")
pytestmark = pytest.mark.slow
COURSE = Course(str(ROOT))


@pytest.fixture(scope="module")
def cluster():
    import dask
    import distributed
    # one death marks a task failed (Dask's default is 3): the retry tested here is gradlab's own
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                      env={"PYTHONPATH": str(ROOT)}) as c:
            yield c


@pytest.fixture(scope="module")
def download(tmp_path_factory):
    return canvas_zip(tmp_path_factory.mktemp("cluster") / "c.zip", class_of(3, ["01_unbroadcast"]))


def test_the_cluster_gives_the_report_of_one_process(cluster, download):
    options = dict(timeout=120.0, sandbox="auto")
    local = grade_batch([download], COURSE, **options)
    remote = grade_batch([download], COURSE, scheduler=cluster, **options)
    assert gradebook.dumps(remote) == gradebook.dumps(local)
    assert gradebook.to_csv(remote) == gradebook.to_csv(local)
    assert {e["earned"] for st in remote["students"].values() for e in st["exercises"].values()} != {0}


def _one(download, tmp_path):
    batch = collect([download], COURSE)
    s = batch.submissions[0]
    return batch, [(s.path, s.exercise, str(ROOT / "solutions" / f"{s.exercise}.ipynb"))]


def test_a_killed_worker_is_retried(cluster, download, tmp_path):
    batch, subs = _one(download, tmp_path)
    try:
        task = functools.partial(cluster_tasks.kill_worker_once, marker=str(tmp_path / "killed"))
        doc = json.loads(grade_on_cluster(subs, cluster, timeout=120.0, task=task))["notebooks"][0]
    finally:
        batch.cleanup()
    assert (tmp_path / "killed").exists() and doc["error"] is None and doc["parts"], doc


@pytest.mark.parametrize("bad", ["always_kill_worker", "never_finish"])
def test_a_task_that_fails_twice_is_reported_not_graded(cluster, download, tmp_path, bad):
    batch, subs = _one(download, tmp_path)
    marker = tmp_path / "tries"
    try:
        task = functools.partial(getattr(cluster_tasks, bad), marker=str(marker))
        wait = 3 if bad == "never_finish" else 120        # a dying worker fails the task at once
        doc = json.loads(grade_on_cluster(subs, cluster, timeout=120.0, task=task, task_timeout=wait))["notebooks"][0]
    finally:
        batch.cleanup()
    assert doc["error"].startswith("not graded: grading failed on the cluster 2 times"), doc
    tries = marker.read_text()
    if bad == "always_kill_worker":
        assert tries == "xx", doc        # tried exactly twice
    else:                                # a second attempt may time out still queued behind the first
        assert tries in ("x", "xx")      # (a cancelled task runs on in its worker thread)
