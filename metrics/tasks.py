"""Celery tasks of the metrics app: thin wrappers around services, started by name (``common.tasks``)."""

from __future__ import annotations

import logging

from celery import shared_task

from collection.models import Study
from metrics.instrument import instrument_card
from metrics.services import submission_evaluate, submission_standings, submissions_sweep

logger = logging.getLogger(__name__)


@shared_task(name="metrics.submission_evaluate", acks_late=True)
def submission_evaluate_task(submission_id: int) -> str:
    """Evaluate a large submission in the background (its page shows the progress)."""
    evaluation = submission_evaluate(submission_id=submission_id)
    return "missing" if evaluation is None else f"evaluation {evaluation.pk}"


@shared_task(name="metrics.submission_standings", acks_late=True)
def submission_standings_task(submission_id: int) -> int:
    """Store an evaluated submission's standings at the leaderboard's other n0."""
    return submission_standings(submission_id=submission_id)


@shared_task(name="metrics.instrument_card")
def instrument_card_task(study_id: int) -> str:
    """Compute (or refresh) a study's instrument card: enqueued when the study or a replication finishes."""
    study = Study.objects.filter(pk=study_id).first()
    if study is None:
        logger.warning("study %s does not exist; no card", study_id)
        return "missing"
    instrument_card(study=study)
    return f"card of {study.slug}"


@shared_task(name="metrics.submissions_sweep")
def submissions_sweep_task() -> int:
    """Beat: start again the evaluations and standings whose task was never sent."""
    return submissions_sweep()
