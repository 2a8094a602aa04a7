"""Selectors of the scoring app: reads for the staff results page and the exports.

Rows come out of the database as numpy arrays (``collection.arrays``); the per-item and
per-annotator figures are computed with ``bincount``, ``lexsort`` and fancy indexing
(``scoring.agreement``), not with Python loops over votes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from django.db.models import Count, Q

from collection import arrays
from collection.models import Annotator, Ballot, CheckAnswer, Item, Study, Vote
from collection.selectors import study_progress
from collection.studies import study_plan
from common.errors import ServiceError
from common.numbers import finite_or_none
from scoring import quality
from scoring.agreement import majority_agreement, median_by_group, share
from scoring.borda import final_order, ranks_within

DATASET_COLUMNS = (
    "item_id",
    "index",
    "token_a",
    "token_b",
    "area",
    "final_score",
    "final_rank",
    "area_rank",
    "last_ballot",
    "appearances",
    "wins",
    "ties",
)


def _int_or_none(value) -> int | None:
    value = int(value)
    return value or None


# --- who voted: people and simulated annotators --------------------------------------------------


@dataclass(frozen=True)
class CrowdVotes:
    """A study's votes and the annotators who cast them: people and simulated annotators
    (``simulate_voters``, ``Annotator.simulated``) apart."""

    people: int  # annotators who are people, with a vote counted here
    people_votes: int
    simulated: int
    simulated_votes: int

    @property
    def annotators(self) -> int:
        return self.people + self.simulated

    @property
    def votes(self) -> int:
        return self.people_votes + self.simulated_votes

    @property
    def text(self) -> str:
        """ "772 votes: 9 by 1 person, 763 by 100 simulated annotators" (``quality.crowd_votes_text``)."""
        return quality.crowd_votes_text(
            people=self.people,
            people_votes=self.people_votes,
            simulated=self.simulated,
            simulated_votes=self.simulated_votes,
        )

    def as_dict(self) -> dict:
        return {
            "people": {"annotators": self.people, "votes": self.people_votes},
            "simulated": {"annotators": self.simulated, "votes": self.simulated_votes},
        }


def study_crowd(*, study: Study, closed_only: bool = False) -> CrowdVotes:
    """The study's votes (of its closed ballots only, with ``closed_only``) and their annotators,
    people and simulated annotators apart: one query."""
    return crowd_by_study(study_ids=[study.pk], closed_only=closed_only)[study.pk]


def crowd_by_study(*, study_ids, closed_only: bool = False) -> dict[int, CrowdVotes]:
    """``study_crowd`` of each of the studies ``study_ids``, by id (one query for them all)."""
    votes = Vote.objects.filter(ballot__study_id__in=study_ids)
    if closed_only:
        votes = votes.filter(ballot__status=Ballot.Status.CLOSED)
    counts: dict[tuple[int, bool], tuple[int, int]] = {
        (study_id, simulated): (annotators, count)
        for study_id, simulated, annotators, count in votes.order_by()
        .values("ballot__study_id", "annotator__simulated")
        .annotate(annotators=Count("annotator", distinct=True), count=Count("pk"))
        .values_list("ballot__study_id", "annotator__simulated", "annotators", "count")
    }
    crowds = {}
    for study_id in study_ids:
        people, people_votes = counts.get((study_id, False), (0, 0))
        simulated, simulated_votes = counts.get((study_id, True), (0, 0))
        crowds[study_id] = CrowdVotes(
            people=people, people_votes=people_votes, simulated=simulated, simulated_votes=simulated_votes
        )
    return crowds


def study_check_tally(*, study: Study) -> dict:
    """The study's check rate, and per kind of check (``gold``, ``instructed``) how many the study has and,
    for people and simulated annotators apart, how many annotators answered, their answers and how many of
    those were the expected one (a gold comparison answered as expected, an instruction followed)."""
    tally = {"rate": study.check_rate}
    checks = dict(
        study.checks.order_by().values("kind").annotate(count=Count("pk")).values_list("kind", "count")
    )
    answers = {
        (kind, simulated): {"annotators": annotators, "answered": answered, "correct": correct}
        for kind, simulated, annotators, answered, correct in CheckAnswer.objects.filter(
            annotator__study=study
        )
        .order_by()
        .values("quality_check__kind", "annotator__simulated")
        .annotate(
            annotators=Count("annotator", distinct=True),
            answered=Count("pk"),
            correct=Count("pk", filter=Q(correct=True)),
        )
        .values_list("quality_check__kind", "annotator__simulated", "annotators", "answered", "correct")
    }
    nobody = {"annotators": 0, "answered": 0, "correct": 0}
    for kind in ("gold", "instructed"):
        tally[kind] = {
            "checks": checks.get(kind, 0),
            "people": answers.get((kind, False), nobody),
            "simulated": answers.get((kind, True), nobody),
        }
    return tally


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
    crowd: CrowdVotes  # the votes and voters, people and simulated annotators apart


def study_overview(*, study: Study) -> StudyOverview:
    """Header figures of the results page: pools, plan, annotators, votes and the ballots' progress."""
    item_count = study.items.count()
    plan, plan_problem = None, None
    try:
        plan = study_plan(study=study, item_count=item_count).as_dict()
    except ServiceError as exc:
        plan_problem = exc.message
    crowd = study_crowd(study=study)
    return StudyOverview(
        study=study,
        item_count=item_count,
        annotator_count=Annotator.objects.filter(study=study).count(),
        voter_count=crowd.annotators,
        vote_count=crowd.votes,
        plan=plan,
        plan_problem=plan_problem,
        ballots=study_progress(study=study),
        crowd=crowd,
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

    @property
    def per_area(self) -> bool:
        return self.study.ranking_scope == Study.RankingScope.PER_AREA

    def area_names(self) -> list[str]:
        """The semantic areas that have items, by name."""
        return sorted(set(self.area))

    def area_ranks(self) -> np.ndarray:
        """Each item's place within its semantic area (1 = first) in ``order()``; 0 where unscored.

        In a study ranked per area this is the area's own final ranking (§2.1-2.2); in a joint one,
        the joint ranking restricted to the area's items.
        """
        _, area_code = np.unique(np.asarray(self.area, dtype=object).astype(str), return_inverse=True)
        ranks = np.where(np.isfinite(self.score) | (self.rank > 0), self.ranks(), 0)
        return ranks_within(area_code, ranks)

    def row(self, position: int, area_ranks: np.ndarray | None = None) -> dict:
        """One item as a plain dict (JSON-ready): the dataset columns and ``win_ratio`` per ballot.

        ``area_rank`` is the item's final rank within its area (None while the study runs); pass
        ``area_ranks()`` when writing many rows, so that it is computed once.
        """
        if area_ranks is None:
            area_ranks = self.area_ranks()
        return {
            "item_id": int(self.item_id[position]),
            "index": int(self.index[position]),
            "token_a": self.token_a[position],
            "token_b": self.token_b[position],
            "area": self.area[position],
            "final_score": finite_or_none(self.score[position]),
            "final_rank": _int_or_none(self.rank[position]),
            "area_rank": _int_or_none(area_ranks[position]) if self.finished else None,
            "last_ballot": _int_or_none(self.last_ballot[position]),
            "appearances": int(self.appearances[position]),
            "wins": int(self.wins[position]),
            "ties": int(self.ties[position]),
            "win_ratio": [finite_or_none(value) for value in self.win_ratio[position]],
        }

    def rows(self) -> Iterator[dict]:
        """Every item in index order, as ``row`` gives it."""
        area_ranks = self.area_ranks()
        for position in range(len(self)):
            yield self.row(position, area_ranks)

    def csv_rows(self) -> Iterator[list]:
        """Every item in index order as a list of CSV cells matching ``columns`` (None for empty)."""
        for row in self.rows():
            ratios = row.pop("win_ratio")
            yield [row[column] for column in DATASET_COLUMNS] + ratios

    def top(self, limit: int) -> list[dict]:
        """The first ``limit`` scored items of ``order()``, each with its ``rank`` in that order."""
        return self._top(self.order(), limit)

    def top_by_area(self, limit: int) -> list[dict]:
        """Per semantic area: its name, item count and its first ``limit`` scored items in ``order()``,
        each with its ``rank`` (study-wide) and ``area_rank`` (within the area) in that order."""
        order = self.order()
        area = np.asarray(self.area, dtype=object)[order]
        return [
            {"area": name, "items": int((area == name).sum()), "rows": self._top(order[area == name], limit)}
            for name in self.area_names()
        ]

    def _top(self, order: np.ndarray, limit: int) -> list[dict]:
        ranks, area_ranks = self.ranks(), self.area_ranks()
        top = []
        for position in order[:limit]:
            if not np.isfinite(self.score[position]):
                break
            top.append(
                self.row(int(position), area_ranks)
                | {"rank": int(ranks[position]), "area_rank": int(area_ranks[position])}
            )
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

# The quality-control flags, in the order the page shows them: code → what the flag says.
QUALITY_FLAGS = {
    "fast": "too many fast answers",
    "position": "position bias",
    "majority": "disagrees with the majority",
    "self": "disagrees with themselves",
    "checks": "failed checks",
}


@dataclass(frozen=True)
class QualityFlag:
    code: str  # a key of QUALITY_FLAGS
    label: str
    reason: str  # the figure and the threshold it crosses, in words


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
    fast_share: float | None = None  # share of the votes faster than the study's quality_fast_ms
    left_p_value: float | None = None  # exact two-sided binomial test of the left choices against 1/2
    left_p_holm: float | None = None  # … Holm-adjusted across the annotators with enough non-tie votes
    self_agreement: float | None = None  # agreeing pairs of judgements on pairs judged more than once
    self_compared: int = 0  # pairs of judgements on those pairs
    self_repeated_pairs: int = 0  # pairs of items the annotator judged more than once
    flags: tuple[QualityFlag, ...] = ()
    check_accuracy: float | None = None  # share of the checks (gold and instructed-response) answered right
    checks_answered: int = 0
    checks_failed: int = 0
    simulated: bool = False  # a simulated annotator (``simulate_voters``), not a person

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

    @property
    def fast_percent(self) -> float | None:
        return None if self.fast_share is None else 100.0 * self.fast_share

    @property
    def check_accuracy_percent(self) -> float | None:
        return None if self.check_accuracy is None else 100.0 * self.check_accuracy

    @property
    def self_agreement_percent(self) -> float | None:
        return None if self.self_agreement is None else 100.0 * self.self_agreement

    @property
    def left_p_text(self) -> str | None:
        return None if self.left_p_value is None else f"{self.left_p_value:.2g}"

    @property
    def left_p_holm_text(self) -> str | None:
        return None if self.left_p_holm is None else f"{self.left_p_holm:.2g}"

    @property
    def flag_codes(self) -> tuple[str, ...]:
        return tuple(flag.code for flag in self.flags)


@dataclass(frozen=True)
class QualityThresholds:
    """The study's quality-control settings; None turns a check off."""

    fast_ms: int | None
    max_fast_share: float | None
    position_alpha: float | None
    min_majority_agreement: float | None
    min_self_agreement: float | None
    max_failed_checks: int | None = None  # failed checks that raise the flag (no minimum of answers)
    min_observations: int = quality.MIN_OBSERVATIONS  # fewer behind a figure: not judged by its check

    @classmethod
    def of(cls, study: Study) -> QualityThresholds:
        return cls(
            fast_ms=study.quality_fast_ms,
            max_fast_share=study.quality_max_fast_share,
            position_alpha=study.quality_position_alpha,
            min_majority_agreement=study.quality_min_majority_agreement,
            min_self_agreement=study.quality_min_self_agreement,
            max_failed_checks=study.quality_max_failed_checks,
        )


# The columns the annotator table sorts by: a name for the URL and the figure it sorts on.
ANNOTATOR_SORTS = (
    "annotator",
    "votes",
    "median_response",
    "fast",
    "left",
    "left_p",
    "ties",
    "majority",
    "ranking",
    "self",
    "checks",
    "flags",
)


@dataclass(frozen=True)
class AnnotatorFigures:
    """Every annotator who voted in a study, as parallel arrays (one entry per annotator, by id), with
    the thresholds they were judged by and the flags they raise (one column per ``QUALITY_FLAGS``).

    ``rows(positions)`` turns only the annotators shown into ``AnnotatorStats``, so a table of
    thousands of annotators is sorted, filtered and paged on arrays.
    """

    thresholds: QualityThresholds
    annotator_id: np.ndarray
    label: list[str]
    votes: np.ndarray
    decided: np.ndarray  # non-tie votes
    left: np.ndarray  # left choices
    median_ms: np.ndarray
    tie_rate: np.ndarray
    fast_share: np.ndarray  # NaN without a fast threshold
    left_rate: np.ndarray
    left_p: np.ndarray
    left_p_holm: np.ndarray  # NaN for annotators too few non-tie votes to be tested
    majority: np.ndarray
    majority_compared: np.ndarray
    ranking: np.ndarray
    ranking_compared: np.ndarray
    self_agreement: np.ndarray
    self_compared: np.ndarray
    self_repeated_pairs: np.ndarray
    checks_answered: np.ndarray
    checks_failed: np.ndarray
    check_accuracy: np.ndarray  # NaN for annotators who answered no check
    flags: np.ndarray  # bool, (annotators, len(QUALITY_FLAGS))
    simulated: np.ndarray  # bool: a simulated annotator (``simulate_voters``), not a person

    def __len__(self) -> int:
        return self.annotator_id.size

    @property
    def flagged(self) -> np.ndarray:
        return self.flags.any(axis=1)

    def flag_counts(self) -> dict[str, int]:
        """How many annotators raise each flag, in the order of ``QUALITY_FLAGS``."""
        return dict(zip(QUALITY_FLAGS, self.flags.sum(axis=0).tolist(), strict=True))

    def _sort_key(self, sort: str) -> np.ndarray:
        if sort == "annotator":
            return np.unique(np.asarray(self.label, dtype=str), return_inverse=True)[1].astype(np.float64)
        return {
            "votes": self.votes,
            "median_response": self.median_ms,
            "fast": self.fast_share,
            "left": self.left_rate,
            "left_p": self.left_p,
            "ties": self.tie_rate,
            "majority": self.majority,
            "ranking": self.ranking,
            "self": self.self_agreement,
            "checks": self.check_accuracy,
            "flags": self.flags.sum(axis=1),
        }[sort].astype(np.float64)

    def order(self, *, sort: str = "votes", descending: bool = True, flag: str | None = None) -> np.ndarray:
        """Positions of the annotators by ``sort`` (one of ``ANNOTATOR_SORTS``), undefined values last,
        ties by id; only those raising ``flag`` (a code of ``QUALITY_FLAGS``, or ``"any"``) if given."""
        key = self._sort_key(sort)
        undefined = ~np.isfinite(key)
        signed = np.where(undefined, 0.0, -key if descending else key)
        order = np.lexsort((self.annotator_id, signed, undefined))
        if flag == "any":
            return order[self.flagged[order]]
        if flag is not None:
            column = list(QUALITY_FLAGS).index(flag)
            return order[self.flags[order, column]]
        return order

    def rows(self, positions) -> list[AnnotatorStats]:
        return [self.row(int(position)) for position in positions]

    def row(self, position: int) -> AnnotatorStats:
        def value(array: np.ndarray) -> float | None:
            return finite_or_none(array[position])

        return AnnotatorStats(
            annotator_id=int(self.annotator_id[position]),
            label=self.label[position],
            votes=int(self.votes[position]),
            median_response_ms=value(self.median_ms),
            left_choice_rate=value(self.left_rate),
            tie_rate=value(self.tie_rate),
            majority_agreement=value(self.majority),
            majority_compared=int(self.majority_compared[position]),
            ranking_agreement=value(self.ranking),
            ranking_compared=int(self.ranking_compared[position]),
            fast_share=value(self.fast_share),
            left_p_value=value(self.left_p),
            left_p_holm=value(self.left_p_holm),
            self_agreement=value(self.self_agreement),
            self_compared=int(self.self_compared[position]),
            self_repeated_pairs=int(self.self_repeated_pairs[position]),
            flags=self._flags_of(position),
            check_accuracy=value(self.check_accuracy),
            checks_answered=int(self.checks_answered[position]),
            checks_failed=int(self.checks_failed[position]),
            simulated=bool(self.simulated[position]),
        )

    def _flags_of(self, position: int) -> tuple[QualityFlag, ...]:
        limits = self.thresholds
        reasons = {
            "fast": lambda: (
                f"{100 * self.fast_share[position]:.0f}% of {self.votes[position]} answers faster than "
                f"{limits.fast_ms:,} ms (at most {100 * (limits.max_fast_share or 0):.0f}% allowed)"
            ),
            "position": lambda: (
                f"left chosen in {self.left[position]} of {self.decided[position]} non-tie votes: "
                f"p = {self.left_p_holm[position]:.2g} after Holm's correction over "
                f"{int(np.isfinite(self.left_p_holm).sum())} annotators (α = {limits.position_alpha:g})"
            ),
            "majority": lambda: (
                f"agrees with the others' majority on {100 * self.majority[position]:.0f}% of "
                f"{self.majority_compared[position]} votes (at least "
                f"{100 * (limits.min_majority_agreement or 0):.0f}% asked)"
            ),
            "self": lambda: (
                f"judges {self.self_repeated_pairs[position]} repeated pairs the same way in "
                f"{100 * self.self_agreement[position]:.0f}% of "
                f"{self.self_compared[position]} pairs of judgements (at least "
                f"{100 * (limits.min_self_agreement or 0):.0f}% asked)"
            ),
            "checks": lambda: (
                f"failed {self.checks_failed[position]} of {self.checks_answered[position]} checks "
                f"(flagged at {limits.max_failed_checks} or more)"
            ),
        }
        return tuple(
            QualityFlag(code=code, label=label, reason=reasons[code]())
            for column, (code, label) in enumerate(QUALITY_FLAGS.items())
            if self.flags[position, column]
        )


def annotator_figures(*, study: Study) -> AnnotatorFigures:
    """Every annotator who voted in the study with their figures and quality flags, as arrays.

    * median response time of ``Vote.response_ms``, and the share of votes faster than the study's
      ``quality_fast_ms``;
    * left-choice rate: left choices / non-tie votes, a check of position bias (0.5 without one), with
      the exact two-sided binomial p-value against 1/2 (``scoring.quality.binomial_two_sided_p``),
      Holm-adjusted across the annotators with enough non-tie votes to be tested;
    * tie rate: ties / votes;
    * agreement with the majority: for each vote on a pair of items that other annotators also judged,
      the outcome (this item, that item, or a tie: sides are compared as items, since left and right
      differ between comparisons of one pair) is compared with the strict majority of the OTHER votes
      on that pair; pairs where the others are split evenly have no majority and are not compared;
    * agreement with the final ranking (finished studies): of the non-tie votes between items of
      different final ȳ, the share choosing the item with the higher ȳ; NaN while running;
    * self-agreement on the pairs of items the annotator judged more than once
      (``scoring.quality.self_agreement``); NaN when they judged no pair twice, as the ballots do today;
    * checks (gold comparisons, instructed-response checks): answered, failed and the accuracy
      (``scoring.quality.check_accuracy``); an annotator who answered checks but never voted is listed.

    A flag is raised where a figure crosses the study's threshold, and only for an annotator with at
    least ``scoring.quality.MIN_OBSERVATIONS`` observations behind the figure (votes, non-tie votes,
    compared votes, pairs of judgements); the checks' flag needs no minimum: failed checks at or past
    ``quality_max_failed_checks`` raise it.
    """
    thresholds = QualityThresholds.of(study)
    every_annotator = list(Annotator.objects.filter(study=study).select_related("user").order_by("pk"))
    labels = {annotator.pk: str(annotator) for annotator in every_annotator}
    simulated_ids = [annotator.pk for annotator in every_annotator if annotator.simulated]
    votes = arrays.study_votes(study_id=study.pk)
    answers = arrays.study_check_answers(study_id=study.pk)
    ids = np.union1d(votes.annotator, answers.annotator)  # those who voted or answered a check, by id
    people = ids.size
    who = np.searchsorted(ids, votes.annotator)
    left, right, pair_low = votes.left, votes.right, votes.pair_low
    is_left, is_tie = votes.outcome == 1.0, votes.outcome == 0.5
    decided = ~is_tie

    def per_annotator(weights) -> np.ndarray:
        return np.bincount(who, weights=weights, minlength=people)

    counts = np.bincount(who, minlength=people)
    decided_counts = per_annotator(decided)
    left_counts = per_annotator(is_left)
    median = median_by_group(who, votes.response_ms, people)
    left_rate = share(left_counts, decided_counts)
    tie_rate = share(per_annotator(is_tie), counts)
    fast_share = np.full(people, np.nan)
    if thresholds.fast_ms is not None:
        fast_share = share(per_annotator(votes.response_ms < thresholds.fast_ms), counts)

    left_p = quality.binomial_two_sided_p(left_counts, decided_counts)
    tested = quality.judged(decided_counts)
    left_p_holm = quality.holm_adjusted(np.where(tested, left_p, np.nan))

    chosen = np.where(is_left, left, right)
    outcome = np.where(is_tie, _TIE, np.where(chosen == pair_low, _LOW, _HIGH))
    pair_high = votes.pair_high
    pair_key = pair_low * (int(pair_high.max(initial=0)) + 1) + pair_high
    agree, compared = majority_agreement(pair_key, outcome)
    majority_compared = per_annotator(compared)
    majority = share(per_annotator(agree & compared), majority_compared)
    self_agreeing, self_compared, self_repeated = quality.self_agreement(who, pair_key, outcome, people)
    self_share = share(self_agreeing, self_compared)
    checks_answered, checks_failed, check_accuracy = quality.check_accuracy(
        np.searchsorted(ids, answers.annotator), answers.correct, people
    )

    ranking_compared = np.zeros(people)
    ranking = np.full(people, np.nan)
    if study.status == Study.Status.FINISHED and len(votes):
        score_by_index, _, _ = arrays.final_scores(study_id=study.pk, item_count=study.items.count())
        other = np.where(is_left, right, left)
        chosen_score, other_score = score_by_index[chosen], score_by_index[other]
        with np.errstate(invalid="ignore"):  # NaN scores compare as False and are left out anyway
            comparable = decided & np.isfinite(chosen_score) & np.isfinite(other_score)
            comparable &= chosen_score != other_score
            better = comparable & (chosen_score > other_score)
        ranking_compared = per_annotator(comparable)
        ranking = share(per_annotator(better), ranking_compared)

    def crosses(threshold, judged: np.ndarray, crossed) -> np.ndarray:
        if threshold is None:
            return np.zeros(people, dtype=bool)
        with np.errstate(invalid="ignore"):
            return judged & crossed(threshold)

    flags = np.column_stack(
        [
            crosses(
                thresholds.max_fast_share if thresholds.fast_ms is not None else None,
                quality.judged(counts),
                lambda limit: fast_share > limit,
            ),
            crosses(thresholds.position_alpha, tested, lambda alpha: left_p_holm <= alpha),
            crosses(
                thresholds.min_majority_agreement,
                quality.judged(majority_compared),
                lambda limit: majority < limit,
            ),
            crosses(
                thresholds.min_self_agreement, quality.judged(self_compared), lambda limit: self_share < limit
            ),
            crosses(thresholds.max_failed_checks, checks_answered > 0, lambda limit: checks_failed >= limit),
        ]
    ).reshape(people, len(QUALITY_FLAGS))

    return AnnotatorFigures(
        thresholds=thresholds,
        annotator_id=ids,
        label=[labels[annotator_id] for annotator_id in ids.tolist()],
        votes=counts,
        decided=decided_counts.astype(np.int64),
        left=left_counts.astype(np.int64),
        median_ms=median,
        tie_rate=tie_rate,
        fast_share=fast_share,
        left_rate=left_rate,
        left_p=left_p,
        left_p_holm=left_p_holm,
        majority=majority,
        majority_compared=majority_compared.astype(np.int64),
        ranking=ranking,
        ranking_compared=ranking_compared.astype(np.int64),
        self_agreement=self_share,
        self_compared=self_compared,
        self_repeated_pairs=self_repeated,
        checks_answered=checks_answered,
        checks_failed=checks_failed,
        check_accuracy=check_accuracy,
        flags=flags,
        simulated=np.isin(ids, simulated_ids),
    )


def annotator_stats(*, study: Study) -> list[AnnotatorStats]:
    """Every annotator who voted in the study, most votes first, with the figures of ``annotator_figures``."""
    figures = annotator_figures(study=study)
    return figures.rows(figures.order())
