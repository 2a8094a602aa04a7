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


class CeleryWorker:
    """``celery -A config worker`` in a process group of its own, on the test database, logging to a file."""

    def __init__(self, log_path: Path, *, concurrency: int = 1):
        self.node = f"test-{uuid.uuid4().hex[:8]}@localhost"
        self.log_path = log_path
        environment = dict(
            os.environ, DATABASE_URL=_database_url_of_the_test_database(), CELERY_TASK_ALWAYS_EAGER="false"
        )
        argv = [sys.executable, "-m", "celery", "-A", "config", "worker", "-l", "info"]
        argv += ["--concurrency", str(concurrency), "--pool", "prefork", "-n", self.node]
        argv += ["--without-gossip", "--without-mingle"]
        with log_path.open("ab") as log:
            self.process = subprocess.Popen(
                argv,
                cwd=REPO_ROOT,
                env=environment,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def answers_ping(self) -> bool:
        """Whether the worker answers a broker ping; a broker that does not answer in time is 'not yet'."""
        from config.celery import app

        try:
            replies = app.control.ping(destination=[self.node], timeout=1.0) or []
        except Exception:  # redis and kombu time-outs and connection errors have no common base class
            return False
        return any(self.node in reply for reply in replies)

    def wait_until_ready(self, timeout: float = WORKER_START_TIMEOUT_SECONDS) -> None:
        deadline = time.monotonic() + timeout
        while not self.answers_ping():
            if self.process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the Celery worker did not start:\n{self.log()[-3000:]}")
            time.sleep(0.2)

    def pool_processes(self) -> list[int]:
        """The pids of the worker's pool processes (the children of its main process)."""
        pid = self.process.pid
        try:
            return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
        except OSError:
            return []

    def kill(self) -> None:
        """SIGKILL to the whole worker, as ``docker kill`` or the OOM killer would."""
        _signal_group(self.process, signal.SIGKILL)
        self.process.wait(timeout=20)

    def stop(self) -> None:
        _stop_process_group(self.process)


def start_celery_worker(log_path: Path, *, concurrency: int = 1) -> CeleryWorker:
    """A worker that answers pings; the caller stops it (``stop``). Messages already queued are kept."""
    worker = CeleryWorker(log_path, concurrency=concurrency)
    try:
        worker.wait_until_ready()
    except BaseException:
        worker.stop()
        raise
    return worker


@pytest.fixture
def celery_worker_process(transactional_db, tmp_path):
    """Starts ``celery -A config worker`` (one process, a unique node name) and yields its node name.

    The test must commit what the worker needs: it runs with ``transactional_db``.
    """
    from config.celery import app

    app.control.purge()  # messages left by earlier tests must not reach this worker
    worker = start_celery_worker(tmp_path / "worker.log")
    try:
        yield {"node": worker.node, "log": worker.log_path}
    finally:
        worker.stop()


def _signal_group(process: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        pass


def _stop_process_group(process: subprocess.Popen) -> None:
    """SIGTERM to the worker and its pool children, SIGKILL if they linger; gone already is fine."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        _signal_group(process, sig)
        try:
            process.wait(timeout=20)
            break
        except subprocess.TimeoutExpired:
            continue
    _signal_group(process, signal.SIGKILL)  # pool children that outlived their parent


@pytest.fixture
def eager_tasks():
    """Run tasks in-process in an integration test that starts no worker (nothing left on the broker)."""
    from config.celery import app

    app.loader.import_default_modules()  # the tasks' modules, as a worker imports them at its start
    previous = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, True
    yield
    app.conf.task_always_eager, app.conf.task_eager_propagates = previous


BALLOT_WAIT_SECONDS = 60


def vote_until_finished_by_the_worker(study, voters, worker_log) -> int:
    """Round-robin votes (the lower item index wins) until the study finishes, waiting for the real
    worker to close each fully voted ballot; returns how many times it waited for the worker."""
    from collection.models import Study
    from collection.voting import comparison_next_for, vote_record

    index_of = dict(study.items.values_list("id", "index"))
    waited_for_worker = 0
    while study.status != Study.Status.FINISHED:
        ballots_before_pass = study.ballots.count()
        cast = 0
        for annotator in voters:
            result = comparison_next_for(annotator=annotator)
            if result.assignment is None:
                continue
            comparison = result.assignment.comparison
            better_left = index_of[comparison.left_item_id] < index_of[comparison.right_item_id]
            vote_record(
                annotator=annotator,
                assignment_id=result.assignment.pk,
                choice="left" if better_left else "right",
            )
            cast += 1
        study.refresh_from_db()
        if cast == 0 and study.status != Study.Status.FINISHED:
            # The open ballot is fully voted: only the worker can close it and open the next one
            # (it may have done so already, since this pass began).
            deadline = time.monotonic() + BALLOT_WAIT_SECONDS
            while study.ballots.count() == ballots_before_pass and study.status != Study.Status.FINISHED:
                latest = study.ballots.order_by("-number").first()
                assert time.monotonic() < deadline, (
                    f"the worker did not close ballot {latest.number} ({latest.status}, {latest.votes_recorded} "
                    f"of {latest.comparison_count} voted); its log ends with:\n"
                    + worker_log.read_text()[-3000:]
                )
                time.sleep(0.2)
                study.refresh_from_db()
            waited_for_worker += 1
    return waited_for_worker
