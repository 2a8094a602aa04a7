"""Celery tasks of the scoring app: thin wrappers around services (ids in, look up, call, log)."""

from __future__ import annotations

import logging

from celery import shared_task
from django.utils import timezone

from collection.lifecycle import ballots_sweep
from collection.models import Study
from scoring.exclusion import exclusion_rules_apply
from scoring.live import live_samples_take
from scoring.planning import plan_search_execute, plan_searches_restart
from scoring.services import simulation_run, simulation_run_execute, simulations_restart
from scoring.side_by_side import study_model_scores
from scoring.simulation import SimulationConfig

logger = logging.getLogger(__name__)


@shared_task(bind=True, name="scoring.simulate")
def simulate(self, parameters: dict, repetitions: int = 50, seed: int = 0) -> dict:
    """Run ``simulation_run`` for a ``SimulationConfig`` given as a dict; returns its JSON result.

    Progress (repetitions done / total) is published as the task state ``PROGRESS`` when a result
    backend is configured.
    """

    def report(done: int, total: int) -> None:
        if not self.request.is_eager and self.request.id:
            self.update_state(state="PROGRESS", meta={"done": done, "total": total})

    return simulation_run(
        config=SimulationConfig(**parameters), repetitions=repetitions, seed=seed, progress=report
    )


@shared_task(name="scoring.ballots_sweep")
def ballots_sweep_task() -> dict:
    """Beat: expire leases; close ballots past their deadline or with every comparison voted; send
    again the jobs and simulations whose task was never sent."""
    now = timezone.now()
    counts = ballots_sweep(now=now)
    counts["simulations_restarted"] = simulations_restart(now=now)
    counts["plan_searches_restarted"] = plan_searches_restart(now=now)
    if any(counts.values()):
        logger.info("sweep: %s", counts)
    return counts


@shared_task(name="scoring.simulation_run")
def simulation_run_task(run_id: int) -> None:
    """Run a stored ``SimulationRun`` (admin action "simulate this plan"), saving progress as it goes."""
    simulation_run_execute(run_id=run_id)


@shared_task(name="scoring.exclusion_rules_apply")
def exclusion_rules_apply_task(study_id: int) -> str:
    """After a close: exclude the annotators the study's quality thresholds flag (idempotent)."""
    study = Study.objects.filter(pk=study_id).first()
    if study is None:
        logger.warning("study %s does not exist; no exclusion rules to apply", study_id)
        return "missing"
    if not study.exclude_flagged_annotators:
        return "off"
    return f"{len(exclusion_rules_apply(study=study))} excluded"


@shared_task(name="scoring.plan_search_run")
def plan_search_run_task(search_id: int) -> None:
    """Run a stored ``PlanSearch`` (admin "plan from a target"), saving progress as it goes."""
    plan_search_execute(search_id=search_id)


@shared_task(name="scoring.live_samples_take")
def live_samples_take_task() -> int:
    """Beat, once a minute: a sample of each running study's votes for its live view (one a minute at most,
    whoever writes it first: this task or a read of the live view)."""
    return live_samples_take()


@shared_task(name="scoring.side_by_side")
def side_by_side_task(study_id: int) -> str:
    """Every score model's scores of the study's items, kept in the cache for the results page (idempotent)."""
    study = Study.objects.filter(pk=study_id).first()
    if study is None:
        logger.warning("study %s does not exist; no side-by-side to compute", study_id)
        return "missing"
    produced = study_model_scores(study=study)
    return f"{len(produced.fitted)} models"
