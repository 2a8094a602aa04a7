"""Tasks are found by the names that queued messages and the beat schedule carry."""

import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings

from common.tasks import task_named

ROOT = Path(__file__).resolve().parents[2]
TASKS = {
    "collection.study_job_run": "collection.tasks",
    "scoring.ballot_close": "collection.tasks",
    "scoring.ballots_sweep": "scoring.tasks",
    "scoring.simulate": "scoring.tasks",
    "scoring.simulation_run": "scoring.tasks",
    "scoring.plan_search_run": "scoring.tasks",
    "scoring.side_by_side": "scoring.tasks",
}


def test_every_task_keeps_its_name():
    assert {name: task_named(name).__module__ for name in TASKS} == TASKS


def test_every_task_of_the_beat_schedule_is_registered():
    names = [entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()]
    assert [task_named(name).name for name in names] == names


# A fresh process (nothing looked up yet), whose threads all look their first task up at once, as a
# web process's threads do at a ballot's end: each gets the task.
FIRST_LOOKUPS_AT_ONCE = """
import threading
import django

django.setup()
from common.tasks import task_named

threads, found, barrier = 8, [], threading.Barrier(8)


def look_up():
    barrier.wait()
    try:
        found.append(task_named("scoring.ballot_close").name)
    except Exception as error:
        found.append(type(error).__name__)


workers = [threading.Thread(target=look_up) for _ in range(threads)]
for worker in workers:
    worker.start()
for worker in workers:
    worker.join()
print(",".join(sorted(found)))
"""


def test_threads_that_look_their_first_task_up_at_once_each_find_it():
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    for _ in range(3):  # without the lock, 7 of 8 failed in every run
        finished = subprocess.run(
            [sys.executable, "-c", FIRST_LOOKUPS_AT_ONCE],
            cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120, check=True,
        )  # fmt: skip
        assert finished.stdout.split() == [",".join(["scoring.ballot_close"] * 8)], finished.stderr[-2000:]
