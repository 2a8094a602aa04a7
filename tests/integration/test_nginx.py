"""nginx in front of gunicorn's stock gthread worker, with compose's configuration
(``config/nginx/yardstick.conf.template``): connections opened ahead of their request wait in nginx and
hold none of gunicorn's threads; the client's address reaches the application as the one proxy
appended it; a request on a kept-alive connection after a long pause is answered.

Needs Debian's nginx (``.ci/run`` installs it), so it runs with the integration tests.
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from tests.reliability.fuzz import stop_server
from tests.reliability.stack import nginx_binary, nginx_config

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
THREADS = 2
IDLE_CONNECTIONS = 2 * THREADS


def application(environ, start_response):
    """The WSGI application gunicorn serves here: it answers with what reached it of the client."""
    body = json.dumps({"forwarded_for": environ.get("HTTP_X_FORWARDED_FOR")}).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def get(port: int, *, timeout: float, connection=None) -> tuple[int, dict]:
    own = connection is None
    connection = connection or http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("GET", "/")
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        if own:
            connection.close()


def started(process: subprocess.Popen, port: int) -> None:
    deadline = time.monotonic() + 30
    while True:  # not up until it answers (a refused connection or a timeout is "not yet")
        try:
            assert get(port, timeout=2)[0] == 200
            return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(process.stderr.read().decode()[-2000:]) from None
            time.sleep(0.1)


@contextmanager
def gunicorn_behind_nginx():
    """Yields nginx's port; gunicorn runs 1 process of ``THREADS`` threads (gthread) behind it."""
    web, public = free_port(), free_port()
    with tempfile.TemporaryDirectory() as directory, ExitStack() as stack:
        gunicorn = subprocess.Popen(
            [
                sys.executable, "-m", "gunicorn", "--bind", f"127.0.0.1:{web}", "--workers", "1",
                "--threads", str(THREADS), "--worker-class", "gthread", "--keep-alive", "75",
                "tests.integration.test_nginx:application",
            ],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
        stack.callback(stop_server, gunicorn)
        started(gunicorn, web)
        config = nginx_config(Path(directory), listen=f"127.0.0.1:{public}", web=f"127.0.0.1:{web}")
        nginx = subprocess.Popen(
            [nginx_binary(), "-c", str(config), "-g", "daemon off;"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
        stack.callback(stop_server, nginx)
        started(nginx, public)
        yield public


@contextmanager
def idle_connections(port: int, count: int):
    """``count`` connections that are open and have sent nothing yet."""
    with ExitStack() as stack:
        sockets = [stack.enter_context(socket.create_connection(("127.0.0.1", port))) for _ in range(count)]
        time.sleep(0.3)  # accepted by now
        yield sockets


def seconds_to_answer(port: int) -> float:
    began = time.monotonic()
    assert get(port, timeout=20)[0] == 200
    return time.monotonic() - began


def test_connections_waiting_to_send_hold_no_thread_of_gunicorn():
    with gunicorn_behind_nginx() as port, idle_connections(port, IDLE_CONNECTIONS) as idle:
        assert seconds_to_answer(port) < 1.0  # twice as many idle connections as gunicorn has threads
        idle[0].sendall(b"GET / HTTP/1.1\r\nHost: test\r\n\r\n")  # one of them asks, late
        idle[0].settimeout(10)
        assert idle[0].recv(1024).startswith(b"HTTP/1.1 200 OK")
        assert seconds_to_answer(port) < 1.0


def test_the_client_address_is_appended_to_what_the_client_claimed():
    with gunicorn_behind_nginx() as port:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request("GET", "/", headers={"X-Forwarded-For": "203.0.113.9"})
        body = json.loads(connection.getresponse().read())
        connection.close()
    # NUM_PROXIES=1 reads the last address: the one nginx saw, not the client's claim.
    assert body["forwarded_for"] == "203.0.113.9, 127.0.0.1"


def test_a_kept_alive_connection_is_answered_after_a_pause():
    with gunicorn_behind_nginx() as port:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        assert get(port, timeout=10, connection=connection)[0] == 200
        time.sleep(6)  # longer than gunicorn's default keep-alive of 5 s, as an annotator thinks
        assert get(port, timeout=10, connection=connection)[0] == 200
        connection.close()
