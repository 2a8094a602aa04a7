"""Borda win ratios, their rescaling across ballots, the running score and the survivors.

PURE module: numpy, scipy and the standard library only.

Lombardo et al. §2.4-2.6. Arrays are indexed by item over the whole study; an item that is not in a
ballot has zero appearances there, so its win ratio is NaN and its score does not move.

* win ratio (Eq. 1): ``x_i = (wins_i + ties_i/2) / appearances_i``;
* rescaled score (Eq. 6): ``y_i(1) = x_i(1)``; for k > 1, ``y_i(k) = 1 - b(k) + b(k)·x_i(k)`` with the
  rescale slope ``b(k) = Σ_j (1 - x_j(k))(1 - ȳ_j(k-1)) / Σ_j (1 - x_j(k))²`` over the items of ballot k,
  the least-squares line through (1, 1) from x(k) to ȳ(k-1);
* score (Eq. 5): ``ȳ_i(k) = (1/k)·Σ_{k'≤k} y_i(k')``, the running mean of the rescaled scores.

The paper's public code differs from Eq. 5 and §2.5 in two ways that this module does not copy: at
k = 2 it replaces ȳ(1) by y(2) instead of averaging them, and it selects survivors on the current
ballot's x(k) instead of on ȳ(k).

Degenerate cases. An item of the ballot that received no vote at all (possible when a ballot is
closed at its deadline) has no x(k): its y(k) is NaN, it is left out of the fit of b(k), and its
score is the mean of the ballots in which it was measured (``measured`` counts them). If every
x_j(k) = 1 the slope is undefined and irrelevant (every y = 1); b(k) = 1 is reported.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "BallotScores",
    "ballot_tallies",
    "final_order",
    "ranks_within",
    "score_ballot_by_stratum",
    "select_survivors_by_stratum",
    "rescale_slope",
    "score_ballot",
    "select_survivors",
    "study_scores",
    "win_ratio",
]


@dataclass(frozen=True)
class BallotScores:
    """Everything ballot k computes, as arrays over all items of the study."""

    ballot: int
    win_ratio: np.ndarray  # x(k), NaN outside the ballot
    rescale_slope: float  # b(k); 1.0 for the first ballot
    rescaled_score: np.ndarray  # y(k), NaN outside the ballot
    score: np.ndarray  # ȳ(k), NaN for items never measured
    measured: np.ndarray  # ballots in which each item received at least one vote


def ballot_tallies(left, right, outcome, item_count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Wins, ties and appearances per item from the votes of one ballot.

    Parameters
    ----------
    left, right : array_like of int
        Item indices shown on the left and on the right, one entry per vote.
    outcome : array_like of float
        1 if the left item won, 0 if the right item won, 0.5 for a tie.
    item_count : int
        Number of items in the study (length of the returned arrays).

    Returns
    -------
    wins, ties, appearances : numpy.ndarray
        ``wins`` and ``ties`` count decisions (ties are not yet halved); ``appearances`` counts votes.
    """
    left = np.asarray(left, dtype=np.int64)
    right = np.asarray(right, dtype=np.int64)
    outcome = np.asarray(outcome, dtype=np.float64)
    if not (left.shape == right.shape == outcome.shape) or left.ndim != 1:
        raise ValueError("left, right and outcome must be one-dimensional and of equal length")
    if left.size and (min(left.min(), right.min()) < 0 or max(left.max(), right.max()) >= item_count):
        raise ValueError(f"item indices must lie in 0 … {item_count - 1}")
    if np.any(left == right):
        raise ValueError("an item cannot be compared with itself")
    if not np.all((outcome == 0.0) | (outcome == 0.5) | (outcome == 1.0)):
        raise ValueError("outcome must be 1 (left wins), 0 (right wins) or 0.5 (tie)")
    tie = outcome == 0.5
    left_won = outcome == 1.0
    right_won = outcome == 0.0
    wins = np.bincount(left[left_won], minlength=item_count) + np.bincount(
        right[right_won], minlength=item_count
    )
    ties = np.bincount(left[tie], minlength=item_count) + np.bincount(right[tie], minlength=item_count)
    appearances = np.bincount(left, minlength=item_count) + np.bincount(right, minlength=item_count)
    return wins, ties, appearances


def win_ratio(wins, ties, appearances) -> np.ndarray:
    """x = (wins + ties/2) / appearances (Eq. 1 and its footnote 4); NaN where appearances = 0."""
    wins = np.asarray(wins, dtype=np.float64)
    ties = np.asarray(ties, dtype=np.float64)
    appearances = np.asarray(appearances, dtype=np.float64)
    if np.any(wins + ties > appearances) or np.any(wins < 0) or np.any(ties < 0):
        raise ValueError("wins + ties cannot exceed appearances, and neither can be negative")
    ratio = np.full(appearances.shape, np.nan)
    seen = appearances > 0
    ratio[seen] = (wins[seen] + 0.5 * ties[seen]) / appearances[seen]
    return ratio


def rescale_slope(ratio, previous_score) -> float:
    """b(k) = Σ_j (1 - x_j(k))(1 - ȳ_j(k-1)) / Σ_j (1 - x_j(k))² (Eq. 6).

    Sums run over the items with both a win ratio in ballot k and a previous score. Returns 1.0 when
    the denominator vanishes (every x_j(k) = 1, where any slope gives y = 1) or no item qualifies.
    """
    ratio = np.asarray(ratio, dtype=np.float64)
    previous_score = np.asarray(previous_score, dtype=np.float64)
    usable = np.isfinite(ratio) & np.isfinite(previous_score)
    shortfall = 1.0 - ratio[usable]
    denominator = float(shortfall @ shortfall)
    if denominator == 0.0:
        return 1.0
    return float(shortfall @ (1.0 - previous_score[usable])) / denominator


def score_ballot(
    *, ballot: int, wins, ties, appearances, previous_score=None, previous_measured=None
) -> BallotScores:
    """Scores after ballot ``ballot`` (k, from 1): x(k) by Eq. 1, y(k) by Eq. 6, ȳ(k) by Eq. 5.

    ``previous_score`` and ``previous_measured`` are the ``score`` and ``measured`` of ballot k-1
    (omit them for k = 1).
    """
    if ballot < 1:
        raise ValueError(f"ballots are numbered from 1, got {ballot}")
    ratio = win_ratio(wins, ties, appearances)
    item_count = ratio.size
    if ballot == 1:
        if previous_score is not None:
            raise ValueError("the first ballot has no previous score")
        previous_score = np.full(item_count, np.nan)
        previous_measured = np.zeros(item_count, dtype=np.int64)
        slope = 1.0
        rescaled = ratio.copy()
    else:
        if previous_score is None or previous_measured is None:
            raise ValueError(f"ballot {ballot} needs the score and measured counts of ballot {ballot - 1}")
        previous_score = np.asarray(previous_score, dtype=np.float64)
        previous_measured = np.asarray(previous_measured, dtype=np.int64)
        if previous_score.shape != ratio.shape or previous_measured.shape != ratio.shape:
            raise ValueError("previous_score and previous_measured must have one entry per item")
        slope = rescale_slope(ratio, previous_score)
        rescaled = 1.0 - slope + slope * ratio

    fresh = np.isfinite(rescaled)
    measured = previous_measured + fresh
    score = previous_score.copy()
    # ȳ(k) = ((m-1)·ȳ(k-1) + y(k)) / m, m = ballots measured so far; m = k when no ballot was missed.
    earlier = np.where(np.isfinite(previous_score[fresh]), previous_score[fresh], 0.0)
    score[fresh] = (previous_measured[fresh] * earlier + rescaled[fresh]) / measured[fresh]
    return BallotScores(
        ballot=ballot,
        win_ratio=ratio,
        rescale_slope=slope,
        rescaled_score=rescaled,
        score=score,
        measured=measured,
    )


def study_scores(ballot, left, right, outcome, item_count: int, ballot_count: int) -> list[BallotScores]:
    """The scores of ballots 1 … ``ballot_count`` from their votes, as the closes compute them (Eq. 1, 5, 6).

    The design is taken as given: the ballots and their items are what the votes say they were; nothing
    is re-selected. With every vote of the closed ballots this repeats the closes' arithmetic; with a
    subset (the votes of the annotators not excluded) it gives the scores the same ballots would have
    had without the others. An item of a ballot left with no vote has no x(k) and keeps its earlier
    score (see the module's degenerate cases). One ``ballot_tallies`` per ballot, vectorised over votes.

    Parameters
    ----------
    ballot : array_like of int
        Ballot number k (1 … ``ballot_count``) of each vote.
    left, right, outcome : array_like
        As in ``ballot_tallies``.
    item_count, ballot_count : int
        Items in the study; ballots to score.

    Returns
    -------
    list of BallotScores
        One per ballot, k = 1 … ``ballot_count``; the last one's ``score`` is every item's latest ȳ.
    """
    ballot = np.asarray(ballot, dtype=np.int64)
    left = np.asarray(left, dtype=np.int64)
    right = np.asarray(right, dtype=np.int64)
    outcome = np.asarray(outcome, dtype=np.float64)
    if ballot.size and (ballot.min() < 1 or ballot.max() > ballot_count):
        raise ValueError(f"ballot numbers must lie in 1 … {ballot_count}")
    order = np.argsort(ballot, kind="stable")
    bounds = np.searchsorted(ballot[order], np.arange(1, ballot_count + 2))
    results: list[BallotScores] = []
    for number in range(1, ballot_count + 1):  # a loop over ballots (at most limits.MAX_BALLOTS), not votes
        of_ballot = order[bounds[number - 1] : bounds[number]]
        wins, ties, appearances = ballot_tallies(
            left[of_ballot], right[of_ballot], outcome[of_ballot], item_count
        )
        previous = results[-1] if results else None
        results.append(
            score_ballot(
                ballot=number,
                wins=wins,
                ties=ties,
                appearances=appearances,
                previous_score=None if previous is None else previous.score,
                previous_measured=None if previous is None else previous.measured,
            )
        )
    return results


def select_survivors(score, in_ballot, survivor_count: int) -> np.ndarray:
    """Indices of the ``survivor_count`` items of the ballot with the highest score ȳ(k) (§2.5).

    Deterministic tie rule: equal scores are ordered by item index, lower first. Items of the ballot
    with no score (never measured) come after every scored item. The result is sorted by rank.
    """
    score = np.asarray(score, dtype=np.float64)
    candidates = np.flatnonzero(np.asarray(in_ballot, dtype=bool))
    if not 0 <= survivor_count <= candidates.size:
        raise ValueError(f"cannot keep {survivor_count} of the {candidates.size} items of the ballot")
    return candidates[_descending(score[candidates])][:survivor_count]


def final_order(score, last_ballot) -> np.ndarray:
    """Item indices from first to last of the final ranking: by score ȳ, highest first.

    Ties in ȳ go to the item that reached a later ballot, then to the lower item index; items
    never measured come last.
    """
    score = np.asarray(score, dtype=np.float64)
    last_ballot = np.asarray(last_ballot, dtype=np.int64)
    missing = ~np.isfinite(score)
    filled = np.where(missing, 0.0, score)
    return np.lexsort((np.arange(score.size), -last_ballot, -filled, missing))


def _descending(values: np.ndarray) -> np.ndarray:
    missing = ~np.isfinite(values)
    filled = np.where(missing, 0.0, values)
    return np.lexsort((np.arange(values.size), -filled, missing))


# --- one ranking per semantic area (§2.1-2.2) ----------------------------------------------------


def score_ballot_by_stratum(
    *, ballot: int, wins, ties, appearances, strata, previous_score=None, previous_measured=None
) -> tuple[BallotScores, dict]:
    """``score_ballot`` run on each stratum (semantic area) alone: Eq. 1, 5 and 6 per area.

    Each area is its own chain of ballots: b(k) of Eq. 6 is fitted on the area's items only, mapping
    the area's x(k) onto the scale of the area's ȳ(k-1). ``strata`` gives each item's stratum. Returns
    the scores of all items (their ``rescale_slope`` is NaN: there is one per area) and b(k) of each
    stratum that has items in the ballot, by stratum label.
    """
    strata = np.asarray(strata)
    appearances = np.asarray(appearances)
    if strata.shape != appearances.shape:
        raise ValueError("strata must give one stratum per item")
    win_ratio_all = np.full(strata.size, np.nan)
    rescaled_all = np.full(strata.size, np.nan)
    score_all = np.full(strata.size, np.nan) if previous_score is None else np.array(previous_score, float)
    measured_all = (
        np.zeros(strata.size, dtype=np.int64)
        if previous_measured is None
        else np.array(previous_measured, dtype=np.int64)
    )
    slopes = {}
    for label in np.unique(strata[appearances > 0]).tolist():
        inside = strata == label
        part = score_ballot(
            ballot=ballot,
            wins=np.where(inside, wins, 0),
            ties=np.where(inside, ties, 0),
            appearances=np.where(inside, appearances, 0),
            previous_score=previous_score,
            previous_measured=previous_measured,
        )
        win_ratio_all[inside] = part.win_ratio[inside]
        rescaled_all[inside] = part.rescaled_score[inside]
        score_all[inside] = part.score[inside]
        measured_all[inside] = part.measured[inside]
        slopes[label] = part.rescale_slope
    combined = BallotScores(
        ballot=ballot,
        win_ratio=win_ratio_all,
        rescale_slope=float("nan"),
        rescaled_score=rescaled_all,
        score=score_all,
        measured=measured_all,
    )
    return combined, slopes


def select_survivors_by_stratum(score, in_ballot, strata, survivor_counts: dict) -> np.ndarray:
    """The top ``survivor_counts[label]`` items of each stratum of the ballot by ȳ(k) (§2.5 per area).

    The tie rule is ``select_survivors``'s. Returns the survivors of every stratum, stratum by stratum.
    """
    strata = np.asarray(strata)
    in_ballot = np.asarray(in_ballot, dtype=bool)
    present = set(np.unique(strata[in_ballot]).tolist())
    if present != set(survivor_counts):
        raise ValueError(
            f"survivor counts are given for strata {sorted(survivor_counts)} but the ballot holds {sorted(present)}"
        )
    parts = [
        select_survivors(score, in_ballot & (strata == label), count)
        for label, count in survivor_counts.items()
    ]
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)


def ranks_within(strata, rank) -> np.ndarray:
    """Each item's place within its stratum (1 = first) when the items are ordered by ``rank``.

    The restriction of a ranking to one semantic area: rank 1, 4, 7 of an area become 1, 2, 3.
    Items with rank 0 (unranked) keep 0.
    """
    strata = np.asarray(strata)
    rank = np.asarray(rank, dtype=np.int64)
    ranked = rank > 0
    order = np.lexsort((rank, ~ranked, strata))
    sorted_strata = strata[order]
    new_stratum = np.ones(order.size, dtype=bool)
    new_stratum[1:] = sorted_strata[1:] != sorted_strata[:-1]
    starts = np.maximum.accumulate(np.where(new_stratum, np.arange(order.size), 0))
    within = np.empty(order.size, dtype=np.int64)
    within[order] = np.arange(order.size) - starts + 1
    return np.where(ranked, within, 0)
