"""Services of the scoring app: closing ballots, the final ranking, and simulations.

``ballot_close`` turns the votes of a ballot into x, y, ȳ with the engine (``scoring.borda``),
stores them, selects the survivors and opens the next ballot, or finishes the study.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from collection.models import Assignment, Ballot, Comparison, Item, Study
from collection.services import ballot_open, leases_expire, study_jobs_restart, study_plan
from common.errors import ServiceError
from common.tasks import enqueue, enqueue_on_commit
from scoring.borda import ballot_tallies, final_order, score_ballot, select_survivors
from scoring.datafiles import EMBEDDING_SIMILARITY_CSV, read_similarity_csv
from scoring.models import ItemScore
from scoring.plan import ballot_plan
from scoring.simulation import SimulationConfig, simulate_repetition, summarize, underlying_similarity

logger = logging.getLogger(__name__)

_OUTCOME = {"left": 1.0, "right": 0.0, "tie": 0.5}

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


# --- ballots -------------------------------------------------------------------------------------


def ballot_close(*, ballot_id: int, now: datetime | None = None):
    """Close a ballot: score it (Eq. 1, 5, 6), keep the survivors, open the next ballot or finish.

    Idempotent and safe under races: the ballot row is locked (``SELECT … FOR UPDATE`` on PostgreSQL,
    an IMMEDIATE transaction on SQLite) and a closed ballot is left alone, so two workers, or a rerun
    after a crash half-way (whose transaction was rolled back), give the same rows and exactly one
    next ballot. Comparisons not voted by then are cancelled, with their leases.
    Returns the ballot, or None if it does not exist.
    """
    with transaction.atomic():
        ballot = Ballot.objects.select_for_update().select_related("study").filter(pk=ballot_id).first()
        if ballot is None:
            logger.warning("ballot %s does not exist; nothing to close", ballot_id)
            return None
        if ballot.status == Ballot.Status.CLOSED:
            return ballot
        # The time is taken once the row is locked: a vote committed while this close waited for the
        # lock must not be stamped after the close that counted it.
        now = now or timezone.now()
        study = ballot.study
        item_count = study.items.count()
        in_ballot_indices = np.fromiter(ballot.items.values_list("index", flat=True), dtype=np.int64)
        in_ballot = np.zeros(item_count, dtype=bool)
        in_ballot[in_ballot_indices] = True

        votes = list(ballot.votes.values_list("left_item__index", "right_item__index", "choice"))
        left = np.fromiter((v[0] for v in votes), dtype=np.int64, count=len(votes))
        right = np.fromiter((v[1] for v in votes), dtype=np.int64, count=len(votes))
        outcome = np.fromiter((_OUTCOME[v[2]] for v in votes), dtype=np.float64, count=len(votes))
        wins, ties, appearances = ballot_tallies(left, right, outcome, item_count)

        previous_score = previous_measured = None
        if ballot.number > 1:
            previous_score = np.full(item_count, np.nan)
            previous_measured = np.zeros(item_count, dtype=np.int64)
            rows = ItemScore.objects.filter(
                ballot__study=study, ballot__number=ballot.number - 1
            ).values_list("item__index", "score", "measured")
            for index, score, measured in rows:
                previous_score[index] = np.nan if score is None else score
                previous_measured[index] = measured
        scores = score_ballot(
            ballot=ballot.number,
            wins=wins,
            ties=ties,
            appearances=appearances,
            previous_score=previous_score,
            previous_measured=previous_measured,
        )

        last = ballot.number >= study.ballot_count
        survivors = np.empty(0, dtype=np.int64)
        if not last:
            sizes = study_plan(study=study, item_count=item_count).sizes
            survivors = np.sort(select_survivors(scores.score, in_ballot, sizes[ballot.number]))
        survived = np.zeros(item_count, dtype=bool)
        survived[survivors] = True

        item_ids = dict(study.items.values_list("index", "id"))
        ItemScore.objects.bulk_create(
            [
                ItemScore(
                    ballot=ballot,
                    item_id=item_ids[int(i)],
                    wins=int(wins[i]),
                    ties=int(ties[i]),
                    appearances=int(appearances[i]),
                    win_ratio=_finite_or_none(scores.win_ratio[i]),
                    rescaled_score=_finite_or_none(scores.rescaled_score[i]),
                    score=_finite_or_none(scores.score[i]),
                    measured=int(scores.measured[i]),
                    survived=bool(survived[i]),
                )
                for i in in_ballot_indices
            ],
            batch_size=2000,
        )
        Assignment.objects.filter(comparison__ballot=ballot, status=Assignment.Status.ACTIVE).update(
            status=Assignment.Status.CANCELLED
        )
        Comparison.objects.filter(ballot=ballot).exclude(status=Comparison.Status.VOTED).update(
            status=Comparison.Status.CANCELLED, lease_expires_at=None
        )
        ballot.status = Ballot.Status.CLOSED
        ballot.closed_at = now
        ballot.rescale_slope = scores.rescale_slope if ballot.number > 1 else None
        ballot.save(update_fields=["status", "closed_at", "rescale_slope"])
        logger.info(
            "closed %s: %d votes of %d comparisons, b = %.4f",
            ballot,
            len(votes),
            ballot.comparison_count,
            scores.rescale_slope,
        )

        if not last:
            ballot_open(study=study, number=ballot.number + 1, item_indices=survivors, now=now)
        else:
            _study_finish(study=study, item_count=item_count, now=now)
        return ballot


def _study_finish(*, study: Study, item_count: int, now: datetime) -> None:
    """Store every item's final score ȳ, its last ballot and its place in the final ranking."""
    score = np.full(item_count, np.nan)
    last_ballot = np.zeros(item_count, dtype=np.int64)
    rows = (
        ItemScore.objects.filter(ballot__study=study)
        .order_by("ballot__number")
        .values_list("item__index", "ballot__number", "score")
    )
    for index, number, value in rows:  # later ballots overwrite earlier ones
        score[index] = np.nan if value is None else value
        last_ballot[index] = number
    order = final_order(score, last_ballot)
    rank = np.empty(item_count, dtype=np.int64)
    rank[order] = np.arange(1, item_count + 1)
    items = list(study.items.all())
    for item in items:
        item.final_score = _finite_or_none(score[item.index])
        item.final_rank = int(rank[item.index])
        item.last_ballot = int(last_ballot[item.index]) or None
    Item.objects.bulk_update(items, ["final_score", "final_rank", "last_ballot"], batch_size=2000)
    study.status = Study.Status.FINISHED
    study.finished_at = now
    study.save(update_fields=["status", "finished_at"])
    logger.info("finished %s", study)


def ballots_sweep(*, now: datetime | None = None) -> dict:
    """Celery beat's housekeeping: expire leases, close ballots past their deadline or fully voted.

    Returns the counts, for the log.
    """
    now = now or timezone.now()
    expired = leases_expire(now=now)
    due = list(
        Ballot.objects.filter(status=Ballot.Status.OPEN, deadline__lte=now).values_list("pk", flat=True)
    )
    complete = list(
        Ballot.objects.filter(
            status=Ballot.Status.OPEN, votes_recorded__gte=F("comparison_count")
        ).values_list("pk", flat=True)
    )
    closed = 0
    for ballot_id in sorted(set(due) | set(complete)):
        ballot_close(ballot_id=ballot_id, now=now)
        closed += 1
    return {
        "leases_expired": expired,
        "ballots_closed": closed,
        "simulations_restarted": _simulations_restart(now),
        "jobs_restarted": study_jobs_restart(now=now),
    }


def _simulations_restart(now: datetime, stale_seconds: int = 60) -> int:
    """Send again the simulations still pending after ``stale_seconds`` (their task was never sent)."""
    from scoring.models import SimulationRun
    from scoring.tasks import simulation_run_task

    pending = list(
        SimulationRun.objects.filter(
            status=SimulationRun.Status.PENDING, created_at__lte=now - timedelta(seconds=stale_seconds)
        ).values_list("pk", flat=True)
    )
    for run_id in pending:
        enqueue(simulation_run_task, run_id, recovered_by="the next ballots sweep")
    return len(pending)


def _finite_or_none(value) -> float | None:
    value = float(value)
    return value if np.isfinite(value) else None


# --- simulations of a study's plan ---------------------------------------------------------------


def simulation_request(*, study: Study, distribution: str = "exponential", repetitions: int = 20, user=None):
    """Store a simulation of the study's plan and start it after commit (admin "simulate this plan")."""
    from scoring.models import SimulationRun
    from scoring.tasks import simulation_run_task

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
    enqueue_on_commit(simulation_run_task, run.pk, recovered_by="the ballots sweep (pending simulations)")
    return run


def simulation_run_execute(*, run_id: int) -> None:
    """Run a stored simulation, saving progress after every repetition; idempotent once done."""
    from scoring.models import SimulationRun

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
