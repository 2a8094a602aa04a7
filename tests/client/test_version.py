"""The client compares its API version with the server's and says when the server is older or newer."""

from __future__ import annotations

import warnings

import httpx
import pytest
from django.conf import settings
from yardstick_client import (
    API_VERSION,
    ApiError,
    Client,
    IncompatibleServer,
    ServerVersionWarning,
    version_verdict,
)


def version_warnings(caught) -> list:
    """The client's warnings among those caught (a garbage-collected socket may warn meanwhile)."""
    return [warning for warning in caught if warning.category is ServerVersionWarning]


def test_the_client_speaks_the_servers_api_version(connect, server):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ServerVersionWarning)
        assert connect(server).api_version() == settings.API_VERSION == API_VERSION


def test_the_schema_states_the_same_version(server):
    schema = httpx.get(f"{server}/api/schema/", params={"format": "json"}).json()

    assert schema["info"]["version"] == settings.API_VERSION


def test_every_api_answer_carries_the_version_errors_too(server):
    answer = httpx.get(f"{server}/api/no-such-endpoint/")

    assert (answer.status_code, answer.headers["X-Yardstick-API-Version"]) == (404, settings.API_VERSION)
    assert "X-Yardstick-API-Version" not in httpx.get(f"{server}/healthz/").headers


def test_a_newer_minor_version_warns_that_the_server_is_newer(connect, server, settings):
    major, minor, _ = API_VERSION.split(".")
    newer = f"{major}.{int(minor) + 1}.1"
    settings.API_VERSION = newer

    with pytest.warns(ServerVersionWarning) as caught:
        version = connect(server).api_version()

    assert version == newer
    assert str(version_warnings(caught)[0].message).startswith(
        f"the server is newer than this client: its API is {newer}, this client speaks {API_VERSION}; "
    )


def test_an_older_minor_version_warns_that_the_server_is_older(connect, server, settings):
    settings.API_VERSION = "0.1.0"

    with pytest.warns(ServerVersionWarning) as caught:
        connect(server).api_version()

    assert str(version_warnings(caught)[0].message).startswith(
        f"the server is older than this client: its API is 0.1.0, this client speaks {API_VERSION}; "
        "calls to what was added since will fail with HTTP 404"
    )


def test_a_server_that_states_no_version_is_older():
    # A server before API 0.2 sent no header; the live server always does, so this one answers in-process.
    before_the_header = httpx.MockTransport(lambda request: httpx.Response(200, json={"openapi": "3.0.3"}))

    with pytest.warns(ServerVersionWarning, match="^the server is older than this client: it does not state"):
        assert Client("http://old.example", transport=before_the_header).api_version() is None


def test_a_newer_major_version_is_refused_on_the_first_call(connect, server, settings, finished_study):
    settings.API_VERSION = "1.0.0"
    client = connect(server)

    with pytest.raises(IncompatibleServer) as raised:
        client.leaderboard(finished_study.slug)

    assert str(raised.value) == (
        f"the server is newer than this client: its API is 1.0.0, this client speaks {API_VERSION}, and a new "
        "major version breaks clients; upgrade the client (pip install the client/ folder of the server's release)"
    )
    with pytest.raises(IncompatibleServer):  # and on every later call
        client.leaderboard(finished_study.slug)


def test_an_older_major_version_is_refused():
    with pytest.raises(IncompatibleServer) as raised:
        version_verdict("0.9.0", client_version="1.0.0")

    assert str(raised.value) == (
        "the server is older than this client: its API is 0.9.0, this client speaks 1.0.0, and a new major "
        "version breaks clients; use a client of API 0.x, or upgrade the server"
    )


def test_the_same_major_and_minor_version_says_nothing():
    assert version_verdict("0.2.7", client_version="0.2.0") is None


def test_the_clients_release_is_the_api_version_it_speaks():
    import tomllib
    from pathlib import Path

    client_project = tomllib.loads(
        (Path(__file__).resolve().parents[2] / "client" / "pyproject.toml").read_text()
    )

    assert client_project["project"]["version"] == API_VERSION == settings.API_VERSION
    assert client_project["project"]["dependencies"] == ["httpx>=0.27,<1"]
    assert client_project["project"]["scripts"] == {"yardstick": "yardstick_client.cli:main"}


def test_a_gateways_error_page_is_not_taken_for_an_old_server():
    answers = iter(
        [
            httpx.Response(502, text="<html>Bad Gateway</html>"),  # nginx while the server restarts
            httpx.Response(200, json={"rows": []}, headers={"X-Yardstick-API-Version": API_VERSION}),
        ]
    )
    client = Client("http://yardstick.example", transport=httpx.MockTransport(lambda request: next(answers)))

    with warnings.catch_warnings():
        warnings.simplefilter("error", ServerVersionWarning)
        with pytest.raises(ApiError) as raised:
            client.leaderboard("demo")
        client.leaderboard("demo")

    assert raised.value.status == 502
    assert client.server_api_version == API_VERSION
