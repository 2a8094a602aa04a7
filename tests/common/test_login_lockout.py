"""Failed logins lock out a username from one address (django-axes, by username and address together), on
every login the project has: nobody elsewhere can lock the owner out, and the owner's address still is."""

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.test import Client
from django.utils import timezone

pytestmark = pytest.mark.django_db

LOGINS = {
    "api token": ("/api/auth/token/", "json"),
    "model owners' page": ("/models/login/", "form"),
    "admin": ("/admin/login/", "form"),
}
OWNER_ADDRESS, ATTACKER_ADDRESS = "198.51.100.7", "203.0.113.9"
LOCKED = (
    "too many failed logins for this account from this address; try again in 10 minute(s), or ask an "
    "administrator to reset your password"
)


@pytest.fixture
def owner(django_user_model, settings):
    settings.AXES_FAILURE_LIMIT = 3
    settings.AXES_COOLOFF_TIME = timedelta(seconds=600)
    return django_user_model.objects.create_user("owner", password="right-password", is_staff=True)


def attempt(login: str, username: str, password: str, address: str = OWNER_ADDRESS):
    path, kind = LOGINS[login]
    data = {"username": username, "password": password}
    if kind == "json":
        return Client().post(path, data, content_type="application/json", REMOTE_ADDR=address)
    return Client().post(path, data, REMOTE_ADDR=address)


def succeeded(login: str, response) -> bool:
    if login == "api token":
        return response.status_code == 200 and "token" in response.json()
    return response.status_code == 302


def locked_message(login: str, response) -> str:
    if login == "api token":
        return response.json()["detail"]
    return response.content.decode().split("<p>")[1].removesuffix(".</p>")


@pytest.mark.parametrize("login", LOGINS)
def test_an_attacker_from_another_address_cannot_lock_the_owner_out(login, owner):
    attacker = [attempt(login, "owner", "guess", address=ATTACKER_ADDRESS).status_code for _ in range(5)]

    assert attacker[-1] == 429  # the attacker's own address is locked for this username
    assert succeeded(login, attempt(login, "owner", "right-password", address=OWNER_ADDRESS))


@pytest.mark.parametrize("login", LOGINS)
def test_the_limit_th_failure_locks_the_username_from_that_address_even_for_the_right_password(login, owner):
    failures = [attempt(login, "owner", "wrong").status_code for _ in range(3)]

    locked = attempt(login, "owner", "right-password")

    assert failures[:2] == ([401, 401] if login == "api token" else [200, 200])  # told the password is wrong
    assert (failures[2], locked.status_code, locked["Retry-After"]) == (429, 429, "600")
    assert locked_message(login, locked) == LOCKED


@pytest.mark.parametrize("login", LOGINS)
def test_below_the_limit_the_right_password_works_and_clears_the_count(login, owner):
    for _ in range(2):
        attempt(login, "owner", "wrong")

    assert succeeded(login, attempt(login, "owner", "right-password"))
    for _ in range(2):
        attempt(login, "owner", "wrong")
    assert succeeded(login, attempt(login, "owner", "right-password"))


def test_failures_on_one_login_count_on_the_others(owner):
    attempt("api token", "owner", "wrong")
    attempt("model owners' page", "owner", "wrong")

    assert attempt("admin", "owner", "wrong").status_code == 429
    assert attempt("api token", "owner", "right-password").status_code == 429


def test_another_username_from_the_locked_address_is_not_locked(owner, django_user_model):
    django_user_model.objects.create_user("colleague", password="their-password")
    for _ in range(3):
        attempt("api token", "owner", "wrong")

    assert succeeded("api token", attempt("api token", "colleague", "their-password"))


def test_the_lock_ends_when_its_time_has_passed(owner):
    for _ in range(3):
        attempt("admin", "owner", "wrong")
    assert attempt("admin", "owner", "right-password").status_code == 429

    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(seconds=601))

    assert succeeded("admin", attempt("admin", "owner", "right-password"))


def test_behind_the_proxy_the_address_is_the_one_the_proxy_appended(owner, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    proxy = "10.0.0.2"

    def through_proxy(client_address: str, claimed: str, password: str):
        forwarded = f"{claimed}, {client_address}"  # the client's own claim, then what the proxy appended
        return Client().post(
            "/api/auth/token/",
            {"username": "owner", "password": password},
            content_type="application/json",
            REMOTE_ADDR=proxy,
            HTTP_X_FORWARDED_FOR=forwarded,
        )

    for _ in range(3):
        through_proxy(ATTACKER_ADDRESS, claimed=OWNER_ADDRESS, password="guess")

    assert through_proxy(ATTACKER_ADDRESS, claimed="192.0.2.1", password="right-password").status_code == 429
    owner = through_proxy(OWNER_ADDRESS, claimed=ATTACKER_ADDRESS, password="right-password")
    assert owner.status_code == 200


def test_the_token_endpoint_is_rate_limited_per_address(settings, owner):
    framework = dict(settings.REST_FRAMEWORK)
    framework["DEFAULT_THROTTLE_RATES"] = {**framework["DEFAULT_THROTTLE_RATES"], "token.address": "2/min"}
    settings.REST_FRAMEWORK = framework

    answers = [attempt("api token", "owner", "right-password").status_code for _ in range(3)]

    assert answers == [200, 200, 429]


@pytest.mark.parametrize(
    "meta, address",
    [
        ({"REMOTE_ADDR": "198.51.100.7"}, "198.51.100.7"),
        ({"REMOTE_ADDR": "2001:db8::1"}, "2001:db8::1"),
        ({}, None),  # no address (a unix socket, a request made in code): the username's own bucket
        ({"REMOTE_ADDR": "not-an-address"}, None),
    ],
)
def test_the_address_of_a_failed_login_is_an_ip_address_or_none(meta, address):
    from django.http import HttpRequest

    from common.throttling import login_client_address

    request = HttpRequest()
    request.META.update(meta)

    assert login_client_address(request) == address


def test_a_login_made_in_code_without_an_address_is_counted_without_one(owner):
    from django.contrib.auth import authenticate
    from django.http import HttpRequest

    for _ in range(3):
        assert authenticate(HttpRequest(), username="owner", password="wrong") is None

    assert list(AccessAttempt.objects.values_list("username", "ip_address", "failures_since_start")) == [
        ("owner", None, 3)
    ]


@pytest.mark.parametrize("username", ["1" + "0" * 400, "é" * 300])
def test_a_username_longer_than_any_account_is_refused_401_and_counted_by_its_digest(owner, username):
    import hashlib
    import json

    def send():
        body = json.dumps({"username": username, "password": "guess"})
        return Client().post(
            "/api/auth/token/", body, content_type="application/json", REMOTE_ADDR=OWNER_ADDRESS
        )

    answers = [send().status_code for _ in range(3)]

    digest = "sha256:" + hashlib.sha256(username.encode("utf-8", "backslashreplace")).hexdigest()
    assert answers == [401, 401, 429]
    assert list(AccessAttempt.objects.values_list("username", "failures_since_start")) == [(digest, 3)]
    assert succeeded("api token", attempt("api token", "owner", "right-password"))  # another key
