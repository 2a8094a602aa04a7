"""Plans from a target precision: the cheapest plan whose simulated ranking reaches a stated target with a
stated confidence, confirmed on fresh repetitions before it is returned.

PURE module: numpy, scipy and the standard library only; randomness comes in as seeds.

A researcher states a target ("top-50 recall ≥ 0.9", "ρ_w ≥ 0.95"), either for the mean over simulated
repetitions or for a stated quantile of them (the 10th percentile ≥ 0.9: reached in nine repetitions of
ten). The search simulates candidate plans with the voter model of Lombardo et al. §4.1
(``scoring.simulation``) and returns the cheapest plan, by N_comp (Eq. 3), that reaches it.

Reaching a target
-----------------
A plan reaches the target when a one-sided lower confidence bound of the target's statistic, at the
confidence c (default 90%), is at least the threshold; the estimate itself is not enough:

- the mean: x̄ − t_{c, n−1}·s/√n (Student's t, s the sd with ddof 1);
- the q-quantile: the j-th smallest of the n values, j the largest with P(Binomial(n, q) ≥ j) ≥ c. It
  lies at or below the true q-quantile with probability ≥ c whatever the distribution of the figure,
  discrete ones included; it needs n ≥ ln(1 − c)/ln(1 − q) repetitions (``minimum_repetitions``).

Every plan is simulated on the same n search repetitions (common random numbers), so the search is
reproducible; a plan is simulated in chunks and dropped as soon as its remaining repetitions cannot
bring the bound to the threshold (the mean cannot reach it even if every remaining value were 1, the
largest any measure takes; or j values of a quantile target already lie below it), which gives the
same decision as all n repetitions.

The plan chosen on the search repetitions is the one whose figure was luckiest among those near the
threshold, so it is confirmed on fresh repetitions (seeds that took no part in the search) before it is
returned: its bound on them must reach the threshold too. A plan that fails is not returned; the search
goes on to the next plan in order that reaches, judged from then on with the failed confirmation's
repetitions added to the search's (the plans cheaper than the failed one are not judged again, so after
a failure the answer is the cheapest of the plans after it). At most ``max_confirmations`` plans are confirmed, each
at the level 1 − (1 − c)/max_confirmations, so that the chance that any plan returned misses its target
(in any area, for a study ranked per area) is at most 1 − c (Bonferroni).

Plans
-----
A candidate is n_b ballots, the fraction α kept after each (Eq. 2) and M appearances of every item in
every ballot; it costs N_comp = Σ_k ⌈M·N(k)/2⌉ comparisons (Eq. 3). One ballot (n_b = 1) is the
uniform protocol of §2.4: every item appears M times, α plays no part. For a study ranked per area, a
plan is one (n_b, α, M) run by every area on its own items (``scoring.plan.area_plans``): it costs the
sum of the areas' N_comp and reaches the target only if it does so in every area. The grid holds, for
each (n_b, α), every even M (footnote 6) up to the project's bounds on M and on N_comp. Plans are
ordered by (N_comp, with §2.7 warnings, n_b, α, M): at equal cost a plan without warnings
(``scoring.plan``) comes first, and equal costs are broken the same way every time.

The search
----------
``strategy="scan"`` (the default) is exact. It first bisects on M per (n_b, α) (below) to find a plan
that reaches, then simulates every plan cheaper than that one, cheapest first, and takes the first
that reaches: the definition of the cheapest, whatever the shape of the figure in M. Each plan is
simulated at most once (``max_simulations`` bounds them); a search stopped by the bound returns the
cheapest plan it found and says how many cheaper plans it did not simulate.

``strategy="bisect"`` stops after the bisection. For fixed (n_b, α), N_comp grows strictly with M; if
whether the target is reached is monotone in M, the reaching plans of a line are a suffix of its M
values and bisection finds the line's cheapest. It walks the lines keeping the cheapest plan found so
far, and on a line first simulates the largest M cheaper than it: if that one misses, the line is done.
The first line gallops up M (indices 0, 1, 3, 7, …) until a plan reaches. Under monotonicity this is
the cheapest plan of the grid with far fewer simulations; but a figure simulated on a few repetitions
is not always monotone in M (``docs/protocols.md`` has cases where bisection pays twice the scan's
answer), so it is not the default.

When the plan returned has §2.7 warnings, the search goes on to the cheapest plan without warnings
that reaches (confirmed the same way), or says that the grid holds none.

Seeds
-----
``search_seeds(seed, n)[r]`` is ``SeedSequence(seed)`` with spawn key (0, r); confirmation a (0, 1, …)
uses spawn keys (1, a, r). Repetition r of a plan draws its voters from the seed's first child and its
votes from the second (area i of a study ranked per area: the children of child i).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from metrics.correlation import (
    kendall_rows,
    ranks_from_scores,
    spearman_rows,
    weighted_kendall_rows,
    weighted_spearman_rows,
)
from scoring.plan import AreaPlans, BallotPlan, area_plans, ballot_plan, ballot_sizes
from scoring.simulation import SimulationConfig, draw_voters, run_adaptive, theoretical_ranks

__all__ = [
    "CORRELATIONS",
    "DEFAULT_CONFIDENCE",
    "MEASURES",
    "STRATEGIES",
    "Candidate",
    "Confirmation",
    "Judgement",
    "PlanGrid",
    "SearchResult",
    "Target",
    "area_plans_of",
    "confirmation_seeds",
    "figure_summary",
    "grid_lines",
    "minimum_repetitions",
    "order_statistic_rank",
    "parse_target",
    "part_seeds",
    "plan_of",
    "plans_in_order",
    "search_plan",
    "search_seeds",
    "simulated_figures",
    "top_k_overlap",
]

CORRELATIONS = ("rho_w", "tau_w", "rho", "tau")
MEASURES = (*CORRELATIONS, "recall", "precision")
STRATEGIES = ("scan", "bisect")
DEFAULT_CONFIDENCE = 0.9
MAX_CONFIDENCE = 0.999
MEASURE_MAX = 1.0  # no measure exceeds 1: correlations and shares of the top K
CHUNK = 5  # repetitions simulated before checking whether a plan can still reach
LABELS = {
    "rho_w": "ρ_w",
    "tau_w": "τ_w",
    "rho": "ρ",
    "tau": "τ",
    "recall": "top-{k} recall",
    "precision": "P@{k}",
}


def measure_label(key: str) -> str:
    """The printed name of a measure's key: ``rho_w``, or ``recall@50`` (top-50 recall)."""
    name, _, k = key.partition("@")
    return LABELS[name].format(k=k)


_ALIASES = {"ρ_w": "rho_w", "τ_w": "tau_w", "ρ": "rho", "τ": "tau", "p": "precision", "r": "recall"}
_TARGET = re.compile(
    r"^\s*(?P<measure>[a-zρτ_]+)\s*(?:@\s*(?P<k>\d+))?\s*(?:>=|≥)\s*(?P<threshold>[-+]?\d*\.?\d+)\s*$",
    re.IGNORECASE,
)

Figures = dict[str, np.ndarray]
Evaluate = Callable[["Candidate", Sequence[np.random.SeedSequence]], Sequence[Figures]]
Progress = Callable[[int, int], None]


# --- targets and their bounds --------------------------------------------------------------------


def order_statistic_rank(repetitions: int, quantile: float, confidence: float) -> int:
    """j, the largest rank with P(Binomial(n, q) ≥ j) ≥ c; 0 when even j = 1 falls short.

    The j-th smallest of n draws lies at or below the q-quantile ξ_q with probability
    P(#{X_i ≤ ξ_q} ≥ j) ≥ P(Binomial(n, q) ≥ j), since P(X ≤ ξ_q) ≥ q for any distribution.
    """
    from scipy import stats  # here, not at import: web processes load this module and never search

    ranks = np.arange(1, int(repetitions) + 1)
    covered = stats.binom.sf(ranks - 1, int(repetitions), quantile) >= confidence
    return int(ranks[covered].max()) if covered.any() else 0


def minimum_repetitions(quantile: float, confidence: float) -> int:
    """The fewest repetitions whose smallest value bounds the q-quantile at c: 1 − (1 − q)^n ≥ c."""
    count = max(1, math.ceil(math.log1p(-confidence) / math.log1p(-quantile)))
    while order_statistic_rank(count, quantile, confidence) == 0:  # float rounding of the logarithms
        count += 1
    while count > 1 and order_statistic_rank(count - 1, quantile, confidence) >= 1:
        count -= 1
    return count


@dataclass(frozen=True)
class Target:
    """A measure of the simulated ranking against the true one, and the value it must reach.

    ``measure`` is one of ``MEASURES``; ``k`` the cutoff of recall and precision; ``quantile`` None
    for the mean over repetitions, or q in (0, 1) for the q-quantile (0.1: the 10th percentile, so
    the target holds in about nine repetitions of ten).
    """

    measure: str
    threshold: float
    k: int | None = None
    quantile: float | None = None

    def __post_init__(self):
        if self.measure not in MEASURES:
            raise ValueError(
                f"the target's measure must be one of {', '.join(MEASURES)} (recall and precision with @K), "
                f"got {self.measure!r}"
            )
        if self.measure in ("recall", "precision"):
            if self.k is None or int(self.k) != self.k or self.k < 1:
                raise ValueError(
                    f"{self.measure} needs a cutoff K ≥ 1, written {self.measure}@K (e.g. {self.measure}@50)"
                )
            low = 0.0
        else:
            if self.k is not None:
                raise ValueError(f"{self.measure} takes no cutoff K; only recall@K and precision@K do")
            low = -1.0
        if not (math.isfinite(self.threshold) and low <= self.threshold <= 1.0):
            raise ValueError(
                f"the target's threshold for {self.measure} must lie in [{low:g}, 1], got {self.threshold!r}"
            )
        if self.quantile is not None and not (0.0 < self.quantile < 1.0):
            raise ValueError(
                f"the quantile must lie strictly between 0 and 1 (0.1 for the 10th percentile), got {self.quantile!r}"
            )

    @property
    def key(self) -> str:
        """The name of the measure in the figures: ``rho_w``, ``recall@50`` …"""
        return self.measure if self.k is None else f"{self.measure}@{self.k}"

    @property
    def label(self) -> str:
        return LABELS[self.measure].format(k=self.k)

    @property
    def statistic_label(self) -> str:
        """``mean τ_w`` or ``10th percentile of τ_w``."""
        if self.quantile is None:
            return f"mean {self.label}"
        return f"{self.quantile * 100:g}th percentile of {self.label}"

    def statistic(self, values) -> float:
        """The mean of ``values`` (over repetitions), or their ``quantile`` (numpy's linear interpolation).

        NaN when any value is NaN (an undefined correlation): such a plan does not reach the target.
        """
        values = np.asarray(values, dtype=np.float64)
        if values.size == 0 or np.isnan(values).any():
            return math.nan
        if self.quantile is None:
            return float(values.mean())
        return float(np.quantile(values, self.quantile))

    def lower_bound(self, values, confidence: float) -> float:
        """The one-sided lower confidence bound at ``confidence`` of the statistic (module docstring).

        Mean: x̄ − t_{c, n−1}·s/√n. Quantile: the j-th smallest value (``order_statistic_rank``). NaN
        when a value is NaN, with fewer than two values, or when the quantile needs more repetitions.
        """
        values = np.asarray(values, dtype=np.float64)
        if values.size < 2 or np.isnan(values).any():
            return math.nan
        if self.quantile is None:
            from scipy import stats  # as in order_statistic_rank

            spread = float(values.std(ddof=1))
            return float(values.mean()) - float(
                stats.t.ppf(confidence, values.size - 1)
            ) * spread / math.sqrt(values.size)
        rank = order_statistic_rank(values.size, self.quantile, confidence)
        return float(np.sort(values)[rank - 1]) if rank else math.nan

    def reached(self, values, confidence: float) -> bool:
        """Whether the lower bound at ``confidence`` is at least the threshold."""
        return bool(self.lower_bound(values, confidence) >= self.threshold)

    def cannot_reach(self, values, repetitions: int, confidence: float) -> bool:
        """Whether ``values``, the first of ``repetitions``, already keep the bound below the threshold
        whatever the rest are (so the plan need not be simulated further)."""
        values = np.asarray(values, dtype=np.float64)
        if np.isnan(values).any():
            return True
        if self.quantile is None:
            best_mean = (values.sum() + (repetitions - values.size) * MEASURE_MAX) / repetitions
            return bool(best_mean < self.threshold)
        below = int((values < self.threshold).sum())
        return below >= order_statistic_rank(repetitions, self.quantile, confidence)

    def describe(self) -> str:
        if self.quantile is None:
            return f"{self.label} ≥ {self.threshold:g} on average over the simulated repetitions"
        percent = f"{self.quantile * 100:g}"
        return (
            f"{self.label} ≥ {self.threshold:g} at the {percent}th percentile of the simulated repetitions "
            f"(reached in about {100 - self.quantile * 100:g}% of them)"
        )

    def as_dict(self) -> dict:
        return {"measure": self.measure, "threshold": self.threshold, "k": self.k, "quantile": self.quantile}


def parse_target(text: str, *, quantile: float | None = None) -> Target:
    """A target from text such as ``rho_w>=0.95``, ``τ_w ≥ 0.8``, ``recall@50>=0.9`` or ``P@10>=0.7``."""
    match = _TARGET.match(text or "")
    if match is None:
        raise ValueError(
            f"cannot read the target {text!r}: write MEASURE>=VALUE, e.g. rho_w>=0.95 or recall@50>=0.9 "
            f"(measures: {', '.join(MEASURES)}; recall and precision take @K)"
        )
    measure = match["measure"].lower()
    measure = _ALIASES.get(measure, measure)
    k = int(match["k"]) if match["k"] is not None else None
    return Target(measure=measure, threshold=float(match["threshold"]), k=k, quantile=quantile)


# --- the grid ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    """One plan of the grid: n_b, α (None for the uniform protocol, n_b = 1), M, N(k) and N_comp (Eq. 3).

    ``parts`` holds (area name, its items, its N_a(k)) for each area of a study ranked per area
    (``per_area``), or one part ("", N_items, N(k)) for one joint ranking; ``sizes`` are the parts' N(k)
    summed. ``warnings`` are the plan's §2.7 warnings (``scoring.plan``).
    """

    ballot_count: int
    keep_fraction: float | None
    appearances: int
    sizes: tuple[int, ...]
    total_comparisons: int
    parts: tuple[tuple[str, int, tuple[int, ...]], ...] = ()
    warnings: tuple[str, ...] = ()
    per_area: bool = False

    @property
    def protocol(self) -> str:
        return "uniform" if self.ballot_count == 1 else "adaptive"

    @property
    def order(self) -> tuple:
        """The order of cost: N_comp, then plans without warnings first, then n_b, α and M."""
        return (
            self.total_comparisons,
            bool(self.warnings),
            self.ballot_count,
            self.keep_fraction or 0.0,
            self.appearances,
        )

    def describe(self) -> str:
        if self.ballot_count == 1:
            return f"uniform, M = {self.appearances}, N_comp = {self.total_comparisons:,}"
        return (
            f"adaptive, n_b = {self.ballot_count}, α = {self.keep_fraction:g}, M = {self.appearances}, "
            f"N_comp = {self.total_comparisons:,}"
        )

    def as_dict(self) -> dict:
        return {
            "protocol": self.protocol,
            "ballot_count": self.ballot_count,
            "keep_fraction": self.keep_fraction,
            "appearances": self.appearances,
            "sizes": list(self.sizes),
            "total_comparisons": self.total_comparisons,
        }


@dataclass(frozen=True)
class PlanGrid:
    """The plans searched: n_b (1 is the uniform protocol), α and even M, within the bounds on M and N_comp.

    The defaults follow §2.7 (n_b ≲ 10) and footnote 6 (even M); the platform passes its own bounds
    (``collection.limits``).
    """

    ballot_counts: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
    keep_fractions: tuple[float, ...] = (0.3, 0.4, 0.5, 0.6, 0.7)
    appearance_step: int = 2
    max_appearances: int = 1_000
    max_total_comparisons: int = 500_000

    def __post_init__(self):
        if not self.ballot_counts or min(self.ballot_counts) < 1:
            raise ValueError("the grid needs ballot counts n_b ≥ 1")
        if not self.keep_fractions or not all(0.0 < a < 1.0 for a in self.keep_fractions):
            raise ValueError("the grid's fractions α must lie strictly between 0 and 1")
        if self.appearance_step < 1 or self.max_appearances < self.appearance_step:
            raise ValueError("the grid needs an appearance step ≥ 1 and a largest M of at least one step")
        if self.max_total_comparisons < 1:
            raise ValueError("the grid's bound on N_comp must be positive")


@dataclass(frozen=True)
class _Line:
    """The plans of one (n_b, α): M values in increasing order and their N_comp (strictly increasing)."""

    ballot_count: int
    keep_fraction: float | None
    parts: tuple[tuple[str, int, tuple[int, ...]], ...]
    per_area: bool
    appearances: np.ndarray
    costs: np.ndarray

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(int(sum(column)) for column in zip(*(sizes for _, _, sizes in self.parts), strict=True))

    def candidate(self, index: int) -> Candidate:
        appearances = int(self.appearances[index])
        return Candidate(
            ballot_count=self.ballot_count,
            keep_fraction=self.keep_fraction,
            appearances=appearances,
            sizes=self.sizes,
            total_comparisons=int(self.costs[index]),
            parts=self.parts,
            per_area=self.per_area,
            warnings=_plan(self.parts, self.per_area, self.ballot_count, self.keep_fraction, appearances)[
                0
            ].warnings,
        )


def _normalised(item_counts: int | Mapping[str, int]) -> tuple[dict[str, int], bool]:
    if isinstance(item_counts, Mapping):
        counts = {str(name): int(count) for name, count in item_counts.items() if count > 0}
        if not counts:
            raise ValueError("a study ranked per area needs items in at least one semantic area")
        return counts, True
    return {"": int(item_counts)}, False


def grid_lines(item_counts: int | Mapping[str, int], grid: PlanGrid) -> list[_Line]:
    """Every (n_b, α) of the grid that the items allow, with its M values and N_comp (Eq. 3).

    ``item_counts`` is N_items for one joint ranking, or {area: N_a} for a study ranked per area (a line
    then needs every area to allow it, and costs the sum of the areas' N_comp). The paper's n_b = 7,
    α = 0.5 comes first when it is in the grid (a good first bound for the search); the uniform line
    (n_b = 1) has one α, None. Lines whose ballots would hold fewer than two items (Eq. 2) are left
    out, as are M values past the bounds.
    """
    counts, per_area = _normalised(item_counts)
    appearances = np.arange(
        grid.appearance_step, grid.max_appearances + 1, grid.appearance_step, dtype=np.int64
    )
    pairs = []
    for ballot_count in sorted(set(grid.ballot_counts)):
        fractions = (None,) if ballot_count == 1 else sorted(set(grid.keep_fractions))
        pairs += [(ballot_count, alpha) for alpha in fractions]
    pairs.sort(key=lambda pair: pair != (7, 0.5))
    lines = []
    for ballot_count, alpha in pairs:
        try:
            parts = tuple(
                (name, count, ballot_sizes(count, ballot_count, 0.5 if alpha is None else alpha))
                for name, count in counts.items()
            )
        except ValueError:
            continue
        # Eq. 3 for every M at once, summed over the parts: Σ_a Σ_k ⌈M·N_a(k)/2⌉.
        costs = sum(
            ((appearances[:, None] * np.asarray(sizes)[None, :] + 1) // 2).sum(axis=1)
            for _, _, sizes in parts
        )
        within = costs <= grid.max_total_comparisons
        if within.any():
            lines.append(_Line(ballot_count, alpha, parts, per_area, appearances[within], costs[within]))
    return lines


def plans_in_order(lines: Sequence[_Line]) -> Iterator[Candidate]:
    """Every plan of the lines in ``Candidate.order``, made (with its warnings) only when reached."""
    entries = sorted(
        (int(cost), line.ballot_count, line.keep_fraction or 0.0, int(m), position, index)
        for position, line in enumerate(lines)
        for index, (cost, m) in enumerate(zip(line.costs, line.appearances, strict=True))
    )
    start = 0
    while start < len(entries):
        end = start
        while end < len(entries) and entries[end][0] == entries[start][0]:
            end += 1
        same_cost = [lines[entry[4]].candidate(entry[5]) for entry in entries[start:end]]
        yield from sorted(same_cost, key=lambda candidate: candidate.order)
        start = end


def _plan(parts, per_area: bool, ballot_count: int, keep_fraction, appearances: int, seconds=None):
    alpha = 0.5 if keep_fraction is None else keep_fraction  # stands in where α plays no part (n_b = 1)
    if not per_area:
        [(_, count, sizes)] = parts
        plan = ballot_plan(
            item_count=count,
            ballot_count=ballot_count,
            keep_fraction=alpha,
            appearances=appearances,
            seconds_per_comparison=seconds,
            sizes=sizes,
        )
        return plan, None
    areas = area_plans(
        area_item_counts={name: count for name, count, _ in parts},
        ballot_count=ballot_count,
        keep_fraction=alpha,
        appearances=appearances,
        seconds_per_comparison=seconds,
        fixed_sizes={name: list(sizes) for name, _, sizes in parts},
    )
    return areas.total, areas


def plan_of(candidate: Candidate, *, seconds_per_comparison: float | None = None) -> BallotPlan:
    """The ``BallotPlan`` of a candidate (for a study ranked per area, the sum of its areas' plans), with
    its §2.7 warnings and the cost estimate of Eq. 10. α = 0.5 stands in for a uniform plan's."""
    return _plan(
        candidate.parts,
        candidate.per_area,
        candidate.ballot_count,
        candidate.keep_fraction,
        candidate.appearances,
        seconds_per_comparison,
    )[0]


def area_plans_of(candidate: Candidate, *, seconds_per_comparison: float | None = None) -> AreaPlans:
    """Each area's plan of a candidate of a study ranked per area (``scoring.plan.area_plans``)."""
    return _plan(
        candidate.parts,
        True,
        candidate.ballot_count,
        candidate.keep_fraction,
        candidate.appearances,
        seconds_per_comparison,
    )[1]


# --- seeds ---------------------------------------------------------------------------------------


def search_seeds(seed: int, repetitions: int) -> list[np.random.SeedSequence]:
    """The search's repetitions: ``SeedSequence(seed)`` with spawn keys (0, r)."""
    return [np.random.SeedSequence(int(seed), spawn_key=(0, r)) for r in range(int(repetitions))]


def confirmation_seeds(seed: int, attempt: int, repetitions: int) -> list[np.random.SeedSequence]:
    """Fresh repetitions of confirmation ``attempt``: spawn keys (1, attempt, r), disjoint from the search's."""
    return [
        np.random.SeedSequence(int(seed), spawn_key=(1, int(attempt), r)) for r in range(int(repetitions))
    ]


def part_seeds(seeds: Sequence[np.random.SeedSequence], part: int, part_count: int):
    """The seeds of part ``part`` (an area) of each repetition: the repetition's own with one part, else
    its child ``part``, so that every area has its own voters and votes."""
    if part_count == 1:
        return list(seeds)
    return [_child(seed, part) for seed in seeds]


def _child(seed: np.random.SeedSequence, index: int) -> np.random.SeedSequence:
    # Rebuilt rather than spawned: spawn() advances the parent, and every plan must see the same crowds.
    return np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, index), pool_size=seed.pool_size)


# --- the search ----------------------------------------------------------------------------------


@dataclass
class Judgement:
    """A plan simulated on the search's repetitions: ``figures`` per part (over the ``repetitions`` run
    of the ``sample`` in force, fewer when the plan was dropped early), the target's statistic and bound
    per part, and whether every part's bound reaches the threshold."""

    candidate: Candidate
    figures: list[Figures]
    repetitions: int
    sample: int
    statistics: list[float]
    bounds: list[float]
    reached: bool


@dataclass
class Confirmation:
    """A plan simulated on fresh repetitions (``attempt``: spawn keys (1, attempt, r)); it passes when
    every part's bound at ``level`` reaches the threshold."""

    candidate: Candidate
    attempt: int
    repetitions: int
    level: float
    figures: list[Figures]
    statistics: list[float]
    bounds: list[float]
    passed: bool


@dataclass
class SearchResult:
    """What the search found and what it did.

    ``plan`` is the cheapest plan that reaches the target and passed its confirmation (None if none
    did), with its ``judgement`` on the search repetitions and its ``confirmation``. When it has §2.7
    warnings, ``alternative`` is the cheapest plan without warnings that reaches and was confirmed
    (``warning_free_in_grid`` says whether the grid holds any plan without warnings at all).
    ``failed`` lists the confirmations that failed, in order; ``confirmations`` counts them all (at most
    ``max_confirmations``). ``complete`` says the search did all it set out to: for the scan, every plan
    cheaper than the answer was simulated (``unsimulated_cheaper`` counts those left when the bound on
    simulations stopped it), or, without an answer, the grid was covered; for the bisection, every line
    was bisected. ``trail`` lists every simulated plan with the target's statistic and bound (of its
    worst part), in the order simulated.
    """

    target: Target
    confidence: float
    confirmation_level: float
    plan: Candidate | None
    judgement: Judgement | None
    confirmation: Confirmation | None
    alternative: Candidate | None
    alternative_judgement: Judgement | None
    alternative_confirmation: Confirmation | None
    warning_free_in_grid: bool | None
    failed: list[Confirmation]
    confirmations: int
    max_confirmations: int
    complete: bool
    unsimulated_cheaper: int
    simulations: int
    repetitions_simulated: int
    search_repetitions: int
    line_count: int
    candidate_count: int
    strategy: str
    trail: list = field(default_factory=list)


def search_plan(
    *,
    item_counts: int | Mapping[str, int],
    target: Target,
    evaluate: Evaluate,
    grid: PlanGrid | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
    repetitions: int = 20,
    confirmation_repetitions: int = 100,
    max_confirmations: int = 4,
    seed: int = 0,
    max_simulations: int = 300,
    strategy: str = "scan",
    progress: Progress | None = None,
) -> SearchResult:
    """The cheapest plan of ``grid`` (by ``Candidate.order``) that reaches ``target``, confirmed.

    ``evaluate(candidate, seeds)`` returns, for each part of ``item_counts`` in order (one for a joint
    ranking), ``{measure key: one value per seed}`` (``simulated_figures`` with ``part_seeds``). Plans
    are judged on ``search_seeds(seed, repetitions)`` by the lower bound at ``confidence`` and
    confirmed on ``confirmation_repetitions`` fresh ones (module docstring). At most
    ``max_simulations`` plans are simulated on the search repetitions and ``max_confirmations``
    confirmed. ``progress(done, total)`` counts the plans simulated out of ``max_simulations``.
    """
    counts, _ = _normalised(item_counts)
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    if int(max_simulations) != max_simulations or max_simulations < 1:
        raise ValueError(f"max_simulations must be a whole number ≥ 1, got {max_simulations!r}")
    if int(max_confirmations) != max_confirmations or max_confirmations < 1:
        raise ValueError(f"max_confirmations must be a whole number ≥ 1, got {max_confirmations!r}")
    if not (0.5 <= confidence <= MAX_CONFIDENCE):
        raise ValueError(f"the confidence must lie in [0.5, {MAX_CONFIDENCE:g}], got {confidence!r}")
    level = 1.0 - (1.0 - confidence) / max_confirmations
    for name, count, at in (
        ("repetitions", repetitions, confidence),
        ("confirmation repetitions", confirmation_repetitions, level),
    ):
        needed = 2 if target.quantile is None else max(2, minimum_repetitions(target.quantile, at))
        if int(count) != count or count < needed:
            raise ValueError(
                f"{name} must be at least {needed} for a {at:.4g} lower bound of the {target.statistic_label}"
                + ("" if target.quantile is None else " (its smallest value bounds it only from there)")
                + f", got {count!r}"
            )
    smallest = min(counts.values())
    if target.k is not None and target.k >= smallest:
        raise ValueError(
            f"{target.key}: the cutoff K must be smaller than the number of items ({smallest}"
            + (" in the smallest area" if len(counts) > 1 or "" not in counts else "")
            + "); a top-K of every item is always found"
        )
    grid = grid or PlanGrid()
    lines = grid_lines(item_counts, grid)
    if not lines:
        raise ValueError(
            f"no plan of the grid fits {smallest} items within the bounds (N_comp ≤ {grid.max_total_comparisons:,})"
        )
    search = _Search(
        target=target,
        evaluate=evaluate,
        confidence=confidence,
        level=level,
        seeds=search_seeds(seed, repetitions),
        seed=seed,
        confirmation_repetitions=int(confirmation_repetitions),
        max_confirmations=int(max_confirmations),
        max_simulations=int(max_simulations),
        progress=progress,
    )
    return search.run(lines, strategy)


class _OutOfSimulations(Exception):
    pass


class _Search:
    def __init__(
        self,
        *,
        target,
        evaluate,
        confidence,
        level,
        seeds,
        seed,
        confirmation_repetitions,
        max_confirmations,
        max_simulations,
        progress,
    ):
        self.target, self.evaluate, self.seeds, self.seed = target, evaluate, seeds, seed
        self.confidence, self.level = confidence, level
        self.confirmation_repetitions, self.max_confirmations = confirmation_repetitions, max_confirmations
        self.max_simulations, self.progress = max_simulations, progress
        self.judged: dict[Candidate, Judgement] = {}
        self.confirmations: list[Confirmation] = []
        self.trail: list[dict] = []
        self.best: Candidate | None = None  # the bisection's cheapest reaching plan
        self.out_of_simulations = False
        self.repetitions_simulated = 0

    # -- judging and confirming one plan --

    def judge(self, candidate: Candidate) -> bool:
        """Whether ``candidate``'s bound on the search repetitions in force reaches the threshold.

        A plan judged before on fewer repetitions (before a failed confirmation added its own) is
        simulated on the added ones only; one dropped early goes on from where it stopped.
        """
        total = len(self.seeds)
        earlier = self.judged.get(candidate)
        if earlier is not None and earlier.sample == total:
            return earlier.reached
        if earlier is None and len(self.judged) >= self.max_simulations:
            self.out_of_simulations = True
            raise _OutOfSimulations
        collected = (
            None if earlier is None else [{k: [v] for k, v in part.items()} for part in earlier.figures]
        )
        run = 0 if earlier is None else earlier.repetitions
        while run < total:
            chunk = self.evaluate(candidate, self.seeds[run : run + CHUNK])
            if collected is None:
                collected = [{key: [] for key in part} for part in chunk]
            for store, part in zip(collected, chunk, strict=True):
                for key, values in part.items():
                    store[key].append(np.asarray(values, dtype=np.float64))
            self.repetitions_simulated += min(total, run + CHUNK) - run
            run = min(total, run + CHUNK)
            if run < total and any(
                self.target.cannot_reach(np.concatenate(store[self.target.key]), total, self.confidence)
                for store in collected
            ):
                break
        figures = [{key: np.concatenate(chunks) for key, chunks in store.items()} for store in collected]
        if any(self.target.key not in part for part in figures):
            raise ValueError(f"the simulation gave no values of {self.target.key}")
        statistics = [self.target.statistic(part[self.target.key]) for part in figures]
        bounds = [
            self.target.lower_bound(part[self.target.key], self.confidence) if run == total else math.nan
            for part in figures
        ]
        reached = run == total and all(bound >= self.target.threshold for bound in bounds)
        self.judged[candidate] = Judgement(candidate, figures, run, total, statistics, bounds, reached)
        worst = int(np.argmin([-math.inf if math.isnan(b) else b for b in bounds]))
        self.trail.append(
            {
                **candidate.as_dict(),
                "warnings": len(candidate.warnings),
                "repetitions": run,
                "statistic": _finite(statistics[worst]),
                "bound": _finite(bounds[worst]),
                "reached": reached,
            }
        )
        if self.progress:
            self.progress(len(self.judged), self.max_simulations)
        return reached

    def confirm(self, candidate: Candidate) -> bool:
        attempt = len(self.confirmations)
        seeds = confirmation_seeds(self.seed, attempt, self.confirmation_repetitions)
        figures = [
            {key: np.asarray(values, dtype=np.float64) for key, values in part.items()}
            for part in self.evaluate(candidate, seeds)
        ]
        statistics = [self.target.statistic(part[self.target.key]) for part in figures]
        bounds = [self.target.lower_bound(part[self.target.key], self.level) for part in figures]
        passed = all(bound >= self.target.threshold for bound in bounds)
        self.confirmations.append(
            Confirmation(candidate, attempt, len(seeds), self.level, figures, statistics, bounds, passed)
        )
        return passed

    # -- the strategies --

    def run(self, lines: Sequence[_Line], strategy: str) -> SearchResult:
        try:
            self.bisect(lines)
        except _OutOfSimulations:
            pass
        ordered = _Lazy(plans_in_order(lines))
        if strategy == "bisect":
            plan = self.confirmed(
                ordered, first=self.best, after=None, warning_free=False, walk=bool(self.best)
            )
        else:
            plan = self.confirmed(ordered, first=None, after=None, warning_free=False)
        alternative, warning_free_in_grid = None, None
        if plan is not None and plan.warnings:
            alternative = self.confirmed(ordered, first=None, after=plan, warning_free=True)
            warning_free_in_grid = alternative is not None or any(not c.warnings for c in ordered)
        unsimulated = 0 if plan is None else sum(1 for c in ordered.before(plan) if c not in self.judged)
        # scan: exact when every cheaper plan was simulated; bisect: when the bisection covered every line.
        complete = not self.out_of_simulations
        if strategy == "scan" and plan is not None:
            complete = unsimulated == 0
        if self.progress:
            self.progress(len(self.judged), len(self.judged))
        failed = [c for c in self.confirmations if not c.passed]
        passed = {c.candidate: c for c in self.confirmations if c.passed}
        return SearchResult(
            target=self.target,
            confidence=self.confidence,
            confirmation_level=self.level,
            plan=plan,
            judgement=self.judged.get(plan),
            confirmation=passed.get(plan),
            alternative=alternative,
            alternative_judgement=self.judged.get(alternative),
            alternative_confirmation=passed.get(alternative),
            warning_free_in_grid=warning_free_in_grid,
            failed=failed,
            confirmations=len(self.confirmations),
            max_confirmations=self.max_confirmations,
            complete=complete,
            unsimulated_cheaper=unsimulated,
            simulations=len(self.judged),
            repetitions_simulated=self.repetitions_simulated,
            search_repetitions=len(self.seeds),
            line_count=len(lines),
            candidate_count=sum(line.costs.size for line in lines),
            strategy=strategy,
            trail=self.trail,
        )

    def confirmed(self, ordered, *, first, after, warning_free: bool, walk: bool = True) -> Candidate | None:
        """The first plan after ``after`` (in order) that reaches and passes its confirmation; ``first``,
        when given, is tried first (the bisection's answer). ``walk`` False: nothing but ``first``."""
        candidate = first
        while len(self.confirmations) < self.max_confirmations:
            if candidate is None:
                if not walk:
                    return None
                candidate = self.next_reaching(ordered, after, warning_free)
            if candidate is None:
                return None
            if self.confirm(candidate):
                return candidate
            # The search's repetitions flattered this plan: later plans are judged on these ones too.
            self.seeds = [
                *self.seeds,
                *confirmation_seeds(self.seed, len(self.confirmations) - 1, self.confirmation_repetitions),
            ]
            after, candidate = candidate, None
        return None

    def next_reaching(self, ordered, after, warning_free: bool) -> Candidate | None:
        """The first plan after ``after`` that reaches on the search repetitions; when the bound on
        simulations stops the walk, the cheapest such plan among those already simulated."""
        try:
            for candidate in ordered.after(after):
                if warning_free and candidate.warnings:
                    continue
                if self.judge(candidate):
                    return candidate
            return None
        except _OutOfSimulations:
            known = [
                c
                for c, judgement in self.judged.items()
                if judgement.reached
                and (after is None or c.order > after.order)
                and not (warning_free and c.warnings)
            ]
            return min(known, key=lambda c: c.order, default=None)

    def offer(self, candidate: Candidate) -> None:
        if self.best is None or candidate.order < self.best.order:
            self.best = candidate

    def bisect(self, lines: Sequence[_Line]) -> None:
        """Per line, the smallest reaching M cheaper than the best so far (see the module docstring)."""
        for line in lines:
            eligible = line.costs.size
            if self.best is not None:
                # Plans of this line that would beat the best so far: a prefix, as N_comp grows with M.
                eligible = int(np.searchsorted(line.costs, self.best.total_comparisons))
                if eligible < line.costs.size and line.candidate(eligible).order < self.best.order:
                    eligible += 1
            if eligible:
                self._bisect_line(line, eligible)

    def _bisect_line(self, line: _Line, eligible: int) -> None:
        if self.best is None:
            # Gallop: indices 0, 1, 3, 7, … until one reaches; the last miss bounds the bisection below.
            low, high, step = -1, None, 1
            probe = 0
            while probe < eligible:
                if self.judge(line.candidate(probe)):
                    high = probe
                    break
                low, step = probe, step * 2
                probe = low + step
            if high is None:
                if low < eligible - 1 and self.judge(line.candidate(eligible - 1)):
                    high = eligible - 1
                else:
                    return
        else:
            if not self.judge(line.candidate(eligible - 1)):
                return
            low, high = -1, eligible - 1
        # Invariant: ``high`` reaches; ``low`` misses (or is -1, before the first M).
        while high - low > 1:
            middle = (low + high) // 2
            if self.judge(line.candidate(middle)):
                high = middle
            else:
                low = middle
        self.offer(line.candidate(high))


class _Lazy:
    """The plans in order, made as far as they are read and kept for the next walk."""

    def __init__(self, source: Iterator[Candidate]):
        self.source, self.seen = source, []

    def __iter__(self) -> Iterator[Candidate]:
        index = 0
        while True:
            if index == len(self.seen):
                following = next(self.source, None)
                if following is None:
                    return
                self.seen.append(following)
            yield self.seen[index]
            index += 1

    def after(self, candidate: Candidate | None) -> Iterator[Candidate]:
        for following in self:
            if candidate is None or following.order > candidate.order:
                yield following

    def before(self, candidate: Candidate) -> Iterator[Candidate]:
        for earlier in self:
            if earlier.order >= candidate.order:
                return
            yield earlier


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else value


# --- the simulated figures -----------------------------------------------------------------------


def top_k_overlap(scores_rows, truth_top, k: int) -> np.ndarray:
    """Expected number of true top-K items among the K best scores of each row, ties split evenly.

    Items tied at the K-th best score share the places left among them: each of the t tied items
    is in the top K with probability (places left)/t, as under a random order of the tie. (Breaking
    ties by item index would leak the answer when items are numbered by true rank.) With
    ``truth_top`` the K true best items, recall@K = P@K = overlap / K: the reference set and the
    retrieved set both hold K items (seed 002's recall |A_rel|/|Rel| and precision |A_rel|/|A|).
    """
    scores = np.asarray(scores_rows, dtype=np.float64)
    truth_top = np.asarray(truth_top, dtype=bool)
    kth = -np.partition(-scores, k - 1, axis=1)[:, k - 1 : k]
    above = scores > kth
    tied = scores == kth
    places = k - above.sum(axis=1)
    tied_count = tied.sum(axis=1)
    return (above & truth_top).sum(axis=1) + (tied & truth_top).sum(axis=1) * places / tied_count


def simulated_figures(
    sizes: Sequence[int],
    appearances: int,
    *,
    similarity,
    voter_model: SimulationConfig,
    seeds: Sequence[np.random.SeedSequence],
    top_ks: Sequence[int] = (),
) -> dict[str, np.ndarray]:
    """The measures of a plan's final ranking against the truth, one value per repetition (seed).

    The plan is ballots of ``sizes`` N(k) items (Eq. 2; one ballot is the uniform protocol) with
    ``appearances`` M. Repetition r draws voters (§4.1, ``draw_voters`` with ``voter_model``'s ranges
    and voter count) from ``seeds[r]``'s first child and the schedules and votes from its second, runs
    the ballots (``run_adaptive``) and ranks items by ȳ (Eq. 5, ties averaged). Returns ρ_w, τ_w
    (weight offset ``voter_model.weight_offset``), ρ, τ (Eq. 7-9) and, for every K in ``top_ks``,
    recall@K and P@K (``top_k_overlap``).
    """
    z = np.asarray(similarity, dtype=np.float64)
    scores_rows = np.empty((len(seeds), z.size))
    for row, seed in enumerate(seeds):
        voters = draw_voters(z, voter_model, np.random.default_rng(_child(seed, 0)))
        scores_rows[row], _ = run_adaptive(
            voters, tuple(sizes), int(appearances), np.random.default_rng(_child(seed, 1))
        )
    truth = theoretical_ranks(z)
    estimated = np.vstack([ranks_from_scores(row) for row in scores_rows])
    n0 = voter_model.weight_offset
    figures = {
        "rho_w": weighted_spearman_rows(truth, estimated, n0),
        "tau_w": weighted_kendall_rows(truth, estimated, n0),
        "rho": spearman_rows(truth, estimated),
        "tau": kendall_rows(truth, estimated),
    }
    true_order = np.argsort(-np.abs(z), kind="stable")
    for k in sorted(set(top_ks)):
        truth_top = np.zeros(z.size, dtype=bool)
        truth_top[true_order[:k]] = True
        share = top_k_overlap(scores_rows, truth_top, k) / k
        figures[f"recall@{k}"] = share
        figures[f"precision@{k}"] = share.copy()
    return figures


def figure_summary(values, quantile: float | None = None) -> dict:
    """Mean, unbiased sd (None with one repetition), 10th and 90th percentiles, and a stated quantile."""
    values = np.asarray(values, dtype=np.float64)
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return {"mean": None, "sd": None, "p10": None, "p90": None, "quantile": None}
    summary = {
        "mean": float(finite.mean()),
        "sd": float(finite.std(ddof=1)) if finite.size > 1 else None,
        "p10": float(np.quantile(finite, 0.1)),
        "p90": float(np.quantile(finite, 0.9)),
        "quantile": float(np.quantile(finite, quantile)) if quantile is not None else None,
    }
    return summary
