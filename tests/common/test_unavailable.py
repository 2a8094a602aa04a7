"""A database that does not answer: 503 with Retry-After (JSON on the API, a plain page elsewhere), never
a 500. Each case runs the real site in a subprocess whose DATABASE_URL points at a port nobody listens on."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

REQUESTS = [
    ("get", "/api/studies/demo/next/", None),
    ("post", "/api/votes/", {"assignment": 1, "choice": "left"}),
    ("post", "/api/auth/token/", {"username": "owner", "password": "secret"}),
    ("get", "/api/studies/", None),
    ("get", "/s/demo/", None),
    ("get", "/s/demo/vote/", None),
    ("get", "/admin/", None),
    ("get", "/models/studies/demo/leaderboard/", None),
]

SCRIPT = """
import json, os, sys
import django
django.setup()
from django.test import Client
client = Client(raise_request_exception=False)
client.cookies["sessionid"] = "0123456789abcdefghijklmnopqrstuv"  # a session that must be loaded
answers = []
for method, path, body in json.loads(sys.argv[1]):
    kwargs = {"data": body, "content_type": "application/json"} if body is not None else {}
    response = getattr(client, method)(path, **kwargs)
    answers.append([path, response.status_code, response.get("Content-Type", ""), response.get("Retry-After"),
                    response.content.decode(errors="replace")])
print(json.dumps(answers))
"""


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # free once the socket closes: nobody listens there


@pytest.mark.parametrize("debug", ["false", "true"])
def test_every_page_and_endpoint_answers_503_when_the_database_is_away(debug, tmp_path):
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in {"REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND"}
    }
    environment.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        DATABASE_URL=f"postgres://yardstick@127.0.0.1:{closed_port()}/yardstick",
        DEBUG=debug,
        SECRET_KEY="a-test-key-" + "x" * 50,
        YARDSTICK_DATA_DIR=str(tmp_path),
        STATIC_ROOT=str(tmp_path / "static"),
    )
    completed = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(REQUESTS)],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    answers = json.loads(completed.stdout.strip().splitlines()[-1])

    for path, status, content_type, retry_after, body in answers:
        assert (path, status, retry_after) == (path, 503, "5"), body[:500]
        if path.startswith("/api/"):
            assert content_type == "application/json"
            assert json.loads(body)["detail"].startswith("the service is briefly unavailable")
        else:
            assert content_type.startswith("text/html")
            assert "Nothing you did was lost" in body
            assert '<meta http-equiv="refresh" content="5">' in body
