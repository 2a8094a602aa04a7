"""Starting Celery tasks from a request without ever failing the request that asked for them.

A task enqueued after commit runs once the data it needs is committed. If the broker is down, the
request that committed (a vote, say) has already succeeded: answering it with a 500 would tell the
client that a stored vote was lost. So a failed enqueue is logged, not raised; every task started this
way has a sweep (Celery beat) that finds the work and does it later.

Services name the task they start (``"scoring.ballot_close"``) and never import a tasks module: tasks
import services, so an import the other way would be a cycle. The name is looked up in the Celery
app's registry, as a worker looks up a message's task, in eager mode too.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from celery import current_app
from django.db import transaction

logger = logging.getLogger(__name__)


def task_named(name: str):
    """The task registered under ``name``.

    Every installed app's ``tasks`` module is imported on the first look-up of a name not registered
    yet (Celery's autodiscovery, which a worker runs at start). An unknown name is a KeyError.
    """
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


def enqueue_on_commit(task, *args, recovered_by: str) -> None:
    """``enqueue`` once the current transaction commits (at once outside a transaction).

    The name is resolved now, so that a name no task has fails where it is written, not after commit.
    """
    task = task_named(task) if isinstance(task, str) else task
    transaction.on_commit(lambda: enqueue(task, *args, recovered_by=recovered_by))


def enqueue_each(task, ids: Iterable[int], *, recovered_by: str) -> int:
    """``enqueue(task, id)`` for every id (the sweeps' restart of work whose task was never sent);
    returns how many."""
    ids = list(ids)
    for row_id in ids:
        enqueue(task, row_id, recovered_by=recovered_by)
    return len(ids)
