"""How the annotators' endpoints authenticate: REST framework's token, the session, and the CSRF check
that REST framework's ``SessionAuthentication.enforce_csrf`` makes, also for anonymous annotators whose
browser carries the annotator cookie or the session."""

from __future__ import annotations

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import AnonymousUser
from django.test import Client, RequestFactory
from django.utils.functional import SimpleLazyObject
from rest_framework.authtoken.models import Token as ApiToken
from rest_framework.request import Request

from collection.identity import annotator_consent, annotator_for
from collection.models import Vote
from collection.permissions import AnnotatorSessionAuthentication
from tests.collection.test_api import next_of, session_annotator, vote
from tests.factories import make_study

HINT = "Send the csrftoken cookie's value in the X-CSRFToken header."


@pytest.mark.django_db
def test_an_annotators_votes_pass_with_their_token_and_a_forged_one_is_refused_with_the_hint():
    study = make_study()
    client, _ = session_annotator(study, client=Client(enforce_csrf_checks=True))
    answers = []
    for _ in range(3):
        assignment = next_of(client, study).json()["assignment"]  # sets the CSRF cookie
        headers = {"X-CSRFToken": client.cookies["csrftoken"].value}
        answers.append(vote(client, assignment, headers=headers).status_code)
    assignment = next_of(client, study).json()["assignment"]
    forged = vote(client, assignment, headers={"X-CSRFToken": "x" * 32})

    assert answers == [201, 201, 201]
    assert forged.status_code == 403
    assert forged.json() == {
        "detail": f"CSRF Failed: CSRF token from the 'X-Csrftoken' HTTP header incorrect. {HINT}"
    }
    assert Vote.objects.count() == 3


@pytest.mark.django_db
def test_an_anonymous_annotators_cookie_without_the_csrf_token_is_refused_with_the_hint():
    study = make_study()
    browser = Client()
    browser.get(f"/s/{study.slug}/", {"participant": "p-1"})
    browser.post(f"/s/{study.slug}/", {"participant": "p-1", "consent": "yes"})
    assignment = next_of(browser, study).json()["assignment"]
    another_site = Client(enforce_csrf_checks=True)
    another_site.cookies = browser.cookies  # the browser sends its cookies along, not the token
    assert django_settings.SESSION_COOKIE_NAME not in another_site.cookies

    refused = another_site.post(
        "/api/votes/", {"assignment": assignment, "choice": "left"}, content_type="application/json"
    )

    assert refused.status_code == 403
    assert refused.json() == {"detail": f"CSRF Failed: CSRF token missing. {HINT}"}
    assert Vote.objects.count() == 0


def test_a_request_without_a_session_or_annotator_cookie_is_anonymous_and_not_checked_for_csrf():
    request = RequestFactory().post("/api/votes/", "{}", content_type="application/json")
    request.user = AnonymousUser()  # as AuthenticationMiddleware finds it without a session

    assert AnnotatorSessionAuthentication().authenticate(Request(request)) is None


@pytest.mark.django_db
def test_an_annotator_who_is_a_user_is_known_by_their_api_token(django_user_model):
    study = make_study()
    user = django_user_model.objects.create_user("annotator-with-token", password="x")
    annotator_consent(annotator=annotator_for(study=study, user=user))
    key = ApiToken.objects.create(user=user).key

    with_token = Client().get(f"/api/studies/{study.slug}/next/", HTTP_AUTHORIZATION=f"Token {key}")
    wrong_token = Client().get(f"/api/studies/{study.slug}/next/", HTTP_AUTHORIZATION="Token wrong")
    without = Client().get(f"/api/studies/{study.slug}/next/")

    assert with_token.status_code == 200
    assignment = with_token.json()["assignment"]
    voted = Client().post(
        "/api/votes/",
        {"assignment": assignment, "choice": "right"},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {key}",
    )
    assert voted.status_code == 201
    assert Vote.objects.get().annotator.user == user
    assert (wrong_token.status_code, wrong_token.json()) == (401, {"detail": "Invalid token."})
    assert without.status_code == 403


@pytest.mark.django_db
def test_with_a_session_cookie_the_logged_in_user_is_authenticated(django_user_model):
    user = django_user_model.objects.create_user("annotator-with-session", password="x")
    request = RequestFactory().get("/api/studies/s/next/")
    request.COOKIES[django_settings.SESSION_COOKIE_NAME] = "any"
    request.user = SimpleLazyObject(lambda: user)

    assert AnnotatorSessionAuthentication().authenticate(Request(request)) == (user, None)


@pytest.mark.django_db
def test_an_annotator_who_is_logged_in_is_known_by_their_session(django_user_model):
    study = make_study()
    user = django_user_model.objects.create_user("annotator-logged-in", password="x")
    annotator_consent(annotator=annotator_for(study=study, user=user))
    client = Client()
    client.force_login(user)

    answer = client.get(f"/api/studies/{study.slug}/next/")

    assert answer.status_code == 200
    assert answer.json()["assignment"] > 0
