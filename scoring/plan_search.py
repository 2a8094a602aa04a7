"""Plans from a target precision: the cheapest plan whose simulated ranking reaches a stated target.

PURE module: numpy, scipy and the standard library only; randomness comes in as seeds.

A researcher states a target ("top-50 recall ≥ 0.9", "ρ_w ≥ 0.95"), either on average over simulated
repetitions or at a stated quantile of them (the 10th percentile ≥ 0.9: reached in nine repetitions of
ten). The search simulates candidate plans with the voter model of Lombardo et al. §4.1
(``scoring.simulation``) and returns the cheapest plan, by N_comp (Eq. 3), that reaches it.

Plans
-----
A candidate is n_b ballots, the fraction α kept after each (Eq. 2) and M appearances of every item in
every ballot; it costs N_comp = Σ_k ⌈M·N(k)/2⌉ comparisons (Eq. 3). One ballot (n_b = 1) is the
uniform protocol of §2.4: every item appears M times, α plays no part. The grid holds, for each
(n_b, α), every even M (footnote 6) up to the project's bounds on M and on N_comp. "Cheapest" orders
plans by (N_comp, n_b, α, M), so that equal costs are broken the same way every time.

The search
----------
For fixed (n_b, α), N_comp grows strictly with M. If whether the target is reached is monotone in M
(more appearances never make the figure worse), the plans of one (n_b, α) that reach it are a suffix of
its M values, and the cheapest of them is found by bisection. The search walks the (n_b, α) lines
keeping the cheapest plan found so far; on a line, only the M cheaper than it can improve on it, so
it first simulates the largest of those: if that one misses, none cheaper does (by monotonicity) and
the line is done with one simulation; otherwise a bisection finds the line's smallest reaching M,
the new best. The first line has no best yet, so it gallops up M (2, 4, 8, … appearances' steps)
until a plan reaches, then bisects. Under monotonicity the result is exactly the cheapest reaching
plan of the whole grid (the tests check it against brute force). ``strategy="scan"`` makes no such
assumption: it simulates the plans cheapest first and stops at the first that reaches, which is the
definition itself, at the price of many more simulations.

Simulated figures are random. With ``simulated_figures`` every plan is simulated on the same voters
(repetition r draws its voters from the r-th seed's first child, its votes from the second), so that
plans are compared on the same crowds (common random numbers) and the search is reproducible.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from metrics.correlation import (
    kendall_rows,
    ranks_from_scores,
    spearman_rows,
    weighted_kendall_rows,
    weighted_spearman_rows,
)
from scoring.plan import ballot_plan, ballot_sizes
from scoring.simulation import SimulationConfig, draw_voters, run_adaptive, theoretical_ranks

__all__ = [
    "CORRELATIONS",
    "MEASURES",
    "STRATEGIES",
    "Candidate",
    "PlanGrid",
    "SearchResult",
    "Target",
    "figure_summary",
    "grid_lines",
    "parse_target",
    "plan_of",
    "search_plan",
    "simulated_figures",
    "top_k_overlap",
]

CORRELATIONS = ("rho_w", "tau_w", "rho", "tau")
MEASURES = (*CORRELATIONS, "recall", "precision")
STRATEGIES = ("bisect", "scan")
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

Evaluate = Callable[["Candidate"], dict]
Progress = Callable[[int, int], None]


# --- targets -------------------------------------------------------------------------------------


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

    def reached(self, values) -> bool:
        return bool(self.statistic(values) >= self.threshold)

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
    """One plan of the grid: n_b, α (None for the uniform protocol, n_b = 1), M, N(k) and N_comp (Eq. 3)."""

    ballot_count: int
    keep_fraction: float | None
    appearances: int
    sizes: tuple[int, ...]
    total_comparisons: int

    @property
    def protocol(self) -> str:
        return "uniform" if self.ballot_count == 1 else "adaptive"

    @property
    def order(self) -> tuple:
        """The order of cost: N_comp first, then n_b, α and M (equal costs broken the same way every time)."""
        return (self.total_comparisons, self.ballot_count, self.keep_fraction or 0.0, self.appearances)

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
    sizes: tuple[int, ...]
    appearances: np.ndarray
    costs: np.ndarray

    def candidate(self, index: int) -> Candidate:
        return Candidate(
            ballot_count=self.ballot_count,
            keep_fraction=self.keep_fraction,
            appearances=int(self.appearances[index]),
            sizes=self.sizes,
            total_comparisons=int(self.costs[index]),
        )

    def orders(self) -> list[tuple]:
        alpha = self.keep_fraction or 0.0
        return [
            (int(c), self.ballot_count, alpha, int(m))
            for c, m in zip(self.costs, self.appearances, strict=True)
        ]


def grid_lines(item_count: int, grid: PlanGrid) -> list[_Line]:
    """Every (n_b, α) of the grid that ``item_count`` items allow, with its M values and N_comp (Eq. 3).

    The paper's n_b = 7, α = 0.5 comes first when it is in the grid (a good first bound for the
    search); the uniform line (n_b = 1) has one α, None. Lines whose ballots would hold fewer than two
    items (Eq. 2) are left out, as are M values past the bounds.
    """
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
            sizes = ballot_sizes(item_count, ballot_count, 0.5 if alpha is None else alpha)
        except ValueError:
            continue
        # Eq. 3 for every M at once: Σ_k ⌈M·N(k)/2⌉.
        costs = ((appearances[:, None] * np.asarray(sizes)[None, :] + 1) // 2).sum(axis=1)
        within = costs <= grid.max_total_comparisons
        if within.any():
            lines.append(_Line(ballot_count, alpha, sizes, appearances[within], costs[within]))
    return lines


# --- the search ----------------------------------------------------------------------------------


@dataclass
class SearchResult:
    """What the search found and what it did.

    ``plan`` is the cheapest plan found that reaches the target (None if none did); ``complete`` says
    the whole grid was covered (False when the bound on simulations stopped the search first: the plan
    is then the cheapest found, not proven the cheapest). ``trail`` lists every simulated plan with
    the target's statistic, in the order simulated.
    """

    target: Target
    plan: Candidate | None
    figures: dict
    complete: bool
    simulations: int
    line_count: int
    candidate_count: int
    strategy: str
    trail: list = field(default_factory=list)


def search_plan(
    *,
    item_count: int,
    target: Target,
    evaluate: Evaluate,
    grid: PlanGrid | None = None,
    max_simulations: int = 300,
    strategy: str = "bisect",
    progress: Progress | None = None,
) -> SearchResult:
    """The cheapest plan of ``grid`` (by ``Candidate.order``) whose figures reach ``target``.

    ``evaluate(candidate)`` returns ``{measure key: values over repetitions}`` (e.g. from
    ``simulated_figures``); it is called at most ``max_simulations`` times, once per plan.
    ``progress(done, total)`` counts the (n_b, α) lines searched (``bisect``) or the plans simulated
    out of the bound (``scan``). See the module's docstring for the two strategies and when each is
    exact.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    if int(max_simulations) != max_simulations or max_simulations < 1:
        raise ValueError(f"max_simulations must be a whole number ≥ 1, got {max_simulations!r}")
    if target.k is not None and target.k >= item_count:
        raise ValueError(
            f"{target.key}: the cutoff K must be smaller than the number of items ({item_count}); "
            "a top-K of every item is always found"
        )
    grid = grid or PlanGrid()
    lines = grid_lines(item_count, grid)
    if not lines:
        raise ValueError(
            f"no plan of the grid fits {item_count} items within the bounds (N_comp ≤ {grid.max_total_comparisons:,})"
        )
    search = _Search(target, evaluate, max_simulations)
    try:
        if strategy == "scan":
            search.scan(lines, progress)
        else:
            search.bisect(lines, progress)
        complete = True
    except _OutOfSimulations:
        complete = False
    best = search.best
    return SearchResult(
        target=target,
        plan=best,
        figures=search.figures[best] if best is not None else {},
        complete=complete,
        simulations=len(search.figures),
        line_count=len(lines),
        candidate_count=sum(line.costs.size for line in lines),
        strategy=strategy,
        trail=search.trail,
    )


class _OutOfSimulations(Exception):
    pass


class _Search:
    def __init__(self, target: Target, evaluate: Evaluate, max_simulations: int):
        self.target, self.evaluate, self.max_simulations = target, evaluate, max_simulations
        self.figures: dict[Candidate, dict] = {}
        self.trail: list[dict] = []
        self.best: Candidate | None = None

    def reaches(self, candidate: Candidate) -> bool:
        if candidate not in self.figures:
            if len(self.figures) >= self.max_simulations:
                raise _OutOfSimulations
            figures = self.evaluate(candidate)
            if self.target.key not in figures:
                raise ValueError(f"the simulation gave no values of {self.target.key}")
            self.figures[candidate] = figures
            statistic = self.target.statistic(figures[self.target.key])
            self.trail.append(
                {
                    **candidate.as_dict(),
                    "statistic": None if math.isnan(statistic) else statistic,
                    "reached": bool(statistic >= self.target.threshold),
                }
            )
        return self.target.reached(self.figures[candidate][self.target.key])

    def offer(self, candidate: Candidate) -> None:
        if self.best is None or candidate.order < self.best.order:
            self.best = candidate

    def scan(self, lines: Sequence[_Line], progress: Progress | None) -> None:
        """Cheapest first over the whole grid; the first plan that reaches is the answer."""
        everything = sorted(
            ((order, line, index) for line in lines for index, order in enumerate(line.orders())),
            key=lambda entry: entry[0],
        )
        total = min(len(everything), self.max_simulations)
        for _order, line, index in everything:
            candidate = line.candidate(index)
            reached = self.reaches(candidate)
            if progress:
                progress(min(len(self.figures), total), total)
            if reached:
                self.best = candidate
                break
        if progress:
            progress(total, total)

    def bisect(self, lines: Sequence[_Line], progress: Progress | None) -> None:
        """Per line, the smallest reaching M cheaper than the best so far (see the module docstring)."""
        for done, line in enumerate(lines, start=1):
            orders = line.orders()
            # Plans of this line that would beat the best so far: a prefix, as N_comp grows with M.
            eligible = len(orders) if self.best is None else sum(order < self.best.order for order in orders)
            if eligible:
                self._bisect_line(line, eligible)
            if progress:
                progress(done, len(lines))

    def _bisect_line(self, line: _Line, eligible: int) -> None:
        if self.best is None:
            # Gallop: indices 0, 1, 3, 7, … until one reaches; the last miss bounds the bisection below.
            low, high, step = -1, None, 1
            probe = 0
            while probe < eligible:
                if self.reaches(line.candidate(probe)):
                    high = probe
                    break
                low, step = probe, step * 2
                probe = low + step
            if high is None:
                if low < eligible - 1 and self.reaches(line.candidate(eligible - 1)):
                    high = eligible - 1
                else:
                    return
        else:
            if not self.reaches(line.candidate(eligible - 1)):
                return
            low, high = -1, eligible - 1
        # Invariant: ``high`` reaches; ``low`` misses (or is -1, before the first M).
        while high - low > 1:
            middle = (low + high) // 2
            if self.reaches(line.candidate(middle)):
                high = middle
            else:
                low = middle
        self.offer(line.candidate(high))


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
    candidate: Candidate,
    *,
    similarity,
    voter_model: SimulationConfig,
    seeds: Sequence[np.random.SeedSequence],
    top_ks: Sequence[int] = (),
) -> dict[str, np.ndarray]:
    """The measures of ``candidate``'s final ranking against the truth, one value per repetition.

    Repetition r draws voters (§4.1, ``draw_voters`` with ``voter_model``'s ranges and voter count)
    from ``seeds[r].spawn(2)[0]`` and the schedules and votes from the second child, then runs the
    plan's ballots (``run_adaptive``; one ballot is the uniform protocol) and ranks items by ȳ
    (Eq. 5, ties averaged). Returns ρ_w, τ_w (weight offset ``voter_model.weight_offset``), ρ, τ
    (Eq. 7-9) and, for every K in ``top_ks``, recall@K and P@K (``top_k_overlap``).
    """
    z = np.asarray(similarity, dtype=np.float64)
    scores_rows = np.empty((len(seeds), z.size))
    for row, seed in enumerate(seeds):
        voter_seed, vote_seed = _children(seed)
        voters = draw_voters(z, voter_model, np.random.default_rng(voter_seed))
        scores_rows[row], _ = run_adaptive(
            voters, candidate.sizes, candidate.appearances, np.random.default_rng(vote_seed)
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


def _children(seed: np.random.SeedSequence) -> tuple[np.random.SeedSequence, np.random.SeedSequence]:
    # spawn() advances the parent; rebuilding the first two children keeps every plan on the same voters.
    return tuple(
        np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, index), pool_size=seed.pool_size)
        for index in (0, 1)
    )


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


def plan_of(candidate: Candidate, *, item_count: int, seconds_per_comparison: float | None = None):
    """The ``BallotPlan`` of a candidate (α = 0.5 stands in for the uniform one, where it plays no part),
    with its §2.7 warnings and the cost estimate of Eq. 10."""
    return ballot_plan(
        item_count=item_count,
        ballot_count=candidate.ballot_count,
        keep_fraction=candidate.keep_fraction if candidate.keep_fraction is not None else 0.5,
        appearances=candidate.appearances,
        seconds_per_comparison=seconds_per_comparison,
    )
