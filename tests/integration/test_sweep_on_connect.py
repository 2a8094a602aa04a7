"""A ballot completed while the broker is down is closed once the broker is back, with no Celery beat: the
worker, reconnecting, sends the ballots sweep (``config.celery.SweepOnConnect``).

A Redis of the test's own is the broker of a real Celery worker and of a real gunicorn; it is stopped
before the vote that completes the ballot and started again after.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from contextlib import contextmanager

import pytest

from collection.models import Ballot
from tests.factories import annotators, disagreeing_crowd, make_study, vote_until
from tests.integration.conftest import REPO_ROOT, _database_url_of_the_test_database, _stop_process_group
from tests.integration.test_faults import Browser, ballots_of, free_port, poll, web_server

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

SENT = "sent scoring.ballots_sweep after connecting to the broker"


class OwnRedis:
    """``redis-server`` on a port of its own, nothing kept on disk; stopped and started again at will."""

    def __init__(self, tmp_path):
        self.port = free_port()
        self.log_path = tmp_path / "redis.log"
        self.process = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        argv = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        argv += ["--appendonly", "no"]
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        poll("Redis accepting connections", lambda: "Ready to accept connections" in self.log())

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@contextmanager
def worker_on(broker_url: str, log_path):
    """``celery -A config worker`` on the test database and ``broker_url``; no beat anywhere."""
    environment = dict(
        os.environ,
        DATABASE_URL=_database_url_of_the_test_database(),
        CELERY_BROKER_URL=broker_url,
        CELERY_TASK_ALWAYS_EAGER="false",
    )
    argv = [sys.executable, "-m", "celery", "-A", "config", "worker", "-l", "info", "--concurrency", "1"]
    argv += ["--pool", "prefork", "--without-gossip", "--without-mingle", "--without-heartbeat"]
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            argv, cwd=REPO_ROOT, env=environment, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        yield process
    finally:
        _stop_process_group(process)


def test_a_ballot_completed_while_the_broker_is_down_is_closed_when_it_is_back_without_beat(tmp_path):
    redis = OwnRedis(tmp_path)
    redis.start()
    worker_log = tmp_path / "worker.log"
    study = make_study(tokens=6, appearances=4)  # ballot 1: 15 items, 30 comparisons
    try:
        with worker_on(redis.url, worker_log), web_server(tmp_path, redis.url) as (base, web_log):
            poll("the worker's sweep at its start", lambda: worker_log.read_text().count(SENT) == 1)
            browser = Browser(base)
            browser.join(study.slug, "web-annotator")
            status, comparison = browser.api(f"/api/studies/{study.slug}/next/")
            assert status == 200
            # The rest of a crowd that disagrees votes every other comparison: the browser's is the last.
            assert vote_until(study, voters=annotators(study, 5), choose=disagreeing_crowd(study, seed=5)) == 29

            redis.stop()
            status, body = browser.api("/api/votes/", {"assignment": comparison["assignment"], "choice": "left"})
            assert (status, body["created"]) == (201, True)
            assert "could not start scoring.ballot_close" in web_log.read_text(errors="replace")
            time.sleep(2)  # no beat, and the worker cannot reach the broker: nothing closes it meanwhile
            assert ballots_of(study) == [(1, "open")]

            redis.start()  # empty: whatever was queued before is gone, as with compose's Redis restarted
            poll(
                "ballot 1 closed after the broker came back",
                lambda: ballots_of(study) == [(1, "closed"), (2, "open")],
                timeout=90,
                details=lambda: worker_log.read_text(errors="replace")[-3000:],
            )
            log = worker_log.read_text(errors="replace")
    finally:
        redis.stop()

    assert log.count(SENT) == 2  # at its start, and when the broker was back
    assert "'ballots_closed': 1" in log
    assert Ballot.objects.get(study=study, number=1).votes_recorded == 30
