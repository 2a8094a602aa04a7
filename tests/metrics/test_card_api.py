"""GET /api/studies/<slug>/card/: the instrument card as data, with the card page's visibility.

The body is the .json download's dict; a draft is refused (409) as the downloads refuse it; a large
card not computed yet is asked for in the background and answered 202 with Retry-After meanwhile.
"""

from __future__ import annotations

import json

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token as ApiToken

from metrics import instrument
from metrics.instrument import CARD_VERSION, card_wait_seconds, instrument_card
from metrics.models import StudyFigure
from tests.factories import annotators, make_study, vote_until

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_card_asked_for_yet():
    """Each test starts without a computation asked for (the mark is kept in the cache)."""
    cache.clear()
    yield
    cache.clear()


def card_url(slug: str) -> str:
    return reverse("metrics-api:study-card", args=[slug])


def download(client: Client, slug: str) -> dict:
    response = client.get(reverse("metrics:card-json", args=[slug]))
    assert response.status_code == 200
    return json.loads(response.content)


@pytest.fixture
def staff(django_user_model) -> Client:
    user = django_user_model.objects.create_user(
        "researcher", password="pw", is_staff=True, is_superuser=True
    )
    return Client(headers={"Authorization": f"Token {ApiToken.objects.create(user=user).key}"})


def test_the_body_is_the_json_download_of_a_finished_study(client, study):
    response = client.get(card_url(study.slug))

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert body == download(client, study.slug)
    assert body["version"] == CARD_VERSION
    assert (body["study"]["slug"], body["study"]["status"]) == (study.slug, "finished")
    assert body["precision"]["replicates"] == 1000


def test_a_running_study_has_its_provisional_card_as_the_page_has(client):
    study = make_study(tokens=8, ballot_count=2, appearances=8, seed=3)
    vote_until(study, voters=annotators(study, 6), max_votes=120)  # ballot 1 closed, ballot 2 open

    response = client.get(card_url(study.slug))

    assert response.status_code == 200
    body = response.json()
    assert (body["study"]["status"], body["procedure"]["votes"]) == ("running", 112)
    assert body == download(client, study.slug)


def test_a_draft_is_refused_to_everyone_and_nothing_is_computed(client, staff):
    draft = make_study(tokens=8, ballot_count=2, appearances=8, start=False)
    message = (
        f"Study {draft.slug!r} is a draft: nothing has been measured yet. Its instrument card exists once the "
        "study has started; it fills in as ballots close."
    )
    for caller in (client, staff):
        response = caller.get(card_url(draft.slug))
        assert (response.status_code, response.json()) == (409, {"detail": message})
    assert not StudyFigure.objects.filter(study=draft).exists()


def test_an_unknown_study_is_not_found(client):
    response = client.get(card_url("no-such-study"))

    assert response.status_code == 404
    assert response.json() == {
        "detail": "there is no study 'no-such-study'; /models/ lists the finished studies"
    }


def test_a_large_card_not_computed_yet_is_asked_for_and_answered_202_meanwhile(
    client, study, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(instrument, "CARD_SYNC_ITEMS", 10)  # the study's 28 items count as large
    StudyFigure.objects.filter(study=study, kind="card").delete()
    wait = card_wait_seconds(28)

    with django_capture_on_commit_callbacks(execute=True):  # as the request's commit would
        first = client.get(card_url(study.slug))

    assert first.status_code == 202
    assert first["Retry-After"] == str(wait) == "2"
    assert first.json() == {
        "detail": f"the instrument card of study {study.slug!r} is being computed (28 items); ask again in 2 seconds",
        "retry_after": 2,
        "progress": 0.0,
    }
    # Eager Celery (the embedded default) ran the task after the response: the card is stored now.
    assert StudyFigure.objects.filter(study=study, kind="card").count() == 1
    assert instrument.card_progress(study=study) == 1.0
    second = client.get(card_url(study.slug))
    assert second.status_code == 200
    assert (
        second.json() == download(client, study.slug) == json.loads(json.dumps(instrument_card(study=study)))
    )


def test_the_computation_reports_its_steps_from_none_done_to_all(client, study, monkeypatch):
    monkeypatch.setattr(instrument, "CARD_SYNC_ITEMS", 10)
    StudyFigure.objects.filter(study=study, kind="card").delete()
    reported = []
    # The cache's own setter, watched: each step the computation reports, in order.
    original_set = cache.set
    monkeypatch.setattr(
        cache,
        "set",
        lambda key, value, *args, **kwargs: (
            reported.append(value) if key == instrument.CARD_PROGRESS_KEY.format(study.pk) else None,
            original_set(key, value, *args, **kwargs),
        )[1],
    )

    instrument_card(study=study)

    assert reported == list(range(instrument.CARD_STEPS + 1))
    assert instrument.card_progress(study=study) == 1.0


def test_a_client_polling_a_card_being_computed_asks_for_one_computation(
    client, study, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(instrument, "CARD_SYNC_ITEMS", 10)
    StudyFigure.objects.filter(study=study, kind="card").delete()

    with django_capture_on_commit_callbacks() as asked:  # held back: the computation is still running
        statuses = [client.get(card_url(study.slug)).status_code for _ in range(3)]

    assert statuses == [202, 202, 202]
    assert len(asked) == 1


def test_the_schema_documents_every_status_of_the_card_with_the_202s_retry_after(client):
    operation = client.get("/api/schema/?format=json").json()["paths"]["/api/studies/{slug}/card/"]["get"]

    assert sorted(operation["responses"]) == ["200", "202", "401", "404", "409", "503"]
    assert operation["responses"]["202"]["headers"]["Retry-After"]["required"] is True
    assert operation["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Card"
    }
