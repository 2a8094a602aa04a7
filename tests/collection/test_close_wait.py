"""Each close stores how long it took; annotators who arrive while a ballot closes are told how long to
wait, estimated from the closes measured in their study, and the page and the API say it."""

import re
import time

import pytest
from django.urls import reverse

from collection.lifecycle import ballot_close, ballot_close_wait_seconds
from collection.models import Ballot, BallotCounter, Comparison
from collection.voting import NextReason, comparison_next_for
from tests.collection.test_api import next_of, session_annotator
from tests.collection.test_views import join, page
from tests.factories import annotators, make_study, vote_until

pytestmark = pytest.mark.django_db


def _fully_voted_but_open(ballot: Ballot) -> None:
    """The state between the last vote of a ballot and its close: every comparison voted, still open."""
    Comparison.objects.filter(ballot=ballot).update(status=Comparison.Status.VOTED)
    BallotCounter.add(ballot_id=ballot.pk, votes=ballot.comparison_count)


@pytest.fixture
def closing_second_ballot():
    """15 items, ballots of 30, 16 and 8 comparisons; ballot 1 closed in 6.0 s (a slow machine), ballot
    2 fully voted and closing."""
    study = make_study()
    vote_until(study, voters=annotators(study, 5), max_votes=30)  # the 30th vote closes ballot 1
    study.ballots.filter(number=1).update(close_seconds=6.0)
    second = study.ballots.get(number=2)
    _fully_voted_but_open(second)
    return study


def test_a_close_stores_how_long_it_took():
    study = make_study()
    crowd = annotators(study, 5)
    vote_until(study, voters=crowd, max_votes=29)  # one comparison left: no close yet
    first = study.ballots.get(number=1)
    assert first.close_seconds is None

    started = time.perf_counter()
    ballot_close(ballot_id=first.pk)
    elapsed = time.perf_counter() - started

    first.refresh_from_db()
    assert first.status == Ballot.Status.CLOSED
    assert 0 < first.close_seconds <= elapsed
    assert study.ballots.get(number=2).close_seconds is None


def test_the_wait_is_the_measured_seconds_per_comparison_times_the_closing_ballot(closing_second_ballot):
    study = closing_second_ballot
    # 6.0 s for 30 comparisons: 0.2 s each; ballot 2 has 16: 3.2 s, with half as margin 4.8 s, plus a
    # second for the page to reload: 5.8 s, told as 6.
    result = comparison_next_for(annotator=annotators(study, 1, prefix="late")[0])
    assert (result.assignment, result.reason, result.retry_after_seconds) == (
        None,
        NextReason.BALLOT_CLOSING,
        6,
    )


def test_every_measured_close_of_the_study_counts():
    study = make_study()
    vote_until(study, voters=annotators(study, 5), max_votes=46)  # ballots 1 and 2 closed
    study.ballots.filter(number=1).update(close_seconds=6.0)
    study.ballots.filter(number=2).update(close_seconds=1.0)
    third = study.ballots.get(number=3)
    # 7.0 s for 46 comparisons, times 8, times 1.5, plus 1: 2.83 s, told as 3.
    assert ballot_close_wait_seconds(study_id=study.pk, ballot=third) == 3
    # Another study's closes do not count.
    other = make_study()
    vote_until(other, voters=annotators(other, 5), max_votes=30)
    other.ballots.filter(number=1).update(close_seconds=600.0)
    assert ballot_close_wait_seconds(study_id=study.pk, ballot=third) == 3


def test_the_wait_stays_between_two_seconds_and_ten_minutes(closing_second_ballot):
    study = closing_second_ballot
    second = study.ballots.get(number=2)
    study.ballots.filter(number=1).update(close_seconds=0.001)
    assert ballot_close_wait_seconds(study_id=study.pk, ballot=second) == 2
    study.ballots.filter(number=1).update(close_seconds=50_000.0)
    assert ballot_close_wait_seconds(study_id=study.pk, ballot=second) == 600


def test_before_any_close_is_measured_the_wait_is_the_prior_per_comparison(settings):
    settings.CELERY_BEAT_SCHEDULE = {"ballots-sweep": {"task": "scoring.ballots_sweep", "schedule": 40.0}}
    study = make_study()
    first = study.ballots.get()
    _fully_voted_but_open(first)
    # 30 comparisons at 1e-4 s, times 1.5, plus 1: 1.0045 s, at least 2: a close of a few hundredths
    # of a second is not waited for as long as the sweep interval (40 s here).
    result = comparison_next_for(annotator=annotators(study, 1)[0])
    assert (result.reason, result.retry_after_seconds) == (NextReason.BALLOT_CLOSING, 2)
    # A first ballot of 10^5 comparisons (10^4 items, M = 20): 10 s, times 1.5, plus 1: 16 s.
    assert ballot_close_wait_seconds(study_id=study.pk, comparison_count=100_000) == 16
    # No ballot to go by (none open while the study runs, which the sweep repairs): the sweep interval.
    assert ballot_close_wait_seconds(study_id=study.pk) == 40


def test_the_page_says_how_long_and_reloads_by_itself_then(client, closing_second_ballot):
    study = closing_second_ballot
    join(client, study, participant="late")
    vote_url = reverse("collection:vote", args=[study.slug])

    response = client.get(vote_url)

    assert response.status_code == 200 and response["Retry-After"] == "6"
    shown = page(response)
    assert shown.attributes["nothing"]["data-reason"] == NextReason.BALLOT_CLOSING
    assert shown.text["closing-wait"] == "6 seconds"
    # Without JavaScript the browser reloads the page after the wait: the next ballot's comparison.
    assert re.findall(r'<meta http-equiv="refresh" content="(\d+)">', response.content.decode()) == ["6"]


def test_a_long_wait_is_said_in_minutes(client, closing_second_ballot):
    study = closing_second_ballot
    study.ballots.filter(number=1).update(close_seconds=300.0)  # 10 s per comparison: 241 s for 16
    join(client, study, participant="late")

    response = client.get(reverse("collection:vote", args=[study.slug]))

    assert response["Retry-After"] == "241"
    assert page(response).text["closing-wait"] == "4 minutes"


def test_the_api_says_it_in_retry_after(closing_second_ballot):
    client, _ = session_annotator(closing_second_ballot)

    response = next_of(client, closing_second_ballot)

    assert response.status_code == 204
    assert (response["X-Yardstick-Reason"], response["Retry-After"]) == (NextReason.BALLOT_CLOSING, "6")
