"""GET /metrics: only for the scrape that sends METRICS_TOKEN, and the figures move with the real work."""

import math
import socket
import time

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from collection.models import Ballot
from collection.tasks import ballot_close_task
from tests.collection.test_api import next_of, session_annotator, vote
from tests.factories import annotators, disagreeing_crowd, make_study, vote_until

pytestmark = pytest.mark.django_db

TOKEN = "scrape-token-7f3a9c"


@pytest.fixture(autouse=True)
def metrics_token(settings):
    settings.METRICS_TOKEN = TOKEN


def scrape(client: Client | None = None) -> dict:
    """{(sample name, sorted labels): value} of an authorised scrape."""
    response = (client or Client()).get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # closed again when the block ends: nothing listens there


# --- who may scrape ------------------------------------------------------------------------------


def test_it_asks_for_a_bearer_token_when_none_is_sent():
    response = Client().get("/metrics")

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="metrics"'
    assert response.content == b"send the header 'Authorization: Bearer <METRICS_TOKEN>'\n"


def test_it_refuses_a_token_of_another_scheme_as_missing():
    response = Client().get("/metrics", headers={"Authorization": f"Token {TOKEN}"})

    assert response.status_code == 401


def test_it_refuses_a_wrong_token():
    response = Client().get("/metrics", headers={"Authorization": f"Bearer {TOKEN}x"})

    assert response.status_code == 403
    assert response.content == b"the bearer token is not METRICS_TOKEN\n"


def test_it_is_off_for_everyone_without_a_configured_token(settings):
    settings.METRICS_TOKEN = ""

    for header in ({}, {"Authorization": "Bearer "}, {"Authorization": f"Bearer {TOKEN}"}):
        response = Client().get("/metrics", headers=header)
        assert response.status_code in {401, 403}, header
    response = Client().get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 403
    assert response.content == b"the metrics endpoint is off: set METRICS_TOKEN to turn it on\n"


def test_staff_without_the_token_cannot_scrape(django_user_model):
    client = Client()
    client.force_login(django_user_model.objects.create_user("staff", password="x", is_staff=True))

    assert client.get("/metrics").status_code == 401


def test_it_answers_the_right_token_and_only_to_get():
    assert Client().post("/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 405
    samples = scrape()
    assert samples[("yardstick_database_up", ())] == 1.0


# --- the figures ---------------------------------------------------------------------------------


def test_votes_cast_through_the_api_move_their_study_s_counter_only():
    voted, other = make_study(), make_study()
    before = scrape()
    assert before[("yardstick_votes_recorded_total", (("study", voted.slug),))] == 0.0
    client, _ = session_annotator(voted)
    choices = ["left", "right", "left"]  # a crowd that disagrees with itself still counts every vote

    for choice in choices:
        assignment = next_of(client, voted).json()["assignment"]
        assert vote(client, assignment, choice).status_code == 201

    after = scrape()
    assert after[("yardstick_votes_recorded_total", (("study", voted.slug),))] == 3.0
    assert after[("yardstick_votes_recorded_total", (("study", other.slug),))] == 0.0


def test_the_latency_histogram_has_the_vote_view_with_each_vote_in_it():
    study = make_study()
    client, _ = session_annotator(study)
    count = ("yardstick_request_duration_seconds_count", (("method", "POST"), ("view", "api:votes")))
    before = scrape().get(count, 0.0)

    for choice in ["left", "right"]:
        assignment = next_of(client, study).json()["assignment"]
        vote(client, assignment, choice)
    vote(client, 10**9, "left")  # a refused vote is a request of the vote view too

    samples = scrape()
    assert samples[count] == before + 3
    inf_bucket = (
        "yardstick_request_duration_seconds_bucket",
        (("le", "+Inf"), ("method", "POST"), ("view", "api:votes")),
    )
    assert samples[inf_bucket] == samples[count]
    next_count = ("yardstick_request_duration_seconds_count", (("method", "GET"), ("view", "api:study-next")))
    assert samples[next_count] >= 2


def test_a_path_no_pattern_matches_is_one_label_not_one_per_path():
    key = ("yardstick_request_duration_seconds_count", (("method", "GET"), ("view", "<unmatched>")))
    before = scrape().get(key, 0.0)

    for path in ["/no-such-page-1/", "/no-such-page-2/x"]:
        assert Client().get(path).status_code == 404

    assert scrape()[key] == before + 2


def test_a_ballot_close_records_its_duration_once_and_a_repeated_message_apart():
    study = make_study()  # ballot 1: 15 items, 30 comparisons
    ballot = study.ballots.get(number=1)
    closed = ("yardstick_ballot_close_duration_seconds_count", (("outcome", "closed"),))
    again = ("yardstick_ballot_close_duration_seconds_count", (("outcome", "already_closed"),))
    closed_sum = ("yardstick_ballot_close_duration_seconds_sum", (("outcome", "closed"),))
    before = scrape()

    votes = vote_until(
        study,
        voters=annotators(study, 5),
        choose=disagreeing_crowd(study, seed=3),
        max_votes=ballot.comparison_count,
    )

    ballot.refresh_from_db()
    assert (votes, ballot.status) == (30, Ballot.Status.CLOSED)
    middle = scrape()
    assert middle[closed] == before.get(closed, 0.0) + 1
    assert middle[closed_sum] > before.get(closed_sum, 0.0)

    ballot_close_task(ballot.pk)  # the message delivered twice: no second close

    after = scrape()
    assert after[closed] == middle[closed]
    assert after[again] == middle.get(again, 0.0) + 1


def test_the_embedded_default_has_no_queue_to_report(settings):
    settings.CELERY_BROKER_URL = "memory://localhost/"  # what the settings choose without a broker

    samples = scrape()

    assert [key for key in samples if key[0].startswith("yardstick_queue")] == []


def test_a_scrape_with_redis_unreachable_answers_with_the_lag_unknown(settings):
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{closed_port()}/12"
    settings.BROKER_TIMEOUT_SECONDS = 0.5

    started = time.monotonic()
    samples = scrape()

    assert time.monotonic() - started < 3
    assert samples[("yardstick_queue_lag_known", (("queue", "celery"),))] == 0.0
    assert math.isnan(samples[("yardstick_queue_lag_seconds", (("queue", "celery"),))])
    assert math.isnan(samples[("yardstick_queue_length", (("queue", "celery"),))])
    assert samples[("yardstick_database_up", ())] == 1.0  # the rest of the scrape is there
