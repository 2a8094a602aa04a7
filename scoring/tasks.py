"""Celery tasks of the scoring app: thin wrappers around services."""

from __future__ import annotations

from celery import shared_task

from scoring.services import simulation_run
from scoring.simulation import SimulationConfig


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
