"""A ballot whose closing message was lost (the broker down at its last vote) is closed without Celery
beat: the next lease that finds it fully voted and open asks for the close again once its last vote is
old enough; ``/healthz/`` says when the sweep has not run for a while. (The worker's sweep when it
connects to the broker again: tests/integration/test_sweep_on_connect.py.)"""

from __future__ import annotations

from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import F
from django.test import Client
from django.utils import timezone

from collection.lifecycle import (
    ballot_close_ask_again,
    ballot_close_asks_forget,
    ballots_sweep,
    ballots_sweep_health,
)
from collection.models import Ballot, SweepRun, Vote
from collection.voting import NextReason, comparison_next_for
from config.celery import app
from tests.factories import annotators, committed_callbacks, disagreeing_crowd, make_study, vote_until

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_ballot_looked_at():
    ballot_close_asks_forget()  # ballot ids repeat from test to test
    yield
    ballot_close_asks_forget()


@pytest.fixture(autouse=True)
def tasks_run_in_place():
    """Celery runs the tasks asked for in this process (the embedded default), on any configuration."""
    app.loader.import_default_modules()
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = eager


@contextmanager
def closing_messages_lost():
    """Celery sends to its in-memory transport, which no worker reads: every message sent is lost, as
    the closing message of a vote made while Redis was down."""
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = False
    try:
        yield
    finally:
        app.conf.task_always_eager = eager


def fully_voted_ballot_left_open():
    """Ballot 1 of a study (15 items, 30 comparisons) voted through by a crowd that disagrees, its
    closing message lost; the crowd's annotators."""
    study = make_study(tokens=6, appearances=4)
    crowd = annotators(study, 5)
    with closing_messages_lost():
        votes = vote_until(study, voters=crowd, choose=disagreeing_crowd(study, seed=3))
    ballot = Ballot.objects.get(study=study, number=1)
    assert (votes, ballot.votes_recorded, ballot.status) == (30, 30, "open")
    return study, ballot, crowd


def last_vote_seconds_ago(ballot: Ballot, seconds: float) -> None:
    newest = Vote.objects.filter(ballot=ballot).order_by("-created_at").values_list("created_at", flat=True)[0]
    shift = timezone.now() - timedelta(seconds=seconds) - newest
    Vote.objects.filter(ballot=ballot).update(created_at=F("created_at") + shift)


def test_a_lease_asks_again_for_the_close_of_a_ballot_fully_voted_a_while_ago_and_left_open():
    study, ballot, crowd = fully_voted_ballot_left_open()
    last_vote_seconds_ago(ballot, 60)
    ballot_close_asks_forget()  # a process that looks at it for the first time (the crowd's just did)

    with committed_callbacks():
        closing = comparison_next_for(annotator=crowd[0])

    assert closing.reason == NextReason.BALLOT_CLOSING  # the close runs after this answer
    assert list(study.ballots.order_by("number").values_list("number", "status")) == [
        (1, "closed"),
        (2, "open"),
    ]
    assert comparison_next_for(annotator=crowd[0]).reason == NextReason.OK


def test_a_ballot_whose_last_vote_is_recent_is_left_to_the_close_already_asked_for():
    study, ballot, crowd = fully_voted_ballot_left_open()
    ballot_close_asks_forget()

    with committed_callbacks():
        closing = comparison_next_for(annotator=crowd[0])

    assert closing.reason == NextReason.BALLOT_CLOSING
    ballot.refresh_from_db()
    assert ballot.status == "open"


def test_a_process_asks_again_at_most_once_per_interval_however_many_annotators_look():
    study, ballot, crowd = fully_voted_ballot_left_open()
    last_vote_seconds_ago(ballot, 60)
    ballot_close_asks_forget()

    with closing_messages_lost():  # the broker still loses them: the ballot stays open
        asked = [ballot_close_ask_again(ballot_id=ballot.pk) for _ in range(50)]

    assert asked == [True] + [False] * 49


def test_the_interval_grows_with_the_expected_close():
    study, ballot, crowd = fully_voted_ballot_left_open()
    last_vote_seconds_ago(ballot, 30)

    with closing_messages_lost():
        slow = ballot_close_ask_again(ballot_id=ballot.pk, expected_close_seconds=20)  # twice: 40 s
        ballot_close_asks_forget()
        quick = ballot_close_ask_again(ballot_id=ballot.pk, expected_close_seconds=2)  # at least 10 s

    assert (slow, quick) == (False, True)


# --- the sweep's health -------------------------------------------------------------------------------


def test_the_sweep_records_when_it_ran_and_healthz_says_so_on_the_full_stack(settings):
    settings.CELERY_TASK_ALWAYS_EAGER = False  # a broker: closes depend on the sweep
    settings.HEALTHZ_SWEEP_READ_SECONDS = 0  # read at each request
    ballots_sweep()
    ran = SweepRun.objects.get(name="ballots").finished_at

    body = Client().get("/healthz/").json()

    assert body["sweep"] == {"last_run": ran.isoformat(), "late": False}
    assert (body["status"], abs((timezone.now() - ran).total_seconds()) < 5) == ("ok", True)


def test_healthz_says_the_sweep_is_late_and_what_to_check_but_stays_200(settings):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.HEALTHZ_SWEEP_READ_SECONDS = 0
    an_hour_ago = timezone.now() - timedelta(hours=1)
    SweepRun.objects.create(name="ballots", finished_at=an_hour_ago)

    response = Client().get("/healthz/")

    assert response.status_code == 200
    assert response.json()["sweep"] == {
        "last_run": an_hour_ago.isoformat(),
        "late": True,
        "detail": "the ballots sweep has not run for 3,600 s (Celery beat runs it every 15 s): check that "
        "beat runs; until it does, a ballot whose closing message was lost waits for a worker to connect or "
        "for an annotator to ask for work",
    }


@pytest.mark.parametrize(
    "minutes_ago, late",
    [(0.5, False), (0.99, False), (1.01, True), (30, True)],  # 4 × 15 s = 60 s: the minute decides
)
def test_the_sweep_is_late_after_four_intervals_and_a_minute(minutes_ago, late):
    now = timezone.now()
    SweepRun.objects.create(name="ballots", finished_at=now - timedelta(minutes=minutes_ago))

    assert ballots_sweep_health(now=now)["late"] is late


def test_a_sweep_that_never_ran_is_late_an_hour_after_this_process_started():
    health = ballots_sweep_health(now=timezone.now() + timedelta(hours=1))

    assert (health["last_run"], health["late"]) == (None, True)


def test_healthz_reads_the_sweep_again_only_after_its_interval(settings):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.HEALTHZ_SWEEP_READ_SECONDS = 3600
    first = Client().get("/healthz/").json()["sweep"]
    ballots_sweep()

    assert Client().get("/healthz/").json()["sweep"] == first  # a probe's cost stays one SELECT 1
    settings.HEALTHZ_SWEEP_READ_SECONDS = 0
    assert Client().get("/healthz/").json()["sweep"]["last_run"] is not None


def test_the_embedded_default_has_no_sweep_to_report(settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True  # no broker: no beat, and a close cannot be lost on its way

    assert Client().get("/healthz/").json() == {"status": "ok", "database": connection.vendor}
