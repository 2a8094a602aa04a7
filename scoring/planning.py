"""Services of plans from a target precision: search the cheapest plan that reaches a target in simulation
(``scoring.plan_search``), run it for a study as a Celery task, and apply the plan found to a draft."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from datetime import datetime

import numpy as np
from django.utils import timezone

from collection import limits
from collection.models import Study, StudyChange
from collection.studies import study_update
from common.errors import ServiceError
from common.tasks import enqueue_each, enqueue_on_commit
from scoring.datafiles import EMBEDDING_SIMILARITY_CSV, read_similarity_csv
from scoring.models import PlanSearch
from scoring.plan_search import (
    CORRELATIONS,
    STRATEGIES,
    PlanGrid,
    Target,
    figure_summary,
    plan_of,
    search_plan,
    simulated_figures,
)
from scoring.simulation import DISTRIBUTIONS, SimulationConfig, underlying_similarity

logger = logging.getLogger(__name__)

PLAN_SEARCH_TASK = "scoring.plan_search_run"

# The work one search may do: at most MAX_SIMULATIONS plans simulated, each MAX_REPETITIONS times.
DEFAULT_REPETITIONS = 20
MAX_REPETITIONS = 200
DEFAULT_MAX_SIMULATIONS = 300
MAX_SIMULATIONS = 2_000
MAX_VOTERS = 10_000
DEFAULT_NOISE = 0.2  # σ* upper bound of §4.1.1 (the paper's heuristic bound)
DEFAULT_OVERSIGHT = 0.05  # ε upper bound of §4.1.1


def plan_grid() -> PlanGrid:
    """The plans searched, within the project's bounds (``collection.limits``) and §2.7's n_b ≲ 10."""
    return PlanGrid(
        ballot_counts=tuple(range(1, min(10, limits.MAX_BALLOTS) + 1)),
        keep_fractions=(0.3, 0.4, 0.5, 0.6, 0.7),
        appearance_step=2,
        max_appearances=limits.MAX_APPEARANCES,
        max_total_comparisons=limits.MAX_TOTAL_COMPARISONS,
    )


def voter_model(*, item_count: int, noise: float, oversight: float, voter_count: int) -> SimulationConfig:
    """The §4.1 voters: σ*_v drawn from [noise/10, noise], ε_v from [oversight/10, oversight].

    §4.1.1 draws both "from ranges covering one order of magnitude"; the paper's [0.02, 0.2] and
    [0.005, 0.05] are noise 0.2 and oversight 0.05.
    """
    if not (math.isfinite(noise) and 0.0 < noise <= 1.0):
        raise ValueError(
            f"the voter noise σ* must lie in (0, 1] (the paper's heuristic bound is 0.2), got {noise!r}"
        )
    if not (math.isfinite(oversight) and 0.0 <= oversight <= 0.5):
        raise ValueError(
            f"the oversight ε must lie in [0, 0.5] (the paper's bound is 0.05), got {oversight!r}"
        )
    if int(voter_count) != voter_count or not 1 <= voter_count <= MAX_VOTERS:
        raise ValueError(
            f"the number of simulated voters must be from 1 to {MAX_VOTERS:,}, got {voter_count!r}"
        )
    return SimulationConfig(
        item_count=item_count,
        ballot_count=1,
        appearances=2,
        voter_count=int(voter_count),
        nonconformity_min=noise / 10,
        nonconformity_max=noise,
        oversight_min=oversight / 10,
        oversight_max=oversight,
    )


def plan_search_run(
    *,
    item_count: int,
    target: Target,
    distribution: str = "exponential",
    noise: float = DEFAULT_NOISE,
    oversight: float = DEFAULT_OVERSIGHT,
    voter_count: int = 100,
    repetitions: int = DEFAULT_REPETITIONS,
    seed: int = 0,
    max_simulations: int = DEFAULT_MAX_SIMULATIONS,
    strategy: str = "bisect",
    seconds_per_comparison: float = 6.0,
    pay_per_hour: float | None = None,
    currency: str = "",
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """The cheapest plan for ``item_count`` items that reaches ``target`` with the §4.1 voters, as JSON.

    Every plan is simulated ``repetitions`` times on the same voters (seeds from ``SeedSequence(seed)``),
    so the answer is reproducible. Raises ValueError on parameters out of range, saying which.
    """
    started = time.perf_counter()
    if int(item_count) != item_count or not 2 <= item_count <= limits.MAX_ITEMS:
        raise ValueError(f"the number of items must be from 2 to {limits.MAX_ITEMS:,}, got {item_count!r}")
    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"distribution must be one of {', '.join(DISTRIBUTIONS)}, got {distribution!r}")
    if int(repetitions) != repetitions or not 2 <= repetitions <= MAX_REPETITIONS:
        raise ValueError(
            f"repetitions must be from 2 to {MAX_REPETITIONS} (a spread needs two), got {repetitions!r}"
        )
    if int(max_simulations) != max_simulations or not 1 <= max_simulations <= MAX_SIMULATIONS:
        raise ValueError(f"max_simulations must be from 1 to {MAX_SIMULATIONS:,}, got {max_simulations!r}")
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    if not (0 < seconds_per_comparison <= limits.MAX_SECONDS_PER_COMPARISON):
        raise ValueError(limits.SECONDS_MESSAGE)
    if pay_per_hour is not None and not (0 < pay_per_hour <= limits.MAX_PAY_PER_HOUR):
        raise ValueError(limits.PAY_MESSAGE)
    if int(seed) != seed or not 0 <= seed <= limits.MAX_SEED:
        raise ValueError(limits.SEED_MESSAGE)
    model = voter_model(item_count=item_count, noise=noise, oversight=oversight, voter_count=voter_count)
    values = None
    if distribution == "file":
        values = read_similarity_csv(EMBEDDING_SIMILARITY_CSV)
        if values.size != item_count:
            raise ValueError(
                f"the shipped embedding similarities describe {values.size} items, not {item_count}: "
                "choose the exponential or power-law distribution"
            )
    similarity = underlying_similarity(distribution, item_count, values)
    seeds = np.random.SeedSequence(int(seed)).spawn(int(repetitions))
    top_ks = sorted({k for k in (10, target.k) if k is not None and k < item_count})

    def evaluate(candidate):
        return simulated_figures(
            candidate, similarity=similarity, voter_model=model, seeds=seeds, top_ks=top_ks
        )

    grid = plan_grid()
    found = search_plan(
        item_count=item_count,
        target=target,
        evaluate=evaluate,
        grid=grid,
        max_simulations=max_simulations,
        strategy=strategy,
        progress=progress,
    )
    result = {
        "target": {**target.as_dict(), "key": target.key, "label": target.label, "text": target.describe()},
        "parameters": {
            "item_count": item_count,
            "distribution": distribution,
            "noise": noise,
            "oversight": oversight,
            "voter_count": voter_count,
            "repetitions": repetitions,
            "seed": seed,
            "max_simulations": max_simulations,
            "strategy": strategy,
            "seconds_per_comparison": seconds_per_comparison,
            "pay_per_hour": pay_per_hour,
            "currency": currency,
        },
        "reached": found.plan is not None,
        "complete": found.complete,
        "plan": None,
        "figures": [],
        "cost": None,
        "warnings": [],
        "searched": {
            "strategy": found.strategy,
            "lines": found.line_count,
            "candidates": found.candidate_count,
            "simulations": found.simulations,
            "grid": {
                "ballot_counts": list(grid.ballot_counts),
                "keep_fractions": list(grid.keep_fractions),
                "appearances": f"even M from {grid.appearance_step} to {grid.max_appearances:,}",
                "max_total_comparisons": grid.max_total_comparisons,
            },
        },
        "trail": found.trail,
    }
    if found.plan is not None:
        plan = plan_of(found.plan, item_count=item_count, seconds_per_comparison=seconds_per_comparison)
        hours = plan.cost_seconds / 3600
        order = [*CORRELATIONS, *(f"{name}@{k}" for k in top_ks for name in ("recall", "precision"))]
        result["plan"] = found.plan.as_dict() | {"top_appearances": plan.top_appearances}
        result["figures"] = [
            {"key": key, **figure_summary(found.figures[key], target.quantile)}
            for key in order
            if key in found.figures
        ]
        result["cost"] = {
            "comparisons": plan.total_comparisons,
            "seconds_per_comparison": seconds_per_comparison,
            "hours": hours,
            "pay_per_hour": pay_per_hour,
            "money": None if pay_per_hour is None else hours * pay_per_hour,
            "currency": currency,
        }
        result["warnings"] = list(plan.warnings)
    result["seconds"] = round(time.perf_counter() - started, 3)
    return result


# --- a study's searches ----------------------------------------------------------------------------


def plan_search_request(
    *,
    study: Study,
    target: Target,
    noise: float = DEFAULT_NOISE,
    pay_per_hour: float | None = None,
    repetitions: int = DEFAULT_REPETITIONS,
    distribution: str = "exponential",
    user=None,
) -> PlanSearch:
    """Store a search for the study's items and start it after commit (the admin's "plan from a target")."""
    if study.ranking_scope == Study.RankingScope.PER_AREA:
        raise ServiceError(
            "plans from a target are searched for one joint ranking; this study is ranked per area. "
            "Search with `manage.py plan --items N` for each area's number of items"
        )
    item_count = study.items.count()
    if item_count < 2:
        raise ServiceError(
            "the study needs at least two items to plan for: generate or upload its items first"
        )
    if pay_per_hour is None:
        pay_per_hour = study.pay_per_hour
    parameters = {
        "item_count": item_count,
        "target": target.as_dict(),
        "distribution": distribution,
        "noise": noise,
        "oversight": DEFAULT_OVERSIGHT,
        "voter_count": 100,
        "repetitions": repetitions,
        "seed": 0,
        "max_simulations": DEFAULT_MAX_SIMULATIONS,
        "strategy": "bisect",
        "seconds_per_comparison": study.seconds_per_comparison,
        "pay_per_hour": pay_per_hour,
        "currency": study.pay_currency,
    }
    try:  # refuse what the search would refuse, now, in the researcher's words
        voter_model(item_count=item_count, noise=noise, oversight=DEFAULT_OVERSIGHT, voter_count=100)
        if target.k is not None and target.k >= item_count:
            raise ValueError(f"{target.key}: K must be smaller than the study's {item_count} items")
        if distribution == "file" and read_similarity_csv(EMBEDDING_SIMILARITY_CSV).size != item_count:
            raise ValueError(
                "the shipped embedding similarities describe 990 items: choose the exponential or "
                "power-law distribution"
            )
    except ValueError as exc:
        raise ServiceError(str(exc)) from None
    search = PlanSearch.objects.create(study=study, parameters=parameters, requested_by=user)
    enqueue_on_commit(PLAN_SEARCH_TASK, search.pk, recovered_by="the ballots sweep (pending plan searches)")
    return search


def plan_search_execute(*, search_id: int) -> None:
    """Run a stored search, saving its progress after every line of plans; idempotent once done."""
    search = PlanSearch.objects.filter(pk=search_id).first()
    if search is None:
        logger.warning("plan search %s does not exist", search_id)
        return
    if search.status == PlanSearch.Status.DONE:
        return
    PlanSearch.objects.filter(pk=search_id).update(status=PlanSearch.Status.RUNNING, done=0, error="")

    def progress(done: int, total: int) -> None:
        PlanSearch.objects.filter(pk=search_id).update(done=done, total=total)

    parameters = dict(search.parameters)
    target = Target(**parameters.pop("target"))
    try:
        result = plan_search_run(target=target, progress=progress, **parameters)
    except Exception as exc:  # recorded for the researcher, then re-raised for the worker's log
        PlanSearch.objects.filter(pk=search_id).update(
            status=PlanSearch.Status.FAILED, error=str(exc), finished_at=timezone.now()
        )
        raise
    PlanSearch.objects.filter(pk=search_id).update(
        status=PlanSearch.Status.DONE, result=result, finished_at=timezone.now()
    )


def plan_search_apply(*, search: PlanSearch, user=None, channel: str = StudyChange.Channel.ADMIN) -> Study:
    """Set the study's plan to the one the search found: n_b, α (kept for a uniform plan) and M.

    Only a draft's plan may change (``collection.studies.STUDY_SETTINGS``: a started study refuses with
    409), and only while the study still has the items the search planned for.
    """
    if search.status != PlanSearch.Status.DONE or not search.result or not search.result.get("plan"):
        raise ServiceError("this search found no plan to apply")
    study = search.study
    planned_for = search.result["parameters"]["item_count"]
    item_count = study.items.count()
    if item_count != planned_for:
        raise ServiceError(
            f"the search planned for {planned_for:,} items and the study now has {item_count:,}: search again"
        )
    plan = search.result["plan"]
    changes = {
        "ballot_count": plan["ballot_count"],
        "appearances": plan["appearances"],
        "comparison_budget": None,
    }
    if plan["keep_fraction"] is not None:
        changes["keep_fraction"] = plan["keep_fraction"]
    return study_update(study=study, changes=changes, user=user, channel=channel)


def plan_searches_restart(*, now: datetime | None = None, stale_seconds: int = 60) -> int:
    """Send again the searches still pending after ``stale_seconds`` (their task was never sent)."""
    pending = PlanSearch.stale_pending(now=now or timezone.now(), stale_seconds=stale_seconds)
    return enqueue_each(PLAN_SEARCH_TASK, pending, recovered_by="the next ballots sweep")
