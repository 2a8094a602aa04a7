"""Celery tasks of the collection app: thin wrappers around services (ids in, look up, call, log).

Their names are the ones queued messages and the beat schedule carry; ``scoring.ballot_close`` keeps
the name it had when the close lived in the scoring app.
"""

from __future__ import annotations

import time

from celery import shared_task
from django.utils import timezone

from collection.jobs import study_job_run
from collection.lifecycle import ballot_close
from common.observability import BALLOT_CLOSE_SECONDS


@shared_task(name="collection.study_job_run", acks_late=True)
def study_job_run_task(job_id: int) -> str:
    """Run a study's long job (generating many items); idempotent once the job has finished."""
    job = study_job_run(job_id=job_id)
    return "missing" if job is None else f"job {job.pk} {job.status}"


@shared_task(name="scoring.ballot_close", acks_late=True)
def ballot_close_task(ballot_id: int) -> str:
    """Close a ballot that is due (idempotent: a closed ballot is left as it is, and one neither fully
    voted nor past its deadline is left open); its duration goes to /metrics."""
    called_at, started = timezone.now(), time.perf_counter()
    ballot = ballot_close(ballot_id=ballot_id, when_due=True)
    # The close stamps closed_at after it has the ballot's lock, so a ballot closed before this call
    # has an earlier closed_at: that was a repeated message, which did no work.
    if ballot is None:
        outcome = "missing"
    elif ballot.status == ballot.Status.OPEN:
        outcome = "not_due"
    else:
        outcome = "closed" if ballot.closed_at >= called_at else "already_closed"
    BALLOT_CLOSE_SECONDS.labels(outcome).observe(time.perf_counter() - started)
    return "missing" if ballot is None else f"{ballot} {ballot.status}"
