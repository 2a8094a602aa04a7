"""Selectors of the scoring app: reads for the staff results page and the exports.

Rows come out of the database as numpy arrays (``collection.arrays``); the per-item and
per-annotator figures are computed with ``bincount``, ``lexsort`` and fancy indexing
(``scoring.agreement``), not with Python loops over votes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from django.db.models import Count

from collection import arrays
from collection.models import Annotator, Ballot, Item, Study, Vote
from collection.selectors import study_progress
from collection.studies import study_plan
from common.errors import ServiceError
from common.numbers import finite_or_none
from scoring.agreement import majority_agreement, median_by_group, share
from scoring.borda import final_order

DATASET_COLUMNS = (
    "item_id",
    "index",
    "token_a",
    "token_b",
    "area",
    "final_score",
    "final_rank",
    "last_ballot",
    "appearances",
    "wins",
    "ties",
)


def _int_or_none(value) -> int | None:
    value = int(value)
    return value or None


# --- the study at a glance -----------------------------------------------------------------------


@dataclass(frozen=True)
class StudyOverview:
    study: Study
    item_count: int
    annotator_count: int
    voter_count: int
    vote_count: int
    plan: dict | None  # BallotPlan.as_dict(); None when the pools cannot make a plan yet
    plan_problem: str | None
    ballots: list[dict]  # collection.selectors.study_progress


def study_overview(*, study: Study) -> StudyOverview:
    """Header figures of the results page: pools, plan, annotators, votes and the ballots' progress."""
    item_count = study.items.count()
    plan, plan_problem = None, None
    try:
        plan = study_plan(study=study, item_count=item_count).as_dict()
    except ServiceError as exc:
        plan_problem = exc.message
    votes = Vote.objects.filter(ballot__study=study).aggregate(
        votes=Count("pk"), voters=Count("annotator", distinct=True)
    )
    return StudyOverview(
        study=study,
        item_count=item_count,
        annotator_count=Annotator.objects.filter(study=study).count(),
        voter_count=votes["voters"],
        vote_count=votes["votes"],
        plan=plan,
        plan_problem=plan_problem,
        ballots=study_progress(study=study),
    )


# --- the dataset ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class StudyDataset:
    """Every item of a study with its scores, as arrays in item-index order.

    For a finished study ``score``, ``rank`` and ``last_ballot`` are the stored final ranking. For a
    running one ``score`` is ȳ after the item's latest closed ballot, ``rank`` is 0 (there is no final
    rank yet) and ``last_ballot`` is the latest ballot the item is in, open or closed. Missing values
    are NaN (floats) or 0 (ballot numbers, ranks).
    """

    study: Study
    finished: bool
    ballot_numbers: tuple[int, ...]  # 1 … n_b: the columns of ``win_ratio``
    item_id: np.ndarray
    index: np.ndarray
    token_a: list[str]
    token_b: list[str]
    area: list[str]
    score: np.ndarray  # ȳ
    rank: np.ndarray  # final rank, 1 = most related; 0 while the study runs
    last_ballot: np.ndarray
    appearances: np.ndarray  # summed over ballots
    wins: np.ndarray
    ties: np.ndarray
    win_ratio: np.ndarray  # x(k): one row per item, one column per ballot; NaN where absent

    def __len__(self) -> int:
        return self.item_id.size

    @property
    def has_scores(self) -> bool:
        return bool(np.isfinite(self.score).any())

    @property
    def columns(self) -> tuple[str, ...]:
        return DATASET_COLUMNS + tuple(f"x_{number}" for number in self.ballot_numbers)

    def order(self) -> np.ndarray:
        """Item positions from first to last: the final ranking, or while running the current one.

        The current ranking follows the rule of the final one (``scoring.borda.final_order``): by ȳ so
        far, ties to the item in the later ballot, then to the lower item index; unscored items last.
        """
        if self.finished:
            return np.lexsort((self.index, self.rank, self.rank == 0))
        return final_order(self.score, self.last_ballot)

    def ranks(self) -> np.ndarray:
        """Each item's place (1 = first) in ``order()``."""
        ranks = np.empty(len(self), dtype=np.int64)
        ranks[self.order()] = np.arange(1, len(self) + 1)
        return ranks

    def row(self, position: int) -> dict:
        """One item as a plain dict (JSON-ready): the dataset columns and ``win_ratio`` per ballot."""
        return {
            "item_id": int(self.item_id[position]),
            "index": int(self.index[position]),
            "token_a": self.token_a[position],
            "token_b": self.token_b[position],
            "area": self.area[position],
            "final_score": finite_or_none(self.score[position]),
            "final_rank": _int_or_none(self.rank[position]),
            "last_ballot": _int_or_none(self.last_ballot[position]),
            "appearances": int(self.appearances[position]),
            "wins": int(self.wins[position]),
            "ties": int(self.ties[position]),
            "win_ratio": [finite_or_none(value) for value in self.win_ratio[position]],
        }

    def rows(self) -> Iterator[dict]:
        """Every item in index order, as ``row`` gives it."""
        for position in range(len(self)):
            yield self.row(position)

    def csv_rows(self) -> Iterator[list]:
        """Every item in index order as a list of CSV cells matching ``columns`` (None for empty)."""
        for row in self.rows():
            ratios = row.pop("win_ratio")
            yield [row[column] for column in DATASET_COLUMNS] + ratios

    def top(self, limit: int) -> list[dict]:
        """The first ``limit`` scored items of ``order()``, each with its ``rank`` in that order."""
        ranks = self.ranks()
        top = []
        for position in self.order()[:limit]:
            if not np.isfinite(self.score[position]):
                break
            top.append(self.row(int(position)) | {"rank": int(ranks[position])})
        return top


def study_dataset(*, study: Study) -> StudyDataset:
    """The dataset of a study: per item its tokens, area, ȳ, rank, last ballot, totals and x(k) per ballot.

    ``appearances``, ``wins`` and ``ties`` are summed over the ballots the item was in; ``win_ratio``
    holds x(k) of Eq. 1 for k = 1 … n_b. Works for drafts (no scores), running and finished studies.
    """
    finished = study.status == Study.Status.FINISHED
    items = list(
        Item.objects.filter(study=study)
        .order_by("index")
        .values_list("id", "index", "token_a__text", "token_b__text", "area__name")
    )
    count = len(items)
    columns = list(zip(*items, strict=True)) if items else [()] * 5
    ballot_numbers = tuple(range(1, study.ballot_count + 1))

    scores = arrays.study_score_rows(study_id=study.pk)  # items are numbered 0 … N-1: index = position

    def summed(values: np.ndarray) -> np.ndarray:
        return np.bincount(scores.item, weights=values, minlength=count).astype(np.int64)

    if finished:
        score, rank, last_ballot = arrays.final_scores(study_id=study.pk, item_count=count)
    else:
        # ȳ so far: the score stored with the item's latest closed ballot; its last ballot, open or closed.
        score, _ = scores.latest(count)
        rank = np.zeros(count, dtype=np.int64)
        memberships = arrays.study_memberships(study_id=study.pk)
        last_ballot = np.zeros(count, dtype=np.int64)
        np.maximum.at(last_ballot, memberships.item, memberships.ballot)

    return StudyDataset(
        study=study,
        finished=finished,
        ballot_numbers=ballot_numbers,
        item_id=np.asarray(columns[0], dtype=np.int64),
        index=np.asarray(columns[1], dtype=np.int64),
        token_a=list(columns[2]),
        token_b=list(columns[3]),
        area=list(columns[4]),
        score=score,
        rank=rank,
        last_ballot=last_ballot,
        appearances=summed(scores.appearances),
        wins=summed(scores.wins),
        ties=summed(scores.ties),
        win_ratio=scores.win_ratio_by_ballot(count, len(ballot_numbers)),
    )


# --- Figure 2 and Figure 4 -----------------------------------------------------------------------


@dataclass(frozen=True)
class BallotRescaling:
    """Figure 2 of Lombardo et al. for ballot k: x(k) and ȳ(k-1) of its items and the fitted b̂(k).

    Only items with both values enter, as in the fit of Eq. 6 (an item without a vote in ballot k
    has no x(k)).
    """

    ballot_number: int
    item_index: np.ndarray
    win_ratio: np.ndarray  # x(k)
    previous_score: np.ndarray  # ȳ(k-1)
    rescale_slope: float | None  # b̂(k) as stored when the ballot closed; None while it is open


def ballot_rescaling(*, ballot: Ballot) -> BallotRescaling:
    """The data of Figure 2 for a ballot k ≥ 2: x_i(k) against ȳ_i(k-1) and the stored b̂(k) (Eq. 6)."""
    if ballot.number < 2:
        raise ValueError(f"ballot {ballot.number} has no earlier ballot to be rescaled to (k ≥ 2 only)")
    item_count = Item.objects.filter(study_id=ballot.study_id).count()
    current = arrays.ballot_scores(study_id=ballot.study_id, number=ballot.number, item_count=item_count)
    previous = arrays.ballot_scores(study_id=ballot.study_id, number=ballot.number - 1, item_count=item_count)
    items = current.item
    usable = np.isfinite(current.win_ratio[items]) & np.isfinite(previous.score[items])
    return BallotRescaling(
        ballot_number=ballot.number,
        item_index=items[usable],
        win_ratio=current.win_ratio[items][usable],
        previous_score=previous.score[items][usable],
        rescale_slope=ballot.rescale_slope,
    )


@dataclass(frozen=True)
class ScoresByRank:
    """Figure 4 of Lombardo et al.: per item its rank, x(k) for every ballot and ȳ."""

    final: bool  # ranks of the final ranking, or of the current one while the study runs
    ballot_numbers: tuple[int, ...]
    rank: np.ndarray
    win_ratio: np.ndarray  # one row per item, one column per ballot; NaN where absent
    score: np.ndarray  # ȳ


def scores_by_rank(*, study: Study, dataset: StudyDataset | None = None) -> ScoresByRank:
    """The data of Figure 4: each item's rank with its x(k) per ballot and its (final) ȳ."""
    dataset = dataset or study_dataset(study=study)
    return ScoresByRank(
        final=dataset.finished,
        ballot_numbers=dataset.ballot_numbers,
        rank=dataset.ranks(),
        win_ratio=dataset.win_ratio,
        score=dataset.score,
    )


# --- annotators ----------------------------------------------------------------------------------

_LOW, _HIGH, _TIE = 0, 1, 2  # a vote's outcome on its pair: the lower-index item, the higher, a tie


@dataclass(frozen=True)
class AnnotatorStats:
    """What one annotator did in a study; rates are shares in [0, 1], None when undefined."""

    annotator_id: int
    label: str
    votes: int
    median_response_ms: float | None
    left_choice_rate: float | None  # of the non-tie votes, the share choosing the left item
    tie_rate: float | None
    majority_agreement: float | None  # share of compared votes agreeing with the others' majority
    majority_compared: int  # votes on pairs where the other annotators have a strict majority
    ranking_agreement: float | None  # share of compared non-tie votes choosing the better final ȳ
    ranking_compared: int  # non-tie votes between items of different final ȳ (finished studies)

    @property
    def left_choice_percent(self) -> float | None:
        return None if self.left_choice_rate is None else 100.0 * self.left_choice_rate

    @property
    def tie_percent(self) -> float | None:
        return None if self.tie_rate is None else 100.0 * self.tie_rate

    @property
    def majority_agreement_percent(self) -> float | None:
        return None if self.majority_agreement is None else 100.0 * self.majority_agreement

    @property
    def ranking_agreement_percent(self) -> float | None:
        return None if self.ranking_agreement is None else 100.0 * self.ranking_agreement


def annotator_stats(*, study: Study) -> list[AnnotatorStats]:
    """Every annotator who voted in the study, most votes first, with their figures.

    * median response time of ``Vote.response_ms``;
    * left-choice rate: left choices / non-tie votes, a check of position bias (0.5 without one);
    * tie rate: ties / votes;
    * agreement with the majority: for each vote on a pair of items that other annotators also judged,
      the outcome (this item, that item, or a tie: sides are compared as items, since left and right
      differ between comparisons of one pair) is compared with the strict majority of the OTHER votes
      on that pair; pairs where the others are split evenly have no majority and are not compared.
      None when no vote could be compared;
    * agreement with the final ranking (finished studies): of the non-tie votes between items of
      different final ȳ, the share choosing the item with the higher ȳ; None while running.
    """
    annotators = {
        annotator.pk: str(annotator)
        for annotator in Annotator.objects.filter(study=study).select_related("user").order_by("pk")
    }
    votes = arrays.study_votes(study_id=study.pk)
    if not len(votes):
        return []
    ids = np.asarray(sorted(annotators), dtype=np.int64)
    who = np.searchsorted(ids, votes.annotator)
    people = ids.size
    left, right, pair_low = votes.left, votes.right, votes.pair_low
    is_left, is_tie = votes.outcome == 1.0, votes.outcome == 0.5
    decided = ~is_tie

    counts = np.bincount(who, minlength=people)
    median = median_by_group(who, votes.response_ms, people)
    left_rate = share(np.bincount(who, weights=is_left, minlength=people), np.bincount(who, decided, people))
    tie_rate = share(np.bincount(who, weights=is_tie, minlength=people), counts)

    chosen = np.where(is_left, left, right)
    outcome = np.where(is_tie, _TIE, np.where(chosen == pair_low, _LOW, _HIGH))
    pair_high = votes.pair_high
    pair_key = pair_low * (int(pair_high.max()) + 1) + pair_high
    agree, compared = majority_agreement(pair_key, outcome)
    majority_compared = np.bincount(who, weights=compared, minlength=people)
    majority = share(np.bincount(who, weights=agree & compared, minlength=people), majority_compared)

    ranking_compared = np.zeros(people)
    ranking = np.full(people, np.nan)
    if study.status == Study.Status.FINISHED:
        score_by_index, _, _ = arrays.final_scores(study_id=study.pk, item_count=study.items.count())
        other = np.where(is_left, right, left)
        chosen_score, other_score = score_by_index[chosen], score_by_index[other]
        with np.errstate(invalid="ignore"):  # NaN scores compare as False and are left out anyway
            comparable = decided & np.isfinite(chosen_score) & np.isfinite(other_score)
            comparable &= chosen_score != other_score
            better = comparable & (chosen_score > other_score)
        ranking_compared = np.bincount(who, weights=comparable, minlength=people)
        ranking = share(np.bincount(who, weights=better, minlength=people), ranking_compared)

    stats = [
        AnnotatorStats(
            annotator_id=int(ids[person]),
            label=annotators[int(ids[person])],
            votes=int(counts[person]),
            median_response_ms=finite_or_none(median[person]),
            left_choice_rate=finite_or_none(left_rate[person]),
            tie_rate=finite_or_none(tie_rate[person]),
            majority_agreement=finite_or_none(majority[person]),
            majority_compared=int(majority_compared[person]),
            ranking_agreement=finite_or_none(ranking[person]),
            ranking_compared=int(ranking_compared[person]),
        )
        for person in np.flatnonzero(counts)
    ]
    stats.sort(key=lambda row: (-row.votes, row.annotator_id))
    return stats
