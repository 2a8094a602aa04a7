"""Fixtures of the metrics tests: a finished study that the API, page and leaderboard tests share."""

from __future__ import annotations

import pytest

from collection.models import Study
from config.celery import app as celery_app
from tests.factories import annotators, disagreeing_crowd, make_study, vote_until


@pytest.fixture(scope="module")
def finished_study(django_db_setup, django_db_blocker):
    """28 items (8 tokens), 2 ballots, voted to the end by 6 annotators; built once for the module.

    The seed fixes the comparison schedules, so the final scores (and their ties) are the same on every run.
    """
    eager = celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates
    celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = True, True
    with django_db_blocker.unblock():
        study = make_study(tokens=8, ballot_count=2, appearances=8, seed=4)
        vote_until(study, voters=annotators(study, 6), choose=disagreeing_crowd(study, seed=4))
        study.refresh_from_db()
    celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = eager
    assert study.status == Study.Status.FINISHED
    yield study
    with django_db_blocker.unblock():
        study.delete()


@pytest.fixture
def study(finished_study, db):
    return finished_study
