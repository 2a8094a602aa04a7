"""A request refused before its body was read leaves the kept-alive connection able to serve the next one.

gunicorn as deployed (docker-compose.yml's web command: ``gunicorn -c config/gunicorn.conf.py``, gthread
with keep-alive, DEBUG off) announces ``Connection: keep-alive`` on every answer, reads up to 64 KiB of a
body the application left unread, and closes the connection when more is left: the client's next request
on it got no answer. Spoken here over one raw socket, as a client that reuses its connection does.
"""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager

import pytest
import yaml
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token as ApiToken

from collection import pools
from tests.factories import make_study
from tests.integration.conftest import REPO_ROOT, _database_url_of_the_test_database
from tests.integration.test_compose import OPERATOR_VARIABLES, free_port, interpolated

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

START_SECONDS = 60
ANSWER_SECONDS = 10
LOCAL = ("127.0.0.1",)


@contextmanager
def web_as_deployed(tmp_path, redis_url: str):
    """docker-compose.yml's web service (its gunicorn command and environment) on the test database."""
    compose = interpolated(yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text()), OPERATOR_VARIABLES)
    command = shlex.split(compose["services"]["web"]["command"])[-1]
    gunicorn = shlex.split(command.rsplit("exec ", 1)[1])
    assert gunicorn == ["gunicorn", "-c", "config/gunicorn.conf.py", "config.wsgi"]
    port = free_port()
    env = {
        **os.environ,
        **{key: str(value) for key, value in compose["x-app"]["environment"].items()},
        "DATABASE_URL": _database_url_of_the_test_database(),
        "DATABASE_POOL": "false",  # the test database is dropped at the end: no pool holding it open
        "REDIS_URL": redis_url,
        "CELERY_BROKER_URL": redis_url,
        "BEHIND_TLS_PROXY": "false",  # plain HTTP here: no redirect to https
        "SESSION_COOKIE_SECURE": "false",
        "CSRF_COOKIE_SECURE": "false",
        "METRICS_DIR": "",
        "YARDSTICK_DATA_DIR": str(tmp_path),
        "STATIC_ROOT": str(tmp_path / "static"),
        "WEB_CONCURRENCY": "1",
        "GUNICORN_CMD_ARGS": f"--bind=127.0.0.1:{port}",
    }
    log_path = tmp_path / "web.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", *gunicorn],
            cwd=REPO_ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            if process.poll() is not None:
                pytest.fail(f"gunicorn exited:\n{log_path.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz/", timeout=5) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"gunicorn did not answer:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.25)
        yield port
    finally:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                break
            try:
                process.wait(timeout=15)
                break
            except subprocess.TimeoutExpired:
                continue


def exchange(connection: socket.socket, method: str, path: str, headers: dict, body: bytes = b""):
    """Send a request on the connection; (status, headers, body) of its answer, or None when the server
    closed the connection instead of answering."""
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    try:
        connection.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        return answer(connection)
    except (BrokenPipeError, ConnectionResetError):
        return None


def answer(connection: socket.socket) -> tuple[int, dict[str, str], bytes] | None:
    """(status, headers, body) of the next answer on the connection; None when it closed without one."""
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = connection.recv(65536)
        if not chunk:
            return None
        received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, value in (line.split(":", 1) for line in header_lines)}
    while len(body) < int(headers.get("content-length", 0)):
        chunk = connection.recv(65536)
        if not chunk:
            return None
        body += chunk
    return int(status_line.split()[1]), headers, body


def tokens_file(size: int) -> bytes:
    rows = b"".join(b"token-%07d,Area\n" % number for number in range(size // 19 + 1))
    return b"token,area\n" + rows[: size - 11]


@pytest.fixture
def staff_token() -> str:
    user = get_user_model().objects.create_user("staff", password="pw", is_staff=True, is_superuser=True)
    return ApiToken.objects.create(user=user).key


def test_after_a_413_for_a_tokens_file_over_2_mib_the_connection_answers_the_next_requests(
    tmp_path, redis_url, staff_token
):
    study = make_study(start=False)  # a draft with 6 tokens
    too_large = tokens_file(pools.MAX_UPLOAD_BYTES + 400_000)
    upload = {"Authorization": f"Token {staff_token}", "Content-Type": "text/csv"}

    with web_as_deployed(tmp_path, redis_url) as port, socket.create_connection(LOCAL + (port,)) as connection:
        connection.settimeout(ANSWER_SECONDS)
        answers = []
        for _ in range(6):
            refused = exchange(connection, "POST", f"/api/studies/{study.slug}/tokens/", upload, too_large)
            health = exchange(connection, "GET", "/healthz/", {})
            kept = refused and refused[1]["connection"]
            answers.append((refused and refused[0], kept, health and health[0]))

    assert answers == [(413, "keep-alive", 200)] * 6
    assert study.tokens.count() == 6  # nothing imported


def test_after_a_refusal_that_read_none_of_a_large_body_the_connection_answers_the_next_request(
    tmp_path, redis_url
):
    study = make_study(start=False)
    body = tokens_file(1_000_000)

    with web_as_deployed(tmp_path, redis_url) as port, socket.create_connection(LOCAL + (port,)) as connection:
        connection.settimeout(ANSWER_SECONDS)
        answers = []
        for token in ("", "Token not-a-token"):  # no credentials, a wrong one
            headers = {"Content-Type": "text/csv"} | ({"Authorization": token} if token else {})
            refused = exchange(connection, "POST", f"/api/studies/{study.slug}/tokens/", headers, body)
            health = exchange(connection, "GET", "/healthz/", {})
            answers.append((refused and refused[0], health and health[0]))

    assert answers == [(401, 200), (401, 200)]
