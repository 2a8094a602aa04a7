"""The open sign-up (MODEL_OWNER_SIGNUP) and the limit of accounts made from one client address."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from metrics.models import Invitation
from tests.factories import make_study

pytestmark = pytest.mark.django_db
PASSWORD = "lantern-orchard-1987"


def sign_up(client: Client, username: str, url: str = "/models/signup/"):
    return client.post(url, {"username": username, "password1": PASSWORD, "password2": PASSWORD})


@pytest.fixture
def accounts_rate(settings):
    def set_rate(rate):
        framework = dict(settings.REST_FRAMEWORK)
        framework["DEFAULT_THROTTLE_RATES"] = {
            **framework["DEFAULT_THROTTLE_RATES"],
            "accounts.address": rate,
        }
        settings.REST_FRAMEWORK = framework

    return set_rate


def test_the_open_sign_up_is_off_by_default():
    client = Client()

    assert (client.get("/models/signup/").status_code, sign_up(client, "eve").status_code) == (404, 404)
    assert not get_user_model().objects.filter(username="eve").exists()


def test_turned_on_it_makes_a_model_owners_account(settings):
    settings.MODEL_OWNER_SIGNUP = True
    client = Client()

    form = client.get("/models/signup/")
    answer = sign_up(client, "ada")

    assert form.status_code == 200
    assert (answer.status_code, answer["Location"]) == (302, "/models/")
    ada = get_user_model().objects.get(username="ada")
    assert (ada.is_staff, ada.is_superuser, ada.check_password(PASSWORD)) == (False, False, True)
    assert client.get("/api/studies/").status_code == 403  # logged in, and nothing staff-only


def test_a_taken_username_is_refused_by_the_form(settings):
    settings.MODEL_OWNER_SIGNUP = True
    sign_up(Client(), "ada")

    answer = sign_up(Client(), "ada")

    assert answer.status_code == 400
    assert "A user with that username already exists." in answer.content.decode()


def test_one_address_makes_a_bounded_number_of_accounts(settings, accounts_rate):
    settings.MODEL_OWNER_SIGNUP = True
    accounts_rate("2/hour")
    invitation = Invitation.objects.create(study=make_study(start=False), max_uses=10)

    first = sign_up(Client(), "one")
    second = sign_up(Client(), "two", url=f"/models/join/{invitation.key}/")  # one count for both pages
    third = sign_up(Client(), "three")

    assert (first.status_code, second.status_code, third.status_code) == (302, 302, 429)
    # The first of the hour's two leaves the window an hour after it was made: seconds ago.
    assert 3590 <= int(third["Retry-After"]) <= 3600
    assert "Too many accounts were made from your address" in third.content.decode()
    assert sorted(get_user_model().objects.values_list("username", flat=True)) == ["one", "two"]
