"""The client against a live Yardstick server: pytest-django's ``live_server``, a real HTTP server in a
thread of the test process, over a database the tests commit to (``transactional_db``)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from yardstick_client import Client

from collection.models import Study
from tests.factories import annotators, make_study, vote_until


@pytest.fixture
def server(live_server, transactional_db) -> str:
    return live_server.url


@pytest.fixture
def staff_token(transactional_db) -> str:
    researcher = get_user_model().objects.create_user(
        "researcher", password="a long and unusual password", is_staff=True, is_superuser=True
    )
    return Token.objects.create(user=researcher).key


@pytest.fixture
def owner(transactional_db):
    return get_user_model().objects.create_user("ann", password="another unusual password")


@pytest.fixture
def owner_token(owner) -> str:
    return Token.objects.create(user=owner).key


@pytest.fixture
def finished_study(transactional_db) -> Study:
    """6 tokens in one area: 15 items; ballots of 15, 8 and 4 items, voted through by 5 annotators who
    prefer the item of lower index."""
    study = make_study(tokens=6)
    vote_until(study, voters=annotators(study, 5))
    study.refresh_from_db()
    assert study.status == Study.Status.FINISHED
    return study


@pytest.fixture
def connect():
    """``Client(...)``, closed after the test: its kept-alive connection would hold a thread of the live
    server, and that thread its database connection, past the test."""
    made = []

    def client(*args, **options) -> Client:
        made.append(Client(*args, **options))
        return made[-1]

    yield client
    for each in made:
        each.close()
