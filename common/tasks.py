"""Starting Celery tasks from a request without ever failing the request that asked for them.

A task enqueued after commit runs once the data it needs is committed. If the broker is down, the
request that committed (a vote, say) has already succeeded: answering it with a 500 would tell the
client that a stored vote was lost. So a failed enqueue is logged, not raised; every task started this
way has a sweep (Celery beat) that finds the work and does it later.

Services name the task they start (``"scoring.ballot_close"``) and never import a tasks module: tasks
import services, so an import the other way would be a cycle. The name is looked up in the Celery
app's registry, as a worker looks up a message's task, in eager mode too.

On the embedded default (eager Celery, ``CELERY_TASK_ALWAYS_EAGER``) "sending" a task runs it in the
process that sends it. A task asked for with ``after_response=True`` during a request (the close of a
ballot, asked for by the vote that completes it) then runs after the response: a middleware
(``AfterResponseMiddleware``) opens a list of work while the view runs, the commit appends to it, and
the response's ``close()`` runs it, which the WSGI server calls once the body has been sent (and the
test client before it returns the response, so tests see the work done). Outside a
request (a management command, a test calling services, a worker) nothing changes: the task runs at
commit. The full stack (a broker) is unchanged too: the message is sent at commit and a worker runs it.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Callable, Iterable

from celery import current_app
from django.db import close_old_connections, transaction

logger = logging.getLogger(__name__)


_discovery = threading.Lock()


def task_named(name: str):
    """The task registered under ``name``.

    Every installed app's ``tasks`` module is imported on the first look-up of a name not registered
    yet (Celery's autodiscovery, which a worker runs at start). An unknown name is a KeyError.

    One thread at a time discovers: Celery's autodiscovery is not safe to run in several threads at
    once, and a web process's threads look their first task up together (the votes and GET nexts at
    a ballot's end all ask for its close). Seven of eight threads that did so at once got
    ``NotRegistered``, after the vote they had committed (tests/common/test_task_names.py).
    """
    if name not in current_app.tasks:
        with _discovery:
            if name not in current_app.tasks:
                current_app.autodiscover_tasks(force=True)
    return current_app.tasks[name]


def enqueue(task, *args, recovered_by: str) -> bool:
    """Send ``task(*args)`` to the broker now; on any failure log it and return False.

    ``task`` is a registered task's name (or the task itself). ``recovered_by`` names what picks the
    work up if this message is lost (for the log). The broker's connection and publish timeouts
    (settings, ``CELERY_BROKER_*``) bound how long this can wait.
    """
    task = task_named(task) if isinstance(task, str) else task
    try:
        task.apply_async(args=args, retry=False, ignore_result=True)
    except Exception:  # the broker's errors have no common base class (kombu, redis, socket, eager task)
        logger.exception("could not start %s%r; %s will pick it up", task.name, args, recovered_by)
        return False
    return True


def enqueue_on_commit(task, *args, recovered_by: str, after_response: bool = False) -> None:
    """``enqueue`` once the current transaction commits (at once outside a transaction).

    With ``after_response``, an eager task (the embedded default) asked for during a request runs
    after the request's response has been sent (``run_after_response``), not before it: for work
    whose result the person who asked does not wait for. The name is resolved now, so that a name no
    task has fails where it is written, not after commit.
    """
    task = task_named(task) if isinstance(task, str) else task

    def committed():
        if after_response and task.app.conf.task_always_eager:
            run_after_response(lambda: enqueue(task, *args, recovered_by=recovered_by))
        else:
            enqueue(task, *args, recovered_by=recovered_by)

    transaction.on_commit(committed)


def enqueue_each(task, ids: Iterable[int], *, recovered_by: str) -> int:
    """``enqueue(task, id)`` for every id (the sweeps' restart of work whose task was never sent);
    returns how many."""
    ids = list(ids)
    for row_id in ids:
        enqueue(task, row_id, recovered_by=recovered_by)
    return len(ids)


# --- after the response ----------------------------------------------------------------------------

# The work to run once the current request's response has been sent; None outside a view.
_after_response: contextvars.ContextVar[list[Callable[[], object]] | None] = contextvars.ContextVar(
    "after_response", default=None
)


def run_after_response(work: Callable[[], object]) -> None:
    """Run ``work()`` once the current request's response has been sent; at once outside a request.

    ``work`` must not raise: its exception would reach the WSGI server, not the annotator (``enqueue``
    logs its own failures).
    """
    pending = _after_response.get()
    if pending is None:
        work()
    else:
        pending.append(work)


def _run_pending(pending: list[Callable[[], object]]) -> None:
    while pending:
        work = pending.pop(0)
        try:
            work()
        except Exception:  # the response is already sent: nobody else would hear of it
            logger.exception("work after the response failed")


class AfterResponseMiddleware:
    """Work asked for during the view (``run_after_response``) runs once the response has been sent.

    The list is open only while the view runs, so code after a response that no server closed (a test
    harness) never queues into it. The work runs when the response is closed, which the WSGI server
    does once the body is sent (the test client before it returns the response): the response's
    ``close()`` first does Django's own work, then this work, then the database connections are tidied
    again as at the end of a request (``close_old_connections``).
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        pending: list[Callable[[], object]] = []
        token = _after_response.set(pending)
        try:
            response = self.get_response(request)
        finally:
            _after_response.reset(token)
        if pending:
            close = response.close

            def close_then_run() -> None:
                close()
                _run_pending(pending)
                close_old_connections()

            response.close = close_then_run
        return response
