"""Protocols compared at equal budget: uniform, adaptive (Lombardo et al.) and confidence elimination.

PURE module: numpy, scipy and the standard library only; randomness comes in as seeds.

Each repetition draws one crowd of the §4.1 voter model of Lombardo et al. (``draw_voters``) and runs
the three protocols on that same crowd, each with its own stream of votes:

- ``uniform``: §2.4, the budget spread evenly over all items (``run_uniform``);
- ``adaptive``: §2.5, n_b ballots keeping the top α, M appearances per item per ballot
  (``run_adaptive``); its N_comp (Eq. 3) *is* the budget the other two get;
- ``elimination``: the batched confidence elimination of ``scoring.elimination`` (Heckel et al. 2019),
  R rounds, cutoffs K_1 … K_L, confidence δ, exactly N_comp comparisons.

Each final ranking (ties averaged) is measured against the theoretical ranking by relatedness |z|:
ρ_w and τ_w (Eq. 8-9, weight offset n0), ρ and τ (Eq. 7), and for each K the top-K recall and P@K
(``top_k_overlap``: the share of the true top K among the K best scores, ties split evenly; with K
items on both sides recall@K and P@K are the same number).

``score_model_figures`` ranks the adaptive protocol's votes by each score model
(``scoring.score_models``): the same simulated votes scored by rescaled Borda, Bradley-Terry and the
worker-aware Bradley-Terry, so the budget is exactly equal; and the variant where the model also picks
the survivors at every close (other votes, the same ballot sizes, so the same budget). The crowd is the
§4.1 crowd or one of ``scoring.simulation.CROWD_MIXES``; ``paired_differences`` tests each model
against Borda, paired over repetitions.

``budget_to_reach`` finds, per protocol, the smallest budget whose figures reach a target
(``scoring.plan_search.Target``) by galloping and bisection on a grid of budgets, on the same crowds
for every budget (common random numbers): the adaptive protocol's budgets are its N_comp for M = 2, 4,
6, … (footnote 6, n_b and α fixed); the others' are multiples of ⌈N/2⌉ (one more appearance per item
for the uniform protocol). As in ``plan_search``, bisection assumes that more budget never makes the
figure worse.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from metrics.correlation import (
    kendall_rows,
    ranks_from_scores,
    spearman_rows,
    weighted_kendall_rows,
    weighted_spearman_rows,
)
from scoring.elimination import (
    DEFAULT_CUTOFFS,
    DEFAULT_DELTA,
    check_budget,
    check_elimination,
    run_elimination,
)
from scoring.plan import ballot_sizes, comparisons_for
from scoring.plan_search import Target, figure_summary, top_k_overlap
from scoring.score_models import BORDA, SCORE_MODELS, scores_from_votes
from scoring.simulation import (
    CROWD_MIXES,
    SimulationConfig,
    draw_voters,
    run_adaptive,
    run_uniform,
    theoretical_ranks,
    with_crowd_mix,
)

__all__ = [
    "CORRELATIONS",
    "PROTOCOLS",
    "Protocols",
    "budget_to_reach",
    "compare_at_budget",
    "measure_keys",
    "paired_differences",
    "protocol_figures",
    "score_model_figures",
]

PROTOCOLS = ("uniform", "adaptive", "elimination")
CORRELATIONS = ("rho_w", "tau_w", "rho", "tau")

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Protocols:
    """The settings of the adaptive and the elimination protocol for N items.

    ``ballot_count`` n_b, ``keep_fraction`` α and ``appearances`` M are the adaptive plan (Eq. 2-3);
    ``round_count`` R, ``cutoffs`` and ``delta`` δ the elimination's. The budget of all three is the
    adaptive plan's N_comp.
    """

    item_count: int
    ballot_count: int = 7
    keep_fraction: float = 0.5
    appearances: int = 20
    round_count: int = 7
    cutoffs: tuple[int, ...] = DEFAULT_CUTOFFS
    delta: float = DEFAULT_DELTA

    def __post_init__(self):
        if int(self.appearances) != self.appearances or self.appearances < 1:
            raise ValueError(f"appearances M must be a positive whole number, got {self.appearances!r}")
        cutoffs = tuple(k for k in self.cutoffs if k < self.item_count) or (max(1, self.item_count // 10),)
        object.__setattr__(self, "cutoffs", tuple(sorted(set(int(k) for k in cutoffs))))
        check_elimination(
            item_count=self.item_count, round_count=self.round_count, cutoffs=self.cutoffs, delta=self.delta
        )

    @property
    def sizes(self) -> tuple[int, ...]:
        """N(k), k = 1 … n_b (Eq. 2)."""
        return ballot_sizes(self.item_count, self.ballot_count, self.keep_fraction)

    @property
    def budget(self) -> int:
        """N_comp = Σ_k ⌈M·N(k)/2⌉ (Eq. 3), the comparisons every protocol makes."""
        return sum(comparisons_for(size, self.appearances) for size in self.sizes)

    def with_appearances(self, appearances: int) -> Protocols:
        return Protocols(
            item_count=self.item_count,
            ballot_count=self.ballot_count,
            keep_fraction=self.keep_fraction,
            appearances=appearances,
            round_count=self.round_count,
            cutoffs=self.cutoffs,
            delta=self.delta,
        )

    def as_dict(self) -> dict:
        return {
            "item_count": self.item_count,
            "ballot_count": self.ballot_count,
            "keep_fraction": self.keep_fraction,
            "appearances": self.appearances,
            "sizes": list(self.sizes),
            "budget": self.budget,
            "round_count": self.round_count,
            "cutoffs": list(self.cutoffs),
            "delta": self.delta,
        }


def measure_keys(top_ks: Sequence[int]) -> list[str]:
    """``rho_w``, ``tau_w``, ``rho``, ``tau``, then ``recall@K`` and ``precision@K`` for each K."""
    keys = list(CORRELATIONS)
    for k in sorted(set(top_ks)):
        keys += [f"recall@{k}", f"precision@{k}"]
    return keys


def protocol_figures(
    protocols: Protocols,
    *,
    similarity,
    voter_model: SimulationConfig,
    seeds: Sequence[np.random.SeedSequence],
    top_ks: Sequence[int] = (10, 50, 100),
    which: Sequence[str] = PROTOCOLS,
    budget: int | None = None,
) -> dict[str, dict[str, np.ndarray]]:
    """``{protocol: {measure: values over repetitions}}`` at equal budget.

    Repetition r draws its crowd from the first child of ``seeds[r]`` (the same for every protocol and
    every budget) and each protocol's votes from a child of the second. ``budget`` (default the
    adaptive plan's N_comp) is what the uniform and the elimination protocol spend; the adaptive one
    always spends its own N_comp, so pass a budget only when comparing the other two alone.
    """
    z = np.asarray(similarity, dtype=np.float64)
    if z.size != protocols.item_count:
        raise ValueError(f"expected {protocols.item_count} similarities, got {z.size}")
    unknown = sorted(set(which) - set(PROTOCOLS))
    if unknown:
        raise ValueError(f"unknown protocols {unknown}; choose from {', '.join(PROTOCOLS)}")
    top_ks = sorted({int(k) for k in top_ks if 1 <= k < z.size})
    spend = protocols.budget if budget is None else int(budget)
    if "elimination" in which:
        check_budget(item_count=z.size, comparison_budget=spend, round_count=protocols.round_count)
    scores = {name: np.empty((len(seeds), z.size)) for name in which}
    for row, seed in enumerate(seeds):
        voter_seed, vote_seed = _children(seed, 2)
        voters = draw_voters(z, voter_model, np.random.default_rng(voter_seed))
        streams = dict(zip(PROTOCOLS, _children(vote_seed, len(PROTOCOLS)), strict=True))
        if "uniform" in which:
            scores["uniform"][row] = run_uniform(voters, spend, np.random.default_rng(streams["uniform"]))
        if "adaptive" in which:
            scores["adaptive"][row], _ = run_adaptive(
                voters, protocols.sizes, protocols.appearances, np.random.default_rng(streams["adaptive"])
            )
        if "elimination" in which:
            scores["elimination"][row] = run_elimination(
                voters,
                comparison_budget=spend,
                round_count=protocols.round_count,
                cutoffs=protocols.cutoffs,
                delta=protocols.delta,
                rng=np.random.default_rng(streams["elimination"]),
            ).score
    return {name: _measures(rows, z, voter_model.weight_offset, top_ks) for name, rows in scores.items()}


def _measures(rows: np.ndarray, z: np.ndarray, n0: float, top_ks: Sequence[int]) -> dict[str, np.ndarray]:
    """ρ_w, τ_w (Eq. 8-9), ρ, τ and recall/P@K of each row of scores against the ranks by |z|."""
    truth = theoretical_ranks(z)
    true_order = np.argsort(-np.abs(z), kind="stable")
    estimated = np.vstack([ranks_from_scores(row) for row in rows])
    values = {
        "rho_w": weighted_spearman_rows(truth, estimated, n0),
        "tau_w": weighted_kendall_rows(truth, estimated, n0),
        "rho": spearman_rows(truth, estimated),
        "tau": kendall_rows(truth, estimated),
    }
    for k in top_ks:
        truth_top = np.zeros(z.size, dtype=bool)
        truth_top[true_order[:k]] = True
        share = top_k_overlap(rows, truth_top, k) / k
        values[f"recall@{k}"] = share
        values[f"precision@{k}"] = share.copy()
    return values


SELECTS = ":selects"  # suffix of the variant where the score model also picks the survivors


def score_model_figures(
    protocols: Protocols,
    *,
    similarity,
    voter_model: SimulationConfig,
    seeds: Sequence[np.random.SeedSequence],
    crowd: str = "paper",
    models: Sequence[str] = SCORE_MODELS,
    top_ks: Sequence[int] = (10, 50, 100),
    model_selects: bool = True,
) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, np.ndarray]]:
    """The adaptive protocol's votes ranked by each score model, and the comparisons each variant made.

    Repetition r draws the crowd of ``protocol_figures`` (the same voters for the same seed), turned
    into ``crowd`` (``with_crowd_mix``), and runs the adaptive protocol on the vote stream that
    ``protocol_figures`` gives it, so the ``borda`` variant is ``protocol_figures``' adaptive protocol
    on that crowd. Variant ``<model>`` scores those same votes by ``model`` (``scores_from_votes``,
    every ballot's votes); variant ``<model>:selects`` (with ``model_selects``, for models other than
    Borda) reruns the ballots on the same stream with the survivors of each close chosen by ``model``
    fitted on the votes so far, and scores the final ranking by ``model``.

    Returns ``({variant: {measure: values over repetitions}}, {variant: comparisons per repetition}``).
    """
    z = np.asarray(similarity, dtype=np.float64)
    if z.size != protocols.item_count:
        raise ValueError(f"expected {protocols.item_count} similarities, got {z.size}")
    unknown = sorted(set(models) - set(SCORE_MODELS))
    if unknown or not models:
        raise ValueError(f"unknown score models {unknown}; choose from {', '.join(SCORE_MODELS)}")
    if crowd not in CROWD_MIXES:
        raise ValueError(f"crowd must be one of {', '.join(CROWD_MIXES)}, got {crowd!r}")
    top_ks = sorted({int(k) for k in top_ks if 1 <= k < z.size})
    variants = list(models) + [m + SELECTS for m in models if model_selects and m != BORDA]
    scores = {name: np.empty((len(seeds), z.size)) for name in variants}
    comparisons = {name: np.zeros(len(seeds), dtype=np.int64) for name in variants}

    def scored(model: str, record: list) -> np.ndarray:
        return scores_from_votes(
            model,
            ballot=np.concatenate([np.full(b["left"].size, k) for k, b in enumerate(record, start=1)]),
            left=np.concatenate([b["left"] for b in record]),
            right=np.concatenate([b["right"] for b in record]),
            outcome=np.concatenate([b["outcome"] for b in record]),
            annotator=np.concatenate([b["voter"] for b in record]),
            item_count=z.size,
            ballot_count=len(record),
        )

    for row, seed in enumerate(seeds):
        voter_seed, vote_seed = _children(seed, 2)
        voters = with_crowd_mix(draw_voters(z, voter_model, np.random.default_rng(voter_seed)), crowd)
        stream = _children(vote_seed, len(PROTOCOLS))[PROTOCOLS.index("adaptive")]
        record: list = []
        run_adaptive(voters, protocols.sizes, protocols.appearances, np.random.default_rng(stream), record)
        spent = sum(b["left"].size for b in record)
        for model in models:
            scores[model][row] = scored(model, record)
            comparisons[model][row] = spent
        for model in models:
            if not model_selects or model == BORDA:
                continue
            rerun: list = []
            run_adaptive(
                voters,
                protocols.sizes,
                protocols.appearances,
                np.random.default_rng(stream),
                rerun,
                selection=lambda so_far, model=model: scored(model, so_far),
            )
            scores[model + SELECTS][row] = scored(model, rerun)
            comparisons[model + SELECTS][row] = sum(b["left"].size for b in rerun)
    figures = {name: _measures(rows, z, voter_model.weight_offset, top_ks) for name, rows in scores.items()}
    return figures, comparisons


def paired_differences(figures: dict[str, dict[str, np.ndarray]], reference: str = BORDA) -> dict:
    """Each variant minus ``reference``, paired over repetitions, for every measure.

    ``{variant: {measure: {"mean", "sd", "low", "high", "p", "wins"}}}``: the mean difference, its sd
    (ddof 1), the 95% t interval of the mean, the two-sided p of the paired t-test (Student 1908;
    ``scipy.stats.ttest_rel``; None when every difference is the same), and the repetitions in which
    the variant did better.
    """
    from scipy import stats  # on first use: scipy.stats stays out of processes that never compare

    out = {}
    for name, measures in figures.items():
        if name == reference:
            continue
        out[name] = {}
        for key, values in measures.items():
            difference = values - figures[reference][key]
            count = difference.size
            mean = float(difference.mean())
            sd = float(difference.std(ddof=1)) if count > 1 else math.nan
            if count > 1 and sd > 0:
                half = float(stats.t.ppf(0.975, count - 1)) * sd / math.sqrt(count)
                p = float(stats.ttest_rel(values, figures[reference][key]).pvalue)
            else:
                half, p = math.nan, math.nan
            out[name][key] = {
                "mean": mean,
                "sd": None if math.isnan(sd) else sd,
                "low": None if math.isnan(half) else mean - half,
                "high": None if math.isnan(half) else mean + half,
                "p": None if math.isnan(p) else p,
                "wins": int((difference > 0).sum()),
            }
    return out


def compare_at_budget(
    protocols: Protocols,
    *,
    similarity,
    voter_model: SimulationConfig,
    repetitions: int,
    seed: int,
    top_ks: Sequence[int] = (10, 50, 100),
) -> dict:
    """Mean, sd (ddof 1), 10th and 90th percentiles of every measure, per protocol, at N_comp each.

    Repetition r uses ``SeedSequence(seed).spawn(repetitions)[r]``.
    """
    if int(repetitions) != repetitions or repetitions < 1:
        raise ValueError(f"repetitions must be a whole number ≥ 1, got {repetitions!r}")
    seeds = np.random.SeedSequence(seed).spawn(int(repetitions))
    figures = protocol_figures(
        protocols, similarity=similarity, voter_model=voter_model, seeds=seeds, top_ks=top_ks
    )
    return {
        name: {key: figure_summary(values) for key, values in measures.items()}
        for name, measures in figures.items()
    }


def budget_to_reach(
    protocol: str,
    target: Target,
    protocols: Protocols,
    *,
    similarity,
    voter_model: SimulationConfig,
    repetitions: int,
    seed: int,
    max_budget: int = 500_000,
    progress: Progress | None = None,
) -> dict:
    """The smallest budget on ``protocol``'s grid (module docstring) whose figures reach ``target``.

    Returns ``{"protocol", "budget" (None if even ``max_budget`` misses), "statistic" (the target's
    statistic there, or at the largest budget tried), "evaluations", "trail": [(budget, statistic)]}``.
    The adaptive protocol keeps ``protocols``' n_b and α and varies M; the elimination keeps R, the
    cutoffs and δ.
    """
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {', '.join(PROTOCOLS)}, got {protocol!r}")
    if target.k is not None and target.k >= protocols.item_count:
        raise ValueError(f"{target.key}: K must be smaller than the number of items ({protocols.item_count})")
    seeds = np.random.SeedSequence(seed).spawn(int(repetitions))
    top_ks = [target.k] if target.k is not None else []
    n = protocols.item_count
    if protocol == "adaptive":
        unit = sum(protocols.sizes)  # N_comp of M = 2·level is level·ΣN(k)

        def budget_of(level: int) -> int:
            return level * unit

        lowest = 1
    else:
        unit = -(-n // 2)

        def budget_of(level: int) -> int:
            return level * unit

        lowest = 1
        if protocol == "elimination":
            # ⌈B/R⌉ ≥ N: the first round must give every item a comparison.
            lowest = -(-((n - 1) * protocols.round_count + 1) // unit)
    highest = max_budget // unit
    if highest < lowest:
        raise ValueError(f"the largest budget, {max_budget:,}, is below the smallest {protocol} budget")
    trail: list[tuple[int, float]] = []
    cache: dict[int, bool] = {}

    def reaches(level: int) -> bool:
        if level not in cache:
            budget = budget_of(level)
            if protocol == "adaptive":
                figures = protocol_figures(
                    protocols.with_appearances(2 * level),
                    similarity=similarity,
                    voter_model=voter_model,
                    seeds=seeds,
                    top_ks=top_ks,
                    which=("adaptive",),
                )
            else:
                figures = protocol_figures(
                    protocols,
                    similarity=similarity,
                    voter_model=voter_model,
                    seeds=seeds,
                    top_ks=top_ks,
                    which=(protocol,),
                    budget=budget,
                )
            statistic = target.statistic(figures[protocol][target.key])
            trail.append((budget, None if math.isnan(statistic) else statistic))
            cache[level] = bool(statistic >= target.threshold)
            if progress:
                progress(len(trail), len(trail) + 1)
        return cache[level]

    # Gallop: lowest, lowest+1, lowest+3, … until a level reaches; the last miss bounds the bisection.
    low, high, step, probe = lowest - 1, None, 1, lowest
    while probe <= highest:
        if reaches(probe):
            high = probe
            break
        low, step = probe, step * 2
        probe = low + step
    if high is None and low < highest and reaches(highest):
        high = highest
    if high is not None:
        while high - low > 1:
            middle = (low + high) // 2
            if reaches(middle):
                high = middle
            else:
                low = middle
    if progress:
        progress(len(trail), len(trail))
    reached_budget = None if high is None else budget_of(high)
    statistic = dict(trail).get(reached_budget) if reached_budget is not None else trail[-1][1]
    return {
        "protocol": protocol,
        "budget": reached_budget,
        "statistic": statistic,
        "evaluations": len(trail),
        "trail": [{"budget": b, "statistic": s} for b, s in trail],
    }


def _children(seed: np.random.SeedSequence, count: int) -> tuple[np.random.SeedSequence, ...]:
    # Rebuilt rather than spawned: spawn() advances the parent, and every budget must see the same crowds.
    return tuple(
        np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, index), pool_size=seed.pool_size)
        for index in range(count)
    )
