"""A batched confidence-elimination protocol: rounds of "active item against a random opponent".

PURE module: numpy, scipy and the standard library only; randomness comes in as
``numpy.random.Generator``.

The protocol
------------
After Heckel, Shah, Ramchandran & Wainwright, "Active Ranking from Pairwise Comparisons and when
Parametric Assumptions Don't Help" (Annals of Statistics 47(6), 2019), with a fixed number of batched
rounds as in the top-k-in-rounds analyses of Braverman, Mao & Peres (COLT 2019). The Borda score of
item i among N items is

    τ_i = 1/(N-1) · Σ_{j≠i} P(i beats j),

the chance that i beats an opponent drawn uniformly from the whole pool (a tie counts one half, as in
the win ratio of Lombardo et al. Eq. 1). Every comparison of an active item i is made against an
opponent drawn uniformly from the N-1 other items of the whole pool, active or not, so

    τ̂_i = (wins_i + ties_i/2) / n_i

over i's n_i comparisons is an unbiased estimate of τ_i, and every item's estimate is on the same
scale: no rescaling (Lombardo et al. Eq. 6) is needed. The opponent's side of a comparison is not
used for the opponent's own score, since its opponent (an active item) was not drawn from the whole
pool and would bias it.

A round is one ballot. The budget B of comparisons is split over the R rounds as evenly as possible
(⌊B/R⌋ or ⌈B/R⌉ each, the larger ones first), and a round's comparisons over the items still active as
evenly as possible (the extra ones to random items). After each round every item gets a confidence
interval [τ̂_i - c_i, τ̂_i + c_i] and from them an interval of ranks:

    best rank  = 1 + #{j ≠ i : τ̂_j - c_j > τ̂_i + c_i}       (items certainly above i)
    worst rank = 1 + #{j ≠ i : τ̂_j + c_j ≥ τ̂_i - c_i}       (items possibly above i)

The researcher names cutoffs K_1 < K_2 < … < K_L (the top-K sets the study cares about, e.g. 10, 50,
100); they split the ranks into groups [1, K_1], [K_1+1, K_2], …, [K_L+1, N]. An item whose best and
worst rank fall in the same group is *settled*: its membership in every top K_l is decided, and it
leaves the active set for good (Heckel et al.'s partition into sets of given sizes; with one cutoff
K this is top-K identification). Settled items still serve as random opponents. If every item is
settled before the budget is spent, the rest of it goes, round by round, to the items of the first
group (the current top K_1), which sharpens the order the top-weighted measures look at most; in every
case exactly B comparisons are made. The final ranking orders all N items by τ̂ (ties averaged).

The confidence bound
--------------------
Outcomes lie in [0, 1], so Hoeffding's inequality gives P(|τ̂_i - τ_i| ≥ c) ≤ 2·exp(-2·n_i·c²) for
n_i outcomes against independently drawn opponents. The intervals are checked only after each of the
R rounds, for each of the N items, so a union bound over those N·R checks makes all of them hold at
once with probability at least 1 - δ when

    c_i = sqrt( ln(2·N·R/δ) / (2·n_i) )                                   (``confidence_radius``)

(an item with no comparison has c = ∞). Then, with probability at least 1 - δ, no item is ever
settled in a wrong group. Heckel et al. check after every single comparison and so need an anytime
bound with an iterated-logarithm term; batching replaces it with the plain union over R checks
(Braverman et al.'s point that a few rounds cost little). Parameters: δ (``delta``, default 0.1), R
(``round_count``), the cutoffs (``cutoffs``). The bound holds for the §4.1 crowd of Lombardo et al.
conditionally on the crowd, reading τ_i as the chance of winning against a random opponent before a
random voter (each comparison's voter is dealt from the crowd, as in ``deal_comparisons``).

It is a worst-case bound for outcomes with variance up to 1/4: at small budgets (tens of comparisons
per item) it is wider than most gaps between Borda scores, nothing settles, and the protocol spends
its budget like the uniform one while using each comparison for one item instead of two.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from scoring.simulation import Voters, cast_votes, deal_comparisons

__all__ = [
    "DEFAULT_CUTOFFS",
    "DEFAULT_DELTA",
    "EliminationResult",
    "allocate_round",
    "check_budget",
    "check_elimination",
    "confidence_radius",
    "draw_opponents",
    "rank_bounds",
    "round_budgets",
    "run_elimination",
    "settled",
]

DEFAULT_CUTOFFS = (10, 50, 100)
DEFAULT_DELTA = 0.1


@dataclass(frozen=True)
class EliminationResult:
    """What a run of the elimination protocol produced.

    ``score``: τ̂ of every item (the final Borda estimates); ``comparisons``: n_i, comparisons in which
    item i was the active side; ``settled_round``: the round after which item i was settled (0: never);
    ``group``: the group it was settled in (0 for [1, K_1], 1 for [K_1+1, K_2], …; -1: never settled);
    ``active_counts`` and ``round_comparisons``: per round, the items active in it and the comparisons
    made.
    """

    score: np.ndarray
    comparisons: np.ndarray
    settled_round: np.ndarray
    group: np.ndarray
    active_counts: tuple[int, ...]
    round_comparisons: tuple[int, ...]


def check_elimination(*, item_count: int, round_count: int, cutoffs, delta: float) -> tuple[int, ...]:
    """Validate N, R, the cutoffs and δ; returns the cutoffs as a sorted tuple of whole numbers."""
    if int(item_count) != item_count or item_count < 2:
        raise ValueError(f"the elimination protocol needs at least two items, got {item_count!r}")
    if int(round_count) != round_count or round_count < 1:
        raise ValueError(f"the number of rounds R must be a positive whole number, got {round_count!r}")
    if not (isinstance(delta, int | float) and math.isfinite(delta) and 0.0 < delta < 1.0):
        raise ValueError(
            f"δ is the chance that some interval fails and must lie strictly between 0 and 1, got {delta!r}"
        )
    cutoffs = list(cutoffs)
    if not cutoffs or any(int(k) != k for k in cutoffs):
        raise ValueError(f"give at least one whole-number cutoff K (the top-K sets to settle), got {cutoffs}")
    values = sorted({int(k) for k in cutoffs})
    if values[0] < 1 or values[-1] >= item_count:
        raise ValueError(f"cutoffs K must lie from 1 to N-1 = {int(item_count) - 1}, got {values}")
    return tuple(values)


def check_budget(*, item_count: int, comparison_budget: int, round_count: int) -> None:
    """The budget must be a whole number and give every item a comparison in the first round (else its
    τ̂ is undefined): ⌈B/R⌉ ≥ N."""
    if int(comparison_budget) != comparison_budget or comparison_budget < 1:
        raise ValueError(
            f"the budget must be a positive whole number of comparisons, got {comparison_budget!r}"
        )
    first_round = -(-int(comparison_budget) // int(round_count))
    if first_round < item_count:
        raise ValueError(
            f"a budget of {int(comparison_budget):,} comparisons over {int(round_count)} rounds gives the first "
            f"round {first_round:,}, fewer than the {int(item_count):,} items: every item needs a comparison "
            f"in the first round, so the budget must be at least {(int(item_count) - 1) * int(round_count) + 1:,} "
            "(or use fewer rounds)"
        )


def confidence_radius(comparisons, *, item_count: int, round_count: int, delta: float) -> np.ndarray:
    """c = sqrt(ln(2·N·R/δ) / (2·n)) per item, ∞ where n = 0 (Hoeffding with a union over N·R checks)."""
    n = np.asarray(comparisons, dtype=np.float64)
    log_term = math.log(2.0 * item_count * round_count / delta)
    with np.errstate(divide="ignore"):
        return np.where(n > 0, np.sqrt(log_term / (2.0 * np.maximum(n, 1.0))), np.inf)


def rank_bounds(lower, upper) -> tuple[np.ndarray, np.ndarray]:
    """Best and worst rank of every item that its interval [lower, upper] allows (1 = top).

    best = 1 + #{j : lower_j > upper_i}; worst = 1 + #{j ≠ i : upper_j ≥ lower_i}. Intervals must have
    lower ≤ upper (then item i never counts against itself in ``best``). Sorting once makes it
    O(N log N).
    """
    lower = np.asarray(lower, dtype=np.float64)
    upper = np.asarray(upper, dtype=np.float64)
    n = lower.size
    certainly_above = n - np.searchsorted(np.sort(lower), upper, side="right")
    possibly_above = n - np.searchsorted(np.sort(upper), lower, side="left") - 1
    return certainly_above + 1, possibly_above + 1


def settled(best, worst, cutoffs) -> tuple[np.ndarray, np.ndarray]:
    """Whether each rank interval [best, worst] lies in one group of the cutoffs, and that group.

    Group g holds the ranks K_g + 1 … K_{g+1} (K_0 = 0, K_{L+1} = N): rank r is in group
    #{K_l : K_l < r}. Returns (settled mask, group of the best rank).
    """
    edges = np.asarray(cutoffs, dtype=np.float64)
    best_group = np.searchsorted(edges, np.asarray(best, dtype=np.float64), side="left")
    worst_group = np.searchsorted(edges, np.asarray(worst, dtype=np.float64), side="left")
    return best_group == worst_group, best_group


def round_budgets(comparison_budget: int, round_count: int) -> np.ndarray:
    """Comparisons of each round: ⌊B/R⌋, and one more for the first B mod R rounds (they sum to B)."""
    base, extra = divmod(int(comparison_budget), int(round_count))
    return base + (np.arange(round_count) < extra).astype(np.int64)


def allocate_round(candidates, comparisons: int, rng: np.random.Generator) -> np.ndarray:
    """The active side of each of a round's comparisons: every candidate ⌊C/A⌋ times, and C mod A
    candidates chosen at random once more (sorted by item)."""
    candidates = np.asarray(candidates, dtype=np.int64)
    base, extra = divmod(int(comparisons), candidates.size)
    counts = np.full(candidates.size, base, dtype=np.int64)
    counts[rng.choice(candidates.size, size=extra, replace=False)] += 1
    return np.repeat(candidates, counts)


def draw_opponents(items, item_count: int, rng: np.random.Generator) -> np.ndarray:
    """For each entry of ``items``, an opponent drawn uniformly from the other N-1 items of the pool."""
    items = np.asarray(items, dtype=np.int64)
    opponent = rng.integers(item_count - 1, size=items.size)
    return opponent + (opponent >= items)


def run_elimination(
    voters: Voters,
    *,
    comparison_budget: int,
    round_count: int,
    cutoffs: Sequence[int] = DEFAULT_CUTOFFS,
    delta: float = DEFAULT_DELTA,
    rng: np.random.Generator,
    record: list | None = None,
) -> EliminationResult:
    """Run the protocol of the module docstring on the §4.1 crowd ``voters`` with exactly B comparisons.

    With ``record``, one dict per round is appended: the items ``compared`` in it (the active ones, or
    the current top K_1 once every item is settled), its comparisons as
    arrays ``left`` (the active item), ``right`` (its random opponent), ``outcome`` (1 left won, 0 right,
    0.5 tie) and ``voter``, and the items ``settled`` after it.
    """
    item_count = voters.opinions.shape[1]
    cutoffs = check_elimination(item_count=item_count, round_count=round_count, cutoffs=cutoffs, delta=delta)
    check_budget(item_count=item_count, comparison_budget=comparison_budget, round_count=round_count)
    points = np.zeros(item_count)  # wins + ties/2
    comparisons = np.zeros(item_count, dtype=np.int64)
    active = np.ones(item_count, dtype=bool)
    settled_round = np.zeros(item_count, dtype=np.int64)
    group = np.full(item_count, -1, dtype=np.int64)
    active_counts, made = [], []
    for round_number, budget in enumerate(round_budgets(comparison_budget, round_count).tolist(), start=1):
        candidates = np.flatnonzero(active)
        if candidates.size == 0:
            # Everything is settled: refine the order of the current top K_1.
            estimate = points / comparisons
            candidates = np.sort(np.argsort(-estimate, kind="stable")[: cutoffs[0]])
        left = allocate_round(candidates, budget, rng)
        right = draw_opponents(left, item_count, rng)
        pairs = np.column_stack((left, right))
        voter = deal_comparisons(left.size, voters.oversight.size, rng)
        outcome = cast_votes(voters, pairs, voter, rng)
        points += np.bincount(left, weights=outcome, minlength=item_count)
        comparisons += np.bincount(left, minlength=item_count)
        active_counts.append(int(np.count_nonzero(active)))
        made.append(int(left.size))

        estimate = points / comparisons
        radius = confidence_radius(comparisons, item_count=item_count, round_count=round_count, delta=delta)
        best, worst = rank_bounds(estimate - radius, estimate + radius)
        is_settled, best_group = settled(best, worst, cutoffs)
        newly = active & is_settled
        active &= ~newly
        settled_round[newly] = round_number
        group[newly] = best_group[newly]
        if record is not None:
            record.append(
                {
                    "compared": candidates.copy(),
                    "left": left,
                    "right": right,
                    "outcome": outcome,
                    "voter": voter,
                    "settled": np.flatnonzero(newly),
                }
            )
    return EliminationResult(
        score=points / comparisons,
        comparisons=comparisons,
        settled_round=settled_round,
        group=group,
        active_counts=tuple(active_counts),
        round_comparisons=tuple(made),
    )
