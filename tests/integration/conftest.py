"""A real Celery worker process for integration tests, on the configured Redis and PostgreSQL."""

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
WORKER_START_TIMEOUT_SECONDS = 60


def _database_url_of_the_test_database() -> str:
    """DATABASE_URL for the database pytest-django created (e.g. ``test_test``), so that the worker
    reads and writes the rows the test sees."""
    from django.db import connection

    settings = connection.settings_dict
    user = settings.get("USER") or ""
    password = f":{settings['PASSWORD']}" if settings.get("PASSWORD") else ""
    credentials = f"{user}{password}@" if user else ""
    return f"postgres://{credentials}{settings['HOST']}:{settings['PORT'] or 5432}/{settings['NAME']}"


@pytest.fixture
def celery_worker_process(transactional_db, tmp_path):
    """Starts ``celery -A config worker`` (one process, a unique node name) and yields its node name.

    The test must commit what the worker needs: it runs with ``transactional_db``.
    """
    from config.celery import app

    app.control.purge()  # messages left by earlier tests must not reach this worker
    node = f"test-{uuid.uuid4().hex[:8]}@localhost"
    log_path = tmp_path / "worker.log"
    environment = dict(
        os.environ, DATABASE_URL=_database_url_of_the_test_database(), CELERY_TASK_ALWAYS_EAGER="false"
    )
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "-l",
                "info",
                "--concurrency",
                "1",
                "--pool",
                "prefork",
                "-n",
                node,
                "--without-gossip",
                "--without-mingle",
            ],
            cwd=REPO_ROOT,
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + WORKER_START_TIMEOUT_SECONDS
        while True:
            replies = app.control.ping(destination=[node], timeout=1.0) or []
            if any(node in reply for reply in replies):
                break
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the Celery worker did not start:\n{log_path.read_text()[-3000:]}")
        yield {"node": node, "log": log_path}
    finally:
        _stop_process_group(process)


def _stop_process_group(process: subprocess.Popen) -> None:
    """SIGTERM to the worker and its pool children, SIGKILL if they linger; gone already is fine."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            pass
        try:
            process.wait(timeout=20)
            return
        except subprocess.TimeoutExpired:
            continue


@pytest.fixture
def eager_tasks():
    """Run tasks in-process in an integration test that starts no worker (nothing left on the broker)."""
    from config.celery import app

    previous = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, True
    yield
    app.conf.task_always_eager, app.conf.task_eager_propagates = previous
