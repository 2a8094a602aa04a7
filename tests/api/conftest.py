"""Fixtures of the API-wide tests: the world they probe, and the limits out of their way."""

import pytest
from django.core.cache import cache

from config.celery import app as celery_app
from tests.api.world import build_world


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    """Studies in every state, owners, submissions (tests/api/world.py), built once per module."""
    eager = celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates
    celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = True, True
    with django_db_blocker.unblock():
        built = build_world()
    celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = eager
    yield built
    with django_db_blocker.unblock():
        from django.core.management import call_command

        call_command("flush", interactive=False, verbosity=0)


@pytest.fixture(autouse=True)
def limits_off(settings):
    """Rate limits and the failed-login lockout off, so that requests reach the views (429 is documented
    for the operations that have it; the lockout's counts are cleared for the tests that follow)."""
    rates = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": dict.fromkeys(rates)}
    settings.AXES_FAILURE_LIMIT = 10**9
    yield
    cache.clear()
