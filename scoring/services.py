"""Services of the scoring app: the work behind commands, tasks and admin actions."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from scoring.datafiles import EMBEDDING_SIMILARITY_CSV, read_similarity_csv
from scoring.plan import ballot_plan
from scoring.simulation import SimulationConfig, simulate_repetition, summarize, underlying_similarity

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
