"""Simulated relatedness-driven voting: uniform versus adaptive vote collection.

PURE module: numpy, scipy and the standard library only; randomness comes in as
``numpy.random.Generator`` or ``numpy.random.SeedSequence``.

Lombardo et al. §4.1. Item i has an underlying similarity z_i ∈ [-1, 1]; its theoretical rank is
by relatedness |z_i|, highest first. Voter v has a nonconformity σ*_v and an oversight probability
ε_v, and holds the opinion (Eq. 11, made relatedness-driven by §4.1.2)

    o_i(v) = |F(z_i + σ*_v·(1 - z_i²)·η_i(v))|,   F(x) = max(-1, min(1, x)),

with η_i(v) standard normal, drawn once per voter and item. Shown two items, the voter picks the one
with the higher opinion, except with probability ε_v (an oversight) the other one; equal opinions
are a tie. The uniform protocol (§2.4) spends N_comp comparisons evenly over all items; the adaptive
protocol (§2.5) runs the ballots of the plan with the same N_comp. Comparisons of each ballot are
dealt evenly to the voters. §4.2 and Table 2 report mean ± unbiased standard deviation of ρ_w, τ_w,
ρ and τ between the estimated and the theoretical ranking over repeated simulations.

Differences from the paper's public code, where it departs from the paper's equations: the noise is
σ*·(1 - z²) as in §4.1.1 (the code uses σ*·z·(1 - z)); ranks of tied scores are averaged instead of
being broken by item index (which, with items numbered by true rank, leaks the answer); the
adaptive scores follow Eq. 5 (see ``scoring.borda``).

Crowd mixes (``CROWD_MIXES``, ``with_crowd_mix``) replace a share of the §4.1 voters by the bad
annotators of issue 10's quality tests (``tests/factories.QualityCrowd``): speeders and random
clickers pick a side at random, one-sided annotators always pick the left (or the right) item.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from collection.schedule import ballot_schedule, uniform_schedule
from common.numbers import finite_or_none
from metrics.correlation import kendall, ranks_from_scores, spearman, weighted_kendall, weighted_spearman
from scoring.borda import ballot_tallies, score_ballot, select_survivors
from scoring.plan import ballot_plan

__all__ = [
    "CROWD_MIXES",
    "DISTRIBUTIONS",
    "METRICS",
    "SimulationConfig",
    "Voters",
    "cast_votes",
    "deal_comparisons",
    "draw_voters",
    "run_adaptive",
    "run_uniform",
    "simulate_repetition",
    "summarize",
    "theoretical_ranks",
    "underlying_similarity",
    "voter_outcomes",
    "with_crowd_mix",
]

DISTRIBUTIONS = ("exponential", "power_law", "file")
METRICS = ("rho_w", "tau_w", "rho", "tau")


@dataclass(frozen=True)
class SimulationConfig:
    """Parameters of one Table 2 row; the defaults are the paper's (§4.2)."""

    distribution: str = "exponential"
    item_count: int = 990
    ballot_count: int = 7
    keep_fraction: float = 0.5
    appearances: int = 20
    voter_count: int = 100
    nonconformity_min: float = 0.02
    nonconformity_max: float = 0.2
    oversight_min: float = 0.005
    oversight_max: float = 0.05
    weight_offset: float = 2.0

    def __post_init__(self):
        if self.distribution not in DISTRIBUTIONS:
            raise ValueError(
                f"distribution must be one of {', '.join(DISTRIBUTIONS)}, got {self.distribution!r}"
            )
        if self.voter_count < 1:
            raise ValueError(f"voter_count must be at least 1, got {self.voter_count}")
        for low, high, name in (
            (self.nonconformity_min, self.nonconformity_max, "nonconformity"),
            (self.oversight_min, self.oversight_max, "oversight"),
        ):
            if not 0.0 <= low <= high:
                raise ValueError(f"{name} range must satisfy 0 ≤ min ≤ max, got [{low}, {high}]")
        if self.oversight_max > 1.0:
            raise ValueError(f"oversight is a probability, got a maximum of {self.oversight_max}")
        # Validates n_b, α, M and N_items, with the error messages of the plan.
        ballot_plan(
            item_count=self.item_count,
            ballot_count=self.ballot_count,
            keep_fraction=self.keep_fraction,
            appearances=self.appearances,
        )

    def as_dict(self) -> dict:
        return asdict(self)


# Voter behaviours: the §4.1 voter, then issue 10's bad annotators (a speeder clicks at random, fast).
GOOD, SPEEDER, LEFT, RIGHT, RANDOM = 0, 1, 2, 3, 4
BEHAVIOURS = {"good": GOOD, "speeder": SPEEDER, "left": LEFT, "right": RIGHT, "random": RANDOM}
# Share of the voters of each bad kind; "mixed" is issue 10's crowd (10 good of 16: 2 speeders, one
# always left, one always right, 2 random clickers; tests/scoring/test_quality_crowd.py).
CROWD_MIXES = {
    "paper": {},
    "speeders": {"speeder": 0.2},
    "one_sided": {"left": 0.1, "right": 0.1},
    "random": {"random": 0.2},
    "mixed": {"speeder": 2 / 16, "left": 1 / 16, "right": 1 / 16, "random": 2 / 16},
}


@dataclass(frozen=True)
class Voters:
    """Opinions o_i(v) (voters × items) and oversight probabilities ε_v of a simulated crowd.

    ``behaviour`` (optional) is each voter's kind, a value of ``BEHAVIOURS``; None: all §4.1 voters.
    """

    opinions: np.ndarray
    oversight: np.ndarray
    nonconformity: np.ndarray
    behaviour: np.ndarray | None = None


def with_crowd_mix(voters: Voters, mix: str) -> Voters:
    """The crowd with the first ⌊share·V⌉ voters of each bad kind of ``CROWD_MIXES[mix]`` (in the order
    speeder, left, right, random) in place of §4.1 voters; the others keep their opinions. Voters are
    exchangeable, so taking the first ones draws nothing."""
    if mix not in CROWD_MIXES:
        raise ValueError(f"crowd mix must be one of {', '.join(CROWD_MIXES)}, got {mix!r}")
    behaviour = np.full(voters.oversight.size, GOOD, dtype=np.int64)
    start = 0
    for kind, share in CROWD_MIXES[mix].items():
        count = int(round(share * voters.oversight.size))
        behaviour[start : start + count] = BEHAVIOURS[kind]
        start += count
    return Voters(voters.opinions, voters.oversight, voters.nonconformity, behaviour)


def underlying_similarity(distribution: str, item_count: int, values=None) -> np.ndarray:
    """Underlying similarities z_i of §4.1.1, for i = 0 … N_items-1.

    ``exponential``: z_i = 2·exp(-i/N) - 1; ``power_law``: z_i = 2/(1 + sqrt(i/N)) - 1; ``file``: the
    given ``values`` (e.g. the paper's embedding cosine similarities), which must lie in [-1, 1].
    """
    index = np.arange(item_count, dtype=np.float64)
    if distribution == "exponential":
        return 2.0 * np.exp(-index / item_count) - 1.0
    if distribution == "power_law":
        return 2.0 / (1.0 + np.sqrt(index / item_count)) - 1.0
    if distribution == "file":
        if values is None:
            raise ValueError("the 'file' distribution needs the similarity values")
        z = np.asarray(values, dtype=np.float64)
        if z.ndim != 1 or z.size != item_count:
            raise ValueError(f"expected {item_count} similarity values, got {z.size}")
        if not np.all(np.isfinite(z)) or np.abs(z).max() > 1.0:
            raise ValueError("similarity values must be finite and lie in [-1, 1]")
        return z
    raise ValueError(f"distribution must be one of {', '.join(DISTRIBUTIONS)}, got {distribution!r}")


def theoretical_ranks(similarity) -> np.ndarray:
    """Ranks by relatedness |z| (§4.1.2), 1 = most related, average ranks for ties."""
    return ranks_from_scores(np.abs(np.asarray(similarity, dtype=np.float64)))


def draw_voters(similarity, config: SimulationConfig, rng: np.random.Generator) -> Voters:
    """σ*_v ~ U[σ_min, σ_max], ε_v ~ U[ε_min, ε_max], η_i(v) ~ N(0, 1) and the opinions of Eq. 11."""
    z = np.asarray(similarity, dtype=np.float64)
    nonconformity = rng.uniform(config.nonconformity_min, config.nonconformity_max, config.voter_count)
    oversight = rng.uniform(config.oversight_min, config.oversight_max, config.voter_count)
    eta = rng.standard_normal((config.voter_count, z.size))
    perceived = z + nonconformity[:, None] * (1.0 - z * z) * eta
    opinions = np.abs(np.clip(perceived, -1.0, 1.0))
    return Voters(opinions=opinions, oversight=oversight, nonconformity=nonconformity)


def deal_comparisons(comparison_count: int, voter_count: int, rng: np.random.Generator) -> np.ndarray:
    """Voter of each comparison: every voter gets ⌊C/V⌋ or ⌈C/V⌉ of them, in random order."""
    return rng.permutation(np.arange(comparison_count) % voter_count)


def voter_outcomes(
    voters: Voters, voter_index, left, right, rng: np.random.Generator, *, allow_ties: bool = True
) -> np.ndarray:
    """The simulated voters' decisions (§4.1.1): per comparison, 1 the left item wins, 0 the right, 0.5 a tie.

    Voter ``voter_index[c]`` picks, of items ``left[c]`` and ``right[c]``, the one with the higher
    opinion o_i(v); equal opinions are a tie, or without ties a coin flip (drawn first, one per tie).
    Then, with probability ε_v (an oversight, one draw per comparison), the voter picks the other one;
    a tie stays a tie.
    """
    voter_index = np.asarray(voter_index, dtype=np.int64)
    left_opinion = voters.opinions[voter_index, np.asarray(left, dtype=np.int64)]
    right_opinion = voters.opinions[voter_index, np.asarray(right, dtype=np.int64)]
    outcome = np.where(left_opinion > right_opinion, 1.0, np.where(left_opinion < right_opinion, 0.0, 0.5))
    if not allow_ties:
        tied = outcome == 0.5
        outcome[tied] = np.where(rng.random(int(tied.sum())) < 0.5, 1.0, 0.0)
    oversight = rng.random(outcome.size) < voters.oversight[voter_index]
    outcome[oversight] = 1.0 - outcome[oversight]
    if voters.behaviour is not None and (voters.behaviour != GOOD).any():
        kind = voters.behaviour[voter_index]
        outcome[kind == LEFT] = 1.0
        outcome[kind == RIGHT] = 0.0
        clicks = (kind == SPEEDER) | (kind == RANDOM)
        outcome[clicks] = np.where(rng.random(int(clicks.sum())) < 0.5, 1.0, 0.0)
    return outcome


def cast_votes(
    voters: Voters, pairs: np.ndarray, voter_index: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Outcome of each comparison ``pairs[c]`` by voter ``voter_index[c]``: 1 left wins, 0 right wins,
    0.5 tie (``voter_outcomes``, ties allowed)."""
    return voter_outcomes(voters, voter_index, pairs[:, 0], pairs[:, 1], rng)


def run_uniform(voters: Voters, comparison_count: int, rng: np.random.Generator) -> np.ndarray:
    """Win ratios x after uniform item selection with ``comparison_count`` comparisons (§2.4)."""
    item_count = voters.opinions.shape[1]
    pairs = uniform_schedule(item_count, comparison_count, rng)
    outcome = cast_votes(voters, pairs, deal_comparisons(pairs.shape[0], voters.oversight.size, rng), rng)
    wins, ties, appearances = ballot_tallies(pairs[:, 0], pairs[:, 1], outcome, item_count)
    return score_ballot(ballot=1, wins=wins, ties=ties, appearances=appearances).score


def run_adaptive(
    voters: Voters,
    sizes,
    appearances: int,
    rng: np.random.Generator,
    record: list | None = None,
    selection=None,
) -> tuple[np.ndarray, np.ndarray]:
    """Final scores ȳ and last ballot reached per item after the adaptive ballots (§2.5, §2.6).

    With ``record``, one dict per ballot is appended to it: the ballot's ``items`` and its votes as
    arrays ``left``, ``right``, ``outcome`` (1 left won, 0 right, 0.5 tie) and ``voter``.
    ``selection`` (optional, with ``record``): a function of the ballots recorded so far that returns
    one score per item; the survivors of each close are then the best of the ballot by it instead of
    by ȳ (the budget is the same: the ballot sizes do not change).
    """
    if selection is not None and record is None:
        raise ValueError("selection needs record: it scores the votes recorded so far")
    item_count = voters.opinions.shape[1]
    in_play = np.arange(item_count)
    last_ballot = np.ones(item_count, dtype=np.int64)
    scores = None
    for ballot in range(1, len(sizes) + 1):
        local = ballot_schedule(in_play.size, appearances, rng)
        pairs = in_play[local]
        voter = deal_comparisons(pairs.shape[0], voters.oversight.size, rng)
        outcome = cast_votes(voters, pairs, voter, rng)
        if record is not None:
            record.append(
                {
                    "items": in_play.copy(),
                    "left": pairs[:, 0],
                    "right": pairs[:, 1],
                    "outcome": outcome,
                    "voter": voter,
                }
            )
        wins, ties, counts = ballot_tallies(pairs[:, 0], pairs[:, 1], outcome, item_count)
        scores = score_ballot(
            ballot=ballot,
            wins=wins,
            ties=ties,
            appearances=counts,
            previous_score=None if scores is None else scores.score,
            previous_measured=None if scores is None else scores.measured,
        )
        last_ballot[in_play] = ballot
        if ballot < len(sizes):
            in_ballot = np.zeros(item_count, dtype=bool)
            in_ballot[in_play] = True
            by = scores.score if selection is None else selection(record)
            in_play = np.sort(select_survivors(by, in_ballot, sizes[ballot]))
    return scores.score, last_ballot


def simulate_repetition(config: SimulationConfig, similarity, seed: np.random.SeedSequence) -> dict:
    """One repetition: fresh voters, then both protocols at equal N_comp, scored against |z| ranks.

    Returns ``{"uniform": {metric: value}, "adaptive": {metric: value}}`` with the metrics ρ_w, τ_w
    (weight offset ``config.weight_offset``), ρ and τ.
    """
    rng = np.random.default_rng(seed)
    plan = ballot_plan(
        item_count=config.item_count,
        ballot_count=config.ballot_count,
        keep_fraction=config.keep_fraction,
        appearances=config.appearances,
    )
    truth = theoretical_ranks(similarity)
    voters = draw_voters(similarity, config, rng)
    uniform_scores = run_uniform(voters, plan.total_comparisons, rng)
    adaptive_scores, _ = run_adaptive(voters, plan.sizes, plan.appearances, rng)
    return {
        "uniform": _metrics(ranks_from_scores(uniform_scores), truth, config.weight_offset),
        "adaptive": _metrics(ranks_from_scores(adaptive_scores), truth, config.weight_offset),
    }


def summarize(repetitions: list[dict]) -> dict:
    """Mean and unbiased standard deviation (ddof = 1) of every metric, per protocol (Table 2).

    The standard deviation is None with a single repetition.
    """
    summary = {}
    for protocol in ("uniform", "adaptive"):
        summary[protocol] = {}
        for metric in METRICS:
            values = np.array([rep[protocol][metric] for rep in repetitions], dtype=np.float64)
            sd = float(np.std(values, ddof=1)) if values.size > 1 else None
            summary[protocol][metric] = {"mean": float(np.mean(values)), "sd": sd}
    return summary


def _metrics(estimated: np.ndarray, truth: np.ndarray, weight_offset: float) -> dict:
    values = {
        "rho_w": weighted_spearman(estimated, truth, weight_offset),
        "tau_w": weighted_kendall(estimated, truth, weight_offset),
        "rho": spearman(estimated, truth),
        "tau": kendall(estimated, truth),
    }
    return {name: finite_or_none(value) for name, value in values.items()}
