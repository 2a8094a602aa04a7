"""Celery tasks of the scoring app: thin wrappers around services (ids in, look up, call, log)."""

from __future__ import annotations

import logging

from celery import shared_task
from django.utils import timezone

from scoring.services import ballot_close, ballots_sweep, simulation_run
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


@shared_task(name="scoring.ballot_close", acks_late=True)
def ballot_close_task(ballot_id: int) -> str:
    """Close a ballot (idempotent: a closed ballot is left as it is)."""
    ballot = ballot_close(ballot_id=ballot_id)
    return "missing" if ballot is None else f"{ballot} {ballot.status}"


@shared_task(name="scoring.ballots_sweep")
def ballots_sweep_task() -> dict:
    """Beat: expire leases; close ballots past their deadline or with every comparison voted."""
    counts = ballots_sweep(now=timezone.now())
    if any(counts.values()):
        logger.info("sweep: %s", counts)
    return counts


@shared_task(name="scoring.simulation_run")
def simulation_run_task(run_id: int) -> None:
    """Run a stored ``SimulationRun`` (admin action "simulate this plan"), saving progress as it goes."""
    from scoring.services import simulation_run_execute

    simulation_run_execute(run_id=run_id)
