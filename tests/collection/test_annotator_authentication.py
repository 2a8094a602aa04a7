"""How the annotators' endpoints authenticate: the CSRF check remembers the cookie and header pairs it
found matching, and nothing else (``RememberingCSRFCheck``); an API token is read when one is sent
(``common.authentication.HeaderTokenAuthentication``)."""

from __future__ import annotations

import django.middleware.csrf as django_csrf
import pytest
from django.conf import settings as django_settings
from django.middleware.csrf import _get_new_csrf_string, _mask_cipher_secret
from django.test import Client, RequestFactory, override_settings
from django.utils.functional import SimpleLazyObject
from rest_framework.authtoken.models import Token as ApiToken
from rest_framework.request import Request

from collection.models import Vote
from collection.permissions import AnnotatorSessionAuthentication, RememberingCSRFCheck, _csrf_check
from collection.voting import annotator_consent, annotator_for
from tests.collection.test_api import next_of, session_annotator, vote
from tests.factories import make_study


@pytest.fixture
def matches(monkeypatch):
    """Counts the token comparisons Django makes (the unmasking the check remembers)."""
    calls = []
    original = django_csrf._does_token_match

    def counted(token, secret):
        calls.append((token, secret))
        return original(token, secret)

    monkeypatch.setattr(django_csrf, "_does_token_match", counted)
    return calls


def json_post(secret: str | None, token: str | None, **extra):
    request = RequestFactory().post("/api/votes/", "{}", content_type="application/json", **extra)
    if token is not None:
        request.META["HTTP_X_CSRFTOKEN"] = token
    if secret is not None:
        request.COOKIES["csrftoken"] = secret
    return request


def check(checker: RememberingCSRFCheck, request):
    """None when the request passes, else Django's reason."""
    checker.process_request(request)
    return checker.process_view(request, None, (), {})


def test_a_matching_pair_is_compared_once_then_remembered(matches):
    checker = RememberingCSRFCheck(lambda request: None)
    secret = _get_new_csrf_string()
    token = _mask_cipher_secret(secret)

    answers = [check(checker, json_post(secret, token)) for _ in range(3)]

    assert answers == [None, None, None]
    assert len(matches) == 1


def test_a_wrong_token_is_refused_every_time_even_beside_a_remembered_pair(matches):
    checker = RememberingCSRFCheck(lambda request: None)
    secret, other = _get_new_csrf_string(), _get_new_csrf_string()
    assert check(checker, json_post(secret, _mask_cipher_secret(secret))) is None

    wrong = [check(checker, json_post(secret, _mask_cipher_secret(other))) for _ in range(2)]

    assert wrong == ["CSRF token from the 'X-Csrftoken' HTTP header incorrect."] * 2
    assert len(matches) == 3  # the wrong pair was compared each time, not remembered


def test_a_remembered_pair_is_checked_again_against_a_new_cookie():
    checker = RememberingCSRFCheck(lambda request: None)
    secret = _get_new_csrf_string()
    token = _mask_cipher_secret(secret)
    assert check(checker, json_post(secret, token)) is None

    assert check(checker, json_post(_get_new_csrf_string(), token)) == (
        "CSRF token from the 'X-Csrftoken' HTTP header incorrect."
    )
    assert check(checker, json_post(None, token)) == "CSRF cookie not set."


def test_a_form_body_is_checked_whole_its_own_token_first(matches):
    checker = RememberingCSRFCheck(lambda request: None)
    secret = _get_new_csrf_string()
    token = _mask_cipher_secret(secret)
    assert check(checker, json_post(secret, token)) is None

    form = RequestFactory().post(
        "/api/votes/", {"csrfmiddlewaretoken": _mask_cipher_secret(_get_new_csrf_string())}
    )
    form.META["HTTP_X_CSRFTOKEN"] = token  # the remembered pair, in the header
    form.COOKIES["csrftoken"] = secret

    assert check(checker, form) == "CSRF token from POST incorrect."


def test_it_remembers_a_bounded_number_of_pairs_the_least_recently_used_forgotten(matches):
    checker = RememberingCSRFCheck(lambda request: None, remembered=2)
    secrets = [_get_new_csrf_string() for _ in range(3)]
    requests = [(secret, _mask_cipher_secret(secret)) for secret in secrets]

    for secret, token in (requests[0], requests[1], requests[0], requests[2]):
        assert check(checker, json_post(secret, token)) is None
    compared = len(matches)
    assert check(checker, json_post(*requests[0])) is None  # used more recently than the second
    assert len(matches) == compared
    assert check(checker, json_post(*requests[1])) is None  # forgotten: compared again
    assert len(matches) == compared + 1


def test_a_change_of_a_csrf_setting_makes_a_new_check():
    before = _csrf_check()
    with override_settings(CSRF_HEADER_NAME="HTTP_X_OTHER_TOKEN"):
        during = _csrf_check()
    assert during is not before
    assert _csrf_check() is not during


@pytest.mark.django_db
def test_an_annotators_votes_compare_their_token_once(matches):
    study = make_study()
    client, _ = session_annotator(study, client=Client(enforce_csrf_checks=True))
    answers = []
    for _ in range(3):
        assignment = next_of(client, study).json()["assignment"]  # sets the CSRF cookie
        headers = {"X-CSRFToken": client.cookies["csrftoken"].value}
        answers.append(vote(client, assignment, headers=headers).status_code)
    assignment = next_of(client, study).json()["assignment"]
    forged = vote(client, assignment, headers={"X-CSRFToken": _mask_cipher_secret(_get_new_csrf_string())})

    assert answers == [201, 201, 201]
    assert forged.status_code == 403
    assert Vote.objects.count() == 3
    assert len(matches) == 2  # the annotator's pair once, the forged one once


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


def test_without_a_session_cookie_the_user_is_anonymous_without_being_looked_up():
    def looked_up():
        raise AssertionError("the user of a request without a session was looked up")

    request = RequestFactory().get("/api/studies/s/next/")
    request.user = SimpleLazyObject(looked_up)  # as AuthenticationMiddleware leaves it

    assert AnnotatorSessionAuthentication().authenticate(Request(request)) is None


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
