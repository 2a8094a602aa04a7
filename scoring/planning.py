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
from collection.studies import study_area_item_counts, study_update
from common.errors import ServiceError
from common.tasks import enqueue_each, enqueue_on_commit
from scoring.datafiles import EMBEDDING_SIMILARITY_CSV, read_similarity_csv
from scoring.models import PlanSearch
from scoring.plan_search import (
    CORRELATIONS,
    DEFAULT_CONFIDENCE,
    MAX_CONFIDENCE,
    STRATEGIES,
    PlanGrid,
    Target,
    area_plans_of,
    figure_summary,
    minimum_repetitions,
    part_seeds,
    plan_of,
    search_plan,
    simulated_figures,
)
from scoring.simulation import DISTRIBUTIONS, SimulationConfig, underlying_similarity

logger = logging.getLogger(__name__)

PLAN_SEARCH_TASK = "scoring.plan_search_run"

# The work one search may do: at most MAX_SIMULATIONS plans simulated, each on MAX_REPETITIONS search
# repetitions at most, and MAX_CONFIRMATIONS plans confirmed on MAX_CONFIRMATION_REPETITIONS each.
DEFAULT_REPETITIONS = 20
MAX_REPETITIONS = 200
DEFAULT_CONFIRMATION_REPETITIONS = 100  # a mean's bound
QUANTILE_CONFIRMATION_REPETITIONS = 300  # a tail quantile's order statistic needs more to be tight
MAX_CONFIRMATION_REPETITIONS = 1_000
MAX_CONFIRMATIONS = 4
DEFAULT_MAX_SIMULATIONS = 1_000
MAX_SIMULATIONS = 2_000
MAX_VOTERS = 10_000
DEFAULT_NOISE = 0.2  # σ* upper bound of §4.1.1 (the paper's heuristic bound)
DEFAULT_OVERSIGHT = 0.05  # ε upper bound of §4.1.1
CONFIDENCES = (0.9, 0.95, 0.99)


def plan_grid() -> PlanGrid:
    """The plans searched, within the project's bounds (``collection.limits``) and §2.7's n_b ≲ 10."""
    return PlanGrid(
        ballot_counts=tuple(range(1, min(10, limits.MAX_BALLOTS) + 1)),
        keep_fractions=(0.3, 0.4, 0.5, 0.6, 0.7),
        appearance_step=2,
        max_appearances=limits.MAX_APPEARANCES,
        max_total_comparisons=limits.MAX_TOTAL_COMPARISONS,
    )


def default_repetitions(target: Target, confidence: float = DEFAULT_CONFIDENCE) -> int:
    """20 search repetitions, or the fewest whose smallest value bounds the target's quantile."""
    if target.quantile is None:
        return DEFAULT_REPETITIONS
    return max(DEFAULT_REPETITIONS, minimum_repetitions(target.quantile, confidence))


def default_confirmation_repetitions(target: Target) -> int:
    """100 fresh repetitions for a mean target, 300 for a quantile target."""
    return DEFAULT_CONFIRMATION_REPETITIONS if target.quantile is None else QUANTILE_CONFIRMATION_REPETITIONS


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


def search_inputs(
    *,
    target: Target,
    item_count: int | None,
    area_item_counts: dict[str, int] | None,
    confidence: float,
    distribution: str,
    noise: float,
    oversight: float,
    voter_count: int,
    repetitions: int | None,
    confirmation_repetitions: int | None,
    seed: int,
    max_simulations: int,
    strategy: str,
    seconds_per_comparison: float,
    pay_per_hour: float | None,
) -> dict:
    """The checked inputs of ``plan_search_run``: the items per part, each part's (name, N, similarity,
    voter model, top K) and the repetitions. Raises ValueError naming what is out of range."""
    if (item_count is None) == (area_item_counts is None):
        raise ValueError("give either the number of items or the items of each area")
    if area_item_counts is not None:
        counts = {str(name): int(count) for name, count in area_item_counts.items() if count}
        if not counts or any(count < 2 for count in counts.values()):
            raise ValueError(
                "ranked per area, every area needs at least two items to plan for: "
                + ", ".join(f"{name} has {count}" for name, count in counts.items() if count < 2)
            )
        total_items = sum(counts.values())
    else:
        counts, total_items = {"": item_count}, item_count
    if int(total_items) != total_items or not 2 <= total_items <= limits.MAX_ITEMS:
        raise ValueError(f"the number of items must be from 2 to {limits.MAX_ITEMS:,}, got {total_items!r}")
    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"distribution must be one of {', '.join(DISTRIBUTIONS)}, got {distribution!r}")
    if not (0.5 <= confidence <= MAX_CONFIDENCE):
        raise ValueError(
            f"the confidence must lie in [0.5, {MAX_CONFIDENCE:g}] (0.9 for 90%), got {confidence!r}"
        )
    repetitions = default_repetitions(target, confidence) if repetitions is None else repetitions
    if int(repetitions) != repetitions or not 2 <= repetitions <= MAX_REPETITIONS:
        raise ValueError(
            f"repetitions must be from 2 to {MAX_REPETITIONS} (a spread needs two), got {repetitions!r}"
        )
    if confirmation_repetitions is None:
        confirmation_repetitions = default_confirmation_repetitions(target)
    if (
        int(confirmation_repetitions) != confirmation_repetitions
        or not 2 <= confirmation_repetitions <= MAX_CONFIRMATION_REPETITIONS
    ):
        raise ValueError(
            f"confirmation repetitions must be from 2 to {MAX_CONFIRMATION_REPETITIONS:,}, "
            f"got {confirmation_repetitions!r}"
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
    parts = []  # (name, N, similarity, voter model, top K) per area, or one for a joint ranking
    file_values = read_similarity_csv(EMBEDDING_SIMILARITY_CSV) if distribution == "file" else None
    for name, count in counts.items():
        if file_values is not None and file_values.size != count:
            raise ValueError(
                f"the shipped embedding similarities describe {file_values.size} items, not {count}"
                + (f" (area {name})" if name else "")
                + ": choose the exponential or power-law distribution"
            )
        model = voter_model(item_count=count, noise=noise, oversight=oversight, voter_count=voter_count)
        similarity = underlying_similarity(distribution, count, file_values)
        top_ks = sorted({k for k in (10, target.k) if k is not None and k < count})
        parts.append((name, count, similarity, model, top_ks))
    if target.k is not None and target.k >= min(counts.values()):
        raise ValueError(
            f"{target.key}: the cutoff K must be smaller than the number of items ({min(counts.values())}"
            + (" in the smallest area" if area_item_counts is not None else "")
            + "); a top-K of every item is always found"
        )
    for name, count, at in (
        ("repetitions", repetitions, confidence),
        ("confirmation repetitions", confirmation_repetitions, 1 - (1 - confidence) / MAX_CONFIRMATIONS),
    ):
        if target.quantile is not None and count < minimum_repetitions(target.quantile, at):
            raise ValueError(
                f"{name} must be at least {minimum_repetitions(target.quantile, at)} for a {at:.4g} lower "
                f"bound of the {target.statistic_label} (its smallest value bounds it only from there), "
                f"got {count}"
            )
    return {
        "counts": counts,
        "parts": parts,
        "repetitions": int(repetitions),
        "confirmation_repetitions": int(confirmation_repetitions),
    }


def plan_search_run(
    *,
    target: Target,
    item_count: int | None = None,
    area_item_counts: dict[str, int] | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
    distribution: str = "exponential",
    noise: float = DEFAULT_NOISE,
    oversight: float = DEFAULT_OVERSIGHT,
    voter_count: int = 100,
    repetitions: int | None = None,
    confirmation_repetitions: int | None = None,
    seed: int = 0,
    max_simulations: int = DEFAULT_MAX_SIMULATIONS,
    strategy: str = "scan",
    seconds_per_comparison: float = 6.0,
    pay_per_hour: float | None = None,
    currency: str = "",
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """The cheapest plan that reaches ``target`` with the §4.1 voters, confirmed on fresh repetitions, as JSON.

    ``item_count`` plans one joint ranking; ``area_item_counts`` ({area: N_a}) a study ranked per area:
    one (n_b, α, M) that reaches the target in every area, each area simulated on its own items with
    its own crowd. ``repetitions`` (default ``default_repetitions``) and ``confirmation_repetitions``
    (default ``default_confirmation_repetitions``) are the search's and each confirmation's; seeds come
    from ``SeedSequence(seed)`` (``scoring.plan_search``), so the answer is reproducible. Raises
    ValueError on parameters out of range, saying which.
    """
    started = time.perf_counter()
    inputs = search_inputs(
        target=target,
        item_count=item_count,
        area_item_counts=area_item_counts,
        confidence=confidence,
        distribution=distribution,
        noise=noise,
        oversight=oversight,
        voter_count=voter_count,
        repetitions=repetitions,
        confirmation_repetitions=confirmation_repetitions,
        seed=seed,
        max_simulations=max_simulations,
        strategy=strategy,
        seconds_per_comparison=seconds_per_comparison,
        pay_per_hour=pay_per_hour,
    )
    counts, parts = inputs["counts"], inputs["parts"]
    repetitions, confirmation_repetitions = inputs["repetitions"], inputs["confirmation_repetitions"]
    total_items = sum(counts.values())

    def evaluate(candidate, seeds):
        return [
            simulated_figures(
                sizes,
                candidate.appearances,
                similarity=parts[index][2],
                voter_model=parts[index][3],
                seeds=part_seeds(seeds, index, len(parts)),
                top_ks=parts[index][4],
            )
            for index, (_, _, sizes) in enumerate(candidate.parts)
        ]

    grid = plan_grid()
    found = search_plan(
        item_counts=counts if area_item_counts is not None else item_count,
        target=target,
        evaluate=evaluate,
        grid=grid,
        confidence=confidence,
        repetitions=repetitions,
        confirmation_repetitions=confirmation_repetitions,
        max_confirmations=MAX_CONFIRMATIONS,
        seed=seed,
        max_simulations=max_simulations,
        strategy=strategy,
        progress=progress,
    )
    parameters = {
        "item_count": total_items,
        "area_item_counts": counts if area_item_counts is not None else None,
        "confidence": confidence,
        "distribution": distribution,
        "noise": noise,
        "oversight": oversight,
        "voter_count": voter_count,
        "repetitions": repetitions,
        "confirmation_repetitions": confirmation_repetitions,
        "max_confirmations": MAX_CONFIRMATIONS,
        "seed": seed,
        "max_simulations": max_simulations,
        "strategy": strategy,
        "seconds_per_comparison": seconds_per_comparison,
        "pay_per_hour": pay_per_hour,
        "currency": currency,
    }
    answer = _Answer(target=target, parameters=parameters)
    result = {
        "target": {
            **target.as_dict(),
            "key": target.key,
            "label": target.label,
            "statistic_label": target.statistic_label,
            "text": target.describe(),
        },
        "ranking_scope": "per_area" if area_item_counts is not None else "joint",
        "confidence": confidence,
        "confirmation_level": found.confirmation_level,
        "parameters": parameters,
        "reached": found.plan is not None,
        "complete": found.complete,
        **answer.of(found.plan, found.judgement, found.confirmation),
        "without_warnings": None,
        "warning_free_in_grid": found.warning_free_in_grid,
        "failed_confirmations": [answer.failed(confirmation) for confirmation in found.failed],
        "searched": {
            "strategy": found.strategy,
            "lines": found.line_count,
            "candidates": found.candidate_count,
            "simulations": found.simulations,
            "repetitions_simulated": found.repetitions_simulated,
            "search_repetitions": found.search_repetitions,
            "confirmations": found.confirmations,
            "max_confirmations": found.max_confirmations,
            "unsimulated_cheaper": found.unsimulated_cheaper,
            "grid": {
                "ballot_counts": list(grid.ballot_counts),
                "keep_fractions": list(grid.keep_fractions),
                "appearances": f"even M from {grid.appearance_step} to {grid.max_appearances:,}",
                "max_total_comparisons": grid.max_total_comparisons,
            },
        },
        "trail": found.trail,
    }
    if found.alternative is not None:
        result["without_warnings"] = answer.of(
            found.alternative, found.alternative_judgement, found.alternative_confirmation
        )
    result["seconds"] = round(time.perf_counter() - started, 3)
    return result


class _Answer:
    """A plan found, as the JSON the command prints and the admin stores."""

    def __init__(self, *, target: Target, parameters: dict):
        self.target, self.parameters = target, parameters

    def of(self, candidate, judgement, confirmation) -> dict:
        """``plan``, ``cost``, ``warnings``, ``figures`` (on the confirmation's fresh repetitions),
        ``search`` and ``confirmation`` (the target's statistic and bound; per area in ``areas``)."""
        if candidate is None:
            return {
                "plan": None,
                "cost": None,
                "warnings": [],
                "figures": [],
                "search": None,
                "confirmation": None,
                "areas": [],
            }
        p = self.parameters
        plan = plan_of(candidate, seconds_per_comparison=p["seconds_per_comparison"])
        hours = plan.cost_seconds / 3600
        worst = int(np.argmin(confirmation.bounds))
        answer = {
            "plan": candidate.as_dict() | {"top_appearances": plan.top_appearances},
            "cost": {
                "comparisons": plan.total_comparisons,
                "seconds_per_comparison": p["seconds_per_comparison"],
                "hours": hours,
                "pay_per_hour": p["pay_per_hour"],
                "money": None if p["pay_per_hour"] is None else hours * p["pay_per_hour"],
                "currency": p["currency"],
            },
            "warnings": list(plan.warnings),
            "figures": self.figures(confirmation.figures[worst]),
            "search": {
                "repetitions": judgement.sample,
                "statistic": _number(judgement.statistics[worst]),
                "bound": _number(judgement.bounds[worst]),
            },
            "confirmation": {
                "attempt": confirmation.attempt,
                "repetitions": confirmation.repetitions,
                "level": confirmation.level,
                "statistic": _number(confirmation.statistics[worst]),
                "bound": _number(confirmation.bounds[worst]),
            },
            "areas": [],
        }
        if candidate.per_area:
            by_area = area_plans_of(candidate).by_area
            for index, (name, count, sizes) in enumerate(candidate.parts):
                answer["areas"].append(
                    {
                        "area": name,
                        "item_count": count,
                        "sizes": list(sizes),
                        "comparisons": by_area[name].total_comparisons,
                        "figures": self.figures(confirmation.figures[index]),
                        "search": {
                            "statistic": _number(judgement.statistics[index]),
                            "bound": _number(judgement.bounds[index]),
                        },
                        "confirmation": {
                            "statistic": _number(confirmation.statistics[index]),
                            "bound": _number(confirmation.bounds[index]),
                        },
                    }
                )
            answer["confirmation"]["area"] = candidate.parts[worst][0]
        return answer

    def figures(self, figures: dict) -> list[dict]:
        keys = [*CORRELATIONS, *sorted((k for k in figures if "@" in k), key=_top_k_order)]
        return [
            {"key": key, **figure_summary(figures[key], self.target.quantile)}
            for key in keys
            if key in figures
        ]

    def failed(self, confirmation) -> dict:
        worst = int(np.argmin([-math.inf if math.isnan(b) else b for b in confirmation.bounds]))
        return {
            "plan": confirmation.candidate.as_dict(),
            "attempt": confirmation.attempt,
            "repetitions": confirmation.repetitions,
            "level": confirmation.level,
            "statistic": _number(confirmation.statistics[worst]),
            "bound": _number(confirmation.bounds[worst]),
            "area": confirmation.candidate.parts[worst][0] if confirmation.candidate.per_area else None,
        }


def _top_k_order(key: str) -> tuple:
    name, _, k = key.partition("@")
    return (int(k), name != "recall")


def _number(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


# --- a study's searches ----------------------------------------------------------------------------


def plan_search_request(
    *,
    study: Study,
    target: Target,
    confidence: float = DEFAULT_CONFIDENCE,
    noise: float = DEFAULT_NOISE,
    pay_per_hour: float | None = None,
    repetitions: int | None = None,
    distribution: str = "exponential",
    user=None,
) -> PlanSearch:
    """Store a search for the study's items and start it after commit (the admin's "plan from a target").

    A study ranked per area is searched for one (n_b, α, M) that reaches the target in every area
    (``plan_search_run`` with ``area_item_counts``): a study has one plan, and each area runs it on its
    own items.
    """
    per_area = study.ranking_scope == Study.RankingScope.PER_AREA
    if per_area:
        counts = study_area_item_counts(study=study)
        items = {"item_count": None, "area_item_counts": counts}
        total = sum(counts.values())
    else:
        total = study.items.count()
        items = {"item_count": total, "area_item_counts": None}
    if total < 2:
        raise ServiceError(
            "the study needs at least two items to plan for: generate or upload its items first"
        )
    if pay_per_hour is None:
        pay_per_hour = study.pay_per_hour
    parameters = {
        **items,
        "confidence": confidence,
        "distribution": distribution,
        "noise": noise,
        "oversight": DEFAULT_OVERSIGHT,
        "voter_count": 100,
        "repetitions": repetitions,
        "confirmation_repetitions": None,
        "seed": 0,
        "max_simulations": DEFAULT_MAX_SIMULATIONS,
        "strategy": "scan",
        "seconds_per_comparison": study.seconds_per_comparison,
        "pay_per_hour": pay_per_hour,
    }
    try:  # refuse what the search would refuse, now, in the researcher's words
        checked = search_inputs(target=target, **parameters)
    except ValueError as exc:
        raise ServiceError(str(exc)) from None
    parameters.update(
        repetitions=checked["repetitions"],
        confirmation_repetitions=checked["confirmation_repetitions"],
        currency=study.pay_currency,
        target=target.as_dict(),
    )
    search = PlanSearch.objects.create(study=study, parameters=parameters, requested_by=user)
    enqueue_on_commit(PLAN_SEARCH_TASK, search.pk, recovered_by="the ballots sweep (pending plan searches)")
    return search


def plan_search_execute(*, search_id: int) -> None:
    """Run a stored search, saving its progress after every plan simulated; idempotent once done."""
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


def plan_search_apply(
    *,
    search: PlanSearch,
    without_warnings: bool = False,
    user=None,
    channel: str = StudyChange.Channel.ADMIN,
) -> Study:
    """Set the study's plan to the search's answer, or (``without_warnings``) to the cheapest plan it found
    without §2.7 warnings: n_b, α (kept for a uniform plan) and M.

    Only a draft's plan may change (``collection.studies.STUDY_SETTINGS``: a started study refuses with
    409), and only while the study has the ranking scope and the items (each area's, ranked per area)
    the search planned for.
    """
    result = search.result if search.status == PlanSearch.Status.DONE else None
    answer = (result or {}).get("without_warnings" if without_warnings else "plan")
    if not answer:
        raise ServiceError("this search found no such plan to apply")
    if "confirmation" not in result:
        raise ServiceError("this search ran before plans were confirmed on fresh simulations: search again")
    plan = answer["plan"] if without_warnings else answer
    study = search.study
    planned = result["parameters"]
    per_area = study.ranking_scope == Study.RankingScope.PER_AREA
    if per_area != (result.get("ranking_scope") == "per_area"):
        raise ServiceError(
            f"the search planned for {'one ranking per area' if not per_area else 'one joint ranking'} and "
            f"the study is now ranked {'per area' if per_area else 'jointly'}: search again"
        )
    if per_area:
        counts = study_area_item_counts(study=study)
        if counts != planned["area_item_counts"]:
            raise ServiceError(
                "the search planned for the areas' items "
                + _counts_text(planned["area_item_counts"])
                + " and the study now has "
                + _counts_text(counts)
                + ": search again"
            )
    else:
        item_count = study.items.count()
        if item_count != planned["item_count"]:
            raise ServiceError(
                f"the search planned for {planned['item_count']:,} items and the study now has {item_count:,}: "
                "search again"
            )
    changes = {
        "ballot_count": plan["ballot_count"],
        "appearances": plan["appearances"],
        "comparison_budget": None,
    }
    if plan["keep_fraction"] is not None:
        changes["keep_fraction"] = plan["keep_fraction"]
    return study_update(study=study, changes=changes, user=user, channel=channel)


def _counts_text(counts: dict[str, int]) -> str:
    return "(" + ", ".join(f"{name} {count:,}" for name, count in sorted(counts.items())) + ")"


def plan_searches_restart(*, now: datetime | None = None, stale_seconds: int = 60) -> int:
    """Send again the searches still pending after ``stale_seconds`` (their task was never sent)."""
    pending = PlanSearch.stale_pending(now=now or timezone.now(), stale_seconds=stale_seconds)
    return enqueue_each(PLAN_SEARCH_TASK, pending, recovered_by="the next ballots sweep")
