"""Faults of the full stack, the quick versions of ``python -m tests.reliability fault ...`` (RELIABILITY.md).

- A real Celery worker killed with SIGKILL while it closes a ballot: the close is completed exactly
  once afterwards, by the worker's replacement pool process (the task is redelivered: acks_late and
  reject_on_worker_lost) or, when the whole worker died, by a new worker running the ballots sweep.
- The broker down at the vote that completes a ballot: a real web server answers 201 at once, the ballot
  stays open, and the sweep closes it.

To catch the close mid-way, the test holds the ballot's row lock (``SELECT … FOR UPDATE``) before the
worker starts: the closing task blocks inside its transaction, where pg_stat_activity shows it waiting.
The crowd disagrees (``tests.factories.disagreeing_crowd``), so a close has real scores to compute.
"""

from __future__ import annotations

import http.client
import http.cookiejar
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager

import psycopg
import pytest
from django.db import connection

from collection.lifecycle import ballots_sweep
from collection.models import Ballot, ItemScore, Study, Vote
from collection.tasks import ballot_close_task
from config.celery import app
from scoring.tasks import ballots_sweep_task
from tests.factories import annotators, disagreeing_crowd, make_study, vote_until
from tests.integration.conftest import REPO_ROOT, _database_url_of_the_test_database, start_celery_worker
from tests.reliability import invariants

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

WAIT_SECONDS = 45
# The broker wait of a request is bounded by BROKER_TIMEOUT_SECONDS (1 s); the rest is the request itself.
COMPLETING_VOTE_SECONDS = 2.5


def poll(what: str, condition, timeout: float = WAIT_SECONDS, details=lambda: ""):
    """Polls ``condition`` until it returns something true. A time-out or a refused connection while
    asking is 'not yet', never a failure: only the deadline fails the test."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = condition()
        except (TimeoutError, ConnectionError, urllib.error.URLError, http.client.HTTPException):
            result = None
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {timeout:g} s\n{details()}")
        time.sleep(0.2)


@contextmanager
def row_lock_on(ballot: Ballot):
    """Holds the ballot's row lock from another connection, as a long close would."""
    with psycopg.connect(_database_url_of_the_test_database()) as holder:
        holder.execute("SELECT id FROM collection_ballot WHERE id = %s FOR UPDATE", [ballot.pk])
        yield
        holder.rollback()


def close_waiting_on_the_lock() -> list[tuple]:
    """Backends blocked on a ballot's row lock in ``SELECT … FROM collection_ballot … FOR UPDATE``."""
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT pid, query FROM pg_stat_activity
               WHERE datname = current_database() AND wait_event_type = 'Lock'
                 AND query LIKE 'SELECT %%collection_ballot%%'"""
        )
        return cursor.fetchall()


def ballots_of(study: Study) -> list[tuple[int, str]]:
    return list(Ballot.objects.filter(study=study).order_by("number").values_list("number", "status"))


def assert_invariants_hold(study: Study) -> None:
    results = invariants.check(_database_url_of_the_test_database(), study=study.slug)
    assert {r.name: r.offending for r in results if not r.held} == {}


@pytest.fixture
def full_ballot_waiting_in_the_queue():
    """A study whose ballot 1 (15 items, 30 comparisons) is fully voted by a disagreeing crowd, with its
    closing task sent to the broker and no worker yet to take it."""
    app.control.purge()  # messages left by earlier tests would reach the workers started here
    study = make_study(tokens=6, appearances=4)
    cast = vote_until(study, voters=annotators(study, 5), choose=disagreeing_crowd(study, seed=7))
    ballot = Ballot.objects.get(study=study, number=1)
    assert (cast, ballot.votes_recorded, ballot.status) == (30, 30, "open")
    assert Vote.objects.filter(ballot=ballot).values("choice").distinct().count() == 2  # the crowd disagrees
    return study, ballot


def worker_blocked_mid_close(tmp_path, name: str):
    """A new worker that has taken the closing task and waits for the ballot's row lock in it."""
    worker = start_celery_worker(tmp_path / f"{name}.log")
    poll(
        "close blocked on the ballot's row lock",
        close_waiting_on_the_lock,
        details=lambda: worker.log()[-3000:],
    )
    return worker


def test_a_worker_process_killed_mid_close_is_replaced_and_the_redelivered_close_runs_once(
    full_ballot_waiting_in_the_queue, tmp_path
):
    study, ballot = full_ballot_waiting_in_the_queue
    with row_lock_on(ballot):
        worker = worker_blocked_mid_close(tmp_path, "worker")
        try:
            (pool_process,) = worker.pool_processes()
            os.kill(pool_process, signal.SIGKILL)
        except BaseException:
            worker.stop()
            raise
    def redelivered_and_closed():
        # The worker's sweep at its start (sent after the close, so queued behind it) may close the
        # ballot before the close is delivered again: either way the close's work is done once.
        received = re.findall(r"Task scoring\.ballot_close\[[0-9a-f-]+\] received", worker.log())
        return len(received) == 2 and ballots_of(study) == [(1, "closed"), (2, "open")]

    try:
        poll(
            "ballot 1 closed, its close delivered again",
            redelivered_and_closed,
            details=lambda: worker.log()[-3000:],
        )
        log = worker.log()
    finally:
        worker.stop()
    assert "WorkerLostError" in log
    (task_id,) = set(re.findall(r"scoring\.ballot_close\[([0-9a-f-]+)\]", log))
    assert log.count(f"Task scoring.ballot_close[{task_id}] received") == 2  # delivered again after the kill
    assert log.count(f"closed {study.name} · ballot 1:") == 1 and log.count(f"opened {study.name}") == 1
    assert ItemScore.objects.filter(ballot=ballot).count() == 15
    assert_invariants_hold(study)


def test_a_worker_killed_mid_close_leaves_the_close_to_the_sweep_of_a_new_worker_done_once(
    full_ballot_waiting_in_the_queue, tmp_path
):
    study, ballot = full_ballot_waiting_in_the_queue
    with row_lock_on(ballot):
        first = worker_blocked_mid_close(tmp_path, "first")
        first.kill()
    # The message of the killed worker stays unacknowledged in Redis until the visibility timeout (an
    # hour); meanwhile beat's sweep, sent here as beat would send it, is what closes the ballot.
    second = start_celery_worker(tmp_path / "second.log")
    try:
        ballots_sweep_task.delay()
        poll(
            "ballot 1 closed by the sweep",
            lambda: ballots_of(study) == [(1, "closed"), (2, "open")],
            details=lambda: second.log()[-3000:],
        )
        # The stranded message, delivered at last, finds the ballot closed and leaves it as it is.
        assert ballot_close_task.delay(ballot.pk).get(timeout=WAIT_SECONDS).endswith("closed")
    finally:
        second.stop()
    assert ballots_of(study) == [(1, "closed"), (2, "open")]
    assert ItemScore.objects.filter(ballot=ballot).count() == 15
    assert "ballots_closed': 1" in second.log()
    assert_invariants_hold(study)


# --- the broker down at the completing vote -------------------------------------------------------


@contextmanager
def dead_broker(kind: str):
    """A broker address where nothing answers: ``refused`` (nothing listens) or ``silent`` (the port
    accepts connections and never answers, as a hung Redis or a black-holed network)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        if kind == "silent":
            listener.listen(64)
        port = listener.getsockname()[1]
        yield f"redis://127.0.0.1:{port}/0"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def web_server(tmp_path, broker_url: str):
    """gunicorn serving the site on the test database, its Celery broker at ``broker_url``."""
    port = free_port()
    env = dict(
        os.environ,
        DATABASE_URL=_database_url_of_the_test_database(),
        CELERY_BROKER_URL=broker_url,
        CELERY_TASK_ALWAYS_EAGER="false",
        YARDSTICK_DATA_DIR=str(tmp_path),
    )
    log_path = tmp_path / "web.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "config.wsgi",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                "1",
            ],
            cwd=REPO_ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    try:

        def healthy():
            if process.poll() is not None:
                pytest.fail(f"gunicorn exited:\n{log_path.read_text()[-3000:]}")
            with urllib.request.urlopen(f"{base}/healthz/", timeout=5) as response:
                return response.status == 200

        poll("gunicorn answering /healthz/", healthy, timeout=60)
        yield base, log_path
    finally:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                pass
            try:
                process.wait(timeout=15)
                break
            except subprocess.TimeoutExpired:
                continue


class Browser:
    """An annotator's browser: cookies, the consent form, the API calls of the voting page's script."""

    def __init__(self, base: str):
        self.base = base
        self.cookies = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.cookies))

    def cookie(self, name: str) -> str:
        return next(c.value for c in self.cookies if c.name == name)

    def open(self, path: str, *, data: bytes | None = None, headers: dict | None = None):
        request = urllib.request.Request(self.base + path, data=data, headers=headers or {})
        try:
            with self.opener.open(request, timeout=30) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def join(self, slug: str, participant: str) -> None:
        assert self.open(f"/s/{slug}/?participant={participant}")[0] == 200
        form = {"consent": "yes", "participant": participant, "csrfmiddlewaretoken": self.cookie("csrftoken")}
        status, _ = self.open(f"/s/{slug}/", data=urllib.parse.urlencode(form).encode())
        assert status == 200  # redirected to the voting page

    def api(self, path: str, body: dict | None = None):
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            headers |= {"Content-Type": "application/json", "X-CSRFToken": self.cookie("csrftoken")}
            data = json.dumps(body).encode()
        status, content = self.open(path, data=data, headers=headers)
        if content[:1] in (b"{", b"["):
            return status, json.loads(content)
        return status, content.decode(errors="replace")[:2000]  # an error page, shown by the assertion


@pytest.mark.parametrize("broker", ["refused", "silent"])
def test_the_completing_vote_is_answered_201_at_once_with_the_broker_down_and_the_sweep_closes_the_ballot(
    broker, tmp_path
):
    study = make_study(tokens=6, appearances=4)
    with dead_broker(broker) as broker_url, web_server(tmp_path, broker_url) as (base, log_path):
        browser = Browser(base)
        browser.join(study.slug, "web-annotator")
        status, comparison = browser.api(f"/api/studies/{study.slug}/next/")
        assert status == 200
        # The rest of the crowd votes every other comparison: the browser's is the last one.
        voters = annotators(study, 5)
        assert vote_until(study, voters=voters, choose=disagreeing_crowd(study, seed=11)) == 29

        started = time.monotonic()
        status, body = browser.api("/api/votes/", {"assignment": comparison["assignment"], "choice": "right"})
        elapsed = time.monotonic() - started
        log = log_path.read_text(errors="replace")

    assert status == 201, f"{body}\n{log[-3000:]}"
    assert body["created"] is True
    assert elapsed < COMPLETING_VOTE_SECONDS, f"the completing vote took {elapsed:.2f} s\n{log[-3000:]}"
    assert "could not start scoring.ballot_close" in log  # logged, not raised
    ballot = Ballot.objects.get(study=study, number=1)
    assert (ballot.status, ballot.votes_recorded) == ("open", 30)  # stored, not yet closed

    assert ballots_sweep()["ballots_closed"] == 1  # what beat's next sweep does
    assert ballots_of(study) == [(1, "closed"), (2, "open")]
    assert ItemScore.objects.filter(ballot=ballot).count() == 15
    assert_invariants_hold(study)
