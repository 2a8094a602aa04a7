"""Credentials that are missing or not valid are 401 with ``WWW-Authenticate: Token`` (RFC 9110 §15.5.2,
REST framework's convention when its first authenticator names a scheme); credentials that are valid but
not enough are 403."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.authtoken.models import Token as ApiToken

from collection.permissions import IsStaff
from tests.factories import make_study

pytestmark = pytest.mark.django_db

INVALID = {"detail": "Invalid token."}
NO_CREDENTIALS = {
    "detail": "no credentials: send the header 'Authorization: Token <key>' (POST your username and password "
    "to /api/auth/token/ to get the key)"
}


def token_of(username: str, **fields) -> str:
    user = get_user_model().objects.create_user(username, password="pw", **fields)
    return ApiToken.objects.create(user=user).key


def refusal(response) -> tuple[int, str | None, dict]:
    return response.status_code, response.headers.get("WWW-Authenticate"), response.json()


def test_an_invalid_token_on_a_staff_endpoint_is_401_with_the_scheme_to_use():
    response = Client().get("/api/studies/", headers={"Authorization": "Token not-a-token"})

    assert refusal(response) == (401, 'Token', INVALID)


def test_an_invalid_token_on_a_model_owners_endpoint_is_401_with_the_scheme_to_use():
    response = Client().get("/api/submissions/", headers={"Authorization": "Token not-a-token"})

    assert refusal(response) == (401, 'Token', INVALID)


def test_an_invalid_token_on_an_annotators_endpoint_is_401_with_the_scheme_to_use():
    study = make_study()

    invalid = {"Authorization": "Token not-a-token"}

    response = Client().get(f"/api/studies/{study.slug}/next/", headers=invalid)

    assert refusal(response) == (401, 'Token', INVALID)


def test_no_credentials_on_a_staff_endpoint_is_401_with_the_scheme_to_use():
    response = Client().get("/api/studies/")

    assert refusal(response) == (401, 'Token', NO_CREDENTIALS)


def test_a_valid_token_of_someone_not_staff_is_403_on_a_staff_endpoint():
    owner = token_of("owner")

    response = Client().get("/api/studies/", headers={"Authorization": f"Token {owner}"})

    assert refusal(response) == (403, None, {"detail": IsStaff.message})


def test_an_invalid_token_beside_a_staff_session_is_refused_not_ignored():
    client = Client()
    client.force_login(get_user_model().objects.create_user("staff", password="pw", is_staff=True))

    response = client.get("/api/studies/", headers={"Authorization": "Token not-a-token"})

    assert refusal(response) == (401, 'Token', INVALID)
    assert client.get("/api/studies/").status_code == 200  # the session alone is the staff user


def test_a_staff_session_without_its_csrf_token_is_403_and_changes_nothing():
    client = Client(enforce_csrf_checks=True)
    client.force_login(get_user_model().objects.create_user("staff", password="pw", is_staff=True))

    response = client.post("/api/studies/", {"name": "New", "slug": "new"}, content_type="application/json")

    assert (response.status_code, response.headers.get("WWW-Authenticate")) == (403, None)
    assert response.json()["detail"].startswith("CSRF Failed")
