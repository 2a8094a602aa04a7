"""A browser's judgement on PostgreSQL, through REST framework's request cycle (``VoteView.post``): the
CSRF check, the limits counted once, the answers, and nothing written by a refused request."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.db import OperationalError, connection
from django.test import Client, override_settings
from django.urls import reverse
from django.utils import timezone
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from rest_framework.authtoken.models import Token as ApiToken

from collection import voting
from collection.identity import annotator_consent, annotator_for
from collection.models import Assignment, Vote
from common.unavailable import DATABASE_RETRY_AFTER_SECONDS, UNAVAILABLE_MESSAGE
from tests.factories import make_study

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _postgres(postgres_required):
    assert connection.vendor == "postgresql"


@pytest.fixture
def vote_limits():
    """Sets the annotator limits of votes: (per participant, per address), per minute."""

    def set_limits(participant: int, address: int):
        framework = dict(django_settings.REST_FRAMEWORK)
        framework["DEFAULT_THROTTLE_RATES"] = {
            **framework["DEFAULT_THROTTLE_RATES"],
            "vote.participant": f"{participant}/min",
            "vote.address": f"{address}/min",
        }
        return override_settings(REST_FRAMEWORK=framework)

    return set_limits


def browser() -> Client:
    return Client(enforce_csrf_checks=True)


def join(client: Client, study, participant: str) -> None:
    """Through the study link, as a crowd platform sends people: the annotator cookie, no session."""
    entry = reverse("collection:entry", args=[study.slug])
    client.get(entry, {"participant": participant})
    token = client.cookies["csrftoken"].value
    client.post(entry, {"consent": "yes", "participant": participant, "csrfmiddlewaretoken": token})
    assert django_settings.SESSION_COOKIE_NAME not in client.cookies


def next_assignment(client: Client, study) -> int:
    answer = client.get(f"/api/studies/{study.slug}/next/")
    assert answer.status_code == 200, answer.content
    return answer.json()["assignment"]


def send(client: Client, body, *, token: str | None = None, content_type="application/json", **headers):
    token = client.cookies["csrftoken"].value if token is None else token
    data = body if isinstance(body, str) else json.dumps(body)
    return client.post("/api/votes/", data, content_type=content_type, HTTP_X_CSRFTOKEN=token, **headers)


def test_a_crowd_that_disagrees_judges_and_each_answer_carries_the_next():
    study = make_study()
    crowd = [browser() for _ in range(3)]
    for number, client in enumerate(crowd):
        join(client, study, f"p-{number}")
    held = [next_assignment(client, study) for client in crowd]
    answers = []
    for round_number in range(4):
        for number, client in enumerate(crowd):
            choice = ("left", "right", "tie" if study.allow_ties else "left")[(number + round_number) % 3]
            answer = send(client, {"assignment": held[number], "choice": choice, "client_response_ms": 900})
            answers.append(answer)
            held[number] = answer.json()["next"]["assignment"]

    assert [answer.status_code for answer in answers] == [201] * 12
    assert Vote.objects.count() == 12
    first = answers[0]
    assert first["Content-Type"] == "application/json"
    assert first["Allow"] == "POST, OPTIONS"
    assert set(first.json()) == {
        "vote",
        "assignment",
        "choice",
        "created",
        "next",
        "next_reason",
        "next_retry_after",
    }
    assert first.json()["created"] is True and first.json()["next_reason"] == "ok"


def test_a_retry_of_a_recorded_vote_is_answered_200_with_the_same_vote():
    study = make_study()
    client = browser()
    join(client, study, "p")
    assignment = next_assignment(client, study)

    first = send(client, {"assignment": assignment, "choice": "right"})
    again = send(client, {"assignment": assignment, "choice": "left"})

    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["vote"] == first.json()["vote"] and again.json()["choice"] == "right"
    assert Vote.objects.count() == 1


def test_a_lapsed_lease_is_refused_with_the_apis_error_body_and_nothing_written():
    study = make_study()
    client = browser()
    join(client, study, "p")
    assignment = next_assignment(client, study)
    Assignment.objects.filter(pk=assignment).update(expires_at=timezone.now() - timedelta(seconds=1))

    refused = send(client, {"assignment": assignment, "choice": "left"})

    assert refused.status_code == 409
    assert set(refused.json()) >= {"detail"}
    assert refused["Allow"] == "POST, OPTIONS"
    assert Vote.objects.count() == 0


@pytest.mark.parametrize(
    ("body", "content_type", "status"),
    [
        ("{not json", "application/json", 400),
        ("[" * 100_000, "application/json", 400),  # nested deeper than the decoder goes
        ({"assignment": "1", "choice": "left"}, "application/json", 400),
        ({"assignment": 1, "choice": "up"}, "application/json", 400),
        ({"assignment": 1, "choice": "left"}, "application/json; charset=latin-1", None),
        ("assignment=1&choice=left", "application/x-www-form-urlencoded", 415),
    ],
)
def test_a_body_that_is_not_a_vote_is_refused_with_what_is_wrong(body, content_type, status):
    study = make_study()
    client = browser()
    join(client, study, "p")
    assignment = next_assignment(client, study)
    if isinstance(body, dict) and body["assignment"] == 1:
        body = {**body, "assignment": assignment}

    answer = send(client, body, content_type=content_type)

    if status is not None:
        assert answer.status_code == status
        assert "detail" in answer.json()
    else:  # a charset named: REST framework's parser reads it, and the vote counts
        assert answer.status_code == 201


def test_a_forged_csrf_token_is_refused_with_nothing_written():
    study = make_study()
    client = browser()
    join(client, study, "p")
    assignment = next_assignment(client, study)

    forged = send(client, {"assignment": assignment, "choice": "left"}, token="x" * 32)

    assert forged.status_code == 403
    assert forged.json()["detail"].startswith("CSRF Failed:")
    assert Vote.objects.count() == 0


def test_an_annotator_with_an_api_token_votes_without_a_csrf_token(django_user_model):
    study = make_study()
    user = django_user_model.objects.create_user("tokened", password="x")
    annotator_consent(annotator=annotator_for(study=study, user=user))
    key = ApiToken.objects.create(user=user).key
    with_token = Client()
    assignment = with_token.get(f"/api/studies/{study.slug}/next/", HTTP_AUTHORIZATION=f"Token {key}").json()
    voted = with_token.post(
        "/api/votes/",
        {"assignment": assignment["assignment"], "choice": "left"},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {key}",
    )

    assert voted.status_code == 201


def test_an_assignment_none_of_the_cookies_annotators_holds_is_404_counted_once(vote_limits):
    study = make_study()
    alice, bob = browser(), browser()
    join(alice, study, "alice")
    join(bob, study, "bob")
    alices = next_assignment(alice, study)
    next_assignment(bob, study)

    with vote_limits(participant=2, address=1000):
        answers = [send(bob, {"assignment": alices, "choice": "left"}).status_code for _ in range(3)]

    # Counted twice per request, the second would already be 429.
    assert answers == [404, 404, 429]
    assert Vote.objects.count() == 0


def test_over_its_limit_a_browser_gets_429_with_retry_after_and_nothing_written(vote_limits):
    study = make_study()
    client = browser()
    join(client, study, "p")
    with vote_limits(participant=2, address=1000):
        answers = []
        for _ in range(3):
            assignment = next_assignment(client, study)
            answers.append(send(client, {"assignment": assignment, "choice": "left"}))

    assert [answer.status_code for answer in answers] == [201, 201, 429]
    assert 1 <= int(answers[2]["Retry-After"]) <= 61
    assert "detail" in answers[2].json()
    assert Vote.objects.count() == 2


def test_a_database_that_does_not_answer_while_recording_is_503_with_retry_after(monkeypatch):
    study = make_study()
    client = browser()
    join(client, study, "p")
    assignment = next_assignment(client, study)

    def lost(**kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(voting, "vote_record_and_next_by_owner", lost)
    answer = send(client, {"assignment": assignment, "choice": "left"})

    assert answer.status_code == 503
    assert answer["Retry-After"] == str(DATABASE_RETRY_AFTER_SECONDS)
    assert answer.json()["detail"] == UNAVAILABLE_MESSAGE
    assert Vote.objects.count() == 0


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)


def vote_like(held: int):
    """Bodies shaped like a vote, about the assignment held or not, valid or not."""
    return st.fixed_dictionaries(
        {},
        optional={
            "assignment": st.one_of(
                st.just(held), st.integers(min_value=-2, max_value=2**63), st.text(max_size=4), st.none()
            ),
            "choice": st.sampled_from(["left", "right", "tie", "LEFT", "", "up"]) | st.text(max_size=4),
            "client_response_ms": st.one_of(
                st.integers(min_value=-5, max_value=2**40), st.floats(), st.none()
            ),
        },
    )


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_whatever_a_browser_sends_the_answer_is_never_5xx_and_only_a_201_writes(
    data, fuzz_browser, vote_limits
):
    client, study = fuzz_browser
    asked = client.get(f"/api/studies/{study.slug}/next/")
    held = asked.json()["assignment"] if asked.status_code == 200 else 1
    body = data.draw(
        st.one_of(
            vote_like(held).map(json.dumps),
            st.just(json.dumps({"assignment": held, "choice": "left"})),
            st.just(json.dumps({"assignment": held, "choice": "right", "client_response_ms": 1200})),
            JSON_VALUES.map(lambda value: json.dumps(value, allow_nan=True)),
            st.binary(max_size=40).map(lambda raw: raw.decode("latin-1")),
            st.integers(min_value=1, max_value=200_000).map(lambda depth: "[" * depth),  # past the decoder
        )
    )
    votes_before = Vote.objects.count()

    with vote_limits(participant=1_000_000, address=1_000_000):  # the bodies, not the limits
        answer = send(client, body)
    event(f"answered {answer.status_code}")

    assert answer.status_code < 500, answer.content
    assert answer.status_code in (200, 201) or "detail" in answer.json()
    assert Vote.objects.count() == votes_before + (answer.status_code == 201)


@pytest.fixture
def fuzz_browser():
    study = make_study(tokens=12)
    client = browser()
    join(client, study, "fuzz")
    return client, study
