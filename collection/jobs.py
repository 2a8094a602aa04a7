"""Jobs: pool operations too long for a request (generating many items), run by a Celery task.

The job's row records its kind, parameters and outcome; while it runs, its progress is in the cache
(the task writes the items in one transaction, so rows written inside it would not show until the end).
A job whose task was never sent is sent again by the ballots sweep.
"""

from __future__ import annotations

import dataclasses
import logging
from datetime import datetime

from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from collection import limits
from collection.models import Study, StudyJob
from collection.pools import (
    ImportReport,
    items_generate,
    items_generation_size,
    require_draft,
    require_no_job,
)
from common.errors import ServiceError, StudyStateError
from common.tasks import enqueue_each, enqueue_on_commit

logger = logging.getLogger(__name__)

STUDY_JOB_TASK = "collection.study_job_run"
JOB_PROGRESS_KEY = "study-job-progress:{}"


def items_generate_start(
    *, study: Study, max_per_area: int | None = None, user=None
) -> ImportReport | StudyJob:
    """Generate the items now when they are few (``limits.SYNC_GENERATION_ITEMS``), else as a job:
    returns the report, or the job whose progress ``study_job_done_count`` reads."""
    require_draft(study, "generate items")
    require_no_job(study, "generate items")
    total = items_generation_size(study=study, max_per_area=max_per_area)
    if total <= limits.SYNC_GENERATION_ITEMS:
        return items_generate(study=study, max_per_area=max_per_area)
    return _study_job_start(
        study=study,
        kind=StudyJob.Kind.ITEMS_GENERATE,
        parameters={"max_per_area": max_per_area},
        total=total,
        user=user,
    )


@transaction.atomic
def _study_job_start(*, study: Study, kind: str, parameters: dict, total: int, user=None) -> StudyJob:
    Study.objects.select_for_update().filter(pk=study.pk).first()  # one job start at a time per study
    running = study.jobs.filter(status__in=(StudyJob.Status.PENDING, StudyJob.Status.RUNNING)).first()
    if running is not None:
        raise StudyStateError(
            f"the study is already busy: {running.get_kind_display()} (job {running.pk}) has not finished; "
            "wait for it (GET its progress) and try again"
        )
    job = StudyJob.objects.create(
        study=study,
        kind=kind,
        parameters=parameters,
        total=total,
        requested_by=user if user and user.pk else None,
    )
    enqueue_on_commit(STUDY_JOB_TASK, job.pk, recovered_by="the ballots sweep (pending jobs)")
    return job


def study_job_run(*, job_id: int) -> StudyJob | None:
    """Run a stored job (idempotent: a finished job is left as it is); returns it, or None if missing."""
    job = StudyJob.objects.select_related("study").filter(pk=job_id).first()
    if job is None:
        logger.warning("study job %s does not exist", job_id)
        return None
    if job.finished:
        return job
    StudyJob.objects.filter(pk=job_id).update(status=StudyJob.Status.RUNNING)

    def progress(done: int, total: int) -> None:
        try:
            cache.set(JOB_PROGRESS_KEY.format(job_id), done, 3600)
        except Exception:  # progress is a courtesy; the job goes on without it
            logger.warning("progress of job %s not stored: the cache does not answer", job_id)

    try:
        if job.kind == StudyJob.Kind.ITEMS_GENERATE:
            report = items_generate(
                study=job.study, max_per_area=job.parameters.get("max_per_area"), progress=progress
            )
            result = dataclasses.asdict(report)
        else:
            raise ServiceError(f"unknown job kind {job.kind!r}")
    except ServiceError as exc:
        StudyJob.objects.filter(pk=job_id).update(
            status=StudyJob.Status.FAILED, error=exc.message, finished_at=timezone.now()
        )
    except Exception as exc:
        StudyJob.objects.filter(pk=job_id).update(
            status=StudyJob.Status.FAILED, error=f"an unexpected error: {exc}", finished_at=timezone.now()
        )
        raise
    else:
        StudyJob.objects.filter(pk=job_id).update(
            status=StudyJob.Status.DONE, result=result, finished_at=timezone.now()
        )
    job.refresh_from_db()
    return job


def study_job_done_count(job: StudyJob) -> int:
    """Units done: the total once finished, else the progress the task last reported."""
    if job.status == StudyJob.Status.DONE:
        return job.total
    try:
        return int(cache.get(JOB_PROGRESS_KEY.format(job.pk)) or 0)
    except Exception:
        return 0


def study_jobs_restart(*, now: datetime | None = None, stale_seconds: int = 60) -> int:
    """Send again the jobs still pending after ``stale_seconds`` (their task was never sent)."""
    pending = StudyJob.stale_pending(now=now or timezone.now(), stale_seconds=stale_seconds)
    return enqueue_each(STUDY_JOB_TASK, pending, recovered_by="the next ballots sweep")
