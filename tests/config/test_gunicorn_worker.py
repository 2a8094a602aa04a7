"""config/gunicorn_worker.py under a real gunicorn: connections opened ahead of their request hold no
thread, so a request on another connection is answered at once; gunicorn's own gthread worker holds a
thread per such connection for up to 5 s (the test that says so fails once gunicorn stops doing it,
and then our worker can go)."""

from __future__ import annotations

import http.client
import socket
import subprocess
import sys
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

from tests.reliability.fuzz import stop_server

ROOT = Path(__file__).resolve().parents[2]
THREADS = 2
IDLE_CONNECTIONS = 2 * THREADS


def application(environ, start_response):
    """The WSGI application gunicorn serves in these tests (no Django: the worker is what is tested)."""
    body = b"ok"
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def gunicorn(worker_class: str):
    port = free_port()
    command = [
        sys.executable, "-m", "gunicorn", "--bind", f"127.0.0.1:{port}", "--workers", "1",
        "--threads", str(THREADS), "--worker-class", worker_class, "--keep-alive", "30",
        "tests.config.test_gunicorn_worker:application",
    ]  # fmt: skip
    process = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 30
        while True:  # not up yet until it answers (a refused connection or a timeout is "not yet")
            try:
                assert get(port, timeout=2) == 200
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(process.stderr.read().decode()[-2000:]) from None
                time.sleep(0.1)
        yield port
    finally:
        stop_server(process)


def get(port: int, *, timeout: float) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("GET", "/")
        return connection.getresponse().status
    finally:
        connection.close()


@contextmanager
def idle_connections(port: int, count: int):
    """``count`` connections that are open and have sent nothing yet."""
    with ExitStack() as stack:
        sockets = [stack.enter_context(socket.create_connection(("127.0.0.1", port))) for _ in range(count)]
        time.sleep(0.3)  # accepted by now
        yield sockets


def seconds_to_answer(port: int) -> float:
    started = time.monotonic()
    assert get(port, timeout=20) == 200
    return time.monotonic() - started


def test_connections_waiting_to_send_hold_no_thread_and_are_answered_when_they_do():
    with (
        gunicorn("config.gunicorn_worker.PollerThreadWorker") as port,
        idle_connections(port, IDLE_CONNECTIONS) as idle,
    ):
        assert seconds_to_answer(port) < 1.0  # twice as many idle connections as threads
        idle[0].sendall(b"GET / HTTP/1.1\r\nHost: test\r\n\r\n")  # one of them asks, late
        idle[0].settimeout(10)
        assert idle[0].recv(1024).startswith(b"HTTP/1.1 200 OK")
        assert seconds_to_answer(port) < 1.0


def test_gunicorns_own_gthread_worker_still_holds_a_thread_per_connection_waiting_to_send():
    with gunicorn("gthread") as port, idle_connections(port, IDLE_CONNECTIONS):
        assert seconds_to_answer(port) > 3.0  # its threads wait up to 5 s for the idle ones
