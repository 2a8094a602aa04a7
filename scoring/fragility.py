"""How fragile the top of a ranking is: how few votes, removed, change the top item or the top-K set.

PURE module: numpy and the standard library only.

The ranking is recomputed with the design held fixed: the ballots keep the items they had, and a
removed vote only leaves the tallies of its ballot. Scores go through Eq. 1 (win ratios), Eq. 6 (the
rescaling of each ballot k > 1 onto the scores before it) and Eq. 5 (the running mean), exactly as the
close of each ballot computes them (``scoring.borda.score_ballot``), and the final ranking is
``scoring.borda.final_order`` with each item's last ballot as in the study (Lombardo et al. §2.4-2.6).

The smallest such number of votes is a subset problem. ``removals_to_change`` answers it with a greedy
search whose answer is an **upper bound**, and always a real one: the set of votes it reports, removed,
changes the top (checked by the full recomputation). For each of a few contested pairs (a member of the
top, near its bottom, against an item just outside it) it removes, one at a time, the vote whose removal
most narrows that pair's gap to first order (the vote's effect on the two win ratios of its ballot,
through the ballot's slope b(k) and the items' counts of measured ballots), and recomputes everything
after each removal. The answer is the smallest over the pairs. ``removals_to_change_exactly`` searches
every subset, smallest first, for studies small enough; the tests hold the greedy bound against it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from scoring.borda import final_order, score_ballot

__all__ = [
    "Fragility",
    "VoteTable",
    "removals_to_change",
    "removals_to_change_exactly",
    "rescore",
    "top_of",
]

# Pairs tried by the greedy search: the lowest CONTESTED members of the top against the first
# CONTESTED items outside it (for the top item, the leader against the next CONTESTED items).
CONTESTED = 3
# Votes whose exact effect is computed at each step of the greedy search, the best by first order.
SHORTLIST = 6


@dataclass(frozen=True)
class VoteTable:
    """A study's votes and design: one entry per vote, and which items each ballot held.

    ``ballot`` numbers ballots from 1; ``outcome`` is 1 when the left item won, 0 when the right one
    did, 0.5 for a tie; ``last_ballot`` is, per item, the last ballot that held it (0 for none).
    """

    ballot: np.ndarray
    left: np.ndarray
    right: np.ndarray
    outcome: np.ndarray
    last_ballot: np.ndarray

    @property
    def item_count(self) -> int:
        return self.last_ballot.size

    @property
    def ballot_count(self) -> int:
        return int(self.last_ballot.max(initial=0))

    def __len__(self) -> int:
        return self.outcome.size

    def restricted(self, items: np.ndarray) -> VoteTable:
        """The votes between ``items`` only, with the items numbered 0 … len(items) - 1 in their order:
        one stratum of a study ranked per area, whose ballots chain on their own (Eq. 5 and 6)."""
        items = np.asarray(items, dtype=np.int64)
        number = np.full(self.item_count, -1, dtype=np.int64)
        number[items] = np.arange(items.size)
        inside = (number[self.left] >= 0) & (number[self.right] >= 0)
        return VoteTable(
            ballot=self.ballot[inside],
            left=number[self.left[inside]],
            right=number[self.right[inside]],
            outcome=self.outcome[inside],
            last_ballot=self.last_ballot[items],
        )


@dataclass(frozen=True)
class Fragility:
    """The fewest votes found whose removal changes the top, and which votes (indices into the table).

    ``votes`` is None when no removal the search tried changes it (every vote of the contested items
    removed and the top still stands), ``exact`` says whether it is the minimum or an upper bound.
    """

    k: int  # 1: the top item; K: the top-K set
    votes: int | None
    total: int
    removed: tuple[int, ...]
    exact: bool

    @property
    def share(self) -> float | None:
        return None if self.votes is None or self.total == 0 else self.votes / self.total


def rescore(table: VoteTable, keep: np.ndarray | None = None) -> np.ndarray:
    """The final scores ȳ by item (NaN for items never measured) from the kept votes, design fixed.

    Eq. 1, 5 and 6 of Lombardo et al. through ``scoring.borda.score_ballot``, ballot by ballot; an item
    of ballot k left with no vote has no x(k) and keeps its score (the module's degenerate case).
    """
    return _rescored(table, np.ones(len(table), dtype=bool) if keep is None else keep)[0]


def _rescored(table: VoteTable, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ȳ by item, b(k) by ballot (index k; 1 for k = 1) and each item's measured ballots."""
    n, size = table.item_count, table.ballot_count + 1
    slopes = np.ones(size)
    score, measured = np.full(n, np.nan), np.zeros(n, dtype=np.int64)
    for k in range(1, size):
        chosen = keep & (table.ballot == k)
        left, right, outcome = table.left[chosen], table.right[chosen], table.outcome[chosen]
        # x(k) reads wins + ties/2: each vote gives its left item the outcome, its right item the rest.
        points = np.bincount(left, weights=outcome, minlength=n) + np.bincount(
            right, weights=1.0 - outcome, minlength=n
        )
        appearances = np.bincount(left, minlength=n) + np.bincount(right, minlength=n)
        scores = score_ballot(
            ballot=k,
            wins=points,
            ties=np.zeros(n),
            appearances=appearances,
            previous_score=None if k == 1 else score,
            previous_measured=None if k == 1 else measured,
        )
        slopes[k], score, measured = scores.rescale_slope, scores.score, scores.measured
    return score, slopes, measured


def top_of(table: VoteTable, k: int, keep: np.ndarray | None = None) -> frozenset[int]:
    """The indices of the top ``k`` items of the final ranking from the kept votes."""
    return top_of_scores(rescore(table, keep), table.last_ballot, k)


def top_of_scores(score: np.ndarray, last_ballot: np.ndarray, k: int) -> frozenset[int]:
    return frozenset(final_order(score, last_ballot)[:k].tolist())


def _gap(score: np.ndarray, outsider: int, member: int) -> float:
    """ȳ(outsider) - ȳ(member), an unmeasured item counting as 0 as ``final_order`` places it."""
    values = np.nan_to_num(score[[outsider, member]], nan=-1.0)
    return float(values[0] - values[1])


def removals_to_change(table: VoteTable, k: int, *, max_steps: int | None = None) -> Fragility:
    """A greedy upper bound on the fewest votes whose removal changes the top ``k`` set (k = 1: the
    top item), with the votes it removes; see the module's docstring for the search."""
    _check_k(table, k)
    order = final_order(rescore(table), table.last_ballot)
    top = frozenset(order[:k].tolist())
    members = order[:k][::-1][:CONTESTED]  # the lowest members first
    outsiders = order[k : k + CONTESTED]
    best: tuple[int, ...] | None = None
    for member, outsider in itertools.product(members.tolist(), outsiders.tolist()):
        limit = len(table) if best is None else len(best) - 1
        if max_steps is not None:
            limit = min(limit, max_steps)
        found = _greedy_pair(table, top, k, member, outsider, limit)
        if found is not None and (best is None or len(found) < len(best)):
            best = found
    return Fragility(
        k=k,
        votes=None if best is None else len(best),
        total=len(table),
        removed=() if best is None else best,
        exact=False,
    )


def removals_to_change_exactly(table: VoteTable, k: int, *, max_votes: int = 4) -> Fragility:
    """The fewest votes whose removal changes the top ``k`` set, by trying every subset of up to
    ``max_votes`` votes, smallest first: for small studies (and the tests of the greedy bound)."""
    _check_k(table, k)
    top = top_of(table, k)
    everything = np.ones(len(table), dtype=bool)
    for size in range(1, min(max_votes, len(table)) + 1):
        for removed in itertools.combinations(range(len(table)), size):
            keep = everything.copy()
            keep[list(removed)] = False
            if top_of(table, k, keep) != top:
                return Fragility(k=k, votes=size, total=len(table), removed=removed, exact=True)
    return Fragility(k=k, votes=None, total=len(table), removed=(), exact=True)


def _check_k(table: VoteTable, k: int) -> None:
    ranked = int(np.count_nonzero(table.last_ballot > 0))
    if not 1 <= k < ranked:
        raise ValueError(f"k must be from 1 to {ranked - 1} (one less than the items ranked), got {k}")


def _greedy_pair(table, top, k, member, outsider, limit) -> tuple[int, ...] | None:
    """Removes votes one by one to bring ``outsider`` above ``member`` until the top ``k`` changes;
    the votes removed, or None if ``limit`` removals or the pair's votes run out first."""
    keep = np.ones(len(table), dtype=bool)
    removed: list[int] = []
    involved = np.flatnonzero(
        (table.left == member)
        | (table.right == member)
        | (table.left == outsider)
        | (table.right == outsider)
    )
    while len(removed) < limit:
        candidates = involved[keep[involved]]
        if candidates.size == 0:
            return None
        gain = _first_order_gain(table, keep, candidates, member, outsider)
        # The first-order gains choose a shortlist; the exact gap after each removal picks from it.
        shortlist = candidates[np.argsort(-gain, kind="stable")[:SHORTLIST]]
        gaps = []
        for vote in shortlist.tolist():
            keep[vote] = False
            score = rescore(table, keep)
            keep[vote] = True
            if top_of_scores(score, table.last_ballot, k) != top:
                gaps.append(np.inf)  # this removal alone finishes it
            else:
                gaps.append(_gap(score, outsider, member))
        chosen = int(shortlist[int(np.argmax(gaps))])
        keep[chosen] = False
        removed.append(chosen)
        if top_of(table, k, keep) != top:
            return tuple(removed)
    return None


def _first_order_gain(table, keep, candidates, member, outsider) -> np.ndarray:
    """For each candidate vote, how much its removal alone raises ȳ(outsider) - ȳ(member), to first
    order: Δȳ_i = b(k)·Δx_i(k) / m_i with the ballot's slope b(k) and the item's measured ballots m_i
    held at their current values (Eq. 5 and 6); Δx_i(k) is exact for the vote's own ballot (Eq. 1)."""
    gains = np.zeros(candidates.size)
    _, slopes, measured = _rescored(table, keep)
    for item, sign in ((outsider, 1.0), (member, -1.0)):
        points, appearances = _points_and_appearances(table, keep, item)
        ballots = table.ballot[candidates]
        as_left = table.left[candidates] == item
        as_right = table.right[candidates] == item
        in_vote = as_left | as_right
        # The item's points from the vote: the outcome for the left item, its complement on the right.
        earned = np.where(as_left, table.outcome[candidates], 1.0 - table.outcome[candidates])
        before_points, before_appearances = points[ballots], appearances[ballots]
        after_appearances = before_appearances - 1
        with np.errstate(invalid="ignore", divide="ignore"):
            before = before_points / before_appearances
            after = np.where(after_appearances > 0, (before_points - earned) / after_appearances, before)
        delta = np.where(in_vote, after - before, 0.0)
        gains += sign * slopes[ballots] * delta / max(measured[item], 1)
    return gains


def _points_and_appearances(table, keep, item) -> tuple[np.ndarray, np.ndarray]:
    """Per ballot (index k), the item's points (wins + ties/2) and appearances among the kept votes."""
    size = table.ballot_count + 1
    as_left = keep & (table.left == item)
    as_right = keep & (table.right == item)
    points = np.bincount(table.ballot[as_left], weights=table.outcome[as_left], minlength=size) + np.bincount(
        table.ballot[as_right], weights=1.0 - table.outcome[as_right], minlength=size
    )
    appearances = np.bincount(table.ballot[as_left | as_right], minlength=size).astype(np.float64)
    return points, appearances
