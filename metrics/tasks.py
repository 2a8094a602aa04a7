"""Celery tasks of the metrics app: thin wrappers around services."""

from __future__ import annotations

from celery import shared_task

from metrics.services import submission_evaluate, submissions_sweep


@shared_task(name="metrics.submission_evaluate", acks_late=True)
def submission_evaluate_task(submission_id: int) -> str:
    """Evaluate a large submission in the background (its page shows the progress)."""
    evaluation = submission_evaluate(submission_id=submission_id)
    return "missing" if evaluation is None else f"evaluation {evaluation.pk}"


@shared_task(name="metrics.instrument_card")
def instrument_card_task(study_id: int) -> str:
    """Compute (or refresh) a study's instrument card."""
    from collection.models import Study
    from metrics.services import instrument_card

    study = Study.objects.filter(pk=study_id).first()
    if study is None:
        return "missing"
    instrument_card(study=study)
    return f"card of {study.slug}"


@shared_task(name="metrics.submissions_sweep")
def submissions_sweep_task() -> int:
    """Beat: start again the evaluations whose task was never sent."""
    return submissions_sweep()
