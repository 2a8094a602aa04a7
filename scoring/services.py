"""Services of the scoring app: simulations of the protocol (Table 2 of the paper) and of a study's plan.

The close of a ballot, which scores its votes with ``scoring.borda``, is the collection's
(``collection.lifecycle``): it is a step of the ballot state machine.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime
from pathlib import Path

import numpy as np
from django.utils import timezone

from collection.models import Study
from collection.studies import study_plan
from common.errors import ServiceError
from common.tasks import enqueue_each, enqueue_on_commit
from scoring.datafiles import EMBEDDING_SIMILARITY_CSV, read_similarity_csv
from scoring.models import SimulationRun
from scoring.plan import ballot_plan
from scoring.simulation import SimulationConfig, simulate_repetition, summarize, underlying_similarity

logger = logging.getLogger(__name__)

SIMULATION_RUN_TASK = "scoring.simulation_run"

ProgressCallback = Callable[[int, int], None]


def simulation_run(
    *,
    config: SimulationConfig,
    repetitions: int,
    seed: int,
    similarity_file: Path | str | None = None,
    jobs: int = 1,
    progress: ProgressCallback | None = None,
) -> dict:
    """Table 2 of Lombardo et al. for one configuration: uniform and adaptive, ``repetitions`` times.

    Repetition r draws from ``SeedSequence(seed).spawn(repetitions)[r]``, so the result does not
    depend on ``jobs``. ``progress(done, total)`` is called after every repetition.
    """
    if repetitions < 1:
        raise ValueError(f"repetitions must be at least 1, got {repetitions}")
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    started = time.perf_counter()
    values = None
    if config.distribution == "file":
        values = read_similarity_csv(similarity_file or EMBEDDING_SIMILARITY_CSV)
        if values.size != config.item_count:
            raise ValueError(
                f"the similarity file holds {values.size} items but item_count is {config.item_count}"
            )
    elif similarity_file is not None:
        raise ValueError("a similarity file is only read with the 'file' distribution")
    similarity = underlying_similarity(config.distribution, config.item_count, values)
    seeds = np.random.SeedSequence(seed).spawn(repetitions)

    results: list[dict] = []
    if jobs == 1:
        for seed_sequence in seeds:
            results.append(simulate_repetition(config, similarity, seed_sequence))
            if progress:
                progress(len(results), repetitions)
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            for result in pool.map(
                simulate_repetition, [config] * repetitions, [similarity] * repetitions, seeds
            ):
                results.append(result)
                if progress:
                    progress(len(results), repetitions)

    plan = ballot_plan(
        item_count=config.item_count,
        ballot_count=config.ballot_count,
        keep_fraction=config.keep_fraction,
        appearances=config.appearances,
    )
    parameters = config.as_dict()
    parameters.update(
        repetitions=repetitions,
        seed=seed,
        similarity_file=str(similarity_file or EMBEDDING_SIMILARITY_CSV.name)
        if config.distribution == "file"
        else None,
        ballot_sizes=list(plan.sizes),
        total_comparisons=plan.total_comparisons,
        uniform_appearances=plan.uniform_appearances,
        top_appearances=plan.top_appearances,
    )
    summary = summarize(results)
    return {
        "parameters": parameters,
        "uniform": summary["uniform"],
        "adaptive": summary["adaptive"],
        "seconds": round(time.perf_counter() - started, 3),
    }


def simulations_restart(*, now: datetime | None = None, stale_seconds: int = 60) -> int:
    """Send again the simulations still pending after ``stale_seconds`` (their task was never sent)."""
    pending = SimulationRun.stale_pending(now=now or timezone.now(), stale_seconds=stale_seconds)
    return enqueue_each(SIMULATION_RUN_TASK, pending, recovered_by="the next ballots sweep")


# --- simulations of a study's plan ---------------------------------------------------------------


def simulation_request(*, study: Study, distribution: str = "exponential", repetitions: int = 20, user=None):
    """Store a simulation of the study's plan and start it after commit (admin "simulate this plan")."""
    plan = study_plan(study=study)
    config = SimulationConfig(
        distribution=distribution,
        item_count=plan.item_count,
        ballot_count=plan.ballot_count,
        keep_fraction=plan.keep_fraction,
        appearances=plan.appearances,
    )
    if distribution == "file":
        values = read_similarity_csv(EMBEDDING_SIMILARITY_CSV)
        if values.size != plan.item_count:
            raise ServiceError(
                f"the shipped embedding similarities describe {values.size} items; this study has "
                f"{plan.item_count}: choose the exponential or power-law distribution"
            )
    run = SimulationRun.objects.create(
        study=study, parameters=config.as_dict(), repetitions=repetitions, requested_by=user
    )
    enqueue_on_commit(SIMULATION_RUN_TASK, run.pk, recovered_by="the ballots sweep (pending simulations)")
    return run


def simulation_run_execute(*, run_id: int) -> None:
    """Run a stored simulation, saving progress after every repetition; idempotent once done."""
    run = SimulationRun.objects.filter(pk=run_id).first()
    if run is None:
        logger.warning("simulation run %s does not exist", run_id)
        return
    if run.status == SimulationRun.Status.DONE:
        return
    SimulationRun.objects.filter(pk=run_id).update(status=SimulationRun.Status.RUNNING, done=0, error="")

    def progress(done: int, total: int) -> None:
        SimulationRun.objects.filter(pk=run_id).update(done=done)

    try:
        result = simulation_run(
            config=SimulationConfig(**run.parameters),
            repetitions=run.repetitions,
            seed=run.seed,
            progress=progress,
        )
    except Exception as exc:  # recorded for the researcher, then re-raised for the worker's log
        SimulationRun.objects.filter(pk=run_id).update(
            status=SimulationRun.Status.FAILED, error=str(exc), finished_at=timezone.now()
        )
        raise
    SimulationRun.objects.filter(pk=run_id).update(
        status=SimulationRun.Status.DONE, result=result, finished_at=timezone.now()
    )
