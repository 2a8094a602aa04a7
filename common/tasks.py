"""Starting Celery tasks from a request without ever failing the request that asked for them.

A task enqueued after commit runs once the data it needs is committed. If the broker is down, the
request that committed (a vote, say) has already succeeded: answering it with a 500 would tell the
client that a stored vote was lost. So a failed enqueue is logged, not raised; every task started this
way has a sweep (Celery beat) that finds the work and does it later.
"""

from __future__ import annotations

import logging

from django.db import transaction

logger = logging.getLogger(__name__)


def enqueue(task, *args, recovered_by: str) -> bool:
    """Send ``task(*args)`` to the broker now; on any failure log it and return False.

    ``recovered_by`` names what picks the work up if this message is lost (for the log). The broker's
    connection and publish timeouts (settings, ``CELERY_BROKER_*``) bound how long this can wait.
    """
    try:
        task.apply_async(args=args, retry=False, ignore_result=True)
    except Exception:  # the broker's errors have no common base class (kombu, redis, socket, eager task)
        logger.exception("could not start %s%r; %s will pick it up", task.name, args, recovered_by)
        return False
    return True


def enqueue_on_commit(task, *args, recovered_by: str) -> None:
    """``enqueue`` once the current transaction commits (at once outside a transaction)."""
    transaction.on_commit(lambda: enqueue(task, *args, recovered_by=recovered_by))
