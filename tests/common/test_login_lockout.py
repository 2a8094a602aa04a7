"""Repeated failed logins lock the username and the address out, on every login the project has."""

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

LOGINS = {
    "api token": ("/api/auth/token/", "json"),
    "model owners' page": ("/models/login/", "form"),
    "admin": ("/admin/login/", "form"),
}


@pytest.fixture
def owner(django_user_model, settings):
    settings.LOGIN_FAILURES_PER_USERNAME = 3
    settings.LOGIN_FAILURES_PER_ADDRESS = 5
    settings.LOGIN_LOCKOUT_SECONDS = 600
    return django_user_model.objects.create_user("owner", password="right-password", is_staff=True)


def attempt(client: Client, login: str, username: str, password: str, address: str = "198.51.100.7"):
    path, kind = LOGINS[login]
    data = {"username": username, "password": password}
    if kind == "json":
        return client.post(path, data, content_type="application/json", REMOTE_ADDR=address)
    return client.post(path, data, REMOTE_ADDR=address)


def succeeded(login: str, response) -> bool:
    if login == "api token":
        return response.status_code == 200 and "token" in response.json()
    return response.status_code == 302


@pytest.mark.parametrize("login", LOGINS)
def test_after_the_limit_of_failures_even_the_right_password_gets_429(login, owner):
    client = Client()
    failures = [attempt(client, login, "owner", "wrong").status_code for _ in range(3)]

    locked = attempt(client, login, "owner", "right-password")

    assert 429 not in failures
    assert locked.status_code == 429
    assert locked["Retry-After"] == "600"
    assert "too many failed logins" in locked.content.decode()


@pytest.mark.parametrize("login", LOGINS)
def test_below_the_limit_the_right_password_works_and_clears_the_count(login, owner):
    client = Client()
    for _ in range(2):
        attempt(client, login, "owner", "wrong")

    assert succeeded(login, attempt(client, login, "owner", "right-password"))
    for _ in range(2):
        attempt(Client(), login, "owner", "wrong")
    assert succeeded(login, attempt(Client(), login, "owner", "right-password"))


def test_failures_on_one_login_count_on_the_others(owner):
    attempt(Client(), "api token", "owner", "wrong")
    attempt(Client(), "model owners' page", "owner", "wrong")
    attempt(Client(), "admin", "owner", "wrong")

    assert attempt(Client(), "api token", "owner", "right-password").status_code == 429


def test_the_username_lock_holds_from_another_address(owner):
    for _ in range(3):
        attempt(Client(), "api token", "owner", "wrong", address="198.51.100.7")

    assert attempt(Client(), "api token", "owner", "right-password", address="203.0.113.9").status_code == 429


def test_an_address_guessing_many_usernames_is_locked_out(owner, django_user_model):
    django_user_model.objects.create_user("someone", password="their-password")
    for i in range(5):
        attempt(Client(), "model owners' page", f"guess-{i}", "wrong")

    locked = attempt(Client(), "api token", "someone", "their-password")
    elsewhere = attempt(Client(), "api token", "someone", "their-password", address="203.0.113.9")

    assert locked.status_code == 429
    assert locked.json()["detail"].startswith("too many failed logins")
    assert succeeded("api token", elsewhere)


def test_the_token_endpoint_is_rate_limited_per_address(settings, owner):
    framework = dict(settings.REST_FRAMEWORK)
    framework["DEFAULT_THROTTLE_RATES"] = {**framework["DEFAULT_THROTTLE_RATES"], "token.address": "2/min"}
    settings.REST_FRAMEWORK = framework

    answers = [attempt(Client(), "api token", "owner", "right-password").status_code for _ in range(3)]

    assert answers == [200, 200, 429]
