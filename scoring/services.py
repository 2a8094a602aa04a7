"""Services of the scoring app: simulations of the protocol (Table 2 of the paper) and of a study's plan,
one simulation per semantic area for a study ranked per area.

The close of a ballot, which scores its votes with ``scoring.borda``, is the collection's
(``collection.lifecycle``): it is a step of the ballot state machine.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime
from pathlib import Path

import numpy as np
from django.utils import timezone

from collection.models import Study
from collection.studies import study_area_plans, study_plan
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
    similarity = _similarity(config, similarity_file)
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

    parameters = _run_parameters(config, repetitions=repetitions, seed=seed, similarity_file=similarity_file)
    summary = summarize(results)
    return {
        "parameters": parameters,
        "uniform": summary["uniform"],
        "adaptive": summary["adaptive"],
        "seconds": round(time.perf_counter() - started, 3),
    }


def simulation_run_by_area(
    *,
    configs: Sequence[tuple[str, SimulationConfig]],
    repetitions: int,
    seed: int,
    progress: ProgressCallback | None = None,
) -> dict:
    """One simulation per semantic area of a study ranked per area (§2.1-2.2), each on its area's plan.

    ``configs`` holds (area name, the area's ``SimulationConfig``: its N_a items, n_b, α and M) in a
    fixed order. Each area is Table 2 for its own plan: the uniform and the adaptive protocol at the
    area's N_comp, scored against the area's own true ranking. The area at position i draws repetition r
    from ``SeedSequence(seed).spawn(len(configs))[i].spawn(repetitions)[r]`` (spawn key (i, r)), so an
    area's figures are those of ``simulate_repetition`` on its config with those seeds whatever the
    other areas are. Each repetition simulates every area; ``progress(done, total)`` is called after
    every repetition, so the progress is over all the areas. Every area has a crowd of its own
    ``voter_count`` simulated voters: in a real study the same crowd judges every area, but an area's
    ranking depends only on the votes within it, so its predicted figures are the same.
    """
    if repetitions < 1:
        raise ValueError(f"repetitions must be at least 1, got {repetitions}")
    if not configs:
        raise ValueError("a simulation per area needs at least one area")
    started = time.perf_counter()
    similarities = [_similarity(config, None) for _, config in configs]
    seeds = [
        np.random.SeedSequence(seed, spawn_key=(position,)).spawn(repetitions)
        for position in range(len(configs))
    ]
    results: list[list[dict]] = [[] for _ in configs]
    for repetition in range(repetitions):
        for position, (_, config) in enumerate(configs):
            results[position].append(
                simulate_repetition(config, similarities[position], seeds[position][repetition])
            )
        if progress:
            progress(repetition + 1, repetitions)

    areas = []
    for position, (name, config) in enumerate(configs):
        summary = summarize(results[position])
        parameters = _run_parameters(config, repetitions=repetitions, seed=seed, similarity_file=None)
        parameters["seed_spawn_key"] = [position]
        areas.append(
            {
                "area": name,
                "parameters": parameters,
                "uniform": summary["uniform"],
                "adaptive": summary["adaptive"],
            }
        )
    first = configs[0][1]
    return {
        "ranking_scope": "per_area",
        "parameters": {
            "distribution": first.distribution,
            "repetitions": repetitions,
            "seed": seed,
            "ballot_count": first.ballot_count,
            "keep_fraction": first.keep_fraction,
            "appearances": first.appearances,
            "voter_count": first.voter_count,
            "area_count": len(configs),
            "item_count": sum(area["parameters"]["item_count"] for area in areas),
            "total_comparisons": sum(area["parameters"]["total_comparisons"] for area in areas),
        },
        "areas": areas,
        "seconds": round(time.perf_counter() - started, 3),
    }


def _similarity(config: SimulationConfig, similarity_file: Path | str | None) -> np.ndarray:
    """The underlying similarities z_i of the config's items (§4.1.1), read from the file for ``file``."""
    values = None
    if config.distribution == "file":
        values = read_similarity_csv(similarity_file or EMBEDDING_SIMILARITY_CSV)
        if values.size != config.item_count:
            raise ValueError(
                f"the similarity file holds {values.size} items but item_count is {config.item_count}"
            )
    elif similarity_file is not None:
        raise ValueError("a similarity file is only read with the 'file' distribution")
    return underlying_similarity(config.distribution, config.item_count, values)


def _run_parameters(
    config: SimulationConfig, *, repetitions: int, seed: int, similarity_file: Path | str | None
) -> dict:
    """The config with the run's repetitions and seed and the plan's figures (Eq. 2-4), for the report."""
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
    return parameters


def simulations_restart(*, now: datetime | None = None, stale_seconds: int = 60) -> int:
    """Send again the simulations still pending after ``stale_seconds`` (their task was never sent)."""
    pending = SimulationRun.stale_pending(now=now or timezone.now(), stale_seconds=stale_seconds)
    return enqueue_each(SIMULATION_RUN_TASK, pending, recovered_by="the next ballots sweep")


# --- simulations of a study's plan ---------------------------------------------------------------


def simulation_request(*, study: Study, distribution: str = "exponential", repetitions: int = 20, user=None):
    """Store a simulation of the study's plan and start it after commit (admin "simulate this plan").

    A study ranked per area gets one simulation per area, each on the area's plan
    (``simulation_run_by_area``); a joint study one simulation of its plan over all its items.
    """
    if study.ranking_scope == Study.RankingScope.PER_AREA:
        parameters = _area_simulation_parameters(study=study, distribution=distribution)
    else:
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
        parameters = config.as_dict()
    run = SimulationRun.objects.create(
        study=study, parameters=parameters, repetitions=repetitions, requested_by=user
    )
    enqueue_on_commit(SIMULATION_RUN_TASK, run.pk, recovered_by="the ballots sweep (pending simulations)")
    return run


def _area_simulation_parameters(*, study: Study, distribution: str) -> dict:
    """The stored parameters of a per-area simulation: one ``SimulationConfig`` per area, by area name.

    A list, not a mapping, because the order fixes each area's seeds (``simulation_run_by_area``) and
    PostgreSQL's jsonb does not keep the order of keys.
    """
    plans = study_area_plans(study=study)
    if distribution == "file":
        values = read_similarity_csv(EMBEDDING_SIMILARITY_CSV)
        other = [
            f"{name!r} ({plan.item_count})"
            for name, plan in plans.by_area.items()
            if plan.item_count != values.size
        ]
        if other:
            raise ServiceError(
                f"the shipped embedding similarities describe {values.size} items; ranked per area, each area "
                f"is simulated on its own and these have other sizes: {', '.join(other)}: choose the "
                "exponential or power-law distribution"
            )
    areas = [
        {
            "area": name,
            "config": SimulationConfig(
                distribution=distribution,
                item_count=plan.item_count,
                ballot_count=plan.ballot_count,
                keep_fraction=plan.keep_fraction,
                appearances=plan.appearances,
            ).as_dict(),
        }
        for name, plan in plans.by_area.items()
    ]
    return {
        "ranking_scope": Study.RankingScope.PER_AREA.value,
        "distribution": distribution,
        "item_count": plans.total.item_count,
        "areas": areas,
    }


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
        if run.parameters.get("ranking_scope") == Study.RankingScope.PER_AREA:
            result = simulation_run_by_area(
                configs=[
                    (area["area"], SimulationConfig(**area["config"])) for area in run.parameters["areas"]
                ],
                repetitions=run.repetitions,
                seed=run.seed,
                progress=progress,
            )
        else:
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
