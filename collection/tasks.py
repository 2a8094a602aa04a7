"""Celery tasks of the collection app: thin wrappers around services (ids in, look up, call, log)."""

from __future__ import annotations

from celery import shared_task

from collection.services import study_job_run


@shared_task(name="collection.study_job_run", acks_late=True)
def study_job_run_task(job_id: int) -> str:
    """Run a study's long job (generating many items); idempotent once the job has finished."""
    job = study_job_run(job_id=job_id)
    return "missing" if job is None else f"job {job.pk} {job.status}"
