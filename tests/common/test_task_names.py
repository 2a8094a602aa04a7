"""Tasks are found by the names that queued messages and the beat schedule carry."""

from django.conf import settings

from common.tasks import task_named

TASKS = {
    "collection.study_job_run": "collection.tasks",
    "scoring.ballot_close": "collection.tasks",
    "scoring.ballots_sweep": "scoring.tasks",
    "scoring.simulate": "scoring.tasks",
    "scoring.simulation_run": "scoring.tasks",
    "scoring.plan_search_run": "scoring.tasks",
}


def test_every_task_keeps_its_name():
    assert {name: task_named(name).__module__ for name in TASKS} == TASKS


def test_every_task_of_the_beat_schedule_is_registered():
    names = [entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()]
    assert [task_named(name).name for name in names] == names
