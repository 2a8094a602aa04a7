"""An error that echoes the client's text is sent whatever that text holds: a JSON body may carry a lone
surrogate ("\\ud800"), which UTF-8 cannot encode, and the answer writes it as its escape (a 400, never a 500).
(The voting page's form: tests/collection/test_vote_form_odd_input.py.)"""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token as ApiToken

from collection.models import Annotator, Assignment, Study, Vote
from common.api import error_body
from common.errors import ServiceError
from tests.factories import make_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff() -> Client:
    user = get_user_model().objects.create_user("staff", password="pw", is_staff=True, is_superuser=True)
    return Client(headers={"Authorization": f"Token {ApiToken.objects.create(user=user).key}"})


def annotator_with_a_lease(client: Client, study: Study) -> Assignment:
    """Consent through the study's link and open the voting page, as a browser does."""
    entry = reverse("collection:entry", args=[study.slug])
    client.get(entry, {"participant": "abc"})
    client.post(entry, {"consent": "yes", "participant": "abc"})
    client.get(reverse("collection:vote", args=[study.slug]))
    annotator = Annotator.objects.get(study=study, participant_id="abc")
    return Assignment.objects.get(annotator=annotator, status=Assignment.Status.ACTIVE)


def test_a_vote_whose_choice_holds_a_lone_surrogate_is_refused_with_400_that_echoes_it_escaped():
    client = Client()
    study = make_study(votes_per_annotator_per_ballot=3)
    held = annotator_with_a_lease(client, study)

    # json.dumps writes the lone surrogate as the escape "\ud800", as a client's JSON encoder would
    response = client.post(
        "/api/votes/",
        json.dumps({"assignment": held.pk, "choice": "left\ud800"}),
        content_type="application/json",
        headers={"X-CSRFToken": client.cookies["csrftoken"].value},
    )

    assert response.status_code == 400
    assert response.json() == {
        "detail": 'choice: "left\\ud800" is not a choice: send one of "left", "right", "tie".',
        "errors": ['choice: "left\\ud800" is not a choice: send one of "left", "right", "tie".'],
    }
    assert Vote.objects.count() == 0


def test_a_study_setting_of_choices_holding_a_lone_surrogate_is_refused_with_400_that_echoes_it(staff):
    study = make_study(start=False)

    response = staff.patch(
        f"/api/studies/{study.slug}/",
        json.dumps({"ranking_scope": "per_area\udfff"}),
        content_type="application/json",
    )

    assert response.status_code == 400
    assert response.json()["errors"] == ['ranking_scope: "per_area\\udfff" is not a valid choice.']
    study.refresh_from_db()
    assert study.ranking_scope == Study.RankingScope.JOINT


@pytest.mark.parametrize("field", ["name", "slug", "question", "instructions", "completion_code"])
@pytest.mark.parametrize("text", ["x\ud800", "\udc00", "a\x00b"])
def test_every_text_field_of_a_study_refuses_a_lone_surrogate_or_nul_with_400_and_creates_nothing(
    staff, field, text
):
    body = {"name": "Odd", "slug": "odd", "question": "Which pair is more related?", field: text}

    response = staff.post("/api/studies/", json.dumps(body), content_type="application/json")

    assert response.status_code == 400
    assert response.json()["errors"][0].startswith(f"{field}: ")
    assert not Study.objects.exists()


def test_the_error_body_writes_what_utf8_cannot_encode_as_its_escape_and_keeps_the_rest():
    body = error_body("got 'é\ud800\x00'", ["line 2: '\udfff' is not a token", "line 3: ok ✓"])

    assert body == {
        "detail": "got 'é\\ud800\x00'",
        "errors": ["line 2: '\\udfff' is not a token", "line 3: ok ✓"],
    }
    assert json.dumps(body, ensure_ascii=False).encode()  # what REST framework's renderer does


def test_a_service_error_keeps_its_message_and_errors_encodable():
    error = ServiceError("item 'a\ud800' is not in the study", errors=["row 1: 'a\ud800'"])

    assert (error.message, error.errors) == ("item 'a\\ud800' is not in the study", ["row 1: 'a\\ud800'"])
