"""Fixtures of the metrics tests: a finished study that the API, page and leaderboard tests share."""

from __future__ import annotations

import pytest

from collection.models import Study
from config.celery import app as celery_app
from tests.factories import annotators, disagreeing_crowd, make_study, vote_until


def study_voted_to_the_end(django_db_blocker, *, voters: int, crowd_seed: int, after=None, **study_fields):
    """A study of ``make_study(**study_fields)`` voted to the end by ``voters`` annotators of a crowd that
    disagrees, with Celery eager (the closes run in place); ``after(study)`` then, if given. Yields the
    finished study and deletes it after: the body of a module-scoped fixture."""
    eager = celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates
    celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = True, True
    with django_db_blocker.unblock():
        study = make_study(**study_fields)
        vote_until(study, voters=annotators(study, voters), choose=disagreeing_crowd(study, seed=crowd_seed))
        study.refresh_from_db()
        if after is not None:
            after(study)
            study.refresh_from_db()
    celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = eager
    assert study.status == Study.Status.FINISHED
    yield study
    with django_db_blocker.unblock():
        study.delete()


@pytest.fixture(scope="module")
def finished_study(django_db_setup, django_db_blocker):
    """28 items (8 tokens), 2 ballots, voted to the end by 6 annotators; built once for the module.

    The seed fixes the comparison schedules, so the final scores (and their ties) are the same on every run.
    """
    yield from study_voted_to_the_end(
        django_db_blocker, voters=6, crowd_seed=4, tokens=8, ballot_count=2, appearances=8, seed=4
    )


@pytest.fixture
def study(finished_study, db):
    return finished_study
