"""Rows of the protocol as numpy arrays: the reads that the close of a ballot, the final ranking, the
results pages and the metrology compute on.

Each read is one query whose rows go into an array at once (``values_list`` → ``numpy.array``), with no
Python loop over rows. Items are addressed by their ``index`` (0 … N-1 within a study), the position of
the item in every array here; ballots by their number k (1 … n_b). A missing score is NaN.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.db.models import Case, FloatField, Value, When

from collection.models import Ballot, BallotItem, CheckAnswer, Item, ItemScore, Vote

# A vote's outcome for its left item, as Eq. 1 counts it: a win 1, a loss 0, a tie half a win.
OUTCOME = {Vote.Choice.LEFT: 1.0, Vote.Choice.RIGHT: 0.0, Vote.Choice.TIE: 0.5}
_OUTCOME_SQL = Case(
    *(When(choice=choice, then=Value(outcome)) for choice, outcome in OUTCOME.items()),
    output_field=FloatField(),
)


def _table(rows, columns: int) -> np.ndarray:
    """Rows of numbers (None becomes NaN) as a float array of ``columns`` columns, empty or not."""
    return np.array(list(rows), dtype=np.float64).reshape(-1, columns)


def _integers(column: np.ndarray) -> np.ndarray:
    return column.astype(np.int64)


# --- items ---------------------------------------------------------------------------------------


def item_ids(*, study_id: int) -> np.ndarray:
    """The database id of every item of the study, by index: ``item_ids(...)[index]``."""
    rows = _table(Item.objects.filter(study_id=study_id).order_by("index").values_list("index", "id"), 2)
    ids = np.zeros(rows.shape[0], dtype=np.int64)
    ids[_integers(rows[:, 0])] = _integers(rows[:, 1])
    return ids


def item_areas(*, study_id: int) -> np.ndarray:
    """The semantic area's database id of every item of the study, by index: ``item_areas(...)[index]``."""
    rows = _table(Item.objects.filter(study_id=study_id).values_list("index", "area_id"), 2)
    areas = np.zeros(rows.shape[0], dtype=np.int64)
    areas[_integers(rows[:, 0])] = _integers(rows[:, 1])
    return areas


def item_hidden(*, study_id: int) -> np.ndarray:
    """Whether each item of the study is in its hidden test part, by index: ``item_hidden(...)[index]``."""
    hidden = np.array(
        Item.objects.filter(study_id=study_id, hidden=True).values_list("index", flat=True), dtype=np.int64
    )
    mask = np.zeros(Item.objects.filter(study_id=study_id).count(), dtype=bool)
    mask[hidden] = True
    return mask


def ballot_item_indices(*, ballot_id: int) -> np.ndarray:
    """The indices of the items in the ballot, ascending."""
    rows = BallotItem.objects.filter(ballot_id=ballot_id).order_by("item__index").values_list("item__index")
    return _integers(_table(rows, 1)[:, 0])


@dataclass(frozen=True)
class Memberships:
    """Which items each ballot holds: one entry per (ballot, item), by ballot number then item index."""

    ballot: np.ndarray  # ballot number k
    item: np.ndarray  # item index

    def of_ballot(self, number: int) -> np.ndarray:
        return self.item[self.ballot == number]


def study_memberships(*, study_id: int, closed_only: bool = False) -> Memberships:
    """The items of every ballot of the study (of its closed ballots only, with ``closed_only``)."""
    rows = BallotItem.objects.filter(ballot__study_id=study_id)
    if closed_only:
        rows = rows.filter(ballot__status=Ballot.Status.CLOSED)
    table = _table(
        rows.order_by("ballot__number", "item__index").values_list("ballot__number", "item__index"), 2
    )
    return Memberships(ballot=_integers(table[:, 0]), item=_integers(table[:, 1]))


# --- votes ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Votes:
    """Votes as parallel arrays, one entry per vote, in the order recorded within each ballot."""

    ballot: np.ndarray  # ballot number k
    left: np.ndarray  # index of the item shown on the left
    right: np.ndarray  # … and on the right
    outcome: np.ndarray  # for the left item: 1 won, 0 lost, 0.5 a tie (``OUTCOME``)
    annotator: np.ndarray  # the annotator's database id
    response_ms: np.ndarray  # from the lease to the vote, on the server

    @property
    def pair_low(self) -> np.ndarray:
        """The lower item index of each vote's pair."""
        return np.minimum(self.left, self.right)

    @property
    def pair_high(self) -> np.ndarray:
        return np.maximum(self.left, self.right)

    def __len__(self) -> int:
        return self.outcome.size


def _votes(rows) -> Votes:
    table = _table(
        rows.annotate(outcome=_OUTCOME_SQL)
        .order_by("ballot__number", "pk")
        .values_list(
            "ballot__number",
            "left_item__index",
            "right_item__index",
            "outcome",
            "annotator_id",
            "response_ms",
        ),
        6,
    )
    return Votes(
        ballot=_integers(table[:, 0]),
        left=_integers(table[:, 1]),
        right=_integers(table[:, 2]),
        outcome=table[:, 3],
        annotator=_integers(table[:, 4]),
        response_ms=table[:, 5],
    )


def ballot_votes(*, ballot_id: int) -> Votes:
    """Every vote of one ballot."""
    return _votes(Vote.objects.filter(ballot_id=ballot_id))


def study_votes(*, study_id: int, closed_only: bool = False) -> Votes:
    """Every vote of the study by ballot (of its closed ballots only, with ``closed_only``)."""
    rows = Vote.objects.filter(ballot__study_id=study_id)
    if closed_only:
        rows = rows.filter(ballot__status=Ballot.Status.CLOSED)
    return _votes(rows)


@dataclass(frozen=True)
class CheckAnswers:
    """Every answer to a check of a study, one entry per answer, by annotator id."""

    annotator: np.ndarray  # annotator id
    correct: np.ndarray  # bool

    def __len__(self) -> int:
        return self.annotator.size


def study_check_answers(*, study_id: int) -> CheckAnswers:
    """Every answer to the study's checks (gold and instructed-response), never a vote."""
    table = _table(
        CheckAnswer.objects.filter(annotator__study_id=study_id)
        .order_by("annotator_id", "pk")
        .values_list("annotator_id", "correct"),
        2,
    )
    return CheckAnswers(annotator=_integers(table[:, 0]), correct=table[:, 1].astype(bool))


# --- scores --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BallotScores:
    """What one closed ballot stored, by item index over the whole study (NaN and 0 outside it)."""

    item: np.ndarray  # the indices of the ballot's items, ascending
    win_ratio: np.ndarray  # x(k)
    score: np.ndarray  # ȳ(k)
    measured: np.ndarray  # ballots up to k in which the item got a vote


def ballot_scores(*, study_id: int, number: int, item_count: int) -> BallotScores:
    """x(k), ȳ(k) and the measured count stored by ballot ``number`` of the study."""
    table = _table(
        ItemScore.objects.filter(ballot__study_id=study_id, ballot__number=number)
        .order_by("item__index")
        .values_list("item__index", "win_ratio", "score", "measured"),
        4,
    )
    index = _integers(table[:, 0])
    win_ratio = np.full(item_count, np.nan)
    score = np.full(item_count, np.nan)
    measured = np.zeros(item_count, dtype=np.int64)
    win_ratio[index] = table[:, 1]
    score[index] = table[:, 2]
    measured[index] = _integers(table[:, 3])
    return BallotScores(item=index, win_ratio=win_ratio, score=score, measured=measured)


@dataclass(frozen=True)
class ScoreRows:
    """Every stored ItemScore of a study, one entry per (ballot, item)."""

    item: np.ndarray  # item index
    ballot: np.ndarray  # ballot number k
    wins: np.ndarray
    ties: np.ndarray
    appearances: np.ndarray
    win_ratio: np.ndarray  # x(k), NaN where the item got no vote
    score: np.ndarray  # ȳ(k)

    def latest(self, item_count: int) -> tuple[np.ndarray, np.ndarray]:
        """Per item: ȳ after its latest scored ballot (NaN if none) and that ballot's number (0 if none)."""
        return _latest(self.item, self.ballot, self.score, item_count)

    def win_ratio_by_ballot(self, item_count: int, ballot_count: int) -> np.ndarray:
        """x(k) as a matrix: one row per item, one column per ballot k = 1 … n_b; NaN where absent."""
        matrix = np.full((item_count, ballot_count), np.nan)
        matrix[self.item, self.ballot - 1] = self.win_ratio  # one ItemScore per (ballot, item)
        return matrix


def _latest(item: np.ndarray, ballot: np.ndarray, score: np.ndarray, item_count: int):
    # An item has one row per ballot it was in; the row of its highest ballot number is its latest.
    last_ballot = np.zeros(item_count, dtype=np.int64)
    np.maximum.at(last_ballot, item, ballot)
    latest = ballot == last_ballot[item]
    latest_score = np.full(item_count, np.nan)
    latest_score[item[latest]] = score[latest]
    return latest_score, last_ballot


def study_score_rows(*, study_id: int) -> ScoreRows:
    """Every per-ballot score of the study's closed ballots."""
    table = _table(
        ItemScore.objects.filter(ballot__study_id=study_id).values_list(
            "item__index", "ballot__number", "wins", "ties", "appearances", "win_ratio", "score"
        ),
        7,
    )
    return ScoreRows(
        item=_integers(table[:, 0]),
        ballot=_integers(table[:, 1]),
        wins=_integers(table[:, 2]),
        ties=_integers(table[:, 3]),
        appearances=_integers(table[:, 4]),
        win_ratio=table[:, 5],
        score=table[:, 6],
    )


def latest_scores(*, study_id: int, item_count: int) -> tuple[np.ndarray, np.ndarray]:
    """Per item: ȳ after its latest closed ballot (NaN if none) and that ballot's number (0 if none)."""
    table = _table(
        ItemScore.objects.filter(ballot__study_id=study_id).values_list(
            "item__index", "ballot__number", "score"
        ),
        3,
    )
    return _latest(_integers(table[:, 0]), _integers(table[:, 1]), table[:, 2], item_count)


def final_scores(*, study_id: int, item_count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The stored final ranking of a finished study, by item index: ȳ (NaN where none), rank and last
    ballot (0 where none)."""
    table = _table(
        Item.objects.filter(study_id=study_id).values_list(
            "index", "final_score", "final_rank", "last_ballot"
        ),
        4,
    )
    index = _integers(table[:, 0])
    score = np.full(item_count, np.nan)
    rank = np.zeros(item_count, dtype=np.int64)
    last_ballot = np.zeros(item_count, dtype=np.int64)
    score[index] = table[:, 1]
    rank[index] = np.nan_to_num(table[:, 2]).astype(np.int64)
    last_ballot[index] = np.nan_to_num(table[:, 3]).astype(np.int64)
    return score, rank, last_ballot


def nullable(values) -> list[float | None]:
    """Floats for a nullable column: Python floats, None where not finite."""
    values = np.asarray(values, dtype=np.float64)
    return np.where(np.isfinite(values), values, None).tolist()
